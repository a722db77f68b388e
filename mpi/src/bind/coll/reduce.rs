//! Reductions: `MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`,
//! `MPI_Reduce_scatter_block`, `MPI_Scan`, `MPI_Exscan`, their non-blocking forms, and
//! `MPI_Reduce_local`. The engine reduces contiguous elements of the datatype's element type
//! (`op.rs`); a non-contiguous datatype is packed first (its packed data is a run of such
//! elements) and the result unpacked. `MPI_IN_PLACE` as the send buffer: at the root of a
//! reduce, at every rank of the others, the input then being in the receive buffer (for
//! reduce-scatter all `n` blocks of it).

use std::ffi::{c_int, c_void};

use weft::ops::{Kind, Spec};

use super::stage::{self, Region, Staged};
use super::{count_of, counts_at, in_place, launch, root_in, run_direct, Mode};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::obj::op::fast_reduction;
use crate::obj::request::After;
use crate::shortcut::{Args, Resolved};
use crate::state::{Mpi, On};

/// The shape of a reduction: which collective, and how many elements each rank receives.
enum Shape {
    /// Reduce (to `root`), allreduce, scan, exscan: `count` elements in and out.
    Whole { kind: Kind, count: c_int, root: c_int },
    /// Reduce-scatter with equal blocks of `count`.
    Block { count: c_int },
    /// Reduce-scatter with `counts` (one per rank).
    Counts { counts: *const c_int },
}

/// Reduce, allreduce, scan or exscan of a dense committed type with a predefined arithmetic
/// operation on an intracommunicator, its buffers used as they are (allreduce in place
/// included): the common case, one lookup per handle and no staging. `None` for any other call,
/// which the full path handles (and rejects with its errors). A call repeating the shortcut's
/// entry runs it at once; the first resolves its arguments and keeps them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn whole_direct(
    m: &Mpi,
    kind: Kind,
    count: c_int,
    root: c_int,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
    first: bool,
) -> Option<MpiResult> {
    let place = in_place(sbuf);
    let args = Args { kind, comm, dt, op, count, root, in_place: place };
    let send = if place { rbuf.cast_const() } else { sbuf };
    if first {
        m.shortcuts.keep(args, resolve(m, &args)?);
    }
    // SAFETY: the application keeps its buffers valid until the collective completes.
    unsafe { m.run_shortcut(&args, send, rbuf, mode) }
}

/// What the arguments of a reduction resolve to on the direct path; `None` when the call is
/// not one for it.
#[cold]
fn resolve(m: &Mpi, a: &Args) -> Option<Resolved> {
    if a.in_place && a.kind != Kind::Allreduce {
        return None;
    }
    let count = usize::try_from(a.count).ok()?;
    let (size, elem) = m.types().borrow().dense(a.dt)?;
    let r = fast_reduction(a.op, size, elem)?;
    let c = m.comm_ref(a.comm).ok().filter(|c| !c.inter)?;
    let root = match a.kind {
        Kind::Reduce => u32::try_from(a.root).ok().filter(|&x| x < c.size)?,
        _ => 0,
    };
    let out_here = !(a.kind == Kind::Reduce && c.rank != root);
    let count = count.checked_mul(r.per_elem)?;
    Some(Resolved { c, dtype: r.dtype, op: Some(r.op), count, root, out_here })
}

/// A reduction: the shortcut's entry in the caller's frame, anything else out of line.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn reduce(
    m: &Mpi,
    shape: Shape,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    if let Shape::Whole { kind, count, root } = shape {
        if let Some(r) = whole_direct(m, kind, count, root, sbuf, rbuf, dt, op, comm, mode, false) {
            return r;
        }
    }
    reduce_full(m, shape, sbuf, rbuf, dt, op, comm, mode)
}

