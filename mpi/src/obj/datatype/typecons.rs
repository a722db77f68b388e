//! Type constructors as pure functions: `contiguous`, `vector`, `hvector`, `indexed`,
//! `hindexed`, the block forms, `struct`, `resized`, `dup`, `subarray`, each from its
//! arguments and the old types' descriptions to a new [`TypeInfo`] (through [`compose`]), and
//! the table operations they end in (a new type's handle, commit, free).
//!
//! The exported functions (`bind/datatype/typecons.rs`) check the C
//! arguments, looks the old types up and stores the result. Negative counts are
//! `MPI_ERR_COUNT`, negative block lengths and bad subarray shapes `MPI_ERR_ARG`, NULL arrays
//! `MPI_ERR_ARG`, bad type handles `MPI_ERR_TYPE`.

use std::ffi::c_int;
use std::sync::Arc;

use super::{compose, Envelope, Part, TypeInfo};
use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::put;
use crate::state::Mpi;

/// An old type as a constructor gets it: its handle and description.
#[derive(Clone)]
pub(crate) struct Old {
    pub(crate) h: MPI_Datatype,
    pub(crate) t: Arc<TypeInfo>,
}

/// A count argument (`MPI_ERR_COUNT` if negative).
pub(crate) fn count_arg(n: c_int, what: &str) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| err!(MPI_ERR_COUNT, "invalid {what} {n}: counts are never negative"))
}

/// A block length (`MPI_ERR_ARG` if negative).
fn blocklen(n: c_int) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| err!(MPI_ERR_ARG, "invalid block length {n}: never negative"))
}

/// `a * b` in bytes, or the overflow error.
fn mul(a: isize, b: isize) -> MpiResult<isize> {
    a.checked_mul(b).ok_or_else(|| err!(MPI_ERR_ARG, "displacement {a} * {b} overflows the address space"))
}

fn env(combiner: c_int, ints: Vec<c_int>, addrs: Vec<MPI_Aint>, olds: &[&Old]) -> Envelope {
    Envelope {
        combiner,
        ints,
        addrs,
        types: olds.iter().map(|o| o.h).collect(),
        children: olds.iter().map(|o| o.t.clone()).collect(),
    }
}

/// `count` copies of `old`, one after the other.
pub(crate) fn contiguous(count: c_int, old: &Old) -> MpiResult<TypeInfo> {
    let n = count_arg(count, "count")?;
    compose(
        [Part { disp: 0, count: n, ty: &old.t }],
        false,
        env(MPI_COMBINER_CONTIGUOUS, vec![count], vec![], &[old]),
    )
}

/// `count` blocks of `bl` elements, `stride` bytes apart (`env` says how it was called).
fn hvector_of(count: c_int, bl: c_int, stride: isize, old: &Old, e: Envelope) -> MpiResult<TypeInfo> {
    let (n, bl) = (count_arg(count, "count")?, blocklen(bl)?);
    mul(stride, n.saturating_sub(1) as isize)?;
    compose((0..n).map(|i| Part { disp: i as isize * stride, count: bl, ty: &old.t }), false, e)
}

/// `MPI_Type_vector`: the stride counts elements of `old`.
pub(crate) fn vector(count: c_int, bl: c_int, stride: c_int, old: &Old) -> MpiResult<TypeInfo> {
    let e = env(MPI_COMBINER_VECTOR, vec![count, bl, stride], vec![], &[old]);
    hvector_of(count, bl, mul(stride as isize, old.t.extent)?, old, e)
}

/// `MPI_Type_create_hvector`: the stride is in bytes.
pub(crate) fn hvector(count: c_int, bl: c_int, stride: MPI_Aint, old: &Old) -> MpiResult<TypeInfo> {
    let e = env(MPI_COMBINER_HVECTOR, vec![count, bl], vec![stride], &[old]);
    hvector_of(count, bl, stride, old, e)
}

/// Blocks of `bls[i]` elements at byte displacements `displs[i]`.
fn blocks_at(bls: &[usize], displs: &[isize], old: &Old, e: Envelope) -> MpiResult<TypeInfo> {
    compose(bls.iter().zip(displs).map(|(&count, &disp)| Part { disp, count, ty: &old.t }), false, e)
}

