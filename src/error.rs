//! The facade's error type: engine errors (ULFM classes, bad input, transport failures) plus
//! bootstrap and configuration errors.

pub use weft_engine::Error as EngineError;
use weft_pmix::RuntimeError;

/// Everything a weft call can report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An engine operation failed (bad rank/tag/communicator, truncation, process failure,
    /// revocation, transport error).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Bootstrap through the runtime (weft-run or PMIx) failed.
    #[error("runtime: {0}")]
    Runtime(#[from] RuntimeError),
    /// A `WEFT_*` setting is unknown or has a bad value.
    #[error("configuration: {key}={value:?}: {reason}")]
    Config { key: String, value: String, reason: String },
    /// Reading the machine topology or binding the process (hwloc) failed.
    #[error("topology: {0}")]
    Topology(String),
    /// `init` was called while weft is already initialised in this thread.
    #[error("weft is already initialised in this thread")]
    AlreadyInitialized,
}

impl From<weft_engine::TransportError> for Error {
    fn from(e: weft_engine::TransportError) -> Self {
        Error::Engine(EngineError::Transport(e))
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
