//! Shortcuts: the resolved arguments of the last calls that took a direct path, so that a call
//! repeating them looks no handle up and checks no argument again.
//!
//! - Collectives: for the last reduction (reduce, allreduce, scan, exscan) and the last
//!   broadcast that took the direct path (a dense committed type, a predefined arithmetic
//!   operation, an intracommunicator, the application's buffers used as they are), the call's
//!   handles, count and root together with what they resolved to: the core communicator, the
//!   engine's element type, operation and element count, the root and whether this rank
//!   receives.
//! - Point-to-point: the communicator and datatype handles of the last direct send or receive
//!   (an intracommunicator, a dense committed type) with the core communicator and the type's
//!   size; before the first one and after a free, `MPI_COMM_WORLD` and `MPI_BYTE` (neither
//!   can be freed), so the entry is never empty and a lookup is two comparisons.
//!
//! Invariant: an entry holds only handles that were live when it was made, and freeing a
//! communicator or a datatype clears every entry, so a handle value found here still names
//! the object it named then (a freed handle fails through the full path). Nothing else can
//! change what an entry resolved: a communicator's rank, size and kind, a type's layout and
//! commitment, and the predefined operations are fixed for the life of their handles.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};

use weft::ops::CommId;
use weft_coll::{DType, Kind, Op, Spec};

use crate::abi::*;
use crate::coll::Mode;
use crate::comm::CommRef;
use crate::error::MpiResult;
use crate::state::Mpi;

/// The arguments of a call that decide its spec, buffers aside.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Args {
    pub(crate) kind: Kind,
    pub(crate) comm: MPI_Comm,
    pub(crate) dt: MPI_Datatype,
    pub(crate) op: MPI_Op,
    pub(crate) count: c_int,
    pub(crate) root: c_int,
    /// The send buffer was `MPI_IN_PLACE`.
    pub(crate) in_place: bool,
}

/// What [`Args`] resolved to on the direct path.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub(crate) c: CommRef,
    pub(crate) dtype: DType,
    pub(crate) op: Option<Op>,
    /// Engine elements (reductions) or bytes (broadcast).
    pub(crate) count: usize,
    pub(crate) root: u32,
    /// This rank has an output buffer (not a non-root rank of a reduce).
    pub(crate) out_here: bool,
}

impl Resolved {
    /// Fill in `spec` (made for this call's kind and element type) for a call on `send` and
    /// `recv` (a broadcast's buffer is `recv`), all but its operation.
    #[inline(always)]
    pub(crate) fn fill(&self, spec: &mut Spec, send: *const c_void, recv: *mut c_void) {
        spec.count = self.count;
        spec.root = self.root;
        spec.send = send.cast();
        spec.recv = if self.out_here { recv.cast() } else { std::ptr::null_mut() };
    }

    /// Run (or start) the call on `send` and `recv` ([`Mpi::exec_direct`]), its spec built in
    /// this frame (a spec moved between frames is a copy of it) and given this entry's
    /// operation (taken, not cloned).
    ///
    /// # Safety
    /// The application keeps its buffers valid until the collective completes.
    #[inline(always)]
    pub(crate) unsafe fn exec(
        self,
        m: &Mpi,
        kind: Kind,
        comm: MPI_Comm,
        send: *const c_void,
        recv: *mut c_void,
        mode: Mode,
    ) -> MpiResult {
        let mut spec = Spec::new(kind, self.dtype);
        self.fill(&mut spec, send, recv);
        spec.op = self.op;
        // SAFETY: forwarded contract.
        unsafe { m.exec_direct(self.c, comm, &mut spec, mode) }
    }
}

/// The point-to-point entry: communicator and datatype handles, the core communicator and the
/// type's size in bytes.
#[derive(Clone, Copy)]
struct Peer {
    comm: MPI_Comm,
    dt: MPI_Datatype,
    id: CommId,
    size: usize,
}

/// One entry per family: reductions, broadcasts (an application alternating the two keeps
/// both) and point-to-point.
pub(crate) struct Shortcuts {
    reduce: RefCell<Option<(Args, Resolved)>>,
    bcast: RefCell<Option<(Args, Resolved)>>,
    p2p: Cell<Peer>,
    /// The core communicator of `MPI_COMM_WORLD`, for the point-to-point entry's default.
    world: CommId,
}

impl Shortcuts {
    /// No collective entry; the point-to-point entry is `MPI_COMM_WORLD` (core communicator
    /// `world`) with `MPI_BYTE`.
    pub(crate) fn new(world: CommId) -> Shortcuts {
        Shortcuts {
            reduce: RefCell::new(None),
            bcast: RefCell::new(None),
            p2p: Cell::new(Self::world_peer(world)),
            world,
        }
    }

    /// The point-to-point entry for `MPI_COMM_WORLD` and `MPI_BYTE`: both live for the whole
    /// run (neither can be freed), the world an intracommunicator, the byte dense and committed.
    fn world_peer(world: CommId) -> Peer {
        Peer { comm: MPI_COMM_WORLD, dt: MPI_BYTE, id: world, size: 1 }
    }

