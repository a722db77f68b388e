//! Point-to-point: sends, receives and probes, from MPI arguments (buffer, count, datatype,
//! rank, tag, communicator) to operations-core calls.
//!
//! A contiguous buffer goes to the core as it is. A strided one (a derived type with holes) is
//! packed into a scratch buffer before a send and unpacked from one after a receive.
//! `MPI_PROC_NULL` completes at once with the standard's status; `MPI_ANY_TAG` becomes the
//! core's wildcard.

use std::ffi::{c_int, c_void};

use weft::ops::{CommId, ReqId};

use crate::abi::*;
use crate::datatype::Span;
use crate::error::{err, MpiErr, MpiResult};
use crate::request::{self, After, Req};
use crate::state::{call, multiple, Mpi, On};
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
fn recv_source(src: c_int) -> MpiResult<i32> {
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

impl Mpi {
    /// Start a send of `count` elements of `dt` at `buf`; the core request and what to keep
    /// alive until it completes.
    ///
    /// # Safety
    /// `buf` must stay valid for the type map's reads until the request completes.
    #[inline]
    pub(crate) unsafe fn start_send(
        &self,
        c: CommId,
        buf: *const c_void,
        count: c_int,
        dt: MPI_Datatype,
        dest: c_int,
        tag: c_int,
    ) -> MpiResult<(ReqId, After)> {
        let tag = send_tag(tag)?;
        let dst = self.core.dest(c, dest)?;
        let span = self.types.borrow().span(dt, count as i64)?;
        check_buf(buf, span.bytes())?;
        match span {
            Span::Contig(n) => {
                // SAFETY: forwarded contract.
                let id = unsafe { self.core.isend(c, buf.cast(), n, dst, tag)? };
                Ok((id, After::Nothing))
            }
            Span::Strided(n, ty) => {
                let mut packed = Vec::with_capacity(n);
                // SAFETY: forwarded contract.
                unsafe { crate::datatype::pack(buf.cast(), count as usize, &ty, &mut packed) };
                // SAFETY: `packed` moves into the request's `After::Keep`, which lives until the
                // request completes; moving a Vec does not move its heap buffer.
                let id = unsafe { self.core.isend(c, packed.as_ptr(), packed.len(), dst, tag)? };
                Ok((id, After::Keep(packed)))
            }
        }
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
        count: c_int,
        dt: MPI_Datatype,
        src: c_int,
        tag: c_int,
    ) -> MpiResult<(ReqId, After)> {
        let tag = recv_tag(tag)?;
        let src = recv_source(src)?;
        let span = self.types.borrow().span(dt, count as i64)?;
        check_buf(buf, span.bytes())?;
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
                Ok((id, After::Unpack { packed, dst: buf.cast(), count: count as usize, ty }))
            }
        }
    }
}

/// Wait for a request started for a blocking call, with its status.
fn finish_blocking(m: &Mpi, comm: MPI_Comm, id: ReqId, after: After) -> MpiResult<MPI_Status> {
    let h = m.reqs.borrow_mut().insert(Req::Core { id, comm, after });
    let (st, e) = request::complete(m, h, true)?.expect("blocking completion");
    match e {
        None => Ok(st),
        Some(e) => Err(e),
    }
}

export! {
    /// `MPI_Send`: standard-mode blocking send.
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) {
        call("MPI_Send", On::Comm(comm), |m| {
            if dest == MPI_PROC_NULL {
                return Ok(());
            }
            let c = m.comm(comm)?;
            if !multiple() {
                if let Span::Contig(n) = m.types.borrow().span(datatype, count as i64)? {
                    check_buf(buf, n)?;
                    let dst = m.core.dest(c, dest)?;
                    // SAFETY: the application's buffer of `n` bytes (its count and type), checked
                    // non-null when `n > 0`.
                    let s = unsafe { bytes(buf, n) };
                    return m.core.send(c, s, dst, send_tag(tag)?).map_err(MpiErr::from);
                }
            }
            // SAFETY: blocking: `buf` outlives the request.
            let (id, after) = unsafe { m.start_send(c, buf, count, datatype, dest, tag)? };
            finish_blocking(m, comm, id, after).map(drop)
        })
    }
}

export! {
    /// `MPI_Recv`: blocking receive.
    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) {
        call("MPI_Recv", On::Comm(comm), |m| {
            if source == MPI_PROC_NULL {
                // SAFETY: status pointer from the caller.
                unsafe { request::store(status, request::proc_null_status()) };
                return Ok(());
            }
            let c = m.comm(comm)?;
            let (st, e) = match m.types.borrow().span(datatype, count as i64)? {
                Span::Contig(n) if !multiple() => {
                    check_buf(buf, n)?;
                    // SAFETY: the application's buffer of `n` bytes (its count and type),
                    // checked non-null when `n > 0`.
                    let s = unsafe { bytes_mut(buf, n) };
                    let r = m.core.recv(c, s, recv_source(source)?, recv_tag(tag)?);
                    request::finish(m, r, After::Nothing)?
                }
                _ => {
                    // SAFETY: blocking: `buf` outlives the request.
                    let (id, after) = unsafe { m.start_recv(c, buf, count, datatype, source, tag)? };
                    let h = m.reqs.borrow_mut().insert(Req::Core { id, comm, after });
                    request::complete(m, h, true)?.expect("blocking completion")
                }
            };
            // SAFETY: status pointer from the caller.
            unsafe { request::store(status, st) };
            e.map_or(Ok(()), Err)
        })
    }
}

