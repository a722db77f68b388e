//! Gathers: `MPI_Gather`, `MPI_Gatherv`, `MPI_Allgather`, `MPI_Allgatherv` and their
//! non-blocking forms. `MPI_IN_PLACE` as the send buffer: at the root of a gather (its block
//! is already in the receive buffer), at every rank of an allgather (its own block).

use std::ffi::{c_int, c_void};

use weft::ops::{DType, Kind, Spec};

use super::stage::{self, Region, Staged};
use super::{counts_at, displs_at, in_place, launch, mismatch, root_in, Mode};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::state::{Mpi, On};

/// The receive counts and displacements of a v-variant.
#[derive(Clone, Copy)]
struct V {
    counts: *const c_int,
    displs: *const c_int,
}

/// Gather (`all`: allgather) of `scount` elements of `stype` from every rank into `rbuf`:
/// blocks of `rcount` elements of `rtype`, or (`v`) `counts[i]` at `displs[i]`.
#[allow(clippy::too_many_arguments)]
fn gather(
    m: &Mpi,
    all: bool,
    sbuf: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    v: Option<V>,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (me, n) = m.rank_size(comm)?;
    let root = if all { 0 } else { root_in(root, n)? };
    let receives = all || me == root;
    let name = match (all, v.is_some()) {
        (false, false) => "MPI_Gather",
        (false, true) => "MPI_Gatherv",
        (true, false) => "MPI_Allgather",
        (true, true) => "MPI_Allgatherv",
    };
    // Receive side: significant at the root (every rank for allgather).
    let region = if !receives {
        None
    } else {
        let rt = m.typed(rtype, rcount.max(0))?;
        Some(match v {
            None => Region::uniform(rbuf.cast(), &rt, super::count_of(rcount)?, n as usize),
            Some(V { counts, displs }) => {
                // SAFETY: `n` entries each, by the caller's contract.
                let (c, d) = unsafe {
                    (counts_at(counts, n as usize, "recvcounts")?, displs_at(displs, n as usize, "displs")?)
                };
                Region::displaced(rbuf.cast(), &rt, &c, &d)
            }
        })
    };
    let send = if in_place(sbuf) {
        let own = match &region {
            Some(r) if all || me == root => r.only(me as usize),
            _ => return Err(err!(MPI_ERR_BUFFER, "{name}: MPI_IN_PLACE is only allowed at the root")),
        };
        // SAFETY: the own block of the receive buffer holds this rank's data.
        unsafe { stage::copy_of(&own) }
    } else {
        let st = m.typed(stype, scount)?;
        // SAFETY: the send buffer holds `scount` elements.
        unsafe { stage::send(&Region::one(sbuf.cast(), &st, scount as usize)) }
    };
    let own_bytes: usize = send.counts.iter().sum();
    if let Some(r) = &region {
        let expect = r.blocks[me as usize].count * r.blocks[me as usize].ty.size;
        if own_bytes != expect {
            return Err(mismatch(name, own_bytes, expect));
        }
    }
    let recv = region.map_or_else(Staged::none, stage::recv);
    let kind = match (all, v.is_some()) {
        (false, false) => Kind::Gather,
        (false, true) => Kind::Gatherv,
        (true, false) => Kind::Allgather,
        (true, true) => Kind::Allgatherv,
    };
    let (rc, rd) = recv.in_elems(1);
    let mut spec = Spec::new(kind, DType::Byte);
    spec.count = own_bytes;
    spec.root = root;
    spec.rcounts = &rc;
    spec.rdispls = &rd;
    // SAFETY: the application keeps its buffers valid until the collective completes.
    unsafe { launch(m, comm, &mut spec, send, recv, mode) }
}

coll_pair! {
    /// `MPI_Gather` / `MPI_Igather`.
    MPI_Gather / PMPI_Gather, MPI_Igather / PMPI_Igather,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm),
    comm, |m, mode| gather(m, false, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, None, root, comm, mode)
}

coll_pair! {
    /// `MPI_Gatherv` / `MPI_Igatherv`.
    MPI_Gatherv / PMPI_Gatherv, MPI_Igatherv / PMPI_Igatherv,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm),
    comm, |m, mode| {
        let v = Some(V { counts: recvcounts, displs });
        gather(m, false, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, v, root, comm, mode)
    }
}

coll_pair! {
    /// `MPI_Allgather` / `MPI_Iallgather`.
    MPI_Allgather / PMPI_Allgather, MPI_Iallgather / PMPI_Iallgather,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm),
    comm, |m, mode| gather(m, true, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, None, 0, comm, mode)
}

coll_pair! {
    /// `MPI_Allgatherv` / `MPI_Iallgatherv`.
    MPI_Allgatherv / PMPI_Allgatherv, MPI_Iallgatherv / PMPI_Iallgatherv,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm),
    comm, |m, mode| {
        let v = Some(V { counts: recvcounts, displs });
        gather(m, true, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, v, 0, comm, mode)
    }
}