    #[inline(always)]
    fn slot(&self, kind: Kind) -> &RefCell<Option<(Args, Resolved)>> {
        if kind == Kind::Bcast {
            &self.bcast
        } else {
            &self.reduce
        }
    }

    /// What `a` resolved to when it was last [`Shortcuts::keep`]t, if it is still the entry.
    #[inline(always)]
    pub(crate) fn find(&self, a: &Args) -> Option<Resolved> {
        match &*self.slot(a.kind).borrow() {
            Some((k, r)) if k == a => Some(r.clone()),
            _ => None,
        }
    }

    /// Remember that `a` resolved to `r` (both checked by the direct path).
    #[inline]
    pub(crate) fn keep(&self, a: Args, r: Resolved) {
        *self.slot(a.kind).borrow_mut() = Some((a, r));
    }

    /// The core communicator of intracommunicator `comm` and the size of dense committed type
    /// `dt`, if they are the point-to-point entry.
    #[inline(always)]
    pub(crate) fn peer(&self, comm: MPI_Comm, dt: MPI_Datatype) -> Option<(CommId, usize)> {
        let p = self.p2p.get();
        (p.comm == comm && p.dt == dt).then_some((p.id, p.size))
    }

    /// Remember that `comm` (an intracommunicator) is core communicator `id` and `dt` (dense and
    /// committed) has `size` bytes.
    #[inline]
    pub(crate) fn keep_peer(&self, comm: MPI_Comm, dt: MPI_Datatype, id: CommId, size: usize) {
        self.p2p.set(Peer { comm, dt, id, size });
    }

    /// Forget every entry: a communicator or a datatype was freed.
    pub(crate) fn clear(&self) {
        self.reduce.borrow_mut().take();
        self.bcast.borrow_mut().take();
        self.p2p.set(Self::world_peer(self.world));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(kind: Kind, count: c_int) -> Args {
        Args { kind, comm: MPI_COMM_WORLD, dt: MPI_INT, op: MPI_SUM, count, root: 0, in_place: false }
    }

    fn resolved(count: usize) -> Resolved {
        let c = CommRef { id: CommId::from_raw(0), rank: 0, size: 2, inter: false };
        Resolved { c, dtype: DType::I32, op: Some(Op::Sum), count, root: 0, out_here: true }
    }

    #[test]
    fn hit_only_on_the_same_arguments_and_cleared_by_clear() {
        let world = CommId::from_raw(7);
        let s = Shortcuts::new(world);
        assert_eq!(s.peer(MPI_COMM_WORLD, MPI_BYTE), Some((world, 1)), "the default entry");
        assert!(s.peer(MPI_COMM_WORLD, MPI_INT).is_none());
        assert!(s.find(&args(Kind::Allreduce, 2)).is_none());
        s.keep(args(Kind::Allreduce, 2), resolved(2));
        assert_eq!(s.find(&args(Kind::Allreduce, 2)).map(|r| r.count), Some(2));
        assert!(s.find(&args(Kind::Allreduce, 3)).is_none(), "another count");
        assert!(s.find(&args(Kind::Reduce, 2)).is_none(), "another kind, same slot");
        assert!(s.find(&Args { in_place: true, ..args(Kind::Allreduce, 2) }).is_none());
        // The broadcast slot is separate.
        s.keep(args(Kind::Bcast, 8), resolved(8));
        assert_eq!(s.find(&args(Kind::Allreduce, 2)).map(|r| r.count), Some(2));
        s.keep_peer(MPI_COMM_WORLD, MPI_INT, CommId::from_raw(0), 4);
        assert_eq!(s.peer(MPI_COMM_WORLD, MPI_INT).map(|p| p.1), Some(4));
        assert!(s.peer(MPI_COMM_WORLD, MPI_DOUBLE).is_none());
        assert!(s.peer(MPI_COMM_SELF, MPI_INT).is_none());
        assert!(s.peer(MPI_COMM_WORLD, MPI_BYTE).is_none(), "replaced");
        s.clear();
        assert!(s.peer(MPI_COMM_WORLD, MPI_INT).is_none());
        assert_eq!(s.peer(MPI_COMM_WORLD, MPI_BYTE), Some((world, 1)), "back to the default");
        assert!(s.find(&args(Kind::Allreduce, 2)).is_none());
        assert!(s.find(&args(Kind::Bcast, 8)).is_none());
    }

    #[test]
    fn spec_leaves_no_output_where_the_rank_has_none() {
        let r = Resolved { out_here: false, ..resolved(4) };
        let (a, mut b) = ([0u8; 16], [0u8; 16]);
        let mut s = Spec::new(Kind::Reduce, r.dtype);
        r.fill(&mut s, a.as_ptr().cast(), b.as_mut_ptr().cast());
        assert!(s.recv.is_null());
        assert_eq!((s.count, s.send), (4, a.as_ptr()));
    }
}