export! {
    /// `MPI_Isend`.
    fn MPI_Isend / PMPI_Isend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Isend", On::Comm(comm), |m| {
            if request.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
            }
            let r = if dest == MPI_PROC_NULL {
                m.comm(comm)?;
                Req::Done { status: request::proc_null_status(), comm }
            } else {
                let c = m.comm(comm)?;
                // SAFETY: the application keeps `buf` valid until the request completes.
                let (id, after) = unsafe { m.start_send(c, buf, count, datatype, dest, tag)? };
                Req::Core { id, comm, after }
            };
            let h = m.reqs.borrow_mut().insert(r);
            // SAFETY: checked non-null above.
            unsafe { put(request, h, "request") }
        })
    }
}

export! {
    /// `MPI_Irecv`.
    fn MPI_Irecv / PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Irecv", On::Comm(comm), |m| {
            if request.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
            }
            let r = if source == MPI_PROC_NULL {
                m.comm(comm)?;
                Req::Done { status: request::proc_null_status(), comm }
            } else {
                let c = m.comm(comm)?;
                // SAFETY: the application keeps `buf` valid until the request completes.
                let (id, after) = unsafe { m.start_recv(c, buf, count, datatype, source, tag)? };
                Req::Core { id, comm, after }
            };
            let h = m.reqs.borrow_mut().insert(r);
            // SAFETY: checked non-null above.
            unsafe { put(request, h, "request") }
        })
    }
}

export! {
    /// `MPI_Sendrecv`: both at once (the receive is posted first, so two ranks exchanging
    /// large messages cannot deadlock).
    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
        comm: MPI_Comm, status: *mut MPI_Status
    ) {
        call("MPI_Sendrecv", On::Comm(comm), |m| {
            let c = m.comm(comm)?;
            let rh = if source == MPI_PROC_NULL {
                m.reqs.borrow_mut().insert(Req::Done { status: request::proc_null_status(), comm })
            } else {
                // SAFETY: blocking: `recvbuf` outlives the request.
                let (id, after) = unsafe { m.start_recv(c, recvbuf, recvcount, recvtype, source, recvtag)? };
                m.reqs.borrow_mut().insert(Req::Core { id, comm, after })
            };
            let sent = if dest == MPI_PROC_NULL {
                Ok(())
            } else {
                // SAFETY: blocking: `sendbuf` outlives the request.
                match unsafe { m.start_send(c, sendbuf, sendcount, sendtype, dest, sendtag) } {
                    Ok((id, after)) => finish_blocking(m, comm, id, after).map(drop),
                    Err(e) => Err(e),
                }
            };
            let (st, e) = request::complete(m, rh, true)?.expect("blocking completion");
            // SAFETY: status pointer from the caller.
            unsafe { request::store(status, st) };
            sent?;
            e.map_or(Ok(()), Err)
        })
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
            let c = m.comm(comm)?;
            let (src, tag) = (recv_source(source)?, recv_tag(tag)?);
            let s = if multiple() {
                loop {
                    if let Some(s) = m.core.iprobe(c, src, tag)? {
                        break s;
                    }
                    crate::state::unlocked(std::thread::yield_now);
                }
            } else {
                m.core.probe(c, src, tag)?
            };
            // SAFETY: status pointer from the caller.
            unsafe { request::store(status, request::status_of(&s, MPI_SUCCESS)) };
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
            let c = m.comm(comm)?;
            let found = m.core.iprobe(c, recv_source(source)?, recv_tag(tag)?)?;
            // SAFETY: pointers from the caller.
            unsafe {
                *flag = found.is_some() as c_int;
                if let Some(s) = found {
                    request::store(status, request::status_of(&s, MPI_SUCCESS));
                }
            }
            Ok(())
        })
    }
}

export! {
    /// `MPI_Get_count`: elements of `datatype` in the message, or `MPI_UNDEFINED` if the byte
    /// count is not a whole number of them.
    fn MPI_Get_count / PMPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) {
        call("MPI_Get_count", On::NoObject, |m| {
            if status.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `status` is NULL"));
            }
            // SAFETY: non-null status from the caller.
            let bytes = request::count_of(unsafe { &*status });
            let size = m.types.borrow().get(datatype)?.size;
            let n = match size {
                0 if bytes == 0 => 0,
                0 => MPI_UNDEFINED,
                s if bytes % s == 0 => c_int::try_from(bytes / s).unwrap_or(MPI_UNDEFINED),
                _ => MPI_UNDEFINED,
            };
            // SAFETY: output pointer from the caller.
            unsafe { put(count, n, "count") }
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
