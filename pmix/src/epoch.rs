//! Global restart (Reinit) under `weft-run`: the *epoch service* line protocol between a rank
//! and the launcher, and the rank side of it ([`EpochLink`], [`EpochRuntime`]).
//!
//! A global-restart job runs in epochs. Every process joins the launcher's epoch service once
//! (on its control socket, `WEFT_RUN_CTL`). When a rank dies, the launcher respawns it with its
//! old rank, moves the job to epoch e+1 and pushes `rollback` to every member; each member then
//! abandons its weft instance and bootstraps a fresh one for the new epoch through
//! [`EpochRuntime`], whose key-value exchange and fence are the launcher's (one fence per
//! epoch, with every rank's data in the answer). Nothing of an old epoch survives into a new
//! one: transports are created anew, and a fence or finish of an old epoch is answered
//! `stale`.
//!
//! ```text
//! rank → launcher
//!   "reinit-join " RANK " " EPOCH "\n"      EPOCH: the epoch the process was started in
//!   "reinit-standby\n"                      a standby waits for a rank (then joins)
//!   "reinit-fence " EPOCH " " DATA "\n"     DATA: this rank's modex ("-" when empty)
//!   "reinit-finish " EPOCH "\n"             the resilient main returned in EPOCH
//!   "reinit-failed " EPOCH " " RANKS "\n"    this rank's engine declared RANKS (comma list)
//!                                           failed in EPOCH (heartbeat detector): the launcher
//!                                           SIGKILLs them, so a frozen rank cannot come back
//!                                           (no answer; the rollback follows)
//! launcher → rank
//!   "assigned " RANK " " EPOCH "\n"          to a standby: take RANK from EPOCH on
//!   "joined " EPOCH " " SIZE " " JOBID " " NODE_OF "\n"   NODE_OF: node of every rank, comma list
//!   "fenced " EPOCH (" " DATA){SIZE} "\n"   every rank's DATA, by rank
//!   "finished " EPOCH "\n"                 every rank finished EPOCH: the job is done
//!   "stale " EPOCH "\n"                    the job moved on to EPOCH: roll back
//!   "rollback " EPOCH " " SEEN_NS " " RESPAWN_NS " " FAILED " " NODE_OF "\n"   (pushed at any time)
//!   "error " TEXT "\n"
//! ```
//!
//! `DATA` is `key=hex(value)` items joined by `,`; keys are `[A-Za-z0-9_]+`. `SEEN_NS` is when
//! the launcher saw the failure and `RESPAWN_NS` when the replacement was started
//! (`CLOCK_MONOTONIC` ns), for the recovery-phase measurements; `NODE_OF` is the placement of
//! the new epoch (respawned ranks may have moved to a spare node).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};

use crate::launcher::ENV_CTL;
use crate::{Runtime, RuntimeError};

/// Environment: the epoch a respawned process was started in (absent for the original ones).
pub const ENV_EPOCH: &str = "WEFT_REINIT_EPOCH";
/// Environment: the rank of a process started by `weft-run`.
pub const ENV_RANK: &str = "WEFT_RUN_RANK";
/// Environment: set for a standby process, started ahead of failures, that waits for the
/// launcher to assign it the rank of a failed process.
pub const ENV_STANDBY: &str = "WEFT_REINIT_STANDBY";

/// Longest line a rank sends (a fence carries one rank's transport addresses).
pub const MAX_REQUEST: usize = 16 * 1024;

/// A request of the epoch service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpochRequest {
    Join { rank: u32, epoch: u64 },
    Fence { epoch: u64, data: String },
    Finish { epoch: u64 },
    Failed { epoch: u64, ranks: Vec<u32> },
    Standby,
}

