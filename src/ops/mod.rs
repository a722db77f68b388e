//! The operations core: the one place that wires runtime, engine, collectives and fault
//! tolerance together. Every front end (the safe Rust API in `api.rs`, `coll.rs` and `ft.rs`,
//! and the C ABI in `capi/`) calls these operations and nothing below them.
//!
//! Operations work on communicator and request ids ([`CommId`], [`ReqId`]) and on raw buffers
//! or a collective [`weft_coll::Spec`]; a front end keeps only its language's rules (Rust
//! borrows and scopes, C pointers and error codes). What an operation does (which barrier
//! runs, the uniform-mode hook, the blocking agreement path, how buffer sizes follow from
//! counts) is decided here once, so the front ends cannot drift apart.
//!
//! [`OpsCore`] is one weft instance. It is not `Send`: one thread drives the engine. The engine
//! and the collectives state sit in `RefCell`s that an operation borrows for its own duration;
//! a re-entrant call (a user reduction calling weft) finds them borrowed and fails with
//! `InvalidArg` instead of aliasing them.
//!
//! Files: `instance.rs` (the [`OpsCore`] struct, its start and end), `p2p.rs` (point to
//! point), `request.rs` (request completion), `comm.rs` (communicators), `comm_idup.rs`
//! (non-blocking duplication), `coll.rs` (collectives), `ft.rs` (fault tolerance), `dgrp.rs`
//! (the dynamic group), `spawn.rs` (dynamic processes), `inspect.rs` (node, job, transports,
//! counters).

pub use weft_engine::{CommId, Message, ReqId, Stats};

use crate::EngineError;

mod coll;
mod comm;
mod comm_idup;
mod dgrp;
mod ft;
mod inspect;
mod instance;
mod p2p;
mod request;
mod spawn;

pub use comm_idup::{PendingDup, WINDOW as IDUP_CTX_WINDOW};
pub use instance::OpsCore;
pub use spawn::Spawned;
/// The collective's vocabulary a front end builds its calls from (element type, kind,
/// operation, spec), so a front end needs no other crate to reach the collectives.
pub use weft_coll::{DType, Kind, Op, Spec};
pub use weft_pmix::universe::SpawnRequest;

/// Result of an engine-level operation: the error keeps its engine variant (a status needs
/// the truncation details, the C ABI maps each variant to its code).
pub type EngineResult<T> = std::result::Result<T, EngineError>;

/// The error of an operation that found the engine or the collectives state borrowed: a
/// re-entrant call.
fn reentrant() -> EngineError {
    EngineError::InvalidArg("weft called re-entrantly (from inside a weft callback)".into())
}
