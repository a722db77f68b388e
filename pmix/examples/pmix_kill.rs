//! Termination-event experiment for the PMIx client backend:
//! `mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 target/debug/examples/pmix_kill [VICTIM] [SECS]`
//!
//! After a fence, rank VICTIM (default 1) sends itself SIGKILL; every other rank polls
//! `poll_terminated` for up to SECS seconds (default 10) and prints what it saw:
//! `rank R saw terminated [..] after N ms` or `rank R saw no termination event`.
//! Survivors exit 0 either way: this program observes, the launcher decides what happens.

use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let victim: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let mut rt = weft_pmix::from_env().unwrap_or_else(|e| {
        println!("init failed: {e}");
        std::process::exit(1);
    });
    let rank = rt.rank();
    println!("rank {rank}/{} backend={} pid={}", rt.size(), rt.backend(), std::process::id());
    rt.fence().expect("fence");
    if rank == victim {
        println!("rank {rank} killing itself with SIGKILL");
        nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::SIGKILL).ok();
        unreachable!("SIGKILL did not kill us");
    }
    let t0 = Instant::now();
    let mut dead = Vec::new();
    while t0.elapsed() < Duration::from_secs(secs) {
        rt.poll_terminated(&mut dead);
        if !dead.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if dead.is_empty() {
        println!("rank {rank} saw no termination event in {secs} s");
    } else {
        println!("rank {rank} saw terminated {dead:?} after {} ms", t0.elapsed().as_millis());
    }
    rt.finalize().ok();
}
