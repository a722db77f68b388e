//! All-to-all: `MPI_Alltoall`, `MPI_Alltoallv`, `MPI_Alltoallw` and their non-blocking forms.
//! All three run as the engine's alltoallv over bytes: `alltoallw`'s per-peer types are
//! packed (or, when every one is dense, used in place) like any other type, so it needs no
//! point-to-point of its own. `MPI_IN_PLACE` as the send buffer: the data is taken from the
//! receive buffer, with the receive counts and types.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use weft::ops::{DType, Kind, Spec};

use super::stage::{self, Block, Region};
use super::{count_of, counts_at, displs_at, in_place, launch, mismatch, Mode};
use crate::abi::*;
use crate::error::MpiResult;
use crate::export;
use crate::obj::datatype::{array, TypeInfo};
use crate::state::{Mpi, On};

/// Run an all-to-all whose send side is `send` (`None`: in place) and receive side `recv`.
/// `uniform` calls (alltoall) use the engine's alltoall, the others its alltoallv.
fn exchange(
    m: &Mpi,
    send: Option<Region>,
    recv: Region,
    uniform: bool,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let send = match &send {
        // SAFETY: the send buffer holds every block.
        Some(s) => unsafe { stage::send(s) },
        // SAFETY: in place: the receive buffer holds the data to send.
        None => unsafe { stage::copy_of(&recv) },
    };
    let recv = stage::recv(recv);
    let (sc, sd) = send.in_elems(1);
    let (rc, rd) = recv.in_elems(1);
    let mut spec = Spec::new(if uniform { Kind::Alltoall } else { Kind::Alltoallv }, DType::Byte);
    spec.count = rc.first().copied().unwrap_or(0);
    if uniform && sc.first() != rc.first() {
        return Err(mismatch("MPI_Alltoall", sc[0], rc[0]));
    }
    (spec.scounts, spec.sdispls, spec.rcounts, spec.rdispls) = (&sc, &sd, &rc, &rd);
    // SAFETY: the application keeps its buffers valid until the collective completes.
    unsafe { launch(m, comm, &mut spec, send, recv, mode) }
}

#[allow(clippy::too_many_arguments)]
fn alltoall(
    m: &Mpi,
    sbuf: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (_, n) = m.rank_size(comm)?;
    let rt = m.typed(rtype, rcount)?;
    let recv = Region::uniform(rbuf.cast(), &rt, count_of(rcount)?, n as usize);
    let send = if in_place(sbuf) {
        None
    } else {
        let st = m.typed(stype, scount)?;
        Some(Region::uniform(sbuf.cast(), &st, scount as usize, n as usize))
    };
    exchange(m, send, recv, true, comm, mode)
}

/// The blocks of an alltoallv or alltoallw buffer: `counts[i]` elements of `types[i]` at byte
/// offset `displs[i] * unit[i]` (`unit`: the extent for alltoallv, 1 for alltoallw).
///
/// # Safety
/// Non-null arrays must hold `n` entries.
unsafe fn blocks(
    counts: *const c_int,
    displs: *const c_int,
    types: &[Arc<TypeInfo>],
    bytes: bool,
    n: usize,
    side: &str,
) -> MpiResult<Vec<Block>> {
    // SAFETY: forwarded contract.
    let (c, d) = unsafe {
        (counts_at(counts, n, &format!("{side}counts"))?, displs_at(displs, n, &format!("{side}displs"))?)
    };
    Ok((0..n)
        .map(|i| {
            let unit = if bytes { 1 } else { types[i].extent };
            Block { off: d[i] * unit, count: c[i], ty: types[i].clone() }
        })
        .collect())
}

/// Alltoallv (`stypes` / `rtypes` of one entry, displacements in extents) or alltoallw
/// (`w`: `n` entries, displacements in bytes).
#[allow(clippy::too_many_arguments)]
fn alltoallv(
    m: &Mpi,
    w: bool,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: &[MPI_Datatype],
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: &[MPI_Datatype],
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (_, n) = m.rank_size(comm)?;
    let n = n as usize;
    let resolve = |ts: &[MPI_Datatype]| -> MpiResult<Vec<Arc<TypeInfo>>> {
        let one: Vec<Arc<TypeInfo>> = ts.iter().map(|&t| m.typed(t, 0)).collect::<MpiResult<_>>()?;
        Ok(if w { one } else { vec![one[0].clone(); n] })
    };
    let rt = resolve(rtypes)?;
    // SAFETY: `n` entries each, by the caller's contract.
    let recv = Region { base: rbuf.cast(), blocks: unsafe { blocks(rcounts, rdispls, &rt, w, n, "recv")? } };
    let send = if in_place(sbuf) {
        None
    } else {
        let st = resolve(stypes)?;
        // SAFETY: as above.
        let b = unsafe { blocks(scounts, sdispls, &st, w, n, "send")? };
        Some(Region { base: sbuf.cast_mut().cast(), blocks: b })
    };
    exchange(m, send, recv, false, comm, mode)
}

coll_pair! {
    /// `MPI_Alltoall` / `MPI_Ialltoall`.
    MPI_Alltoall / PMPI_Alltoall, MPI_Ialltoall / PMPI_Ialltoall,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm),
    comm, |m, mode| alltoall(m, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, mode)
}

coll_pair! {
    /// `MPI_Alltoallv` / `MPI_Ialltoallv`.
    MPI_Alltoallv / PMPI_Alltoallv, MPI_Ialltoallv / PMPI_Ialltoallv,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm),
    comm, |m, mode| alltoallv(m, false, sendbuf, sendcounts, sdispls, &[sendtype], recvbuf, recvcounts, rdispls, &[recvtype], comm, mode)
}

coll_pair! {
    /// `MPI_Alltoallw` / `MPI_Ialltoallw`: displacements in bytes, a type per peer.
    MPI_Alltoallw / PMPI_Alltoallw, MPI_Ialltoallw / PMPI_Ialltoallw,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm),
    comm, |m, mode| {
        let (_, n) = m.rank_size(comm)?;
        // SAFETY: `n` entries each, by the caller's contract (the send types are not read in
        // place).
        let rt = unsafe { array(recvtypes, n as usize, "recvtypes")? };
        let st = if in_place(sendbuf) { &[][..] } else {
            // SAFETY: as above.
            unsafe { array(sendtypes, n as usize, "sendtypes")? }
        };
        alltoallv(m, true, sendbuf, sendcounts, sdispls, st, recvbuf, recvcounts, rdispls, rt, comm, mode)
    }
}
