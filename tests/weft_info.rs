//! `weft-info` prints every section and every configuration key, and refuses bad settings.

use std::process::{Command, Output};
use std::time::Duration;

use weft_testkit::job::{End, Supervisor};

const WEFT_INFO: &str = env!("CARGO_BIN_EXE_weft-info");

/// Run `weft-info` with a clean `WEFT_*` environment plus `vars`, under a hard deadline.
fn run(vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(WEFT_INFO);
    for (k, _) in std::env::vars() {
        if k.starts_with("WEFT_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(vars.iter().copied());
    let done = Supervisor::new(Duration::from_secs(60)).run(cmd).expect("spawn weft-info");
    match done.end {
        End::Exited(status) => {
            Output { status, stdout: done.stdout.into_bytes(), stderr: done.stderr.into_bytes() }
        }
        End::TimedOut(limit) => panic!("weft-info did not finish within {limit:?}"),
    }
}

#[test]
fn prints_every_section_and_key() {
    let o = run(&[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    for section in
        ["Build", "Transports", "libfabric", "Topology (hwloc)", "Runtime", "Configuration (environment)"]
    {
        assert!(out.lines().any(|l| l == section), "section {section:?} missing:\n{out}");
    }
    assert!(out.contains(&format!("version: {}", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(out.contains("cores "), "topology summary missing:\n{out}");
    let (maj, min) = weft_fabric::version();
    assert!(out.contains(&format!("  version: {maj}.{min}\n")), "libfabric version missing:\n{out}");
    // The file this process loaded (the same library the child loads: same environment).
    let lib = weft_fabric::library::path().expect("libfabric is a shared object");
    assert!(out.contains(&format!("  loaded from: {}\n", lib.display())), "libfabric path missing:\n{out}");
    assert!(out.contains(&format!("  API version requested: {maj}.{min}\n")), "{out}");
    assert!(out.contains("usable providers (FI_EP_RDM + FI_TAGGED)"), "{out}");
    assert!(out.contains("a job started here would use: singleton"), "{out}");
    assert!(out.contains("backends built (tried in this order): pmix, pmi2, singleton"), "{out}");
    for k in weft::KEYS {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(k.name))
            .unwrap_or_else(|| panic!("{} missing:\n{out}", k.name));
        assert!(line.contains(k.default), "{line}");
    }
    // A set value shows up.
    let o = run(&[("WEFT_EAGER_LIMIT", "4096"), ("WEFT_BIND", "none")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    let line = out.lines().find(|l| l.trim_start().starts_with("WEFT_EAGER_LIMIT")).unwrap();
    assert_eq!(line.split_whitespace().nth(1), Some("4096"), "{line}");
    assert!(out.contains("WEFT_BIND=none: no binding"), "{out}");
}

#[test]
fn runtime_backend_follows_the_launcher_variables() {
    for (vars, want) in [
        (&[("PMI_FD", "9"), ("PMI_RANK", "2")][..], "pmi2 (PMI_FD is set)"),
        (&[("PMI_FD", "9"), ("PMIX_RANK", "0")][..], "pmix (PMIX_RANK is set)"),
        // weft-run's ranks are PMIx clients: its own variables choose nothing.
        (&[("PMIX_NAMESPACE", "ns"), ("WEFT_RUN_CTL", "/nonexistent")][..], "pmix (PMIX_NAMESPACE is set)"),
        (&[("WEFT_RUN_CTL", "/nonexistent")][..], "singleton (no launcher variable is set)"),
    ] {
        let o = run(vars);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{out}");
        assert!(out.contains(&format!("a job started here would use: {want}")), "{vars:?}:\n{out}");
    }
    let o = run(&[("PMI_FD", "9"), ("PMI_RANK", "2")]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("  PMI_RANK=2"));
}

#[test]
fn bad_setting_fails_naming_the_key() {
    let o = run(&[("WEFT_BIND", "bogus")]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{out}");
    assert!(err.contains("WEFT_BIND") && err.contains("bogus"), "stderr: {err}");
    // An unknown key too.
    let o = run(&[("WEFT_EAGR_LIMIT", "5")]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("WEFT_EAGR_LIMIT"));
}

#[test]
fn closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(WEFT_INFO)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn weft-info");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("piped")).read_line(&mut first).expect("read a line");
    // The reader is gone now (as after `head -1`); weft-info must not panic on its next write.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("weft-info did not end after its reader left");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut err).expect("stderr");
    assert!(first.starts_with("weft "), "{first}");
    assert!(!err.contains("panicked"), "weft-info panicked on a closed pipe:\n{err}");
    assert!(status.success() || status.signal() == Some(libc::SIGPIPE), "{status:?}\n{err}");
}
