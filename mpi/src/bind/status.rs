//! What a status says and how an application sets it: `MPI_Get_count`, `MPI_Get_elements`
//! (and their large-count forms), `MPI_Status_set_elements`, `MPI_Status_set_cancelled`.
//!
//! A status keeps the byte count (see `request::set_count`). Elements are counted in basic
//! elements of the type: a predefined type is one basic element (a pair type such as
//! `MPI_2INT` two); a created type whose data is all one predefined element type (`elem`) is
//! `size / elem` of them. A created type of mixed element types has no element count recorded
//! here, and `MPI_Get_elements` on it is `MPI_ERR_TYPE`.

use std::ffi::c_int;

use weft::ops::DType;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::export;
use crate::obj::datatype::{TypeInfo, Types};
use crate::obj::request::{count_of, set_count};
use crate::put;
use crate::state::{Mpi, On};

/// Byte sizes of the basic elements of one element of a type, in order, and the type's
/// stride (its size).
fn members(h: MPI_Datatype, t: &TypeInfo) -> MpiResult<(Vec<usize>, usize)> {
    if let Some(p) = t.pair {
        // Pairs (predefined or built from one pair type): value and index per pair.
        let reps = t.size.checked_div(p.size()).unwrap_or(0);
        return Ok(([p.value.size(), p.index.size()].repeat(reps), t.size));
    }
    if Types::is_predefined(h) {
        return Ok((vec![t.size], t.size));
    }
    let (one, stride): (&[usize], usize) = match t.elem {
        Some(DType::I32I32 | DType::F32I32) => (&[4, 4], 8),
        Some(DType::F64I32) => (&[8, 4], 16),
        Some(d) => (&[d.size()][..], d.size()),
        None => {
            return Err(err!(
                MPI_ERR_TYPE,
                "datatype {}: its basic elements are of mixed types, whose count is not recorded",
                t.name
            ))
        }
    };
    let reps = t.size.checked_div(stride).unwrap_or(0);
    Ok((one.repeat(reps), t.size))
}

/// Basic elements in `bytes` bytes of a type with these members; `MPI_UNDEFINED` if the
/// bytes end inside a basic element.
fn elements_in(bytes: usize, members: &[usize], stride: usize) -> MPI_Count {
    if stride == 0 || members.is_empty() {
        return if bytes == 0 { 0 } else { MPI_UNDEFINED.into() };
    }
    let (whole, rem) = (bytes / stride, bytes % stride);
    let (mut k, mut acc) = (0, 0);
    while k < members.len() && acc + members[k] <= rem {
        acc += members[k];
        k += 1;
    }
    if acc != rem {
        return MPI_UNDEFINED.into();
    }
    (whole * members.len() + k) as MPI_Count
}

impl Mpi {
    /// Whole elements of `dt` in the status's byte count, or `MPI_UNDEFINED`.
    fn count_in(&self, st: &MPI_Status, dt: MPI_Datatype) -> MpiResult<MPI_Count> {
        let bytes = count_of(st);
        let size = self.types().borrow().get(dt)?.size;
        Ok(match size {
            0 if bytes == 0 => 0,
            0 => MPI_UNDEFINED.into(),
            s if bytes.is_multiple_of(s) => (bytes / s) as MPI_Count,
            _ => MPI_UNDEFINED.into(),
        })
    }

    /// Basic elements of `dt` in the status's byte count, or `MPI_UNDEFINED`.
    fn elements_of(&self, st: &MPI_Status, dt: MPI_Datatype) -> MpiResult<MPI_Count> {
        let types = self.types().borrow();
        let (m, stride) = members(dt, types.get(dt)?)?;
        Ok(elements_in(count_of(st), &m, stride))
    }

