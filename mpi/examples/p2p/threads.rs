//! `MPI_THREAD_MULTIPLE`: four threads per rank, each on its own duplicate of the world,
//! ping-pong 1000 times at once; rank 1 receives with `MPI_ANY_SOURCE` (and every tenth time
//! `MPI_ANY_TAG`), and the threads mix blocking, non-blocking and matched-probe
//! receives, and standard, synchronous, buffered (one shared attached buffer) and
//! non-blocking sends, so every blocking path must release the lock while it waits.

use std::ffi::c_int;

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::{status, IGNORE};

const THREADS: usize = 4;
const ITERS: c_int = 1000;

pub fn run(me: c_int) {
    let mut comms = [MPI_COMM_NULL; THREADS];
    for c in comms.iter_mut() {
        ok!(MPI_Comm_dup(MPI_COMM_WORLD, c));
        ok!(MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN));
    }
    // Room for every thread's buffered send at once.
    let mut pool = vec![0u8; THREADS * (4 + MPI_BSEND_OVERHEAD as usize)];
    ok!(MPI_Buffer_attach(pool.as_mut_ptr().cast(), pool.len() as c_int));
    let hs: Vec<_> = comms
        .iter()
        .enumerate()
        .map(|(t, &comm)| std::thread::spawn(move || worker(me, t as c_int, comm)))
        .collect();
    for h in hs {
        check!(h.join().is_ok(), "a thread panicked");
    }
    for c in comms.iter_mut() {
        ok!(MPI_Comm_free(c));
    }
    let (mut addr, mut size) = (std::ptr::null_mut::<std::ffi::c_void>(), 0);
    ok!(MPI_Buffer_detach((&mut addr as *mut *mut std::ffi::c_void).cast(), &mut size));
}

fn worker(me: c_int, t: c_int, comm: MPI_Comm) {
    for i in 0..ITERS {
        let v = [t * 1_000_000 + i];
        let mut got = [-1 as c_int];
        let mut st = status();
        if me == 0 {
            match i % 4 {
                0 => ok!(MPI_Send(v.as_ptr().cast(), 1, MPI_INT, 1, i, comm)),
                1 => ok!(MPI_Ssend(v.as_ptr().cast(), 1, MPI_INT, 1, i, comm)),
                3 => ok!(MPI_Bsend(v.as_ptr().cast(), 1, MPI_INT, 1, i, comm)),
                _ => {
                    let mut r = MPI_REQUEST_NULL;
                    ok!(MPI_Isend(v.as_ptr().cast(), 1, MPI_INT, 1, i, comm, &mut r));
                    ok!(MPI_Wait(&mut r, IGNORE));
                }
            }
            ok!(MPI_Recv(got.as_mut_ptr().cast(), 1, MPI_INT, 1, i, comm, &mut st));
            check!(got == [v[0] + 1], "thread {t}, iteration {i}: reply {got:?}");
        } else {
            let tag = if i % 10 == 0 { MPI_ANY_TAG } else { i };
            match i % 3 {
                0 => ok!(MPI_Recv(got.as_mut_ptr().cast(), 1, MPI_INT, MPI_ANY_SOURCE, tag, comm, &mut st)),
                1 => {
                    let mut r = MPI_REQUEST_NULL;
                    ok!(MPI_Irecv(got.as_mut_ptr().cast(), 1, MPI_INT, MPI_ANY_SOURCE, tag, comm, &mut r));
                    let mut idx = -1;
                    ok!(MPI_Waitany(1, &mut r, &mut idx, &mut st));
                }
                _ => {
                    let mut m = MPI_MESSAGE_NULL;
                    ok!(MPI_Mprobe(MPI_ANY_SOURCE, tag, comm, &mut m, IGNORE));
                    ok!(MPI_Mrecv(got.as_mut_ptr().cast(), 1, MPI_INT, &mut m, &mut st));
                }
            }
            check!(
                got == v && st.MPI_SOURCE == 0 && st.MPI_TAG == i,
                "thread {t}, iteration {i}: got {got:?} tag {}",
                st.MPI_TAG
            );
            let reply = [got[0] + 1];
            ok!(MPI_Send(reply.as_ptr().cast(), 1, MPI_INT, 0, i, comm));
        }
    }
}
