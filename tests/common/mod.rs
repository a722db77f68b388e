//! Helpers for multi-process tests: locate binaries in the target directory and run jobs
//! under `weft-run` with a hard timeout (a hang fails the test instead of stalling CI). The
//! jobs are supervised by `weft_testkit::job`: each runs in its own process group, which is
//! killed at the timeout.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use weft_testkit::job::{End, Supervisor};

/// `target/<profile>` of the running test binary.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// Path of `weft-run`, building it if this test run did not.
pub fn weft_run() -> PathBuf {
    let p = target_dir().join("weft-run");
    if !p.exists() {
        let profile = target_dir().file_name().unwrap().to_string_lossy().to_string();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "weft-pmix", "--bin", "weft-run"]);
        if profile == "release" {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("cargo build weft-run").success(), "building weft-run failed");
    }
    p
}

/// Compile the C program `src` (relative to the repository root) against `include/weft.h`
/// and this profile's `libweft.so` (built first, with an rpath to it); returns the executable.
pub fn compile_c(src: &str) -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft", "--lib"]);
        if target_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("cargo build --lib").success(), "building libweft failed");
    });
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = target_dir();
    let name = std::path::Path::new(src).file_stem().unwrap().to_str().unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(name);
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(src))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lweft")
        .output()
        .expect("run cc");
    assert!(out.status.success(), "cc {src} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Path of an example of the root crate. `cargo test` builds examples only when no target
/// filter is given, so build them once here (a no-op when they are up to date).
pub fn example(name: &str) -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        let profile = target_dir().file_name().unwrap().to_string_lossy().to_string();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft", "--examples"]);
        if profile == "release" {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("cargo build --examples").success(), "building examples failed");
    });
    let p = target_dir().join("examples").join(name);
    assert!(p.exists(), "example {name} not built at {}", p.display());
    p
}

/// Jobs of one test binary run one at a time: the machine has 2 cores and every job
/// oversubscribes them already.
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run `cmd` with a hard deadline; kill its process group (and fail, showing what it printed)
/// if it does not finish in time.
pub fn run_with_timeout(cmd: Command, limit: Duration) -> Output {
    let _one = ONE_JOB.lock().unwrap_or_else(|p| p.into_inner());
    let line = cmd_line(&cmd);
    let done = Supervisor::new(limit).run(cmd).unwrap_or_else(|e| panic!("{e}"));
    match done.end {
        End::Exited(status) => {
            Output { status, stdout: done.stdout.into_bytes(), stderr: done.stderr.into_bytes() }
        }
        End::TimedOut(_) => panic!(
            "job did not finish within {limit:?}: {line}\nstdout:\n{}\nstderr:\n{}",
            done.stdout, done.stderr
        ),
    }
}

fn cmd_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `prog args` under `weft-run -n n` (yield mode, since tests oversubscribe 2 cores),
/// with weft-run's own timeout and a test-side deadline a little longer.
pub fn weft_job(n: u32, prog: &PathBuf, args: &[&str], envs: &[(&str, &str)], secs: u64) -> Output {
    weft_job_on(n, &[], prog, args, envs, secs)
}

/// As [`weft_job`], with extra launcher options (`--nodes 2`, `--map 3,1`, ...).
pub fn weft_job_on(
    n: u32,
    launcher: &[&str],
    prog: &PathBuf,
    args: &[&str],
    envs: &[(&str, &str)],
    secs: u64,
) -> Output {
    let mut cmd = Command::new(weft_run());
    cmd.args(["-n", &n.to_string(), "--timeout", &secs.to_string()]).args(launcher).arg(prog).args(args);
    cmd.env("WEFT_PROGRESS", "yield");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run_with_timeout(cmd, Duration::from_secs(secs + 15))
}

/// stdout and stderr as text.
pub fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Seconds elapsed since `t`, for messages.
pub fn since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}
