//! Neighborhood collectives (`MPI_Neighbor_*` and `MPI_Ineighbor_*`): point-to-point
//! messages to and from a topology's neighbors on its hidden communicator (see `obj/topo.rs`).
//! A non-blocking one's request is [`Parts`] (`obj/request.rs`), which completes when all its
//! sends and receives have. Neighbors that are `MPI_PROC_NULL` keep their buffer block but move no data.

use std::ffi::{c_int, c_void};

use weft::ops::ReqId;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::obj::request::Parts;
use crate::obj::request::{block_on, finish, After, Req};
use crate::obj::topo::{ints, Peer};
use crate::state::{Mpi, On};

/// One message of a neighborhood collective: the neighbor, the buffer block, its count and
/// type.
struct Block<P> {
    peer: Peer,
    buf: P,
    count: c_int,
    ty: MPI_Datatype,
}

/// The byte extent of `count` elements of `ty`, for block offsets.
fn extent(m: &Mpi, ty: MPI_Datatype) -> MpiResult<isize> {
    Ok(m.types().borrow().get(ty)?.extent)
}

/// Start every receive and send of a neighborhood collective on `comm`'s hidden communicator.
/// On an error the requests already started are completed before it is returned.
///
/// # Safety
/// Every block's buffer must stay valid, as its type map requires, until the requests complete.
unsafe fn start(
    m: &Mpi,
    comm: MPI_Comm,
    recvs: Vec<Block<*mut c_void>>,
    sends: Vec<Block<*const c_void>>,
) -> MpiResult<Vec<(ReqId, After)>> {
    let hidden = m.topology(comm)?.hidden;
    let mut parts = Vec::with_capacity(recvs.len() + sends.len());
    let mut go = || -> MpiResult {
        for b in recvs.iter().filter(|b| b.peer.rank != MPI_PROC_NULL) {
            // SAFETY: forwarded contract.
            parts
                .push(unsafe { m.start_recv(hidden, b.buf, b.count.into(), b.ty, b.peer.rank, b.peer.tag)? });
        }
        for b in sends.iter().filter(|b| b.peer.rank != MPI_PROC_NULL) {
            // SAFETY: forwarded contract.
            parts.push(unsafe {
                m.start_send(hidden, b.buf, b.count.into(), b.ty, b.peer.rank, b.peer.tag, false)?
            });
        }
        Ok(())
    };
    if let Err(e) = go() {
        let ids: Vec<ReqId> = parts.iter().map(|p| p.0).collect();
        m.core.complete_all(&ids);
        return Err(e);
    }
    Ok(parts)
}

/// Run a neighborhood collective: wait for all its parts (`request` null) or return them as
/// one request.
///
/// # Safety
/// As [`start`]; a non-null `request` must be valid for a write.
unsafe fn run(
    m: &Mpi,
    comm: MPI_Comm,
    recvs: Vec<Block<*mut c_void>>,
    sends: Vec<Block<*const c_void>>,
    request: Option<*mut MPI_Request>,
) -> MpiResult {
    if let Some(r) = request {
        if r.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
        }
    }
    // SAFETY: forwarded contract.
    let parts = unsafe { start(m, comm, recvs, sends)? };
    match request {
        None => {
            let mut failed = None;
            for (id, after) in parts {
                let res = block_on(m, id);
                if let (_, Some(e)) = finish(m, res, after)? {
                    failed.get_or_insert(e);
                }
            }
            failed.map_or(Ok(()), Err)
        }
        Some(r) => {
            let h = m
                .reqs()
                .borrow_mut()
                .insert(Req::Parts { parts: Box::new(Parts { pending: parts, failed: None }), comm });
            // SAFETY: checked non-null above.
            unsafe { *r = h };
            Ok(())
        }
    }
}

/// `p` advanced by `bytes`.
fn at<T>(p: *const T, bytes: isize) -> *const c_void {
    p.cast::<u8>().wrapping_offset(bytes).cast()
}

fn at_mut<T>(p: *mut T, bytes: isize) -> *mut c_void {
    p.cast::<u8>().wrapping_offset(bytes).cast()
}

/// The neighbors of this process in `comm`'s topology: (in, out).
fn neighbors(m: &Mpi, comm: MPI_Comm) -> MpiResult<(Vec<Peer>, Vec<Peer>)> {
    let t = m.topology(comm)?;
    let me = m.core.comm_rank(m.comm(comm)?)? as c_int;
    Ok(t.shape.neighbors(me))
}

