//! Collectives: MPI collective calls as collectives-engine specs, run blocking or started as a
//! request ([`Mpi::exec`]), and the argument checks they share. A data-moving collective moves
//! bytes (`MPI_BYTE` elements) whatever its datatypes, so send and receive types that differ
//! but carry the same bytes work; a reducing one runs on the element type of its datatype
//! (`op.rs`). Non-contiguous types are packed into scratch buffers (`stage`).
//!
//! Families: `gather` (gather, allgather and their v forms), `scatter`, `alltoall` (with v
//! and w), `reduce` (reduce, allreduce, reduce-scatter, scans, `MPI_Reduce_local`); barrier and
//! bcast are here. `MPI_IN_PLACE` follows each collective's rule in the standard; the engine
//! runs only allreduce in place, so an in-place call hands the engine a copy of the data the
//! application left in the receive buffer.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use weft::ops::OpsCore;
use weft::ops::{DType, Kind, Spec};
use weft::EngineError;

use crate::abi::*;
use crate::bind::p2p::engine_error;
use crate::error::{err, MpiErr, MpiResult};
use crate::obj::comm::CommRef;
use crate::obj::datatype::TypeInfo;
use crate::obj::request::{self, After, Req};
use crate::state::{self, multiple, Mpi, On};
use crate::{export, put};

use crate::shortcut::{Args, Resolved};
use stage::{Region, Staged};

