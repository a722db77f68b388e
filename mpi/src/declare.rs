//! One declaration per exported function: [`export!`] turns it into the strong `PMPI_`
//! symbol, its weak `MPI_` alias ([`weak_alias!`]) and the call path every function takes:
//! the initialisation check, the lock at `MPI_THREAD_MULTIPLE`, the panic catch and the
//! dispatch of an error to the handler of the object it concerns (all in [`state::call`]),
//! with an optional lock-free direct path in front.
//!
//! [`state::call`]: crate::state::call

/// Export `PMPI_name` and `MPI_name`, its weak alias ([`weak_alias!`]), from one declaration.
/// Every argument is a plain C value or pointer; pointers are checked before use (null where
/// the standard forbids it is `MPI_ERR_ARG`).
///
/// - `fn` *name* `/` *pname* `(args) on ON; |m| BODY`: the usual form. `BODY` (an `MpiResult`) runs
///   in `state::call` with the instance `m`; an error goes to the error handler of the object
///   `ON` (a `state::On`) names.
/// - `fn` *name* `/` *pname* `(args) on ON; direct |m| { DIRECT } |m| BODY`: the same with a direct
///   path, for the calls whose cost is measured per call. `DIRECT` runs first, inline in the
///   export and only while MPI runs below `MPI_THREAD_MULTIPLE` (`m` read from
///   `state::DIRECT` in the export itself, no lock, no call), and either returns the call's code or falls through; `BODY` then runs out of
///   line (`#[cold]`, so the direct path stays straight-line) in `state::call` as above.
/// - `fn` *name* `/` *pname* `(args) { ... }`: the raw form, for the functions that run without the
///   instance or outside the call wrapper (`MPI_Init`, `MPI_Initialized`, `MPI_Wtime`, ...).
macro_rules! export {
    ($(#[$m:meta])* fn $name:ident / $pname:ident ($($a:ident : $t:ty),* $(,)?) on $on:expr ;
        direct |$dm:ident| $direct:block |$cm:pat_param| $body:expr) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($a: $t),*) -> std::ffi::c_int {
            // The instance read here, not through a function: the direct path calls nothing in
            // `state.rs`.
            let direct = $crate::state::DIRECT.load(std::sync::atomic::Ordering::Acquire);
            if !direct.is_null() {
                // SAFETY: a non-null `DIRECT` is the instance, for this call (`state::DIRECT`).
                let $dm: &'static $crate::state::Mpi = unsafe { &*direct };
                $direct
            }
            /// The call past its direct path, out of line.
            ///
            /// # Safety
            /// As the exported function.
            #[cold] // For the direct path's layout (straight-line to the core call).
            #[inline(never)]
            unsafe fn slow($($a: $t),*) -> std::ffi::c_int {
                $crate::state::call(stringify!($name), $on, |$cm| $body)
            }
            // SAFETY: forwarded contract.
            unsafe { slow($($a),*) }
        }

        $crate::declare::weak_alias!($name / $pname);
    };
    ($(#[$m:meta])* fn $name:ident / $pname:ident ($($a:ident : $t:ty),* $(,)?) on $on:expr ;
        |$cm:pat_param| $body:expr) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($a: $t),*) -> std::ffi::c_int {
            $crate::state::call(stringify!($name), $on, |$cm| $body)
        }

        $crate::declare::weak_alias!($name / $pname);
    };
    ($(#[$m:meta])* fn $name:ident / $pname:ident ($($a:ident : $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($a: $t),*) -> std::ffi::c_int $body

        $crate::declare::weak_alias!($name / $pname);
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
