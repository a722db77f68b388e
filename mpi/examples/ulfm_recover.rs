//! A ULFM recovery through the MPI library's exported functions, as an MPI program would do
//! it: the last rank dies, the survivors see `MPIX_ERR_PROC_FAILED` (or `MPIX_ERR_REVOKED`),
//! revoke, agree, shrink, and compute on the shrunken communicator. Before that, blocking
//! probes on a duplicate of the world for messages that never come must end like receives:
//! `MPIX_ERR_PROC_FAILED` for the dead rank and for `MPI_ANY_SOURCE` while its failure is not
//! acknowledged, `MPIX_ERR_REVOKED` once a survivor revoked the duplicate. Prints one verdict
//! line per survivor; run under `weft-run -n N` (N >= 2).

use std::ffi::c_int;
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::error::{MPIX_ERR_PROC_FAILED, MPIX_ERR_REVOKED};
use mpi_abi::*;

fn main() {
    // SAFETY: the calls follow the MPI standard's contracts; every pointer is to a live local.
    unsafe {
        assert_eq!(MPI_Init(null_mut(), null_mut()), MPI_SUCCESS);
        let (mut rank, mut size) = (0, 0);
        MPI_Comm_rank(MPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mut size);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        let mut dup: MPI_Comm = MPI_COMM_NULL;
        assert_eq!(MPI_Comm_dup(MPI_COMM_WORLD, &mut dup), MPI_SUCCESS);
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        // An allreduce and a broadcast on the world before the failure: the same calls after
        // it repeat the shortcut entries these make (the exports' direct paths), whose errors
        // must come back as codes under MPI_ERRORS_RETURN.
        let one: c_int = 1;
        let mut sum: c_int = 0;
        let all_sum = |sum: &mut c_int| {
            MPI_Allreduce(
                (&one as *const c_int).cast(),
                (sum as *mut c_int).cast(),
                1,
                MPI_INT,
                MPI_SUM,
                MPI_COMM_WORLD,
            )
        };
        let bcast = |b: &mut c_int| MPI_Bcast((b as *mut c_int).cast(), 1, MPI_INT, 0, MPI_COMM_WORLD);
        assert_eq!(all_sum(&mut sum), MPI_SUCCESS);
        assert_eq!(sum, size);
        let mut b: c_int = if rank == 0 { 7 } else { 0 };
        assert_eq!(bcast(&mut b), MPI_SUCCESS);
        assert_eq!(b, 7);
        let victim = size - 1;
        if rank == victim {
            libc::raise(libc::SIGKILL);
        }
        probes_end_on_failure_and_revoke(dup, rank, size, victim);
        // Survivors: a barrier that includes the dead rank fails (or is revoked by a peer that
        // saw the failure first).
        let rc = loop {
            let rc = MPI_Barrier(MPI_COMM_WORLD);
            if rc != MPI_SUCCESS {
                break rc;
            }
        };
        assert!(rc == MPIX_ERR_PROC_FAILED || rc == MPIX_ERR_REVOKED, "barrier returned {rc}");
        assert_eq!(MPIX_Comm_revoke(MPI_COMM_WORLD), MPI_SUCCESS);
        let mut revoked: c_int = 0;
        MPIX_Comm_is_revoked(MPI_COMM_WORLD, &mut revoked);
        assert_eq!(revoked, 1);
        let rc = MPI_Barrier(MPI_COMM_WORLD);
        assert_eq!(rc, MPIX_ERR_REVOKED, "operations on a revoked communicator fail");
        assert_eq!(all_sum(&mut sum), MPIX_ERR_REVOKED, "a repeated allreduce fails with its code");
        assert_eq!(bcast(&mut b), MPIX_ERR_REVOKED, "a repeated broadcast fails with its code");

        let mut shrunk: MPI_Comm = MPI_COMM_NULL;
        assert_eq!(MPIX_Comm_shrink(MPI_COMM_WORLD, &mut shrunk), MPI_SUCCESS);
        let (mut srank, mut ssize) = (0, 0);
        MPI_Comm_rank(shrunk, &mut srank);
        MPI_Comm_size(shrunk, &mut ssize);
        assert_eq!(ssize, size - 1);

        let mut failed: MPI_Group = MPI_GROUP_NULL;
        assert_eq!(MPIX_Comm_get_failed(MPI_COMM_WORLD, &mut failed), MPI_SUCCESS);
        let mut nacked: c_int = -1;
        assert_eq!(MPIX_Comm_ack_failed(MPI_COMM_WORLD, size, &mut nacked), MPI_SUCCESS);
        assert_eq!(nacked, 1, "one failure acknowledged");

        // Agreement on the shrunken communicator: the AND of the ranks' flags.
        let mut flag: c_int = if srank == 0 { 0b011 } else { 0b110 };
        assert_eq!(MPIX_Comm_agree(shrunk, &mut flag), MPI_SUCCESS);
        let want = if ssize == 1 { 0b011 } else { 0b010 };
        assert_eq!(flag, want);

        // Non-blocking agreement and shrink complete through MPI_Wait.
        let mut iflag: c_int = 1;
        let mut req: MPI_Request = MPI_REQUEST_NULL;
        assert_eq!(MPIX_Comm_iagree(shrunk, &mut iflag, &mut req), MPI_SUCCESS);
        assert_eq!(MPI_Wait(&mut req, null_mut()), MPI_SUCCESS);
        assert_eq!(iflag, 1);
        let mut again: MPI_Comm = MPI_COMM_NULL;
        assert_eq!(MPIX_Comm_ishrink(shrunk, &mut again, &mut req), MPI_SUCCESS);
        assert_eq!(MPI_Wait(&mut req, null_mut()), MPI_SUCCESS);
        let mut asize = 0;
        MPI_Comm_size(again, &mut asize);
        assert_eq!(asize, ssize);

        let one: c_int = 1;
        let mut sum: c_int = 0;
        let rc = MPI_Allreduce(
            (&one as *const c_int).cast(),
            (&mut sum as *mut c_int).cast(),
            1,
            MPI_INT,
            MPI_SUM,
            shrunk,
        );
        assert_eq!(rc, MPI_SUCCESS);
        assert_eq!(sum, size - 1);
        println!("rank {rank}: recovered, {ssize} survivors agree and sum {sum}");
        MPI_Comm_free(&mut again);
        MPI_Comm_free(&mut shrunk);
        MPI_Comm_free(&mut dup);
        MPI_Finalize();
    }
}

