//! `weft-engine`: the progress engine of weft.
//!
//! Owns everything between the API and the wire: the [`Transport`] trait, tag matching,
//! requests, communicators and their context ids, the rendezvous protocol, and the
//! failure-knowledge table. It names no concrete transport and no runtime: the facade (`weft`)
//! builds those and plugs them in with [`Setup::add_transport`] and
//! [`Setup::add_failure_source`].
//!
//! Why its own crate: the shared-memory and libfabric transports both
//! implement [`Transport`]; keeping the engine out of `weft-fabric` lets `weft-shm` depend on
//! the trait without linking libfabric.
//!
//! Module map, state below behaviour (no module of the first group imports one of the
//! second; `scripts/check-structure` keeps the import graph free of circles):
//! - **state**: `engine` ([`Engine`], and `Core`: routes, queues, requests, per-peer flags,
//!   the pending work between polls; and the two layer capabilities' types), `comm`
//!   (communicator table), `matching` (posted/unexpected queues per context), `request`
//!   (request table), `pending` (queued sends, rendezvous reads, split work), `fail_table`
//!   (failure-knowledge table), `stats`, `config`, `buffer` (the only place user buffers are
//!   dereferenced), `transport` (trait, header), `error`, `activity` (the [`Activity`] trait
//!   upper layers plug in), `view` ([`CommView`], [`FailureView`]);
//! - **behaviour**: `send` (send path, per-destination queues), `recv` (receive path,
//!   matching of arrivals), `rndv` (rendezvous), `split` (split rendezvous), `progress`
//!   (progress, test, wait, cancel, generic requests), `dispatch` (activities, control-message
//!   handlers), `failure` (failure knowledge, revocation, error scope, and completing what
//!   they end), `finalize` (goodbye handshake), `create` (communicator creation, barrier),
//!   `universe` (peers joining at run time);
//! - **interfaces** (one file each; nothing repeated between them and [`Engine`]'s own
//!   methods: what they all need is the one trait `common` ([`Common`])):
//!   `coll_port` ([`CollPort`], the collectives layer's), `ft_port` ([`FtPort`], the
//!   fault-tolerance layer's), `contexts` ([`Contexts`], agreed context ids),
//!   `communicators` ([`Communicators`]: dup, split, free, error scope, acknowledgement),
//!   `setup` ([`Setup`]: transports, failure sources, universe, finalize), `diag`
//!   ([`Diagnostics`]).
//!
//! A send: [`Engine::send`] → `isend_ctx` (checks, route) → the transport's `try_send`
//! (shared memory: its ring's `try_push`), which calls nothing back in the engine's state
//! (it copies with the wire module's leaves, `Header::as_bytes` and `transport::copy_bytes`).

mod activity;
mod buffer;
mod coll_port;
mod comm;
mod common;
mod communicators;
mod config;
mod contexts;
mod create;
mod diag;
mod dispatch;
mod engine;
mod error;
mod fail_table;
mod failure;
mod finalize;
mod ft_port;
mod matching;
mod pending;
mod progress;
mod recv;
mod request;
mod rndv;
mod send;
mod setup;
mod split;
mod stats;
pub mod transport;
mod universe;
mod view;

pub use activity::{Activity, Step, FIRST_COLL_TAG, FIRST_EXT_TAG};
pub use comm::{CommId, ErrScope};
pub use common::Common;
pub use communicators::Communicators;
pub use config::{EngineConfig, ProgressMode};
pub use contexts::Contexts;
pub use create::UNDEFINED;
pub use diag::Diagnostics;
pub use engine::{ClassHandler, CollPort, Engine, FailureSource, FtPort};
pub use error::{Error, Result};
pub use recv::Message;
pub use request::{RecvStart, ReqId};
pub use setup::Setup;
pub use stats::{FailureOrigins, Stats};
pub use transport::{GetStatus, Header, RKey, Transport, TransportError};
pub use view::{CommView, FailureView};

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
