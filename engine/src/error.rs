//! The engine's error type: ULFM error classes and clear errors for bad input.
//!
//! Every failure the engine reports is one of these variants; the facade gives each variant
//! one error class (its `error_class.rs`), which the C ABI and the MPI library turn into codes.
//! Not `#[non_exhaustive]`: that table matches every variant without a wildcard, so a new
//! variant does not compile until it is classified.

use crate::transport::TransportError;

/// Result alias used throughout the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything an engine operation can report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A rank outside the communicator was named.
    #[error("invalid rank {rank}: communicator has {size} ranks")]
    InvalidRank { rank: i64, size: u32 },
    /// A tag outside `0..=MAX_TAG` (or `ANY_TAG` where it is not allowed).
    #[error("invalid tag {0}: tags must be in 0..={max}", max = crate::MAX_TAG)]
    InvalidTag(i32),
    /// The receive buffer was smaller than the message; `count` bytes were delivered.
    #[error("message truncated: {incoming} bytes arrived for a {capacity}-byte buffer (from rank {sender}, tag {tag})")]
    Truncated { incoming: usize, capacity: usize, sender: u32, tag: i32 },
    /// The communicator handle was freed or never existed.
    #[error("invalid communicator: freed or never created")]
    InvalidComm,
    /// The request handle was already completed or never existed.
    #[error("invalid request: already completed or never created")]
    InvalidRequest,
    /// An argument is invalid (null buffer with nonzero length, bad color, ...).
    #[error("invalid argument: {0}")]
    InvalidArg(String),
    /// The operation involves processes (communicator ranks) that failed.
    #[error("process failure: rank(s) {ranks:?} of the communicator failed")]
    ProcFailed { ranks: Vec<u32> },
    /// A wildcard receive cannot complete while failures are unacknowledged; it stays pending.
    #[error("wildcard receive pending: the communicator has unacknowledged process failures")]
    ProcFailedPending,
    /// The communicator was revoked.
    #[error("communicator revoked")]
    Revoked,
    /// A transport call failed.
    #[error("transport error: {0}")]
    Transport(#[from] TransportError),
    /// Starting processes (a spawn) failed or is not offered by the runtime (the message says
    /// which and why).
    #[error("{0}")]
    Spawn(String),
    /// A message off the wire was malformed and was dropped.
    #[error("malformed message from world rank {peer}: {what}")]
    Malformed { peer: u32, what: &'static str },
}
