//! Datatypes chapter, packing: `MPI_Pack`, `MPI_Unpack`, their sizes and the external forms.

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::obj::datatype::pack::*;
use crate::state::On;
use crate::{export, put};
use std::ffi::{c_int, c_void};

/// Read `*position` as a buffer offset within `size` bytes.
///
/// # Safety
/// `position` must be valid for reads when non-null.
unsafe fn position_in(position: *mut c_int, size: c_int) -> MpiResult<usize> {
    if position.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `position` is NULL"));
    }
    // SAFETY: non-null, from the caller.
    let p = unsafe { *position };
    if p < 0 || size < 0 || p > size {
        return Err(err!(MPI_ERR_ARG, "invalid position {p} in a buffer of {size} bytes"));
    }
    Ok(p as usize)
}

export! {
    /// `MPI_Pack`: the data of `incount` elements at `inbuf` into `outbuf` from `*position`
    /// (advanced past them); `MPI_ERR_TRUNCATE` if they do not fit in `outsize` bytes.
    fn MPI_Pack / PMPI_Pack(inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: MPI_Comm) on On::Comm(comm);
    |m| {
        m.comm(comm)?;
        let span = m.types().borrow().span(datatype, incount as i64)?;
        let ty = m.types().borrow().get(datatype)?.clone();
        // SAFETY: pointer from the caller.
        let at = unsafe { position_in(position, outsize)? };
        let n = span.bytes();
        if n > outsize as usize - at {
            return Err(err!(MPI_ERR_TRUNCATE, "MPI_Pack: {n} bytes do not fit at {at} in a buffer of {outsize}"));
        }
        // A NULL `inbuf` is MPI_BOTTOM (absolute addresses in the type); the packed side must exist.
        if n > 0 && outbuf.is_null() {
            return Err(err!(MPI_ERR_BUFFER, "MPI_Pack: NULL buffer with {n} bytes to pack"));
        }
        // SAFETY: the input holds `incount` elements of the type and the output `outsize`
        // bytes (checked above to have room), by the caller's contract.
        unsafe { pack_to(inbuf.cast(), incount as usize, &ty, outbuf.cast::<u8>().add(at)) };
        // SAFETY: checked non-null by `position_in`.
        unsafe { *position = (at + n) as c_int };
        Ok(())
    }
}

export! {
    /// `MPI_Unpack`: `outcount` elements into `outbuf` from `inbuf` at `*position` (advanced
    /// past them); `MPI_ERR_TRUNCATE` if `insize` bytes do not hold them.
    fn MPI_Unpack / PMPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype, comm: MPI_Comm) on On::Comm(comm);
    |m| {
        m.comm(comm)?;
        let span = m.types().borrow().span(datatype, outcount as i64)?;
        let ty = m.types().borrow().get(datatype)?.clone();
        // SAFETY: pointer from the caller.
        let at = unsafe { position_in(position, insize)? };
        let n = span.bytes();
        if n > insize as usize - at {
            return Err(err!(MPI_ERR_TRUNCATE, "MPI_Unpack: {n} bytes wanted at {at} of a {insize}-byte buffer"));
        }
        // A NULL `outbuf` is MPI_BOTTOM (absolute addresses in the type); the packed side must exist.
        if n > 0 && inbuf.is_null() {
            return Err(err!(MPI_ERR_BUFFER, "MPI_Unpack: NULL buffer with {n} bytes to unpack"));
        }
        // SAFETY: `inbuf` holds `insize` bytes (so `at + n` of them), by the caller's
        // contract.
        let packed = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>().add(at), n) };
        // SAFETY: the output holds `outcount` elements of the type, by the caller's contract.
        unsafe { crate::obj::datatype::unpack(packed, outbuf.cast(), outcount as usize, &ty)? };
        // SAFETY: checked non-null by `position_in`.
        unsafe { *position = (at + n) as c_int };
        Ok(())
    }
}

export! {
    /// `MPI_Pack_size`: an upper bound (here: exactly) of the bytes `MPI_Pack` writes for
    /// `incount` elements.
    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) on On::Comm(comm);
    |m| {
        m.comm(comm)?;
        let ty = m.types().borrow().get(datatype)?.clone();
        if incount < 0 {
            return Err(err!(MPI_ERR_COUNT, "invalid count {incount}"));
        }
        let n = ty.size.checked_mul(incount as usize).and_then(|n| c_int::try_from(n).ok());
        let n = n.ok_or_else(|| err!(MPI_ERR_COUNT, "MPI_Pack_size: {incount} elements exceed an int of bytes (use MPI_Pack_size_c)"))?;
        // SAFETY: output pointer from the caller.
        unsafe { put(size, n, "size") }
    }
}

export! {
    /// `MPI_Pack_size_c`.
    fn MPI_Pack_size_c / PMPI_Pack_size_c(incount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut MPI_Count) on On::Comm(comm);
    |m| {
        m.comm(comm)?;
        let ty = m.types().borrow().get(datatype)?.clone();
        if incount < 0 {
            return Err(err!(MPI_ERR_COUNT, "invalid count {incount}"));
        }
        let n = (ty.size as u64).checked_mul(incount as u64).and_then(|n| MPI_Count::try_from(n).ok());
        let n = n.ok_or_else(|| err!(MPI_ERR_COUNT, "MPI_Pack_size_c: {incount} elements overflow MPI_Count"))?;
        // SAFETY: output pointer from the caller.
        unsafe { put(size, n, "size") }
    }
}
