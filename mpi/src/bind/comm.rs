//! Communicators chapter: rank, size, compare, duplicate, create, split, free, name, info.

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::state::On;
use crate::{export, put};
use std::ffi::{c_char, c_int};

export! {
    /// `MPI_Comm_rank`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) on On::Comm(comm);
    |m| {
        let mut r = m.core.comm_rank(m.comm(comm)?)?;
        if let Some(i) = m.inter_of(comm)? {
            r = i.local_rank(r);
        }
        // SAFETY: output pointer from the caller.
        unsafe { put(rank, r as c_int, "rank") }
    }
}

export! {
    /// `MPI_Comm_size`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: MPI_Comm, size: *mut c_int) on On::Comm(comm);
    |m| {
        let mut n = m.core.comm_size(m.comm(comm)?)?;
        if let Some(i) = m.inter_of(comm)? {
            n = i.local_size;
        }
        // SAFETY: output pointer from the caller.
        unsafe { put(size, n as c_int, "size") }
    }
}

export! {
    /// `MPI_Comm_dup`: a new communicator over the same group (collective), with the
    /// attributes the copy callbacks give it and the same info hints.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        let info = m.comms().borrow().get(comm).map(|c| c.info.clone()).unwrap_or_default();
        let h = m.dup_comm(comm, info)?;
        // SAFETY: checked non-null above.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPI_Comm_dup_with_info`: as `MPI_Comm_dup`, with `info` as the new hints.
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        let i = m.info_or_empty(info)?;
        let h = m.dup_comm(comm, i)?;
        // SAFETY: checked non-null above.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPI_Comm_idup`: a non-blocking duplication; `*newcomm` is the new communicator once
    /// the request completed (the call returns before the other members have called it).
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        if newcomm.is_null() || request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` or `request` is NULL"));
        }
        let info = m.comms().borrow().resolve(comm)?.info.clone();
        let r = m.idup_comm(comm, info, newcomm)?;
        // SAFETY: checked non-null above.
        unsafe { put(request, r, "request") }
    }
}

export! {
    /// `MPI_Comm_idup_with_info`: as `MPI_Comm_idup`, with `info` as the new hints.
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        if newcomm.is_null() || request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` or `request` is NULL"));
        }
        let i = m.info_or_empty(info)?;
        let r = m.idup_comm(comm, i, newcomm)?;
        // SAFETY: checked non-null above.
        unsafe { put(request, r, "request") }
    }
}

export! {
    /// `MPI_Comm_set_info`: replace the communicator's hints.
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) on On::Comm(comm);
    |m| {
        let i = m.info(info)?;
        let mut comms = m.comms().borrow_mut();
        comms.resolve_mut(comm)?.info = i;
        Ok(())
    }
}

export! {
    /// `MPI_Comm_get_info`: a new info object with the communicator's hints.
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: MPI_Comm, info: *mut MPI_Info) on On::Comm(comm);
    |m| {
        if info.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `info_used` is NULL"));
        }
        let i = m.comms().borrow().resolve(comm)?.info.clone();
        let h = m.new_info(i);
        // SAFETY: checked non-null above.
        unsafe { put(info, h, "info_used") }
    }
}

