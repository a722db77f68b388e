//! Matched probe: a message taken by `MPI_Mprobe`/`MPI_Improbe` is out of matching (a later
//! receive gets the next one) and only `MPI_Mrecv`/`MPI_Imrecv` with its handle receive it;
//! eager and rendezvous sizes; `MPI_PROC_NULL` gives `MPI_MESSAGE_NO_PROC`.

use std::ffi::c_int;

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::{count, status, IGNORE};

const W: MPI_Comm = MPI_COMM_WORLD;

pub fn run(me: c_int) {
    for n in [4usize, 1 << 15] {
        let first: Vec<c_int> = vec![1; n];
        let second: Vec<c_int> = vec![2; n];
        let third: Vec<c_int> = vec![3; n];
        if me == 0 {
            let mut rs = [MPI_REQUEST_NULL; 3];
            for (i, d) in [&first, &second, &third].into_iter().enumerate() {
                ok!(MPI_Isend(d.as_ptr().cast(), n as c_int, MPI_INT, 1, 4, W, &mut rs[i]));
            }
            ok!(MPI_Waitall(3, rs.as_mut_ptr(), std::ptr::null_mut()));
        } else {
            let (mut m1, mut m2) = (MPI_MESSAGE_NULL, MPI_MESSAGE_NULL);
            let mut st = status();
            ok!(MPI_Mprobe(0, 4, W, &mut m1, &mut st));
            check!(m1 != MPI_MESSAGE_NULL && st.MPI_SOURCE == 0 && count(&st) == n as c_int, "mprobe status");
            let mut flag = 0;
            while flag == 0 {
                ok!(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, W, &mut flag, &mut m2, &mut st));
            }
            // The two probed messages are out of matching: a receive gets the third.
            let mut got = vec![0 as c_int; n];
            ok!(MPI_Recv(got.as_mut_ptr().cast(), n as c_int, MPI_INT, 0, 4, W, IGNORE));
            check!(got == third, "a receive after two matched probes got the third message");
            let mut r = MPI_REQUEST_NULL;
            ok!(MPI_Imrecv(got.as_mut_ptr().cast(), n as c_int, MPI_INT, &mut m2, &mut r));
            check!(m2 == MPI_MESSAGE_NULL, "imrecv sets the message to null");
            ok!(MPI_Wait(&mut r, &mut st));
            check!(got == second && count(&st) == n as c_int, "imrecv got the second message");
            let m1_old = m1;
            ok!(MPI_Mrecv(got.as_mut_ptr().cast(), n as c_int, MPI_INT, &mut m1, &mut st));
            check!(got == first && m1 == MPI_MESSAGE_NULL && st.MPI_TAG == 4, "mrecv got the first message");
            // A message is received once.
            let mut stale = m1_old;
            fails!(
                MPI_ERR_REQUEST,
                MPI_Mrecv(got.as_mut_ptr().cast(), n as c_int, MPI_INT, &mut stale, IGNORE)
            );
            ok!(MPI_Improbe(0, 4, W, &mut flag, &mut m1, IGNORE));
            check!(flag == 0, "nothing left to probe");
        }
        ok!(MPI_Barrier(W));
    }
    // Large-count forms.
    if me == 0 {
        ok!(MPI_Send([5 as c_int, 6].as_ptr().cast(), 2, MPI_INT, 1, 8, W));
        ok!(MPI_Send([7 as c_int, 8].as_ptr().cast(), 2, MPI_INT, 1, 8, W));
    } else {
        let mut got = [0 as c_int; 2];
        let mut m = MPI_MESSAGE_NULL;
        ok!(MPI_Mprobe(0, 8, W, &mut m, IGNORE));
        ok!(MPI_Mrecv_c(got.as_mut_ptr().cast(), 2, MPI_INT, &mut m, IGNORE));
        check!(got == [5, 6], "mrecv_c");
        ok!(MPI_Mprobe(0, 8, W, &mut m, IGNORE));
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Imrecv_c(got.as_mut_ptr().cast(), 2, MPI_INT, &mut m, &mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
        check!(got == [7, 8], "imrecv_c");
    }
    // A synchronous send to itself, taken by a matched probe: it completes with the receive.
    let data = vec![9 as c_int; 1 << 14];
    let mut back = vec![0 as c_int; 1 << 14];
    let mut r = MPI_REQUEST_NULL;
    ok!(MPI_Issend(data.as_ptr().cast(), 1 << 14, MPI_INT, me, 11, W, &mut r));
    let mut m = MPI_MESSAGE_NULL;
    ok!(MPI_Mprobe(me, 11, W, &mut m, IGNORE));
    let mut flag = 0;
    ok!(MPI_Test(&mut r, &mut flag, IGNORE));
    check!(flag == 0, "a synchronous send completed on a probe, before its receive");
    ok!(MPI_Mrecv(back.as_mut_ptr().cast(), 1 << 14, MPI_INT, &mut m, IGNORE));
    ok!(MPI_Wait(&mut r, IGNORE));
    check!(back == data, "self ssend through mprobe");
    // MPI_PROC_NULL.
    let mut st = status();
    ok!(MPI_Mprobe(MPI_PROC_NULL, 0, W, &mut m, &mut st));
    check!(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe of MPI_PROC_NULL");
    ok!(MPI_Mrecv(std::ptr::null_mut(), 0, MPI_INT, &mut m, &mut st));
    check!(
        m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL && count(&st) == 0,
        "mrecv of MPI_MESSAGE_NO_PROC"
    );
    ok!(MPI_Improbe(MPI_PROC_NULL, 0, W, &mut flag, &mut m, IGNORE));
    check!(flag == 1 && m == MPI_MESSAGE_NO_PROC, "improbe of MPI_PROC_NULL");
    ok!(MPI_Imrecv(std::ptr::null_mut(), 0, MPI_INT, &mut m, &mut r));
    ok!(MPI_Wait(&mut r, &mut st));
    check!(st.MPI_SOURCE == MPI_PROC_NULL, "imrecv of MPI_MESSAGE_NO_PROC");
}
