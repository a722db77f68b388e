//! Datatypes through the MPI library's exported functions: constructors and their bounds,
//! names, envelopes and contents, `MPI_Pack`/`MPI_Unpack`, addresses, size matching, derived
//! types in point-to-point (a struct at absolute addresses from `MPI_BOTTOM`, a strided
//! vector) around a ring, and the error classes of bad arguments. Every expected value is
//! computed here (from `size_of`/`offset_of!` of the equivalent Rust struct, or by index
//! arithmetic). Prints `dtype_check: rank R passed`; run under `weft-run -n N` (N >= 1).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::{null, null_mut};

use mpi_abi::abi::*;
use mpi_abi::*;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Particle {
    kind: u8,
    pos: [f64; 2],
    id: i32,
}

/// The name of `t`.
///
/// # Safety
/// MPI is initialised.
unsafe fn name_of(t: MPI_Datatype) -> String {
    let mut buf = [0 as c_char; MPI_MAX_OBJECT_NAME as usize];
    let mut len = 0;
    assert_eq!(MPI_Type_get_name(t, buf.as_mut_ptr(), &mut len), MPI_SUCCESS);
    let s = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
    assert_eq!(s.len(), len as usize);
    s
}

/// `(lb, extent, true_lb, true_extent, size)` of `t`, each query form agreeing.
///
/// # Safety
/// MPI is initialised.
unsafe fn bounds(t: MPI_Datatype) -> (isize, isize, isize, isize, i32) {
    let (mut lb, mut ext, mut tlb, mut text, mut size) = (0, 0, 0, 0, 0);
    assert_eq!(MPI_Type_get_extent(t, &mut lb, &mut ext), MPI_SUCCESS);
    assert_eq!(MPI_Type_get_true_extent(t, &mut tlb, &mut text), MPI_SUCCESS);
    assert_eq!(MPI_Type_size(t, &mut size), MPI_SUCCESS);
    let (mut xlb, mut xext, mut xs, mut cs) =
        (0 as MPI_Count, 0 as MPI_Count, 0 as MPI_Count, 0 as MPI_Count);
    MPI_Type_get_extent_x(t, &mut xlb, &mut xext);
    MPI_Type_size_x(t, &mut xs);
    MPI_Type_size_c(t, &mut cs);
    assert_eq!(
        (xlb, xext, xs, cs),
        (lb as MPI_Count, ext as MPI_Count, size as MPI_Count, size as MPI_Count)
    );
    let (mut xtlb, mut xtext) = (0 as MPI_Count, 0 as MPI_Count);
    MPI_Type_get_true_extent_x(t, &mut xtlb, &mut xtext);
    assert_eq!((xtlb, xtext), (tlb as MPI_Count, text as MPI_Count));
    (lb, ext, tlb, text, size)
}

/// The struct type of `Particle` (relative displacements).
///
/// # Safety
/// MPI is initialised.
unsafe fn particle_type() -> MPI_Datatype {
    let displs = [
        std::mem::offset_of!(Particle, kind) as MPI_Aint,
        std::mem::offset_of!(Particle, pos) as MPI_Aint,
        std::mem::offset_of!(Particle, id) as MPI_Aint,
    ];
    let mut t = MPI_DATATYPE_NULL;
    let rc = MPI_Type_create_struct(
        3,
        [1, 2, 1].as_ptr(),
        displs.as_ptr(),
        [MPI_UINT8_T, MPI_DOUBLE, MPI_INT].as_ptr(),
        &mut t,
    );
    assert_eq!(rc, MPI_SUCCESS);
    MPI_Type_commit(&mut t);
    t
}

