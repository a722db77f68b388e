//! A rank killed with SIGKILL: survivors keep running, each learns which rank died within
//! 100 ms, a receive blocked on the dead rank ends with an error, data it sent before dying
//! is still delivered, and weft-run reports the failed rank in its exit status.

mod common;
use common::*;

/// The per-source failure counts a survivor printed (`PROG: rank R sources [("shm", 1), …]`).
fn sources(so: &str, prog: &str, r: u32) -> Vec<(String, u64)> {
    let prefix = format!("{prog}: rank {r} sources [");
    let line = so
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("rank {r} printed no sources:\n{so}"));
    line.trim_end_matches(']')
        .split("), (")
        .map(|p| {
            let p = p.trim_matches(|c| c == '(' || c == ')');
            let (name, n) = p.split_once(", ").unwrap_or_else(|| panic!("bad sources {line}"));
            (name.trim_matches('"').to_string(), n.parse().unwrap_or_else(|_| panic!("bad count in {line}")))
        })
        .collect()
}

fn count(src: &[(String, u64)], name: &str) -> u64 {
    src.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c)
}

#[test]
fn sigkill_is_detected_and_survivors_continue() {
    for n in [2u32, 4] {
        let out = weft_job(n, &example("failure_test"), &[], &[], 60);
        let (so, se) = text(&out);
        assert!(!out.status.success(), "weft-run must report the killed rank");
        assert!(se.contains(&format!("rank {} (pid", n - 1)) && se.contains("SIGKILL"), "stderr:\n{se}");
        assert!(
            so.contains("rank 0 blocked recv ended with: process failure"),
            "stdout:\n{so}\nstderr:\n{se}"
        );
        for r in 0..n - 1 {
            let line = so
                .lines()
                .find(|l| l.starts_with(&format!("failure_test: rank {r} detected rank {}", n - 1)))
                .unwrap_or_else(|| panic!("rank {r} did not detect:\n{so}\n{se}"));
            let ms: f64 = line.split("after ").nth(1).unwrap().trim_end_matches(" ms").parse().unwrap();
            assert!(ms < 100.0, "rank {r} took {ms} ms to learn of the failure");
            // Each failure is counted once, for the source that told this rank first.
            let src = sources(&so, "failure_test", r);
            assert_eq!(src.iter().map(|(_, c)| c).sum::<u64>(), 1, "rank {r}: {src:?}");
            assert!(so.contains(&format!("failure_test: rank {r} survivors OK")), "stdout:\n{so}\n{se}");
        }
    }
}

#[test]
fn sigkill_across_virtual_nodes() {
    // The victim (rank 3) is on node 1; ranks 0 and 1 reach it over libfabric.
    let out = weft_job_on(4, &["--nodes", "2"], &example("failure_test"), &[], &[], 60);
    let (so, se) = text(&out);
    assert!(so.contains("rank 0 blocked recv ended with: process failure"), "stdout:\n{so}\nstderr:\n{se}");
    for r in 0..3 {
        assert!(so.contains(&format!("failure_test: rank {r} survivors OK")), "stdout:\n{so}\n{se}");
    }
}

#[test]
fn whole_virtual_node_killed() {
    // 5 ranks on 2 nodes: node 1 = ranks 3,4, killed (through the launcher, on rank 0's
    // request) 300 ms after init while the survivors wait on them. (`--kill-node 1@T` counts
    // from launch, which on a loaded machine can fall inside init.)
    let out =
        weft_job_on(5, &["--nodes", "2"], &example("node_failure"), &["3,4"], &[("NODE_KILL", "1@300")], 60);
    let (so, se) = text(&out);
    assert!(!out.status.success());
    for v in [3, 4] {
        assert!(se.contains(&format!("rank {v} (pid")), "launcher must report rank {v}:\n{se}");
    }
    for r in 0..3 {
        assert!(
            so.contains(&format!("node_failure: rank {r} knows failed [3, 4]")),
            "stdout:\n{so}\nstderr:\n{se}"
        );
        assert!(so.contains(&format!("node_failure: rank {r} survivors OK")), "stdout:\n{so}\nstderr:\n{se}");
        // No shared memory with node 1 and no sends to it: the survivors learn of the node's
        // death from the launcher's PMIx NODE_DOWN event (one event naming both ranks), or
        // (rarely) from a libfabric error first.
        let src = sources(&so, "node_failure", r);
        assert_eq!(count(&src, "runtime") + count(&src, "ofi"), 2, "rank {r}: {src:?}");
        assert!(count(&src, "runtime") >= 1, "rank {r}: no PMIx event counted: {src:?}");
    }
}