/// `MPI_Type_indexed`: displacements in elements of `old`.
pub(crate) fn indexed(bls: &[c_int], displs: &[c_int], old: &Old) -> MpiResult<TypeInfo> {
    let b = bls.iter().map(|&x| blocklen(x)).collect::<MpiResult<Vec<_>>>()?;
    let d = displs.iter().map(|&x| mul(x as isize, old.t.extent)).collect::<MpiResult<Vec<_>>>()?;
    let ints = [&[bls.len() as c_int][..], bls, displs].concat();
    blocks_at(&b, &d, old, env(MPI_COMBINER_INDEXED, ints, vec![], &[old]))
}

/// `MPI_Type_create_hindexed`: displacements in bytes.
pub(crate) fn hindexed(bls: &[c_int], displs: &[MPI_Aint], old: &Old) -> MpiResult<TypeInfo> {
    let b = bls.iter().map(|&x| blocklen(x)).collect::<MpiResult<Vec<_>>>()?;
    let ints = [&[bls.len() as c_int][..], bls].concat();
    blocks_at(&b, displs, old, env(MPI_COMBINER_HINDEXED, ints, displs.to_vec(), &[old]))
}

/// `MPI_Type_create_indexed_block`: one block length, displacements in elements.
pub(crate) fn indexed_block(bl: c_int, displs: &[c_int], old: &Old) -> MpiResult<TypeInfo> {
    let b = vec![blocklen(bl)?; displs.len()];
    let d = displs.iter().map(|&x| mul(x as isize, old.t.extent)).collect::<MpiResult<Vec<_>>>()?;
    let ints = [&[displs.len() as c_int, bl][..], displs].concat();
    blocks_at(&b, &d, old, env(MPI_COMBINER_INDEXED_BLOCK, ints, vec![], &[old]))
}

/// `MPI_Type_create_hindexed_block`: one block length, displacements in bytes.
pub(crate) fn hindexed_block(bl: c_int, displs: &[MPI_Aint], old: &Old) -> MpiResult<TypeInfo> {
    let b = vec![blocklen(bl)?; displs.len()];
    let e = env(MPI_COMBINER_HINDEXED_BLOCK, vec![displs.len() as c_int, bl], displs.to_vec(), &[old]);
    blocks_at(&b, displs, old, e)
}

/// `MPI_Type_create_struct`: blocks of different types at byte displacements; the extent is
/// padded to the alignment of the most aligned member unless a member has explicit bounds.
pub(crate) fn structure(bls: &[c_int], displs: &[MPI_Aint], olds: &[Old]) -> MpiResult<TypeInfo> {
    let b = bls.iter().map(|&x| blocklen(x)).collect::<MpiResult<Vec<_>>>()?;
    let ints = [&[bls.len() as c_int][..], bls].concat();
    let refs: Vec<&Old> = olds.iter().collect();
    let e = env(MPI_COMBINER_STRUCT, ints, displs.to_vec(), &refs);
    let parts = b.iter().zip(displs).zip(olds).map(|((&count, &disp), o)| Part { disp, count, ty: &o.t });
    compose(parts, true, e)
}

/// `MPI_Type_create_resized`: the same data with bounds `lb` and `extent`.
pub(crate) fn resized(old: &Old, lb: MPI_Aint, extent: MPI_Aint) -> MpiResult<TypeInfo> {
    lb.checked_add(extent).ok_or_else(|| err!(MPI_ERR_ARG, "lb {lb} + extent {extent} overflows"))?;
    let mut t = (*old.t).clone();
    t.lb = lb;
    t.extent = extent;
    t.explicit_bounds = true;
    t.committed = false;
    t.name.clear();
    t.envelope = env(MPI_COMBINER_RESIZED, vec![], vec![lb, extent], &[old]);
    Ok(t)
}

/// `MPI_Type_dup`: the same type, with the committed state of the original and no name.
pub(crate) fn dup(old: &Old) -> TypeInfo {
    let mut t = (*old.t).clone();
    t.name.clear();
    t.envelope = env(MPI_COMBINER_DUP, vec![], vec![], &[old]);
    t
}

