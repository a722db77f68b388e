//! Point-to-point: sends, receives and probes, from MPI arguments (buffer, count, datatype,
//! rank, tag, communicator) to operations-core calls.
//!
//! A contiguous buffer goes to the core as it is. A strided one (a derived type with holes) is
//! packed into a scratch buffer before a send and unpacked from one after a receive.
//! `MPI_PROC_NULL` completes at once with the standard's status; `MPI_ANY_TAG` becomes the
//! core's wildcard.
//!
//! The path of a send: a repeated `MPI_Send` of a dense type on an intracommunicator, below
//! `MPI_THREAD_MULTIPLE`, to a peer on the same node, is 8 calls over 6 files:
//!
//! 1. `PMPI_Send` (this file; `export!`'s direct clause, `declare.rs`, expands here): reads
//!    the instance (`state::DIRECT`), catches a panic inline;
//! 2. `Shortcuts::hit` (`mpi/src/shortcut.rs`): compares communicator and type with the
//!    point-to-point entry and turns buffer, count and type into the byte slice, the one
//!    conversion, passed on as it is;
//! 3. `OpsCore::send` (`src/ops/p2p.rs`): borrows the engine;
//! 4. `Engine::send` (`engine/src/send.rs`, inlined) →
//! 5. `Engine::isend_ctx` →
//! 6. `send_target` (the same file): the one check of tag and destination (a negative one,
//!    passed cast, fails there), the route;
//! 7. `ShmTransport::try_send` (`shm/src/lib.rs`) →
//! 8. `Producer::try_push` (`shm/src/ring.rs`): the record into the ring (its copies are the
//!    wire module's leaves `Header::as_bytes` and `transport::copy_bytes`); nothing calls back
//!    into the engine's state.
//!
//! An error goes out of line: with a negative destination or tag (`MPI_PROC_NULL`, a bad one)
//! `send_failed` runs the call past its direct path, which checks the arguments itself.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use weft::ops::{CommId, ReqId};
use weft::EngineError;

mod modes;
mod sendrecv;

pub use self::{modes::*, sendrecv::*};

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::export;
use crate::obj::datatype::Span;
use crate::obj::intercomm::remote_status;
use crate::obj::request::{self, After, Req, Unpack};
use crate::obj::request::{Mode, Started};
use crate::state::{self, multiple, Mpi, On};

/// A receive tag as the core takes it: `MPI_ANY_TAG` is the wildcard, other negatives are bad.
#[inline(always)]
pub(crate) fn recv_tag(tag: c_int) -> MpiResult<i32> {
    match tag {
        MPI_ANY_TAG => Ok(weft::ANY_TAG),
        t if t < 0 => {
            Err(err!(MPI_ERR_TAG, "invalid tag {t}: tags are >= 0 (or MPI_ANY_TAG when receiving)"))
        }
        t => Ok(t),
    }
}

/// A send tag: never negative.
#[inline(always)]
pub(crate) fn send_tag(tag: c_int) -> MpiResult<i32> {
    if tag < 0 {
        return Err(err!(MPI_ERR_TAG, "invalid tag {tag}: send tags are >= 0"));
    }
    Ok(tag)
}

/// A receive source: a rank or `MPI_ANY_SOURCE` (the core's wildcard has the same value).
#[inline(always)]
pub(crate) fn recv_source(src: c_int) -> MpiResult<i32> {
    if src < 0 && src != MPI_ANY_SOURCE {
        return Err(err!(MPI_ERR_RANK, "invalid source rank {src}"));
    }
    Ok(src)
}

/// Check a buffer pointer that must hold `len` bytes.
#[inline(always)]
fn check_buf(p: *const c_void, len: usize) -> MpiResult {
    if len > 0 && p.is_null() {
        return Err(err!(MPI_ERR_BUFFER, "invalid buffer: NULL with {len} bytes to move"));
    }
    Ok(())
}

