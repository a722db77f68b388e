//! Datatypes chapter, queries: sizes, extents, envelopes, contents, names, commit and free.

use crate::abi::*;
use crate::bind::init::{c_str, write_str};
use crate::error::{err, MpiResult};
use crate::obj::datatype::Types;
use crate::state::On;
use crate::{export, put};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

export! {
    /// `MPI_Type_size`: `MPI_UNDEFINED` if the size does not fit an int.
    fn MPI_Type_size / PMPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) on On::NoObject;
    |m| {
        let s = m.type_info(datatype)?.size;
        // SAFETY: output pointer from the caller.
        unsafe { put(size, c_int::try_from(s).unwrap_or(MPI_UNDEFINED), "size") }
    }
}

export! {
    /// `MPI_Type_size_x`.
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) on On::NoObject;
    |m| {
        let s = m.type_info(datatype)?.size;
        // SAFETY: output pointer from the caller.
        unsafe { put(size, s as MPI_Count, "size") }
    }
}

export! {
    /// `MPI_Type_size_c`.
    fn MPI_Type_size_c / PMPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) on On::NoObject;
    |m| {
        let s = m.type_info(datatype)?.size;
        // SAFETY: output pointer from the caller.
        unsafe { put(size, s as MPI_Count, "size") }
    }
}

/// Write two bounds through output pointers of type `T`.
///
/// # Safety
/// Non-null pointers must be valid for writes.
unsafe fn bounds<T>(a: *mut T, b: *mut T, va: T, vb: T) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe {
        put(a, va, "lb")?;
        put(b, vb, "extent")
    }
}

export! {
    /// `MPI_Type_get_extent`.
    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: output pointers from the caller.
        unsafe { bounds(lb, extent, t.lb, t.extent) }
    }
}

export! {
    /// `MPI_Type_get_extent_x`.
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: output pointers from the caller.
        unsafe { bounds(lb, extent, t.lb as MPI_Count, t.extent as MPI_Count) }
    }
}

export! {
    /// `MPI_Type_get_extent_c`.
    fn MPI_Type_get_extent_c / PMPI_Type_get_extent_c(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: output pointers from the caller.
        unsafe { bounds(lb, extent, t.lb as MPI_Count, t.extent as MPI_Count) }
    }
}

export! {
    /// `MPI_Type_get_true_extent`.
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: MPI_Datatype, true_lb: *mut MPI_Aint, true_extent: *mut MPI_Aint) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: output pointers from the caller.
        unsafe { bounds(true_lb, true_extent, t.true_lb, t.true_extent) }
    }
}

export! {
    /// `MPI_Type_get_true_extent_x`.
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: MPI_Datatype, true_lb: *mut MPI_Count, true_extent: *mut MPI_Count) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: output pointers from the caller.
        unsafe { bounds(true_lb, true_extent, t.true_lb as MPI_Count, t.true_extent as MPI_Count) }
    }
}

export! {
    /// `MPI_Type_get_true_extent_c`.
    fn MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c(datatype: MPI_Datatype, true_lb: *mut MPI_Count, true_extent: *mut MPI_Count) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: output pointers from the caller.
        unsafe { bounds(true_lb, true_extent, t.true_lb as MPI_Count, t.true_extent as MPI_Count) }
    }
}

export! {
    /// `MPI_Type_get_envelope`: how many integers, addresses and types the constructor took,
    /// and its combiner (`MPI_COMBINER_NAMED` for predefined types).
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(datatype: MPI_Datatype, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        let e = &t.envelope;
        // SAFETY: output pointers from the caller.
        unsafe {
            put(num_integers, e.ints.len() as c_int, "num_integers")?;
            put(num_addresses, e.addrs.len() as c_int, "num_addresses")?;
            put(num_datatypes, e.types.len() as c_int, "num_datatypes")?;
            put(combiner, e.combiner, "combiner")
        }
    }
}

/// Copy `src` into the C array `dst` of `cap` entries (`MPI_ERR_ARG` if it is too small).
///
/// # Safety
/// A non-null `dst` must be valid for `cap` writes.
unsafe fn fill<T: Copy>(dst: *mut T, cap: c_int, src: &[T], what: &str) -> MpiResult {
    if (cap.max(0) as usize) < src.len() {
        return Err(err!(
            MPI_ERR_ARG,
            "MPI_Type_get_contents: `{what}` holds {cap} entries, {} needed",
            src.len()
        ));
    }
    if src.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `{what}` is NULL"));
    }
    // SAFETY: non-null, `cap >= src.len()` entries by the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    Ok(())
}

