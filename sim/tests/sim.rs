//! Random-seed simulation tests of the FT protocols and the gossip consensus under `weft-sim`.
//!
//! Each test runs many seeds; the seed fixes N (mostly small, some up to 2^14), the failure
//! mode and count, the network model variation and the whole schedule. A violation panics
//! with the seed and the `weft-sim` replay command. `WEFT_SIM_SEEDS=k` multiplies the number
//! of seeds by k (CI runs k = 1: about a minute in the debug profile on 2 cores).

use std::time::Instant;

use weft_sim::{fuzz_n, run, Config, Mode, Proto};

fn scale() -> u64 {
    std::env::var("WEFT_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}

/// `seeds` random runs of `proto` with N from [`fuzz_n`] (≤ 2^max_log), then `big` runs at
/// exactly 2^14 ranks.
fn fuzz(proto: Proto, seeds: u64, max_log: u32, big: u64) {
    let t = Instant::now();
    let base = 0x5eed_0000 + proto as u64 * 1_000_000;
    let k = scale();
    for s in base..base + seeds * k {
        let n = fuzz_n(s, max_log);
        if let Err(v) = run(&Config::random(proto, n, s)) {
            panic!("{v}");
        }
    }
    for s in 0..big * k {
        let seed = base + 900_000 + s;
        let (mode, f) = weft_sim::random_mode(proto, 1 << 14, seed);
        let mode = if mode == Mode::None { Mode::During } else { mode };
        if let Err(v) = run(&Config::new(proto, 1 << 14, seed, mode, f.max(1))) {
            panic!("{v}");
        }
    }
    eprintln!(
        "{}: {} seeds + {} at 2^14 in {:.2}s",
        proto.name(),
        seeds * k,
        big * k,
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn era_random_seeds() {
    fuzz(Proto::Era, 1500, 12, 3);
}

#[test]
fn shrink_random_seeds() {
    fuzz(Proto::Shrink, 500, 11, 1);
}

#[test]
fn revoke_random_seeds() {
    fuzz(Proto::Revoke, 1000, 12, 3);
}

#[test]
fn detector_random_seeds() {
    fuzz(Proto::Detector, 200, 10, 1);
}

#[test]
fn gossip_random_seeds() {
    fuzz(Proto::GossipHfl, 300, 10, 0);
    fuzz(Proto::Gossip3p, 300, 10, 0);
    fuzz(Proto::GossipFm, 200, 10, 0);
}

#[test]
fn same_seed_same_trace() {
    for proto in Proto::ALL {
        for seed in [1u64, 0xdead_beef] {
            let c = Config::new(proto, 1000, seed, Mode::During, 5);
            let a = run(&c).unwrap_or_else(|v| panic!("{v}"));
            let b = run(&c).unwrap_or_else(|v| panic!("{v}"));
            assert_eq!(a.trace, b.trace, "{} seed {seed}: replay differs", proto.name());
            assert_eq!(a.events, b.events);
            let other =
                run(&Config::new(proto, 1000, seed + 1, Mode::During, 5)).unwrap_or_else(|v| panic!("{v}"));
            assert_ne!(a.trace, other.trace, "{}: the seed does not matter?", proto.name());
        }
    }
}

#[test]
fn failure_free_era_is_two_log_n_rounds() {
    for lg in [4u32, 8, 12] {
        let mut c = Config::new(Proto::Era, 1 << lg, 7, Mode::None, 0);
        c.skew = 0;
        // The tree alone (Config::new draws the fast path at random from the seed).
        c.fast_path = false;
        let r = run(&c).unwrap_or_else(|v| panic!("{v}"));
        // Up the tree and back down: 2·(depth) rounds, n−1 messages each way.
        assert_eq!(r.rounds as u32, 2 * lg, "2^{lg}: {r}");
        assert!((r.msgs_mean - 2.0 * ((1u64 << lg) - 1) as f64 / (1u64 << lg) as f64).abs() < 1e-9);
    }
}

#[test]
fn failure_free_fast_path_is_log_n_rounds() {
    for lg in [4u32, 8, 12] {
        let mut c = Config::new(Proto::Era, 1 << lg, 7, Mode::None, 0);
        c.skew = 0;
        c.fast_path = true;
        let r = run(&c).unwrap_or_else(|v| panic!("{v}"));
        // Recursive doubling: log₂ n exchanges, one message per member in each. (The causal
        // depth counts a message when it arrives, so one that arrives a step early adds to a
        // few members' depth: the mean is the measure.)
        let lgf = lg as f64;
        assert!(r.rounds_mean >= lgf && r.rounds_mean < lgf + 0.25, "2^{lg}: {r}");
        assert!((r.msgs_mean - lg as f64).abs() < 1e-9, "{r}");
    }
}

#[test]
fn gossip_reached_is_independent_of_the_margin() {
    for proto in [Proto::GossipHfl, Proto::GossipFm, Proto::Gossip3p] {
        for seed in 1..6 {
            let c = Config::new(proto, 512, seed, Mode::Before, 2);
            let a = run(&c).unwrap_or_else(|v| panic!("{v}"));
            let reached = a.reached.expect("consensus reached");
            // The decision waits for the margin; consensus was reached before it.
            assert!(reached <= a.rounds, "{a}");
            let mut c0 = c.clone();
            c0.gossip_min_cycles = Some(0);
            let b = run(&c0).unwrap_or_else(|v| panic!("margin 0 is measured, not checked: {v}"));
            assert_eq!(b.reached, a.reached, "{}: the margin changed the gossip: {a} / {b}", proto.name());
            assert_eq!(b.reached_mean, a.reached_mean);
            assert!(b.rounds <= a.rounds);
        }
    }
}