impl EpochRequest {
    /// Parse a request line (without its newline); `None` if it is not an epoch request.
    pub fn parse(line: &str) -> Option<Result<EpochRequest, String>> {
        let mut it = line.split(' ');
        let verb = it.next()?;
        if !verb.starts_with("reinit-") {
            return None;
        }
        let num = |s: Option<&str>| -> Result<u64, String> {
            let s = s.ok_or_else(|| format!("{verb}: missing argument"))?;
            s.parse().map_err(|_| format!("{verb}: {s:?} is not a number"))
        };
        let req = match verb {
            "reinit-standby" => Ok(EpochRequest::Standby),
            "reinit-join" => num(it.next()).and_then(|rank| {
                let rank = u32::try_from(rank).map_err(|_| format!("rank {rank} out of range"))?;
                Ok(EpochRequest::Join { rank, epoch: num(it.next())? })
            }),
            "reinit-fence" => num(it.next()).and_then(|epoch| {
                let data = it.next().ok_or("reinit-fence: missing data")?.to_string();
                check_data(&data)?;
                Ok(EpochRequest::Fence { epoch, data })
            }),
            "reinit-finish" => num(it.next()).map(|epoch| EpochRequest::Finish { epoch }),
            "reinit-failed" => num(it.next()).and_then(|epoch| {
                let list = it.next().ok_or("reinit-failed: missing ranks")?;
                let ranks: Result<Vec<u32>, _> = list.split(',').map(str::parse).collect();
                let ranks = ranks.map_err(|_| format!("reinit-failed: {list:?} is not a rank list"))?;
                Ok(EpochRequest::Failed { epoch, ranks })
            }),
            _ => Err(format!("unknown request {verb:?}")),
        };
        Some(req.and_then(|r| match it.next() {
            Some(extra) => Err(format!("{verb}: unexpected {extra:?}")),
            None => Ok(r),
        }))
    }

    /// The request line, with its newline.
    pub fn line(&self) -> String {
        match self {
            EpochRequest::Join { rank, epoch } => format!("reinit-join {rank} {epoch}\n"),
            EpochRequest::Fence { epoch, data } => format!("reinit-fence {epoch} {data}\n"),
            EpochRequest::Finish { epoch } => format!("reinit-finish {epoch}\n"),
            EpochRequest::Standby => "reinit-standby\n".to_string(),
            EpochRequest::Failed { epoch, ranks } => {
                let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
                format!("reinit-failed {epoch} {}\n", list.join(","))
            }
        }
    }
}

/// A modex token is `-` or `key=hex` items joined by `,`.
fn check_data(d: &str) -> Result<(), String> {
    if d == "-" {
        return Ok(());
    }
    decode_data(d).map(|_| ())
}

/// Encode one rank's key-value pairs as a fence token.
pub fn encode_data(kv: &BTreeMap<String, Vec<u8>>) -> String {
    if kv.is_empty() {
        return "-".into();
    }
    let items: Vec<String> = kv
        .iter()
        .map(|(k, v)| {
            let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
            format!("{k}={hex}")
        })
        .collect();
    items.join(",")
}

/// Decode a fence token.
pub fn decode_data(d: &str) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut kv = BTreeMap::new();
    if d == "-" {
        return Ok(kv);
    }
    for item in d.split(',') {
        let (k, hex) = item.split_once('=').ok_or_else(|| format!("modex item {item:?} has no '='"))?;
        if !valid_key(k) {
            return Err(format!("bad modex key {k:?}"));
        }
        if hex.len() % 2 != 0 {
            return Err(format!("modex value of {k:?} has an odd number of hex digits"));
        }
        let v: Result<Vec<u8>, _> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16)).collect();
        kv.insert(k.to_string(), v.map_err(|_| format!("modex value of {k:?} is not hex"))?);
    }
    Ok(kv)
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Set when a `rollback` arrives, cleared by [`EpochRuntime::poll_terminated`]: the engine's
/// wake-up flag.
static ROLLBACK_FLAG: AtomicBool = AtomicBool::new(false);
/// The newest epoch the launcher announced (joined or rollback).
static ANNOUNCED: AtomicU64 = AtomicU64::new(0);
/// The epoch of the weft instance in use (`u64::MAX`: none).
static RUNNING: AtomicU64 = AtomicU64::new(u64::MAX);
/// When this process's join was answered (`CLOCK_MONOTONIC` ns; 0: not joined).
static JOINED_NS: AtomicU64 = AtomicU64::new(0);
/// The last `rollback` push (epoch 0: none yet).
static LAST_ROLLBACK: Mutex<RollbackInfo> = Mutex::new(RollbackInfo { epoch: 0, seen_ns: 0, respawn_ns: 0 });

