//! 8-byte ping-pong latency at the thread level the job was started with (`single` or
//! `multiple`): five runs of `iters` round trips; rank 0 prints each run's one-way latency
//! and their median.

use std::ffi::c_int;

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::IGNORE;

pub fn run(me: c_int, iters: usize) {
    let w = MPI_COMM_WORLD;
    let mut buf = [0u8; 8];
    let mut runs = Vec::new();
    for _ in 0..5 {
        ok!(MPI_Barrier(w));
        let t0 = std::time::Instant::now();
        for _ in 0..iters {
            if me == 0 {
                ok!(MPI_Send(buf.as_ptr().cast(), 8, MPI_BYTE, 1, 0, w));
                ok!(MPI_Recv(buf.as_mut_ptr().cast(), 8, MPI_BYTE, 1, 0, w, IGNORE));
            } else {
                ok!(MPI_Recv(buf.as_mut_ptr().cast(), 8, MPI_BYTE, 0, 0, w, IGNORE));
                ok!(MPI_Send(buf.as_ptr().cast(), 8, MPI_BYTE, 0, 0, w));
            }
        }
        runs.push(t0.elapsed().as_secs_f64() * 1e6 / (2 * iters) as f64);
    }
    if me == 0 {
        let mut level = -1;
        ok!(MPI_Query_thread(&mut level));
        let name = if level == MPI_THREAD_MULTIPLE { "multiple" } else { "single" };
        let shown: Vec<String> = runs.iter().map(|r| format!("{r:.3}")).collect();
        runs.sort_by(f64::total_cmp);
        println!("latency {name}: 8 B one-way {:.3} us median of runs [{}]", runs[2], shown.join(", "));
    }
}