/// [`reduce`] of a call that is not the shortcut's entry.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn reduce_full(
    m: &Mpi,
    shape: Shape,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    if let Shape::Whole { kind, count, root } = shape {
        if let Some(r) = whole_direct(m, kind, count, root, sbuf, rbuf, dt, op, comm, mode, true) {
            return r;
        }
    }
    let c = m.coll_comm(comm)?;
    let (me, n) = (c.rank, c.size);
    // (kind, elements in, elements out here, per-rank counts, root)
    let (kind, input, output, counts, root) = match shape {
        Shape::Whole { kind, count, root } => {
            let c = count_of(count)?;
            let root = if kind == Kind::Reduce { root_in(root, n)? } else { 0 };
            let out = if kind == Kind::Reduce && me != root { 0 } else { c };
            (kind, c, out, Vec::new(), root)
        }
        Shape::Block { count } => {
            let c = count_of(count)?;
            let total = c
                .checked_mul(n as usize)
                .ok_or_else(|| err!(MPI_ERR_COUNT, "recvcount {count} * {n} overflows"))?;
            (Kind::ReduceScatterBlock, total, c, Vec::new(), 0)
        }
        Shape::Counts { counts } => {
            // SAFETY: `n` entries, by the caller's contract.
            let c = unsafe { counts_at(counts, n as usize, "recvcounts")? };
            let total = c
                .iter()
                .try_fold(0usize, |t, &x| t.checked_add(x))
                .ok_or_else(|| err!(MPI_ERR_COUNT, "recvcounts overflow"))?;
            (Kind::ReduceScatter, total, c[me as usize], c, 0)
        }
    };
    let spec_count = |per_elem: usize| match kind {
        Kind::ReduceScatterBlock => output * per_elem,
        Kind::ReduceScatter => 0,
        _ => input * per_elem,
    };
    let ty = m.typed(dt, 0)?;
    let r = m.reduction(op, dt, &ty)?;
    if ty.dense() && kind != Kind::ReduceScatter && (!in_place(sbuf) || kind == Kind::Allreduce) {
        // Without staging (a user operation on a dense type): the engine reads and writes
        // the buffers as they are (allreduce in place included).
        let count = spec_count(r.per_elem);
        let out_here = output != 0;
        let res = Resolved { c, dtype: r.dtype, op: Some(r.op), count, root, out_here };
        let mut spec = res.spec(kind, if in_place(sbuf) { rbuf.cast_const() } else { sbuf }, rbuf);
        // SAFETY: the application keeps its buffers valid until the collective completes.
        return unsafe { m.exec_on(c, comm, &mut spec, mode, After::Nothing) };
    }
    let send = if in_place(sbuf) {
        if kind == Kind::Reduce && me != root {
            return Err(err!(MPI_ERR_BUFFER, "MPI_Reduce: MPI_IN_PLACE is only allowed at the root"));
        }
        let input_at = Region::one(rbuf.cast(), &ty, input);
        if kind == Kind::Allreduce && ty.dense() {
            // The engine runs allreduce in place.
            Staged::at(rbuf.cast())
        } else {
            // SAFETY: in place, the receive buffer holds the input.
            unsafe { stage::copy_of(&input_at) }
        }
    } else {
        // SAFETY: the send buffer holds the input.
        unsafe { stage::send(&Region::one(sbuf.cast(), &ty, input)) }
    };
    let mut recv = if output == 0 && kind == Kind::Reduce {
        Staged::none()
    } else {
        stage::recv(Region::one(rbuf.cast(), &ty, output))
    };
    if kind == Kind::Exscan && me == 0 {
        recv.forget_result(); // undefined at rank 0: leave the application's buffer alone
    }
    let per: Vec<usize> = counts.iter().map(|c| c * r.per_elem).collect();
    let mut spec = Spec::new(kind, r.dtype);
    spec.count = spec_count(r.per_elem);
    spec.op = Some(r.op);
    spec.root = root;
    spec.rcounts = &per;
    // SAFETY: the application keeps its buffers valid until the collective completes.
    unsafe { launch(m, comm, &mut spec, send, recv, mode) }
}

/// The direct path of a blocking reduce or allreduce (`KIND`: `Kind::Reduce` or
/// `Kind::Allreduce` as a `u8`): below `MPI_THREAD_MULTIPLE` a call that is the shortcut's
/// entry runs it without [`call`]; the code to return, or `None` for anything else.
///
/// # Safety
/// As `MPI_Reduce` / `MPI_Allreduce`; `m` is the direct instance.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn whole_direct_blocking<const KIND: u8>(
    m: &Mpi,
    count: c_int,
    root: c_int,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    dt: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<c_int> {
    let (kind, name) = if KIND == Kind::Allreduce as u8 {
        (Kind::Allreduce, "MPI_Allreduce")
    } else {
        (Kind::Reduce, "MPI_Reduce")
    };
    let place = in_place(sbuf);
    let args = Args { kind, comm, dt, op, count, root, in_place: place };
    let send = if place { rbuf.cast_const() } else { sbuf };
    // SAFETY: the application's buffers, valid for the call; `m` is the direct instance.
    unsafe { run_direct::<KIND>(m, name, &args, send, rbuf) }
}