/// `CLOCK_MONOTONIC` now in ns (the clock of the launcher's stamps).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid pointer we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// When this process joined the epoch service (`CLOCK_MONOTONIC` ns), for recovery-phase
/// measurements: for a respawned process, the end of its respawn.
pub fn joined_ns() -> Option<u64> {
    Some(JOINED_NS.load(Ordering::Acquire)).filter(|&t| t != 0)
}

/// What the last `rollback` push said, if one came.
pub fn last_rollback() -> Option<RollbackInfo> {
    let r = *LAST_ROLLBACK.lock().unwrap_or_else(|e| e.into_inner());
    (r.epoch > 0).then_some(r)
}

/// The epoch the job moved to while the running instance belongs to an older one, if so:
/// every operation of the running instance is then abandoned.
pub fn rolled_back() -> Option<u64> {
    let run = RUNNING.load(Ordering::Acquire);
    let ann = ANNOUNCED.load(Ordering::Acquire);
    (run != u64::MAX && ann > run).then_some(ann)
}

/// Wait (up to the runtime timeout) until the launcher announces an epoch after `epoch`;
/// true if it did. For a failure seen in-band before the launcher's rollback arrived.
pub fn wait_rollback(epoch: u64) -> bool {
    let newer = || ANNOUNCED.load(Ordering::Acquire) > epoch;
    let until = std::time::Instant::now() + crate::server_timeout();
    while std::time::Instant::now() < until {
        if newer() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    newer()
}

/// What the last `rollback` push said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RollbackInfo {
    pub epoch: u64,
    /// When the launcher saw the failure (`CLOCK_MONOTONIC` ns).
    pub seen_ns: u64,
    /// When the launcher started the replacement process(es).
    pub respawn_ns: u64,
}

struct Shared {
    /// Node of every rank in the newest announced epoch.
    node_of: Vec<u32>,
}

/// This process's membership in the launcher's epoch service: the control connection, and a
/// reader thread that takes `rollback` pushes as they come and hands every other line to
/// the main thread.
pub struct EpochLink {
    tx: Mutex<UnixStream>,
    answers: Mutex<Receiver<String>>,
    shared: Arc<Mutex<Shared>>,
    rank: u32,
    size: u32,
    job_id: String,
    /// The epoch this process was started in.
    pub start_epoch: u64,
}