/// Export the blocking collective `MPI_X` and its non-blocking form `MPI_IX` (the same
/// arguments and a request) from one body, which sees the call's [`Mode`] as `$mode`.
macro_rules! coll_pair {
    ($(#[$m:meta])* $name:ident / $pname:ident, $iname:ident / $ipname:ident,
     ($($a:ident : $t:ty),*), $comm:ident, |$mm:ident, $mode:ident| $body:expr) => {
        export! {
            $(#[$m])*
            fn $name / $pname($($a: $t),*) on On::Comm($comm);
            |$mm| {
                let $mode = Mode::Blocking;
                $body
            }
        }
        export! {
            $(#[$m])*
            fn $iname / $ipname($($a: $t),*, request: *mut MPI_Request) on On::Comm($comm);
            |$mm| {
                let $mode = Mode::Start(request);
                $body
            }
        }
    };
}

mod alltoall;
mod gather;
mod reduce;
mod scatter;
mod stage;

pub use self::{alltoall::*, gather::*, reduce::*, scatter::*};

/// How a collective call ends: blocking, or a request written to this pointer.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Blocking,
    Start(*mut MPI_Request),
}

impl Mpi {
    /// Run (or start) the call `a` on `send` and `recv` (a broadcast's buffer is `recv`) if
    /// it is the shortcut's entry of its family ([`Mpi::exec_direct`]); `None` if it is not
    /// (or the entry is in use). A blocking call outside `MPI_THREAD_MULTIPLE` runs the
    /// entry's spec in place, holding the entry: a call made during the run (none reaches
    /// here: the engine is held for the run) finds it busy and takes the full path.
    ///
    /// # Safety
    /// The application keeps its buffers valid until the collective completes.
    #[inline(always)]
    pub(crate) unsafe fn run_shortcut(
        &self,
        a: &Args,
        send: *const c_void,
        recv: *mut c_void,
        mode: Mode,
    ) -> Option<MpiResult> {
        if let (Mode::Blocking, false) = (mode, multiple()) {
            // SAFETY: forwarded contract (the spec holds the application's buffers).
            let run = |c: CommRef, spec: &mut Spec| unsafe { self.core.run_bare(c.id, c.rank, c.size, spec) };
            // SAFETY: forwarded contract.
            return unsafe { self.shortcuts.run_blocking(a, send, recv, run) }
                .map(|r| r.map_err(MpiErr::from));
        }
        let (c, mut spec) = self.shortcuts.take(a, send, recv)?;
        // SAFETY: forwarded contract.
        Some(unsafe { self.exec_direct(c, a.comm, &mut spec, mode) })
    }
}

impl Mpi {
    /// Size, check and run (or start) `spec` on `comm`, keeping `keep` alive until it ends.
    ///
    /// # Safety
    /// The spec's buffers must stay valid until the collective completes (the call returns,
    /// or the request completes).
    pub(crate) unsafe fn exec(&self, comm: MPI_Comm, spec: &mut Spec, mode: Mode, keep: After) -> MpiResult {
        let c = match spec.kind {
            Kind::Barrier => self.barrier_comm(comm)?,
            _ => self.coll_comm(comm)?,
        };
        // SAFETY: forwarded contract.
        unsafe { self.exec_on(c, comm, spec, mode, keep) }
    }

    /// [`Mpi::exec`] on the communicator `c` that handle `comm` names (looked up already). A
    /// blocking call outside `MPI_THREAD_MULTIPLE` runs in the caller, sized and checked by
    /// the lookup of its cached plan when the same call ran before
    /// ([`OpsCore::run_bare`]); the others are sized here, then started as a request.
    ///
    /// # Safety
    /// As [`Mpi::exec`].
    #[inline]
    pub(crate) unsafe fn exec_on(
        &self,
        c: CommRef,
        comm: MPI_Comm,
        spec: &mut Spec,
        mode: Mode,
        keep: After,
    ) -> MpiResult {
        if let (Mode::Blocking, false) = (mode, multiple()) {
            // SAFETY: forwarded contract.
            unsafe { self.core.run_bare(c.id, c.rank, c.size, spec)? };
            if let After::Run(f) = keep {
                f(self)?;
            }
            return Ok(());
        }
        OpsCore::size_spec(c.rank, c.size, spec)?;
        let out = match mode {
            Mode::Start(out) if out.is_null() => {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
            }
            Mode::Start(out) => Some(out),
            Mode::Blocking => None,
        };
        // SAFETY: forwarded contract.
        let id = unsafe { self.core.start(c.id, spec)? };
        let h = self.reqs().borrow_mut().insert(Req::Core { id, comm, after: keep });
        match out {
            // SAFETY: checked non-null.
            Some(out) => unsafe { put(out, h, "request") },
            None => {
                // Blocking at MPI_THREAD_MULTIPLE: wait with the process lock released
                // between polls.
                let (_, e) = request::complete(self, h, true)?.expect("blocking completion");
                e.map_or(Ok(()), Err)
            }
        }
    }

    /// [`Mpi::exec_on`] for a call with nothing to keep alive or run afterwards (its buffers
    /// are the application's): a blocking call outside `MPI_THREAD_MULTIPLE` goes straight to
    /// [`OpsCore::run_bare`].
    ///
    /// # Safety
    /// As [`Mpi::exec`].
    #[inline(always)]
    pub(crate) unsafe fn exec_direct(
        &self,
        c: CommRef,
        comm: MPI_Comm,
        spec: &mut Spec,
        mode: Mode,
    ) -> MpiResult {
        if let (Mode::Blocking, false) = (mode, multiple()) {
            // SAFETY: forwarded contract.
            return unsafe { self.core.run_bare(c.id, c.rank, c.size, spec) }.map_err(MpiErr::from);
        }
        // SAFETY: forwarded contract.
        unsafe { self.exec_on(c, comm, spec, mode, After::Nothing) }
    }

    /// The communicator a collective runs on: an intracommunicator (collectives on
    /// intercommunicators are not supported: `MPI_ERR_COMM`).
    #[inline(always)]
    pub(crate) fn coll_comm(&self, comm: MPI_Comm) -> MpiResult<CommRef> {
        let c = self.comm_ref(comm)?;
        if c.inter {
            return Err(err!(MPI_ERR_COMM, "collectives on intercommunicators are not supported"));
        }
        Ok(c)
    }

    /// The communicator a barrier runs on: `comm` itself, or for an intercommunicator the union
    /// of its two groups (a barrier over the union lets no process of either group leave before
    /// every process of the other entered, which is the intercommunicator barrier's guarantee).
    pub(crate) fn barrier_comm(&self, comm: MPI_Comm) -> MpiResult<CommRef> {
        self.comm_ref(comm)
    }

    /// This process's rank and the size of `comm`.
    pub(crate) fn rank_size(&self, comm: MPI_Comm) -> MpiResult<(u32, u32)> {
        let c = self.coll_comm(comm)?;
        Ok((c.rank, c.size))
    }

    /// The type `dt` for moving `count` elements: committed, and the count not negative.
    pub(crate) fn typed(&self, dt: MPI_Datatype, count: c_int) -> MpiResult<Arc<TypeInfo>> {
        let types = self.types().borrow();
        types.span(dt, count as i64)?;
        Ok(types.get(dt)?.clone())
    }
}

/// Run (or start) `spec` with `send` and `recv` as its buffers; the scratch buffers and the
/// unpacking travel with the call.
///
/// # Safety
/// The application's buffers behind `send` and `recv` must stay valid until the collective
/// completes.
pub(crate) unsafe fn launch(
    m: &Mpi,
    comm: MPI_Comm,
    spec: &mut Spec,
    send: Staged,
    recv: Staged,
    mode: Mode,
) -> MpiResult {
    spec.send = send.ptr;
    spec.recv = recv.ptr;
    // SAFETY: forwarded contract.
    unsafe {
        let keep = stage::after([send, recv]);
        m.exec(comm, spec, mode, keep)
    }
}

/// A count argument as a `usize` (`MPI_ERR_COUNT` if negative).
pub(crate) fn count_of(c: c_int) -> MpiResult<usize> {
    usize::try_from(c).map_err(|_| err!(MPI_ERR_COUNT, "invalid count {c}: counts are never negative"))
}

/// `n` counts from a C array (`MPI_ERR_ARG` if NULL, `MPI_ERR_COUNT` if one is negative).
///
/// # Safety
/// A non-null `p` must hold `n` ints.
pub(crate) unsafe fn counts_at(p: *const c_int, n: usize, what: &str) -> MpiResult<Vec<usize>> {
    // SAFETY: forwarded contract.
    let a = unsafe { crate::obj::datatype::array(p, n, what)? };
    a.iter().map(|&c| count_of(c)).collect()
}

/// `n` displacements from a C array (`MPI_ERR_ARG` if NULL).
///
/// # Safety
/// A non-null `p` must hold `n` ints.
pub(crate) unsafe fn displs_at(p: *const c_int, n: usize, what: &str) -> MpiResult<Vec<isize>> {
    // SAFETY: forwarded contract.
    Ok(unsafe { crate::obj::datatype::array(p, n, what)? }.iter().map(|&d| d as isize).collect())
}

/// The root of a rooted collective on `n` ranks (`MPI_ERR_ROOT` if out of range).
pub(crate) fn root_in(root: c_int, n: u32) -> MpiResult<u32> {
    u32::try_from(root)
        .ok()
        .filter(|&r| r < n)
        .ok_or_else(|| err!(MPI_ERR_ROOT, "invalid root {root} on a communicator of {n}"))
}

/// The send and receive sides of one rank carry different numbers of bytes.
pub(crate) fn mismatch(what: &str, send: usize, recv: usize) -> crate::error::MpiErr {
    err!(MPI_ERR_TRUNCATE, "{what}: {send} bytes sent but {recv} bytes expected (type signatures differ)")
}

/// `MPI_IN_PLACE` as a pointer.
#[inline]
pub(crate) fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

/// A blocking collective of the exported function `name` whose arguments `a` are the
/// shortcut's entry, run below `MPI_THREAD_MULTIPLE` without [`call`]: the code to return, an
/// error or a panic having gone to the communicator's error handler as under [`call`]; `None`
/// if `a` is not the entry (or the entry is in use).
///
/// `KIND` is `a.kind` as a `u8`: one instantiation per kind, so that each exported function
/// has its own panic catch, which the compiler inlines into its one caller (a catch shared by
/// several functions stays out of line: about 30 more instructions per call).
///
/// # Safety
/// The application's buffers `send` and `recv` are valid for the call; MPI runs below
/// `MPI_THREAD_MULTIPLE` (`m` came from `state::DIRECT`).
#[inline(always)]
pub(crate) unsafe fn run_direct<const KIND: u8>(
    m: &Mpi,
    name: &'static str,
    a: &Args,
    send: *const c_void,
    recv: *mut c_void,
) -> Option<c_int> {
    debug_assert_eq!(a.kind as u8, KIND);
    let on = On::Comm(a.comm);
    let run = |c: CommRef, spec: &mut Spec| {
        // SAFETY: the entry's spec holds the application's buffers (forwarded contract).
        unsafe { m.core.run_bare(c.id, c.rank, c.size, spec) }.map_err(boxed)
    };
    // SAFETY: forwarded contract.
    match state::catching(m, name, on, || unsafe { m.shortcuts.run_blocking(a, send, recv, run) }) {
        Ok(None) => None,
        Ok(Some(Ok(()))) => Some(MPI_SUCCESS),
        Ok(Some(Err(e))) => Some(engine_error(m, name, on, *e)),
        Err(code) => Some(code),
    }
}

/// An operations-core error of a direct path, boxed so that the path's result is a pointer
/// wide (no copies of the error's bytes on success).
#[cold]
#[inline(never)]
fn boxed(e: EngineError) -> Box<EngineError> {
    Box::new(e)
}

fn barrier(m: &Mpi, comm: MPI_Comm, mode: Mode) -> MpiResult {
    if let Mode::Blocking = mode {
        if !multiple() {
            // An intracommunicator becomes the barrier shortcut.
            let c = m.comm_ref(comm)?;
            if !c.inter {
                m.shortcuts.keep_barrier(comm, c.id);
            }
            return Ok(m.core.barrier(c.id)?);
        }
    }
    let mut spec = Spec::new(Kind::Barrier, DType::Byte);
    // SAFETY: a barrier has no buffers.
    unsafe { m.exec(comm, &mut spec, mode, After::Nothing) }
}

/// A broadcast: the shortcut's entry in the caller's frame, anything else out of line.
#[inline(always)]
fn bcast(
    m: &Mpi,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // The common case: a dense committed type, used in place without staging; a repeated
    // call finds its arguments resolved already.
    let args = Args { kind: Kind::Bcast, comm, dt, op: MPI_OP_NULL, count, root, in_place: false };
    // SAFETY: the application keeps `buf` valid until the collective completes.
    if let Some(r) = unsafe { m.run_shortcut(&args, std::ptr::null(), buf, mode) } {
        return r;
    }
    bcast_full(m, buf, count, dt, root, comm, mode)
}

/// [`bcast`] of a call that is not the shortcut's entry.
#[inline(never)]
fn bcast_full(
    m: &Mpi,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let args = Args { kind: Kind::Bcast, comm, dt, op: MPI_OP_NULL, count, root, in_place: false };
    let dense = m.types().borrow().dense(dt);
    if let Some(bytes) = dense.and_then(|(size, _)| size.checked_mul(usize::try_from(count).ok()?)) {
        let c = m.coll_comm(comm)?;
        let root = root_in(root, c.size)?;
        m.shortcuts
            .keep(args, Resolved { c, dtype: DType::Byte, op: None, count: bytes, root, out_here: true });
        // SAFETY: as above.
        if let Some(r) = unsafe { m.run_shortcut(&args, std::ptr::null(), buf, mode) } {
            return r;
        }
    }
    let ty = m.typed(dt, count)?;
    let (me, n) = m.rank_size(comm)?;
    let root = root_in(root, n)?;
    let mut spec = Spec::new(Kind::Bcast, DType::Byte);
    spec.count = ty.size * count as usize; // `typed` checked it fits
    spec.root = root;
    // A dense type is used in place; otherwise the root's data is packed, the others receive
    // into scratch and unpack.
    let data = if ty.dense() {
        Staged::at(buf.cast())
    } else if me == root {
        // SAFETY: the root's buffer holds `count` elements.
        unsafe { stage::send(&Region::one(buf.cast(), &ty, count as usize)) }
    } else {
        stage::recv(Region::one(buf.cast(), &ty, count as usize))
    };
    // SAFETY: the application keeps `buf` valid until the collective completes.
    unsafe { launch(m, comm, &mut spec, Staged::none(), data, mode) }
}

export! {
    /// `MPI_Barrier`.
    fn MPI_Barrier / PMPI_Barrier(comm: MPI_Comm) on On::Comm(comm);
    direct |m| {
        if let Some(id) = m.shortcuts.barrier(comm) {
            let on = On::Comm(comm);
            return match state::catching(m, "MPI_Barrier", on, || m.core.barrier(id).map_err(boxed)) {
                Ok(Ok(())) => MPI_SUCCESS,
                Ok(Err(e)) => engine_error(m, "MPI_Barrier", on, *e),
                Err(code) => code,
            };
        }
    }
    // The first barrier on a communicator (an intracommunicator becomes the shortcut),
    // `MPI_THREAD_MULTIPLE`, bad handles.
    |m| barrier(m, comm, Mode::Blocking)
}

export! {
    /// `MPI_Ibarrier`.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| barrier(m, comm, Mode::Start(request))
}

export! {
    /// `MPI_Bcast`.
    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) on On::Comm(comm);
    direct |m| {
        let args = Args { kind: Kind::Bcast, comm, dt: datatype, op: MPI_OP_NULL, count, root, in_place: false };
        // SAFETY: the application's buffer, valid for the call; `m` is the direct instance.
        if let Some(code) = unsafe { run_direct::<{ Kind::Bcast as u8 }>(m, "MPI_Bcast", &args, std::ptr::null(), buffer) } {
            return code;
        }
    }
    // A call that is not the shortcut's entry (the first of its arguments makes it the
    // entry), `MPI_THREAD_MULTIPLE`.
    |m| bcast(m, buffer, count, datatype, root, comm, Mode::Blocking)
}

export! {
    /// `MPI_Ibcast`.
    fn MPI_Ibcast / PMPI_Ibcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| bcast(m, buffer, count, datatype, root, comm, Mode::Start(request))
}
