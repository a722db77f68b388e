//! Client side of the embedded launcher `weft-run`: [`LauncherRuntime`].
//!
//! `weft-run -n N prog args…` starts N copies of `prog` on this host and leaves in each one's
//! environment:
//!
//! | variable           | meaning                                                        |
//! |--------------------|----------------------------------------------------------------|
//! | `WEFT_RUN_SOCK`    | path of the launcher's Unix socket (in a private 0700 dir)     |
//! | `WEFT_RANK`        | this process's rank, `0..WEFT_SIZE`                            |
//! | `WEFT_SIZE`        | number of ranks                                                |
//! | `WEFT_JOBID`       | job identifier unique on this host (`weft-<pid>-<random>`)     |
//! | `WEFT_NODE`        | (virtual) node id of this process, dense from 0                |
//! | `WEFT_LOCAL_RANKS` | comma-separated ranks on this node, increasing, self included  |
//! | `WEFT_HOST_SLOT`   | this process's index among all ranks on the physical host (for core binding: virtual nodes share the host's cores) |
//!
//! With `weft-run --nodes K` / `--map` the ranks are spread over K virtual nodes in contiguous
//! blocks; the node of *every* rank arrives in the launcher's WELCOME frame (protocol version
//! 2), so [`Runtime::node_of`] never does a round trip, and `connect` checks it against
//! `WEFT_NODE` / `WEFT_LOCAL_RANKS`.
//!
//! Fault injection for tests: [`LauncherRuntime::kill_node`] / [`LauncherRuntime::kill_rank`]
//! ask the launcher to SIGKILL a whole virtual node or one rank and return once it is done and
//! every survivor has been sent TERMINATED for each victim. [`LauncherControl`] does the same
//! over a separate connection, for code that does not own the rank's runtime object.
//!
//! The rank connects to the socket and talks the small framed protocol of [`protocol`]. The
//! socket is kept in non-blocking mode: [`Runtime::poll_terminated`] costs exactly one failed
//! `recv` when nothing arrived, and an engine that wants to sleep can `poll()` the descriptor
//! returned by [`LauncherRuntime::as_raw_fd`] (after calling `poll_terminated`, which drains
//! whatever was already buffered).
//!
//! `put` buffers locally; `commit` sends the buffered pairs; `fence` (which commits first if
//! needed) waits for the launcher's FENCE_DONE that carries every committed pair of the job, so
//! `get` never does a round trip.

pub mod protocol;

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recv, send, MsgFlags};

use self::protocol::{FrameReader, ToLauncher, ToRank, MAX_FRAME, VERSION};
use crate::{Runtime, RuntimeError};

/// Path of the launcher's Unix socket.
pub const ENV_SOCK: &str = "WEFT_RUN_SOCK";
/// This process's rank.
pub const ENV_RANK: &str = "WEFT_RANK";
/// Number of ranks in the job.
pub const ENV_SIZE: &str = "WEFT_SIZE";
/// Job identifier, unique on this host.
pub const ENV_JOBID: &str = "WEFT_JOBID";
/// Node id of this process.
pub const ENV_NODE: &str = "WEFT_NODE";
/// Comma-separated list of the ranks on this process's node.
pub const ENV_LOCAL_RANKS: &str = "WEFT_LOCAL_RANKS";
/// Index of this process among all ranks on the physical host. Virtual nodes share the
/// host's cores, so binding must use this rather than the node-local rank.
pub const ENV_HOST_SLOT: &str = "WEFT_HOST_SLOT";

/// How long `connect` waits for the launcher's WELCOME.
const WELCOME_TIMEOUT: Duration = Duration::from_secs(30);

/// The job description `weft-run` leaves in a rank's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchEnv {
    pub sock: PathBuf,
    pub rank: u32,
    pub size: u32,
    pub job_id: String,
    pub node: u32,
    pub local_ranks: Vec<u32>,
}

