//! `weft`: a fault-tolerant message-passing engine.
//!
//! This crate is the facade: [`init`] wires the runtime (`weft-pmix`), the transports
//! (`weft-shm`) and the progress engine (`weft-engine`) together and exposes the safe API
//! ([`Weft`], [`Comm`], [`Request`]) and the C ABI (`include/weft.h`, module `capi`).
//!
//! ```no_run
//! let w = weft::init()?;
//! let world = w.world();
//! let mut token = [0u8; 8];
//! if world.rank() == 0 {
//!     world.send(&42u64.to_le_bytes(), 1 % world.size(), 0)?;
//! }
//! if world.rank() == 1 % world.size() {
//!     world.recv(&mut token, 0, 0)?;
//! }
//! w.finalize()?;
//! # Ok::<(), weft::Error>(())
//! ```

mod api;
mod bridge;
/// The C ABI (`include/weft.h`): `extern "C"` functions prefixed `weft_`.
pub mod capi;
/// Checkpoint helpers for global restart: in memory with a buddy copy, and in files.
pub mod checkpoint;
/// Collectives: blocking and non-blocking `impl Comm` methods, types and operations.
pub mod coll;
mod config;
mod dgrp;
mod error;
mod error_class;
mod ft;
mod init;
/// The operations core every front end calls (the Rust API, the C ABI, and the MPI library in
/// the `weft-mpi` crate): one instance's engine, collectives and fault tolerance, driven through
/// communicator and request ids and raw buffers.
pub mod ops;
mod reinit;
mod topology;

pub use api::{init, init_with, test_all, wait_all, wait_any, Comm, Request, Scope, Weft};
pub use config::{Bind, Config, Key, ProgressMode, KEYS};
pub use dgrp::{DgrpCounters, DgrpOptions, DgrpStats};
pub use error::{EngineError, Error};
pub use error_class::ErrorClass;
pub use ft::{FtStats, ShrinkRequest};
pub use reinit::{reinit, reinit_with, ReinitState};
pub use topology::{bind_self, Nic, NumaNode, Topology};
pub use weft_engine::ErrScope;
pub use weft_engine::{Status, ANY_SOURCE, ANY_TAG, MAX_TAG, UNDEFINED};

/// Result of a weft call.
pub type Result<T> = std::result::Result<T, Error>;
