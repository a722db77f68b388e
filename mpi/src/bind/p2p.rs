//! Point-to-point: sends, receives and probes, from MPI arguments (buffer, count, datatype,
//! rank, tag, communicator) to operations-core calls.
//!
//! A contiguous buffer goes to the core as it is. A strided one (a derived type with holes) is
//! packed into a scratch buffer before a send and unpacked from one after a receive.
//! `MPI_PROC_NULL` completes at once with the standard's status; `MPI_ANY_TAG` becomes the
//! core's wildcard.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use weft::ops::{CommId, ReqId};
use weft::EngineError;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::obj::datatype::Span;
use crate::obj::intercomm::remote_status;
use crate::obj::request::{self, After, Req, Unpack};
use crate::obj::request::{Mode, Started};
use crate::state::{self, call, multiple, Mpi, On};
use crate::{export, put};

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

    /// [`Mpi::direct`] on a shortcut hit only (no lookup on a miss), as a call's lock-free
    /// path takes it: the core communicator, the buffer (dangling but non-null when it is NULL
    /// and no byte moves) and the byte count.
    #[inline(always)]
    fn direct_hit(
        &self,
        comm: MPI_Comm,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
    ) -> Option<(CommId, NonNull<u8>, usize)> {
        let (id, size) = self.shortcuts.peer(comm, dt)?;
        if count < 0 {
            return None;
        }
        // Signed: one multiply with an overflow flag; the entry's size is at most `i64::MAX`
        // (`resolve_direct`), so a product that fits is the byte count.
        let n = count.checked_mul(size as i64)? as usize;
        let p = match NonNull::new(buf as *mut u8) {
            Some(p) => p,
            None if n == 0 => NonNull::dangling(),
            None => return None,
        };
        Some((id, p, n))
    }

    /// [`Mpi::direct`] without a shortcut: the core communicator of intracommunicator `comm`
    /// and the size of dense committed type `dt`, which become the shortcut.
    #[cold]
    fn resolve_direct(&self, comm: MPI_Comm, dt: MPI_Datatype) -> Option<(CommId, usize)> {
        let (size, _) = self.types().borrow().dense(dt)?;
        // `direct_hit` multiplies the size as an `i64`.
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
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) {
        if let Some(m) = state::direct() {
            if (dest | tag) >= 0 {
                if let Some((c, p, n)) = m.direct_hit(comm, buf, count.into(), datatype) {
                    // SAFETY: the application's buffer of `n` bytes (its count and type).
                    let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), n) };
                    let on = On::Comm(comm);
                    return match state::catching(m, "MPI_Send", on, || m.core.send(c, s, dest as u32, tag)) {
                        Ok(Ok(())) => MPI_SUCCESS,
                        Ok(Err(e)) => engine_error(m, "MPI_Send", on, e),
                        Err(code) => code,
                    };
                }
            }
        }
        // SAFETY: forwarded contract.
        unsafe { send_slow(buf, count, datatype, dest, tag, comm) }
    }
}

/// An operations-core error of a direct path, to the error handler; the code to return.
#[cold]
#[inline(never)]
pub(crate) fn engine_error(m: &Mpi, name: &'static str, on: On, e: EngineError) -> c_int {
    state::raise_cold(m, name, on, e.into())
}

