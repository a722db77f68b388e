//! Staging: how an MPI collective's buffers become the collectives engine's. The engine moves
//! contiguous bytes (or reduces contiguous elements) at per-rank byte displacements; MPI
//! buffers are described by a base address and, per block, a displacement, a count and a
//! datatype. A buffer whose blocks are all of dense types at non-negative offsets is handed
//! to the engine as it is; any other is packed into a scratch buffer before the call (send
//! side) or received into one and unpacked after it (receive side), the blocks then lying
//! one after another in the scratch. The scratch buffers and the unpacking travel in the
//! call's [`After`], so for a non-blocking call they live in its request and unpacking runs
//! when it completes.

use std::sync::Arc;

use crate::error::MpiResult;
use crate::obj::datatype::{pack, unpack, TypeInfo};
use crate::obj::request::After;

/// One block of a buffer: `count` elements of `ty` at byte offset `off` from the base.
#[derive(Clone)]
pub(crate) struct Block {
    pub(crate) off: isize,
    pub(crate) count: usize,
    pub(crate) ty: Arc<TypeInfo>,
}

/// A collective's buffer as MPI describes it.
pub(crate) struct Region {
    pub(crate) base: *mut u8,
    pub(crate) blocks: Vec<Block>,
}

impl Region {
    /// `n` blocks of `count` elements of `ty`, block `i` at element `i * count` (the layout of
    /// gather's receive buffer, scatter's send buffer, alltoall's).
    pub(crate) fn uniform(base: *const u8, ty: &Arc<TypeInfo>, count: usize, n: usize) -> Region {
        let step = count as isize * ty.extent;
        Region {
            base: base.cast_mut(),
            blocks: (0..n).map(|i| Block { off: i as isize * step, count, ty: ty.clone() }).collect(),
        }
    }

    /// One block of `count` elements.
    pub(crate) fn one(base: *const u8, ty: &Arc<TypeInfo>, count: usize) -> Region {
        Region::uniform(base, ty, count, 1)
    }

    /// Blocks of `counts[i]` elements at element displacements `displs[i]` (the v-variants).
    pub(crate) fn displaced(
        base: *const u8,
        ty: &Arc<TypeInfo>,
        counts: &[usize],
        displs: &[isize],
    ) -> Region {
        Region {
            base: base.cast_mut(),
            blocks: counts
                .iter()
                .zip(displs)
                .map(|(&count, &d)| Block { off: d * ty.extent, count, ty: ty.clone() })
                .collect(),
        }
    }

    /// Only block `i` (the part of a receive buffer that is this rank's own, for
    /// `MPI_IN_PLACE`).
    pub(crate) fn only(&self, i: usize) -> Region {
        Region { base: self.base, blocks: vec![self.blocks[i].clone()] }
    }

    /// Bytes of data in the blocks.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.count * b.ty.size).sum()
    }

    /// The engine can use the buffer in place: dense types at non-negative offsets.
    fn direct(&self) -> bool {
        self.blocks.iter().all(|b| b.off >= 0 && (b.ty.dense() || b.count == 0))
    }
}

/// A buffer as the engine gets it: a pointer, per-block byte counts and displacements, and
/// the scratch it lives in when it is not the application's.
pub(crate) struct Staged {
    pub(crate) ptr: *mut u8,
    pub(crate) counts: Vec<usize>,
    pub(crate) displs: Vec<usize>,
    scratch: Option<Vec<u8>>,
    /// Unpack the scratch into this region when the call completes.
    back: Option<Region>,
}

impl Staged {
    /// No buffer.
    pub(crate) fn none() -> Staged {
        Staged {
            ptr: std::ptr::null_mut(),
            counts: Vec::new(),
            displs: Vec::new(),
            scratch: None,
            back: None,
        }
    }

    /// The application's buffer at `ptr`, used in place (allreduce's `MPI_IN_PLACE`).
    pub(crate) fn at(ptr: *mut u8) -> Staged {
        Staged { ptr, ..Staged::none() }
    }