export! {
    /// `MPI_Comm_create` (collective over `comm`): a communicator of `group`'s members, in
    /// group order; processes outside the group get `MPI_COMM_NULL`. Disjoint groups given by
    /// different processes make one communicator each.
    fn MPI_Comm_create / PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        let id = m.comm(comm)?;
        let g = m.group(group)?;
        let members = m.core.comm_group(id)?;
        if let Some(w) = g.ranks.iter().find(|w| !members.contains(w)) {
            return Err(err!(MPI_ERR_GROUP, "group member (world rank {w}) is not in the communicator"));
        }
        let me = m.core.comm_rank(m.core.world())?;
        // Each group is one color: its lowest world rank; the key orders it by group rank.
        let (color, key) = match g.rank_of(me) {
            Some(r) => (*g.ranks.iter().min().expect("non-empty") as i32, r as i32),
            None => (weft::UNDEFINED, 0),
        };
        let h = m.comm_or_null(comm, m.core.comm_split(id, color, key)?);
        // SAFETY: checked non-null above.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPI_Comm_create_group` (collective over `group`'s members only): they agree on a
    /// context among themselves; a process outside the group gets `MPI_COMM_NULL`. Tags that
    /// differ by a multiple of 2^28 are not told apart between concurrent creations.
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        let tag = crate::bind::p2p::send_tag(tag)?;
        let id = m.comm(comm)?;
        let g = m.group(group)?;
        let members = m.core.comm_group(id)?;
        let ranks = g
            .ranks
            .iter()
            .map(|w| {
                members.iter().position(|x| x == w).map(|r| r as u32).ok_or_else(|| {
                    err!(MPI_ERR_GROUP, "group member (world rank {w}) is not in the communicator")
                })
            })
            .collect::<MpiResult<Vec<u32>>>()?;
        let me = m.core.comm_rank(id)?;
        let h = if ranks.contains(&me) {
            let nid = m.core.comm_create_group(id, &ranks, tag & ((1 << 28) - 1))?;
            m.new_comm(comm, nid)
        } else {
            MPI_COMM_NULL
        };
        // SAFETY: checked non-null above.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the processes on one node (the
    /// runtime's node ids; `weft-run --nodes` virtual nodes count as nodes). The hardware
    /// types know one level, the node: `MPI_COMM_TYPE_HW_GUIDED` and
    /// `MPI_COMM_TYPE_RESOURCE_GUIDED` with info `mpi_hw_resource_type=mpi_shared_memory` split
    /// by node, other values give `MPI_COMM_NULL`; `MPI_COMM_TYPE_HW_UNGUIDED` gives the node's
    /// communicator if it is smaller than `comm`, else `MPI_COMM_NULL`.
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        let id = m.comm(comm)?;
        let hints = m.info_or_empty(info)?;
        let node = m.core.node_id() as i32;
        let color = match split_type {
            MPI_UNDEFINED => weft::UNDEFINED,
            MPI_COMM_TYPE_SHARED | MPI_COMM_TYPE_HW_UNGUIDED => node,
            MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => {
                match hints.get("mpi_hw_resource_type") {
                    Some("mpi_shared_memory") => node,
                    _ => weft::UNDEFINED,
                }
            }
            other => return Err(err!(MPI_ERR_ARG, "invalid split type {other}")),
        };
        let mut h = m.comm_or_null(comm, m.core.comm_split(id, color, key)?);
        if split_type == MPI_COMM_TYPE_HW_UNGUIDED && h != MPI_COMM_NULL {
            let size = m.core.comm_size(m.comm(h)?)?;
            if size == m.core.comm_size(id)? {
                m.drop_comm(h)?;
                h = MPI_COMM_NULL;
            }
        }
        // SAFETY: checked non-null above.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPI_Comm_split`: one new communicator per color (`MPI_UNDEFINED`: `MPI_COMM_NULL`).
    fn MPI_Comm_split / PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        if color < 0 && color != MPI_UNDEFINED {
            return Err(err!(MPI_ERR_ARG, "invalid color {color}: colors are >= 0 or MPI_UNDEFINED"));
        }
        let c = if color == MPI_UNDEFINED { weft::UNDEFINED } else { color };
        let h = m.comm_or_null(comm, m.core.comm_split(m.comm(comm)?, c, key)?);
        // SAFETY: checked non-null above.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPI_Comm_free`: frees the communicator and sets the handle to `MPI_COMM_NULL`.
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut MPI_Comm) on On::NoObject;
    |m| {
        if comm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `comm` is NULL"));
        }
        // SAFETY: non-null in/out pointer from the caller.
        let h = unsafe { *comm };
        if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
            return Err(err!(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed"));
        }
        m.comm(h)?;
        let r = m.drop_comm(h);
        // SAFETY: as above.
        unsafe { *comm = MPI_COMM_NULL };
        r
    }
}

export! {
    /// `MPI_Comm_set_name`.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: MPI_Comm, name: *const c_char) on On::Comm(comm);
    |m| {
        // SAFETY: NUL-terminated string from the caller, checked for null.
        let s = unsafe { crate::bind::init::c_str(name, "comm_name")? };
        let mut comms = m.comms().borrow_mut();
        let c = comms.resolve_mut(comm)?;
        c.name = s.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        Ok(())
    }
}

export! {
    /// `MPI_Comm_get_name`: the name set, or `MPI_COMM_WORLD` / `MPI_COMM_SELF` for those.
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: MPI_Comm, name: *mut c_char, len: *mut c_int) on On::Comm(comm);
    |m| {
        let comms = m.comms().borrow();
        let c = comms.resolve(comm)?;
        let s = match (comm, c.name.is_empty()) {
            (MPI_COMM_WORLD, true) => "MPI_COMM_WORLD",
            (MPI_COMM_SELF, true) => "MPI_COMM_SELF",
            _ => &c.name,
        };
        // SAFETY: the caller provides MPI_MAX_OBJECT_NAME bytes at `name`.
        unsafe { crate::bind::init::write_str(name, len, s, MPI_MAX_OBJECT_NAME as usize) }
    }
}

export! {
    /// `MPI_Comm_compare`: `MPI_IDENT` (same handle), `MPI_CONGRUENT` (same ranks in the same
    /// order), `MPI_SIMILAR` (same ranks), `MPI_UNEQUAL`.
    fn MPI_Comm_compare / PMPI_Comm_compare(a: MPI_Comm, b: MPI_Comm, result: *mut c_int) on On::Comm(a);
    |m| {
        let (ia, ib) = (m.comm(a)?, m.comm(b)?);
        let r = if a == b {
            MPI_IDENT
        } else {
            let (ga, gb) = (m.core.comm_group(ia)?, m.core.comm_group(ib)?);
            if ga == gb {
                MPI_CONGRUENT
            } else {
                let (mut sa, mut sb) = (ga.clone(), gb.clone());
                sa.sort_unstable();
                sb.sort_unstable();
                if sa == sb { MPI_SIMILAR } else { MPI_UNEQUAL }
            }
        };
        // SAFETY: output pointer from the caller.
        unsafe { put(result, r, "result") }
    }
}

export! {
    /// `MPI_Comm_test_inter`.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) on On::Comm(comm);
    |m| {
        let inter = m.inter_of(comm)?.is_some();
        // SAFETY: output pointer from the caller.
        unsafe { put(flag, inter as c_int, "flag") }
    }
}
