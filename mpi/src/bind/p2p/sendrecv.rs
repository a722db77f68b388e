//! Point-to-point, the combined and probing calls: `MPI_Sendrecv`, `MPI_Sendrecv_replace`,
//! `MPI_Probe`, `MPI_Iprobe`.

use std::ffi::{c_int, c_void};

use super::{bytes, check_span, finish_blocking, recv_source, recv_tag, send_tag};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::obj::datatype::Span;
use crate::obj::intercomm::remote_status;
use crate::obj::request::{self, After};
use crate::obj::request::{Mode, Started};
use crate::state::{call, multiple, Mpi, On};

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
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Iprobe`.
    fn MPI_Iprobe / PMPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status) on On::Comm(comm);
    |m| {
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
    }
}