fn check_count(c: c_int) -> MpiResult<c_int> {
    if c < 0 {
        return Err(err!(MPI_ERR_COUNT, "invalid count {c}"));
    }
    Ok(c)
}

/// Allgather: `count` of `sty` to every out-neighbor; from in-neighbor `i` into block `i`
/// (blocks `displs[i]` elements of `rty` apart, or `i * rcount` if `displs` is `None`).
///
/// # Safety
/// The buffers as the standard requires for `MPI_Neighbor_allgather(v)`.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    m: &Mpi,
    comm: MPI_Comm,
    sbuf: *const c_void,
    scount: c_int,
    sty: MPI_Datatype,
    rbuf: *mut c_void,
    rcounts: Vec<c_int>,
    displs: Vec<c_int>,
    rty: MPI_Datatype,
    request: Option<*mut MPI_Request>,
) -> MpiResult {
    let (ins, outs) = neighbors(m, comm)?;
    let scount = check_count(scount)?;
    let ext = extent(m, rty)?;
    let recvs = ins
        .iter()
        .enumerate()
        .map(|(i, &peer)| {
            Ok(Block {
                peer,
                buf: at_mut(rbuf, displs[i] as isize * ext),
                count: check_count(rcounts[i])?,
                ty: rty,
            })
        })
        .collect::<MpiResult<Vec<_>>>()?;
    let sends = outs.iter().map(|&peer| Block { peer, buf: sbuf, count: scount, ty: sty }).collect();
    // SAFETY: forwarded contract.
    unsafe { run(m, comm, recvs, sends, request) }
}

/// Alltoall(v/w): block `j` to out-neighbor `j`, block `i` from in-neighbor `i`; offsets in
/// bytes.
///
/// # Safety
/// The buffers as the standard requires for `MPI_Neighbor_alltoall(v/w)`.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall(
    m: &Mpi,
    comm: MPI_Comm,
    sbuf: *const c_void,
    s: Vec<(c_int, isize, MPI_Datatype)>,
    rbuf: *mut c_void,
    r: Vec<(c_int, isize, MPI_Datatype)>,
    request: Option<*mut MPI_Request>,
) -> MpiResult {
    let (ins, outs) = neighbors(m, comm)?;
    let recvs = ins
        .iter()
        .zip(&r)
        .map(|(&peer, &(count, off, ty))| {
            Ok(Block { peer, buf: at_mut(rbuf, off), count: check_count(count)?, ty })
        })
        .collect::<MpiResult<Vec<_>>>()?;
    let sends = outs
        .iter()
        .zip(&s)
        .map(|(&peer, &(count, off, ty))| {
            Ok(Block { peer, buf: at(sbuf, off), count: check_count(count)?, ty })
        })
        .collect::<MpiResult<Vec<_>>>()?;
    // SAFETY: forwarded contract.
    unsafe { run(m, comm, recvs, sends, request) }
}

/// The degrees (in, out) of this process in `comm`'s topology.
fn degrees(m: &Mpi, comm: MPI_Comm) -> MpiResult<(c_int, c_int)> {
    let (i, o) = neighbors(m, comm)?;
    Ok((i.len() as c_int, o.len() as c_int))
}

/// Equal blocks: `n` blocks of `count` elements of `ty`, each `count * extent` bytes apart.
fn equal(m: &Mpi, n: c_int, count: c_int, ty: MPI_Datatype) -> MpiResult<Vec<(c_int, isize, MPI_Datatype)>> {
    let ext = extent(m, ty)?;
    Ok((0..n).map(|i| (count, i as isize * count as isize * ext, ty)).collect())
}

/// `counts` and `displs` (in elements of `ty`) as blocks.
///
/// # Safety
/// Non-null arrays must hold `n` ints.
unsafe fn varying(
    m: &Mpi,
    n: c_int,
    counts: *const c_int,
    displs: *const c_int,
    ty: MPI_Datatype,
) -> MpiResult<Vec<(c_int, isize, MPI_Datatype)>> {
    let ext = extent(m, ty)?;
    // SAFETY: forwarded contract.
    let (c, d) = unsafe { (ints(counts, n, "counts")?, ints(displs, n, "displs")?) };
    Ok(c.into_iter().zip(d).map(|(c, d)| (c, d as isize * ext, ty)).collect())
}