/// # Safety
/// MPI is initialised.
unsafe fn queries() {
    assert_eq!(name_of(MPI_INT), "MPI_INT");
    assert_eq!(name_of(MPI_DOUBLE_INT), "MPI_DOUBLE_INT");
    let pt = particle_type();
    let sz: i32 = 1 + 16 + 4;
    let psize = std::mem::size_of::<Particle>() as isize;
    let last = std::mem::offset_of!(Particle, id) as isize + 4;
    assert_eq!(bounds(pt), (0, psize, 0, last, sz), "struct bounds follow the C layout");
    assert_eq!(name_of(pt), "");
    let name = c"particle";
    assert_eq!(MPI_Type_set_name(pt, name.as_ptr()), MPI_SUCCESS);
    assert_eq!(name_of(pt), "particle");
    // Dup: same bounds, committed (usable at once), no name.
    let mut d = MPI_DATATYPE_NULL;
    assert_eq!(MPI_Type_dup(pt, &mut d), MPI_SUCCESS);
    assert_eq!(bounds(d), bounds(pt));
    let mut packed_size = 0;
    assert_eq!(MPI_Pack_size(2, d, MPI_COMM_WORLD, &mut packed_size), MPI_SUCCESS);
    assert_eq!(packed_size, 2 * sz);
    // Envelope and contents of the vector(3, 2, 4) of the struct.
    let mut v = MPI_DATATYPE_NULL;
    assert_eq!(MPI_Type_vector(3, 2, 4, d, &mut v), MPI_SUCCESS);
    assert_eq!(bounds(v), (0, (2 * 4 + 2) * psize, 0, (2 * 4 + 1) * psize + last, 6 * sz));
    let (mut ni, mut na, mut nd, mut comb) = (0, 0, 0, 0);
    assert_eq!(MPI_Type_get_envelope(v, &mut ni, &mut na, &mut nd, &mut comb), MPI_SUCCESS);
    assert_eq!((ni, na, nd, comb), (3, 0, 1, MPI_COMBINER_VECTOR));
    let mut is = [0; 3];
    let mut ts = [MPI_DATATYPE_NULL; 1];
    assert_eq!(MPI_Type_get_contents(v, 3, 0, 1, is.as_mut_ptr(), null_mut(), ts.as_mut_ptr()), MPI_SUCCESS);
    assert_eq!(is, [3, 2, 4]);
    // The derived member comes back as a new handle, valid after the original is freed.
    MPI_Type_free(&mut d);
    assert_eq!(bounds(ts[0]), bounds(pt));
    MPI_Type_get_envelope(ts[0], &mut ni, &mut na, &mut nd, &mut comb);
    assert_eq!(comb, MPI_COMBINER_DUP);
    MPI_Type_free(&mut ts[0]);
    MPI_Type_get_envelope(MPI_INT, &mut ni, &mut na, &mut nd, &mut comb);
    assert_eq!((ni, na, nd, comb), (0, 0, 0, MPI_COMBINER_NAMED));
    // Struct envelope: count + blocklengths, displacements, types.
    MPI_Type_get_envelope(pt, &mut ni, &mut na, &mut nd, &mut comb);
    assert_eq!((ni, na, nd, comb), (4, 3, 3, MPI_COMBINER_STRUCT));
    let mut is = [0; 4];
    let mut addrs = [0 as MPI_Aint; 3];
    let mut ts = [MPI_DATATYPE_NULL; 3];
    MPI_Type_get_contents(pt, 4, 3, 3, is.as_mut_ptr(), addrs.as_mut_ptr(), ts.as_mut_ptr());
    assert_eq!(is, [3, 1, 2, 1]);
    assert_eq!(addrs[1], std::mem::offset_of!(Particle, pos) as MPI_Aint);
    assert_eq!(ts, [MPI_UINT8_T, MPI_DOUBLE, MPI_INT], "predefined members come back as themselves");
    // Resized and subarray bounds.
    let mut r = MPI_DATATYPE_NULL;
    MPI_Type_create_resized(MPI_INT, -4, 12, &mut r);
    assert_eq!(bounds(r), (-4, 12, 0, 4, 4));
    let mut s = MPI_DATATYPE_NULL;
    MPI_Type_create_subarray(
        2,
        [4, 5].as_ptr(),
        [2, 3].as_ptr(),
        [1, 2].as_ptr(),
        MPI_ORDER_C,
        MPI_DOUBLE,
        &mut s,
    );
    // Rows 1..=2, columns 2..=4 of a 4x5 array: elements 7 to 14.
    assert_eq!(bounds(s), (0, 20 * 8, 7 * 8, (14 - 7 + 1) * 8, 6 * 8));
    for mut t in [v, r, s, pt] {
        assert_eq!(MPI_Type_free(&mut t), MPI_SUCCESS);
        assert_eq!(t, MPI_DATATYPE_NULL);
    }
    // Size matching and address arithmetic.
    let mut m = MPI_DATATYPE_NULL;
    assert_eq!(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &mut m), MPI_SUCCESS);
    let mut size = 0;
    MPI_Type_size(m, &mut size);
    assert_eq!(size, 8);
    let xs = [0u64; 4];
    let (mut a0, mut a3) = (0, 0);
    MPI_Get_address(xs.as_ptr().cast(), &mut a0);
    MPI_Get_address(xs[3..].as_ptr().cast(), &mut a3);
    assert_eq!(MPI_Aint_diff(a3, a0), 24);
    assert_eq!(MPI_Aint_add(a0, 24), a3);
}

