//! Every send mode: synchronous (completes only after the match), buffered (attach, room,
//! detach), ready, their non-blocking and large-count forms, and `MPI_Sendrecv_replace`.

use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::{count, status, IGNORE};

const W: MPI_Comm = MPI_COMM_WORLD;

pub fn run(me: c_int) {
    synchronous(me);
    buffered(me);
    ready(me);
    large_count(me);
    replace(me);
}

/// An `MPI_Issend` stays pending until the receiver posts its receive, for an eager-sized and
/// a rendezvous-sized message; to itself it completes with the matching receive.
fn synchronous(me: c_int) {
    for n in [4usize, 40_000] {
        let data: Vec<c_int> = (0..n as c_int).collect();
        if me == 0 {
            let mut r = MPI_REQUEST_NULL;
            ok!(MPI_Issend(data.as_ptr().cast(), n as c_int, MPI_INT, 1, 1, W, &mut r));
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(100) {
                let mut flag = 0;
                ok!(MPI_Test(&mut r, &mut flag, IGNORE));
                check!(flag == 0, "MPI_Issend of {n} ints completed before the receiver posted its receive");
            }
            ok!(MPI_Send([0 as c_int].as_ptr().cast(), 1, MPI_INT, 1, 2, W));
            ok!(MPI_Wait(&mut r, IGNORE));
            check!(r == MPI_REQUEST_NULL, "wait left the request");
            // Blocking form, and a synchronous send to itself.
            ok!(MPI_Ssend(data.as_ptr().cast(), n as c_int, MPI_INT, 1, 3, W));
            let mut back = vec![0 as c_int; n];
            ok!(MPI_Issend(data.as_ptr().cast(), n as c_int, MPI_INT, 0, 4, W, &mut r));
            let mut st = status();
            ok!(MPI_Recv(back.as_mut_ptr().cast(), n as c_int, MPI_INT, 0, 4, W, &mut st));
            ok!(MPI_Wait(&mut r, IGNORE));
            check!(back == data && count(&st) == n as c_int, "self ssend data");
        } else {
            let mut got = vec![0 as c_int; n];
            ok!(MPI_Recv(got.as_mut_ptr().cast(), 1, MPI_INT, 0, 2, W, IGNORE));
            let mut st = status();
            ok!(MPI_Recv(got.as_mut_ptr().cast(), n as c_int, MPI_INT, 0, 1, W, &mut st));
            check!(got == data && count(&st) == n as c_int && st.MPI_TAG == 1, "issend data");
            got.fill(0);
            ok!(MPI_Recv(got.as_mut_ptr().cast(), n as c_int, MPI_INT, 0, 3, W, IGNORE));
            check!(got == data, "ssend data");
        }
        ok!(MPI_Barrier(W));
    }
}

