//! Errors of the bootstrap layer.

/// Everything that can go wrong while bootstrapping or talking to the runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A PMIx library call returned an error status.
    #[error("PMIx call {call} failed: {status} ({name})")]
    Pmix { call: &'static str, status: i32, name: String },
    /// The launcher connection failed or sent something unexpected.
    #[error("weft-run launcher control: {0}")]
    Launcher(String),
    /// I/O on the launcher socket failed.
    #[error("I/O error talking to the launcher: {0}")]
    Io(#[from] std::io::Error),
    /// A rank outside `0..size` was named.
    #[error("rank {rank} out of range (job size {size})")]
    BadRank { rank: u32, size: u32 },
    /// `get` of a key that the rank never put.
    #[error("key {key:?} not found for rank {rank}")]
    NotFound { rank: u32, key: String },
    /// An environment variable the backend needs is missing or malformed.
    #[error("bad environment: {0}")]
    Env(String),
    /// A rank taking part in a fence died.
    #[error("fence failed: rank(s) {0:?} terminated")]
    FenceFailed(Vec<u32>),
    /// Global restart: the job moved on to `epoch` (a process failed and was respawned);
    /// the current epoch is abandoned.
    #[error("global restart: the job rolled back to epoch {epoch}")]
    Rollback { epoch: u64 },
    /// Starting processes failed, or the runtime cannot start processes (the message names it).
    #[error("spawn: {0}")]
    Spawn(String),
    /// The PMI-2 process manager connection (`PMI_FD`) failed or sent something unexpected.
    #[error("PMI-2: {0}")]
    Pmi2(#[from] Pmi2Error),
}

/// What went wrong on a PMI-2 connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Pmi2Error {
    /// `PMI_FD` is not set, not a number, or not an open socket.
    #[error("bad PMI_FD: {0}")]
    BadFd(String),
    /// A reply did not follow the protocol.
    #[error("malformed message from the process manager: {0}")]
    Malformed(String),
    /// The process manager answered `init` without offering PMI-2.
    #[error("{0}")]
    Unsupported(String),
    /// No reply within the timeout (`WEFT_RT_TIMEOUT`).
    #[error("no reply from the process manager to {0} within the timeout (WEFT_RT_TIMEOUT)")]
    Timeout(String),
    /// The process manager closed the connection.
    #[error("the process manager closed the connection (waiting for {0})")]
    Closed(String),
    /// A reply carried a non-zero `rc`.
    #[error("{cmd} failed: rc={rc} {msg}")]
    Server { cmd: String, rc: String, msg: String },
    /// Any other socket error.
    #[error("I/O error ({0}): {1}")]
    Io(String, #[source] std::io::Error),
}
