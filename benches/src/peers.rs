//! The MPI peer programs: `benches/peers/osu_p2p.c` built with each MPI's compiler wrapper into
//! `<target>/peers/osu_p2p.<impl>` (on demand, when missing or older than the source) and
//! launched with that MPI's `mpirun`, under the same hard timeout as the weft job.
//!
//! Peers: Debian's Open MPI and MPICH (on `$PATH`), and, on the network path only, MPICH 5.0.2
//! from the `mpich` pip wheel over its own libfabric 2.x (`ch4:ofi`, [`mpich_wheel`]): the
//! same library and provider the weft job is then given.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::job::{run_job, run_job_grace, JobError, JobOutput};
use crate::Cli;

/// The peer source, embedded so that a relocated binary can still build its peers.
const SOURCE: &str = include_str!("../peers/osu_p2p.c");
const SOURCE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/peers/osu_p2p.c");
const BUILD_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    OpenMpi,
    Mpich,
    /// MPICH 5.0.2 from the pip wheel, netmod `ofi` over the wheel's libfabric (`--net` only).
    MpichOfi,
}

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("peer {peer} unavailable: {tool} not found (install {pkgs})")]
    Unavailable { peer: &'static str, tool: &'static str, pkgs: &'static str },
    #[error("peer {peer}: build failed: {msg}")]
    Build { peer: &'static str, msg: String },
}

impl Peer {
    /// The peers of the shared-memory benchmarks.
    pub const ALL: [Peer; 2] = [Peer::OpenMpi, Peer::Mpich];
    /// The peers of the network path (`--net`).
    pub const NET: [Peer; 3] = [Peer::OpenMpi, Peer::Mpich, Peer::MpichOfi];

    pub fn name(self) -> &'static str {
        match self {
            Peer::OpenMpi => "openmpi",
            Peer::Mpich => "mpich",
            Peer::MpichOfi => "mpich-ofi",
        }
    }

    fn mpicc(self) -> &'static str {
        match self {
            Peer::OpenMpi => "mpicc.openmpi",
            Peer::Mpich => "mpicc.mpich",
            Peer::MpichOfi => "mpicc",
        }
    }

    fn mpirun(self) -> &'static str {
        match self {
            Peer::OpenMpi => "mpirun.openmpi",
            Peer::Mpich => "mpirun.mpich",
            Peer::MpichOfi => "mpiexec",
        }
    }

    /// Where `tool` of this peer is: `$PATH` for Debian's MPIs, the wheel's `bin/` for the
    /// wheel's MPICH.
    fn tool(self, tool: &'static str) -> Result<PathBuf, PeerError> {
        let found = match self {
            Peer::MpichOfi => mpich_wheel().map(|w| w.prefix.join("bin").join(tool)).filter(|p| p.is_file()),
            _ => which(tool),
        };
        found.ok_or_else(|| self.unavailable(tool))
    }

    /// The compiler wrapper.
    pub(crate) fn mpicc_path(self) -> Result<PathBuf, PeerError> {
        self.tool(self.mpicc())
    }

    /// The launcher.
    pub(crate) fn mpirun_path(self) -> Result<PathBuf, PeerError> {
        self.tool(self.mpirun())
    }

    fn packages(self) -> &'static str {
        match self {
            Peer::OpenMpi => "openmpi-bin libopenmpi-dev",
            Peer::Mpich => "mpich libmpich-dev",
            Peer::MpichOfi => "the mpich==5.0.2 pip wheel: scripts/setup --mpich-peer target/mpich-venv, or set MPICH_WHEEL_PREFIX",
        }
    }

    fn unavailable(self, tool: &'static str) -> PeerError {
        PeerError::Unavailable { peer: self.name(), tool, pkgs: self.packages() }
    }

    /// How `--net` puts this peer on its TCP path over loopback (for the report).
    pub fn net_description(self) -> String {
        match self {
            Peer::OpenMpi => "pml ob1, btl self,tcp, btl_tcp_if_include lo, oob_tcp_if_include lo".into(),
            Peer::Mpich => {
                let dev = mpich_device();
                let env: Vec<String> = mpich_net_env(&dev).iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("device {dev}, shared memory off: {}; hydra -iface lo", env.join(" "))
            }
            Peer::MpichOfi => match mpich_wheel() {
                Some(w) => {
                    let env: Vec<String> = w.net_env().iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!(
                        "MPICH 5.0.2 pip wheel {}, libfabric {} (weft's job is given the same: \
                         LD_LIBRARY_PATH, FI_PROVIDER_PATH), {}; hydra -iface lo",
                        w.prefix.display(),
                        w.libfabric_dir().join("libfabric.so.1").display(),
                        env.join(" ")
                    )
                }
                None => "unavailable (no mpich wheel found)".into(),
            },
        }
    }
}

