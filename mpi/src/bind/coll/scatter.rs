//! Scatters: `MPI_Scatter`, `MPI_Scatterv` and their non-blocking forms. `MPI_IN_PLACE` as the
//! receive buffer at the root: its own block stays where it is in the send buffer.

use std::ffi::{c_int, c_void};

use weft::ops::{DType, Kind, Spec};

use super::stage::{self, Region, Staged};
use super::{count_of, counts_at, displs_at, in_place, launch, mismatch, root_in, Mode};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::state::{Mpi, On};

/// Scatter from the root's `sbuf` (blocks of `scount` elements of `stype`, or `counts[i]` at
/// `displs[i]` when `v` is given) to `rcount` elements of `rtype` at every rank.
#[allow(clippy::too_many_arguments)]
fn scatter(
    m: &Mpi,
    sbuf: *const c_void,
    scount: c_int,
    v: Option<(*const c_int, *const c_int)>,
    stype: MPI_Datatype,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let name = if v.is_some() { "MPI_Scatterv" } else { "MPI_Scatter" };
    let (me, n) = m.rank_size(comm)?;
    let root = root_in(root, n)?;
    let region = if me != root {
        None
    } else {
        let st = m.typed(stype, scount.max(0))?;
        Some(match v {
            None => Region::uniform(sbuf.cast(), &st, count_of(scount)?, n as usize),
            Some((counts, displs)) => {
                // SAFETY: `n` entries each, by the caller's contract.
                let (c, d) = unsafe {
                    (counts_at(counts, n as usize, "sendcounts")?, displs_at(displs, n as usize, "displs")?)
                };
                Region::displaced(sbuf.cast(), &st, &c, &d)
            }
        })
    };
    let recv = if in_place(rbuf) {
        match &region {
            Some(r) => Staged::discard(r.blocks[me as usize].count * r.blocks[me as usize].ty.size),
            None => return Err(err!(MPI_ERR_BUFFER, "{name}: MPI_IN_PLACE is only allowed at the root")),
        }
    } else {
        let rt = m.typed(rtype, rcount)?;
        stage::recv(Region::one(rbuf.cast(), &rt, rcount as usize))
    };
    let own: usize = recv.counts.iter().sum();
    if let Some(r) = &region {
        let sent = r.blocks[me as usize].count * r.blocks[me as usize].ty.size;
        if sent != own {
            return Err(mismatch(name, sent, own));
        }
    }
    // SAFETY: the root's send buffer holds every block.
    let send = region.map_or_else(Staged::none, |r| unsafe { stage::send(&r) });
    let (sc, sd) = send.in_elems(1);
    let mut spec = Spec::new(if v.is_some() { Kind::Scatterv } else { Kind::Scatter }, DType::Byte);
    spec.count = own;
    spec.root = root;
    spec.scounts = &sc;
    spec.sdispls = &sd;
    // SAFETY: the application keeps its buffers valid until the collective completes.
    unsafe { launch(m, comm, &mut spec, send, recv, mode) }
}

coll_pair! {
    /// `MPI_Scatter` / `MPI_Iscatter`.
    MPI_Scatter / PMPI_Scatter, MPI_Iscatter / PMPI_Iscatter,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm),
    comm, |m, mode| scatter(m, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root, comm, mode)
}

coll_pair! {
    /// `MPI_Scatterv` / `MPI_Iscatterv`.
    MPI_Scatterv / PMPI_Scatterv, MPI_Iscatterv / PMPI_Iscatterv,
    (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm),
    comm, |m, mode| scatter(m, sendbuf, 0, Some((sendcounts, displs)), sendtype, recvbuf, recvcount, recvtype, root, comm, mode)
}
