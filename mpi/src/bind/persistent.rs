//! Persistent requests: `MPI_Send_init` (and the other modes), `MPI_Recv_init`, `MPI_Start`
//! and `MPI_Startall`. A persistent request keeps its operation's arguments; each start runs
//! the operation like its non-blocking twin. Between starts it is inactive: wait and test
//! return the empty status at once and leave the handle as it is (see `request::complete`).
//!
//! The request keeps the datatype handle it was given; freeing that type while the request
//! lives is the application's error (the standard lets the implementation keep the type; this
//! one does not).

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::bind::p2p::{recv_tag, send_tag};
use crate::error::{err, MpiResult};
use crate::export;
use crate::obj::request::Req;
use crate::obj::request::{Active, Mode, Persistent, PersistentOp as Op, Started};
use crate::state::{Mpi, On};

impl Mpi {
    /// Start the persistent request `h`; `MPI_ERR_REQUEST` if it is not an inactive
    /// persistent request.
    fn start(&self, h: MPI_Request) -> MpiResult {
        let (op, comm) = match self.reqs().borrow().get(h) {
            Some(Req::Persistent(p)) if matches!(p.active, Active::No) => (p.op, p.comm),
            Some(Req::Persistent(_)) => {
                return Err(err!(
                    MPI_ERR_REQUEST,
                    "invalid request {h:#x}: already active (started and not completed)"
                ))
            }
            Some(_) => return Err(err!(MPI_ERR_REQUEST, "invalid request {h:#x}: not a persistent request")),
            None => return Err(crate::obj::request::invalid(h)),
        };
        // SAFETY: the application keeps the buffer it gave to the init call valid while the
        // request is active (the standard's rule for persistent requests).
        let started = unsafe {
            match op {
                Op::Send { mode, buf, count, dt, dest, tag } => {
                    self.start_send_in(comm, buf, count, dt, dest, tag, mode)?
                }
                Op::Recv { buf, count, dt, src, tag } => {
                    self.start_recv_in(comm, buf, count, dt, src, tag)?
                }
            }
        };
        if let Some(Req::Persistent(p)) = self.reqs().borrow_mut().get_mut(h) {
            p.active = match started {
                Started::Core(id, after) => Active::Core(id, after),
                Started::Done(st) => Active::Done(st),
            };
        }
        Ok(())
    }

    /// Check a persistent operation's arguments and store it as an inactive request.
    fn persistent(&self, comm: MPI_Comm, op: Op, request: *mut MPI_Request) -> MpiResult {
        if request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
        }
        let c = self.comm(comm)?;
        let (count, dt, buf_null) = match op {
            Op::Send { count, dt, dest, tag, buf, .. } => {
                send_tag(tag)?;
                if dest != MPI_PROC_NULL {
                    self.check_rank(c, dest)?;
                }
                (count, dt, buf.is_null())
            }
            Op::Recv { count, dt, src, tag, buf } => {
                recv_tag(tag)?;
                if src != MPI_PROC_NULL && src != MPI_ANY_SOURCE {
                    self.check_rank(c, src)?;
                }
                (count, dt, buf.is_null())
            }
        };
        let bytes = self.types().borrow().span(dt, count)?.bytes();
        if buf_null && bytes > 0 {
            return Err(err!(MPI_ERR_BUFFER, "invalid buffer: NULL with {bytes} bytes to move"));
        }
        let h = self.reqs().borrow_mut().insert(Req::Persistent(Box::new(Persistent {
            op,
            comm,
            active: Active::No,
        })));
        // SAFETY: checked non-null above.
        unsafe { crate::put(request, h, "request") }
    }

    /// `MPI_ERR_RANK` unless `r` is a rank of `c`.
    fn check_rank(&self, c: weft::ops::CommId, r: c_int) -> MpiResult {
        let size = self.core.comm_size(c)?;
        if r < 0 || r as u32 >= size {
            return Err(err!(MPI_ERR_RANK, "invalid rank {r}: the communicator has {size} ranks"));
        }
        Ok(())
    }
}

/// Export the persistent send of one mode, with its large-count twin.
macro_rules! send_inits {
    ($($mode:expr, $doc:literal: $f:ident / $pf:ident, $fc:ident / $pfc:ident;)*) => {$(
        export! {
            #[doc = concat!("`", stringify!($f), "`: a persistent ", $doc)]
            fn $f / $pf(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
            |m| {
                m.persistent(comm, Op::Send { mode: $mode, buf, count: count.into(), dt: datatype, dest, tag }, request)
            }
        }
        export! {
            #[doc = concat!("`", stringify!($fc), "`: a persistent large-count ", $doc)]
            fn $fc / $pfc(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
            |m| {
                m.persistent(comm, Op::Send { mode: $mode, buf, count, dt: datatype, dest, tag }, request)
            }
        }
    )*};
}

send_inits! {
    Mode::Standard, "standard send.": MPI_Send_init / PMPI_Send_init, MPI_Send_init_c / PMPI_Send_init_c;
    Mode::Sync, "synchronous send.": MPI_Ssend_init / PMPI_Ssend_init, MPI_Ssend_init_c / PMPI_Ssend_init_c;
    Mode::Buffered, "buffered send.": MPI_Bsend_init / PMPI_Bsend_init, MPI_Bsend_init_c / PMPI_Bsend_init_c;
    Mode::Ready, "ready send.": MPI_Rsend_init / PMPI_Rsend_init, MPI_Rsend_init_c / PMPI_Rsend_init_c;
}

export! {
    /// `MPI_Recv_init`: a persistent receive.
    fn MPI_Recv_init / PMPI_Recv_init(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        m.persistent(comm, Op::Recv { buf, count: count.into(), dt: datatype, src: source, tag }, request)
    }
}

export! {
    /// `MPI_Recv_init_c`: a persistent large-count receive.
    fn MPI_Recv_init_c / PMPI_Recv_init_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        m.persistent(comm, Op::Recv { buf, count, dt: datatype, src: source, tag }, request)
    }
}

export! {
    /// `MPI_Start`: start an inactive persistent request.
    fn MPI_Start / PMPI_Start(request: *mut MPI_Request) on On::NoObject;
    |m| {
        if request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
        }
        // SAFETY: non-null request pointer from the caller.
        m.start(unsafe { *request })
    }
}

export! {
    /// `MPI_Startall`: start each request of the array, in order (an error stops at that
    /// request; the earlier ones are started).
    fn MPI_Startall / PMPI_Startall(count: c_int, requests: *mut MPI_Request) on On::NoObject;
    |m| {
        if count < 0 {
            return Err(err!(MPI_ERR_COUNT, "invalid count {count}"));
        }
        if count > 0 && requests.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `requests` is NULL"));
        }
        for i in 0..count as usize {
            // SAFETY: `requests` holds `count` handles.
            m.start(unsafe { *requests.add(i) })?;
        }
        Ok(())
    }
}
