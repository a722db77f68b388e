//! Process management of `weft-run`: program lookup, the private directory (control socket,
//! PMIx server rendezvous files), spawning ranks with pidfds, killing and reaping.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{access, AccessFlags, Pid};

/// Find `prog` like `execvp` would; `Err` is a message for the user.
pub fn resolve_program(prog: &OsStr) -> Result<PathBuf, String> {
    let p = Path::new(prog);
    if prog.is_empty() {
        return Err("empty program name".into());
    }
    if prog.as_encoded_bytes().contains(&b'/') {
        return check_executable(p).map(|()| p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let mut last_err = None;
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(p);
        if cand.exists() {
            match check_executable(&cand) {
                Ok(()) => return Ok(cand),
                Err(e) => last_err = Some(e),
            }
        }
    }
    Err(last_err.unwrap_or_else(|| format!("program not found: {}", p.display())))
}

fn check_executable(p: &Path) -> Result<(), String> {
    let md = fs::metadata(p).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("program not found: {}", p.display()),
        _ => format!("cannot access {}: {e}", p.display()),
    })?;
    if !md.is_file() || md.permissions().mode() & 0o111 == 0 || access(p, AccessFlags::X_OK).is_err() {
        return Err(format!("not an executable file: {}", p.display()));
    }
    Ok(())
}

/// A few random bytes in hex (for the job id and the directory name).
pub fn random_hex() -> String {
    let mut b = [0u8; 6];
    let ok = fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_ok();
    if !ok {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b.copy_from_slice(&t.to_le_bytes()[..6]);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The launcher's private 0700 directory holding its control socket and the PMIx server's
/// files. Removed on drop, together with any `/dev/shm` entry named after the job.
pub struct RunDir {
    pub dir: PathBuf,
    /// The fault-injection control socket.
    pub sock: PathBuf,
    job_id: String,
}

impl RunDir {
    pub fn create(job_id: &str) -> io::Result<RunDir> {
        let tmp = std::env::temp_dir();
        // sun_path holds 108 bytes; fall back to /tmp when TMPDIR is too long.
        let bases = [tmp, PathBuf::from("/tmp")];
        let mut last = io::Error::other("no usable temporary directory");
        for base in bases {
            let dir = base.join(format!("weft-run.{}", job_id));
            let sock = dir.join("sock");
            if sock.as_os_str().len() >= 100 {
                continue;
            }
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
                    return Ok(RunDir { dir, sock, job_id: job_id.to_owned() });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.sock);
        let _ = fs::remove_dir_all(&self.dir);
        cleanup_shm(&self.job_id);
    }
}

/// Remove `/dev/shm/<jobid>*` and `/dev/shm/weft-<jobid>*` (named segments a transport may
/// have left behind when ranks were killed).
pub fn cleanup_shm(job_id: &str) {
    let Ok(rd) = fs::read_dir("/dev/shm") else {
        return;
    };
    let alt = format!("weft-{job_id}");
    for ent in rd.flatten() {
        let name = ent.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(job_id) || name.starts_with(&alt) {
            let p = ent.path();
            if ent.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                let _ = fs::remove_dir_all(&p);
            } else {
                let _ = fs::remove_file(&p);
            }
        }
    }
}

/// How a reaped rank ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
}

impl Ended {
    pub fn describe(self) -> String {
        match self {
            Ended::Exited(c) => format!("exited with status {c}"),
            Ended::Signaled(s) => {
                let name = Signal::try_from(s).map(|s| s.as_str()).unwrap_or("unknown signal");
                format!("killed by signal {s} ({name})")
            }
        }
    }
}

/// One started rank.
pub struct Proc {
    pub pid: Pid,
    pub pidfd: OwnedFd,
    pub ended: Option<Ended>,
}

impl Proc {
    /// SIGKILL the process if it has not been reaped yet (its pid cannot have been reused).
    pub fn kill(&self) {
        if self.ended.is_none() {
            let _ = kill(self.pid, Signal::SIGKILL);
        }
    }

