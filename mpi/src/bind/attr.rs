//! Attributes chapter: keyvals, and caching attributes on communicators and datatypes.

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::obj::attr::*;
use crate::state::On;
use crate::{export, put};

/// Write `value` (if any) through `attr` (a `void **`) and the flag.
///
/// # Safety
/// Non-null `attr` and `flag` must be valid for writes.
unsafe fn give(value: Option<usize>, attr: *mut c_void, flag: *mut c_int) -> MpiResult {
    if flag.is_null() || (value.is_some() && attr.is_null()) {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `attribute_val` or `flag` is NULL"));
    }
    // SAFETY: checked non-null; valid by the caller's contract.
    unsafe {
        if let Some(v) = value {
            *attr.cast::<usize>() = v;
        }
        *flag = value.is_some() as c_int;
    }
    Ok(())
}

macro_rules! attr_functions {
    ($object:expr, $on:ident,
     $create:ident / $pcreate:ident, $free:ident / $pfree:ident, $set:ident / $pset:ident,
     $get:ident / $pget:ident, $del:ident / $pdel:ident) => {
        export! {
            /// Create a keyval (`MPI_*_create_keyval`) with copy and delete callbacks (or the
            /// predefined `NULL_COPY`/`DUP`/`NULL_DELETE` values) and extra state.
            fn $create / $pcreate(copy_fn: usize, delete_fn: usize, keyval: *mut c_int, extra_state: *mut c_void) on On::NoObject;
            |m| {
                if keyval.is_null() {
                    return Err(err!(MPI_ERR_ARG, "invalid argument: `keyval` is NULL"));
                }
                let k = m.create_keyval($object, copy_fn, delete_fn, extra_state);
                // SAFETY: checked non-null.
                unsafe { put(keyval, k, "keyval") }
            }
        }
        export! {
            /// Free a keyval (`MPI_*_free_keyval`); sets it to `MPI_KEYVAL_INVALID`.
            fn $free / $pfree(keyval: *mut c_int) on On::NoObject;
            |m| m.free_keyval($object, keyval)
        }
        export! {
            /// Attach a value (`MPI_*_set_attr`); an earlier value's delete callback runs first.
            fn $set / $pset(h: usize, keyval: c_int, value: *mut c_void) on $on(h);
            |m| m.set_attr($object, h, keyval, value as usize)
        }
        export! {
            /// Read a value (`MPI_*_get_attr`): `*(void **)attribute_val` and `flag`.
            fn $get / $pget(h: usize, keyval: c_int, value: *mut c_void, flag: *mut c_int) on $on(h);
            |m| {
                let v = m.get_attr($object, h, keyval)?;
                // SAFETY: output pointers from the caller.
                unsafe { give(v, value, flag) }
            }
        }
        export! {
            /// Remove a value (`MPI_*_delete_attr`), running its delete callback.
            fn $del / $pdel(h: usize, keyval: c_int) on $on(h);
            |m| m.delete_attr($object, h, keyval)
        }
    };
}

fn on_comm(h: MPI_Comm) -> On {
    On::Comm(h)
}

fn on_none(_: usize) -> On {
    On::NoObject
}

attr_functions!(
    Object::Comm,
    on_comm,
    MPI_Comm_create_keyval / PMPI_Comm_create_keyval,
    MPI_Comm_free_keyval / PMPI_Comm_free_keyval,
    MPI_Comm_set_attr / PMPI_Comm_set_attr,
    MPI_Comm_get_attr / PMPI_Comm_get_attr,
    MPI_Comm_delete_attr / PMPI_Comm_delete_attr
);

attr_functions!(
    Object::Type,
    on_none,
    MPI_Type_create_keyval / PMPI_Type_create_keyval,
    MPI_Type_free_keyval / PMPI_Type_free_keyval,
    MPI_Type_set_attr / PMPI_Type_set_attr,
    MPI_Type_get_attr / PMPI_Type_get_attr,
    MPI_Type_delete_attr / PMPI_Type_delete_attr
);
