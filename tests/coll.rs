//! Multi-process collectives through `weft-run` (program: `examples/coll_suite.rs`): every
//! collective × algorithm on 4 ranks, on 2 virtual nodes and on uneven maps; non-blocking
//! overlap; typed errors for mismatched arguments; and the inter-node message count of a
//! small bin/bin allreduce (2·(K−1)) against the flat binary tree.

mod common;

use common::{example, text, weft_job_on};

fn ok(n: u32, launcher: &[&str], mode: &str, secs: u64) -> String {
    let out = weft_job_on(n, launcher, &example("coll_suite"), &[mode], &[], secs);
    let (so, se) = text(&out);
    assert!(out.status.success(), "coll_suite {mode} -n {n} {launcher:?} failed:\n{so}\n{se}");
    so
}

#[test]
fn every_collective_and_algorithm_one_node() {
    let so = ok(4, &[], "all", 240);
    assert!(so.contains("all ok"), "{so}");
}

#[test]
fn every_collective_and_algorithm_two_nodes() {
    let so = ok(4, &["--nodes", "2"], "all", 300);
    assert!(so.contains("all ok"), "{so}");
}

#[test]
fn every_collective_and_algorithm_uneven_maps() {
    for map in ["3,1", "2,2,1"] {
        let n: u32 = map.split(',').map(|x| x.parse::<u32>().unwrap()).sum();
        let so = ok(n, &["--map", map], "all", 300);
        assert!(so.contains("all ok"), "--map {map}: {so}");
    }
}

#[test]
fn nonblocking_collectives_overlap() {
    assert!(ok(4, &[], "overlap", 60).contains("overlap ok"));
    assert!(ok(5, &["--map", "2,2,1"], "overlap", 90).contains("overlap ok"));
}

#[test]
fn mismatched_arguments_give_typed_errors() {
    assert!(ok(4, &[], "errors", 60).contains("errors ok"));
    assert!(ok(5, &["--map", "3,2"], "errors", 90).contains("errors ok"));
}

fn counts(so: &str) -> Vec<(String, u64)> {
    so.lines()
        .filter_map(|l| {
            let mut it = l.strip_prefix("counter ")?.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn binbin_allreduce_crosses_nodes_exactly_2k_minus_2_times() {
    for (n, launcher, k) in
        [(4u32, vec!["--nodes", "2"], 2u64), (6, vec!["--nodes", "3"], 3), (5, vec!["--map", "2,2,1"], 3)]
    {
        let so = ok(n, &launcher, "counter", 90);
        let c = counts(&so);
        let get =
            |a: &str| c.iter().find(|x| x.0 == a).map(|x| x.1).unwrap_or_else(|| panic!("no {a} in {so}"));
        eprintln!("-n {n} {launcher:?}: {c:?}");
        assert_eq!(get("binbin"), 2 * (k - 1), "{so}");
        assert_eq!(get("binstar"), 2 * (k - 1), "{so}");
        assert!(get("flat") > 2 * (k - 1), "flat binary tree must cross more often: {so}");
    }
}