/// `MPI_Send` when its direct path does not apply at once: the first call on a communicator
/// and type (which makes them the shortcut), and every call [`send_full`] handles.
///
/// # Safety
/// As `MPI_Send`.
#[cold] // For the direct path's layout (straight-line to the core call); no cost of its own.
#[inline(never)]
unsafe fn send_slow(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    call("MPI_Send", On::Comm(comm), |m| {
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
    })
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

/// The body of `MPI_Recv` (`LARGE` false) and `MPI_Recv_c` (`LARGE` true).
///
/// # Safety
/// As `MPI_Recv`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn recv_body<const LARGE: bool>(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    // A rank or MPI_ANY_SOURCE (the core's wildcard has its value), a tag or MPI_ANY_TAG (the
    // core's wildcard is -1, which is no MPI tag).
    if source >= MPI_ANY_SOURCE && tag >= MPI_ANY_TAG && tag != weft::ANY_TAG {
        if let Some(m) = state::direct() {
            if let Some((c, p, n)) = m.direct_hit(comm, buf, count, datatype) {
                let tag = if tag == MPI_ANY_TAG { weft::ANY_TAG } else { tag };
                // SAFETY: the application's buffer of `n` bytes (its count and type).
                let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), n) };
                let name = recv_name::<LARGE>();
                return match state::catching(m, name, On::Comm(comm), || m.core.recv(c, s, source, tag)) {
                    Ok(Ok(st)) => {
                        // SAFETY: status pointer from the caller.
                        unsafe { store_received(status, &st) };
                        MPI_SUCCESS
                    }
                    // SAFETY: forwarded contract.
                    Ok(Err(x)) => unsafe { recv_error(m, name, comm, x, status) },
                    Err(code) => code,
                };
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe { recv_slow::<LARGE>(buf, count, datatype, source, tag, comm, status) }
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

/// A blocking receive when its direct path does not apply at once: the first call on a
/// communicator and type (which makes them the shortcut), and every call [`recv_full`]
/// handles.
///
/// # Safety
/// As `MPI_Recv`.
#[cold] // For the direct path's layout (straight-line to the core call); no cost of its own.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn recv_slow<const LARGE: bool>(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    call(recv_name::<LARGE>(), On::Comm(comm), |m| {
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
    })
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
    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) {
        // SAFETY: forwarded contract.
        unsafe { recv_body::<false>(buf, count.into(), datatype, source, tag, comm, status) }
    }
}

export! {
    /// `MPI_Recv_c`: `MPI_Recv` with a large count.
    fn MPI_Recv_c / PMPI_Recv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) {
        // SAFETY: forwarded contract.
        unsafe { recv_body::<true>(buf, count, datatype, source, tag, comm, status) }
    }
}

/// The body of the blocking sends other than `MPI_Send`'s fast path.
///
/// # Safety
/// As `MPI_Send`.
#[allow(clippy::too_many_arguments)]
unsafe fn send_body(
    name: &'static str,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> c_int {
    call(name, On::Comm(comm), |m| {
        // SAFETY: blocking: `buf` outlives the request.
        match unsafe { m.start_send_in(comm, buf, count, datatype, dest, tag, mode)? } {
            Started::Done(_) => Ok(()),
            Started::Core(id, after) => finish_blocking(m, comm, id, after).map(drop),
        }
    })
}

/// The body of the non-blocking sends.
///
/// # Safety
/// As `MPI_Isend`.
#[allow(clippy::too_many_arguments)]
unsafe fn isend_body(
    name: &'static str,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    mode: Mode,
) -> c_int {
    call(name, On::Comm(comm), |m| {
        if request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
        }
        if dest >= 0 && tag >= 0 && matches!(mode, Mode::Standard | Mode::Ready) {
            if let Some((c, n)) = m.direct(comm, buf, count, datatype) {
                // SAFETY: the application keeps `buf` (`n` bytes, non-null when `n > 0`)
                // valid until the request completes.
                let id = unsafe { m.core.isend(c, buf.cast(), n, dest as u32, tag)? };
                let h = m.reqs().borrow_mut().insert(Req::Core { id, comm, after: After::Nothing });
                // SAFETY: checked non-null above.
                return unsafe { put(request, h, "request") };
            }
        }
        // SAFETY: the application keeps `buf` valid until the request completes.
        let started = unsafe { m.start_send_in(comm, buf, count, datatype, dest, tag, mode)? };
        let h = m.reqs().borrow_mut().insert(started.into_req(comm));
        // SAFETY: checked non-null above.
        unsafe { put(request, h, "request") }
    })
}

