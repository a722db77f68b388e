//! PMI-2 backend of [`Runtime`]: a process started by a PMI-2 process manager (MPICH's
//! `mpiexec.hydra`, `srun --mpi=pmi2`, Cray PALS) talks the PMI-2 wire protocol over the socket
//! the launcher hands over in `PMI_FD` (protocol details in `pmi2/wire.rs`).
//!
//! - Rank and size come from `fullinit`; the job id from `job-getid`; the node of every rank
//!   from the `PMI_process_mapping` job attribute (hydra and Slurm both set it). A manager
//!   without it makes every rank publish its host name at init (one extra fence).
//! - The key-value store is job-wide (PMI-2 keys are not per rank), so weft's keys are stored
//!   as `weft.<rank>.<key>`; values are hex text, chunked to fit PMI-2's 1024-byte values.
//!   `put` sends at once (`commit` has nothing to do); `fence` is `kvs-fence`.
//! - PMI-2 has **no termination events**: [`Runtime::poll_terminated`] never reports anything.
//!   Under PMI-2 a rank's death is found in-band (the shm transport's pidfd watch, libfabric
//!   connection errors) or by the heartbeat detector (`WEFT_FT_HB_PERIOD`). hydra itself tears
//!   the whole job down when a rank dies abnormally (unless `-disable-auto-cleanup`).
//! - Every reply is awaited at most [`crate::runtime::server_timeout`]; a closed, silent or
//!   garbled connection is a typed [`Pmi2Error`], never a hang or a panic.

mod wire;

use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::error::Pmi2Error;
use crate::{Runtime, RuntimeError};
use wire::Conn;

/// The variable that carries the process manager's socket.
pub const ENV_FD: &str = "PMI_FD";
/// PMI-2 limits keys to 64 bytes.
const MAX_KEY: usize = 64;
/// Largest number of chunks a value may announce (bounds a malicious `*N`).
const MAX_CHUNKS: usize = 4096;

/// A process of a job launched by a PMI-2 process manager.
pub struct Pmi2Runtime {
    conn: Conn,
    job_id: String,
    rank: u32,
    size: u32,
    nodes: Vec<u32>,
    local_peers: Vec<u32>,
    finalized: bool,
}

/// Take over the socket named by `PMI_FD` (`value` is the variable's content, if set).
fn socket_from_fd_var(value: Option<&str>) -> Result<UnixStream, Pmi2Error> {
    let v = value.ok_or_else(|| Pmi2Error::BadFd(format!("{ENV_FD} is not set")))?;
    let fd: RawFd =
        v.trim().parse().map_err(|_| Pmi2Error::BadFd(format!("{ENV_FD}={v:?} is not a number")))?;
    if fd < 0 {
        return Err(Pmi2Error::BadFd(format!("{ENV_FD}={fd} is negative")));
    }
    // An fd that is not open fails here with EBADF.
    let st = nix::sys::stat::fstat(fd).map_err(|e| Pmi2Error::BadFd(format!("{ENV_FD}={fd}: {e}")))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(Pmi2Error::BadFd(format!("{ENV_FD}={fd} is not a socket")));
    }
    // SAFETY: `fd` is an open socket (checked above) that the launcher handed to this process
    // for PMI; nothing else in weft uses it, so the stream becomes its only owner.
    Ok(unsafe { UnixStream::from_raw_fd(fd) })
}

impl Pmi2Runtime {
    /// Connect over `PMI_FD` (rank hint from `PMI_RANK` / `PMI_ID`, job id from `PMI_JOBID`),
    /// with the reply timeout of [`crate::runtime::server_timeout`].
    pub fn from_env() -> Result<Pmi2Runtime, RuntimeError> {
        let sock = socket_from_fd_var(std::env::var(ENV_FD).ok().as_deref())?;
        let hint = std::env::var("PMI_RANK").or_else(|_| std::env::var("PMI_ID")).ok();
        let hint = hint.and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(-1);
        let jobid = std::env::var("PMI_JOBID").ok();
        Pmi2Runtime::connect(sock, hint, jobid.as_deref(), crate::runtime::server_timeout())
    }

    /// Initialise over an already connected socket: handshake, `fullinit`, job id and node
    /// layout. `fullinit` announces `pmijobid` (when the manager gave one: Slurm's `PMI_JOBID`),
    /// `pmirank` (-1 if unknown) and `threaded=FALSE`; Slurm's PMI-2 server refuses a
    /// `fullinit` that lacks any of the three (`pmijobid missing in fullinit command`), hydra
    /// needs only `pmirank`.
    pub fn connect(
        sock: UnixStream,
        pmirank: i64,
        pmijobid: Option<&str>,
        timeout: Duration,
    ) -> Result<Pmi2Runtime, RuntimeError> {
        let mut conn = Conn::new(sock, timeout)?;
        conn.handshake()?;
        let rank_text = pmirank.to_string();
        let mut args = Vec::with_capacity(3);
        if let Some(j) = pmijobid {
            args.push(("pmijobid", j));
        }
        args.push(("pmirank", rank_text.as_str()));
        // weft calls the PMI-2 server from one thread at a time.
        args.push(("threaded", "FALSE"));
        let r = conn.call("fullinit", &args)?;
        let rank: u32 = r.need_int("rank")?;
        let size: u32 = r.need_int("size")?;
        if size == 0 || rank >= size {
            return Err(RuntimeError::BadRank { rank, size });
        }
        let jid = conn.call("job-getid", &[])?;
        let job_id: String = jid
            .need("jobid")?
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        if job_id.is_empty() {
            return Err(Pmi2Error::Malformed("job-getid-response with an empty jobid".into()).into());
        }
        let mut rt = Pmi2Runtime {
            conn,
            job_id,
            rank,
            size,
            nodes: Vec::new(),
            local_peers: Vec::new(),
            finalized: false,
        };
        let attr = rt.conn.call("info-getjobattr", &[("key", "PMI_process_mapping")])?;
        let mapped =
            if attr.need_bool("found")? { wire::parse_mapping(attr.need("value")?, size) } else { None };
        rt.nodes = match mapped {
            Some(m) => m,
            None => rt.nodes_by_hostname()?,
        };
        let me = rt.nodes[rank as usize];
        rt.local_peers = (0..size).filter(|&r| rt.nodes[r as usize] == me).collect();
        Ok(rt)
    }

