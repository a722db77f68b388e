//! The profiling interface's control call, `MPI_Pcontrol`. The standard gives it no effect in
//! the MPI library itself (a profiling library that intercepts it gives it a meaning), so
//! weft's returns `MPI_SUCCESS` and ignores its arguments, in any state of the library.
//!
//! C declares it variadic (`int MPI_Pcontrol(const int level, ...)`); it is defined here with
//! its one fixed parameter, which the C calling conventions weft builds for (System V x86-64,
//! AArch64 Linux) pass in the same place, and the callee never reads the variadic part.

use std::ffi::c_int;

use crate::abi::MPI_SUCCESS;

/// `MPI_Pcontrol`: no effect.
#[no_mangle]
pub extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    MPI_SUCCESS
}

crate::weak_alias!(MPI_Pcontrol / PMPI_Pcontrol);
