//! Point-to-point and requests of the MPI library, across processes: each test runs one part
//! of the `p2p` example (mpi/examples/p2p/) under `weft-run -n 2` with a hard timeout; the
//! example checks every result itself and exits non-zero, naming the failed check, if one
//! does not hold.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::Command;

/// The `p2p` example, built once per test run (`cargo test` builds examples only without a
/// target filter).
fn example() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft-mpi", "--example", "p2p"]);
        if common::target_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().expect("cargo build --example p2p").success(),
            "building the p2p example failed"
        );
    });
    common::target_dir().join("examples").join("p2p")
}

/// Run one part on 2 ranks; both must report it done.
fn part(name: &str, secs: u64) {
    let out = common::weft_job(2, &example(), &[name], &[], secs);
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "p2p {name} failed:\nstdout:\n{stdout}\nstderr:\n{stderr}");
    for r in 0..2 {
        assert!(
            stdout.contains(&format!("rank {r}: {name} ok")),
            "rank {r} did not finish {name}:\n{stdout}\n{stderr}"
        );
    }
}

#[test]
fn send_modes_buffered_ready_synchronous_and_large_count() {
    part("modes", 60);
}

#[test]
fn persistent_requests_start_startall_and_free() {
    part("persistent", 60);
}

#[test]
fn waitany_waitsome_testany_testall_testsome_get_status_cancel_and_elements() {
    part("completion", 60);
}

#[test]
fn matched_probe_and_receive() {
    part("mprobe", 60);
}

#[test]
fn bad_input_returns_the_error_class() {
    part("errors", 60);
}

#[test]
fn thread_multiple_four_threads_on_their_own_communicators() {
    part("threads", 120);
}

#[test]
fn latency_program_runs_at_both_levels() {
    for level in ["single", "multiple"] {
        let out = common::weft_job(2, &example(), &["latency", level, "200"], &[], 60);
        let (stdout, stderr) = common::text(&out);
        assert!(out.status.success(), "p2p latency {level} failed:\n{stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("latency {level}: 8 B one-way")),
            "no figure for {level}:\n{stdout}"
        );
    }
}
