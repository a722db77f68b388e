//! Errors of the bootstrap layer.

/// Everything that can go wrong while bootstrapping or talking to the runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A PMIx library call returned an error status.
    #[error("PMIx call {call} failed: {status} ({name})")]
    Pmix { call: &'static str, status: i32, name: String },
    /// The launcher connection failed or sent something unexpected.
    #[error("weft-run launcher protocol error: {0}")]
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
}
