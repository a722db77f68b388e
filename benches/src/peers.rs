//! The MPI peer programs: `benches/peers/osu_p2p.c` built with each MPI's compiler wrapper into
//! `<target>/peers/osu_p2p.<impl>` (on demand, when missing or older than the source) and
//! launched with that MPI's `mpirun`, under the same hard timeout as the weft job.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::driver::{run_job, run_job_grace, JobOutput};
use crate::Cli;

/// The peer source, embedded so that a relocated binary can still build its peers.
const SOURCE: &str = include_str!("../peers/osu_p2p.c");
const SOURCE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/peers/osu_p2p.c");
const BUILD_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    OpenMpi,
    Mpich,
}

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("peer {peer} unavailable: {tool} not found (install {pkgs})")]
    Unavailable { peer: &'static str, tool: &'static str, pkgs: &'static str },
    #[error("peer {peer}: build failed: {msg}")]
    Build { peer: &'static str, msg: String },
}

impl Peer {
    pub const ALL: [Peer; 2] = [Peer::OpenMpi, Peer::Mpich];

    pub fn name(self) -> &'static str {
        match self {
            Peer::OpenMpi => "openmpi",
            Peer::Mpich => "mpich",
        }
    }

    pub(crate) fn mpicc(self) -> &'static str {
        match self {
            Peer::OpenMpi => "mpicc.openmpi",
            Peer::Mpich => "mpicc.mpich",
        }
    }

    pub(crate) fn mpirun(self) -> &'static str {
        match self {
            Peer::OpenMpi => "mpirun.openmpi",
            Peer::Mpich => "mpirun.mpich",
        }
    }

    fn packages(self) -> &'static str {
        match self {
            Peer::OpenMpi => "openmpi-bin libopenmpi-dev",
            Peer::Mpich => "mpich libmpich-dev",
        }
    }

    pub(crate) fn unavailable(self, tool: &'static str) -> PeerError {
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
        }
    }
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
    let mpicc = which(peer.mpicc()).ok_or_else(|| peer.unavailable(peer.mpicc()))?;
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
        Ok(()) | Err(crate::driver::JobError::NoRows) => {}
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
    let mpirun = which(peer.mpirun()).ok_or_else(|| peer.unavailable(peer.mpirun()))?;
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
    }
    cmd.arg(prog).arg(peer.name()).args(cli.worker_args());
    // MPICH 4.0 over UCX/TCP sometimes deadlocks in MPI_Finalize (one rank in the PMI barrier,
    // the other flushing its UCX endpoint towards it): the rows are complete by then.
    let grace = Some(Duration::from_secs(cli.timeout.clamp(1, 15)));
    Ok(run_job_grace(peer.name(), cmd, Duration::from_secs(cli.timeout), true, grace))
}
