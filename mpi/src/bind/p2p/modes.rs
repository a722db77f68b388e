//! Point-to-point, the send modes and the non-blocking calls: `MPI_Bsend`, `MPI_Ssend`,
//! `MPI_Rsend` and their `_c` and non-blocking forms, `MPI_Send_c`, `MPI_Isend`, `MPI_Irecv`.

use std::ffi::{c_int, c_void};

use super::{finish_blocking, recv_tag};
use crate::abi::*;
use crate::error::err;
use crate::obj::request::{After, Req};
use crate::obj::request::{Mode, Started};
use crate::state::{call, On};
use crate::{export, put};

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