    /// Set the status's byte count so that it holds `count` basic elements of `dt`.
    fn set_elements(&self, st: &mut MPI_Status, dt: MPI_Datatype, count: MPI_Count) -> MpiResult {
        if count < 0 {
            return Err(err!(MPI_ERR_COUNT, "invalid count {count}: counts are never negative"));
        }
        let types = self.types().borrow();
        let (m, stride) = members(dt, types.get(dt)?)?;
        let bytes = if m.is_empty() {
            0
        } else {
            let (whole, rem) = (count as usize / m.len(), count as usize % m.len());
            whole * stride + m[..rem].iter().sum::<usize>()
        };
        set_count(st, bytes);
        Ok(())
    }
}

/// The status behind a pointer, or `MPI_ERR_ARG`.
///
/// # Safety
/// A non-null `p` must be valid for reads (and writes, for a `&mut`) of a status for the
/// returned lifetime.
unsafe fn status_ref<'a>(p: *mut MPI_Status) -> MpiResult<&'a mut MPI_Status> {
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `status` is NULL"));
    }
    // SAFETY: non-null, valid by the caller's contract.
    Ok(unsafe { &mut *p })
}

/// Clamp a count to `int` for the non-`_c` functions: too large is `MPI_UNDEFINED`.
fn to_int(n: MPI_Count) -> c_int {
    c_int::try_from(n).unwrap_or(MPI_UNDEFINED)
}

export! {
    /// `MPI_Get_count`: elements of `datatype` in the message, or `MPI_UNDEFINED` if the byte
    /// count is not a whole number of them.
    fn MPI_Get_count / PMPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller (read only).
        let n = m.count_in(unsafe { status_ref(status.cast_mut())? }, datatype)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(count, to_int(n), "count") }
    }
}

export! {
    /// `MPI_Get_count_c`: `MPI_Get_count` with a large count.
    fn MPI_Get_count_c / PMPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller (read only).
        let n = m.count_in(unsafe { status_ref(status.cast_mut())? }, datatype)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(count, n, "count") }
    }
}

export! {
    /// `MPI_Get_elements`: basic elements of `datatype` in the message.
    fn MPI_Get_elements / PMPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller (read only).
        let n = m.elements_of(unsafe { status_ref(status.cast_mut())? }, datatype)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(count, to_int(n), "count") }
    }
}

export! {
    /// `MPI_Get_elements_x`: `MPI_Get_elements` with an `MPI_Count` result.
    fn MPI_Get_elements_x / PMPI_Get_elements_x(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller (read only).
        let n = m.elements_of(unsafe { status_ref(status.cast_mut())? }, datatype)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(count, n, "count") }
    }
}

export! {
    /// `MPI_Get_elements_c`: `MPI_Get_elements` with a large count.
    fn MPI_Get_elements_c / PMPI_Get_elements_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller (read only).
        let n = m.elements_of(unsafe { status_ref(status.cast_mut())? }, datatype)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(count, n, "count") }
    }
}

export! {
    /// `MPI_Status_set_elements`: make the status hold `count` basic elements of `datatype`.
    fn MPI_Status_set_elements / PMPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller.
        m.set_elements(unsafe { status_ref(status)? }, datatype, count.into())
    }
}

export! {
    /// `MPI_Status_set_elements_x`: `MPI_Status_set_elements` with an `MPI_Count`.
    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller.
        m.set_elements(unsafe { status_ref(status)? }, datatype, count)
    }
}

export! {
    /// `MPI_Status_set_elements_c`: `MPI_Status_set_elements` with a large count.
    fn MPI_Status_set_elements_c / PMPI_Status_set_elements_c(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) on On::NoObject;
    |m| {
        // SAFETY: the status pointer from the caller.
        m.set_elements(unsafe { status_ref(status)? }, datatype, count)
    }
}

export! {
    /// `MPI_Status_set_cancelled`: set or clear the status's cancelled flag.
    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) on On::NoObject;
    |_| {
        // SAFETY: the status pointer from the caller.
        unsafe { status_ref(status)? }.MPI_internal[2] = (flag != 0) as c_int;
        Ok(())
    }
}
