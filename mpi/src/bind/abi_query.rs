//! What the library says about its ABI (`MPI_Abi_get_version`, `MPI_Abi_get_info`): the
//! standard ABI version it implements (1.0) and the sizes of its integer types.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::err;
use crate::obj::info::Info;
use crate::state::{call_anytime, On};
use crate::{export, put};

export! {
    /// `MPI_Abi_get_version`: the standard ABI version, 1.0 (any time, also before `MPI_Init`).
    fn MPI_Abi_get_version / PMPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) {
        // SAFETY: output pointers from the caller.
        call_anytime(|| unsafe {
            put(abi_major, MPI_ABI_VERSION, "abi_major")?;
            put(abi_minor, MPI_ABI_SUBVERSION, "abi_minor")
        })
    }
}

export! {
    /// `MPI_Abi_get_info`: a new info object with the byte sizes of `MPI_Aint`, `MPI_Count` and
    /// `MPI_Offset` (keys `mpi_aint_size`, `mpi_count_size`, `mpi_offset_size`).
    fn MPI_Abi_get_info / PMPI_Abi_get_info(info: *mut MPI_Info) on On::NoObject;
    |m| {
        if info.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `info` is NULL"));
        }
        let mut i = Info::default();
        i.set("mpi_aint_size".into(), std::mem::size_of::<MPI_Aint>().to_string());
        i.set("mpi_count_size".into(), std::mem::size_of::<MPI_Count>().to_string());
        i.set("mpi_offset_size".into(), std::mem::size_of::<MPI_Offset>().to_string());
        let h = m.new_info(i);
        // SAFETY: checked non-null.
        unsafe { put(info, h, "info") }
    }
}