/// Check the buffer of a span: a contiguous one must not be NULL; a strided one may be
/// `MPI_BOTTOM` (NULL), its type then holding absolute addresses.
#[inline(always)]
fn check_span(p: *const c_void, span: &Span) -> MpiResult {
    match span {
        Span::Contig(n) => check_buf(p, *n),
        Span::Strided(..) => Ok(()),
    }
}

impl Mpi {
    /// The core communicator and byte count of a point-to-point call that goes to the core
    /// as it is: a committed dense type, a count that is not negative, a buffer that is not
    /// NULL when data moves, and an intracommunicator. `None` for any other call, which the
    /// full path handles (and rejects with its errors). The caller checks rank and tag.
    #[inline(always)]
    fn direct(
        &self,
        comm: MPI_Comm,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
    ) -> Option<(CommId, usize)> {
        let (id, size) = match self.shortcuts.peer(comm, dt) {
            Some(hit) => hit,
            None => self.resolve_direct(comm, dt)?,
        };
        let n = size.checked_mul(usize::try_from(count).ok()?)?;
        if n > 0 && buf.is_null() {
            return None;
        }
        Some((id, n))
    }

    /// [`Mpi::direct`] without a shortcut: the core communicator of intracommunicator `comm`
    /// and the size of dense committed type `dt`, which become the shortcut.
    #[cold]
    fn resolve_direct(&self, comm: MPI_Comm, dt: MPI_Datatype) -> Option<(CommId, usize)> {
        let (size, _) = self.types().borrow().dense(dt)?;
        // `Shortcuts::hit` multiplies the size as an `i64`.
        i64::try_from(size).ok()?;
        let comms = self.comms().borrow();
        let c = comms.get(comm).filter(|c| c.inter.is_none())?;
        self.shortcuts.keep_peer(comm, dt, c.id, size);
        Some((c.id, size))
    }

