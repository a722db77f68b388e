//! DGRP under faults, for `tests/dgrp.rs`, run under `weft-run` with at least 4 ranks:
//! `dgrp_faults [ROUNDS]`. Every rank runs computing rounds (a short busy phase that keeps
//! calling weft, then the round barrier) and prints each barrier's view:
//! `dgrp_faults: rank R round K view [..]`.
//!
//! - Rank 2 is slowed by SIGSTOP bursts at round 4: a helper shell stops it for 1.5 s, lets
//!   it run 0.1 s, stops it 1.5 s again, then leaves it alone.
//! - Rank 3 SIGKILLs itself at round 10.
//!
//! Survivors end with `dgrp_faults: rank R OK` and their counters; any failed call prints
//! `FAILED` and exits 1. The test checks the views (the same at every rank for each round;
//! rank 2 out, then back; rank 3 never back).

use std::process::Command;
use std::time::{Duration, Instant};

use weft::{DgrpOptions, Weft};

const STOP_ROUND: u32 = 4;
const KILL_ROUND: u32 = 10;
const SLOWED: u32 = 2;
const KILLED: u32 = 3;

fn fail(msg: String) -> ! {
    println!("dgrp_faults: FAILED: {msg}");
    std::process::exit(1);
}

fn ok<T>(what: &str, r: weft::Result<T>) -> T {
    r.unwrap_or_else(|e| fail(format!("{what}: {e}")))
}

/// Busy for `d`, calling weft all along (so that this process answers its tests).
fn compute(w: &Weft, d: Duration) {
    let t = Instant::now();
    let mut x = 1u64;
    while t.elapsed() < d {
        for i in 0..2_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        w.progress();
    }
    std::hint::black_box(x);
}

fn signal_self(script: &str) {
    let pid = std::process::id().to_string();
    let script = script.replace("PID", &pid);
    if let Err(e) = Command::new("sh").args(["-c", &script]).spawn() {
        fail(format!("spawning the signal helper: {e}"));
    }
}

fn main() {
    let rounds: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(24);
    let w = ok("init", weft::init());
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    if n < 4 {
        fail(format!("needs at least 4 ranks, got {n}"));
    }
    let opts = DgrpOptions { interval: Duration::from_millis(100), ..DgrpOptions::default() };
    ok("dgrp_start", w.dgrp_start(opts));
    for k in 0..rounds {
        if me == SLOWED && k == STOP_ROUND {
            signal_self("kill -STOP PID; sleep 1.5; kill -CONT PID; sleep 0.1; kill -STOP PID; sleep 1.5; kill -CONT PID");
        }
        if me == KILLED && k == KILL_ROUND {
            signal_self("kill -KILL PID");
            // Wait for the signal; never reach the barrier.
            loop {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        compute(&w, Duration::from_millis(150));
        let view = ok("round barrier", w.dgrp_round_barrier());
        println!("dgrp_faults: rank {me} round {k} view {view:?}");
    }
    let c = ok("counters", w.dgrp_counters());
    ok("dgrp_stop", w.dgrp_stop());
    if w.dgrp_view().is_ok() {
        fail("the view is still available after stop".into());
    }
    println!(
        "dgrp_faults: rank {me} OK tests {} passed {} late {} removals {} own_stalls {} answered {} events {:?}",
        c.stats.tests, c.stats.passed, c.stats.late, c.stats.removals, c.stats.own_stalls, c.stats.answered, c.events
    );
    ok("finalize", w.finalize());
}
