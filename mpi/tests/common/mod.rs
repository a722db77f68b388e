//! Plumbing of the MPI library's multi-process tests: this crate's example programs, run under
//! `weft-run` with a hard timeout through the workspace's test plumbing (`tests/common`, whose
//! supervisor kills the job's process group at the deadline, so a hang fails the test instead
//! of stalling CI).
#![allow(dead_code)]

#[path = "../../../tests/common/mod.rs"]
mod root;

use std::path::PathBuf;
use std::process::Command;

pub use root::target_dir;

/// An example program of this crate (`mpi/examples/<name>.rs`), built once per test binary
/// (`cargo test` builds examples only without a target filter).
pub fn example(name: &str) -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft-mpi", "--examples"]);
        if target_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("run cargo build").success(), "building weft-mpi's examples failed");
    });
    let p = target_dir().join("examples").join(name);
    assert!(p.exists(), "example {name} not built at {}", p.display());
    p
}

/// What a finished job printed and how it ended.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `prog args` under `weft-run -n n` (see `tests/common`'s `weft_job_on`: yield progress,
/// weft-run's own timeout of `secs` and a supervisor deadline a little later).
pub fn job(n: u32, prog: &PathBuf, args: &[&str], envs: &[(&str, &str)], secs: u64) -> Ran {
    job_on(n, &[], prog, args, envs, secs)
}

/// As [`job`], with launcher options (`--nodes 2`, ...).
pub fn job_on(
    n: u32,
    launcher: &[&str],
    prog: &PathBuf,
    args: &[&str],
    envs: &[(&str, &str)],
    secs: u64,
) -> Ran {
    let out = root::weft_job_on(n, launcher, prog, args, envs, secs);
    let (stdout, stderr) = root::text(&out);
    Ran { code: out.status.code(), stdout, stderr }
}

/// Run example `name` (see [`job_on`]) and require a zero exit status; its stdout.
pub fn ok(n: u32, launcher: &[&str], name: &str, args: &[&str]) -> String {
    let r = job_on(n, launcher, &example(name), args, &[], 60);
    assert_eq!(
        r.code,
        Some(0),
        "{name} -n {n} {launcher:?} failed:\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    r.stdout
}