/// The mpich==5.0.2 pip wheel: an install prefix with `bin/mpicc`, `bin/mpiexec` (hydra) and
/// `lib/mpich/libfabric.so.1` (libfabric 2.x, its providers in `lib/mpich/libfabric/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpichWheel {
    pub prefix: PathBuf,
}

impl MpichWheel {
    /// The directory holding the wheel's `libfabric.so.1`.
    pub fn libfabric_dir(&self) -> PathBuf {
        self.prefix.join("lib").join("mpich")
    }

    /// Environment that puts a process on the wheel's libfabric: its directory first on
    /// `LD_LIBRARY_PATH` (which takes precedence over the wheel's own RUNPATH and the system
    /// library) and its provider directory as `FI_PROVIDER_PATH`.
    pub fn libfabric_env(&self) -> Vec<(&'static str, String)> {
        let dir = self.libfabric_dir();
        let mut ld = dir.display().to_string();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
            ld = format!("{ld}:{}", old.to_string_lossy());
        }
        vec![("LD_LIBRARY_PATH", ld), ("FI_PROVIDER_PATH", dir.join("libfabric").display().to_string())]
    }

    /// MPICH's network path on `lo` over the provider weft's job uses: netmod `ofi`, shared
    /// memory off, `FI_PROVIDER` = weft's provider.
    pub fn net_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MPIR_CVAR_CH4_NETMOD", "ofi".into()),
            ("MPIR_CVAR_CH4_SHM_ENABLE", "0".into()),
            ("MPIR_CVAR_NOLOCAL", "1".into()),
            ("FI_PROVIDER", crate::fipp::provider().into()),
            ("FI_TCP_IFACE", "lo".into()),
        ]
    }
}

/// Where the mpich wheel is: `$MPICH_WHEEL_PREFIX`, else `<target>/mpich-venv` (made by
/// `scripts/setup --mpich-peer target/mpich-venv`), else the prefix of the `python3` on
/// `$PATH`; the first that holds the wheel's compiler, launcher and libfabric. Resolved once.
pub fn mpich_wheel() -> Option<MpichWheel> {
    static W: std::sync::OnceLock<Option<MpichWheel>> = std::sync::OnceLock::new();
    W.get_or_init(|| {
        let python_prefix = || {
            let o = Command::new("python3").args(["-c", "import sys; print(sys.prefix)"]).output().ok()?;
            o.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        };
        let venv = build_dir().parent().map(|t| t.join("mpich-venv"));
        let env = std::env::var_os("MPICH_WHEEL_PREFIX").map(PathBuf::from);
        [env, venv].into_iter().flatten().chain(std::iter::from_fn(python_prefix).take(1)).find_map(
            |prefix| {
                let w = MpichWheel { prefix };
                let ok = ["mpicc", "mpiexec"].iter().all(|t| w.prefix.join("bin").join(t).is_file())
                    && w.libfabric_dir().join("libfabric.so.1").is_file();
                ok.then_some(w)
            },
        )
    })
    .clone()
}

/// MPICH's device (`MPICH Device:` of `mpichversion`, e.g. `ch4:ucx`, `ch4:ofi`,
/// `ch3:nemesis`); `unknown` when it cannot be found out.
pub fn mpich_device() -> String {
    let out = which("mpichversion").and_then(|p| Command::new(p).output().ok());
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MPICH Device:").map(|d| d.trim().to_string()))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Environment that forces MPICH's network path between ranks of one host, on `lo`, for its
/// device: shared memory off, and the network module restricted to TCP on loopback.
pub fn mpich_net_env(device: &str) -> Vec<(&'static str, &'static str)> {
    let ch4_shm_off = [("MPIR_CVAR_CH4_SHM_ENABLE", "0"), ("MPIR_CVAR_NOLOCAL", "1")];
    let ucx = [("UCX_TLS", "tcp,self"), ("UCX_NET_DEVICES", "lo")];
    let ofi = [("FI_PROVIDER", "tcp;ofi_rxm"), ("FI_TCP_IFACE", "lo")];
    let ch3 = [
        ("MPIR_CVAR_NOLOCAL", "1"),
        ("MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE", "lo"),
        ("MPIR_CVAR_CH3_INTERFACE_HOSTNAME", "127.0.0.1"),
    ];
    let mut env = Vec::new();
    if device.starts_with("ch4:ucx") {
        env.extend(ch4_shm_off.iter().chain(&ucx));
    } else if device.starts_with("ch4:ofi") {
        env.extend(ch4_shm_off.iter().chain(&ofi));
    } else if device.starts_with("ch3") {
        env.extend(&ch3);
    } else {
        env.extend(ch4_shm_off.iter().chain(&ucx).chain(&ofi).chain(&ch3[1..]));
    }
    env
}

/// First `name` on `$PATH`.
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// `<target>/peers`: next to `<target>/release` (or `debug`) holding this executable;
/// `$WEFT_BENCH_PEER_DIR` overrides.
pub(crate) fn build_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("WEFT_BENCH_PEER_DIR") {
        return PathBuf::from(d);
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("weft-bench"));
    let dir = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    // target/release/weft-bench -> target/peers; target/release/deps/… -> target/peers
    let profile_dir =
        if dir.ends_with("deps") { dir.parent().map(Path::to_path_buf).unwrap_or(dir) } else { dir };
    match profile_dir.parent() {
        Some(target) if target.join("CACHEDIR.TAG").exists() || target.ends_with("target") => {
            target.join("peers")
        }
        _ => profile_dir.join("peers"),
    }
}

