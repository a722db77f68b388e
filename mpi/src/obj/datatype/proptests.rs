//! Property tests of the datatype engine: for random vector, indexed and subarray shapes, the
//! packed data equals the type map computed here independently (by index arithmetic on int
//! buffers), and unpacking the packed data restores exactly the bytes the type map covers.
//! Plus the bounds of a struct against the C compiler's layout of the same struct.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;

use super::typecons::{self, Old};
use super::{pack, unpack, Layout, TypeInfo, Types};
use crate::abi::*;

fn predefined(h: MPI_Datatype) -> Old {
    Old { h, t: Types::new().get(h).unwrap().clone() }
}

fn old(t: TypeInfo) -> Old {
    Old { h: 0, t: Arc::new(t) }
}

/// An int buffer of `len` ints whose value at index `i` is `i + 1`, and the address of index
/// `origin` in it.
struct Ints {
    v: Vec<i32>,
    origin: usize,
}

impl Ints {
    fn new(len: usize, origin: usize) -> Ints {
        Ints { v: (1..=len as i32).collect(), origin }
    }
    fn at(&self) -> *const u8 {
        self.v[self.origin..].as_ptr().cast()
    }
}

fn ints(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Pack `count` elements of `ty` from a buffer where the type map's int indices relative to
/// the origin are `map` (per element, `ext` ints apart); check the packed data against `map`
/// and the round trip through unpack.
fn check(ty: &TypeInfo, count: usize, map: &[isize], ext: isize) {
    let idx: Vec<isize> = (0..count as isize).flat_map(|k| map.iter().map(move |&i| k * ext + i)).collect();
    let lo = idx.iter().copied().min().unwrap_or(0).min(0);
    let hi = idx.iter().copied().max().unwrap_or(0).max(0);
    let origin = (-lo) as usize;
    let src = Ints::new((hi - lo + 1) as usize, origin);
    let mut packed = Vec::new();
    // SAFETY: the buffer covers every index of the type map (from `lo` to `hi`).
    unsafe { pack(src.at(), count, ty, &mut packed) };
    let want: Vec<i32> = idx.iter().map(|&i| src.v[(origin as isize + i) as usize]).collect();
    assert_eq!(ints(&packed), want, "packed data in type-map order");
    let mut dst = vec![0i32; src.v.len()];
    // SAFETY: as above, for writes.
    unsafe { unpack(&packed, dst[origin..].as_mut_ptr().cast(), count, ty).unwrap() };
    let covered: BTreeSet<isize> = idx.iter().copied().collect();
    for (j, (&d, &s)) in dst.iter().zip(&src.v).enumerate() {
        let rel = j as isize - origin as isize;
        assert_eq!(d, if covered.contains(&rel) { s } else { 0 }, "int {rel} after unpack");
    }
}

proptest! {
    #[test]
    fn vectors_pack_their_type_map(count in 1usize..6, bl in 1usize..4, stride in -7isize..8, elems in 0usize..4) {
        // Overlapping blocks (|stride| < bl) are legal but make unpacking order-dependent.
        prop_assume!(stride.unsigned_abs() >= bl || count == 1);
        let t = typecons::vector(count as i32, bl as i32, stride as i32, &predefined(MPI_INT)).unwrap();
        let map: Vec<isize> = (0..count as isize).flat_map(|i| (0..bl as isize).map(move |j| i * stride + j)).collect();
        let lo = *map.iter().min().unwrap();
        let hi = *map.iter().max().unwrap() + 1;
        prop_assert_eq!(t.size, count * bl * 4);
        prop_assert_eq!((t.lb, t.extent), (lo * 4, (hi - lo) * 4));
        prop_assert_eq!(t.layout == Layout::Contig, count == 1 || stride == bl as isize);
        check(&t, elems, &map, hi - lo);
    }

    #[test]
    fn indexed_types_pack_their_type_map(
        blocks in prop::collection::vec((1usize..4, 0usize..3), 1..6).prop_shuffle(),
        elems in 0usize..3,
    ) {
        // Non-overlapping blocks (length, gap before), laid out in order, then listed in a
        // shuffled type-map order.
        let mut at = 0isize;
        let mut placed = Vec::new();
        for &(len, gap) in &blocks {
            at += gap as isize;
            placed.push((len, at));
            at += len as isize;
        }
        placed.reverse();
        let bls: Vec<i32> = placed.iter().map(|&(l, _)| l as i32).collect();
        let displs: Vec<i32> = placed.iter().map(|&(_, d)| d as i32).collect();
        let t = typecons::indexed(&bls, &displs, &predefined(MPI_INT)).unwrap();
        let map: Vec<isize> = placed.iter().flat_map(|&(l, d)| (0..l as isize).map(move |j| d + j)).collect();
        let lo = *map.iter().min().unwrap();
        let hi = *map.iter().max().unwrap() + 1;
        prop_assert_eq!(t.elem, Some(weft::ops::DType::I32));
        check(&t, elems, &map, hi - lo);
    }

    #[test]
    fn subarrays_pack_their_type_map(
        dims in prop::collection::vec((1usize..5, 0usize..5, 0usize..5), 1..4),
        fortran in any::<bool>(),
    ) {
        let sizes: Vec<i32> = dims.iter().map(|d| d.0 as i32).collect();
        let subs: Vec<i32> = dims.iter().map(|d| (1 + d.1 % d.0) as i32).collect();
        let starts: Vec<i32> = dims.iter().zip(&subs).map(|(d, &s)| (d.2 % (d.0 - s as usize + 1)) as i32).collect();
        let order = if fortran { MPI_ORDER_FORTRAN } else { MPI_ORDER_C };
        let t = typecons::subarray(&sizes, &subs, &starts, order, &predefined(MPI_INT)).unwrap();
        // Enumerate the sub-block in memory order with the slowest dimension outermost.
        let nd = sizes.len();
        let dim_order: Vec<usize> = if fortran { (0..nd).rev().collect() } else { (0..nd).collect() };
        let mut map = Vec::new();
        let mut idx = vec![0usize; nd];
        loop {
            let mut lin = 0isize;
            for &d in &dim_order {
                lin = lin * sizes[d] as isize + (starts[d] as usize + idx[d]) as isize;
            }
            map.push(lin);
            let mut k = nd;
            loop {
                if k == 0 { break; }
                k -= 1;
                let d = dim_order[k];
                idx[d] += 1;
                if idx[d] < subs[d] as usize { break; }
                idx[d] = 0;
                if k == 0 { k = usize::MAX; break; }
            }
            if k == usize::MAX { break; }
        }
        let total: isize = sizes.iter().map(|&s| s as isize).product();
        prop_assert_eq!((t.lb, t.extent), (0, total * 4));
        check(&t, 2, &map, total);
    }
}

#[test]
fn struct_bounds_follow_the_c_layout() {
    #[repr(C)]
    struct S {
        c: u8,
        d: f64,
        i: [i32; 3],
    }
    let displs = [std::mem::offset_of!(S, c), std::mem::offset_of!(S, d), std::mem::offset_of!(S, i)];
    let displs: Vec<MPI_Aint> = displs.iter().map(|&d| d as MPI_Aint).collect();
    let olds = [predefined(MPI_CHAR), predefined(MPI_DOUBLE), predefined(MPI_INT)];
    let t = typecons::structure(&[1, 1, 3], &displs, &olds).unwrap();
    assert_eq!(t.extent as usize, std::mem::size_of::<S>(), "padded like the C struct");
    assert_eq!((t.size, t.lb, t.true_lb, t.true_extent), (21, 0, 0, 28));
    assert_eq!(t.elem, None, "mixed types take no predefined reduction");
    // A resized member turns the padding off.
    let r = typecons::resized(&predefined(MPI_DOUBLE), 0, 12).unwrap();
    let t = typecons::structure(&[1], &[0], &[old(r)]).unwrap();
    assert_eq!(t.extent, 12);
    // An array of structs packs each element's data in order.
    let arr = [S { c: 1, d: 2.0, i: [3, 4, 5] }, S { c: 6, d: 7.0, i: [8, 9, 10] }];
    let t = typecons::structure(&[1, 1, 3], &displs, &olds).unwrap();
    let mut packed = Vec::new();
    // SAFETY: two elements of the struct type lie in `arr`.
    unsafe { pack(arr.as_ptr().cast(), 2, &t, &mut packed) };
    assert_eq!(packed.len(), 42);
    assert_eq!(packed[0], 1);
    assert_eq!(f64::from_ne_bytes(packed[1..9].try_into().unwrap()), 2.0);
    assert_eq!(ints(&packed[9..21]), [3, 4, 5]);
    assert_eq!(packed[21], 6);
}

#[test]
fn resized_bounds_hindexed_and_contiguous_spans() {
    let int = predefined(MPI_INT);
    let r = typecons::resized(&int, -4, 16).unwrap();
    assert_eq!((r.lb, r.extent, r.true_lb, r.true_extent, r.size), (-4, 16, 0, 4, 4));
    // contiguous(3) of it: lb -4, extent 48; data every 16 bytes.
    let c = typecons::contiguous(3, &old(r)).unwrap();
    assert_eq!((c.lb, c.extent, c.size), (-4, 48, 12));
    assert_eq!(c.layout, Layout::Blocks(vec![(0, 4), (16, 4), (32, 4)]));
    // A vector whose blocks touch is one contiguous run: no copy in transfers.
    let v = typecons::vector(3, 2, 2, &int).unwrap();
    assert!(v.dense());
    let h = typecons::hindexed(&[1, 2], &[8, 0], &int).unwrap();
    assert_eq!(h.layout, Layout::Blocks(vec![(8, 4), (0, 8)]), "type-map order is kept");
    assert_eq!((h.lb, h.extent), (0, 12));
    let b = typecons::hindexed_block(2, &[0, 8], &int).unwrap();
    assert!(b.dense(), "adjacent blocks merge");
    let ib = typecons::indexed_block(1, &[3, 1], &int).unwrap();
    assert_eq!((ib.lb, ib.extent, ib.size), (4, 12, 8));
}

#[test]
fn bad_constructor_arguments_have_their_classes() {
    let int = predefined(MPI_INT);
    let class = |r: crate::error::MpiResult<TypeInfo>| r.err().map(|e| e.class);
    assert_eq!(class(typecons::contiguous(-1, &int)), Some(MPI_ERR_COUNT));
    assert_eq!(class(typecons::vector(-2, 1, 1, &int)), Some(MPI_ERR_COUNT));
    assert_eq!(class(typecons::vector(2, -1, 1, &int)), Some(MPI_ERR_ARG));
    assert_eq!(class(typecons::indexed(&[1, -1], &[0, 4], &int)), Some(MPI_ERR_ARG));
    assert_eq!(class(typecons::subarray(&[4], &[5], &[0], MPI_ORDER_C, &int)), Some(MPI_ERR_ARG));
    assert_eq!(class(typecons::subarray(&[4], &[2], &[3], MPI_ORDER_C, &int)), Some(MPI_ERR_ARG));
    assert_eq!(class(typecons::subarray(&[4], &[2], &[0], 99, &int)), Some(MPI_ERR_ARG));
    assert_eq!(class(typecons::hvector(2, 1, isize::MAX, &int)), Some(MPI_ERR_ARG), "overflow");
    let big = typecons::contiguous(i32::MAX, &predefined(MPI_DOUBLE)).unwrap();
    assert_eq!(big.size, i32::MAX as usize * 8);
    assert_eq!(class(typecons::contiguous(i32::MAX, &old(big))), Some(MPI_ERR_ARG), "2^65 bytes overflow");
    let mut t = Types::new();
    assert_eq!(t.free(MPI_INT).err().map(|e| e.class), Some(MPI_ERR_TYPE));
    let h = t.insert(typecons::contiguous(2, &int).unwrap());
    assert_eq!(t.span(h, 1).err().map(|e| e.class), Some(MPI_ERR_TYPE), "uncommitted");
    t.free(h).unwrap();
    assert_eq!(t.get(h).err().map(|e| e.class), Some(MPI_ERR_TYPE), "freed");
}
