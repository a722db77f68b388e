//! Completion of several requests (`MPI_Waitany`, `MPI_Testany`, `MPI_Waitsome`,
//! `MPI_Testsome`, `MPI_Testall` with their null/inactive/`MPI_UNDEFINED` rules and
//! `MPI_ERR_IN_STATUS`), `MPI_Request_get_status`, `MPI_Cancel`/`MPI_Test_cancelled`, and the
//! status functions (`MPI_Get_elements(_x)`, `MPI_Status_set_elements(_x)`,
//! `MPI_Status_set_cancelled`).

use std::ffi::c_int;

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::{count, status, IGNORE};

const W: MPI_Comm = MPI_COMM_WORLD;

pub fn run(me: c_int) {
    any(me);
    some_and_all(me);
    in_status(me);
    get_status_and_cancel(me);
    elements();
}

fn send(v: c_int, tag: c_int) {
    ok!(MPI_Send([v].as_ptr().cast(), 1, MPI_INT, 1 - crate::rank(), tag, W));
}

fn recv(tag: c_int) -> c_int {
    let mut v = [0 as c_int];
    ok!(MPI_Recv(v.as_mut_ptr().cast(), 1, MPI_INT, 1 - crate::rank(), tag, W, IGNORE));
    v[0]
}

/// `MPI_Waitany` returns the request that completed, skipping null ones; with none active it
/// gives `MPI_UNDEFINED` and the empty status. `MPI_Testany` likewise without blocking.
fn any(me: c_int) {
    if me == 0 {
        send(20, 2);
        recv(99); // rank 1 saw tag 2 complete first
        send(10, 1);
        recv(99);
    } else {
        let mut got = [[0 as c_int]; 2];
        let mut rs = [MPI_REQUEST_NULL; 3];
        let mut inactive = MPI_REQUEST_NULL;
        ok!(MPI_Recv_init(got[0].as_mut_ptr().cast(), 1, MPI_INT, 0, 5, W, &mut inactive));
        ok!(MPI_Irecv(got[0].as_mut_ptr().cast(), 1, MPI_INT, 0, 1, W, &mut rs[1]));
        ok!(MPI_Irecv(got[1].as_mut_ptr().cast(), 1, MPI_INT, 0, 2, W, &mut rs[2]));
        rs[0] = inactive;
        let (mut idx, mut flag, mut st) = (-5, -5, status());
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(20) {
            ok!(MPI_Testany(3, rs.as_mut_ptr(), &mut idx, &mut flag, &mut st));
            if flag == 1 {
                break;
            }
            check!(idx == MPI_UNDEFINED, "testany with nothing complete: index {idx}");
        }
        if flag == 0 {
            ok!(MPI_Waitany(3, rs.as_mut_ptr(), &mut idx, &mut st));
        }
        check!(
            idx == 2 && st.MPI_TAG == 2 && got[1] == [20] && rs[2] == MPI_REQUEST_NULL,
            "first any: {idx}"
        );
        send(0, 99);
        ok!(MPI_Waitany(3, rs.as_mut_ptr(), &mut idx, &mut st));
        check!(idx == 1 && st.MPI_TAG == 1 && got[0] == [10], "second any: {idx}");
        check!(rs[0] == inactive, "the inactive request is untouched");
        send(0, 99);
        ok!(MPI_Waitany(3, rs.as_mut_ptr(), &mut idx, &mut st));
        check!(idx == MPI_UNDEFINED && st.MPI_TAG == MPI_ANY_TAG, "waitany with none active: {idx}");
        ok!(MPI_Testany(3, rs.as_mut_ptr(), &mut idx, &mut flag, &mut st));
        check!(idx == MPI_UNDEFINED && flag == 1, "testany with none active");
        ok!(MPI_Waitany(0, std::ptr::null_mut(), &mut idx, IGNORE));
        check!(idx == MPI_UNDEFINED, "waitany of no requests");
        ok!(MPI_Request_free(&mut rs[0]));
    }
}

