//! The facade's error type: engine errors (ULFM classes, bad input, transport failures) plus
//! bootstrap and configuration errors. Their classes, which the C ABI and the MPI library
//! report, are in `error_class.rs`.

pub use weft_engine::Error as EngineError;
use weft_pmix::RuntimeError;

/// Everything a weft call can report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An engine operation failed (bad rank/tag/communicator, truncation, process failure,
    /// revocation, transport error).
    #[error(transparent)]
    Engine(EngineError),
    /// Bootstrap through the runtime (weft-run or PMIx) failed.
    #[error("runtime: {0}")]
    Runtime(RuntimeError),
    /// A `WEFT_*` setting is unknown or has a bad value.
    #[error("configuration: {key}={value:?}: {reason}")]
    Config { key: String, value: String, reason: String },
    /// Reading the machine topology or binding the process (hwloc) failed.
    #[error("topology: {0}")]
    Topology(String),
    /// `init` was called while weft is already initialised in this thread.
    #[error("weft is already initialised in this thread")]
    AlreadyInitialized,
    /// Global restart: a process failed, the launcher respawned it and the job rolled back to
    /// `epoch`. Every call of the abandoned epoch that involves a peer reports this; the
    /// resilient main returns it and [`crate::reinit`] starts the new epoch.
    #[error("global restart: the job rolled back to epoch {epoch}; return to the restart point")]
    Rollback { epoch: u64 },
    /// Global restart used wrongly or where it cannot work (called twice, after `init`,
    /// under a runtime that cannot respawn processes).
    #[error("global restart: {0}")]
    Reinit(String),
    /// Global restart: the resilient main of the C ABI returned `code`, which is neither
    /// success nor a rollback.
    #[error("global restart: the resilient main returned {code}")]
    ResilientMain { code: i32 },
}

impl From<EngineError> for Error {
    /// A failure-class error of an instance whose epoch the job has left is a
    /// [`Error::Rollback`] (checked on the error path only).
    fn from(e: EngineError) -> Self {
        match abandoned_epoch(&e) {
            Some(epoch) => Error::Rollback { epoch },
            None => Error::Engine(e),
        }
    }
}

/// The epoch the job moved to, when `e` is a failure-class error (`ProcFailed`,
/// `ProcFailedPending`, `Revoked`, `Transport`) of an instance whose epoch the job has left:
/// such an error is a rollback (checked on the error path only). Always inline: as part of
/// `From<EngineError>` on every `?` of the Rust API, an out-of-line call changed how the
/// blocking send and receive inline into a caller's loop (see docs/performance-log.md).
#[inline(always)]
pub(crate) fn abandoned_epoch(e: &EngineError) -> Option<u64> {
    if matches!(
        e,
        EngineError::ProcFailed { .. }
            | EngineError::ProcFailedPending
            | EngineError::Revoked
            | EngineError::Transport(_)
    ) {
        weft_pmix::epoch::rolled_back()
    } else {
        None
    }
}

impl From<RuntimeError> for Error {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Rollback { epoch } => Error::Rollback { epoch },
            e => Error::Runtime(e),
        }
    }
}

impl From<weft_engine::TransportError> for Error {
    fn from(e: weft_engine::TransportError) -> Self {
        Error::from(EngineError::Transport(e))
    }
}

impl Error {
    /// The engine error inside, if any.
    pub fn engine(&self) -> Option<&EngineError> {
        match self {
            Error::Engine(e) => Some(e),
            _ => None,
        }
    }

    /// True for `ProcFailed` (an operation involved a failed process).
    pub fn is_proc_failed(&self) -> bool {
        matches!(self.engine(), Some(EngineError::ProcFailed { .. }))
    }
}
