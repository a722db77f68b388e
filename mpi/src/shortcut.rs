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
//! - Barrier: the intracommunicator handle of the last blocking barrier with its core
//!   communicator; `MPI_COMM_WORLD` before the first one and after a free, so a lookup is one
//!   comparison.
//!
//! Invariant: an entry holds only handles that were live when it was made, and freeing a
//! communicator or a datatype clears every entry, so a handle value found here still names
//! the object it named then (a freed handle fails through the full path). Nothing else can
//! change what an entry resolved: a communicator's rank, size and kind, a type's layout and
//! commitment, and the predefined operations are fixed for the life of their handles.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use weft::ops::CommId;
use weft::ops::{DType, Kind, Op, Spec};

use crate::abi::*;

/// What the data-moving calls need of a communicator handle, read in one table lookup: the
/// core id, this process's rank in it and its size (of the union of both groups for an
/// intercommunicator), and whether it is an intercommunicator.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CommRef {
    pub(crate) id: CommId,
    pub(crate) rank: u32,
    pub(crate) size: u32,
    pub(crate) inter: bool,
}

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
    /// The spec of a `kind` call on `send` and `recv` (a broadcast's buffer is `recv`).
    #[inline(always)]
    pub(crate) fn spec(self, kind: Kind, send: *const c_void, recv: *mut c_void) -> Spec<'static> {
        let mut spec = Spec::new(kind, self.dtype);
        spec.count = self.count;
        spec.root = self.root;
        spec.send = send.cast();
        spec.recv = if self.out_here { recv.cast() } else { std::ptr::null_mut() };
        spec.op = self.op;
        spec
    }
}

/// A collective entry: the call's arguments, its communicator, and the spec they resolved to,
/// kept whole so that a repeated call only puts its buffers into it and runs it.
struct Direct {
    args: Args,
    c: CommRef,
    out_here: bool,
    /// Buffers and their lengths are those of the last call (each call sets its own).
    spec: Spec<'static>,
}