impl LaunchEnv {
    /// Read the process environment.
    pub fn from_env() -> Result<LaunchEnv, RuntimeError> {
        LaunchEnv::from_lookup(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
    }

    /// Parse from any key → value lookup (testable without touching the process environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<LaunchEnv, RuntimeError> {
        let need = |k: &str| get(k).ok_or_else(|| RuntimeError::Env(format!("{k} is not set")));
        let num = |k: &str| -> Result<u32, RuntimeError> {
            let v = need(k)?;
            v.trim()
                .parse::<u32>()
                .map_err(|_| RuntimeError::Env(format!("{k}={v:?} is not a non-negative integer")))
        };
        let sock = need(ENV_SOCK)?;
        if sock.is_empty() {
            return Err(RuntimeError::Env(format!("{ENV_SOCK} is empty")));
        }
        let size = num(ENV_SIZE)?;
        if size == 0 {
            return Err(RuntimeError::Env(format!("{ENV_SIZE} must be at least 1")));
        }
        let rank = num(ENV_RANK)?;
        if rank >= size {
            return Err(RuntimeError::Env(format!("{ENV_RANK}={rank} is not below {ENV_SIZE}={size}")));
        }
        let job_id = need(ENV_JOBID)?;
        if job_id.is_empty() {
            return Err(RuntimeError::Env(format!("{ENV_JOBID} is empty")));
        }
        let node = num(ENV_NODE)?;
        let list = need(ENV_LOCAL_RANKS)?;
        let mut local_ranks = Vec::new();
        for part in list.split(',') {
            let r: u32 = part.trim().parse().map_err(|_| {
                RuntimeError::Env(format!("{ENV_LOCAL_RANKS}={list:?}: {part:?} is not a rank"))
            })?;
            if r >= size {
                return Err(RuntimeError::Env(format!(
                    "{ENV_LOCAL_RANKS}={list:?}: rank {r} >= size {size}"
                )));
            }
            local_ranks.push(r);
        }
        if local_ranks.windows(2).any(|w| w[0] >= w[1]) {
            return Err(RuntimeError::Env(format!("{ENV_LOCAL_RANKS}={list:?} is not strictly increasing")));
        }
        if !local_ranks.contains(&rank) {
            return Err(RuntimeError::Env(format!(
                "{ENV_LOCAL_RANKS}={list:?} does not contain own rank {rank}"
            )));
        }
        Ok(LaunchEnv { sock: PathBuf::from(sock), rank, size, job_id, node, local_ranks })
    }
}

/// Result of the fence we are waiting for.
enum FenceResult {
    Done(Vec<(u32, String, Vec<u8>)>),
    Failed(Vec<u32>),
}

/// [`Runtime`] backend for ranks started by `weft-run`.
pub struct LauncherRuntime {
    sock: UnixStream,
    env: LaunchEnv,
    rx: FrameReader,
    scratch: Vec<u8>,
    /// Pairs put since the last commit.
    pending: Vec<(String, Vec<u8>)>,
    /// Everything this rank put (committed or not), for local `get` of its own keys.
    own: HashMap<String, Vec<u8>>,
    /// Key-value set of the whole job as of the last successful fence.
    store: HashMap<u32, HashMap<String, Vec<u8>>>,
    /// Epoch of the last fence entered.
    epoch: u32,
    fence_result: Option<(u32, FenceResult)>,
    /// Terminations received but not yet handed out by `poll_terminated`.
    terminated: Vec<u32>,
    reported: Vec<bool>,
    /// Set when the launcher closed the connection or sent garbage.
    broken: Option<String>,
    finalized: bool,
    /// `nodes[r]`: node of rank `r`, from WELCOME.
    nodes: Vec<u32>,
    /// Answer to the last KILL_RANK / KILL_NODE.
    kill_done: Option<Vec<u32>>,
}

impl LauncherRuntime {
    /// Connect to the launcher named by the environment (see the module documentation).
    pub fn connect() -> Result<LauncherRuntime, RuntimeError> {
        LauncherRuntime::connect_with(LaunchEnv::from_env()?)
    }

