//! Multi-process test of the PMIx client backend under a real PMIx server: Open MPI's `mpirun`
//! (`/usr/bin/mpirun.openmpi`, ORTE over the system OpenPMIx). Skipped, with a message, where
//! Open MPI is not installed. Every launch has a hard timeout: a hang is a failure.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MPIRUN: &str = "/usr/bin/mpirun.openmpi";
const NP: u32 = 4;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Build `--example name` of this crate with the same cargo and profile as the test, and
/// return the path of the binary (found through cargo's JSON messages, so any target dir
/// layout works).
fn build_example(name: &str) -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["build", "-p", "weft-pmix", "--example", name, "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("running cargo build for the example");
    assert!(out.status.success(), "cargo build --example {name} failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        // Avoid a JSON dependency: the compiler-artifact line of our example carries
        // "executable":"<path>" and the target name.
        if line.contains("\"reason\":\"compiler-artifact\"") && line.contains(&format!("\"name\":\"{name}\""))
        {
            if let Some(i) = line.find("\"executable\":\"") {
                let rest = &line[i + "\"executable\":\"".len()..];
                let end = rest.find('"').expect("end of executable path");
                return PathBuf::from(&rest[..end]);
            }
        }
    }
    panic!("cargo did not report an executable for example {name}");
}

/// Run `cmd` to completion or kill it at `timeout`; returns (success, stdout+stderr).
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> (bool, String) {
    // A process group of its own, so that on timeout mpirun *and* its ranks are killed.
    use std::os::unix::process::CommandExt;
    cmd.process_group(0).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawning mpirun");
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().expect("waiting for mpirun") {
            Some(st) => break Some(st),
            None if Instant::now() >= deadline => {
                let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::SIGKILL);
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let text = format!("{}{}", out_t.join().unwrap(), err_t.join().unwrap());
    match status {
        Some(st) => (st.success(), text),
        None => panic!("mpirun timed out after {timeout:?} and was killed; output:\n{text}"),
    }
}

#[test]
fn probe_under_openmpi_mpirun() {
    if !Path::new(MPIRUN).exists() {
        println!("skipped: {MPIRUN} not found (install openmpi-bin to run the PMIx client test)");
        return;
    }
    let exe = build_example("pmix_probe");
    let mut cmd = Command::new(MPIRUN);
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-n", &NP.to_string()])
        .arg(&exe)
        // Keep a launcher of the workspace's own from interfering with backend selection.
        .env_remove("WEFT_RUN_SOCK");
    let (ok, out) = run_with_timeout(cmd, TIMEOUT);
    println!("{out}");
    assert!(ok, "mpirun -n {NP} pmix_probe failed:\n{out}");
    for r in 0..NP {
        assert!(out.lines().any(|l| l.trim() == format!("rank {r} OK")), "rank {r} did not print OK:\n{out}");
        assert!(
            out.contains(&format!("rank {r}/{NP} backend=pmix")),
            "rank {r} did not report the pmix backend:\n{out}"
        );
    }
}