/// Blocking probes on `dup` (a duplicate of the world where nothing is ever sent) end with
/// the failure of `victim`, then with the revoke of `dup` by rank 1 (by rank 0 when it is the
/// only survivor).
///
/// # Safety
/// MPI is initialized and `dup` is a live communicator of every rank but `victim`.
unsafe fn probes_end_on_failure_and_revoke(dup: MPI_Comm, rank: c_int, size: c_int, victim: c_int) {
    let ignore = MPI_STATUS_IGNORE as *mut MPI_Status;
    // SAFETY: MPI is initialized (the caller's contract); every pointer is to a live local or is
    // MPI_STATUS_IGNORE.
    unsafe {
        assert_eq!(MPI_Probe(victim, 7, dup, ignore), MPIX_ERR_PROC_FAILED, "probe of the dead rank");
        assert_eq!(
            MPI_Probe(MPI_ANY_SOURCE, 7, dup, ignore),
            MPIX_ERR_PROC_FAILED,
            "wildcard probe with a failure not acknowledged"
        );
        let mut nacked: c_int = -1;
        assert_eq!(MPIX_Comm_ack_failed(dup, size, &mut nacked), MPI_SUCCESS);
        assert_eq!(nacked, 1);
        // Every survivor is past the probes above before the revoke (a revoke ends them too):
        // an agreement, which failures acknowledged no longer fail, is the fence.
        let mut flag: c_int = 1;
        assert_eq!(MPIX_Comm_agree(dup, &mut flag), MPI_SUCCESS, "agree as a fence");
        let revoker = if size > 2 { 1 } else { 0 };
        if rank == revoker {
            assert_eq!(MPIX_Comm_revoke(dup), MPI_SUCCESS);
        }
        // Acknowledged: only the revoke can end these probes (at the other survivors, while
        // they wait).
        assert_eq!(MPI_Probe(MPI_ANY_SOURCE, 8, dup, ignore), MPIX_ERR_REVOKED, "wildcard probe, revoked");
        let peer = if rank == 0 { size - 2 } else { 0 };
        assert_eq!(MPI_Probe(peer, 8, dup, ignore), MPIX_ERR_REVOKED, "probe of rank {peer}, revoked");
    }
}
