//! Matched probe: `MPI_Mprobe` and `MPI_Improbe` take a matching message out of the matching
//! queue into an `MPI_Message` handle, which only `MPI_Mrecv`/`MPI_Imrecv` can receive (so a
//! thread's probe and receive cannot be raced by another thread's receive). A probe of
//! `MPI_PROC_NULL` gives `MPI_MESSAGE_NO_PROC`, whose receive completes at once with the
//! `MPI_PROC_NULL` status.

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::bind::p2p::{recv_source, recv_tag};
use crate::error::{err, MpiErr, MpiResult};
use crate::obj::datatype::Span;
use crate::obj::request::{self, After, Req, Unpack};
use crate::state::{call, Mpi, On};
use crate::{export, put};

impl Mpi {
    /// Take the first message `(source, tag)` on `comm` matches, if one has arrived: its
    /// handle and status.
    fn improbe(
        &self,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
    ) -> MpiResult<Option<(MPI_Message, MPI_Status)>> {
        let (c, source, inter) = self.source(comm, source)?;
        if source == MPI_PROC_NULL {
            return Ok(Some((MPI_MESSAGE_NO_PROC, request::proc_null_status())));
        }
        let Some(msg) = self.core.improbe(c, recv_source(source)?, recv_tag(tag)?)? else {
            return Ok(None);
        };
        let mut st = request::status_of(&msg.status(), MPI_SUCCESS);
        crate::obj::intercomm::remote_status(inter, &mut st);
        Ok(Some((self.messages().borrow_mut().insert(msg, comm), st)))
    }

    /// Start the receive of message `*message` into `buf`; sets `*message` to
    /// `MPI_MESSAGE_NULL`. The request (a `Done` one for `MPI_MESSAGE_NO_PROC`).
    ///
    /// # Safety
    /// `message` must be valid for reads and writes; `buf` must stay valid for the type map's
    /// writes until the request completes.
    unsafe fn imrecv(
        &self,
        buf: *mut c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
        message: *mut MPI_Message,
    ) -> MpiResult<Req> {
        if message.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `message` is NULL"));
        }
        // SAFETY: non-null, from the caller.
        let h = unsafe { *message };
        let span = self.types().borrow().span(dt, count)?;
        if span.bytes() > 0 && buf.is_null() {
            return Err(err!(MPI_ERR_BUFFER, "invalid buffer: NULL with {} bytes to move", span.bytes()));
        }
        if h == MPI_MESSAGE_NO_PROC {
            // SAFETY: as above.
            unsafe { *message = MPI_MESSAGE_NULL };
            return Ok(Req::Done { status: request::proc_null_status(), comm: MPI_COMM_NULL });
        }
        let (msg, comm) = self.messages().borrow_mut().take(h)?;
        // SAFETY: as above.
        unsafe { *message = MPI_MESSAGE_NULL };
        let on_comm = |e| MpiErr::from(e).on(comm);
        let (id, after) = match span {
            Span::Contig(n) => {
                // SAFETY: forwarded contract.
                let id = unsafe { self.core.imrecv(msg, buf.cast(), n) }.map_err(on_comm)?;
                (id, After::Nothing)
            }
            Span::Strided(n, ty) => {
                let mut packed = vec![0u8; n];
                // SAFETY: the scratch buffer moves into `After::Unpack` and lives until the
                // request completes (moving a Vec does not move its heap buffer).
                let id = unsafe { self.core.imrecv(msg, packed.as_mut_ptr(), n) }.map_err(on_comm)?;
                (id, After::Unpack(Box::new(Unpack { packed, dst: buf.cast(), count: count as usize, ty })))
            }
        };
        Ok(Req::Core { id, comm, after })
    }
}

export! {
    /// `MPI_Improbe`: take a matching message if one has arrived.
    fn MPI_Improbe / PMPI_Improbe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, message: *mut MPI_Message, status: *mut MPI_Status) on On::Comm(comm);
    |m| {
        if flag.is_null() || message.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` or `message` is NULL"));
        }
        let found = m.improbe(source, tag, comm)?;
        // SAFETY: non-null output pointers from the caller.
        unsafe {
            *flag = found.is_some() as c_int;
            if let Some((h, st)) = found {
                *message = h;
                request::store(status, st);
            }
        }
        Ok(())
    }
}

export! {
    /// `MPI_Mprobe`: wait for a matching message and take it.
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status) on On::Comm(comm);
    |m| {
        if message.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `message` is NULL"));
        }
        let mut spins = 0;
        let (h, st) = loop {
            if let Some(found) = m.improbe(source, tag, comm)? {
                break found;
            }
            request::idle(&mut spins);
        };
        // SAFETY: non-null output pointer from the caller; status pointer from the caller.
        unsafe {
            *message = h;
            request::store(status, st);
        }
        Ok(())
    }
}

/// The body of `MPI_Mrecv` and `MPI_Mrecv_c`.
///
/// # Safety
/// As `MPI_Mrecv`.
unsafe fn mrecv_body(
    name: &'static str,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    call(name, On::NoObject, |m| {
        // SAFETY: blocking: `buf` outlives the request.
        let r = unsafe { m.imrecv(buf, count, dt, message)? };
        let h = m.reqs().borrow_mut().insert(r);
        let (st, e) = request::complete(m, h, true)?.expect("blocking completion");
        // SAFETY: status pointer from the caller.
        unsafe { request::store(status, st) };
        e.map_or(Ok(()), Err)
    })
}

/// The body of `MPI_Imrecv` and `MPI_Imrecv_c`.
///
/// # Safety
/// As `MPI_Imrecv`.
unsafe fn imrecv_body(
    name: &'static str,
    buf: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    call(name, On::NoObject, |m| {
        if request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
        }
        // SAFETY: the application keeps `buf` valid until the request completes.
        let r = unsafe { m.imrecv(buf, count, dt, message)? };
        let h = m.reqs().borrow_mut().insert(r);
        // SAFETY: checked non-null above.
        unsafe { put(request, h, "request") }
    })
}

export! {
    /// `MPI_Mrecv`: receive a message taken by a matched probe.
    fn MPI_Mrecv / PMPI_Mrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) {
        // SAFETY: forwarded contract.
        unsafe { mrecv_body("MPI_Mrecv", buf, count.into(), datatype, message, status) }
    }
}

export! {
    /// `MPI_Mrecv_c`: `MPI_Mrecv` with a large count.
    fn MPI_Mrecv_c / PMPI_Mrecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) {
        // SAFETY: forwarded contract.
        unsafe { mrecv_body("MPI_Mrecv_c", buf, count, datatype, message, status) }
    }
}

export! {
    /// `MPI_Imrecv`: start the receive of a message taken by a matched probe.
    fn MPI_Imrecv / PMPI_Imrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) {
        // SAFETY: forwarded contract.
        unsafe { imrecv_body("MPI_Imrecv", buf, count.into(), datatype, message, request) }
    }
}

export! {
    /// `MPI_Imrecv_c`: `MPI_Imrecv` with a large count.
    fn MPI_Imrecv_c / PMPI_Imrecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) {
        // SAFETY: forwarded contract.
        unsafe { imrecv_body("MPI_Imrecv_c", buf, count, datatype, message, request) }
    }
}
