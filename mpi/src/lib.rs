//! `weft-mpi`: weft as an MPI library. It builds `libmpi_abi.so.1`, the MPI 5.0 standard ABI,
//! as the third front end over weft's operations core ([`weft::ops::OpsCore`]), next to the
//! Rust API and the C ABI: a program compiled against any standard-ABI `mpi.h` runs on it
//! unchanged.
//!
//! This crate converts MPI handles, datatypes, statuses and error handlers into operations-core
//! calls and back; it wires no layers itself, and reaches the collectives only through the
//! operations core (`weft::ops`). Its modules stand in floors; a module imports only from its
//! own floor or the floors below it:
//!
//! 1. `bind/`: the exported functions, one file per chapter of the standard: `p2p` (with
//!    `p2p/modes`, `p2p/sendrecv`), `bsend`, `persistent`, `message` (matched probe), `request`
//!    and `completion`, `status`, `coll` (with `coll/*`), `op`, `neighbor`, `comm`,
//!    `intercomm`, `group`, `datatype` (constructors, queries, packing), `topo`, `attr`,
//!    `info`, `errhandler`, `init` (init, finalize, environment), `spawn`, `ulfm` (`mpi-ext.h`),
//!    `abi_query`, `address`, `profiling`, `unsupported` (the generated stubs of everything
//!    else).
//! 2. `declare`: [`export!`], one declaration per exported function (its `PMPI_` symbol, its
//!    weak `MPI_` alias, the call wrapper and an optional lock-free direct path).
//! 3. `obj/`: one module per MPI object kind, each owning its handle table, its resolver and
//!    its conversions: `comm` (with the intercommunicator and topology lookups), `intercomm`,
//!    `topo`, `group`, `datatype`, `op`, `request` (and persistent requests, the
//!    buffered-send pool), `message` (matched-probe messages), `errhandler` (and the error dispatch), `info`, `attr`
//!    (keyvals and cached attributes).
//! 4. `state`: the instance (operations core, thread level, error state), the thread model,
//!    `state::Owned` (how an object module keeps its table) and `call`, the wrapper every
//!    exported function's body runs in; `shortcut`: the resolved arguments of the direct
//!    paths.
//! 5. `handle` (generation-checked handle tables), `error` (classes and messages), `abi` (the
//!    standard's constants, generated).
//!
//! Every function is exported twice: `PMPI_x` holds the body (a strong symbol), and `MPI_x` is
//! a weak alias at the same address (the name a profiling library defines itself to intercept
//! the call, see [`weak_alias!`]).

#![allow(non_snake_case)]

pub mod abi;
mod bind;
mod declare;
pub mod error;
mod handle;
mod obj;
mod shortcut;
mod state;

// Every exported function, reachable from Rust too (the crate's examples and tests call them
// directly).
pub use crate::bind::*;

/// The attribute keys weft adds (`mpi-ext.h`).
pub mod attr {
    pub use crate::obj::attr::MPIX_FT;
}

pub(crate) use crate::declare::{export, weak_alias};

/// Write `v` through the output pointer `p`, or fail with `MPI_ERR_ARG` naming `what` if it is
/// null.
///
/// # Safety
/// A non-null `p` must be valid for a write of `T`.
#[inline(always)]
pub(crate) unsafe fn put<T>(p: *mut T, v: T, what: &str) -> error::MpiResult {
    if p.is_null() {
        return Err(error::err!(abi::MPI_ERR_ARG, "invalid argument: `{what}` is NULL"));
    }
    // SAFETY: non-null, and valid by the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}
