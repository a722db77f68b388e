//! Collectives: MPI collective calls as collectives-engine specs, run blocking or started as a
//! request. A data-moving collective moves bytes (`MPI_BYTE` elements) whatever its datatype;
//! a reducing one runs on the element type of its datatype (`op.rs`). Non-contiguous types
//! are not supported by these collectives (`MPI_ERR_TYPE` naming the call).

use std::ffi::{c_int, c_void};

use weft::ops::OpsCore;
use weft_coll::{DType, Kind, Spec};

use crate::abi::*;
use crate::datatype::Span;
use crate::error::{err, MpiResult};
use crate::request::{self, After, Req};
use crate::state::{call, multiple, Mpi, On};
use crate::{export, put};

/// How a collective call ends: blocking, or a request written to this pointer.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Blocking,
    Start(*mut MPI_Request),
}

impl Mpi {
    /// Size, check and run (or start) `spec` on `comm`, keeping `keep` alive until it ends.
    ///
    /// # Safety
    /// The spec's buffers must stay valid until the collective completes (the call returns,
    /// or the request completes).
    pub(crate) unsafe fn exec(&self, comm: MPI_Comm, spec: &mut Spec, mode: Mode, keep: After) -> MpiResult {
        let c = self.comm(comm)?;
        let (rank, n) = (self.core.comm_rank(c)?, self.core.comm_size(c)?);
        OpsCore::size_spec(rank, n, spec)?;
        match mode {
            Mode::Blocking if !multiple() => {
                // SAFETY: forwarded contract.
                unsafe { self.core.run(c, spec)? };
                if let After::Run(f) = keep {
                    f(self)?;
                }
                Ok(())
            }
            Mode::Blocking => {
                // SAFETY: forwarded contract.
                let id = unsafe { self.core.start(c, spec)? };
                let h = self.reqs.borrow_mut().insert(Req::Core { id, comm, after: keep });
                let (_, e) = request::complete(self, h, true)?.expect("blocking completion");
                e.map_or(Ok(()), Err)
            }
            Mode::Start(out) => {
                if out.is_null() {
                    return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
                }
                // SAFETY: forwarded contract.
                let id = unsafe { self.core.start(c, spec)? };
                let h = self.reqs.borrow_mut().insert(Req::Core { id, comm, after: keep });
                // SAFETY: checked non-null.
                unsafe { put(out, h, "request") }
            }
        }
    }

    /// Bytes of `count` elements of `dt`, which must be contiguous for `what`.
    pub(crate) fn contig_bytes(&self, dt: MPI_Datatype, count: c_int, what: &str) -> MpiResult<usize> {
        match self.types.borrow().span(dt, count as i64)? {
            Span::Contig(n) => Ok(n),
            Span::Strided(..) => {
                Err(err!(MPI_ERR_TYPE, "{what}: non-contiguous datatypes are not supported in collectives"))
            }
        }
    }
}

/// `MPI_IN_PLACE` as a pointer.
#[inline]
pub(crate) fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

fn barrier(m: &Mpi, comm: MPI_Comm, mode: Mode) -> MpiResult {
    if let Mode::Blocking = mode {
        if !multiple() {
            return Ok(m.core.barrier(m.comm(comm)?)?);
        }
    }
    let mut spec = Spec::new(Kind::Barrier, DType::Byte);
    // SAFETY: a barrier has no buffers.
    unsafe { m.exec(comm, &mut spec, mode, After::Nothing) }
}

fn bcast(
    m: &Mpi,
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let n = m.contig_bytes(dt, count, "MPI_Bcast")?;
    let mut spec = Spec::new(Kind::Bcast, DType::Byte);
    spec.recv = buf.cast();
    spec.count = n;
    spec.root = root_of(root)?;
    // SAFETY: the application keeps `buf` valid until the collective completes.
    unsafe { m.exec(comm, &mut spec, mode, After::Nothing) }
}