export! {
    /// `MPI_Reduce`.
    fn MPI_Reduce / PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) on On::Comm(comm);
    direct |m| {
        // SAFETY: forwarded contract; `m` is the direct instance.
        if let Some(code) = unsafe { whole_direct_blocking::<{ Kind::Reduce as u8 }>(m, count, root, sendbuf, recvbuf, datatype, op, comm) } {
            return code;
        }
    }
    // A call that is not the shortcut's entry (the first of its arguments makes it the
    // entry), `MPI_THREAD_MULTIPLE`.
    |m| reduce(m, Shape::Whole { kind: Kind::Reduce, count, root }, sendbuf, recvbuf, datatype, op, comm, Mode::Blocking)
}

export! {
    /// `MPI_Ireduce`.
    fn MPI_Ireduce / PMPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        reduce(m, Shape::Whole { kind: Kind::Reduce, count, root }, sendbuf, recvbuf, datatype, op, comm, Mode::Start(request))
    }
}

export! {
    /// `MPI_Allreduce`.
    fn MPI_Allreduce / PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on On::Comm(comm);
    direct |m| {
        // SAFETY: forwarded contract; `m` is the direct instance.
        if let Some(code) = unsafe { whole_direct_blocking::<{ Kind::Allreduce as u8 }>(m, count, 0, sendbuf, recvbuf, datatype, op, comm) } {
            return code;
        }
    }
    // A call that is not the shortcut's entry (the first of its arguments makes it the
    // entry), `MPI_THREAD_MULTIPLE`.
    |m| reduce(m, Shape::Whole { kind: Kind::Allreduce, count, root: 0 }, sendbuf, recvbuf, datatype, op, comm, Mode::Blocking)
}

export! {
    /// `MPI_Iallreduce`.
    fn MPI_Iallreduce / PMPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        reduce(m, Shape::Whole { kind: Kind::Allreduce, count, root: 0 }, sendbuf, recvbuf, datatype, op, comm, Mode::Start(request))
    }
}

coll_pair! {
    /// `MPI_Scan` / `MPI_Iscan`.
    MPI_Scan / PMPI_Scan, MPI_Iscan / PMPI_Iscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    comm, |m, mode| reduce(m, Shape::Whole { kind: Kind::Scan, count, root: 0 }, sendbuf, recvbuf, datatype, op, comm, mode)
}

coll_pair! {
    /// `MPI_Exscan` / `MPI_Iexscan`: the receive buffer of rank 0 is left as it was.
    MPI_Exscan / PMPI_Exscan, MPI_Iexscan / PMPI_Iexscan,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    comm, |m, mode| reduce(m, Shape::Whole { kind: Kind::Exscan, count, root: 0 }, sendbuf, recvbuf, datatype, op, comm, mode)
}

coll_pair! {
    /// `MPI_Reduce_scatter_block` / `MPI_Ireduce_scatter_block`.
    MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    comm, |m, mode| reduce(m, Shape::Block { count: recvcount }, sendbuf, recvbuf, datatype, op, comm, mode)
}

coll_pair! {
    /// `MPI_Reduce_scatter` / `MPI_Ireduce_scatter`.
    MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Ireduce_scatter / PMPI_Ireduce_scatter,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm),
    comm, |m, mode| reduce(m, Shape::Counts { counts: recvcounts }, sendbuf, recvbuf, datatype, op, comm, mode)
}

export! {
    /// `MPI_Reduce_local`: `inoutbuf = inbuf op inoutbuf`, element by element.
    fn MPI_Reduce_local / PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op) on On::NoObject;
    |m| {
        let ty = m.typed(datatype, count)?;
        let r = m.reduction(op, datatype, &ty)?;
        let n = count as usize;
        if n == 0 || ty.size == 0 {
            return Ok(());
        }
        if inbuf.is_null() || inoutbuf.is_null() {
            return Err(err!(MPI_ERR_BUFFER, "MPI_Reduce_local: NULL buffer with {count} elements"));
        }
        if ty.dense() {
            let bytes = n * ty.size;
            // SAFETY: both buffers hold `count` elements, one run each, and do not overlap
            // (the standard requires distinct buffers).
            let (src, dst) = unsafe {
                (std::slice::from_raw_parts(inbuf.cast::<u8>(), bytes), std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), bytes))
            };
            r.op.apply(r.dtype, src, dst, true);
            return Ok(());
        }
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        // SAFETY: both buffers hold `count` elements of the type, by the caller's contract.
        unsafe {
            crate::obj::datatype::pack(inbuf.cast(), n, &ty, &mut src);
            crate::obj::datatype::pack(inoutbuf.cast(), n, &ty, &mut dst);
        }
        r.op.apply(r.dtype, &src, &mut dst, true);
        // SAFETY: as above.
        unsafe { crate::obj::datatype::unpack(&dst, inoutbuf.cast(), n, &ty) }
    }
}
