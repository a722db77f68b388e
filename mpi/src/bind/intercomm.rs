//! Intercommunicators: create, merge, remote size and group, test_inter.

use crate::abi::*;
use crate::error::err;
use crate::obj::group::Group;
use crate::obj::intercomm::*;
use crate::state::On;
use crate::{export, put};
use std::ffi::c_int;

/// `u32` words as bytes and back (the leaders' exchange).
fn to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

export! {
    /// `MPI_Intercomm_create`: collective over `local_comm` and the remote group; the two
    /// leaders talk over `peer_comm` with `tag`.
    fn MPI_Intercomm_create / PMPI_Intercomm_create(
        local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int,
        newintercomm: *mut MPI_Comm
    ) on On::Comm(local_comm);
    |m| {
        if newintercomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newintercomm` is NULL"));
        }
        let l = m.comm(local_comm)?;
        let (me, n) = (m.core.comm_rank(l)?, m.core.comm_size(l)?);
        if local_leader < 0 || local_leader as u32 >= n {
            return Err(err!(MPI_ERR_RANK, "invalid local_leader {local_leader}: local_comm has {n} ranks"));
        }
        let leader = local_leader as u32;
        let group = m.core.comm_group(l)?;
        let ctx = m.core.max_u32(l, m.core.next_ctx()?)?;
        // The leaders exchange (context, leader's world rank, group) over peer_comm; then each
        // broadcasts the remote side's record in its group: first its length, then itself.
        let mut record = Vec::new();
        if me == leader {
            let p = m.comm(peer_comm)?;
            let tag = crate::bind::p2p::send_tag(tag)?;
            let rl = m.core.dest(p, remote_leader)?;
            let mine = to_bytes(&[ctx, group[leader as usize]].iter().chain(&group).copied().collect::<Vec<_>>());
            // SAFETY: `mine` outlives the request, which is waited for below.
            let sreq = unsafe { m.core.isend(p, mine.as_ptr(), mine.len(), rl, tag)? };
            let st = m.core.probe(p, rl as i32, tag)?;
            record = vec![0u8; st.count];
            m.core.recv(p, &mut record, rl as i32, tag)?;
            m.core.wait(sreq)?;
        }
        let mut len = (record.len() as u32).to_le_bytes();
        m.core.bcast_bytes(l, &mut len, leader)?;
        record.resize(u32::from_le_bytes(len) as usize, 0);
        m.core.bcast_bytes(l, &mut record, leader)?;
        let remote = from_bytes(&record);
        if remote.len() < 3 {
            return Err(err!(MPI_ERR_INTERN, "MPI_Intercomm_create: short record from the remote leader"));
        }
        let (rctx, rleader_world, rgroup) = (remote[0], remote[1], remote[2..].to_vec());
        if rgroup.iter().any(|w| group.contains(w)) {
            return Err(err!(MPI_ERR_ARG, "MPI_Intercomm_create: the local and remote groups overlap"));
        }
        let ctx = ctx.max(rctx);
        let local_first = group[leader as usize] < rleader_world;
        let (lsize, rsize) = (group.len() as u32, rgroup.len() as u32);
        let (union, inter) = if local_first {
            (group.iter().chain(&rgroup).copied().collect(), Inter { local_off: 0, local_size: lsize, remote_off: lsize, remote_size: rsize })
        } else {
            (rgroup.iter().chain(&group).copied().collect(), Inter { local_off: rsize, local_size: lsize, remote_off: 0, remote_size: rsize })
        };
        let id = m.core.comm_create_agreed(ctx, union)?;
        let h = m.new_comm(local_comm, id);
        m.comms().borrow_mut().get_mut(h).expect("just created").inter = Some(inter);
        // SAFETY: checked non-null.
        unsafe { put(newintercomm, h, "newintercomm") }
    }
}

export! {
    /// `MPI_Intercomm_merge`: an intracommunicator of both groups, the group that passed
    /// `high = 0` first (ties: the union's order).
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) on On::Comm(intercomm);
    |m| {
        if newintracomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newintracomm` is NULL"));
        }
        let u = m.comm(intercomm)?;
        if m.inter_of(intercomm)?.is_none() {
            return Err(err!(MPI_ERR_COMM, "MPI_Intercomm_merge: not an intercommunicator"));
        }
        let (ur, un) = (m.core.comm_rank(u)?, m.core.comm_size(u)?);
        let key = (high != 0) as i32 * un as i32 + ur as i32;
        let id = m
            .core
            .comm_split(u, 0, key)?
            .ok_or_else(|| err!(MPI_ERR_INTERN, "MPI_Intercomm_merge: split gave no communicator"))?;
        let h = m.new_comm(intercomm, id);
        m.comms().borrow_mut().get_mut(h).expect("just created").inter = None;
        // SAFETY: checked non-null.
        unsafe { put(newintracomm, h, "newintracomm") }
    }
}

export! {
    /// `MPI_Comm_remote_size`.
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) on On::Comm(comm);
    |m| {
        let i = m.inter_of(comm)?.ok_or_else(|| err!(MPI_ERR_COMM, "MPI_Comm_remote_size: not an intercommunicator"))?;
        // SAFETY: output pointer from the caller.
        unsafe { put(size, i.remote_size as c_int, "size") }
    }
}

export! {
    /// `MPI_Comm_remote_group`.
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) on On::Comm(comm);
    |m| {
        let i = m.inter_of(comm)?.ok_or_else(|| err!(MPI_ERR_COMM, "MPI_Comm_remote_group: not an intercommunicator"))?;
        let all = m.core.comm_group(m.comm(comm)?)?;
        let ranks = all[i.remote_off as usize..(i.remote_off + i.remote_size) as usize].to_vec();
        let g = m.groups().borrow_mut().insert(Group { ranks });
        // SAFETY: output pointer from the caller.
        unsafe { put(group, g, "group") }
    }
}