export! {
    /// `MPI_Type_get_contents`: the constructor's arguments. Derived types among them come
    /// back as new handles (the application frees them), predefined ones as themselves.
    fn MPI_Type_get_contents / PMPI_Type_get_contents(datatype: MPI_Datatype, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_datatypes: *mut MPI_Datatype) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        let e = &t.envelope;
        if e.combiner == MPI_COMBINER_NAMED {
            return Err(err!(MPI_ERR_ARG, "MPI_Type_get_contents: {} is a predefined type", t.name));
        }
        if (max_datatypes.max(0) as usize) < e.types.len() {
            return Err(err!(MPI_ERR_ARG, "MPI_Type_get_contents: `array_of_datatypes` holds {max_datatypes} entries, {} needed", e.types.len()));
        }
        // SAFETY: output arrays from the caller, with the capacities it gave.
        unsafe {
            fill(array_of_integers, max_integers, &e.ints, "array_of_integers")?;
            fill(array_of_addresses, max_addresses, &e.addrs, "array_of_addresses")?;
        }
        let mut types = m.types().borrow_mut();
        let handles: Vec<MPI_Datatype> = e
            .types
            .iter()
            .zip(&e.children)
            .map(|(&h, c)| if Types::is_predefined(h) { h } else { types.insert_shared(c.clone()) })
            .collect();
        // SAFETY: as above.
        unsafe { fill(array_of_datatypes, max_datatypes, &handles, "array_of_datatypes") }
    }
}

export! {
    /// `MPI_Type_set_name`.
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: MPI_Datatype, type_name: *const c_char) on On::NoObject;
    |m| {
        // SAFETY: a NUL-terminated string from the caller.
        let mut name = unsafe { c_str(type_name, "type_name")? };
        let cap = MPI_MAX_OBJECT_NAME as usize - 1;
        if name.len() > cap {
            let mut cut = cap;
            while !name.is_char_boundary(cut) {
                cut -= 1;
            }
            name.truncate(cut);
        }
        let mut types = m.types().borrow_mut();
        Arc::make_mut(types.get_mut(datatype)?).name = name;
        Ok(())
    }
}

export! {
    /// `MPI_Type_get_name`: predefined types report their MPI names, unnamed types "".
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) on On::NoObject;
    |m| {
        let t = m.type_info(datatype)?;
        // SAFETY: the caller's buffer holds MPI_MAX_OBJECT_NAME characters.
        unsafe { write_str(type_name, resultlen, &t.name, MPI_MAX_OBJECT_NAME as usize) }
    }
}

export! {
    /// `MPI_Type_match_size`: the predefined type of `typeclass` (`MPI_TYPECLASS_INTEGER`,
    /// `_REAL`, `_COMPLEX`) with `size` bytes (the sized Fortran types, as the standard's
    /// example uses them).
    fn MPI_Type_match_size / PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) on On::NoObject;
    |_| {
        let t = match (typeclass, size) {
            (MPI_TYPECLASS_INTEGER, 1) => MPI_INTEGER1,
            (MPI_TYPECLASS_INTEGER, 2) => MPI_INTEGER2,
            (MPI_TYPECLASS_INTEGER, 4) => MPI_INTEGER4,
            (MPI_TYPECLASS_INTEGER, 8) => MPI_INTEGER8,
            (MPI_TYPECLASS_INTEGER, 16) => MPI_INTEGER16,
            (MPI_TYPECLASS_REAL, 2) => MPI_REAL2,
            (MPI_TYPECLASS_REAL, 4) => MPI_REAL4,
            (MPI_TYPECLASS_REAL, 8) => MPI_REAL8,
            (MPI_TYPECLASS_REAL, 16) => MPI_REAL16,
            (MPI_TYPECLASS_COMPLEX, 4) => MPI_COMPLEX4,
            (MPI_TYPECLASS_COMPLEX, 8) => MPI_COMPLEX8,
            (MPI_TYPECLASS_COMPLEX, 16) => MPI_COMPLEX16,
            (MPI_TYPECLASS_COMPLEX, 32) => MPI_COMPLEX32,
            (c, s) => return Err(err!(MPI_ERR_ARG, "MPI_Type_match_size: no type of class {c} with {s} bytes")),
        };
        // SAFETY: output pointer from the caller.
        unsafe { put(datatype, t, "datatype") }
    }
}

export! {
    /// `MPI_Get_address`: the address of `location` as an `MPI_Aint`.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut MPI_Aint) on On::NoObject;
    |_| {
        // SAFETY: output pointer from the caller.
        unsafe { put(address, location as MPI_Aint, "address") }
    }
}
