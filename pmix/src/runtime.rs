//! The `Runtime` trait: what the engine needs from the job's bootstrap service.
//!
//! A runtime knows who this process is (rank, size, node), which ranks share its node, offers a
//! key-value exchange (the "modex": put / commit / fence / get) used to publish transport
//! endpoint addresses, and reports process terminations that happen while the job runs.
//! Backends: [`crate::client::PmixRuntime`] (ranks started by any PMIx server: `weft-run`,
//! `mpirun`, `srun`, PRRTE),
//! [`crate::pmi2::Pmi2Runtime`] (ranks started by a PMI-2 process manager: hydra, `srun
//! --mpi=pmi2`) and [`crate::singleton::Singleton`] (a process started alone).

use std::time::Duration;

use crate::universe::{JobRef, SpawnRequest};
use crate::RuntimeError;

/// Environment variable: seconds to wait for the runtime server's answer (a PMIx direct-modex
/// get of a peer's key, any PMI-2 reply, fences included). Default [`DEFAULT_TIMEOUT_SECS`].
pub const ENV_TIMEOUT: &str = "WEFT_RT_TIMEOUT";
/// Default of [`ENV_TIMEOUT`].
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// The reply timeout: [`ENV_TIMEOUT`] if it is a positive number of seconds, else the default.
pub fn server_timeout() -> Duration {
    let secs = std::env::var(ENV_TIMEOUT).ok().and_then(|s| s.trim().parse::<u64>().ok()).filter(|&s| s > 0);
    Duration::from_secs(secs.unwrap_or(DEFAULT_TIMEOUT_SECS))
}

/// Bootstrap and out-of-band services for one process of a job.
///
/// Ranks are job-global ("world") ranks in `0..size()`, except where a method says it takes
/// universe ranks ([`crate::universe`]); [`Runtime::poll_terminated`] reports universe ranks.
pub trait Runtime {
    /// Short name of the backend ("pmix", "pmi2", "singleton").
    fn backend(&self) -> &'static str;
    /// A string that identifies the job uniquely on this host (used to name resources).
    fn job_id(&self) -> &str;
    /// This process's rank in the job.
    fn rank(&self) -> u32;
    /// Number of processes in the job.
    fn size(&self) -> u32;
    /// Identifier of the node this process runs on (0-based, dense).
    fn node_id(&self) -> u32;
    /// Node id of every rank, indexed by rank.
    fn node_of(&self, rank: u32) -> Result<u32, RuntimeError>;
    /// Ranks that share this process's node, in increasing order, this process included.
    fn local_peers(&self) -> &[u32];
    /// Publish `value` under `key` for this rank. Visible to others after `commit` + `fence`.
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), RuntimeError>;
    /// Push the values put so far to the server.
    fn commit(&mut self) -> Result<(), RuntimeError>;
    /// Collective over all live ranks of the job: returns when every rank has committed and
    /// fenced, after which `get` sees everyone's values.
    fn fence(&mut self) -> Result<(), RuntimeError>;
    /// Read the value that `rank` put under `key`.
    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, RuntimeError>;
    /// Append to `out` the ranks whose termination was reported since the last call.
    /// Must not block; called periodically by the progress engine. Each rank is reported once.
    fn poll_terminated(&mut self, out: &mut Vec<u32>);
    /// A flag that another thread sets when [`Runtime::poll_terminated`] has something to
    /// report (the PMIx client's event handler), if the backend has one: the progress engine
    /// then polls at its next progress call instead of waiting for its slow-path period.
    /// `poll_terminated` clears it.
    fn terminated_flag(&self) -> Option<&'static std::sync::atomic::AtomicBool> {
        None
    }
    /// Universe rank of this job's rank 0 (see [`crate::universe`]): 0 unless this job was
    /// spawned by another one.
    fn universe_base(&self) -> u32 {
        0
    }

    /// Start the processes of `req` as a new job of the universe (collective work, such as
    /// connecting to them, is the caller's). Backends that cannot start processes say so,
    /// naming the runtime.
    fn spawn(&mut self, req: &SpawnRequest) -> Result<JobRef, RuntimeError> {
        let _ = req;
        Err(RuntimeError::Spawn(format!(
            "the {} runtime cannot start processes (run under weft-run to spawn)",
            self.backend()
        )))
    }

    /// A job-level string value of this job (spawn data, [`crate::universe`]), if there is one.
    fn job_string(&mut self, key: &str) -> Option<String> {
        let _ = key;
        None
    }

    /// Every job this process knows, its own first.
    fn jobs(&self) -> Vec<JobRef> {
        vec![JobRef { nspace: self.job_id().to_string(), base: 0, size: self.size() }]
    }

    /// Learn another job of the universe: its processes' keys become readable with
    /// [`Runtime::get_universe`] and their terminations are reported.
    fn add_job(&mut self, job: JobRef) -> Result<(), RuntimeError> {
        Err(RuntimeError::Spawn(format!(
            "the {} runtime has no other jobs than its own ({job:?})",
            self.backend()
        )))
    }

    /// Read the value that universe rank `u` (of any known job) put under `key`; a value not
    /// there yet is waited for up to the runtime's timeout.
    fn get_universe(&mut self, u: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        match u.checked_sub(self.universe_base()) {
            Some(r) if r < self.size() => self.get(r, key),
            _ => Err(RuntimeError::BadRank { rank: u, size: self.size() }),
        }
    }

    /// End the whole job with `code`, printing `msg`. Does not return.
    fn abort(&mut self, code: i32, msg: &str) -> !;
    /// Leave the job cleanly. After this no other method may be called.
    fn finalize(&mut self) -> Result<(), RuntimeError>;
}