/// `counts`, byte `displs` and `types` as blocks.
///
/// # Safety
/// Non-null arrays must hold `n` entries.
unsafe fn typed(
    n: c_int,
    counts: *const c_int,
    displs: *const MPI_Aint,
    types: *const MPI_Datatype,
) -> MpiResult<Vec<(c_int, isize, MPI_Datatype)>> {
    // SAFETY: forwarded contract.
    let c = unsafe { ints(counts, n, "counts")? };
    if n > 0 && (displs.is_null() || types.is_null()) {
        return Err(err!(MPI_ERR_ARG, "invalid argument: displacements or types are NULL"));
    }
    Ok((0..c.len())
        // SAFETY: both arrays hold `n` entries by the caller's contract.
        .map(|i| unsafe { (c[i], *displs.add(i), *types.add(i)) })
        .collect())
}

macro_rules! neighbor_pair {
    ($(#[$m:meta])* ($name:ident / $pname:ident, $iname:ident / $ipname:ident)
     ($($a:ident : $t:ty),*) |$mm:ident, $req:ident, $c:ident| $body:expr) => {
        export! {
            $(#[$m])*
            fn $name / $pname($($a: $t),*) on On::Comm($c);
            |$mm| {
                let $req: Option<*mut MPI_Request> = None;
                $body
            }
        }
        export! {
            $(#[$m])*
            /// Non-blocking: the request completes when every send and receive has.
            fn $iname / $ipname($($a: $t),*, request: *mut MPI_Request) on On::Comm($c);
            |$mm| {
                let $req = Some(request);
                $body
            }
        }
    };
}

neighbor_pair! {
    /// `MPI_Neighbor_allgather`: the send buffer to every out-neighbor; in-neighbor `i`'s
    /// block into receive block `i`.
    (MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather)
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    |m, req, comm| {
        let (indeg, _) = degrees(m, comm)?;
        let displs = (0..indeg).map(|i| i * recvcount).collect();
        // SAFETY: buffers as the standard requires.
        unsafe { allgather(m, comm, sendbuf, sendcount, sendtype, recvbuf, vec![recvcount; indeg as usize], displs, recvtype, req) }
    }
}

neighbor_pair! {
    /// `MPI_Neighbor_allgatherv`: as allgather, with per-neighbor receive counts and
    /// displacements.
    (MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv)
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    |m, req, comm| {
        let (indeg, _) = degrees(m, comm)?;
        // SAFETY: the arrays hold indegree ints; buffers as the standard requires.
        unsafe {
            let (c, d) = (ints(recvcounts, indeg, "recvcounts")?, ints(displs, indeg, "displs")?);
            allgather(m, comm, sendbuf, sendcount, sendtype, recvbuf, c, d, recvtype, req)
        }
    }
}

neighbor_pair! {
    /// `MPI_Neighbor_alltoall`: send block `j` to out-neighbor `j`, receive block `i` from
    /// in-neighbor `i`.
    (MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall)
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    |m, req, comm| {
        let (indeg, outdeg) = degrees(m, comm)?;
        let s = equal(m, outdeg, sendcount, sendtype)?;
        let r = equal(m, indeg, recvcount, recvtype)?;
        // SAFETY: buffers as the standard requires.
        unsafe { alltoall(m, comm, sendbuf, s, recvbuf, r, req) }
    }
}

neighbor_pair! {
    /// `MPI_Neighbor_alltoallv`: per-neighbor counts and displacements (in elements).
    (MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv)
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    |m, req, comm| {
        let (indeg, outdeg) = degrees(m, comm)?;
        // SAFETY: the arrays hold out/in-degree ints; buffers as the standard requires.
        unsafe {
            let s = varying(m, outdeg, sendcounts, sdispls, sendtype)?;
            let r = varying(m, indeg, recvcounts, rdispls, recvtype)?;
            alltoall(m, comm, sendbuf, s, recvbuf, r, req)
        }
    }
}

neighbor_pair! {
    /// `MPI_Neighbor_alltoallw`: per-neighbor counts, byte displacements and types.
    (MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw)
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm)
    |m, req, comm| {
        let (indeg, outdeg) = degrees(m, comm)?;
        // SAFETY: the arrays hold out/in-degree entries; buffers as the standard requires.
        unsafe {
            let s = typed(outdeg, sendcounts, sdispls, sendtypes)?;
            let r = typed(indeg, recvcounts, rdispls, recvtypes)?;
            alltoall(m, comm, sendbuf, s, recvbuf, r, req)
        }
    }
}