    /// Start a send of `count` elements of `dt` at `buf`; the core request and what to keep
    /// alive until it completes.
    ///
    /// # Safety
    /// `buf` must stay valid for the type map's reads until the request completes.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn start_send(
        &self,
        c: CommId,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
        dest: c_int,
        tag: c_int,
        sync: bool,
    ) -> MpiResult<(ReqId, After)> {
        let tag = send_tag(tag)?;
        let dst = self.core.dest(c, dest)?;
        let span = self.types().borrow().span(dt, count)?;
        check_span(buf, &span)?;
        match span {
            Span::Contig(n) => {
                // SAFETY: forwarded contract.
                let id = unsafe { self.isend_raw(c, buf.cast(), n, dst, tag, sync)? };
                Ok((id, After::Nothing))
            }
            Span::Strided(n, ty) => {
                let mut packed = Vec::with_capacity(n);
                // SAFETY: forwarded contract.
                unsafe { crate::obj::datatype::pack(buf.cast(), count as usize, &ty, &mut packed) };
                // SAFETY: `packed` moves into the request's `After::Keep`, which lives until the
                // request completes; moving a Vec does not move its heap buffer.
                let id = unsafe { self.isend_raw(c, packed.as_ptr(), packed.len(), dst, tag, sync)? };
                Ok((id, After::Keep(packed)))
            }
        }
    }

    /// A standard or synchronous core send of `len` bytes at `buf`.
    ///
    /// # Safety
    /// As [`weft::ops::OpsCore::isend`].
    #[inline(always)]
    unsafe fn isend_raw(
        &self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
        sync: bool,
    ) -> MpiResult<ReqId> {
        // SAFETY: forwarded contract.
        let r = unsafe {
            if sync {
                self.core.issend(c, buf, len, dst, tag)
            } else {
                self.core.isend(c, buf, len, dst, tag)
            }
        };
        Ok(r?)
    }

    /// Start a send in `mode` on communicator handle `comm` (`MPI_PROC_NULL` and buffered
    /// sends complete at once).
    ///
    /// # Safety
    /// `buf` must stay valid for the type map's reads until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn start_send_in(
        &self,
        comm: MPI_Comm,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
        dest: c_int,
        tag: c_int,
        mode: Mode,
    ) -> MpiResult<Started> {
        let (c, dest) = self.peer(comm, dest)?;
        if dest == MPI_PROC_NULL {
            return Ok(Started::Done(request::proc_null_status()));
        }
        match mode {
            Mode::Buffered => {
                // SAFETY: forwarded contract (a buffered send reads `buf` only during the call).
                unsafe { self.bsend(c, buf, count, dt, dest, tag)? };
                Ok(Started::Done(request::empty_status()))
            }
            Mode::Sync => {
                // SAFETY: forwarded contract.
                let (id, after) = unsafe { self.start_send(c, buf, count, dt, dest, tag, true)? };
                Ok(Started::Core(id, after))
            }
            Mode::Standard | Mode::Ready => {
                // SAFETY: forwarded contract.
                let (id, after) = unsafe { self.start_send(c, buf, count, dt, dest, tag, false)? };
                Ok(Started::Core(id, after))
            }
        }
    }

    /// Start a receive on communicator handle `comm` (`MPI_PROC_NULL` completes at once).
    ///
    /// # Safety
    /// `buf` must stay valid for the type map's writes until the request completes.
    pub(crate) unsafe fn start_recv_in(
        &self,
        comm: MPI_Comm,
        buf: *mut c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
        src: c_int,
        tag: c_int,
    ) -> MpiResult<Started> {
        let (c, src) = self.peer(comm, src)?;
        if src == MPI_PROC_NULL {
            return Ok(Started::Done(request::proc_null_status()));
        }
        // SAFETY: forwarded contract.
        let (id, after) = unsafe { self.start_recv(c, buf, count, dt, src, tag)? };
        Ok(Started::Core(id, after))
    }

    /// Post a receive of `count` elements of `dt` into `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid for the type map's writes until the request completes.
    #[inline]
    pub(crate) unsafe fn start_recv(
        &self,
        c: CommId,
        buf: *mut c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
        src: c_int,
        tag: c_int,
    ) -> MpiResult<(ReqId, After)> {
        let tag = recv_tag(tag)?;
        let src = recv_source(src)?;
        let span = self.types().borrow().span(dt, count)?;
        check_span(buf, &span)?;
        match span {
            Span::Contig(n) => {
                // SAFETY: forwarded contract.
                let id = unsafe { self.core.irecv(c, buf.cast(), n, src, tag)? };
                Ok((id, After::Nothing))
            }
            Span::Strided(n, ty) => {
                let mut packed = vec![0u8; n];
                // SAFETY: the scratch buffer moves into `After::Unpack` and lives until the
                // request completes (moving a Vec does not move its heap buffer).
                let id = unsafe { self.core.irecv(c, packed.as_mut_ptr(), n, src, tag)? };
                Ok((
                    id,
                    After::Unpack(Box::new(Unpack { packed, dst: buf.cast(), count: count as usize, ty })),
                ))
            }
        }
    }
}

/// Wait for a request started for a blocking call, with its status.
fn finish_blocking(m: &Mpi, comm: MPI_Comm, id: ReqId, after: After) -> MpiResult<MPI_Status> {
    let h = m.reqs().borrow_mut().insert(Req::Core { id, comm, after });
    let (st, e) = request::complete(m, h, true)?.expect("blocking completion");
    match e {
        None => Ok(st),
        Some(e) => Err(e),
    }
}

export! {
    /// `MPI_Send`: standard-mode blocking send.
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) on On::Comm(comm);
    direct |m| {
        // SAFETY: the application's buffer (its count and type), read during the call only.
        if let Some((c, s)) = unsafe { m.shortcuts.hit(comm, buf, count.into(), datatype) } {
            // Destination and tag go to the engine unchecked, which checks them once: a
            // negative one (cast, no rank of any communicator) fails there before anything
            // is sent, and `send_failed` hands the call to the full path.
            return match catch_unwind(AssertUnwindSafe(|| m.core.send(c, s, dest as u32, tag))) {
                Ok(Ok(())) => MPI_SUCCESS,
                // SAFETY: forwarded contract.
                Ok(Err(e)) => unsafe { send_failed(m, e, buf, count, datatype, dest, tag, comm) },
                Err(p) => state::raise_panic(m, "MPI_Send", On::Comm(comm), p),
            };
        }
    }
    // SAFETY: forwarded contract.
    |m| unsafe { send_call(m, buf, count, datatype, dest, tag, comm) }
}

