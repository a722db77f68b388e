//! `weft-engine`: the progress engine of weft.
//!
//! Owns everything between the API and the wire: the [`Transport`] trait, tag matching,
//! requests, communicators and their context ids, the rendezvous protocol, and the
//! failure-knowledge table. It names no concrete transport and no runtime: the facade (`weft`)
//! builds those and plugs them in with [`Engine::add_transport`] and
//! [`Engine::add_failure_source`].
//!
//! Why its own crate: the shared-memory and libfabric transports both
//! implement [`Transport`]; keeping the engine out of `weft-fabric` lets `weft-shm` depend on
//! the trait without linking libfabric.
//!
//! Module map: `transport` (trait, header), `engine` (engine state and plain queries), `send`
//! (send path, per-destination queues), `recv` (receive path, matching of arrivals), `rndv`
//! (rendezvous), `progress` (progress, test, wait, cancel), `failure` (failure knowledge,
//! revocation, error scope, and completing what they end), `finalize` (goodbye handshake),
//! `create` (communicator creation, barrier), `extend` (the [`Ext`] capability of the
//! collectives and fault-tolerance layers: activities, generic requests, message classes,
//! internal-context point-to-point), `matching` (posted/unexpected queues), `request`
//! (request table), `comm` (communicator table), `buffer` (the only place user buffers are
//! dereferenced), `error`.

mod buffer;
mod comm;
mod create;
mod engine;
mod error;
mod extend;
mod failure;
mod finalize;
mod matching;
mod progress;
mod recv;
mod request;
mod rndv;
mod send;
mod split;
pub mod transport;
mod universe;

pub use comm::{CommId, ErrScope};
pub use create::UNDEFINED;
pub use engine::{Engine, EngineConfig, Ext, FailureOrigins, FailureSource, ProgressMode, Stats};
pub use error::{Error, Result};
pub use extend::{Activity, ClassHandler, Step, FIRST_COLL_TAG, FIRST_EXT_TAG};
pub use recv::Message;
pub use request::{RecvStart, ReqId};
pub use transport::{GetStatus, Header, RKey, Transport, TransportError};

/// Wildcard source for receives and probes.
pub const ANY_SOURCE: i32 = -1;
/// Wildcard tag for receives and probes.
pub const ANY_TAG: i32 = -1;
/// Largest user tag.
pub const MAX_TAG: i32 = (1 << 30) - 1;

/// What a completed receive (or probe) reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Status {
    /// Rank of the sender in the communicator (for sends: the destination).
    pub source: u32,
    /// Tag of the message.
    pub tag: i32,
    /// Number of bytes in the message (for truncated receives: the incoming size).
    pub count: usize,
}
