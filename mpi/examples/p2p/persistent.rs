//! Persistent requests: every init function, start and startall, inactive requests in wait
//! and test, and `MPI_Request_free` on inactive, active persistent and active plain requests.

use std::ffi::{c_int, c_void};

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::{count, status, IGNORE};

const W: MPI_Comm = MPI_COMM_WORLD;

pub fn run(me: c_int) {
    repeated(me);
    modes(me);
    free_active(me);
}

/// A persistent send/receive pair started five times; the handles survive each wait, and an
/// inactive request completes at once with the empty status.
fn repeated(me: c_int) {
    let mut buf = [0 as c_int; 4];
    let mut r = MPI_REQUEST_NULL;
    if me == 0 {
        ok!(MPI_Send_init(buf.as_ptr().cast(), 4, MPI_INT, 1, 3, W, &mut r));
    } else {
        ok!(MPI_Recv_init(buf.as_mut_ptr().cast(), 4, MPI_INT, 0, 3, W, &mut r));
        // Inactive: wait returns the empty status and keeps the handle.
        let mut st = status();
        let h = r;
        ok!(MPI_Wait(&mut r, &mut st));
        check!(r == h, "wait on an inactive request changed the handle");
        check!(
            st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG && count(&st) == 0,
            "empty status"
        );
        let mut flag = 0;
        ok!(MPI_Test(&mut r, &mut flag, &mut st));
        check!(flag == 1 && r == h, "test on an inactive request");
    }
    for i in 0..5 {
        if me == 0 {
            buf = [i, i + 1, i + 2, i + 3];
        }
        let h = r;
        ok!(MPI_Start(&mut r));
        // Started twice: the request is active.
        fails!(MPI_ERR_REQUEST, MPI_Start(&mut r));
        let mut st = status();
        ok!(MPI_Wait(&mut r, &mut st));
        check!(r == h, "wait freed a persistent request");
        if me == 1 {
            check!(
                buf == [i, i + 1, i + 2, i + 3] && st.MPI_SOURCE == 0 && count(&st) == 4,
                "round {i}: {buf:?}"
            );
        }
    }
    ok!(MPI_Request_free(&mut r));
    check!(r == MPI_REQUEST_NULL, "free sets the handle to null");
    // A plain request is not startable.
    if me == 0 {
        ok!(MPI_Isend(buf.as_ptr().cast(), 1, MPI_INT, 1, 4, W, &mut r));
        let h = r;
        fails!(MPI_ERR_REQUEST, MPI_Start(&mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
        // Freed: its old handle is rejected.
        let mut stale = h;
        fails!(MPI_ERR_REQUEST, MPI_Start(&mut stale));
    } else {
        ok!(MPI_Recv(buf.as_mut_ptr().cast(), 1, MPI_INT, 0, 4, W, IGNORE));
    }
}

/// The synchronous, buffered and ready persistent sends (and the large-count inits), started
/// together with `MPI_Startall`; a receive from `MPI_PROC_NULL` completes at once.
fn modes(me: c_int) {
    let data: Vec<c_int> = (0..8).collect();
    let mut pool = vec![0u8; 4 * (64 + MPI_BSEND_OVERHEAD as usize)];
    if me == 0 {
        ok!(MPI_Buffer_attach(pool.as_mut_ptr().cast(), pool.len() as c_int));
        let mut rs = [MPI_REQUEST_NULL; 6];
        ok!(MPI_Ssend_init(data.as_ptr().cast(), 8, MPI_INT, 1, 1, W, &mut rs[0]));
        ok!(MPI_Bsend_init(data.as_ptr().cast(), 8, MPI_INT, 1, 2, W, &mut rs[1]));
        ok!(MPI_Rsend_init(data.as_ptr().cast(), 8, MPI_INT, 1, 3, W, &mut rs[2]));
        ok!(MPI_Send_init_c(data.as_ptr().cast(), 8, MPI_INT, 1, 4, W, &mut rs[3]));
        ok!(MPI_Ssend_init_c(data.as_ptr().cast(), 8, MPI_INT, 1, 5, W, &mut rs[4]));
        ok!(MPI_Bsend_init_c(data.as_ptr().cast(), 8, MPI_INT, 1, 6, W, &mut rs[5]));
        for _ in 0..2 {
            ok!(MPI_Barrier(W)); // the receives are posted (ready mode needs them)
            ok!(MPI_Startall(6, rs.as_mut_ptr()));
            ok!(MPI_Waitall(6, rs.as_mut_ptr(), std::ptr::null_mut()));
            check!(rs.iter().all(|&r| r != MPI_REQUEST_NULL), "waitall freed persistent requests");
        }
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Rsend_init_c(data.as_ptr().cast(), 8, MPI_INT, MPI_PROC_NULL, 7, W, &mut r));
        ok!(MPI_Start(&mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
        ok!(MPI_Request_free(&mut r));
        for r in rs.iter_mut() {
            ok!(MPI_Request_free(r));
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size = 0;
        ok!(MPI_Buffer_detach((&mut addr as *mut *mut c_void).cast(), &mut size));
    } else {
        let mut got = [[0 as c_int; 8]; 6];
        let mut rs = [MPI_REQUEST_NULL; 6];
        for (i, g) in got.iter_mut().enumerate() {
            if i % 2 == 0 {
                ok!(MPI_Recv_init(g.as_mut_ptr().cast(), 8, MPI_INT, 0, i as c_int + 1, W, &mut rs[i]));
            } else {
                ok!(MPI_Recv_init_c(g.as_mut_ptr().cast(), 8, MPI_INT, 0, i as c_int + 1, W, &mut rs[i]));
            }
        }
        for round in 0..2 {
            for g in got.iter_mut() {
                g.fill(-1);
            }
            ok!(MPI_Startall(6, rs.as_mut_ptr()));
            ok!(MPI_Barrier(W));
            let mut sts = [status(); 6];
            ok!(MPI_Waitall(6, rs.as_mut_ptr(), sts.as_mut_ptr()));
            for (i, g) in got.iter().enumerate() {
                check!(
                    g[..] == data[..] && sts[i].MPI_TAG == i as c_int + 1,
                    "round {round}, request {i}: {g:?}"
                );
            }
        }
        let mut r = MPI_REQUEST_NULL;
        let mut st = status();
        ok!(MPI_Recv_init(got[0].as_mut_ptr().cast(), 8, MPI_INT, MPI_PROC_NULL, 7, W, &mut r));
        ok!(MPI_Start(&mut r));
        ok!(MPI_Wait(&mut r, &mut st));
        check!(st.MPI_SOURCE == MPI_PROC_NULL && count(&st) == 0, "persistent receive from MPI_PROC_NULL");
        ok!(MPI_Request_free(&mut r));
        for r in rs.iter_mut() {
            ok!(MPI_Request_free(r));
        }
    }
}

/// A request freed while active still completes: the message it matched is consumed (a
/// later receive gets the next one) and its data lands in its buffer.
fn free_active(me: c_int) {
    if me == 0 {
        for v in 1..=4 as c_int {
            ok!(MPI_Send([v].as_ptr().cast(), 1, MPI_INT, 1, 9, W));
        }
    } else {
        let (mut a, mut b) = ([0 as c_int], [0 as c_int]);
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Irecv(a.as_mut_ptr().cast(), 1, MPI_INT, 0, 9, W, &mut r));
        ok!(MPI_Request_free(&mut r));
        check!(r == MPI_REQUEST_NULL, "free of an active request sets the handle to null");
        let mut p = MPI_REQUEST_NULL;
        ok!(MPI_Recv_init(b.as_mut_ptr().cast(), 1, MPI_INT, 0, 9, W, &mut p));
        ok!(MPI_Start(&mut p));
        ok!(MPI_Request_free(&mut p));
        let mut c = [0 as c_int];
        ok!(MPI_Recv(c.as_mut_ptr().cast(), 1, MPI_INT, 0, 9, W, IGNORE));
        check!(c == [3], "the freed receives took messages 1 and 2, got {c:?}");
        let mut d = [0 as c_int];
        let mut q = MPI_REQUEST_NULL;
        ok!(MPI_Irecv(d.as_mut_ptr().cast(), 1, MPI_INT, 0, 9, W, &mut q));
        ok!(MPI_Wait(&mut q, IGNORE));
        check!(d == [4] && a == [1] && b == [2], "freed receives' buffers: {a:?} {b:?}, then {d:?}");
    }
}
