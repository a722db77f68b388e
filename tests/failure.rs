//! A rank killed with SIGKILL: survivors keep running, each learns which rank died within
//! 100 ms, a receive blocked on the dead rank ends with an error, data it sent before dying
//! is still delivered, and weft-run reports the failed rank in its exit status.

mod common;
use common::*;

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
    }
}