/// `MPI_Testall` completes nothing until all are done; `MPI_Waitsome`/`MPI_Testsome` return
/// every request that is done, and `MPI_UNDEFINED` with none active.
fn some_and_all(me: c_int) {
    if me == 0 {
        send(1, 1);
        recv(99);
        send(2, 2);
        send(3, 3);
    } else {
        let mut got = [[0 as c_int]; 3];
        let mut rs = [MPI_REQUEST_NULL; 3];
        for (i, g) in got.iter_mut().enumerate() {
            ok!(MPI_Irecv(g.as_mut_ptr().cast(), 1, MPI_INT, 0, i as c_int + 1, W, &mut rs[i]));
        }
        let mut flag = -1;
        let mut sts = [status(); 3];
        // Message 1 only: testall says no and changes nothing.
        // The library writes `got[0]` behind the compiler's back: read it as volatile.
        // SAFETY: a live, aligned local.
        while unsafe { std::ptr::read_volatile(&got[0][0]) } == 0 {
            ok!(MPI_Testall(3, rs.as_mut_ptr(), &mut flag, sts.as_mut_ptr()));
            check!(flag == 0 && rs.iter().all(|&r| r != MPI_REQUEST_NULL), "testall with one of three done");
        }
        let (mut out, mut idx) = (-1, [-1 as c_int; 3]);
        ok!(MPI_Waitsome(3, rs.as_mut_ptr(), &mut out, idx.as_mut_ptr(), sts.as_mut_ptr()));
        check!(
            out == 1 && idx[0] == 0 && sts[0].MPI_TAG == 1 && rs[0] == MPI_REQUEST_NULL,
            "waitsome: {out} {idx:?}"
        );
        send(0, 99);
        let mut seen = 0;
        while seen < 2 {
            ok!(MPI_Testsome(3, rs.as_mut_ptr(), &mut out, idx.as_mut_ptr(), sts.as_mut_ptr()));
            check!((0..=2).contains(&out), "testsome count {out}");
            for k in 0..out as usize {
                let i = idx[k] as usize;
                check!(
                    i >= 1 && sts[k].MPI_TAG == i as c_int + 1 && got[i] == [i as c_int + 1],
                    "testsome index {i}"
                );
            }
            seen += out;
        }
        ok!(MPI_Testsome(3, rs.as_mut_ptr(), &mut out, idx.as_mut_ptr(), sts.as_mut_ptr()));
        check!(out == MPI_UNDEFINED, "testsome with none active: {out}");
        ok!(MPI_Waitsome(3, rs.as_mut_ptr(), &mut out, idx.as_mut_ptr(), IGNORE));
        check!(out == MPI_UNDEFINED, "waitsome with none active: {out}");
        ok!(MPI_Testall(3, rs.as_mut_ptr(), &mut flag, IGNORE));
        check!(flag == 1, "testall of null requests");
    }
}

/// A truncated receive among others: the some/all functions return `MPI_ERR_IN_STATUS` and
/// the failed request's status says `MPI_ERR_TRUNCATE`.
fn in_status(me: c_int) {
    let data = [7 as c_int; 8];
    if me == 0 {
        for tag in [1, 2, 1, 2] {
            ok!(MPI_Send(data.as_ptr().cast(), 8, MPI_INT, 1, tag, W));
        }
    } else {
        for round in 0..2 {
            let (mut small, mut fine) = ([0 as c_int; 4], [0 as c_int; 8]);
            let mut rs = [MPI_REQUEST_NULL; 2];
            ok!(MPI_Irecv(small.as_mut_ptr().cast(), 4, MPI_INT, 0, 1, W, &mut rs[0]));
            ok!(MPI_Irecv(fine.as_mut_ptr().cast(), 8, MPI_INT, 0, 2, W, &mut rs[1]));
            let mut sts = [status(); 2];
            if round == 0 {
                let mut flag = 0;
                let mut rc = MPI_SUCCESS;
                while flag == 0 {
                    rc = mpi!(MPI_Testall(2, rs.as_mut_ptr(), &mut flag, sts.as_mut_ptr()));
                }
                check!(rc == MPI_ERR_IN_STATUS, "testall returned {rc}");
            } else {
                let (mut out, mut idx, mut done) = (0, [0 as c_int; 2], 0);
                let mut classes = Vec::new();
                while done < 2 {
                    let rc =
                        mpi!(MPI_Waitsome(2, rs.as_mut_ptr(), &mut out, idx.as_mut_ptr(), sts.as_mut_ptr()));
                    check!(rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS, "waitsome returned {rc}");
                    for k in 0..out as usize {
                        classes.push((idx[k], sts[k].MPI_ERROR));
                    }
                    done += out;
                }
                classes.sort();
                sts[0].MPI_ERROR = classes[0].1;
                sts[1].MPI_ERROR = classes[1].1;
            }
            check!(
                sts[0].MPI_ERROR == MPI_ERR_TRUNCATE && sts[1].MPI_ERROR == MPI_SUCCESS,
                "round {round}: statuses' errors {} {}",
                sts[0].MPI_ERROR,
                sts[1].MPI_ERROR
            );
            check!(fine == data, "the good receive's data");
        }
    }
}