/// Buffered sends complete at once and take room from the attached buffer until their data
/// has left it: a rendezvous-sized one holds its room until the receiver took it, so a second
/// send finds no room (`MPI_ERR_BUFFER`); detach waits for the sends and hands the buffer back.
fn buffered(me: c_int) {
    let big = 1 << 16;
    let data: Vec<c_int> = (0..big).map(|i| i * 3).collect();
    if me == 0 {
        fails!(MPI_ERR_BUFFER, MPI_Bsend(data.as_ptr().cast(), 1, MPI_INT, 1, 5, W));
        let size = big as usize * 4 + MPI_BSEND_OVERHEAD as usize;
        let mut pool = vec![0u8; size];
        ok!(MPI_Buffer_attach(pool.as_mut_ptr().cast(), size as c_int));
        fails!(MPI_ERR_BUFFER, MPI_Buffer_attach(pool.as_mut_ptr().cast(), size as c_int));
        ok!(MPI_Bsend(data.as_ptr().cast(), big, MPI_INT, 1, 5, W));
        // The receiver has not taken it (it waits at the barrier below): no room left.
        fails!(MPI_ERR_BUFFER, MPI_Bsend(data.as_ptr().cast(), 1, MPI_INT, 1, 6, W));
        ok!(MPI_Bsend(data.as_ptr().cast(), 0, MPI_INT, MPI_PROC_NULL, 7, W));
        ok!(MPI_Barrier(W));
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut got_size = 0;
        ok!(MPI_Buffer_detach((&mut addr as *mut *mut c_void).cast(), &mut got_size));
        check!(
            addr == pool.as_mut_ptr().cast() && got_size == size as c_int,
            "detach returns the attached buffer"
        );
        // Nothing attached: detach gives null and 0.
        ok!(MPI_Buffer_detach((&mut addr as *mut *mut c_void).cast(), &mut got_size));
        check!(addr.is_null() && got_size == 0, "detach with nothing attached");
        // Non-blocking and large-count forms.
        ok!(MPI_Buffer_attach_c(pool.as_mut_ptr().cast(), size as MPI_Count));
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Ibsend(data.as_ptr().cast(), 100, MPI_INT, 1, 6, W, &mut r));
        let mut flag = 0;
        ok!(MPI_Test(&mut r, &mut flag, IGNORE));
        check!(flag == 1 && r == MPI_REQUEST_NULL, "an MPI_Ibsend request completes at once");
        ok!(MPI_Bsend_c(data.as_ptr().cast(), 100, MPI_INT, 1, 8, W));
        ok!(MPI_Ibsend_c(data.as_ptr().cast(), 100, MPI_INT, 1, 9, W, &mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
        let mut n: MPI_Count = 0;
        ok!(MPI_Buffer_detach_c((&mut addr as *mut *mut c_void).cast(), &mut n));
        check!(n == size as MPI_Count, "detach_c size");
    } else {
        ok!(MPI_Barrier(W));
        for (tag, n) in [(5, big), (6, 100), (8, 100), (9, 100)] {
            let mut got = vec![0 as c_int; n as usize];
            ok!(MPI_Recv(got.as_mut_ptr().cast(), n, MPI_INT, 0, tag, W, IGNORE));
            check!(got[..] == data[..n as usize], "bsend data, tag {tag}");
        }
    }
    ok!(MPI_Barrier(W));
}

/// Ready sends, blocking and not, to receives posted before (a barrier orders them).
fn ready(me: c_int) {
    let v: [c_int; 2] = [41, 42];
    if me == 0 {
        ok!(MPI_Barrier(W));
        ok!(MPI_Rsend(v.as_ptr().cast(), 1, MPI_INT, 1, 10, W));
        let mut r = MPI_REQUEST_NULL;
        ok!(MPI_Irsend(v[1..].as_ptr().cast(), 1, MPI_INT, 1, 11, W, &mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
        ok!(MPI_Rsend_c(v.as_ptr().cast(), 2, MPI_INT, 1, 12, W));
        ok!(MPI_Irsend_c(v.as_ptr().cast(), 2, MPI_INT, 1, 13, W, &mut r));
        ok!(MPI_Wait(&mut r, IGNORE));
    } else {
        let mut got = [[0 as c_int; 2]; 4];
        let mut rs = [MPI_REQUEST_NULL; 4];
        for (i, g) in got.iter_mut().enumerate() {
            ok!(MPI_Irecv(g.as_mut_ptr().cast(), 2, MPI_INT, 0, 10 + i as c_int, W, &mut rs[i]));
        }
        ok!(MPI_Barrier(W));
        ok!(MPI_Waitall(4, rs.as_mut_ptr(), null_statuses()));
        check!(got == [[41, 0], [42, 0], [41, 42], [41, 42]], "rsend data {got:?}");
    }
}

/// The large-count forms of the standard and synchronous sends and receives.
fn large_count(me: c_int) {
    let data: Vec<c_int> = (0..10).collect();
    if me == 0 {
        ok!(MPI_Send_c(data.as_ptr().cast(), 10, MPI_INT, 1, 20, W));
        ok!(MPI_Ssend_c(data.as_ptr().cast(), 10, MPI_INT, 1, 21, W));
        let mut rs = [MPI_REQUEST_NULL; 2];
        ok!(MPI_Isend_c(data.as_ptr().cast(), 10, MPI_INT, 1, 22, W, &mut rs[0]));
        ok!(MPI_Issend_c(data.as_ptr().cast(), 10, MPI_INT, 1, 23, W, &mut rs[1]));
        ok!(MPI_Waitall(2, rs.as_mut_ptr(), null_statuses()));
    } else {
        for tag in 20..24 {
            let mut got = vec![0 as c_int; 10];
            let mut st = status();
            if tag % 2 == 0 {
                ok!(MPI_Recv_c(got.as_mut_ptr().cast(), 10, MPI_INT, 0, tag, W, &mut st));
            } else {
                let mut r = MPI_REQUEST_NULL;
                ok!(MPI_Irecv_c(got.as_mut_ptr().cast(), 10, MPI_INT, 0, tag, W, &mut r));
                ok!(MPI_Wait(&mut r, &mut st));
            }
            let mut n: MPI_Count = -1;
            ok!(MPI_Get_count_c(&st, MPI_INT, &mut n));
            check!(got == data && n == 10, "large-count data, tag {tag}");
        }
    }
}

/// `MPI_Sendrecv_replace`: each rank's buffer ends up with the other's data.
fn replace(me: c_int) {
    let other = 1 - me;
    let mut buf: Vec<c_int> = (0..1000).map(|i| i + me * 10_000).collect();
    let mut st = status();
    ok!(MPI_Sendrecv_replace(buf.as_mut_ptr().cast(), 1000, MPI_INT, other, 30, other, 30, W, &mut st));
    check!(buf.iter().enumerate().all(|(i, &v)| v == i as c_int + other * 10_000), "replaced data");
    check!(st.MPI_SOURCE == other && count(&st) == 1000, "replace status");
    ok!(MPI_Sendrecv_replace(
        buf.as_mut_ptr().cast(),
        1000,
        MPI_INT,
        MPI_PROC_NULL,
        30,
        MPI_PROC_NULL,
        30,
        W,
        &mut st
    ));
    check!(st.MPI_SOURCE == MPI_PROC_NULL, "replace with MPI_PROC_NULL");
}

/// `MPI_STATUSES_IGNORE`.
fn null_statuses() -> *mut MPI_Status {
    std::ptr::null_mut()
}
