//! Random-seed tests of the DGRP diagnosis under `weft-sim`: slowdowns (slow, mildly slow and
//! frozen processes) and crashes; every invariant of `weft_sim::dgrp` is checked in every run.
//! A violation panics with the seed and the `weft-sim dgrp` replay command.
//! `WEFT_SIM_SEEDS=k` multiplies the number of seeds by k.

use std::time::Instant;

use weft_sim::dgrp::{latency_row, run_dgrp, DgrpConfig};

fn scale() -> u64 {
    std::env::var("WEFT_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}

/// N for seed `s`: mostly 2..=16, some up to 48.
fn n_of(s: u64) -> u32 {
    let h = weft_sim::mix(s);
    if h.is_multiple_of(10) {
        17 + (h >> 8) as u32 % 32
    } else {
        2 + (h >> 8) as u32 % 15
    }
}

#[test]
fn dgrp_random_seeds_hold_every_invariant() {
    let t = Instant::now();
    let seeds = 2000 * scale();
    let (mut removals, mut rejoins, mut barriers) = (0u64, 0usize, 0u32);
    for s in 0..seeds {
        let seed = 0xd9_0000 + s;
        let c = DgrpConfig::random(n_of(seed), seed);
        match run_dgrp(&c) {
            Ok(r) => {
                removals += r.removals;
                rejoins += r.rejoin_rounds.len();
                barriers += r.barriers;
            }
            Err(v) => panic!("{v}"),
        }
    }
    eprintln!(
        "dgrp: {seeds} seeds in {:.2}s: {removals} removals, {rejoins} rejoins, {barriers} barriers",
        t.elapsed().as_secs_f64()
    );
    // The schedules do exercise removal and rejoin (a test that can fail).
    assert!(removals > seeds / 4 && rejoins as u64 > seeds / 8, "{removals} removals, {rejoins} rejoins");
}

#[test]
fn planted_bug_skipping_the_rejoin_agreement_is_caught() {
    let mut caught = 0;
    let tries = 300;
    for s in 0..tries {
        let seed = 0xb0_0000 + s;
        let mut c = DgrpConfig::random(n_of(seed).max(4), seed);
        c.planted = true;
        c.slowed = c.slowed.max(2);
        if let Err(v) = run_dgrp(&c) {
            assert!(v.contains("different views"), "caught by another invariant: {v}");
            caught += 1;
            // The same run without the bug holds.
            c.planted = false;
            if let Err(v) = run_dgrp(&c) {
                panic!("{v}");
            }
        }
    }
    eprintln!("planted bug caught in {caught} of {tries} runs");
    assert!(caught * 4 > tries, "the planted bug was caught in only {caught} of {tries} runs");
}

#[test]
fn same_seed_same_trace() {
    let c = DgrpConfig::random(12, 77);
    let a = run_dgrp(&c).unwrap();
    let b = run_dgrp(&c).unwrap();
    assert_eq!(a.trace, b.trace);
}

#[test]
fn latency_is_a_few_rounds_and_the_slowed_process_rejoins() {
    for log in [4u32, 8] {
        let r = latency_row(1 << log, 3).unwrap();
        assert_eq!(r.removal_rounds.len(), 1, "{r}");
        assert!(r.removal_rounds[0] <= 3, "{r}");
        assert_eq!(r.final_view, Some(1 << log), "the slowed process rejoined: {r}");
    }
}