/// The body of `MPI_Irecv` and `MPI_Irecv_c`.
///
/// # Safety
/// As `MPI_Irecv`.
#[allow(clippy::too_many_arguments)]
unsafe fn irecv_body(
    name: &'static str,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    call(name, On::Comm(comm), |m| {
        if request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
        }
        if (source >= 0 || source == MPI_ANY_SOURCE) && (tag >= 0 || tag == MPI_ANY_TAG) {
            if let Some((c, n)) = m.direct(comm, buf, count, datatype) {
                // SAFETY: the application keeps `buf` (`n` bytes, non-null when `n > 0`)
                // valid until the request completes.
                let id = unsafe { m.core.irecv(c, buf.cast(), n, source, recv_tag(tag)?)? };
                let h = m.reqs().borrow_mut().insert(Req::Core { id, comm, after: After::Nothing });
                // SAFETY: checked non-null above.
                return unsafe { put(request, h, "request") };
            }
        }
        // SAFETY: the application keeps `buf` valid until the request completes.
        let started = unsafe { m.start_recv_in(comm, buf, count, datatype, source, tag)? };
        let h = m.reqs().borrow_mut().insert(started.into_req(comm));
        // SAFETY: checked non-null above.
        unsafe { put(request, h, "request") }
    })
}

/// Export the blocking and non-blocking sends of one mode, with their large-count twins.
macro_rules! sends {
    ($($mode:expr, $doc:literal: $b:ident / $pb:ident, $bc:ident / $pbc:ident, $i:ident / $pi:ident, $ic:ident / $pic:ident;)*) => {$(
        export! {
            #[doc = concat!("`", stringify!($b), "`: ", $doc)]
            fn $b / $pb(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) {
                // SAFETY: forwarded contract.
                unsafe { send_body(stringify!($b), buf, count.into(), datatype, dest, tag, comm, $mode) }
            }
        }
        export! {
            #[doc = concat!("`", stringify!($bc), "`: large-count ", $doc)]
            fn $bc / $pbc(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) {
                // SAFETY: forwarded contract.
                unsafe { send_body(stringify!($bc), buf, count, datatype, dest, tag, comm, $mode) }
            }
        }
        export! {
            #[doc = concat!("`", stringify!($i), "`: non-blocking ", $doc)]
            fn $i / $pi(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
                // SAFETY: forwarded contract.
                unsafe { isend_body(stringify!($i), buf, count.into(), datatype, dest, tag, comm, request, $mode) }
            }
        }
        export! {
            #[doc = concat!("`", stringify!($ic), "`: non-blocking large-count ", $doc)]
            fn $ic / $pic(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
                // SAFETY: forwarded contract.
                unsafe { isend_body(stringify!($ic), buf, count, datatype, dest, tag, comm, request, $mode) }
            }
        }
    )*};
}

sends! {
    Mode::Sync, "synchronous send: completes once the receiver matched the message.":
        MPI_Ssend / PMPI_Ssend, MPI_Ssend_c / PMPI_Ssend_c, MPI_Issend / PMPI_Issend, MPI_Issend_c / PMPI_Issend_c;
    Mode::Buffered, "buffered send: copied into the attached buffer, complete at once.":
        MPI_Bsend / PMPI_Bsend, MPI_Bsend_c / PMPI_Bsend_c, MPI_Ibsend / PMPI_Ibsend, MPI_Ibsend_c / PMPI_Ibsend_c;
    Mode::Ready, "ready send (a standard send, which is a correct ready send).":
        MPI_Rsend / PMPI_Rsend, MPI_Rsend_c / PMPI_Rsend_c, MPI_Irsend / PMPI_Irsend, MPI_Irsend_c / PMPI_Irsend_c;
}

export! {
    /// `MPI_Send_c`: `MPI_Send` with a large count.
    fn MPI_Send_c / PMPI_Send_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) {
        // SAFETY: forwarded contract.
        unsafe { send_body("MPI_Send_c", buf, count, datatype, dest, tag, comm, Mode::Standard) }
    }
}

export! {
    /// `MPI_Isend`.
    fn MPI_Isend / PMPI_Isend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        // SAFETY: forwarded contract.
        unsafe { isend_body("MPI_Isend", buf, count.into(), datatype, dest, tag, comm, request, Mode::Standard) }
    }
}