    /// Non-blocking reap; `Some` once the process has ended.
    pub fn try_reap(&mut self) -> Option<Ended> {
        if self.ended.is_some() {
            return self.ended;
        }
        self.ended = match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, c)) => Some(Ended::Exited(c)),
            Ok(WaitStatus::Signaled(_, s, _)) => Some(Ended::Signaled(s as i32)),
            Ok(_) => None,
            // ECHILD: somebody else reaped it; count it as killed.
            Err(nix::errno::Errno::ECHILD) => Some(Ended::Signaled(Signal::SIGKILL as i32)),
            Err(_) => None,
        };
        self.ended
    }

    /// Blocking reap (after `kill`).
    pub fn reap(&mut self) -> Ended {
        loop {
            if let Some(e) = self.try_reap() {
                return e;
            }
            match waitpid(self.pid, None) {
                Ok(WaitStatus::Exited(_, c)) => self.ended = Some(Ended::Exited(c)),
                Ok(WaitStatus::Signaled(_, s, _)) => self.ended = Some(Ended::Signaled(s as i32)),
                Err(nix::errno::Errno::ECHILD) => self.ended = Some(Ended::Signaled(Signal::SIGKILL as i32)),
                _ => {}
            }
        }
    }
}

/// What every rank's environment gets (owned: the event loop keeps it to respawn ranks).
pub struct SpawnSpec {
    pub prog: PathBuf,
    /// `LD_LIBRARY_PATH` of every rank (`None`: inherited as it is).
    pub ld_library_path: Option<OsString>,
    /// `GLIBC_TUNABLES` of every rank (`None`: inherited as it is; see `tunables.rs`).
    pub glibc_tunables: Option<OsString>,
    pub argv0: OsString,
    pub args: Vec<OsString>,
    /// The fault-injection control socket (`WEFT_RUN_CTL`).
    pub ctl: PathBuf,
    /// Node of every rank (a respawn on a spare node changes it).
    pub node_of: Vec<u32>,
    /// `WEFT_FI_DOMAIN` of every node (`None`: leave the environment alone).
    pub fi_domains: Vec<Option<String>>,
    /// Network namespace of every node (`--netns`), entered with `setns` before exec.
    pub netns_fds: Vec<RawFd>,
    /// CPU set of every rank (`--bind-to`), applied with `sched_setaffinity` before exec.
    pub cpus: Vec<Option<CpuSet>>,
    /// The failure board's descriptor (inherited; named in `WEFT_RUN_BOARD`).
    pub board_fd: Option<RawFd>,
}

/// Start rank `rank` in process group `pgid` (`None`: a new group led by this child), with
/// `pmix_env` (from `PMIx_server_setup_fork`) added to its environment; `epoch` is set for a
/// process respawned by global restart (`WEFT_REINIT_EPOCH`).
pub fn spawn_rank(
    spec: &SpawnSpec,
    rank: u32,
    pmix_env: &[(OsString, OsString)],
    pgid: Option<Pid>,
    epoch: Option<u64>,
) -> io::Result<Proc> {
    let mut role = vec![(weft_pmix::epoch::ENV_RANK, rank.to_string())];
    if let Some(e) = epoch {
        role.push((weft_pmix::epoch::ENV_EPOCH, e.to_string()));
    }
    let node = spec.node_of[rank as usize] as usize;
    spawn_process(spec, node, rank, &role, pmix_env, pgid)
}

/// Start a global-restart standby: the program, started ahead of any failure on node 0
/// (host slot `size`), which waits in the epoch service until weft-run hands it the rank of
/// a failed process (`WEFT_REINIT_STANDBY`).
pub fn spawn_standby(spec: &SpawnSpec, pgid: Option<Pid>) -> io::Result<Proc> {
    let slot = spec.node_of.len() as u32;
    spawn_process(spec, 0, slot, &[(weft_pmix::epoch::ENV_STANDBY, "1".into())], &[], pgid)
}

