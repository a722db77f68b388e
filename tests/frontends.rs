//! The same scenario through the Rust API (`examples/frontends.rs`) and the C ABI
//! (`tests/c/frontends.c`) under `weft-run -n 4`: point-to-point, bad input, collectives,
//! agreement, a rank's death, uniform barrier, acknowledgement, revoke and shrink. Both front
//! ends call one operations core, so they must print the same lines.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The C program, compiled against `include/weft.h` and this profile's `libweft.so`.
fn compile_c() -> PathBuf {
    let profile = target_dir();
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "-q", "-p", "weft", "--lib"]);
    if profile.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("cargo build --lib").success(), "building libweft failed");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("frontends_c");
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("tests/c/frontends.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", profile.display()))
        .arg(format!("-Wl,-rpath,{}", profile.display()))
        .arg("-lweft")
        .output()
        .expect("run cc");
    assert!(out.status.success(), "cc frontends.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

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
    let c = lines(&compile_c());
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