/// `MPI_Request_get_status` sees completion without freeing; `MPI_Cancel` withdraws an
/// unmatched receive (`MPI_Test_cancelled` true) but not a send already handed over.
fn get_status_and_cancel(me: c_int) {
    if me == 0 {
        recv(98);
        send(5, 4);
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Isend([6 as c_int].as_ptr().cast(), 1, MPI_INT, 1, 6, W, &mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
    } else {
        let mut v = [0 as c_int];
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Irecv(v.as_mut_ptr().cast(), 1, MPI_INT, 0, 4, W, &mut r));
        let (mut flag, mut st) = (-1, status());
        ok!(MPI_Request_get_status(r, &mut flag, &mut st));
        check!(flag == 0, "get_status before the message");
        send(0, 98);
        while flag == 0 {
            ok!(MPI_Request_get_status(r, &mut flag, &mut st));
        }
        check!(st.MPI_TAG == 4 && v == [5] && r != MPI_REQUEST_NULL, "get_status after the message");
        let mut st2 = status();
        ok!(MPI_Wait(&mut r, &mut st2));
        check!(st2.MPI_TAG == 4 && r == MPI_REQUEST_NULL, "wait after get_status");
        ok!(MPI_Request_get_status(MPI_REQUEST_NULL, &mut flag, &mut st));
        check!(flag == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE, "get_status of MPI_REQUEST_NULL");
        // Never sent: cancelled.
        ok!(MPI_Irecv(v.as_mut_ptr().cast(), 1, MPI_INT, 0, 50, W, &mut r));
        ok!(MPI_Cancel(&mut r));
        ok!(MPI_Wait(&mut r, &mut st));
        let mut c = -1;
        ok!(MPI_Test_cancelled(&st, &mut c));
        check!(c == 1, "cancelled receive");
        // Received normally: not cancelled.
        ok!(MPI_Irecv(v.as_mut_ptr().cast(), 1, MPI_INT, 0, 6, W, &mut r));
        ok!(MPI_Wait(&mut r, &mut st));
        ok!(MPI_Test_cancelled(&st, &mut c));
        check!(c == 0 && v == [6], "a received message is not cancelled");
        // A persistent receive cancelled, then started again.
        let mut p = MPI_REQUEST_NULL;
        ok!(MPI_Recv_init(v.as_mut_ptr().cast(), 1, MPI_INT, 0, 51, W, &mut p));
        ok!(MPI_Start(&mut p));
        ok!(MPI_Cancel(&mut p));
        ok!(MPI_Wait(&mut p, &mut st));
        ok!(MPI_Test_cancelled(&st, &mut c));
        check!(c == 1 && p != MPI_REQUEST_NULL, "cancelled persistent receive");
        ok!(MPI_Request_free(&mut p));
    }
    // A send to itself that was matched cannot be cancelled.
    let mut r = MPI_REQUEST_NULL;
    let mut v = [0 as c_int];
    ok!(MPI_Isend([8 as c_int].as_ptr().cast(), 1, MPI_INT, me, 7, W, &mut r));
    ok!(MPI_Recv(v.as_mut_ptr().cast(), 1, MPI_INT, me, 7, W, IGNORE));
    ok!(MPI_Cancel(&mut r));
    let mut st = status();
    ok!(MPI_Wait(&mut r, &mut st));
    let mut c = -1;
    ok!(MPI_Test_cancelled(&st, &mut c));
    check!(c == 0 && v == [8], "a delivered send is not cancelled");
}

/// Element counts: a pair type holds two basic elements; set_elements makes a status say so.
fn elements() {
    let pairs = [[1 as c_int, 2]; 3];
    let mut got = [[0 as c_int; 2]; 3];
    let me = crate::rank();
    let mut st = status();
    ok!(MPI_Sendrecv(
        pairs.as_ptr().cast(),
        3,
        MPI_2INT,
        me,
        1,
        got.as_mut_ptr().cast(),
        3,
        MPI_2INT,
        me,
        1,
        W,
        &mut st
    ));
    let (mut n, mut x) = (0, 0 as MPI_Count);
    ok!(MPI_Get_count(&st, MPI_2INT, &mut n));
    check!(n == 3, "count of MPI_2INT {n}");
    ok!(MPI_Get_elements(&st, MPI_2INT, &mut n));
    check!(n == 6, "elements of MPI_2INT {n}");
    ok!(MPI_Get_elements_x(&st, MPI_INT, &mut x));
    check!(x == 6, "elements of MPI_INT {x}");
    ok!(MPI_Get_elements_c(&st, MPI_LONG_DOUBLE, &mut x));
    check!(x == MPI_UNDEFINED as MPI_Count, "24 bytes are no whole number of MPI_LONG_DOUBLE elements: {x}");
    ok!(MPI_Status_set_elements(&mut st, MPI_INT, 5));
    check!(count(&st) == 5, "set_elements(MPI_INT, 5)");
    ok!(MPI_Status_set_elements_x(&mut st, MPI_2INT, 3));
    ok!(MPI_Get_count(&st, MPI_2INT, &mut n));
    check!(n == MPI_UNDEFINED, "three basic elements are no whole MPI_2INT: {n}");
    ok!(MPI_Get_elements(&st, MPI_2INT, &mut n));
    check!(n == 3, "elements after set_elements_x {n}");
    ok!(MPI_Status_set_elements_c(&mut st, MPI_DOUBLE, 7));
    ok!(MPI_Get_elements_x(&st, MPI_DOUBLE, &mut x));
    check!(x == 7, "set_elements_c");
    let mut c = -1;
    ok!(MPI_Status_set_cancelled(&mut st, 1));
    ok!(MPI_Test_cancelled(&st, &mut c));
    check!(c == 1, "set_cancelled(1)");
    ok!(MPI_Status_set_cancelled(&mut st, 0));
    ok!(MPI_Test_cancelled(&st, &mut c));
    check!(c == 0, "set_cancelled(0)");
}
