//! Point-to-point conformance through `weft-run`: ring 0 B..64 MiB, wildcard stress with the
//! non-overtaking check, randomized eager/rendezvous mixes, probe, waitany/testall, dup/split.

mod common;
use common::*;

fn suite(n: u32, envs: &[(&str, &str)]) {
    let out = weft_job(n, &example("p2p_suite"), &[], envs, 120);
    let (so, se) = text(&out);
    assert!(out.status.success(), "p2p_suite -n {n} failed\nstdout:\n{so}\nstderr:\n{se}");
    for r in 0..n {
        assert!(so.contains(&format!("p2p_suite: rank {r} OK")), "rank {r} did not report OK:\n{so}");
    }
    if n > 1 {
        assert!(so.contains("transport to next shm"), "intra-node traffic did not use shm:\n{so}");
    }
}

#[test]
fn four_ranks() {
    suite(4, &[]);
}

#[test]
fn one_and_two_ranks() {
    suite(1, &[]);
    suite(2, &[]);
}

#[test]
fn random_seeds_small_rings() {
    // Tiny rings and eager limit force flow control and rendezvous on most messages.
    for seed in ["1", "77", "4242"] {
        suite(
            3,
            &[
                ("P2P_SEED", seed),
                ("P2P_PER", "40"),
                ("WEFT_SHM_BUDGET", "32768"),
                ("WEFT_SHM_RING_MAX", "16384"),
                ("WEFT_EAGER_LIMIT", "1024"),
            ],
        );
    }
}
