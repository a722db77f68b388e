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
//! Every function is exported twice: `PMPI_x` holds the body, and `MPI_x` calls it (the name
//! a profiling library defines itself to intercept the call; in a shared library the dynamic
//! linker takes the first definition it finds, so the interposer wins without weak symbols).

#![allow(non_snake_case)]

pub mod abi;
mod abi_query;
mod address;
pub mod attr;
mod bsend;
mod coll;
mod comm;
mod completion;
mod datatype;
mod errhandler;
pub mod error;
mod group;
mod handle;
mod info;
mod init;
mod intercomm;
mod message;
mod neighbor;
mod op;
mod p2p;
mod persistent;
mod profiling;
mod request;
mod spawn;
mod state;
mod status;
mod topo;
mod ulfm;
mod unsupported;

// Every exported function, reachable from Rust too (the crate's examples and tests call them
// directly).
pub use crate::{
    abi_query::*, address::*, attr::*, bsend::*, coll::*, comm::*, completion::*, datatype::*, errhandler::*,
    group::*, info::*, init::*, intercomm::*, message::*, neighbor::*, op::*, p2p::*, persistent::*,
    profiling::*, request::*, status::*, topo::*, ulfm::*,
};

/// Export `PMPI_name` with `body` and `MPI_name` calling it. Every argument is a plain C value
/// or pointer; pointers are checked before use (null where the standard forbids it is
/// `MPI_ERR_ARG`).
macro_rules! export {
    ($(#[$m:meta])* fn $name:ident / $pname:ident ($($a:ident : $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($a: $t),*) -> std::ffi::c_int $body

        $(#[$m])*
        ///
        /// # Safety
        /// As for the `PMPI_` function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> std::ffi::c_int {
            // SAFETY: same contract.
            unsafe { $pname($($a),*) }
        }
    };
}
pub(crate) use export;

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
