//! Datatypes chapter, constructors: contiguous, vector, indexed, struct, subarray, darray, resized, dup.

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::obj::datatype::typecons::*;
use crate::state::On;
use std::ffi::c_int;
use std::sync::Arc;

export! {
    /// `MPI_Type_contiguous`.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(count: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let old = m.old_type(oldtype)?;
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(contiguous(count, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_vector`.
    fn MPI_Type_vector / PMPI_Type_vector(count: c_int, blocklength: c_int, stride: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let old = m.old_type(oldtype)?;
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(vector(count, blocklength, stride, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_create_hvector`.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let old = m.old_type(oldtype)?;
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(hvector(count, blocklength, stride, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_indexed`.
    fn MPI_Type_indexed / PMPI_Type_indexed(count: c_int, blocklengths: *const c_int, displacements: *const c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let n = count_arg(count, "count")?;
        let old = m.old_type(oldtype)?;
        // SAFETY: `count` entries each, by the caller's contract.
        let (b, d) = unsafe { (array(blocklengths, n, "array_of_blocklengths")?, array(displacements, n, "array_of_displacements")?) };
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(indexed(b, d, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_create_hindexed`.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(count: c_int, blocklengths: *const c_int, displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let n = count_arg(count, "count")?;
        let old = m.old_type(oldtype)?;
        // SAFETY: `count` entries each, by the caller's contract.
        let (b, d) = unsafe { (array(blocklengths, n, "array_of_blocklengths")?, array(displacements, n, "array_of_displacements")?) };
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(hindexed(b, d, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_create_indexed_block`.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(count: c_int, blocklength: c_int, displacements: *const c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let n = count_arg(count, "count")?;
        let old = m.old_type(oldtype)?;
        // SAFETY: `count` entries, by the caller's contract.
        let d = unsafe { array(displacements, n, "array_of_displacements")? };
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(indexed_block(blocklength, d, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_create_hindexed_block`.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(count: c_int, blocklength: c_int, displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let n = count_arg(count, "count")?;
        let old = m.old_type(oldtype)?;
        // SAFETY: `count` entries, by the caller's contract.
        let d = unsafe { array(displacements, n, "array_of_displacements")? };
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(hindexed_block(blocklength, d, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_create_struct`.
    fn MPI_Type_create_struct / PMPI_Type_create_struct(count: c_int, blocklengths: *const c_int, displacements: *const MPI_Aint, types: *const MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let n = count_arg(count, "count")?;
        // SAFETY: `count` entries each, by the caller's contract.
        let (b, d, t) = unsafe {
            (array(blocklengths, n, "array_of_blocklengths")?, array(displacements, n, "array_of_displacements")?, array(types, n, "array_of_types")?)
        };
        let olds = t.iter().map(|&h| m.old_type(h)).collect::<MpiResult<Vec<_>>>()?;
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(structure(b, d, &olds), newtype) }
    }
}

export! {
    /// `MPI_Type_create_resized`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized(oldtype: MPI_Datatype, lb: MPI_Aint, extent: MPI_Aint, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let old = m.old_type(oldtype)?;
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(resized(&old, lb, extent), newtype) }
    }
}

export! {
    /// `MPI_Type_dup`.
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let old = m.old_type(oldtype)?;
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(Ok(dup(&old)), newtype)? };
        // SAFETY: `new_type` wrote the new handle through the checked pointer.
        m.copy_type_attrs(oldtype, unsafe { *newtype })
    }
}

export! {
    /// `MPI_Type_create_subarray`.
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(ndims: c_int, sizes: *const c_int, subsizes: *const c_int, starts: *const c_int, order: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let n = usize::try_from(ndims).map_err(|_| err!(MPI_ERR_ARG, "invalid ndims {ndims}"))?;
        let old = m.old_type(oldtype)?;
        // SAFETY: `ndims` entries each, by the caller's contract.
        let (a, b, c) = unsafe {
            (array(sizes, n, "array_of_sizes")?, array(subsizes, n, "array_of_subsizes")?, array(starts, n, "array_of_starts")?)
        };
        // SAFETY: output pointer from the caller.
        unsafe { m.new_type(subarray(a, b, c, order, &old), newtype) }
    }
}

export! {
    /// `MPI_Type_commit`: the type becomes usable in communication (its layout is already
    /// normalised when it is built).
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        if datatype.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `datatype` is NULL"));
        }
        // SAFETY: non-null, from the caller.
        let h = unsafe { *datatype };
        let mut types = m.types().borrow_mut();
        let t = types.get_mut(h)?;
        if !t.committed {
            Arc::make_mut(t).committed = true;
        }
        Ok(())
    }
}

export! {
    /// `MPI_Type_free`: the handle becomes `MPI_DATATYPE_NULL`; types built from it and
    /// operations in flight keep their own reference to its description.
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut MPI_Datatype) on On::NoObject;
    |m| {
        if datatype.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `datatype` is NULL"));
        }
        // SAFETY: non-null, from the caller.
        let h = unsafe { *datatype };
        m.types().borrow_mut().free(h)?;
        m.shortcuts.clear();
        // SAFETY: as above.
        unsafe { *datatype = MPI_DATATYPE_NULL };
        m.delete_type_attrs(h)
    }
}