fn spawn_process(
    spec: &SpawnSpec,
    node: usize,
    slot: u32,
    role: &[(&str, String)],
    pmix_env: &[(OsString, OsString)],
    pgid: Option<Pid>,
) -> io::Result<Proc> {
    let mut cmd = Command::new(&spec.prog);
    if let Some(dom) = spec.fi_domains.get(node).and_then(|d| d.as_ref()) {
        cmd.env("WEFT_FI_DOMAIN", dom);
    }
    if let Some(path) = &spec.ld_library_path {
        cmd.env("LD_LIBRARY_PATH", path);
    }
    if let Some(t) = &spec.glibc_tunables {
        cmd.env(crate::tunables::ENV, t);
    }
    let netns = spec.netns_fds.get(node).copied();
    let cpus = spec.cpus.get(slot as usize).copied().flatten();
    cmd.arg0(&spec.argv0)
        .args(&spec.args)
        .envs(pmix_env.iter().map(|(k, v)| (k, v)))
        .env(weft_pmix::launcher::ENV_CTL, &spec.ctl)
        .env(weft_pmix::launcher::ENV_HOST_SLOT, slot.to_string())
        .envs(role.iter().map(|(k, v)| (k, v)))
        .envs(spec.board_fd.map(|fd| (weft_pmix::board::ENV_BOARD, fd.to_string())))
        .process_group(pgid.map(|p| p.as_raw()).unwrap_or(0))
        .stdin(if slot == 0 { Stdio::inherit() } else { Stdio::null() });
    let parent = nix::unistd::getpid().as_raw();
    let in_child = move || {
        if let Some(fd) = netns {
            // SAFETY: `fd` is an open namespace handle owned by the launcher (inherited across
            // fork, closed at exec); setns is async-signal-safe.
            if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(set) = &cpus {
            // sched_setaffinity is a plain syscall (async-signal-safe) on a stack copy.
            sched_setaffinity(Pid::from_raw(0), set).map_err(|e| io::Error::from_raw_os_error(e as i32))?;
        }
        // SAFETY: plain syscalls with valid constant or stack arguments.
        let ok = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) == 0
                && libc::getppid() == parent
        };
        if ok {
            Ok(())
        } else {
            // The launcher died between fork and prctl (or prctl failed): do not run.
            Err(io::Error::from_raw_os_error(libc::ESRCH))
        }
    };
    // SAFETY: `in_child` runs in the forked child before exec and only makes
    // async-signal-safe calls (setns, sched_setaffinity, sigprocmask, prctl, getppid); it does not allocate or
    // lock (`io::Error::last_os_error` / `from_raw_os_error` build an OS error without
    // allocating).
    unsafe {
        cmd.pre_exec(in_child);
    }
    let child = cmd.spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    // We reap through waitpid on the pid; the std handle is not needed.
    drop(child);
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; the child
    // is unreaped so the pid refers to it.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        let _ = kill(pid, Signal::SIGKILL);
        let _ = waitpid(pid, None);
        return Err(io::Error::new(e.kind(), format!("pidfd_open: {e}")));
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    Ok(Proc { pid, pidfd, ended: None })
}

/// SIGKILL every unreaped rank (and the process group while its leader is unreaped, which
/// guarantees the group id still names our group), then reap them all.
pub fn kill_and_reap_all(procs: &mut [&mut Proc], pgid: Option<Pid>) {
    if let (Some(g), Some(leader)) = (pgid, procs.iter().find(|p| Some(p.pid) == pgid)) {
        if leader.ended.is_none() {
            let _ = killpg(g, Signal::SIGKILL);
        }
    }
    for p in procs.iter() {
        p.kill();
    }
    for p in procs.iter_mut() {
        p.reap();
    }
}
