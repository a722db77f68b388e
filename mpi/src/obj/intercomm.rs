//! Intercommunicators: two disjoint groups that address each other. weft builds one as a
//! communicator of the *union* of the two groups (the group whose leader has the smaller world
//! rank first), on a context id both groups agreed on, plus the offsets that translate ranks:
//! a destination rank names a process of the remote group (`remote_off + rank` in the union),
//! a received message's union rank is reported relative to the remote group. Point-to-point,
//! revoke (it reaches every process of both groups), agreement (over both groups), shrink and
//! merge work on that union communicator, and so does barrier; the other collectives on
//! intercommunicators are not supported.

use std::ffi::c_int;

use weft::ops::CommId;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::obj::comm::invalid;
use crate::obj::group::Group;
use crate::state::{call, Mpi, On};
use crate::{export, put};

/// Where the two groups sit in the union communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Inter {
    pub(crate) local_off: u32,
    pub(crate) local_size: u32,
    pub(crate) remote_off: u32,
    pub(crate) remote_size: u32,
}

impl Inter {
    /// Union rank of remote rank `d` (a destination or a receive source).
    #[inline]
    pub(crate) fn union_rank(self, d: c_int) -> MpiResult<c_int> {
        if d < 0 || d as u32 >= self.remote_size {
            return Err(err!(
                MPI_ERR_RANK,
                "invalid rank {d}: the remote group has {} processes",
                self.remote_size
            ));
        }
        Ok((self.remote_off + d as u32) as c_int)
    }

    /// Remote rank of union rank `u` (a received message's source).
    #[inline]
    pub(crate) fn remote_rank(self, u: c_int) -> c_int {
        u - self.remote_off as c_int
    }

    /// This process's rank in its local group, from its union rank.
    pub(crate) fn local_rank(self, union_rank: u32) -> u32 {
        union_rank - self.local_off
    }
}

/// Put a status of a communicator with layout `inter` in the application's terms: on an
/// intercommunicator the source is a rank of the remote group.
#[inline]
pub(crate) fn remote_status(inter: Option<Inter>, st: &mut MPI_Status) {
    if let (Some(i), true) = (inter, st.MPI_SOURCE >= 0) {
        st.MPI_SOURCE = i.remote_rank(st.MPI_SOURCE);
    }
}

/// `u32` words as bytes and back (the leaders' exchange).
fn to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn from_bytes(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

impl Mpi {
    /// The core communicator of `h` and `rank` (a destination or receive source) in its terms:
    /// on an intercommunicator a rank names a process of the remote group. Negative values
    /// (`MPI_ANY_SOURCE`, `MPI_PROC_NULL`, bad ranks) pass unchanged.
    #[inline]
    pub(crate) fn peer(&self, h: MPI_Comm, rank: c_int) -> MpiResult<(CommId, c_int)> {
        self.source(h, rank).map(|(c, r, _)| (c, r))
    }

    /// As [`Mpi::peer`], for a receive: also the layout that [`remote_status`] needs to put the
    /// statuses of this communicator in the application's terms (one lookup for both).
    #[inline]
    pub(crate) fn source(&self, h: MPI_Comm, rank: c_int) -> MpiResult<(CommId, c_int, Option<Inter>)> {
        let comms = self.comms.borrow();
        let c = comms.get(h).ok_or_else(|| invalid(h))?;
        match c.inter {
            Some(i) if rank >= 0 => Ok((c.id, i.union_rank(rank)?, c.inter)),
            _ => Ok((c.id, rank, c.inter)),
        }
    }

    /// Put a status of communicator `h` in the application's terms (on an intercommunicator the
    /// source is a rank of the remote group).
    #[inline]
    pub(crate) fn own_status(&self, h: MPI_Comm, st: &mut MPI_Status) {
        if st.MPI_SOURCE >= 0 {
            remote_status(self.comms.borrow().get(h).and_then(|c| c.inter), st);
        }
    }

    /// The intercommunicator layout of `h`, if it is one.
    pub(crate) fn inter_of(&self, h: MPI_Comm) -> MpiResult<Option<Inter>> {
        Ok(self.comms.borrow().get(h).ok_or_else(|| invalid(h))?.inter)
    }
}

export! {
    /// `MPI_Intercomm_create`: collective over `local_comm` and the remote group; the two
    /// leaders talk over `peer_comm` with `tag`.
    fn MPI_Intercomm_create / PMPI_Intercomm_create(
        local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int,
        newintercomm: *mut MPI_Comm
    ) {
        call("MPI_Intercomm_create", On::Comm(local_comm), |m| {
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
            m.comms.borrow_mut().get_mut(h).expect("just created").inter = Some(inter);
            // SAFETY: checked non-null.
            unsafe { put(newintercomm, h, "newintercomm") }
        })
    }
}

export! {
    /// `MPI_Intercomm_merge`: an intracommunicator of both groups, the group that passed
    /// `high = 0` first (ties: the union's order).
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) {
        call("MPI_Intercomm_merge", On::Comm(intercomm), |m| {
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
            m.comms.borrow_mut().get_mut(h).expect("just created").inter = None;
            // SAFETY: checked non-null.
            unsafe { put(newintracomm, h, "newintracomm") }
        })
    }
}

export! {
    /// `MPI_Comm_remote_size`.
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) {
        call("MPI_Comm_remote_size", On::Comm(comm), |m| {
            let i = m.inter_of(comm)?.ok_or_else(|| err!(MPI_ERR_COMM, "MPI_Comm_remote_size: not an intercommunicator"))?;
            // SAFETY: output pointer from the caller.
            unsafe { put(size, i.remote_size as c_int, "size") }
        })
    }
}

export! {
    /// `MPI_Comm_remote_group`.
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) {
        call("MPI_Comm_remote_group", On::Comm(comm), |m| {
            let i = m.inter_of(comm)?.ok_or_else(|| err!(MPI_ERR_COMM, "MPI_Comm_remote_group: not an intercommunicator"))?;
            let all = m.core.comm_group(m.comm(comm)?)?;
            let ranks = all[i.remote_off as usize..(i.remote_off + i.remote_size) as usize].to_vec();
            let g = m.groups.borrow_mut().insert(Group { ranks });
            // SAFETY: output pointer from the caller.
            unsafe { put(group, g, "group") }
        })
    }
}