    /// Connect with an explicit job description.
    pub fn connect_with(env: LaunchEnv) -> Result<LauncherRuntime, RuntimeError> {
        let sock = UnixStream::connect(&env.sock).map_err(|e| {
            RuntimeError::Io(io::Error::new(e.kind(), format!("connecting to {}: {e}", env.sock.display())))
        })?;
        sock.set_nonblocking(true)?;
        let size = env.size as usize;
        let mut rt = LauncherRuntime {
            sock,
            env,
            rx: FrameReader::new(),
            scratch: vec![0; 64 << 10],
            pending: Vec::new(),
            own: HashMap::new(),
            store: HashMap::new(),
            epoch: 0,
            fence_result: None,
            terminated: Vec::new(),
            reported: vec![false; size],
            broken: None,
            finalized: false,
            nodes: Vec::new(),
            kill_done: None,
        };
        rt.send(&ToLauncher::Hello { version: VERSION, rank: rt.env.rank, pid: std::process::id() })?;
        // The first frame must be WELCOME.
        let deadline = Instant::now() + WELCOME_TIMEOUT;
        loop {
            if let Some(body) = rt.rx.next_frame().map_err(|e| RuntimeError::Launcher(e.to_string()))? {
                match ToRank::decode(body).map_err(|e| RuntimeError::Launcher(e.to_string()))? {
                    ToRank::Welcome { version, size, nodes } => {
                        if version != VERSION {
                            return Err(RuntimeError::Launcher(format!(
                                "launcher speaks protocol version {version}, this rank {VERSION}"
                            )));
                        }
                        if size != rt.env.size {
                            return Err(RuntimeError::Launcher(format!(
                                "launcher says job size {size}, environment says {}",
                                rt.env.size
                            )));
                        }
                        check_node_map(&rt.env, &nodes)?;
                        rt.nodes = nodes;
                        return Ok(rt);
                    }
                    other => {
                        return Err(RuntimeError::Launcher(format!("expected WELCOME, got {other:?}")));
                    }
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RuntimeError::Launcher("no WELCOME from the launcher within 30 s".into()));
            }
            rt.wait_readable(Some(deadline - now))?;
            if rt.fill()? == Fill::Eof {
                return Err(RuntimeError::Launcher("launcher closed the connection during hello".into()));
            }
        }
    }

    /// The socket descriptor, for `poll()`/`epoll` when the engine wants to sleep until the
    /// launcher has something to say. Call [`Runtime::poll_terminated`] before sleeping: data
    /// already read into the internal buffer does not make the descriptor readable.
    pub fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// The job description this runtime was started with.
    pub fn launch_env(&self) -> &LaunchEnv {
        &self.env
    }

    /// Node of every rank, indexed by rank.
    pub fn node_map(&self) -> &[u32] {
        &self.nodes
    }

    /// Number of (virtual) nodes of the job.
    pub fn num_nodes(&self) -> u32 {
        self.nodes.iter().max().map_or(1, |m| m + 1)
    }

    /// Fault injection: ask the launcher to SIGKILL every rank of `node` at once. Returns when
    /// they are dead and every other live rank has been sent TERMINATED for each of them, with
    /// the ranks that were killed (ranks already dead are not listed). If this rank is on
    /// `node` it dies too and the call does not return. The TERMINATED events this rank
    /// receives meanwhile are kept for [`Runtime::poll_terminated`].
    pub fn kill_node(&mut self, node: u32) -> Result<Vec<u32>, RuntimeError> {
        let nn = self.num_nodes();
        if node >= nn {
            return Err(RuntimeError::Launcher(format!("kill_node({node}): the job has {nn} nodes")));
        }
        self.request_kill(&ToLauncher::KillNode { node })
    }

    /// Fault injection: ask the launcher to SIGKILL rank `rank` (see [`Self::kill_node`]).
    pub fn kill_rank(&mut self, rank: u32) -> Result<Vec<u32>, RuntimeError> {
        if rank >= self.env.size {
            return Err(RuntimeError::BadRank { rank, size: self.env.size });
        }
        self.request_kill(&ToLauncher::KillRank { rank })
    }

