//! Intercommunicators: two disjoint groups that address each other. weft builds one as a
//! communicator of the *union* of the two groups (the group whose leader has the smaller world
//! rank first), on a context id both groups agreed on, plus the offsets that translate ranks:
//! a destination rank names a process of the remote group (`remote_off + rank` in the union),
//! a received message's union rank is reported relative to the remote group. Point-to-point,
//! revoke (it reaches every process of both groups), agreement (over both groups), shrink and
//! merge work on that union communicator, and so does barrier; the other collectives on
//! intercommunicators are not supported.

use std::cell::Cell;
use std::ffi::c_int;

use weft::ops::{CommId, Spawned};

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::obj::comm::{invalid, CommObj, Comms};
use crate::state::{Mpi, Owned};

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
        let comms = self.comms().borrow();
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
            remote_status(self.comms().borrow().get(h).and_then(|c| c.inter), st);
        }
    }

    /// The intercommunicator layout of `h`, if it is one.
    pub(crate) fn inter_of(&self, h: MPI_Comm) -> MpiResult<Option<Inter>> {
        Ok(self.comms().borrow().get(h).ok_or_else(|| invalid(h))?.inter)
    }
}

/// The handle `MPI_Comm_get_parent` returns (`MPI_COMM_NULL` if this process was not spawned).
#[derive(Default)]
pub(crate) struct Parent(pub(crate) Cell<MPI_Comm>);

impl Parent {
    /// The parent intercommunicator of a spawned process, made at init (its error handler is
    /// `MPI_ERRORS_ARE_FATAL`, like `MPI_COMM_WORLD`'s).
    pub(crate) fn at_init(comms: &mut Comms, sp: Option<Spawned>) -> Parent {
        let h = match sp {
            None => MPI_COMM_NULL,
            Some(sp) => {
                let h = comms.insert(CommObj::new(sp.union, MPI_ERRORS_ARE_FATAL, ""));
                if let Some(c) = comms.get_mut(h) {
                    c.inter = Some(Inter {
                        local_off: sp.parents,
                        local_size: sp.children,
                        remote_off: 0,
                        remote_size: sp.parents,
                    });
                }
                h
            }
        };
        Parent(Cell::new(h))
    }
}

/// The process's parent intercommunicator handle (see [`Owned`]).
static PARENT: Owned<Parent> = Owned::new();

impl Mpi {
    /// The handle `MPI_Comm_get_parent` returns.
    #[inline]
    pub(crate) fn parent(&self) -> &Parent {
        PARENT.get(self)
    }
}

/// Make the parent handle (`MPI_Init`, before the instance is installed).
pub(crate) fn make_parent(parent: Parent) {
    PARENT.make(parent);
}