impl EpochLink {
    /// Connect to the launcher and join its epoch service. Fails with a clear error where the
    /// runtime is not `weft-run` (it is the only one that respawns processes here).
    pub fn join() -> Result<EpochLink, RuntimeError> {
        let Some(path) = std::env::var_os(ENV_CTL) else {
            let (backend, var) = crate::select(|v| std::env::var_os(v).is_some());
            let under = match (backend, var) {
                ("singleton", _) => {
                    "the singleton runtime (a process started without a launcher)".to_string()
                }
                (b, Some(v)) => format!("the {b} runtime ({v} is set)"),
                (b, None) => format!("the {b} runtime"),
            };
            return Err(RuntimeError::Env(format!(
                "needs weft-run, which respawns failed processes; this is {under}, \
                 which cannot ({ENV_CTL} is not set)"
            )));
        };
        let standby = std::env::var_os(ENV_STANDBY).is_some();
        let (mut rank, mut start_epoch) = (0, 0);
        if !standby {
            rank = std::env::var(ENV_RANK)
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| RuntimeError::Env(format!("{ENV_RANK} is missing or not a number")))?;
            if let Ok(v) = std::env::var(ENV_EPOCH) {
                start_epoch =
                    v.parse().map_err(|_| RuntimeError::Env(format!("{ENV_EPOCH}={v:?} is not a number")))?;
            }
        }
        let mut stream = UnixStream::connect(&path)
            .map_err(|e| RuntimeError::Launcher(format!("connecting to {}: {e}", path.to_string_lossy())))?;
        let reader = BufReader::new(stream.try_clone()?);
        let (atx, arx) = channel();
        let shared = Arc::new(Mutex::new(Shared { node_of: Vec::new() }));
        let sh = shared.clone();
        std::thread::Builder::new().name("weft-epoch".into()).spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("rollback ") {
                    let f: Vec<&str> = rest.split(' ').collect();
                    let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
                    let nodes: Option<Vec<u32>> =
                        f.get(4).and_then(|l| l.split(',').map(|n| n.parse().ok()).collect());
                    if let (Some(epoch), Some(seen_ns), Some(respawn_ns), Some(nodes)) =
                        (num(0), num(1), num(2), nodes)
                    {
                        let mut g = sh.lock().unwrap_or_else(|e| e.into_inner());
                        *LAST_ROLLBACK.lock().unwrap_or_else(|e| e.into_inner()) =
                            RollbackInfo { epoch, seen_ns, respawn_ns };
                        if nodes.len() == g.node_of.len() {
                            g.node_of = nodes;
                        }
                        drop(g);
                        ANNOUNCED.fetch_max(epoch, Ordering::AcqRel);
                        ROLLBACK_FLAG.store(true, Ordering::Release);
                    }
                } else if atx.send(line).is_err() {
                    break;
                }
            }
        })?;
        if standby {
            // Wait, without a timeout, until the launcher hands this process a failed rank.
            stream.write_all(EpochRequest::Standby.line().as_bytes())?;
            let line = arx.recv().map_err(|_| {
                RuntimeError::Launcher("the launcher closed the connection of a standby process".into())
            })?;
            let f: Vec<&str> = line.split(' ').collect();
            let parsed = match f[..] {
                ["assigned", r, e] => r.parse().ok().zip(e.parse().ok()),
                _ => None,
            };
            (rank, start_epoch) = parsed.ok_or_else(|| {
                RuntimeError::Launcher(format!("malformed answer to reinit-standby: {line:?}"))
            })?;
        }
        stream.write_all(EpochRequest::Join { rank, epoch: start_epoch }.line().as_bytes())?;
        let link = EpochLink {
            tx: Mutex::new(stream),
            answers: Mutex::new(arx),
            shared,
            rank,
            size: 0,
            job_id: String::new(),
            start_epoch,
        };
        let line = link.answer("reinit-join")?;
        let bad = || RuntimeError::Launcher(format!("malformed answer to reinit-join: {line:?}"));
        let f: Vec<&str> = line.split(' ').collect();
        let ["joined", epoch, size, job_id, node_of] = f[..] else { return Err(bad()) };
        let epoch: u64 = epoch.parse().map_err(|_| bad())?;
        let size: u32 = size.parse().map_err(|_| bad())?;
        let node_of: Vec<u32> =
            node_of.split(',').map(|n| n.parse()).collect::<Result<_, _>>().map_err(|_| bad())?;
        if node_of.len() != size as usize || rank >= size {
            return Err(bad());
        }
        link.shared.lock().unwrap_or_else(|e| e.into_inner()).node_of = node_of;
        JOINED_NS.store(mono_ns(), Ordering::Release);
        ANNOUNCED.fetch_max(epoch, Ordering::AcqRel);
        Ok(EpochLink { size, job_id: job_id.to_string(), ..link })
    }

    /// The next non-push line from the launcher (within the runtime timeout).
    fn answer(&self, what: &str) -> Result<String, RuntimeError> {
        let rx = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        match rx.recv_timeout(crate::server_timeout()) {
            Ok(l) => match l.strip_prefix("error ") {
                Some(why) => Err(RuntimeError::Launcher(why.to_string())),
                None => Ok(l),
            },
            Err(RecvTimeoutError::Timeout) => Err(RuntimeError::Launcher(format!(
                "no answer to {what} within the timeout ({})",
                crate::ENV_TIMEOUT
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(RuntimeError::Launcher(format!(
                "the launcher closed the connection (waiting for {what})"
            ))),
        }
    }

    /// The answer to a request of `epoch`, skipping `stale` answers that are not newer (left
    /// over from a request of an older epoch).
    fn answer_for(&self, epoch: u64, what: &str) -> Result<String, RuntimeError> {
        loop {
            let line = self.answer(what)?;
            match line.strip_prefix("stale ").and_then(|e| e.parse::<u64>().ok()) {
                Some(e) if e <= epoch => continue,
                _ => return Ok(line),
            }
        }
    }

    fn send(&self, req: &EpochRequest) -> Result<(), RuntimeError> {
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.write_all(req.line().as_bytes())?;
        Ok(())
    }

    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The newest epoch announced by the launcher.
    pub fn epoch(&self) -> u64 {
        ANNOUNCED.load(Ordering::Acquire)
    }

    /// Mark `epoch` as the epoch of the instance in use (`None`: no instance).
    pub fn set_running(&self, epoch: Option<u64>) {
        RUNNING.store(epoch.unwrap_or(u64::MAX), Ordering::Release);
    }

    /// Tell the launcher that this rank's engine declared `ranks` failed in `epoch` (they are
    /// alive as far as the launcher knows: frozen or cut off); it kills them.
    pub fn report_failed(&self, epoch: u64, ranks: &[u32]) -> Result<(), RuntimeError> {
        self.send(&EpochRequest::Failed { epoch, ranks: ranks.to_vec() })
    }

    /// Wait (up to the runtime timeout) until the launcher announces an epoch after `epoch`;
    /// true if it did.
    pub fn wait_rollback(&self, epoch: u64) -> bool {
        wait_rollback(epoch)
    }

    /// The resilient main returned in `epoch`: wait until every rank has, then `Ok`; or
    /// `Err(Rollback)` when the job moved to a newer epoch meanwhile (this process must run
    /// the new epoch too).
    pub fn finish(&self, epoch: u64) -> Result<(), RuntimeError> {
        self.send(&EpochRequest::Finish { epoch })?;
        let line = self.answer_for(epoch, "reinit-finish")?;
        if line == format!("finished {epoch}") {
            return Ok(());
        }
        Err(stale_or_malformed(&line, "reinit-finish"))
    }

    /// A runtime for the newest announced epoch (bootstraps through the launcher's fence).
    pub fn runtime(self: &Arc<Self>) -> EpochRuntime {
        let epoch = self.epoch();
        let node_of = self.shared.lock().unwrap_or_else(|e| e.into_inner()).node_of.clone();
        let mine = node_of[self.rank as usize];
        EpochRuntime {
            link: self.clone(),
            epoch,
            job_id: format!("{}.e{epoch}", self.job_id),
            local: (0..self.size).filter(|&r| node_of[r as usize] == mine).collect(),
            node_of,
            puts: BTreeMap::new(),
            table: Vec::new(),
            reported: false,
        }
    }
}

fn stale_or_malformed(line: &str, what: &str) -> RuntimeError {
    match line.strip_prefix("stale ").and_then(|e| e.parse().ok()) {
        Some(epoch) => {
            ANNOUNCED.fetch_max(epoch, Ordering::AcqRel);
            RuntimeError::Rollback { epoch }
        }
        None => RuntimeError::Launcher(format!("malformed answer to {what}: {line:?}")),
    }
}

/// The [`Runtime`] of one epoch of a global-restart job (see the module documentation).
pub struct EpochRuntime {
    link: Arc<EpochLink>,
    epoch: u64,
    job_id: String,
    node_of: Vec<u32>,
    local: Vec<u32>,
    puts: BTreeMap<String, Vec<u8>>,
    /// Every rank's data after the fence.
    table: Vec<BTreeMap<String, Vec<u8>>>,
    /// The rollback has been reported to the engine.
    reported: bool,
}

impl EpochRuntime {
    /// The epoch this runtime bootstraps.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}

impl Runtime for EpochRuntime {
    fn backend(&self) -> &'static str {
        "weft-run-reinit"
    }
    fn job_id(&self) -> &str {
        &self.job_id
    }
    fn rank(&self) -> u32 {
        self.link.rank
    }
    fn size(&self) -> u32 {
        self.link.size
    }
    fn node_id(&self) -> u32 {
        self.node_of[self.link.rank as usize]
    }
    fn node_of(&self, rank: u32) -> Result<u32, RuntimeError> {
        self.node_of.get(rank as usize).copied().ok_or(RuntimeError::BadRank { rank, size: self.link.size })
    }
    fn local_peers(&self) -> &[u32] {
        &self.local
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), RuntimeError> {
        if !valid_key(key) {
            return Err(RuntimeError::Env(format!("modex key {key:?} must be [A-Za-z0-9_]+")));
        }
        self.puts.insert(key.to_string(), value.to_vec());
        Ok(())
    }
    fn commit(&mut self) -> Result<(), RuntimeError> {
        Ok(())
    }
    fn fence(&mut self) -> Result<(), RuntimeError> {
        let data = encode_data(&self.puts);
        self.link.send(&EpochRequest::Fence { epoch: self.epoch, data })?;
        let line = self.link.answer_for(self.epoch, "reinit-fence")?;
        let Some(rest) = line.strip_prefix(&format!("fenced {} ", self.epoch)) else {
            return Err(stale_or_malformed(&line, "reinit-fence"));
        };
        let table: Result<Vec<_>, String> = rest.split(' ').map(decode_data).collect();
        let table = table.map_err(RuntimeError::Launcher)?;
        if table.len() != self.link.size as usize {
            return Err(RuntimeError::Launcher(format!("fence answer has {} ranks", table.len())));
        }
        self.table = table;
        Ok(())
    }
    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        let size = self.link.size;
        let kv = self.table.get(rank as usize).ok_or(RuntimeError::BadRank { rank, size })?;
        kv.get(key).cloned().ok_or_else(|| RuntimeError::NotFound { rank, key: key.to_string() })
    }
    /// After a rollback to a newer epoch, every other rank is reported once: every operation
    /// of this epoch that involves a peer then completes with an error.
    fn poll_terminated(&mut self, out: &mut Vec<u32>) {
        ROLLBACK_FLAG.store(false, Ordering::Release);
        if !self.reported && ANNOUNCED.load(Ordering::Acquire) > self.epoch {
            self.reported = true;
            let me = self.link.rank;
            out.extend((0..self.link.size).filter(|&r| r != me));
        }
    }
    fn terminated_flag(&self) -> Option<&'static AtomicBool> {
        Some(&ROLLBACK_FLAG)
    }
    fn abort(&mut self, code: i32, msg: &str) -> ! {
        // A non-zero exit is an application failure, which weft-run does not respawn: it
        // ends the whole job.
        let _ = writeln!(std::io::stderr(), "weft: rank {} aborted ({code}): {msg}", self.link.rank);
        std::process::exit(if code & 0xff == 0 { 1 } else { code })
    }
    fn finalize(&mut self) -> Result<(), RuntimeError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let mut kv = BTreeMap::new();
        kv.insert("shm".to_string(), vec![0, 1, 0xff]);
        kv.insert("ofi".to_string(), vec![]);
        let data = encode_data(&kv);
        assert_eq!(decode_data(&data).unwrap(), kv);
        for r in [
            EpochRequest::Join { rank: 3, epoch: 2 },
            EpochRequest::Fence { epoch: 7, data },
            EpochRequest::Fence { epoch: 0, data: "-".into() },
            EpochRequest::Finish { epoch: 1 },
            EpochRequest::Failed { epoch: 2, ranks: vec![1, 3] },
            EpochRequest::Standby,
        ] {
            assert_eq!(EpochRequest::parse(r.line().trim_end()), Some(Ok(r)));
        }
    }

    #[test]
    fn bad_requests_are_errors() {
        assert_eq!(EpochRequest::parse("kill-rank 1"), None);
        for bad in [
            "reinit-join",
            "reinit-join x 0",
            "reinit-join 1",
            "reinit-join 1 0 9",
            "reinit-fence 1",
            "reinit-fence 1 k=zz",
            "reinit-fence 1 k=abc",
            "reinit-fence 1 =00",
            "reinit-fence 1 a-b=00",
            "reinit-what 1",
            "reinit-failed 1",
            "reinit-failed 1 a,b",
            "reinit-join 99999999999 0",
        ] {
            assert!(matches!(EpochRequest::parse(bad), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn join_outside_weft_run_names_the_runtime() {
        if std::env::var_os(ENV_CTL).is_none() {
            let Err(RuntimeError::Env(msg)) = EpochLink::join() else { panic!("join must fail") };
            assert!(msg.contains("weft-run"), "{msg}");
        }
    }
}