/// A root argument as the engine takes it.
pub(crate) fn root_of(root: c_int) -> MpiResult<u32> {
    u32::try_from(root).map_err(|_| err!(MPI_ERR_ROOT, "invalid root {root}"))
}

#[allow(clippy::too_many_arguments)]
fn reduce(
    m: &Mpi,
    kind: Kind,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let ty = m.types.borrow().get(dt)?.clone();
    m.contig_bytes(dt, count, kind.name())?;
    let r = m.reduction(op, dt, &ty)?;
    let mut spec = Spec::new(kind, r.dtype);
    spec.count = count as usize * r.per_elem;
    spec.op = Some(r.op);
    spec.recv = recv.cast();
    spec.send = send.cast();
    if kind == Kind::Reduce {
        spec.root = root_of(root)?;
    }
    let c = m.comm(comm)?;
    let me = m.core.comm_rank(c)?;
    let mut keep = After::Nothing;
    if in_place(send) {
        if kind == Kind::Allreduce {
            spec.send = recv.cast_const().cast();
        } else if kind == Kind::Reduce && me == spec.root {
            // The root's contribution is in `recv`: reduce from a copy of it.
            let bytes = count as usize * ty.size;
            let mut copy = vec![0u8; bytes];
            // SAFETY: `recv` holds `count` elements at the root (checked by size_spec below).
            unsafe { std::ptr::copy_nonoverlapping(recv.cast::<u8>(), copy.as_mut_ptr(), bytes) };
            spec.send = copy.as_ptr();
            keep = After::Keep(copy);
        } else {
            return Err(err!(MPI_ERR_BUFFER, "{}: MPI_IN_PLACE is not allowed here", kind.name()));
        }
    }
    // SAFETY: the application keeps the buffers valid until the collective completes; a scratch
    // copy lives in `keep`.
    unsafe { m.exec(comm, &mut spec, mode, keep) }
}

export! {
    /// `MPI_Barrier`.
    fn MPI_Barrier / PMPI_Barrier(comm: MPI_Comm) {
        call("MPI_Barrier", On::Comm(comm), |m| barrier(m, comm, Mode::Blocking))
    }
}

export! {
    /// `MPI_Ibarrier`.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Ibarrier", On::Comm(comm), |m| barrier(m, comm, Mode::Start(request)))
    }
}

export! {
    /// `MPI_Bcast`.
    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) {
        call("MPI_Bcast", On::Comm(comm), |m| bcast(m, buffer, count, datatype, root, comm, Mode::Blocking))
    }
}

export! {
    /// `MPI_Ibcast`.
    fn MPI_Ibcast / PMPI_Ibcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Ibcast", On::Comm(comm), |m| bcast(m, buffer, count, datatype, root, comm, Mode::Start(request)))
    }
}

export! {
    /// `MPI_Allreduce`.
    fn MPI_Allreduce / PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) {
        call("MPI_Allreduce", On::Comm(comm), |m| {
            reduce(m, Kind::Allreduce, sendbuf, recvbuf, count, datatype, op, 0, comm, Mode::Blocking)
        })
    }
}

export! {
    /// `MPI_Iallreduce`.
    fn MPI_Iallreduce / PMPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Iallreduce", On::Comm(comm), |m| {
            reduce(m, Kind::Allreduce, sendbuf, recvbuf, count, datatype, op, 0, comm, Mode::Start(request))
        })
    }
}

export! {
    /// `MPI_Reduce`.
    fn MPI_Reduce / PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) {
        call("MPI_Reduce", On::Comm(comm), |m| {
            reduce(m, Kind::Reduce, sendbuf, recvbuf, count, datatype, op, root, comm, Mode::Blocking)
        })
    }
}

export! {
    /// `MPI_Ireduce`.
    fn MPI_Ireduce / PMPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Ireduce", On::Comm(comm), |m| {
            reduce(m, Kind::Reduce, sendbuf, recvbuf, count, datatype, op, root, comm, Mode::Start(request))
        })
    }
}
