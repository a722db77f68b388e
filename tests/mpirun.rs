//! The same test binaries bootstrap under third-party launchers: Debian's Open MPI 4.1 `mpirun`
//! and Open MPI 5's PRRTE (the pip wheel) through the PMIx client, MPICH's hydra through the
//! PMI-2 client. Each test is skipped (with a printed reason) when its launcher is missing.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;
use weft_testkit::launchers;

#[test]
fn p2p_suite_under_openmpi_mpirun() {
    let mpirun = "/usr/bin/mpirun.openmpi";
    if !std::path::Path::new(mpirun).exists() {
        println!("skipped: {mpirun} not installed (apt-get install openmpi-bin)");
        return;
    }
    let mut cmd = Command::new(mpirun);
    cmd.args(["--oversubscribe", "-n", "4"]).arg(example("p2p_suite"));
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd.env("WEFT_PROGRESS", "yield").env("P2P_PER", "20");
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let (so, se) = text(&out);
    assert!(out.status.success(), "stdout:\n{so}\nstderr:\n{se}");
    for r in 0..4 {
        assert!(so.contains(&format!("p2p_suite: rank {r} OK (backend pmix")), "{so}\n{se}");
    }
}

/// The job's output, after asserting it succeeded and every rank of `n` printed
/// `p2p_suite: rank R OK (backend BACKEND`.
fn assert_p2p_ok(out: &std::process::Output, n: u32, backend: &str) {
    let (so, se) = text(out);
    assert!(out.status.success(), "stdout:\n{so}\nstderr:\n{se}");
    for r in 0..n {
        assert!(so.contains(&format!("p2p_suite: rank {r} OK (backend {backend}")), "{so}\n{se}");
    }
}

#[test]
fn p2p_suite_under_prrte() {
    let prrte = match launchers::prrte() {
        Ok(p) => p,
        Err(why) => return println!("skipped: {why}"),
    };
    for shm in ["on", "off"] {
        let mut cmd = prrte.command(4);
        cmd.arg(example("p2p_suite"));
        cmd.env("WEFT_PROGRESS", "yield").env("P2P_PER", "20").env("WEFT_SHM", shm);
        let out = run_with_timeout(cmd, Duration::from_secs(120));
        assert_p2p_ok(&out, 4, "pmix");
    }
}

/// A SIGKILLed rank under PRRTE: the survivors keep running, learn of the death and keep
/// communicating. With `WEFT_SHM=off` the ranks talk over libfabric, which has no pidfd
/// watch, so the PMIx termination event is what reports the death quickly.
#[test]
fn failure_under_prrte() {
    let prrte = match launchers::prrte() {
        Ok(p) => p,
        Err(why) => return println!("skipped: {why}"),
    };
    for shm in ["on", "off"] {
        let mut cmd = prrte.command(4);
        cmd.arg(example("failure_test"));
        cmd.env("WEFT_PROGRESS", "yield").env("WEFT_SHM", shm);
        let out = run_with_timeout(cmd, Duration::from_secs(120));
        let (so, se) = text(&out);
        for r in 0..3 {
            assert!(
                so.contains(&format!("failure_test: rank {r} survivors OK")),
                "WEFT_SHM={shm}\n{so}\n{se}"
            );
        }
        println!(
            "WEFT_SHM={shm}:\n{}",
            so.lines().filter(|l| l.contains("detected")).collect::<Vec<_>>().join("\n")
        );
    }
}

#[test]
fn suites_under_hydra() {
    let hydra = match launchers::hydra() {
        Ok(p) => p,
        Err(why) => return println!("skipped: {why}"),
    };
    for shm in ["on", "off"] {
        let mut cmd = Command::new(&hydra);
        cmd.args(["-n", "4"]).arg(example("p2p_suite"));
        cmd.env("WEFT_PROGRESS", "yield").env("P2P_PER", "20").env("WEFT_SHM", shm);
        let out = run_with_timeout(cmd, Duration::from_secs(120));
        assert_p2p_ok(&out, 4, "pmi2");
    }
    let mut cmd = Command::new(&hydra);
    cmd.args(["-n", "4"]).arg(example("coll_suite")).arg("all");
    cmd.env("WEFT_PROGRESS", "yield");
    let out = run_with_timeout(cmd, Duration::from_secs(180));
    let (so, se) = text(&out);
    assert!(out.status.success() && so.contains("all ok:"), "stdout:\n{so}\nstderr:\n{se}");
}
