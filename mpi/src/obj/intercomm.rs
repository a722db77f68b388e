//! Intercommunicators: two disjoint groups that address each other. weft builds one as a
//! communicator of the *union* of the two groups (the group whose leader has the smaller world
//! rank first), on a context id both groups agreed on, plus the offsets that translate ranks:
//! a destination rank names a process of the remote group (`remote_off + rank` in the union),
//! a received message's union rank is reported relative to the remote group. Point-to-point,
//! revoke (it reaches every process of both groups), agreement (over both groups), shrink and
//! merge work on that union communicator, and so does barrier; the other collectives on
//! intercommunicators are not supported.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{err, MpiResult};

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
