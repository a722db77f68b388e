//! Packing: copying the data of `count` elements of a type out of (and back into) its
//! scattered layout, in type-map order. The transfer paths use [`pack`] and [`unpack`] for
//! strided types; `MPI_Pack`, `MPI_Unpack` and `MPI_Pack_size` expose the same format (the
//! raw data bytes: weft runs on one architecture, so packing needs no conversion).

use super::{blocks, TypeInfo};
use crate::error::MpiResult;

/// Copy the data of `count` elements of `ty` at `src` to `dst`, in type-map order; returns
/// the bytes written (`count * ty.size`). Addresses are formed with `wrapping_offset`: `src`
/// may be `MPI_BOTTOM` (null) with a type of absolute addresses, where in-bounds pointer
/// arithmetic would be undefined.
///
/// # Safety
/// `src` must be valid for reads of every byte the type map of `count` elements touches, and
/// `dst` for `count * ty.size` bytes of writes, not overlapping them.
pub(crate) unsafe fn pack_to(src: *const u8, count: usize, ty: &TypeInfo, dst: *mut u8) -> usize {
    if ty.dense() {
        // SAFETY: one run of `count * size` bytes, by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, count * ty.size) };
        return count * ty.size;
    }
    let b = blocks(ty);
    let mut at = 0;
    for i in 0..count {
        let base = i as isize * ty.extent;
        for &(off, len) in b.iter() {
            // SAFETY: inside the type map (source) and inside `count * size` bytes
            // (destination), by the caller's contract.
            unsafe { std::ptr::copy_nonoverlapping(src.wrapping_offset(base + off), dst.add(at), len) };
            at += len;
        }
    }
    at
}

/// Append the data of `count` elements of `ty` at `src` to `out`, in type-map order.
///
/// # Safety
/// `src` must be valid for reads of every byte the type map of `count` elements touches.
pub(crate) unsafe fn pack(src: *const u8, count: usize, ty: &TypeInfo, out: &mut Vec<u8>) {
    let n = count * ty.size;
    out.reserve(n);
    let at = out.len();
    // SAFETY: `out` has room for `n` more bytes; the source by the caller's contract.
    unsafe {
        pack_to(src, count, ty, out.as_mut_ptr().add(at));
        out.set_len(at + n);
    }
}

/// Scatter `packed` (the data of up to `count` elements of `ty`, in type-map order) into
/// `dst`; stops where `packed` ends (a shorter message).
///
/// # Safety
/// `dst` must be valid for writes of every byte the type map of `count` elements touches, and
/// not overlap `packed`.
pub(crate) unsafe fn unpack(packed: &[u8], dst: *mut u8, count: usize, ty: &TypeInfo) -> MpiResult {
    if ty.dense() {
        let n = packed.len().min(count * ty.size);
        // SAFETY: one run of `count * size >= n` bytes, by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), dst, n) };
        return Ok(());
    }
    let b = blocks(ty);
    let mut at = 0;
    for i in 0..count {
        let base = i as isize * ty.extent;
        for &(off, len) in b.iter() {
            if at >= packed.len() {
                return Ok(());
            }
            let n = len.min(packed.len() - at);
            // SAFETY: inside the type map, valid by the caller's contract; `packed` is a
            // separate allocation.
            unsafe {
                std::ptr::copy_nonoverlapping(packed.as_ptr().add(at), dst.wrapping_offset(base + off), n)
            };
            at += n;
        }
    }
    Ok(())
}