impl Direct {
    /// Put a call's buffers into the entry's spec (a broadcast's buffer is `recv`; a rank
    /// without output gets none).
    #[inline(always)]
    fn set_buffers(&mut self, send: *const c_void, recv: *mut c_void) {
        self.spec.send = send.cast();
        self.spec.recv = if self.out_here { recv.cast() } else { std::ptr::null_mut() };
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
    reduce: RefCell<Option<Direct>>,
    bcast: RefCell<Option<Direct>>,
    /// [`Shortcuts::clear`] ran while a collective entry was running (so could not drop it):
    /// that run drops its entry when it ends.
    stale: Cell<bool>,
    p2p: Cell<Peer>,
    /// The barrier entry: a communicator handle and its core communicator.
    barrier: Cell<(MPI_Comm, CommId)>,
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
            barrier: Cell::new((MPI_COMM_WORLD, world)),
            stale: Cell::new(false),
            world,
        }
    }

    /// The point-to-point entry for `MPI_COMM_WORLD` and `MPI_BYTE`: both live for the whole
    /// run (neither can be freed), the world an intracommunicator, the byte dense and committed.
    fn world_peer(world: CommId) -> Peer {
        Peer { comm: MPI_COMM_WORLD, dt: MPI_BYTE, id: world, size: 1 }
    }

    #[inline(always)]
    fn slot(&self, kind: Kind) -> &RefCell<Option<Direct>> {
        if kind == Kind::Bcast {
            &self.bcast
        } else {
            &self.reduce
        }
    }

    /// The entry of call `a` with the call's buffers `send` and `recv` put into its spec (a
    /// broadcast's buffer is `recv`): its communicator and a copy of the spec to run; `None` if
    /// `a` is not the entry of its family (or the entry is in use).
    #[inline(always)]
    pub(crate) fn take(
        &self,
        a: &Args,
        send: *const c_void,
        recv: *mut c_void,
    ) -> Option<(CommRef, Spec<'static>)> {
        let mut g = self.slot(a.kind).try_borrow_mut().ok()?;
        let d = g.as_mut().filter(|d| d.args == *a)?;
        d.set_buffers(send, recv);
        Some((d.c, d.spec.clone()))
    }

    /// [`Shortcuts::take`] and run, for a blocking call below `MPI_THREAD_MULTIPLE` (the caller knows
    /// the thread level): `run` runs the entry's spec in place, on the entry's communicator,
    /// holding the entry; its result.
    ///
    /// # Safety
    /// The application keeps its buffers valid until the collective completes; MPI runs below `MPI_THREAD_MULTIPLE`.
    #[inline(always)]
    pub(crate) unsafe fn run_blocking<R>(
        &self,
        a: &Args,
        send: *const c_void,
        recv: *mut c_void,
        run: impl FnOnce(CommRef, &mut Spec<'static>) -> R,
    ) -> Option<R> {
        let mut g = self.slot(a.kind).try_borrow_mut().ok()?;
        let d = g.as_mut().filter(|d| d.args == *a)?;
        d.set_buffers(send, recv);
        let r = run(d.c, &mut d.spec);
        if self.stale.get() {
            self.stale.set(false);
            *g = None;
        }
        Some(r)
    }

    /// Remember that `a` resolved to `r` (both checked by the direct path); nothing if the
    /// entry is in use.
    #[inline]
    pub(crate) fn keep(&self, a: Args, r: Resolved) {
        if let Ok(mut g) = self.slot(a.kind).try_borrow_mut() {
            let (c, out_here) = (r.c, r.out_here);
            let spec = r.spec(a.kind, std::ptr::null(), std::ptr::null_mut());
            *g = Some(Direct { args: a, c, out_here, spec });
        }
    }

    /// The core communicator of intracommunicator `comm` and the size of dense committed type
    /// `dt`, if they are the point-to-point entry.
    #[inline(always)]
    pub(crate) fn peer(&self, comm: MPI_Comm, dt: MPI_Datatype) -> Option<(CommId, usize)> {
        let p = self.p2p.get();
        (p.comm == comm && p.dt == dt).then_some((p.id, p.size))
    }

    /// What a blocking send's lock-free path needs, from the entry only (no lookup on a
    /// miss): if `comm` and `dt` are the entry and `count` is not negative, the core
    /// communicator and the application's buffer as bytes (empty when `buf` is NULL and no
    /// byte moves). The one place the direct send turns a C buffer, count and type into
    /// bytes; [`Shortcuts::hit_mut`] is its receiving twin. The entry is read here rather than
    /// through [`Shortcuts::peer`]: one call on the path of `MPI_Send`.
    ///
    /// # Safety
    /// `buf` must be valid for reads of `count` elements of `dt` for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn hit<'a>(
        &self,
        comm: MPI_Comm,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
    ) -> Option<(CommId, &'a [u8])> {
        let p = self.p2p.get();
        if p.comm != comm || p.dt != dt || count < 0 {
            return None;
        }
        // Signed: one multiply with an overflow flag; the entry's size is at most `i64::MAX`
        // (`Mpi::resolve_direct` keeps no larger one), so a product that fits is the byte count.
        let n = count.checked_mul(p.size as i64)? as usize;
        let s: &[u8] = match NonNull::new(buf as *mut u8) {
            // SAFETY: the application's buffer of `n` bytes (its count and type), by the
            // caller's contract.
            Some(b) => unsafe { std::slice::from_raw_parts(b.as_ptr(), n) },
            None if n == 0 => &[],
            None => return None,
        };
        Some((p.id, s))
    }

    /// [`Shortcuts::hit`] for a blocking receive: the buffer as bytes to write.
    ///
    /// # Safety
    /// `buf` must be valid for writes of `count` elements of `dt`, and not otherwise accessed,
    /// for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn hit_mut<'a>(
        &self,
        comm: MPI_Comm,
        buf: *mut c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
    ) -> Option<(CommId, &'a mut [u8])> {
        let p = self.p2p.get();
        if p.comm != comm || p.dt != dt || count < 0 {
            return None;
        }
        // As in `hit`.
        let n = count.checked_mul(p.size as i64)? as usize;
        let s: &mut [u8] = match NonNull::new(buf.cast::<u8>()) {
            // SAFETY: the application's buffer of `n` bytes (its count and type), by the
            // caller's contract.
            Some(b) => unsafe { std::slice::from_raw_parts_mut(b.as_ptr(), n) },
            None if n == 0 => &mut [],
            None => return None,
        };
        Some((p.id, s))
    }

    /// Remember that `comm` (an intracommunicator) is core communicator `id` and `dt` (dense and
    /// committed) has `size` bytes.
    #[inline]
    pub(crate) fn keep_peer(&self, comm: MPI_Comm, dt: MPI_Datatype, id: CommId, size: usize) {
        self.p2p.set(Peer { comm, dt, id, size });
    }

    /// The core communicator of `comm` if it is the barrier entry.
    #[inline(always)]
    pub(crate) fn barrier(&self, comm: MPI_Comm) -> Option<CommId> {
        let (h, id) = self.barrier.get();
        (h == comm).then_some(id)
    }

    /// Remember that intracommunicator `comm` is core communicator `id`.
    #[inline]
    pub(crate) fn keep_barrier(&self, comm: MPI_Comm, id: CommId) {
        self.barrier.set((comm, id));
    }

    /// Forget every entry: a communicator or a datatype was freed.
    pub(crate) fn clear(&self) {
        for slot in [&self.reduce, &self.bcast] {
            match slot.try_borrow_mut() {
                Ok(mut g) => *g = None,
                Err(_) => self.stale.set(true),
            }
        }
        self.p2p.set(Self::world_peer(self.world));
        self.barrier.set((MPI_COMM_WORLD, self.world));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Shortcuts {
        /// The count of the entry for `a`, if it is the entry of its family.
        fn count_of(&self, a: &Args) -> Option<usize> {
            self.slot(a.kind).borrow().as_ref().filter(|d| d.args == *a).map(|d| d.spec.count)
        }
    }

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
        assert_eq!(s.barrier(MPI_COMM_WORLD), Some(world), "the default barrier entry");
        s.keep_barrier(MPI_COMM_SELF, CommId::from_raw(3));
        assert_eq!(s.barrier(MPI_COMM_SELF), Some(CommId::from_raw(3)));
        assert!(s.barrier(MPI_COMM_WORLD).is_none(), "replaced");
        s.clear();
        assert!(s.peer(MPI_COMM_WORLD, MPI_INT).is_none());
        assert!(s.barrier(MPI_COMM_SELF).is_none());
        assert_eq!(s.barrier(MPI_COMM_WORLD), Some(world), "the barrier entry back to the default");
        assert!(s.count_of(&args(Kind::Allreduce, 2)).is_none());
        s.keep(args(Kind::Allreduce, 2), resolved(2));
        assert_eq!(s.count_of(&args(Kind::Allreduce, 2)), Some(2));
        assert!(s.count_of(&args(Kind::Allreduce, 3)).is_none(), "another count");
        assert!(s.count_of(&args(Kind::Reduce, 2)).is_none(), "another kind, same slot");
        assert!(s.count_of(&Args { in_place: true, ..args(Kind::Allreduce, 2) }).is_none());
        // The broadcast slot is separate.
        s.keep(args(Kind::Bcast, 8), resolved(8));
        assert_eq!(s.count_of(&args(Kind::Allreduce, 2)), Some(2));
        s.keep_peer(MPI_COMM_WORLD, MPI_INT, CommId::from_raw(0), 4);
        assert_eq!(s.peer(MPI_COMM_WORLD, MPI_INT).map(|p| p.1), Some(4));
        assert!(s.peer(MPI_COMM_WORLD, MPI_DOUBLE).is_none());
        assert!(s.peer(MPI_COMM_SELF, MPI_INT).is_none());
        assert!(s.peer(MPI_COMM_WORLD, MPI_BYTE).is_none(), "replaced");
        s.clear();
        assert!(s.peer(MPI_COMM_WORLD, MPI_INT).is_none());
        assert_eq!(s.peer(MPI_COMM_WORLD, MPI_BYTE), Some((world, 1)), "back to the default");
        assert!(s.count_of(&args(Kind::Allreduce, 2)).is_none());
        assert!(s.count_of(&args(Kind::Bcast, 8)).is_none());
    }

    #[test]
    fn an_entry_in_use_is_neither_replaced_nor_lost_on_clear() {
        let s = Shortcuts::new(CommId::from_raw(7));
        s.keep(args(Kind::Allreduce, 2), resolved(2));
        let held = s.reduce.borrow_mut();
        s.keep(args(Kind::Allreduce, 3), resolved(3));
        s.clear();
        assert!(s.stale.get(), "the running entry is dropped when its run ends");
        drop(held);
        assert_eq!(s.count_of(&args(Kind::Allreduce, 2)), Some(2));
    }

    #[test]
    fn spec_leaves_no_output_where_the_rank_has_none() {
        let r = Resolved { out_here: false, ..resolved(4) };
        let (a, mut b) = ([0u8; 16], [0u8; 16]);
        let s = r.spec(Kind::Reduce, a.as_ptr().cast(), b.as_mut_ptr().cast());
        assert!(s.recv.is_null());
        assert_eq!((s.count, s.send), (4, a.as_ptr()));
    }
}