export! {
    /// `MPI_Isend_c`: `MPI_Isend` with a large count.
    fn MPI_Isend_c / PMPI_Isend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        // SAFETY: forwarded contract.
        unsafe { isend_body("MPI_Isend_c", buf, count, datatype, dest, tag, comm, request, Mode::Standard) }
    }
}

export! {
    /// `MPI_Irecv`.
    fn MPI_Irecv / PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        // SAFETY: forwarded contract.
        unsafe { irecv_body("MPI_Irecv", buf, count.into(), datatype, source, tag, comm, request) }
    }
}

export! {
    /// `MPI_Irecv_c`: `MPI_Irecv` with a large count.
    fn MPI_Irecv_c / PMPI_Irecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        // SAFETY: forwarded contract.
        unsafe { irecv_body("MPI_Irecv_c", buf, count, datatype, source, tag, comm, request) }
    }
}

/// Post a receive, run the blocking `send`, then complete the receive (posting first means two
/// ranks exchanging large messages cannot deadlock). The receive's status goes to `status`.
///
/// # Safety
/// `recvbuf` must be valid for the type map's writes until this returns; `status` as for
/// `MPI_Recv`.
#[allow(clippy::too_many_arguments)]
unsafe fn exchange(
    m: &Mpi,
    comm: MPI_Comm,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    status: *mut MPI_Status,
    send: impl FnOnce() -> MpiResult,
) -> MpiResult {
    // SAFETY: blocking: `recvbuf` outlives the request.
    let r = unsafe { m.start_recv_in(comm, recvbuf, recvcount, recvtype, source, recvtag)? };
    let rh = m.reqs().borrow_mut().insert(r.into_req(comm));
    let sent = send();
    if let Err(e) = sent {
        // The message the receive waits for may never come (the peer's exchange may have failed
        // alike): withdraw the receive, or wait for it if it already matched.
        request::withdraw(m, rh)?;
        return Err(e);
    }
    let (st, e) = request::complete(m, rh, true)?.expect("blocking completion");
    // SAFETY: status pointer from the caller.
    unsafe { request::store(status, st) };
    e.map_or(Ok(()), Err)
}

/// The body of `MPI_Sendrecv` and `MPI_Sendrecv_c`.
///
/// # Safety
/// As `MPI_Sendrecv`.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_body(
    name: &'static str,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    call(name, On::Comm(comm), |m| {
        let send = || {
            // SAFETY: blocking: `sendbuf` outlives the request.
            match unsafe {
                m.start_send_in(comm, sendbuf, sendcount, sendtype, dest, sendtag, Mode::Standard)?
            } {
                Started::Core(id, after) => finish_blocking(m, comm, id, after).map(drop),
                Started::Done(_) => Ok(()),
            }
        };
        // SAFETY: forwarded contract.
        unsafe { exchange(m, comm, recvbuf, recvcount, recvtype, source, recvtag, status, send) }
    })
}

/// The body of `MPI_Sendrecv_replace` and `MPI_Sendrecv_replace_c`: the outgoing data is
/// packed into a scratch copy first, then sent while the receive fills the buffer.
///
/// # Safety
/// As `MPI_Sendrecv_replace`.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace_body(
    name: &'static str,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    call(name, On::Comm(comm), |m| {
        let (c, dest) = m.peer(comm, dest)?;
        let span = m.types().borrow().span(datatype, count)?;
        check_span(buf, &span)?;
        let mut copy = Vec::with_capacity(span.bytes());
        match &span {
            // SAFETY: the application's buffer of `n` bytes, checked non-null when `n > 0`.
            Span::Contig(n) => copy.extend_from_slice(unsafe { bytes(buf, *n) }),
            // SAFETY: the application's buffer holds `count` elements of the type.
            Span::Strided(_, ty) => unsafe {
                crate::obj::datatype::pack(buf.cast(), count as usize, ty, &mut copy)
            },
        }
        let send = || {
            if dest == MPI_PROC_NULL {
                return Ok(());
            }
            let (dst, tag) = (m.core.dest(c, dest)?, send_tag(sendtag)?);
            // SAFETY: `copy` lives until the blocking wait below returns.
            let id = unsafe { m.core.isend(c, copy.as_ptr(), copy.len(), dst, tag)? };
            finish_blocking(m, comm, id, After::Nothing).map(drop)
        };
        // SAFETY: forwarded contract.
        unsafe { exchange(m, comm, buf, count, datatype, source, recvtag, status, send) }
    })
}