/// # Safety
/// MPI is initialised.
unsafe fn pack_unpack() {
    // Every other int of 6, then a double, into one buffer; back into fresh buffers.
    let mut every2 = MPI_DATATYPE_NULL;
    MPI_Type_vector(3, 1, 2, MPI_INT, &mut every2);
    MPI_Type_commit(&mut every2);
    let ints = [1, -1, 2, -1, 3, -1];
    let x = 2.5f64;
    let mut buf = [0u8; 20];
    let mut pos = 0;
    assert_eq!(
        MPI_Pack(ints.as_ptr().cast(), 1, every2, buf.as_mut_ptr().cast(), 20, &mut pos, MPI_COMM_WORLD),
        MPI_SUCCESS
    );
    assert_eq!(pos, 12);
    assert_eq!(
        MPI_Pack(
            (&x as *const f64).cast(),
            1,
            MPI_DOUBLE,
            buf.as_mut_ptr().cast(),
            20,
            &mut pos,
            MPI_COMM_WORLD
        ),
        MPI_SUCCESS
    );
    assert_eq!(pos, 20);
    let want: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).chain(x.to_ne_bytes()).collect();
    assert_eq!(&buf[..], &want[..]);
    let mut back = [0i32; 6];
    let mut y = 0f64;
    pos = 0;
    MPI_Unpack(buf.as_ptr().cast(), 20, &mut pos, back.as_mut_ptr().cast(), 1, every2, MPI_COMM_WORLD);
    MPI_Unpack(buf.as_ptr().cast(), 20, &mut pos, (&mut y as *mut f64).cast(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    assert_eq!((back, y, pos), ([1, 0, 2, 0, 3, 0], 2.5, 20));
    MPI_Type_free(&mut every2);
}

/// Derived types around a ring: a struct at absolute addresses sent from `MPI_BOTTOM`, and a
/// strided vector received into a contiguous buffer.
///
/// # Safety
/// MPI is initialised.
unsafe fn ring(rank: i32, size: i32) {
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut mine = Particle { kind: rank as u8, pos: [rank as f64, 0.5], id: 1000 + rank };
    let (mut a_kind, mut a_pos, mut a_id) = (0, 0, 0);
    MPI_Get_address((&mut mine.kind as *mut u8).cast_const().cast(), &mut a_kind);
    MPI_Get_address(mine.pos.as_ptr().cast(), &mut a_pos);
    MPI_Get_address((&mine.id as *const i32).cast(), &mut a_id);
    let mut abs = MPI_DATATYPE_NULL;
    let rc = MPI_Type_create_struct(
        3,
        [1, 2, 1].as_ptr(),
        [a_kind, a_pos, a_id].as_ptr(),
        [MPI_UINT8_T, MPI_DOUBLE, MPI_INT].as_ptr(),
        &mut abs,
    );
    assert_eq!(rc, MPI_SUCCESS);
    MPI_Type_commit(&mut abs);
    let pt = particle_type();
    let mut got = Particle { kind: 255, pos: [0.0; 2], id: 0 };
    let rc = MPI_Sendrecv(
        (&mine as *const Particle).cast(),
        1,
        pt,
        next,
        7,
        (&mut got as *mut Particle).cast(),
        1,
        pt,
        prev,
        7,
        MPI_COMM_WORLD,
        null_mut(),
    );
    assert_eq!(rc, MPI_SUCCESS);
    assert_eq!(got, Particle { kind: prev as u8, pos: [prev as f64, 0.5], id: 1000 + prev });
    // The absolute-address type from MPI_BOTTOM: rank 0's particle reaches every `mine`.
    assert_eq!(MPI_Bcast(MPI_BOTTOM as *mut c_void, 1, abs, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    assert_eq!(mine, Particle { kind: 0, pos: [0.0, 0.5], id: 1000 });
    let mut buf = [0u8; 21];
    let mut pos = 0;
    assert_eq!(
        MPI_Pack(MPI_BOTTOM as *const c_void, 1, abs, buf.as_mut_ptr().cast(), 21, &mut pos, MPI_COMM_WORLD),
        MPI_SUCCESS
    );
    assert_eq!((pos, buf[0], &buf[17..]), (21, 0, &1000i32.to_ne_bytes()[..]));
    let mut v = MPI_DATATYPE_NULL;
    MPI_Type_vector(4, 2, 3, MPI_INT, &mut v);
    MPI_Type_commit(&mut v);
    let src: Vec<i32> = (0..12).map(|i| 100 * rank + i).collect();
    let mut dst = [0i32; 8];
    let rc = MPI_Sendrecv(
        src.as_ptr().cast(),
        1,
        v,
        next,
        8,
        dst.as_mut_ptr().cast(),
        8,
        MPI_INT,
        prev,
        8,
        MPI_COMM_WORLD,
        null_mut(),
    );
    assert_eq!(rc, MPI_SUCCESS);
    let want: Vec<i32> = (0..4).flat_map(|b| (0..2).map(move |j| 100 * prev + 3 * b + j)).collect();
    assert_eq!(&dst[..], &want[..]);
    for mut t in [abs, pt, v] {
        MPI_Type_free(&mut t);
    }
}

/// # Safety
/// MPI is initialised; errors return.
unsafe fn errors() {
    let class = |rc: c_int| {
        let mut k = 0;
        MPI_Error_class(rc, &mut k);
        k
    };
    let mut t = MPI_INT;
    assert_eq!(class(MPI_Type_free(&mut t)), MPI_ERR_TYPE, "freeing a predefined type");
    let mut n = MPI_DATATYPE_NULL;
    assert_eq!(class(MPI_Type_contiguous(-1, MPI_INT, &mut n)), MPI_ERR_COUNT);
    assert_eq!(class(MPI_Type_vector(2, -1, 1, MPI_INT, &mut n)), MPI_ERR_ARG);
    assert_eq!(class(MPI_Type_indexed(2, null(), null(), MPI_INT, &mut n)), MPI_ERR_ARG);
    assert_eq!(class(MPI_Type_contiguous(1, MPI_DATATYPE_NULL, &mut n)), MPI_ERR_TYPE);
    assert_eq!(class(MPI_Type_commit(null_mut())), MPI_ERR_ARG);
    let mut size = 0;
    assert_eq!(class(MPI_Type_size(MPI_DATATYPE_NULL, &mut size)), MPI_ERR_TYPE);
    assert_eq!(
        class(MPI_Type_get_contents(MPI_INT, 0, 0, 0, null_mut(), null_mut(), null_mut())),
        MPI_ERR_ARG
    );
    assert_eq!(class(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &mut n)), MPI_ERR_ARG);
    // An uncommitted type cannot communicate; a freed handle is no type.
    MPI_Type_contiguous(2, MPI_INT, &mut n);
    let x = [0i32; 2];
    assert_eq!(class(MPI_Send(x.as_ptr().cast(), 1, n, 0, 0, MPI_COMM_SELF)), MPI_ERR_TYPE);
    let mut pos = 0;
    let mut out = [0u8; 4];
    assert_eq!(
        class(MPI_Pack(x.as_ptr().cast(), 2, MPI_INT, out.as_mut_ptr().cast(), 4, &mut pos, MPI_COMM_SELF)),
        MPI_ERR_TRUNCATE
    );
    let h = n;
    MPI_Type_free(&mut n);
    assert_eq!(class(MPI_Type_size(h, &mut size)), MPI_ERR_TYPE, "freed handle");
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct DoubleInt {
    v: f64,
    i: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct ShortInt {
    v: i16,
    i: i32,
}

/// The MINLOC/MAXLOC pair types: MPI sizes (members only) and C-struct extents, the two
/// reductions on pairs whose packed form differs from memory (`MPI_DOUBLE_INT`: 12 of 16 bytes;
/// `MPI_SHORT_INT`: a hole between the members; 64-bit `MPI_LONG_INT` values that an `f64`
/// could not tell apart), and an array of pairs around the ring (count and elements; the
/// receiver's padding bytes are not written).
///
/// # Safety
/// MPI is initialised.
unsafe fn pairs(rank: i32, size: i32) {
    let b = |t| bounds(t);
    assert_eq!(b(MPI_DOUBLE_INT), (0, 16, 0, 12, 12));
    assert_eq!(b(MPI_LONG_INT), (0, 16, 0, 12, 12));
    assert_eq!(b(MPI_SHORT_INT), (0, 8, 0, 8, 6));
    assert_eq!(b(MPI_LONG_DOUBLE_INT), (0, 32, 0, 20, 20));
    assert_eq!(b(MPI_FLOAT_INT), (0, 8, 0, 8, 8));
    assert_eq!(b(MPI_2DOUBLE_PRECISION), (0, 16, 0, 16, 16));
    // MAXLOC / MINLOC over every rank: element k's best value is at rank (k + 1) % size; ties
    // (element 2: every rank the same value) go to the smallest index.
    let n = size as f64;
    let mine: Vec<DoubleInt> = (0..3)
        .map(|k| {
            let v = if k == 2 { 7.0 } else { ((rank + size - (k + 1) % size) % size) as f64 };
            DoubleInt { v: n - v, i: rank * 10 + k }
        })
        .collect();
    let mut out = vec![DoubleInt { v: 0.0, i: -1 }; 3];
    let rc = MPI_Allreduce(
        mine.as_ptr().cast(),
        out.as_mut_ptr().cast(),
        3,
        MPI_DOUBLE_INT,
        MPI_MAXLOC,
        MPI_COMM_WORLD,
    );
    assert_eq!(rc, MPI_SUCCESS);
    for (k, o) in out.iter().enumerate() {
        let k = k as i32;
        let want = if k == 2 {
            DoubleInt { v: n - 7.0, i: k }
        } else {
            DoubleInt { v: n, i: ((k + 1) % size) * 10 + k }
        };
        assert_eq!(*o, want, "MAXLOC on MPI_DOUBLE_INT, element {k}");
    }
    let s = [ShortInt { v: (rank % 2) as i16 - 5, i: rank }];
    let mut o = [ShortInt { v: 0, i: -1 }];
    assert_eq!(
        MPI_Allreduce(s.as_ptr().cast(), o.as_mut_ptr().cast(), 1, MPI_SHORT_INT, MPI_MINLOC, MPI_COMM_WORLD),
        MPI_SUCCESS
    );
    assert_eq!(o[0], ShortInt { v: -5, i: 0 }, "MINLOC on MPI_SHORT_INT");
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct LongInt {
        v: i64,
        i: i32,
    }
    let l = [LongInt { v: i64::MAX - 1 + i64::from(rank == size - 1), i: rank }];
    let mut lo = [LongInt { v: 0, i: -1 }];
    assert_eq!(
        MPI_Allreduce(l.as_ptr().cast(), lo.as_mut_ptr().cast(), 1, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD),
        MPI_SUCCESS
    );
    let want = if size == 1 { LongInt { v: i64::MAX, i: 0 } } else { LongInt { v: i64::MAX, i: size - 1 } };
    assert_eq!(lo[0], want, "MAXLOC on MPI_LONG_INT compares 64-bit values exactly");
    // A sum is not defined on pairs.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    let rc = MPI_Allreduce(
        mine.as_ptr().cast(),
        out.as_mut_ptr().cast(),
        1,
        MPI_DOUBLE_INT,
        MPI_SUM,
        MPI_COMM_WORLD,
    );
    let mut k = 0;
    MPI_Error_class(rc, &mut k);
    assert_eq!(k, MPI_ERR_OP);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    // Three pairs to the next rank; the padding of the receive buffer stays as it was.
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut raw = [0xAAu8; 48];
    let mut st = std::mem::zeroed::<MPI_Status>();
    let rc = MPI_Sendrecv(
        mine.as_ptr().cast(),
        3,
        MPI_DOUBLE_INT,
        next,
        71,
        raw.as_mut_ptr().cast(),
        3,
        MPI_DOUBLE_INT,
        prev,
        71,
        MPI_COMM_WORLD,
        &mut st,
    );
    assert_eq!(rc, MPI_SUCCESS);
    let (mut count, mut elems) = (0, 0);
    MPI_Get_count(&st, MPI_DOUBLE_INT, &mut count);
    MPI_Get_elements(&st, MPI_DOUBLE_INT, &mut elems);
    assert_eq!((count, elems), (3, 6));
    for k in 0..3 {
        let e = &raw[k * 16..k * 16 + 16];
        let v = f64::from_ne_bytes(e[..8].try_into().unwrap());
        let i = i32::from_ne_bytes(e[8..12].try_into().unwrap());
        let want_v = if k == 2 { n - 7.0 } else { n - ((prev + size - (k as i32 + 1) % size) % size) as f64 };
        assert_eq!((v, i), (want_v, prev * 10 + k as i32), "pair {k} from rank {prev}");
        assert_eq!(&e[12..], &[0xAA; 4], "padding of pair {k} written");
    }
}

fn main() {
    // SAFETY: the calls follow the MPI standard's contracts; every pointer is to a live local
    // of the size the call reads or writes.
    unsafe {
        assert_eq!(MPI_Init(null_mut(), null_mut()), MPI_SUCCESS);
        let (mut rank, mut size) = (0, 0);
        MPI_Comm_rank(MPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mut size);
        queries();
        pack_unpack();
        ring(rank, size);
        pairs(rank, size);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); // calls on no object
        errors();
        assert_eq!(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
        println!("dtype_check: rank {rank} passed");
        MPI_Finalize();
    }
}