    fn request_kill(&mut self, msg: &ToLauncher) -> Result<Vec<u32>, RuntimeError> {
        self.check_usable()?;
        self.kill_done = None;
        self.send(msg)?;
        loop {
            self.drain_frames()?;
            if let Some(ranks) = self.kill_done.take() {
                return Ok(ranks);
            }
            if self.fill()? == Fill::Empty {
                self.wait_readable(None)?;
            } else if let Some(why) = &self.broken {
                return Err(RuntimeError::Launcher(why.clone()));
            }
        }
    }

    /// Why the launcher connection is unusable, if it is (launcher gone or sent garbage).
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn check_usable(&self) -> Result<(), RuntimeError> {
        if self.finalized {
            return Err(RuntimeError::Launcher("runtime already finalized".into()));
        }
        if let Some(why) = &self.broken {
            return Err(RuntimeError::Launcher(why.clone()));
        }
        Ok(())
    }

    /// Write a whole frame, waiting for socket space if needed. MSG_NOSIGNAL: a dead launcher
    /// gives `EPIPE`, never `SIGPIPE`.
    fn send(&mut self, msg: &ToLauncher) -> Result<(), RuntimeError> {
        let frame = msg.encode();
        if frame.len() - 4 > MAX_FRAME {
            return Err(RuntimeError::Launcher(format!(
                "frame of {} bytes exceeds the protocol limit",
                frame.len()
            )));
        }
        let mut off = 0;
        while off < frame.len() {
            match send(self.sock.as_raw_fd(), &frame[off..], MsgFlags::MSG_NOSIGNAL) {
                Ok(n) => off += n,
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => {
                    let mut fds = [PollFd::new(self.sock.as_fd(), PollFlags::POLLOUT)];
                    match poll(&mut fds, PollTimeout::NONE) {
                        Ok(_) | Err(Errno::EINTR) => {}
                        Err(e) => return Err(io::Error::from(e).into()),
                    }
                }
                Err(e) => {
                    self.broken = Some(format!("sending to the launcher failed: {e}"));
                    return Err(io::Error::from(e).into());
                }
            }
        }
        Ok(())
    }