/// An operations-core error of a direct path, to the error handler; the code to return.
#[cold]
#[inline(never)]
pub(crate) fn engine_error(m: &Mpi, name: &'static str, on: On, e: EngineError) -> c_int {
    state::raise_cold(m, name, on, e.into())
}

/// `MPI_Send`'s direct path failed with `e`; the code to return. With a negative destination
/// or tag the engine refused the call before anything changed (a re-entrant call, a revoked
/// communicator, the tag, the rank: it checks nothing that changes state before the rank),
/// so the call runs again past its direct path, which completes `MPI_PROC_NULL` and rejects
/// any other negative value with its MPI error class and message. Any other error is the
/// call's, to the error handler.
///
/// # Safety
/// As `MPI_Send`.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn send_failed(
    m: &Mpi,
    e: EngineError,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    if (dest | tag) < 0 {
        // SAFETY: forwarded contract.
        return state::call("MPI_Send", On::Comm(comm), |m| unsafe {
            send_call(m, buf, count, datatype, dest, tag, comm)
        });
    }
    state::raise_cold(m, "MPI_Send", On::Comm(comm), e.into())
}

/// The body of `MPI_Send` past its direct path: the first call on a communicator and type
/// (which makes them the shortcut), and every call [`send_full`] handles.
///
/// # Safety
/// As `MPI_Send`.
unsafe fn send_call(
    m: &Mpi,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult {
    if dest >= 0 && tag >= 0 && !multiple() {
        if let Some((c, n)) = m.direct(comm, buf, count.into(), datatype) {
            // SAFETY: the application's buffer of `n` bytes (its count and type),
            // non-null when `n > 0`.
            let s = unsafe { bytes(buf, n) };
            return m.core.send(c, s, dest as u32, tag).map_err(MpiErr::from);
        }
    }
    // SAFETY: forwarded contract.
    unsafe { send_full(m, buf, count, datatype, dest, tag, comm) }
}

/// `MPI_Send` past its direct path: `MPI_PROC_NULL`, a type or communicator the shortcut does
/// not hold, bad arguments (rejected here with their error), `MPI_THREAD_MULTIPLE`.
///
/// # Safety
/// As `MPI_Send`.
unsafe fn send_full(
    m: &Mpi,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult {
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    let (c, dest) = m.peer(comm, dest)?;
    if !multiple() {
        if let Span::Contig(n) = m.types().borrow().span(datatype, count as i64)? {
            check_buf(buf, n)?;
            let dst = m.core.dest(c, dest)?;
            // SAFETY: the application's buffer of `n` bytes (its count and type), checked
            // non-null when `n > 0`.
            let s = unsafe { bytes(buf, n) };
            return m.core.send(c, s, dst, send_tag(tag)?).map_err(MpiErr::from);
        }
    }
    // SAFETY: blocking: `buf` outlives the request.
    let (id, after) = unsafe { m.start_send(c, buf, count.into(), datatype, dest, tag, false)? };
    finish_blocking(m, comm, id, after).map(drop)
}

/// The direct path of `MPI_Recv` (`LARGE` false) and `MPI_Recv_c` (`LARGE` true): the code
/// to return, or `None` when the call is not the shortcut's (the call's body then runs).
///
/// # Safety
/// As `MPI_Recv`; `m` is the direct instance.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn recv_direct<const LARGE: bool>(
    m: &Mpi,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> Option<c_int> {
    // A rank or MPI_ANY_SOURCE (the core's wildcard has its value), a tag or MPI_ANY_TAG (the
    // core's wildcard is -1, which is no MPI tag).
    if source >= MPI_ANY_SOURCE && tag >= MPI_ANY_TAG && tag != weft::ANY_TAG {
        // SAFETY: the application's buffer (its count and type), written during the call only.
        if let Some((c, s)) = unsafe { m.shortcuts.hit_mut(comm, buf, count, datatype) } {
            let tag = if tag == MPI_ANY_TAG { weft::ANY_TAG } else { tag };
            let name = recv_name::<LARGE>();
            return Some(match catch_unwind(AssertUnwindSafe(|| m.core.recv(c, s, source, tag))) {
                Ok(Ok(st)) => {
                    // SAFETY: status pointer from the caller.
                    unsafe { store_received(status, &st) };
                    MPI_SUCCESS
                }
                // SAFETY: forwarded contract.
                Ok(Err(x)) => unsafe { recv_error(m, name, comm, x, status) },
                Err(p) => state::raise_panic(m, name, On::Comm(comm), p),
            });
        }
    }
    None
}

/// Write the status of a message received without error through `p`, unless it is
/// `MPI_STATUS_IGNORE`: [`request::status_of`] with `MPI_SUCCESS`, without its wildcard tag
/// conversion, since a received message's tag is its sender's (the core accepts send tags
/// `0..=MAX_TAG` only).
///
/// # Safety
/// A non-null `p` must be valid for a write of an `MPI_Status`.
#[inline(always)]
unsafe fn store_received(p: *mut MPI_Status, st: &weft::Status) {
    if !p.is_null() {
        let mut out = MPI_Status {
            MPI_SOURCE: st.source as c_int,
            MPI_TAG: st.tag,
            MPI_ERROR: MPI_SUCCESS,
            MPI_internal: [0; 5],
        };
        request::set_count(&mut out, st.count);
        // SAFETY: non-null and valid by the caller's contract.
        unsafe { p.write(out) };
    }
}

/// The name of the exported receive, for its errors.
#[inline(always)]
fn recv_name<const LARGE: bool>() -> &'static str {
    if LARGE {
        "MPI_Recv_c"
    } else {
        "MPI_Recv"
    }
}

/// A blocking receive on the direct path failed with `x`: its status, and the error to the
/// error handler; the code to return.
///
/// # Safety
/// `status` is the caller's `MPI_Status` pointer (or null / `MPI_STATUS_IGNORE`).
#[cold]
#[inline(never)]
unsafe fn recv_error(
    m: &Mpi,
    name: &'static str,
    comm: MPI_Comm,
    x: EngineError,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: forwarded contract.
    match unsafe { recv_failed(m, x, status) } {
        Ok(()) => MPI_SUCCESS,
        Err(e) => state::raise_cold(m, name, On::Comm(comm), e),
    }
}

/// The body of a blocking receive past its direct path: the first call on a communicator and
/// type (which makes them the shortcut), and every call [`recv_full`] handles.
///
/// # Safety
/// As `MPI_Recv`.
#[allow(clippy::too_many_arguments)]
unsafe fn recv_call(
    m: &Mpi,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> MpiResult {
    if (source >= 0 || source == MPI_ANY_SOURCE) && (tag >= 0 || tag == MPI_ANY_TAG) && !multiple() {
        if let Some((c, n)) = m.direct(comm, buf, count, datatype) {
            // SAFETY: the application's buffer of `n` bytes (its count and type),
            // non-null when `n > 0`.
            let s = unsafe { bytes_mut(buf, n) };
            return match m.core.recv(c, s, source, recv_tag(tag)?) {
                Ok(st) => {
                    // SAFETY: status pointer from the caller.
                    unsafe { request::store(status, request::status_of(&st, MPI_SUCCESS)) };
                    Ok(())
                }
                // SAFETY: forwarded contract.
                Err(x) => unsafe { recv_failed(m, x, status) },
            };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { recv_full(m, buf, count, datatype, source, tag, comm, status) }
}

/// A blocking receive past its direct path: `MPI_PROC_NULL`, a type or communicator the
/// shortcut does not hold, an intercommunicator, bad arguments (rejected here with their
/// error), `MPI_THREAD_MULTIPLE`.
///
/// # Safety
/// As `MPI_Recv`.
#[allow(clippy::too_many_arguments)]
unsafe fn recv_full(
    m: &Mpi,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> MpiResult {
    if source == MPI_PROC_NULL {
        m.comm(comm)?;
        // SAFETY: status pointer from the caller.
        unsafe { request::store(status, request::proc_null_status()) };
        return Ok(());
    }
    let (c, source, inter) = m.source(comm, source)?;
    let (st, e) = match m.types().borrow().span(datatype, count)? {
        Span::Contig(n) if !multiple() => {
            check_buf(buf, n)?;
            // SAFETY: the application's buffer of `n` bytes (its count and type),
            // checked non-null when `n > 0`.
            let s = unsafe { bytes_mut(buf, n) };
            let r = m.core.recv(c, s, recv_source(source)?, recv_tag(tag)?);
            let mut out = request::finish(m, r, After::Nothing)?;
            remote_status(inter, &mut out.0);
            out
        }
        _ => {
            // SAFETY: blocking: `buf` outlives the request.
            let (id, after) = unsafe { m.start_recv(c, buf, count, datatype, source, tag)? };
            let h = m.reqs().borrow_mut().insert(Req::Core { id, comm, after });
            request::complete(m, h, true)?.expect("blocking completion")
        }
    };
    // SAFETY: status pointer from the caller.
    unsafe { request::store(status, st) };
    e.map_or(Ok(()), Err)
}

/// A blocking receive on the direct path failed with `x`: its status and error.
///
/// # Safety
/// `status` is the caller's `MPI_Status` pointer (or null / `MPI_STATUS_IGNORE`).
#[cold]
unsafe fn recv_failed(m: &Mpi, x: EngineError, status: *mut MPI_Status) -> MpiResult {
    let (st, e) = request::finish(m, Err(x), After::Nothing)?;
    // SAFETY: forwarded contract.
    unsafe { request::store(status, st) };
    e.map_or(Ok(()), Err)
}

export! {
    /// `MPI_Recv`: blocking receive.
    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) on On::Comm(comm);
    direct |m| {
        // SAFETY: forwarded contract; `m` is the direct instance.
        if let Some(code) = unsafe { recv_direct::<false>(m, buf, count.into(), datatype, source, tag, comm, status) } {
            return code;
        }
    }
    // SAFETY: forwarded contract.
    |m| unsafe { recv_call(m, buf, count.into(), datatype, source, tag, comm, status) }
}

export! {
    /// `MPI_Recv_c`: `MPI_Recv` with a large count.
    fn MPI_Recv_c / PMPI_Recv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) on On::Comm(comm);
    direct |m| {
        // SAFETY: forwarded contract; `m` is the direct instance.
        if let Some(code) = unsafe { recv_direct::<true>(m, buf, count, datatype, source, tag, comm, status) } {
            return code;
        }
    }
    // SAFETY: forwarded contract.
    |m| unsafe { recv_call(m, buf, count, datatype, source, tag, comm, status) }
}

/// View `n` bytes at `p` (`n > 0` implies `p` is non-null).
///
/// # Safety
/// `p` must be valid for reads of `n` bytes for the returned lifetime.
#[inline(always)]
unsafe fn bytes<'a>(p: *const c_void, n: usize) -> &'a [u8] {
    if n == 0 {
        return &[];
    }
    // SAFETY: by the caller's contract.
    unsafe { std::slice::from_raw_parts(p.cast(), n) }
}

/// View `n` bytes at `p` mutably (`n > 0` implies `p` is non-null).
///
/// # Safety
/// `p` must be valid for writes of `n` bytes, and not otherwise accessed, for the returned
/// lifetime.
#[inline(always)]
unsafe fn bytes_mut<'a>(p: *mut c_void, n: usize) -> &'a mut [u8] {
    if n == 0 {
        return &mut [];
    }
    // SAFETY: by the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(p.cast(), n) }
}
