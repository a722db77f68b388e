//! Groups chapter: the group constructors, queries, comparisons and rank translation.

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::obj::group::*;
use crate::state::{call, Mpi, On};
use crate::{export, put};
use std::ffi::c_int;

/// `n` ranks from the array `p`, each a rank of a group of `size`, distinct.
///
/// # Safety
/// A non-null `p` must hold `n` ints.
unsafe fn rank_list(p: *const c_int, n: c_int, size: usize) -> MpiResult<Vec<usize>> {
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "invalid number of ranks {n}"));
    }
    if n > 0 && p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `ranks` is NULL"));
    }
    // SAFETY: `p` holds `n` ints by the caller's contract (checked non-null when n > 0).
    let v = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p, n as usize) } };
    let mut seen = vec![false; size];
    v.iter()
        .map(|&r| {
            if r < 0 || r as usize >= size {
                return Err(err!(MPI_ERR_RANK, "invalid rank {r} for a group of {size}"));
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(err!(MPI_ERR_RANK, "rank {r} is listed twice"));
            }
            Ok(r as usize)
        })
        .collect()
}

/// Store a new group in `*out`.
///
/// # Safety
/// A non-null `out` must be valid for a write.
unsafe fn give(m: &Mpi, out: *mut MPI_Group, g: Group) -> MpiResult {
    if out.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `newgroup` is NULL"));
    }
    let h = m.new_group(g);
    // SAFETY: checked non-null; valid by the caller's contract.
    unsafe { put(out, h, "newgroup") }
}

export! {
    /// `MPI_Comm_group`: the group of `comm`.
    fn MPI_Comm_group / PMPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) on On::Comm(comm);
    |m| {
        let ranks = m.core.comm_group(m.comm(comm)?)?;
        // SAFETY: output pointer from the caller.
        unsafe { give(m, group, Group { ranks }) }
    }
}

export! {
    /// `MPI_Group_size`.
    fn MPI_Group_size / PMPI_Group_size(group: MPI_Group, size: *mut c_int) on On::NoObject;
    |m| {
        let n = m.group(group)?.ranks.len();
        // SAFETY: output pointer from the caller.
        unsafe { put(size, n as c_int, "size") }
    }
}

export! {
    /// `MPI_Group_rank`: this process's rank in the group, or `MPI_UNDEFINED`.
    fn MPI_Group_rank / PMPI_Group_rank(group: MPI_Group, rank: *mut c_int) on On::NoObject;
    |m| {
        let g = m.group(group)?;
        let me = m.core.comm_rank(m.core.world())?;
        let r = g.rank_of(me).map_or(MPI_UNDEFINED, |r| r as c_int);
        // SAFETY: output pointer from the caller.
        unsafe { put(rank, r, "rank") }
    }
}

export! {
    /// `MPI_Group_incl`: the listed ranks, in the listed order.
    fn MPI_Group_incl / PMPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) on On::NoObject;
    |m| {
        let g = m.group(group)?;
        // SAFETY: `ranks` holds `n` ints by the caller's contract.
        let list = unsafe { rank_list(ranks, n, g.ranks.len())? };
        let ng = Group { ranks: list.iter().map(|&r| g.ranks[r]).collect() };
        // SAFETY: output pointer from the caller.
        unsafe { give(m, newgroup, ng) }
    }
}

export! {
    /// `MPI_Group_excl`: the group without the listed ranks.
    fn MPI_Group_excl / PMPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) on On::NoObject;
    |m| {
        let g = m.group(group)?;
        // SAFETY: `ranks` holds `n` ints by the caller's contract.
        let list = unsafe { rank_list(ranks, n, g.ranks.len())? };
        // SAFETY: output pointer from the caller.
        unsafe { give(m, newgroup, without(&g, &list)) }
    }
}

export! {
    /// `MPI_Group_range_incl`: the ranks of the `(first, last, stride)` triplets, in order.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: MPI_Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut MPI_Group) on On::NoObject;
    |m| {
        let g = m.group(group)?;
        // SAFETY: `ranges` holds `n` triplets by the caller's contract.
        let list = unsafe { range_list(ranges, n, g.ranks.len())? };
        let ng = Group { ranks: list.iter().map(|&r| g.ranks[r]).collect() };
        // SAFETY: output pointer from the caller.
        unsafe { give(m, newgroup, ng) }
    }
}

