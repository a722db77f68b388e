//! `weft-mpi`: weft as an MPI library. It builds `libmpi_abi.so.1`, the MPI 5.0 standard ABI,
//! as the third front end over weft's operations core ([`weft::ops::OpsCore`]), next to the
//! Rust API and the C ABI: a program compiled against any standard-ABI `mpi.h` runs on it
//! unchanged.
//!
//! This crate converts MPI handles, datatypes, statuses and error handlers into operations-core
//! calls and back; it wires no layers itself. Module map: `abi` (the standard's constants,
//! generated), `handle` (handle tables), `state` (the instance, thread model, call wrapper),
//! `error` and `errhandler` (classes, messages, handler dispatch), `init` (init, finalize,
//! environment queries), `comm` (communicators), `intercomm` (intercommunicators), `group`, `datatype` (type descriptions),
//! `request` (requests and completion), `completion` (any/some/all), `persistent`, `status`,
//! `p2p` (point-to-point), `bsend` (buffered sends), `message` (matched probe), `op` (reduction operations),
//! `coll` (collectives), `attr` (attribute caching), `info`, `topo` (process topologies),
//! `neighbor` (neighborhood collectives), `ulfm` (the ULFM extensions of `mpi-ext.h`), `address`
//! (`MPI_Aint` arithmetic), `profiling` (`MPI_Pcontrol`), `parent` (`MPI_Comm_get_parent`), `unsupported` (the generated stubs of
//! everything else).
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
