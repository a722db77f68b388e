//! The same test binaries bootstrap under Debian's Open MPI `mpirun` through the PMIx client
//! path. Skipped (with a message) when `mpirun.openmpi` is not installed.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

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