export! {
    /// `MPI_Group_range_excl`: the group without the ranks of the triplets.
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: MPI_Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut MPI_Group) on On::NoObject;
    |m| {
        let g = m.group(group)?;
        // SAFETY: `ranges` holds `n` triplets by the caller's contract.
        let list = unsafe { range_list(ranges, n, g.ranks.len())? };
        // SAFETY: output pointer from the caller.
        unsafe { give(m, newgroup, without(&g, &list)) }
    }
}

/// Run set operation `op` for the exported function `name`.
///
/// # Safety
/// A non-null `out` must be valid for a write.
unsafe fn set_call(name: &'static str, op: SetOp, a: MPI_Group, b: MPI_Group, out: *mut MPI_Group) -> c_int {
    call(name, On::NoObject, |m| {
        let g = set_op(op, &m.group(a)?, &m.group(b)?);
        // SAFETY: by this function's contract.
        unsafe { give(m, out, g) }
    })
}

export! {
    /// `MPI_Group_union`.
    fn MPI_Group_union / PMPI_Group_union(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) {
        // SAFETY: output pointer from the caller.
        unsafe { set_call("MPI_Group_union", SetOp::Union, a, b, newgroup) }
    }
}

export! {
    /// `MPI_Group_intersection`.
    fn MPI_Group_intersection / PMPI_Group_intersection(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) {
        // SAFETY: output pointer from the caller.
        unsafe { set_call("MPI_Group_intersection", SetOp::Intersection, a, b, newgroup) }
    }
}

export! {
    /// `MPI_Group_difference`.
    fn MPI_Group_difference / PMPI_Group_difference(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) {
        // SAFETY: output pointer from the caller.
        unsafe { set_call("MPI_Group_difference", SetOp::Difference, a, b, newgroup) }
    }
}

export! {
    /// `MPI_Group_translate_ranks`: the rank in `b` of each listed rank of `a`
    /// (`MPI_UNDEFINED` if not a member; `MPI_PROC_NULL` stays `MPI_PROC_NULL`).
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(a: MPI_Group, n: c_int, ranks_a: *const c_int, b: MPI_Group, ranks_b: *mut c_int) on On::NoObject;
    |m| {
        let (ga, gb) = (m.group(a)?, m.group(b)?);
        if n < 0 {
            return Err(err!(MPI_ERR_ARG, "invalid number of ranks {n}"));
        }
        if n > 0 && (ranks_a.is_null() || ranks_b.is_null()) {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `ranks1` or `ranks2` is NULL"));
        }
        for i in 0..n as usize {
            // SAFETY: both arrays hold `n` ints by the caller's contract.
            let r = unsafe { *ranks_a.add(i) };
            let t = if r == MPI_PROC_NULL {
                MPI_PROC_NULL
            } else if r < 0 || r as usize >= ga.ranks.len() {
                return Err(err!(MPI_ERR_RANK, "invalid rank {r} for a group of {}", ga.ranks.len()));
            } else {
                gb.rank_of(ga.ranks[r as usize]).map_or(MPI_UNDEFINED, |x| x as c_int)
            };
            // SAFETY: as above.
            unsafe { *ranks_b.add(i) = t };
        }
        Ok(())
    }
}

export! {
    /// `MPI_Group_compare`: `MPI_IDENT` (same members, same order), `MPI_SIMILAR` (same
    /// members), `MPI_UNEQUAL`.
    fn MPI_Group_compare / PMPI_Group_compare(a: MPI_Group, b: MPI_Group, result: *mut c_int) on On::NoObject;
    |m| {
        let (ga, gb) = (m.group(a)?, m.group(b)?);
        let r = if ga == gb {
            MPI_IDENT
        } else {
            let (mut sa, mut sb) = (ga.ranks, gb.ranks);
            sa.sort_unstable();
            sb.sort_unstable();
            if sa == sb { MPI_SIMILAR } else { MPI_UNEQUAL }
        };
        // SAFETY: output pointer from the caller.
        unsafe { put(result, r, "result") }
    }
}

export! {
    /// `MPI_Group_free`: frees a created group and sets the handle to `MPI_GROUP_NULL`
    /// (freeing `MPI_GROUP_EMPTY` only resets the handle).
    fn MPI_Group_free / PMPI_Group_free(group: *mut MPI_Group) on On::NoObject;
    |m| {
        if group.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `group` is NULL"));
        }
        // SAFETY: non-null in/out pointer from the caller.
        let h = unsafe { *group };
        if h != MPI_GROUP_EMPTY && m.groups().borrow_mut().remove(h).is_none() {
            return Err(invalid(h));
        }
        // SAFETY: as above.
        unsafe { *group = MPI_GROUP_NULL };
        Ok(())
    }
}
