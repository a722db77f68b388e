//! Point-to-point conformance through `weft-run`: ring 0 B..64 MiB, wildcard stress with the
//! non-overtaking check, randomized eager/rendezvous mixes, probe, waitany/testall, dup/split —
//! on one node (shm), across virtual nodes (shm inside a node, libfabric `tcp;ofi_rxm` between
//! nodes), and with shm switched off (everything over libfabric).

mod common;
use common::*;

/// Run the suite; return each rank's `sent [name=count ...]` transport counters.
fn suite(n: u32, launcher: &[&str], envs: &[(&str, &str)]) -> Vec<Vec<(String, u64)>> {
    suite_lines(n, launcher, envs)
        .iter()
        .map(|line| {
            let counts = line.split("sent [").nth(1).unwrap().trim_end_matches(']');
            pairs(counts)
        })
        .collect()
}

/// `name=count` pairs separated by blanks.
fn pairs(s: &str) -> Vec<(String, u64)> {
    s.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// Run the suite; each rank's OK line.
fn suite_lines(n: u32, launcher: &[&str], envs: &[(&str, &str)]) -> Vec<String> {
    let out = weft_job_on(n, launcher, &example("p2p_suite"), &[], envs, 180);
    let (so, se) = text(&out);
    assert!(out.status.success(), "p2p_suite -n {n} {launcher:?} failed\nstdout:\n{so}\nstderr:\n{se}");
    (0..n)
        .map(|r| {
            so.lines()
                .find(|l| l.starts_with(&format!("p2p_suite: rank {r} OK")))
                .unwrap_or_else(|| panic!("rank {r} did not report OK:\n{so}"))
                .to_string()
        })
        .collect()
}

/// Each rank's `received by rendezvous [all=N split=M]` counters.
fn rendezvous(lines: &[String]) -> Vec<(u64, u64)> {
    lines
        .iter()
        .map(|l| {
            let inner = l.split("received by rendezvous [").nth(1).unwrap().split(']').next().unwrap();
            let p = pairs(inner);
            (count(&p, "all"), count(&p, "split"))
        })
        .collect()
}

/// Shared-memory rendezvous at or above `WEFT_SHM_SPLIT_LIMIT` are copied half by the
/// receiver, half by the sender, wildcard receives and the ring's odd sizes included (the
/// suite checks every byte); at 0 none is split.
#[test]
fn split_rendezvous_on_both_sides_and_off() {
    let envs = [("P2P_SEED", "5"), ("WEFT_EAGER_LIMIT", "1024"), ("WEFT_SHM_SPLIT_LIMIT", "8192")];
    for (r, (all, split)) in rendezvous(&suite_lines(3, &[], &envs)).into_iter().enumerate() {
        assert!(split > 0 && split <= all, "rank {r}: {split} split of {all} rendezvous");
    }
    let envs = [("P2P_SEED", "5"), ("WEFT_EAGER_LIMIT", "1024"), ("WEFT_SHM_SPLIT_LIMIT", "0")];
    for (r, (all, split)) in rendezvous(&suite_lines(3, &[], &envs)).into_iter().enumerate() {
        assert!(all > 0 && split == 0, "rank {r}: {split} split of {all} rendezvous");
    }
}

fn count(c: &[(String, u64)], name: &str) -> u64 {
    c.iter().find(|(n, _)| n == name).map_or(0, |x| x.1)
}

#[test]
fn one_node_uses_shm_only() {
    for (r, c) in suite(4, &[], &[]).iter().enumerate() {
        assert!(count(c, "shm") > 0 && count(c, "ofi") == 0, "rank {r}: {c:?}");
    }
}

#[test]
fn one_and_two_ranks() {
    suite(1, &[], &[]);
    suite(2, &[], &[]);
}

#[test]
fn random_seeds_small_rings() {
    // Tiny rings and eager limit force flow control and rendezvous on most messages.
    for seed in ["1", "77", "4242"] {
        let envs = [
            ("P2P_SEED", seed),
            ("P2P_PER", "40"),
            ("WEFT_SHM_BUDGET", "32768"),
            ("WEFT_SHM_RING_MAX", "16384"),
            ("WEFT_EAGER_LIMIT", "1024"),
        ];
        suite(3, &[], &envs);
    }
}

#[test]
fn two_virtual_nodes_use_shm_inside_and_ofi_between() {
    // Ranks 0,1 on node 0 and 2,3 on node 1: every rank talks to both nodes in the suite.
    for (r, c) in suite(4, &["--nodes", "2"], &[]).iter().enumerate() {
        assert!(count(c, "shm") > 0 && count(c, "ofi") > 0, "rank {r}: {c:?}");
    }
}

#[test]
fn uneven_virtual_nodes() {
    // 3+1: rank 3 is alone on its node and has no shm transport at all.
    let c = suite(4, &["--map", "3,1"], &[]);
    assert_eq!(count(&c[3], "shm"), 0, "{:?}", c[3]);
    assert!(count(&c[3], "ofi") > 0);
    suite(5, &["--map", "2,2,1"], &[("P2P_PER", "20")]);
}

#[test]
fn shm_off_forces_the_network_path() {
    let c = suite(3, &[], &[("WEFT_SHM", "off"), ("WEFT_FI_DOMAIN", "lo"), ("P2P_PER", "20")]);
    for (r, c) in c.iter().enumerate() {
        assert!(count(c, "shm") == 0 && count(c, "ofi") > 0, "rank {r}: {c:?}");
    }
}
