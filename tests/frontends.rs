//! The same scenario through the Rust API (`examples/frontends.rs`) and the C ABI
//! (`tests/c/frontends.c`) under `weft-run -n 4`: point-to-point, bad input, collectives,
//! agreement, a rank's death, uniform barrier, acknowledgement, revoke and shrink. Both front
//! ends call one operations core, so they must print the same lines.

mod common;
use common::*;

use std::path::PathBuf;

/// The scenario's lines, sorted (ranks print concurrently).
fn lines(prog: &PathBuf) -> Vec<String> {
    let out = weft_job(4, prog, &[], &[], 60);
    let (so, se) = text(&out);
    let mut l: Vec<String> = so.lines().filter(|l| l.starts_with("frontends: ")).map(String::from).collect();
    l.sort();
    for r in 0..3 {
        assert!(
            l.contains(&format!("frontends: rank {r} done")),
            "{}: rank {r} did not finish\nstdout:\n{so}\nstderr:\n{se}",
            prog.display()
        );
    }
    l
}

#[test]
fn rust_and_c_behave_alike() {
    let rust = lines(&example("frontends"));
    let c = lines(&compile_c("tests/c/frontends.c"));
    assert_eq!(rust, c, "the Rust and C front ends differ");
    // The scenario itself (so that two equally wrong front ends do not pass).
    for want in [
        "frontends: rank 1 truncate 3 8",
        "frontends: rank 0 bad-dest 1",
        "frontends: rank 2 bad-root 1",
        "frontends: rank 3 allreduce 10",
        "frontends: rank 0 bcast 77",
        "frontends: rank 2 agree 0xf0",
        "frontends: rank 3 split 0 2",
        "frontends: rank 1 uniform-barrier 7",
        "frontends: rank 2 failed [3]",
        "frontends: rank 0 agree-acked 0xff",
        "frontends: rank 1 recv-revoked 9",
        "frontends: rank 2 shrunk 2 3 6",
    ] {
        assert!(rust.iter().any(|l| l == want), "missing `{want}` in:\n{}", rust.join("\n"));
    }
}