    /// One non-blocking `recv` into the frame buffer.
    fn fill(&mut self) -> Result<Fill, RuntimeError> {
        loop {
            match recv(self.sock.as_raw_fd(), &mut self.scratch, MsgFlags::MSG_DONTWAIT) {
                Ok(0) => {
                    self.broken = Some("the launcher closed the connection".into());
                    return Ok(Fill::Eof);
                }
                Ok(n) => {
                    self.rx.push(&self.scratch[..n]);
                    return Ok(Fill::Data);
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return Ok(Fill::Empty),
                Err(e) => {
                    self.broken = Some(format!("receiving from the launcher failed: {e}"));
                    return Err(io::Error::from(e).into());
                }
            }
        }
    }

    fn wait_readable(&self, timeout: Option<Duration>) -> Result<(), RuntimeError> {
        let t = match timeout {
            None => PollTimeout::NONE,
            Some(d) => PollTimeout::try_from(d.as_millis().clamp(1, i32::MAX as u128) as i32)
                .unwrap_or(PollTimeout::NONE),
        };
        let mut fds = [PollFd::new(self.sock.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, t) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(io::Error::from(e).into()),
        }
    }

    /// Decode every complete buffered frame.
    fn drain_frames(&mut self) -> Result<(), RuntimeError> {
        loop {
            let msg = match self.rx.next_frame() {
                Ok(Some(body)) => ToRank::decode(body),
                Ok(None) => return Ok(()),
                Err(e) => Err(e),
            };
            let msg = match msg {
                Ok(m) => m,
                Err(e) => {
                    let why = format!("malformed frame from the launcher: {e}");
                    self.broken = Some(why.clone());
                    return Err(RuntimeError::Launcher(why));
                }
            };
            match msg {
                ToRank::Terminated { rank } => self.note_terminated(rank),
                ToRank::FenceDone { epoch, kvs } => self.fence_result = Some((epoch, FenceResult::Done(kvs))),
                ToRank::FenceFailed { epoch, ranks } => {
                    for &r in &ranks {
                        self.note_terminated(r);
                    }
                    self.fence_result = Some((epoch, FenceResult::Failed(ranks)));
                }
                ToRank::KillDone { ranks } => self.kill_done = Some(ranks),
                ToRank::Welcome { .. } => {
                    let why = "unexpected second WELCOME from the launcher".to_string();
                    self.broken = Some(why.clone());
                    return Err(RuntimeError::Launcher(why));
                }
            }
        }
    }

    fn note_terminated(&mut self, rank: u32) {
        if let Some(seen) = self.reported.get_mut(rank as usize) {
            if !*seen && rank != self.env.rank {
                *seen = true;
                self.terminated.push(rank);
            }
        }
    }
}

/// The node map of WELCOME must agree with this rank's environment.
fn check_node_map(env: &LaunchEnv, nodes: &[u32]) -> Result<(), RuntimeError> {
    if nodes.len() != env.size as usize {
        return Err(RuntimeError::Launcher(format!(
            "launcher sent a node map of {} ranks for a job of {}",
            nodes.len(),
            env.size
        )));
    }
    if nodes[env.rank as usize] != env.node {
        return Err(RuntimeError::Launcher(format!(
            "launcher places rank {} on node {}, {ENV_NODE} says {}",
            env.rank, nodes[env.rank as usize], env.node
        )));
    }
    let mine: Vec<u32> = (0..env.size).filter(|&r| nodes[r as usize] == env.node).collect();
    if mine != env.local_ranks {
        return Err(RuntimeError::Launcher(format!(
            "launcher's ranks on node {} are {mine:?}, {ENV_LOCAL_RANKS} says {:?}",
            env.node, env.local_ranks
        )));
    }
    Ok(())
}

/// A control connection to `weft-run` (not a rank): fault injection from code that does not
/// own the rank's [`LauncherRuntime`], e.g. a test program whose runtime lives inside the
/// engine. Blocking; each call returns once the launcher has carried the kill out.
pub struct LauncherControl {
    sock: UnixStream,
    rx: FrameReader,
}

impl LauncherControl {
    /// Connect to the launcher named by `WEFT_RUN_SOCK`.
    pub fn connect() -> Result<LauncherControl, RuntimeError> {
        let path =
            std::env::var_os(ENV_SOCK).ok_or_else(|| RuntimeError::Env(format!("{ENV_SOCK} is not set")))?;
        let sock = UnixStream::connect(&path).map_err(|e| {
            RuntimeError::Io(io::Error::new(
                e.kind(),
                format!("connecting to {}: {e}", path.to_string_lossy()),
            ))
        })?;
        let mut c = LauncherControl { sock, rx: FrameReader::new() };
        c.write(&ToLauncher::Control { version: VERSION })?;
        Ok(c)
    }

    /// SIGKILL every rank of `node`; returns the ranks killed.
    pub fn kill_node(&mut self, node: u32) -> Result<Vec<u32>, RuntimeError> {
        self.request(&ToLauncher::KillNode { node })
    }

    /// SIGKILL rank `rank`; returns the ranks killed (empty if it was already dead).
    pub fn kill_rank(&mut self, rank: u32) -> Result<Vec<u32>, RuntimeError> {
        self.request(&ToLauncher::KillRank { rank })
    }

    fn write(&mut self, msg: &ToLauncher) -> Result<(), RuntimeError> {
        let frame = msg.encode();
        let mut off = 0;
        while off < frame.len() {
            match send(self.sock.as_raw_fd(), &frame[off..], MsgFlags::MSG_NOSIGNAL) {
                Ok(n) => off += n,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(io::Error::from(e).into()),
            }
        }
        Ok(())
    }