/// The source file: the checked-in one when present, else the embedded copy written out.
fn source(dir: &Path) -> Result<PathBuf, String> {
    let checked_in = PathBuf::from(SOURCE_PATH);
    if checked_in.is_file() {
        return Ok(checked_in);
    }
    let p = dir.join("osu_p2p.c");
    if std::fs::read_to_string(&p).ok().as_deref() != Some(SOURCE) {
        std::fs::write(&p, SOURCE).map_err(|e| format!("write {}: {e}", p.display()))?;
    }
    Ok(p)
}

fn mtime(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Builds `<dir>/osu_p2p.<peer>` when missing or older than the source.
pub fn ensure_built(peer: Peer) -> Result<PathBuf, PeerError> {
    let mpicc = peer.mpicc_path()?;
    let build_err = |msg: String| PeerError::Build { peer: peer.name(), msg };
    let dir = build_dir();
    std::fs::create_dir_all(&dir).map_err(|e| build_err(format!("{}: {e}", dir.display())))?;
    let src = source(&dir).map_err(build_err)?;
    let exe = dir.join(format!("osu_p2p.{}", peer.name()));
    let fresh = match (mtime(&exe), mtime(&src)) {
        (Some(b), Some(s)) => b >= s,
        _ => false,
    };
    if fresh {
        return Ok(exe);
    }
    eprintln!("weft-bench: building {} with {}", exe.display(), mpicc.display());
    let tmp = dir.join(format!(".osu_p2p.{}.{}.tmp", peer.name(), std::process::id()));
    let mut cmd = Command::new(&mpicc);
    cmd.args(["-O2", "-o"]).arg(&tmp).arg(&src);
    let out = run_job(&format!("mpicc {}", peer.name()), cmd, BUILD_TIMEOUT, false);
    match out.result {
        // The compiler prints no CSV rows: "no rows" is success here.
        Ok(()) | Err(JobError::NoRows) => {}
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(build_err(e.to_string()));
        }
    }
    std::fs::rename(&tmp, &exe).map_err(|e| build_err(format!("{}: {e}", exe.display())))?;
    Ok(exe)
}

/// Builds (if needed) and runs one peer; rows carry impl = the peer's name.
pub fn run(peer: Peer, cli: &Cli) -> Result<JobOutput, PeerError> {
    let mpirun = peer.mpirun_path()?;
    let prog = ensure_built(peer)?;
    let n = cli.ranks.to_string();
    let mut cmd = Command::new(mpirun);
    match peer {
        Peer::OpenMpi => {
            let ncores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let bind = if cli.no_pin {
                "none"
            } else if cli.ranks as usize > ncores {
                "core:overload-allowed"
            } else {
                "core"
            };
            cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .args(["--allow-run-as-root", "--oversubscribe", "-n", &n])
                .args(["--bind-to", bind, "--map-by", "core"]);
            if cli.net_mode() {
                // TCP BTL on loopback only; ob1 so that no UCX PML takes over.
                cmd.args(["--mca", "pml", "ob1", "--mca", "btl", "self,tcp"]).args([
                    "--mca",
                    "btl_tcp_if_include",
                    "lo",
                    "--mca",
                    "oob_tcp_if_include",
                    "lo",
                ]);
            } else {
                cmd.args(["--mca", "btl", "self,vader"]);
            }
        }
        Peer::Mpich => {
            let bind = if cli.no_pin { "none" } else { "core" };
            if cli.net_mode() {
                cmd.envs(mpich_net_env(&mpich_device())).args(["-iface", "lo"]);
            }
            cmd.args(["-n", &n, "-bind-to", bind]);
        }
        Peer::MpichOfi => {
            let w = mpich_wheel().ok_or_else(|| peer.unavailable(peer.mpirun()))?;
            let bind = if cli.no_pin { "none" } else { "core" };
            cmd.envs(w.libfabric_env()).envs(w.net_env()).args(["-iface", "lo"]);
            cmd.args(["-n", &n, "-bind-to", bind]);
        }
    }
    cmd.arg(prog).arg(peer.name()).args(cli.worker_args());
    // MPICH 4.0 over UCX/TCP sometimes deadlocks in MPI_Finalize (one rank in the PMI barrier,
    // the other flushing its UCX endpoint towards it): the rows are complete by then.
    let grace = Some(Duration::from_secs(cli.timeout.clamp(1, 15)));
    Ok(run_job_grace(peer.name(), cmd, Duration::from_secs(cli.timeout), true, grace))
}
