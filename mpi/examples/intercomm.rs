//! Intercommunicators through the MPI library: the even and odd ranks of the world form two
//! groups, joined by `MPI_Intercomm_create`; point-to-point addresses the remote group (with
//! statuses in remote ranks, wildcard receives included), agreement spans both groups, merge
//! orders the low group first, a non-blocking duplicate (`MPI_Comm_idup`) is an
//! intercommunicator of the same groups, and a revoke by one process interrupts a wildcard receive at every
//! process of both groups. Exits non-zero on the first wrong result; run under
//! `weft-run -n N` (N >= 2).

use std::ffi::c_int;
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::error::MPIX_ERR_REVOKED;
use mpi_abi::*;

fn check(ok: bool, what: &str) {
    if !ok {
        eprintln!("intercomm: FAILED: {what}");
        std::process::exit(1);
    }
}

/// The library's text for error code `rc`.
fn error_string(rc: c_int) -> String {
    let mut buf = vec![0u8; MPI_MAX_ERROR_STRING as usize];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds MPI_MAX_ERROR_STRING bytes, as the call requires.
    unsafe { MPI_Error_string(rc, buf.as_mut_ptr().cast(), &mut len) };
    String::from_utf8_lossy(&buf[..len.max(0) as usize]).into_owned()
}

fn main() {
    // SAFETY: every call follows the MPI standard's contract; pointers are to live locals.
    unsafe {
        MPI_Init(null_mut(), null_mut());
        let (mut rank, mut size) = (0, 0);
        MPI_Comm_rank(MPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mut size);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        let color = rank % 2;
        let mut local = MPI_COMM_NULL;
        check(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &mut local) == MPI_SUCCESS, "split");
        let (mut lrank, mut lsize) = (0, 0);
        MPI_Comm_rank(local, &mut lrank);
        MPI_Comm_size(local, &mut lsize);
        let rsize_want = if color == 0 { size / 2 } else { (size + 1) / 2 };
        // Leaders: world rank 0 (evens) and world rank 1 (odds).
        let mut inter = MPI_COMM_NULL;
        let rc = MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 99, &mut inter);
        check(rc == MPI_SUCCESS, "intercomm_create");
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        let (mut irank, mut isize, mut rsize, mut flag) = (-1, -1, -1, 0);
        MPI_Comm_rank(inter, &mut irank);
        MPI_Comm_size(inter, &mut isize);
        MPI_Comm_remote_size(inter, &mut rsize);
        MPI_Comm_test_inter(inter, &mut flag);
        check(irank == lrank && isize == lsize, "rank and size are the local group's");
        check(rsize == rsize_want, "remote size");
        check(flag == 1, "test_inter");

        // Every process sends its world rank to remote rank lrank % rsize; every process receives
        // one message from each remote rank j with j % lsize == lrank (wildcard source).
        let me: c_int = rank;
        let mut req = MPI_REQUEST_NULL;
        MPI_Isend((&me as *const c_int).cast(), 1, MPI_INT, lrank % rsize, 7, inter, &mut req);
        let expected = (0..rsize).filter(|j| j % lsize == lrank).count();
        for _ in 0..expected {
            let mut v: c_int = -1;
            let mut st = MPI_Status::default();
            let rc = MPI_Recv((&mut v as *mut c_int).cast(), 1, MPI_INT, MPI_ANY_SOURCE, 7, inter, &mut st);
            check(rc == MPI_SUCCESS, "recv");
            // Remote rank j of the other color is world rank 2j + (1 - color).
            check(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize, "status source is a remote rank");
            check(v == 2 * st.MPI_SOURCE + (1 - color), "value matches the remote source");
        }
        MPI_Wait(&mut req, null_mut());
        let bad = MPI_Send((&me as *const c_int).cast(), 1, MPI_INT, rsize, 7, inter);
        check(bad == MPI_ERR_RANK, "a rank beyond the remote group is MPI_ERR_RANK");

        // Agreement over both groups.
        let mut f: c_int = if rank == 0 { 0b01 } else { 0b11 };
        check(mpi_abi::MPIX_Comm_agree(inter, &mut f) == MPI_SUCCESS, "agree");
        check(f == 0b01, "agree ANDs both groups");

        // A non-blocking duplicate: the same two groups, its own context.
        let (mut dup, mut dreq) = (MPI_COMM_NULL, MPI_REQUEST_NULL);
        check(MPI_Comm_idup(inter, &mut dup, &mut dreq) == MPI_SUCCESS, "idup");
        check(MPI_Wait(&mut dreq, null_mut()) == MPI_SUCCESS, "idup's wait");
        let (mut dflag, mut drsize) = (0, -1);
        MPI_Comm_test_inter(dup, &mut dflag);
        MPI_Comm_remote_size(dup, &mut drsize);
        check(dflag == 1 && drsize == rsize, "the duplicate is an intercommunicator of the same groups");
        let mut g: c_int = if rank == 1 { 0b10 } else { 0b11 };
        check(mpi_abi::MPIX_Comm_agree(dup, &mut g) == MPI_SUCCESS, "agree on the duplicate");
        check(g == 0b10, "agree on the duplicate ANDs both groups");
        MPI_Comm_free(&mut dup);

        // Merge: the group passing high = 0 (evens) first.
        let mut merged = MPI_COMM_NULL;
        let rc = MPI_Intercomm_merge(inter, color, &mut merged);
        check(rc == MPI_SUCCESS, &format!("merge: {}", error_string(rc)));
        let (mut mrank, mut msize) = (0, 0);
        MPI_Comm_rank(merged, &mut mrank);
        MPI_Comm_size(merged, &mut msize);
        check(msize == size, "merged size");
        let want = if color == 0 { lrank } else { (size + 1) / 2 + lrank };
        check(mrank == want, "merged order: low group first");

        // Every process has left the merge before the revoke: the merge is an operation on
        // `inter`, so a revoke that reaches a process still merging fails its merge (ULFM
        // orders a revoke against nothing but the revoker's own earlier calls).
        check(MPI_Barrier(merged) == MPI_SUCCESS, "barrier on the merged communicator");
        // A revoke by world rank 0 interrupts a wildcard receive everywhere else.
        if rank == 0 {
            check(mpi_abi::MPIX_Comm_revoke(inter) == MPI_SUCCESS, "revoke");
        } else {
            let mut v: c_int = 0;
            let rc =
                MPI_Recv((&mut v as *mut c_int).cast(), 1, MPI_INT, MPI_ANY_SOURCE, 8, inter, null_mut());
            check(rc == MPIX_ERR_REVOKED, "a pending receive ends with MPIX_ERR_REVOKED");
        }
        MPI_Barrier(merged);
        MPI_Comm_free(&mut merged);
        MPI_Comm_free(&mut inter);
        MPI_Comm_free(&mut local);
        println!("intercomm OK rank {rank}");
        MPI_Finalize();
    }
}