    fn request(&mut self, msg: &ToLauncher) -> Result<Vec<u32>, RuntimeError> {
        self.write(msg)?;
        let mut buf = [0u8; 4096];
        loop {
            if let Some(body) = self.rx.next_frame().map_err(|e| RuntimeError::Launcher(e.to_string()))? {
                return match ToRank::decode(body).map_err(|e| RuntimeError::Launcher(e.to_string()))? {
                    ToRank::KillDone { ranks } => Ok(ranks),
                    other => Err(RuntimeError::Launcher(format!("expected KILL_DONE, got {other:?}"))),
                };
            }
            match recv(self.sock.as_raw_fd(), &mut buf, MsgFlags::empty()) {
                Ok(0) => {
                    return Err(RuntimeError::Launcher(
                        "the launcher closed the control connection (bad rank or node number?)".into(),
                    ))
                }
                Ok(n) => self.rx.push(&buf[..n]),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(io::Error::from(e).into()),
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Fill {
    Data,
    Empty,
    Eof,
}

impl AsFd for LauncherRuntime {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl AsRawFd for LauncherRuntime {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl Runtime for LauncherRuntime {
    fn backend(&self) -> &'static str {
        "weft-run"
    }

    fn job_id(&self) -> &str {
        &self.env.job_id
    }

    fn rank(&self) -> u32 {
        self.env.rank
    }

    fn size(&self) -> u32 {
        self.env.size
    }

    fn node_id(&self) -> u32 {
        self.env.node
    }

    fn node_of(&self, rank: u32) -> Result<u32, RuntimeError> {
        if let Some(&n) = self.nodes.get(rank as usize) {
            Ok(n)
        } else {
            Err(RuntimeError::BadRank { rank, size: self.env.size })
        }
    }

    fn local_peers(&self) -> &[u32] {
        &self.env.local_ranks
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), RuntimeError> {
        self.check_usable()?;
        self.own.insert(key.to_owned(), value.to_vec());
        self.pending.push((key.to_owned(), value.to_vec()));
        Ok(())
    }

    fn commit(&mut self) -> Result<(), RuntimeError> {
        self.check_usable()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let kvs = std::mem::take(&mut self.pending);
        self.send(&ToLauncher::Commit { kvs })
    }

    /// Commits any pending `put`s first, then waits for the launcher's verdict.
    fn fence(&mut self) -> Result<(), RuntimeError> {
        self.commit()?;
        self.epoch += 1;
        let epoch = self.epoch;
        self.send(&ToLauncher::Fence { epoch })?;
        loop {
            self.drain_frames()?;
            if let Some((e, res)) = self.fence_result.take() {
                if e != epoch {
                    let why = format!("launcher answered fence {e} while waiting for fence {epoch}");
                    self.broken = Some(why.clone());
                    return Err(RuntimeError::Launcher(why));
                }
                return match res {
                    FenceResult::Done(kvs) => {
                        self.store.clear();
                        for (r, k, v) in kvs {
                            self.store.entry(r).or_default().insert(k, v);
                        }
                        Ok(())
                    }
                    FenceResult::Failed(ranks) => Err(RuntimeError::FenceFailed(ranks)),
                };
            }
            if self.fill()? == Fill::Empty {
                self.wait_readable(None)?;
            } else if let Some(why) = &self.broken {
                return Err(RuntimeError::Launcher(why.clone()));
            }
        }
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        if rank >= self.env.size {
            return Err(RuntimeError::BadRank { rank, size: self.env.size });
        }
        if rank == self.env.rank {
            if let Some(v) = self.own.get(key) {
                return Ok(v.clone());
            }
        }
        self.store
            .get(&rank)
            .and_then(|m| m.get(key))
            .cloned()
            .ok_or_else(|| RuntimeError::NotFound { rank, key: key.to_owned() })
    }

    fn poll_terminated(&mut self, out: &mut Vec<u32>) {
        if self.broken.is_none() && !self.finalized {
            // One recv when nothing is there; keep reading while data keeps coming.
            while let Ok(Fill::Data) = self.fill() {}
            if self.rx.has_buffered() {
                // A decode error marks the connection broken; terminations seen so far stay.
                let _ = self.drain_frames();
            }
        }
        out.append(&mut self.terminated);
    }

    fn abort(&mut self, code: i32, msg: &str) -> ! {
        let sent =
            self.broken.is_none() && self.send(&ToLauncher::Abort { code, msg: msg.to_owned() }).is_ok();
        if !sent {
            eprintln!("weft: rank {} abort({code}): {msg}", self.env.rank);
        }
        std::process::exit(code)
    }

    fn finalize(&mut self) -> Result<(), RuntimeError> {
        self.check_usable()?;
        self.send(&ToLauncher::Finalize)?;
        self.finalized = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    const GOOD: &[(&str, &str)] = &[
        (ENV_SOCK, "/tmp/x/sock"),
        (ENV_RANK, "2"),
        (ENV_SIZE, "4"),
        (ENV_JOBID, "weft-1-ab"),
        (ENV_NODE, "0"),
        (ENV_LOCAL_RANKS, "0,1,2,3"),
    ];

    #[test]
    fn env_parses() {
        let e = LaunchEnv::from_lookup(lookup(GOOD)).unwrap();
        assert_eq!(e.rank, 2);
        assert_eq!(e.size, 4);
        assert_eq!(e.local_ranks, vec![0, 1, 2, 3]);
        assert_eq!(e.job_id, "weft-1-ab");
    }

    #[test]
    fn env_errors_are_typed() {
        let cases: &[(&str, Option<&str>)] = &[
            (ENV_SOCK, None),
            (ENV_RANK, Some("x")),
            (ENV_RANK, Some("4")),
            (ENV_RANK, Some("-1")),
            (ENV_SIZE, Some("0")),
            (ENV_JOBID, Some("")),
            (ENV_NODE, None),
            (ENV_LOCAL_RANKS, Some("0,1,,3")),
            (ENV_LOCAL_RANKS, Some("0,1")),
            (ENV_LOCAL_RANKS, Some("3,2")),
            (ENV_LOCAL_RANKS, Some("0,1,2,9")),
        ];
        for (key, val) in cases {
            let mut pairs: Vec<(&str, &str)> = GOOD.iter().filter(|(k, _)| k != key).copied().collect();
            if let Some(v) = val {
                pairs.push((key, v));
            }
            match LaunchEnv::from_lookup(lookup(&pairs)) {
                Err(RuntimeError::Env(_)) => {}
                other => panic!("{key}={val:?}: expected Env error, got {other:?}"),
            }
        }
    }

    #[test]
    fn node_map_must_match_environment() {
        let e = LaunchEnv::from_lookup(lookup(&[
            (ENV_SOCK, "/tmp/x/sock"),
            (ENV_RANK, "3"),
            (ENV_SIZE, "5"),
            (ENV_JOBID, "weft-1-ab"),
            (ENV_NODE, "1"),
            (ENV_LOCAL_RANKS, "3,4"),
        ]))
        .unwrap();
        assert!(check_node_map(&e, &[0, 0, 0, 1, 1]).is_ok());
        assert!(check_node_map(&e, &[0, 0, 0, 1]).is_err());
        assert!(check_node_map(&e, &[0, 0, 1, 1, 1]).is_err());
        assert!(check_node_map(&e, &[0, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn connect_to_missing_socket_is_io_error() {
        let mut e = LaunchEnv::from_lookup(lookup(GOOD)).unwrap();
        e.sock = PathBuf::from("/nonexistent/weft/sock");
        match LauncherRuntime::connect_with(e) {
            Err(RuntimeError::Io(_)) => {}
            Err(other) => panic!("expected Io error, got {other:?}"),
            Ok(_) => panic!("connected to a missing socket"),
        }
    }
}