/// `MPI_Type_create_subarray`: the `subsizes` block starting at `starts` of an array of
/// `sizes` elements of `old`, in C (row-major) or Fortran (column-major) order; bounds 0 and
/// the whole array's extent.
pub(crate) fn subarray(
    sizes: &[c_int],
    subsizes: &[c_int],
    starts: &[c_int],
    order: c_int,
    old: &Old,
) -> MpiResult<TypeInfo> {
    let nd = sizes.len();
    if nd == 0 {
        return Err(err!(MPI_ERR_ARG, "MPI_Type_create_subarray: ndims must be positive"));
    }
    for d in 0..nd {
        let (s, ss, st) = (sizes[d], subsizes[d], starts[d]);
        if s <= 0 || ss <= 0 || ss > s || st < 0 || st > s - ss {
            return Err(err!(
                MPI_ERR_ARG,
                "MPI_Type_create_subarray: dimension {d}: size {s}, subsize {ss}, start {st} (need 0 < subsize <= size, 0 <= start <= size - subsize)"
            ));
        }
    }
    // Dimensions from slowest to fastest varying in memory.
    let mem: Vec<usize> = match order {
        MPI_ORDER_C => (0..nd).collect(),
        MPI_ORDER_FORTRAN => (0..nd).rev().collect(),
        o => return Err(err!(MPI_ERR_ARG, "MPI_Type_create_subarray: invalid order {o}")),
    };
    let ext = old.t.extent;
    let mut stride = vec![0isize; nd];
    let mut s = 1isize;
    for &d in mem.iter().rev() {
        stride[d] = s;
        s = mul(s, sizes[d] as isize)?;
    }
    let total = mul(s, ext)?;
    let fast = mem[nd - 1];
    let outer = &mem[..nd - 1];
    let mut idx = vec![0usize; nd];
    let mut parts = Vec::new();
    loop {
        let mut off = 0isize;
        for d in 0..nd {
            off += (starts[d] as isize + idx[d] as isize) * stride[d];
        }
        parts.push(Part { disp: mul(off, ext)?, count: subsizes[fast] as usize, ty: &old.t });
        if parts.len() > super::MAX_BLOCKS {
            return Err(err!(
                MPI_ERR_NO_MEM,
                "MPI_Type_create_subarray: more than {} blocks",
                super::MAX_BLOCKS
            ));
        }
        // Odometer over the outer dimensions, the fastest of them first.
        let mut k = outer.len();
        loop {
            if k == 0 {
                let ints = [&[nd as c_int][..], sizes, subsizes, starts, &[order]].concat();
                let mut t = compose(parts, false, env(MPI_COMBINER_SUBARRAY, ints, vec![], &[old]))?;
                t.lb = 0;
                t.extent = total;
                t.explicit_bounds = true;
                return Ok(t);
            }
            k -= 1;
            let d = outer[k];
            idx[d] += 1;
            if idx[d] < subsizes[d] as usize {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// View `n` entries of a C array argument (`MPI_ERR_ARG` if NULL while `n > 0`).
///
/// # Safety
/// A non-null `p` must be valid for `n` reads of `T`.
pub(crate) unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `{what}` is NULL"));
    }
    // SAFETY: non-null and valid for `n` entries by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

impl Mpi {
    /// The old type `h` of a constructor.
    pub(crate) fn old_type(&self, h: MPI_Datatype) -> MpiResult<Old> {
        Ok(Old { h, t: self.types().borrow().get(h)?.clone() })
    }

    /// Store a new type and write its handle to `out`.
    ///
    /// # Safety
    /// A non-null `out` must be valid for a write.
    pub(crate) unsafe fn new_type(&self, t: MpiResult<TypeInfo>, out: *mut MPI_Datatype) -> MpiResult {
        if out.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newtype` is NULL"));
        }
        let h = self.types().borrow_mut().insert(t?);
        // SAFETY: checked non-null; valid by the caller's contract.
        unsafe { put(out, h, "newtype") }
    }
}
