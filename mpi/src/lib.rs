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

/// Export `PMPI_name` with `body`, and `MPI_name` as its weak alias ([`weak_alias!`]). Every
/// argument is a plain C value or pointer; pointers are checked before use (null where the
/// standard forbids it is `MPI_ERR_ARG`).
macro_rules! export {
    ($(#[$m:meta])* fn $name:ident / $pname:ident ($($a:ident : $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($a: $t),*) -> std::ffi::c_int $body

        $crate::weak_alias!($name / $pname);
    };
}
pub(crate) use export;

/// Define `MPI_name` as a weak ELF alias of the exported function `PMPI_name` (same address,
/// binding `STB_WEAK`), and as a Rust re-export of it for the crate's own callers.
///
/// A profiling library defines `MPI_name` itself and calls `PMPI_name`: against the shared
/// library its definition comes first in the dynamic linker's search, and against a static
/// archive the weak alias yields to it. Rust has no stable weak linkage, so the alias is an
/// assembler directive (`.weak` + `.set`) in module-level assembly. The assembler resolves
/// `.set` only against a symbol of its own object file (an alias of a symbol defined elsewhere
/// is silently dropped), and rustc places module-level assembly in the codegen unit of its
/// module, so this macro must be expanded in the module that defines `PMPI_name`: `export!`
/// does that. rustc's version script exports only Rust's `#[no_mangle]` items; `build.rs`
/// adds a second one that exports the `MPI_*`/`MPIX_*` aliases. `mpi/tests/symbols.rs` checks
/// that every `MPI_` export of the library is weak and has its `PMPI_` twin at its address.
macro_rules! weak_alias {
    ($name:ident / $pname:ident) => {
        #[cfg(target_os = "linux")]
        std::arch::global_asm!(concat!(
            ".weak ",
            stringify!($name),
            "\n.set ",
            stringify!($name),
            ", ",
            stringify!($pname)
        ));
        #[doc = concat!("`", stringify!($name), "`: the weak alias of `", stringify!($pname), "`.")]
        #[allow(unused_imports)] // Unused in Rust where the module is not re-exported.
        pub use $pname as $name;
    };
}
pub(crate) use weak_alias;

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
