//! Building OSU 7.2 once with MPICH's `mpicc_abi` (configure + make in a kept directory) and
//! finding the two libraries' launchers.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::OsuCli;

/// What the runs need: the built benchmarks, both launchers and weft's library directory.
pub struct Setup {
    /// `c/mpi` of the OSU build.
    pub bins: PathBuf,
    /// MPICH's `mpiexec` (beside its `mpicc_abi`).
    pub mpiexec: PathBuf,
    /// weft's launcher.
    pub weft_run: PathBuf,
    /// The directory holding weft's `libmpi_abi.so.1`.
    pub weft_lib: PathBuf,
}

/// The directory of this executable (`target/<profile>` in a build tree, `<prefix>/bin`
/// installed).
fn exe_dir() -> PathBuf {
    std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_default()
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// Build OSU (unless already built) and locate everything.
pub fn prepare(cli: &OsuCli) -> Result<Setup, String> {
    let dir = exe_dir();
    let weft_run = std::env::var_os("WEFT_RUN").map(PathBuf::from).unwrap_or_else(|| dir.join("weft-run"));
    let weft_lib = [dir.clone(), dir.join("../lib")]
        .into_iter()
        .find(|d| d.join("libmpi_abi.so.1").exists())
        .ok_or_else(|| {
            format!(
                "weft's libmpi_abi.so.1 is not beside {} (build it: cargo build --release -p weft-mpi)",
                dir.display()
            )
        })?;
    let mpicc = cli
        .mpicc_abi
        .clone()
        .or_else(|| which("mpicc_abi"))
        .ok_or("MPICH's mpicc_abi not found (pip install mpich==5.0.2, or --mpicc-abi PATH)")?;
    let mpiexec = mpicc.with_file_name("mpiexec");
    if !mpiexec.exists() {
        return Err(format!("{} not found beside {}", mpiexec.display(), mpicc.display()));
    }
    let tarball = match &cli.tarball {
        Some(t) => t.clone(),
        None => {
            let suites = std::env::var_os("WEFT_SUITES")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/suites"));
            let suites = suites.canonicalize().unwrap_or(suites);
            suites.join("osu-micro-benchmarks-7.2.tar.gz")
        }
    };
    let build = match &cli.build_dir {
        Some(d) => d.clone(),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).join("target/osu-abi")
        }
    };
    let src = build.join("osu-micro-benchmarks-7.2");
    let bins = src.join("c/mpi");
    // A build made with other flags (an older weft-bench's) is rebuilt.
    let stamp = build.join("weft-osu-cflags");
    let built_with = std::fs::read_to_string(&stamp).unwrap_or_default();
    if !bins.join("pt2pt/standard/osu_latency").exists() || built_with != OSU_CFLAGS {
        let _ = std::fs::remove_dir_all(&src);
        if !tarball.exists() {
            return Err(format!(
                "{} not found: the OSU suite is kept outside weft's repository (set WEFT_SUITES or --tarball)",
                tarball.display()
            ));
        }
        std::fs::create_dir_all(&build).map_err(|e| format!("{}: {e}", build.display()))?;
        eprintln!("weft-bench osu: building OSU 7.2 with {} in {}", mpicc.display(), build.display());
        sh(Command::new("tar").arg("xzf").arg(&tarball).arg("-C").arg(&build), "tar")?;
        sh(
            // OSU links with the C++ compiler: MPICH's C++ standard-ABI wrapper.
            Command::new("./configure")
                .current_dir(&src)
                .arg(format!("CC={}", mpicc.display()))
                .arg(format!("CXX={}", mpicc.with_file_name("mpicxx_abi").display()))
                .arg(format!("CFLAGS={OSU_CFLAGS}")),
            "configure",
        )?;
        sh(Command::new("make").current_dir(&src).arg("-j2"), "make")?;
        std::fs::write(&stamp, OSU_CFLAGS).map_err(|e| format!("{}: {e}", stamp.display()))?;
    }
    Ok(Setup { bins, mpiexec, weft_run, weft_lib })
}

/// C flags OSU is configured with: autoconf's default plus three decimals in OSU's output
/// (its compile-time `FLOAT_PRECISION`, 2 by default): at 2 ranks the small operations take
/// 0.1–0.4 µs, where OSU's 0.01 µs steps are 3–10 % of a figure.
const OSU_CFLAGS: &str = "-g -O2 -DFLOAT_PRECISION=3";

fn sh(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = err.lines().rev().take(15).collect();
    Err(format!("{what} failed ({}):\n{}", out.status, tail.into_iter().rev().collect::<Vec<_>>().join("\n")))
}