export! {
    /// `MPI_Sendrecv`: a send and a receive at once.
    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
        comm: MPI_Comm, status: *mut MPI_Status
    ) {
        // SAFETY: forwarded contract.
        unsafe {
            sendrecv_body("MPI_Sendrecv", sendbuf, sendcount.into(), sendtype, dest, sendtag,
                recvbuf, recvcount.into(), recvtype, source, recvtag, comm, status)
        }
    }
}

export! {
    /// `MPI_Sendrecv_c`: `MPI_Sendrecv` with large counts.
    fn MPI_Sendrecv_c / PMPI_Sendrecv_c(
        sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
        comm: MPI_Comm, status: *mut MPI_Status
    ) {
        // SAFETY: forwarded contract.
        unsafe {
            sendrecv_body("MPI_Sendrecv_c", sendbuf, sendcount, sendtype, dest, sendtag,
                recvbuf, recvcount, recvtype, source, recvtag, comm, status)
        }
    }
}

export! {
    /// `MPI_Sendrecv_replace`: send the buffer's contents and receive into the same buffer.
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status
    ) {
        // SAFETY: forwarded contract.
        unsafe {
            sendrecv_replace_body("MPI_Sendrecv_replace", buf, count.into(), datatype, dest, sendtag,
                source, recvtag, comm, status)
        }
    }
}

export! {
    /// `MPI_Sendrecv_replace_c`: `MPI_Sendrecv_replace` with a large count.
    fn MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c(
        buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status
    ) {
        // SAFETY: forwarded contract.
        unsafe {
            sendrecv_replace_body("MPI_Sendrecv_replace_c", buf, count, datatype, dest, sendtag,
                source, recvtag, comm, status)
        }
    }
}

export! {
    /// `MPI_Probe`.
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) {
        call("MPI_Probe", On::Comm(comm), |m| {
            if source == MPI_PROC_NULL {
                // SAFETY: status pointer from the caller.
                unsafe { request::store(status, request::proc_null_status()) };
                return Ok(());
            }
            let (c, source, inter) = m.source(comm, source)?;
            let (src, tag) = (recv_source(source)?, recv_tag(tag)?);
            let s = if multiple() {
                let mut spins = 0;
                loop {
                    if let Some(s) = m.core.iprobe(c, src, tag)? {
                        break s;
                    }
                    request::idle(&mut spins);
                }
            } else {
                m.core.probe(c, src, tag)?
            };
            let mut st = request::status_of(&s, MPI_SUCCESS);
            remote_status(inter, &mut st);
            // SAFETY: status pointer from the caller.
            unsafe { request::store(status, st) };
            Ok(())
        })
    }
}

export! {
    /// `MPI_Iprobe`.
    fn MPI_Iprobe / PMPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status) {
        call("MPI_Iprobe", On::Comm(comm), |m| {
            if flag.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` is NULL"));
            }
            if source == MPI_PROC_NULL {
                // SAFETY: pointers from the caller.
                unsafe {
                    *flag = 1;
                    request::store(status, request::proc_null_status());
                }
                return Ok(());
            }
            let (c, source, inter) = m.source(comm, source)?;
            let found = m.core.iprobe(c, recv_source(source)?, recv_tag(tag)?)?;
            // SAFETY: pointers from the caller.
            unsafe {
                *flag = found.is_some() as c_int;
                if let Some(s) = found {
                    let mut st = request::status_of(&s, MPI_SUCCESS);
                    remote_status(inter, &mut st);
                    request::store(status, st);
                }
            }
            Ok(())
        })
    }
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