    /// Dense node ids from every rank's host name (for managers without a process mapping).
    fn nodes_by_hostname(&mut self) -> Result<Vec<u32>, RuntimeError> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map_err(|e| RuntimeError::Env(format!("reading the host name: {e}")))?;
        self.put("host", host.trim().as_bytes())?;
        self.fence()?;
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut ids = Vec::with_capacity(self.size as usize);
        for r in 0..self.size {
            let h = self.get(r, "host")?;
            let id = names.iter().position(|n| *n == h).unwrap_or_else(|| {
                names.push(h);
                names.len() - 1
            });
            ids.push(id as u32);
        }
        Ok(ids)
    }

    fn check_live(&self) -> Result<(), RuntimeError> {
        if self.finalized {
            return Err(RuntimeError::Env("PMI-2 runtime already finalized".into()));
        }
        Ok(())
    }

    /// The job-wide KVS key of `rank`'s `key`.
    fn kvs_key(rank: u32, key: &str) -> Result<String, RuntimeError> {
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b'=') {
            return Err(RuntimeError::Env(format!(
                "modex key {key:?} is not printable ASCII without ; and ="
            )));
        }
        let full = format!("weft.{rank}.{key}");
        // Room for a chunk suffix (".NNNN").
        if full.len() + 5 > MAX_KEY {
            return Err(RuntimeError::Env(format!("modex key {key:?} too long for PMI-2 (64 bytes)")));
        }
        Ok(full)
    }

    /// `kvs-get` of one entry; `None` if not found.
    fn kvs_get(&mut self, rank: u32, full: &str) -> Result<Option<String>, RuntimeError> {
        let r = self
            .conn
            .call("kvs-get", &[("jobid", &self.job_id), ("srcid", &rank.to_string()), ("key", full)])?;
        if !r.need_bool("found")? {
            return Ok(None);
        }
        Ok(Some(r.need("value")?.to_string()))
    }
}

impl Runtime for Pmi2Runtime {
    fn backend(&self) -> &'static str {
        "pmi2"
    }
    fn job_id(&self) -> &str {
        &self.job_id
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn node_id(&self) -> u32 {
        self.nodes[self.rank as usize]
    }
    fn node_of(&self, rank: u32) -> Result<u32, RuntimeError> {
        self.nodes.get(rank as usize).copied().ok_or(RuntimeError::BadRank { rank, size: self.size })
    }
    fn local_peers(&self) -> &[u32] {
        &self.local_peers
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), RuntimeError> {
        self.check_live()?;
        let full = Self::kvs_key(self.rank, key)?;
        for (k, v) in wire::encode_value(&full, value) {
            self.conn.call("kvs-put", &[("key", &k), ("value", &v)])?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), RuntimeError> {
        // Every kvs-put already reached the process manager.
        self.check_live()
    }

    fn fence(&mut self) -> Result<(), RuntimeError> {
        self.check_live()?;
        self.conn.call("kvs-fence", &[])?;
        Ok(())
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        self.check_live()?;
        if rank >= self.size {
            return Err(RuntimeError::BadRank { rank, size: self.size });
        }
        let full = Self::kvs_key(rank, key)?;
        let not_found = || RuntimeError::NotFound { rank, key: key.to_string() };
        let head = self.kvs_get(rank, &full)?.ok_or_else(not_found)?;
        let hex = match head.strip_prefix('*') {
            None => head,
            Some(n) => {
                let n: usize = n.parse().ok().filter(|&n| n > 0 && n <= MAX_CHUNKS).ok_or_else(|| {
                    Pmi2Error::Malformed(format!("value of {full} announces {head:?} chunks"))
                })?;
                let mut all = String::new();
                for i in 0..n {
                    let part = self.kvs_get(rank, &format!("{full}.{i}"))?.ok_or_else(|| {
                        Pmi2Error::Malformed(format!("chunk {i} of {n} of {full} is missing"))
                    })?;
                    all.push_str(&part);
                }
                all
            }
        };
        wire::from_hex(&hex)
            .ok_or_else(|| Pmi2Error::Malformed(format!("value of {full} is not hex text")).into())
    }

    fn poll_terminated(&mut self, _out: &mut Vec<u32>) {
        // PMI-2 defines no termination notification (see the module docs).
    }

    fn abort(&mut self, code: i32, msg: &str) -> ! {
        eprintln!("weft: rank {} aborting the job (code {code}): {msg}", self.rank);
        if !self.finalized {
            let clean: String =
                msg.chars().map(|c| if c == ';' || c.is_control() { ' ' } else { c }).collect();
            let _ = self.conn.send("abort", &[("exitcode", &code.to_string()), ("message", &clean)]);
        }
        std::process::exit(if code == 0 { 1 } else { code });
    }

    fn finalize(&mut self) -> Result<(), RuntimeError> {
        if self.finalized {
            return Ok(());
        }
        self.finalized = true;
        self.conn.call("finalize", &[])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
