//! Plumbing of the MPI library's multi-process tests: build this crate's example programs,
//! run them under `weft-run` with a hard timeout (through `weft_testkit::job`, which kills the
//! job's process group at the deadline, so a hang fails the test instead of stalling CI).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use weft_testkit::job::{End, Supervisor};

/// `target/<profile>` of the running test binary.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps/<test>").to_path_buf()
}

fn cargo_build(args: &[&str]) {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build").arg("-q").args(args);
    if target_dir().file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(cmd.status().expect("run cargo build").success(), "cargo build {args:?} failed");
}

/// `weft-run`, built if this test run did not build it.
pub fn weft_run() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| cargo_build(&["-p", "weft-pmix", "--bin", "weft-run"]));
    target_dir().join("weft-run")
}

/// An example program of this crate (`mpi/examples/<name>.rs`), built once per test binary
/// (`cargo test` builds examples only without a target filter).
pub fn example(name: &str) -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| cargo_build(&["-p", "weft-mpi", "--examples"]));
    let p = target_dir().join("examples").join(name);
    assert!(p.exists(), "example {name} not built at {}", p.display());
    p
}

/// Jobs of one test binary run one at a time: the machine has 2 cores and every job
/// oversubscribes them already.
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What a finished job printed and how it ended.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `prog args` under `weft-run -n n` (yield progress: tests oversubscribe the cores) with
/// weft-run's own timeout of `secs` and a supervisor deadline a little later; panics, showing
/// the output, if the job hangs.
pub fn job(n: u32, prog: &PathBuf, args: &[&str], envs: &[(&str, &str)], secs: u64) -> Ran {
    let _one = ONE_JOB.lock().unwrap_or_else(|p| p.into_inner());
    let mut cmd = Command::new(weft_run());
    cmd.args(["-n", &n.to_string(), "--timeout", &secs.to_string()]).arg(prog).args(args);
    cmd.env("WEFT_PROGRESS", "yield");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let limit = Duration::from_secs(secs + 15);
    let done = Supervisor::new(limit).run(cmd).unwrap_or_else(|e| panic!("{e}"));
    match done.end {
        End::Exited(status) => Ran { code: status.code(), stdout: done.stdout, stderr: done.stderr },
        End::TimedOut(_) => panic!(
            "job {} -n {n} did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
            prog.display(),
            done.stdout,
            done.stderr
        ),
    }
}
