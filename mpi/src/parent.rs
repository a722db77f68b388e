//! The parent of a process (`MPI_Comm_get_parent`). weft starts every process of a job with
//! the job (`MPI_Comm_spawn` is not implemented), so no process has a parent: the call returns
//! `MPI_COMM_NULL`, as the standard specifies for a process not started by a spawn. Programs
//! that replace failed processes ask for their parent first, before anything failed.

use crate::abi::*;
use crate::state::{call, On};
use crate::{export, put};

export! {
    /// `MPI_Comm_get_parent`: `MPI_COMM_NULL` (no weft process was spawned).
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut MPI_Comm) {
        // SAFETY: output pointer from the caller (`put` checks it for NULL).
        call("MPI_Comm_get_parent", On::NoObject, |_| unsafe { put(parent, MPI_COMM_NULL, "parent") })
    }
}