    /// A scratch buffer of `len` bytes whose contents are dropped (a receive the application
    /// does not want: the root's own block of an in-place scatter).
    pub(crate) fn discard(len: usize) -> Staged {
        let mut s = vec![0u8; len];
        Staged { ptr: s.as_mut_ptr(), counts: vec![len], displs: vec![0], scratch: Some(s), back: None }
    }

    /// Per-block counts and displacements in engine elements of `es` bytes.
    pub(crate) fn in_elems(&self, es: usize) -> (Vec<usize>, Vec<usize>) {
        (self.counts.iter().map(|c| c / es).collect(), self.displs.iter().map(|d| d / es).collect())
    }

    /// Do not unpack at completion (exscan's undefined result at rank 0).
    pub(crate) fn forget_result(&mut self) {
        self.back = None;
    }
}

/// Scratch layout of `r`'s blocks one after another: per-block byte counts and offsets.
fn packed_layout(r: &Region) -> (Vec<usize>, Vec<usize>) {
    let counts: Vec<usize> = r.blocks.iter().map(|b| b.count * b.ty.size).collect();
    let mut at = 0;
    let displs = counts
        .iter()
        .map(|c| {
            let d = at;
            at += c;
            d
        })
        .collect();
    (counts, displs)
}

/// The send side of `r`: the application's buffer, or its data packed.
///
/// # Safety
/// `r.base` must be valid for reads of every block's type map.
pub(crate) unsafe fn send(r: &Region) -> Staged {
    if r.direct() {
        return Staged {
            ptr: r.base,
            counts: r.blocks.iter().map(|b| b.count * b.ty.size).collect(),
            displs: r.blocks.iter().map(|b| b.off as usize).collect(),
            scratch: None,
            back: None,
        };
    }
    // SAFETY: forwarded contract.
    unsafe { copy_of(r) }
}

/// The data of `r` packed into a scratch buffer, even when `r` is dense (the source of an
/// in-place call, which the engine must not read from the buffer it writes).
///
/// # Safety
/// As [`send`].
pub(crate) unsafe fn copy_of(r: &Region) -> Staged {
    let (counts, displs) = packed_layout(r);
    let mut s = Vec::with_capacity(r.bytes());
    for b in &r.blocks {
        // SAFETY: the block's type map at `base + off` is readable by the caller's contract.
        unsafe { pack(r.base.wrapping_offset(b.off), b.count, &b.ty, &mut s) };
    }
    Staged { ptr: s.as_mut_ptr(), counts, displs, scratch: Some(s), back: None }
}

/// The receive side of `r`: the application's buffer, or a scratch buffer unpacked into it
/// when the call completes.
pub(crate) fn recv(r: Region) -> Staged {
    if r.direct() {
        return Staged {
            ptr: r.base,
            counts: r.blocks.iter().map(|b| b.count * b.ty.size).collect(),
            displs: r.blocks.iter().map(|b| b.off as usize).collect(),
            scratch: None,
            back: None,
        };
    }
    let (counts, displs) = packed_layout(&r);
    let mut s = vec![0u8; r.bytes()];
    Staged { ptr: s.as_mut_ptr(), counts, displs, scratch: Some(s), back: Some(r) }
}

/// What the call does when it completes: keep the scratch buffers alive until then and unpack
/// the received ones.
///
/// # Safety
/// The regions to unpack into must stay valid for writes until the call completes.
pub(crate) unsafe fn after(stages: [Staged; 2]) -> After {
    if stages.iter().all(|s| s.scratch.is_none()) {
        return After::Nothing;
    }
    After::Run(Box::new(move |_| -> MpiResult {
        for s in &stages {
            let (Some(r), Some(scratch)) = (&s.back, &s.scratch) else { continue };
            for (b, (&c, &d)) in r.blocks.iter().zip(s.counts.iter().zip(&s.displs)) {
                // SAFETY: the region is the application's receive buffer, valid until the
                // call completes (now) by the contract of `after`.
                unsafe { unpack(&scratch[d..d + c], r.base.wrapping_offset(b.off), b.count, &b.ty)? };
            }
        }
        Ok(())
    }))
}
