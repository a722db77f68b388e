//! Every collective through the MPI library's exported functions, blocking and non-blocking,
//! checked against values computed here from the formula every rank fills its buffers with:
//! rank `r`'s `i`-th send value is `v(r, i) = 100 r + i`. Each collective also runs with
//! `MPI_IN_PLACE` where the standard allows it, with a non-contiguous datatype (every other
//! int, `every2`), and with send and receive types that differ but carry the same bytes. Then
//! the error classes of bad arguments. Prints `coll_check: rank R passed N checks`; any
//! mismatch panics with what differed. Run under `weft-run -n N` (N >= 1).

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::*;

/// The value rank `r` sends at index `i`.
fn v(r: i32, i: i32) -> i32 {
    100 * r + i
}

/// Marks a receive-buffer slot no collective may write.
const HOLE: i32 = -7;

struct Ctx {
    rank: i32,
    size: i32,
    blocking: bool,
    /// `MPI_INT` resized to an extent of two ints: data at every other int.
    every2: MPI_Datatype,
    /// Two contiguous ints (a derived type that is in fact contiguous).
    pair: MPI_Datatype,
    checks: usize,
}

/// Run the blocking collective `$b` or its non-blocking form `$i` followed by `MPI_Wait`, and
/// require success.
macro_rules! run {
    ($c:expr, $b:ident / $i:ident ($($a:expr),* $(,)?)) => {{
        let rc = if $c.blocking {
            $b($($a),*)
        } else {
            let mut req: MPI_Request = MPI_REQUEST_NULL;
            let rc = $i($($a,)* &mut req);
            if rc == MPI_SUCCESS { MPI_Wait(&mut req, null_mut()) } else { rc }
        };
        assert_eq!(rc, MPI_SUCCESS, "{} (blocking: {}) failed", stringify!($b), $c.blocking);
        $c.checks += 1;
    }};
}

fn p(v: &[i32]) -> *const c_void {
    v.as_ptr().cast()
}

fn pm(v: &mut [i32]) -> *mut c_void {
    v.as_mut_ptr().cast()
}

fn inplace() -> *const c_void {
    MPI_IN_PLACE as *const c_void
}

/// Scatter `vals` to every other int of a buffer of `2 * vals.len()` ints (odd slots HOLE).
fn spread(vals: &[i32]) -> Vec<i32> {
    vals.iter().flat_map(|&x| [x, HOLE]).collect()
}

/// Displacements placing blocks of `counts` in reverse rank order with a gap of one between
/// them, and the buffer length they need.
fn reversed_with_gaps(counts: &[i32]) -> (Vec<i32>, i32) {
    let mut displs = vec![0; counts.len()];
    let mut at = 0;
    for r in (0..counts.len()).rev() {
        displs[r] = at;
        at += counts[r] + 1;
    }
    (displs, at)
}

/// # Safety
/// MPI is initialised.
unsafe fn bcast(c: &mut Ctx) {
    let root = c.size - 1;
    let want: Vec<i32> = (0..5).map(|i| v(root, i)).collect();
    let mut buf = if c.rank == root { spread(&want) } else { spread(&[0; 5]) };
    run!(c, MPI_Bcast / MPI_Ibcast(pm(&mut buf), 5, c.every2, root, MPI_COMM_WORLD));
    assert_eq!(buf, spread(&want), "bcast with a strided type");
    let mut buf: Vec<i32> = if c.rank == root { want.clone() } else { vec![0; 5] };
    run!(c, MPI_Bcast / MPI_Ibcast(pm(&mut buf), 5, MPI_INT, root, MPI_COMM_WORLD));
    assert_eq!(buf, want, "bcast");
}

/// # Safety
/// MPI is initialised.
unsafe fn gather(c: &mut Ctx) {
    let (n, me) = (c.size, c.rank);
    let root = n / 2;
    let mine: Vec<i32> = (0..4).map(|i| v(me, i)).collect();
    let all: Vec<i32> = (0..n).flat_map(|r| (0..4).map(move |i| v(r, i))).collect();
    // Ints sent, pairs received.
    let mut got = vec![HOLE; 4 * n as usize];
    run!(c, MPI_Gather / MPI_Igather(p(&mine), 4, MPI_INT, pm(&mut got), 2, c.pair, root, MPI_COMM_WORLD));
    if me == root {
        assert_eq!(got, all, "gather into pairs");
    } else {
        assert!(got.iter().all(|&x| x == HOLE), "gather writes only at the root");
    }
    // Strided receive, in place at the root.
    let mut got = spread(&vec![HOLE; 4 * n as usize]);
    if me == root {
        for i in 0..4 {
            got[2 * (4 * root as usize + i)] = mine[i];
        }
    }
    let send = if me == root { inplace() } else { p(&mine) };
    run!(c, MPI_Gather / MPI_Igather(send, 4, MPI_INT, pm(&mut got), 4, c.every2, root, MPI_COMM_WORLD));
    if me == root {
        assert_eq!(got, spread(&all), "in-place gather into a strided type");
    }
    // Gatherv: rank r sends r + 1 ints, placed in reverse rank order with a gap of one.
    let counts: Vec<i32> = (0..n).map(|r| r + 1).collect();
    let (displs, at) = reversed_with_gaps(&counts);
    let mut want = vec![HOLE; at as usize];
    for r in 0..n {
        for i in 0..=r {
            want[(displs[r as usize] + i) as usize] = v(r, i);
        }
    }
    let mine: Vec<i32> = (0..=me).map(|i| v(me, i)).collect();
    for (strided, in_place) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut got = if strided { spread(&vec![HOLE; at as usize]) } else { vec![HOLE; at as usize] };
        let ty = if strided { c.every2 } else { MPI_INT };
        let send = if in_place && me == root {
            let k = if strided { 2 } else { 1 };
            for i in 0..=me {
                got[k * (displs[me as usize] + i) as usize] = v(me, i);
            }
            inplace()
        } else {
            p(&mine)
        };
        run!(
            c,
            MPI_Gatherv
                / MPI_Igatherv(
                    send,
                    me + 1,
                    MPI_INT,
                    pm(&mut got),
                    counts.as_ptr(),
                    displs.as_ptr(),
                    ty,
                    root,
                    MPI_COMM_WORLD
                )
        );
        if me == root {
            let w = if strided { spread(&want) } else { want.clone() };
            assert_eq!(got, w, "gatherv (strided {strided}, in place {in_place})");
        }
    }
}

/// # Safety
/// MPI is initialised.
unsafe fn scatter(c: &mut Ctx) {
    let (n, me) = (c.size, c.rank);
    let root = n - 1;
    let all: Vec<i32> = (0..n).flat_map(|r| (0..3).map(move |i| v(r, i))).collect();
    let want: Vec<i32> = (0..3).map(|i| v(me, i)).collect();
    // Strided send at the root, ints received.
    let src = spread(&all);
    let mut got = vec![HOLE; 3];
    run!(c, MPI_Scatter / MPI_Iscatter(p(&src), 3, c.every2, pm(&mut got), 3, MPI_INT, root, MPI_COMM_WORLD));
    assert_eq!(got, want, "scatter from a strided type");
    // In place at the root: its block stays, nothing else is written there.
    let mut got = vec![HOLE; 3];
    let recv = if me == root { MPI_IN_PLACE as *mut c_void } else { pm(&mut got) };
    let mut src = all.clone();
    run!(c, MPI_Scatter / MPI_Iscatter(p(&src), 3, MPI_INT, recv, 3, MPI_INT, root, MPI_COMM_WORLD));
    if me != root {
        assert_eq!(got, want, "scatter");
    } else {
        assert_eq!(src, all, "in-place scatter leaves the root's buffer alone");
    }
    // Scatterv: rank r gets r + 1 ints from displacement (n - 1 - r) * n.
    let counts: Vec<i32> = (0..n).map(|r| r + 1).collect();
    let displs: Vec<i32> = (0..n).map(|r| (n - 1 - r) * n).collect();
    src = (0..n * n).map(|i| v(root, i)).collect();
    let want: Vec<i32> = (0..=me).map(|i| v(root, displs[me as usize] + i)).collect();
    for strided in [false, true] {
        let mut got =
            if strided { spread(&vec![HOLE; me as usize + 1]) } else { vec![HOLE; me as usize + 1] };
        let ty = if strided { c.every2 } else { MPI_INT };
        run!(
            c,
            MPI_Scatterv
                / MPI_Iscatterv(
                    p(&src),
                    counts.as_ptr(),
                    displs.as_ptr(),
                    MPI_INT,
                    pm(&mut got),
                    me + 1,
                    ty,
                    root,
                    MPI_COMM_WORLD
                )
        );
        let w = if strided { spread(&want) } else { want.clone() };
        assert_eq!(got, w, "scatterv (strided {strided})");
    }
}

/// # Safety
/// MPI is initialised.
unsafe fn allgather(c: &mut Ctx) {
    let (n, me) = (c.size, c.rank);
    let all: Vec<i32> = (0..n).flat_map(|r| (0..2).map(move |i| v(r, i))).collect();
    let mine: Vec<i32> = (0..2).map(|i| v(me, i)).collect();
    let mut got = vec![HOLE; 2 * n as usize];
    run!(c, MPI_Allgather / MPI_Iallgather(p(&mine), 2, MPI_INT, pm(&mut got), 1, c.pair, MPI_COMM_WORLD));
    assert_eq!(got, all, "allgather ints into pairs");
    let mut got = spread(&vec![HOLE; 2 * n as usize]);
    got[4 * me as usize] = mine[0];
    got[4 * me as usize + 2] = mine[1];
    run!(
        c,
        MPI_Allgather
            / MPI_Iallgather(inplace(), 0, MPI_DATATYPE_NULL, pm(&mut got), 2, c.every2, MPI_COMM_WORLD)
    );
    assert_eq!(got, spread(&all), "in-place allgather into a strided type");
    // Allgatherv: r + 1 ints from rank r at displacement 2 r (r + 1) / 2 + r (gaps of one).
    let counts: Vec<i32> = (0..n).map(|r| r + 1).collect();
    let displs: Vec<i32> = (0..n).map(|r| r * (r + 1) / 2 + r).collect();
    let len = (displs[n as usize - 1] + n) as usize;
    let mut want = vec![HOLE; len];
    for r in 0..n {
        for i in 0..=r {
            want[(displs[r as usize] + i) as usize] = v(r, i);
        }
    }
    let mine: Vec<i32> = (0..=me).map(|i| v(me, i)).collect();
    for in_place in [false, true] {
        let mut got = vec![HOLE; len];
        let send = if in_place {
            for i in 0..=me {
                got[(displs[me as usize] + i) as usize] = v(me, i);
            }
            inplace()
        } else {
            p(&mine)
        };
        run!(
            c,
            MPI_Allgatherv
                / MPI_Iallgatherv(
                    send,
                    me + 1,
                    MPI_INT,
                    pm(&mut got),
                    counts.as_ptr(),
                    displs.as_ptr(),
                    MPI_INT,
                    MPI_COMM_WORLD
                )
        );
        assert_eq!(got, want, "allgatherv (in place {in_place})");
    }
    // Negative displacements: the receive buffer argument points past the end of the array.
    let mut got = vec![HOLE; len];
    let neg: Vec<i32> = displs.iter().map(|d| d - len as i32).collect();
    let end = got.as_mut_ptr().add(len).cast::<c_void>();
    run!(
        c,
        MPI_Allgatherv
            / MPI_Iallgatherv(
                p(&mine),
                me + 1,
                MPI_INT,
                end,
                counts.as_ptr(),
                neg.as_ptr(),
                MPI_INT,
                MPI_COMM_WORLD
            )
    );
    assert_eq!(got, want, "allgatherv with negative displacements");
}

/// # Safety
/// MPI is initialised.
unsafe fn alltoall(c: &mut Ctx) {
    let (n, me) = (c.size, c.rank);
    let send: Vec<i32> = (0..2 * n).map(|i| v(me, i)).collect();
    let want: Vec<i32> = (0..n).flat_map(|s| (0..2).map(move |j| v(s, 2 * me + j))).collect();
    let mut got = spread(&vec![HOLE; 2 * n as usize]);
    run!(c, MPI_Alltoall / MPI_Ialltoall(p(&send), 1, c.pair, pm(&mut got), 2, c.every2, MPI_COMM_WORLD));
    assert_eq!(got, spread(&want), "alltoall pairs into a strided type");
    let mut got = send.clone();
    run!(
        c,
        MPI_Alltoall
            / MPI_Ialltoall(inplace(), 0, MPI_DATATYPE_NULL, pm(&mut got), 2, MPI_INT, MPI_COMM_WORLD)
    );
    assert_eq!(got, want, "in-place alltoall");
    // Alltoallv: s sends s + d + 1 ints to d; values v(s, 10 d + j). Sent packed in rank
    // order, received in reverse rank order with gaps of one.
    let cnt = |s: i32, d: i32| s + d + 1;
    let scounts: Vec<i32> = (0..n).map(|d| cnt(me, d)).collect();
    let mut sdispls = vec![0; n as usize];
    let mut send = Vec::new();
    for d in 0..n {
        sdispls[d as usize] = send.len() as i32;
        send.extend((0..cnt(me, d)).map(|j| v(me, 10 * d + j)));
    }
    let rcounts: Vec<i32> = (0..n).map(|s| cnt(s, me)).collect();
    let (rdispls, at) = reversed_with_gaps(&rcounts);
    let mut want = vec![HOLE; at as usize];
    for s in 0..n {
        for j in 0..cnt(s, me) {
            want[(rdispls[s as usize] + j) as usize] = v(s, 10 * me + j);
        }
    }
    let mut got = vec![HOLE; at as usize];
    run!(
        c,
        MPI_Alltoallv
            / MPI_Ialltoallv(
                p(&send),
                scounts.as_ptr(),
                sdispls.as_ptr(),
                MPI_INT,
                pm(&mut got),
                rcounts.as_ptr(),
                rdispls.as_ptr(),
                MPI_INT,
                MPI_COMM_WORLD
            )
    );
    assert_eq!(got, want, "alltoallv");
    // In place: what rank s sends to d sits at d's receive layout before the call.
    let mut got = vec![HOLE; at as usize];
    for s in 0..n {
        for j in 0..cnt(s, me) {
            got[(rdispls[s as usize] + j) as usize] = v(me, 10 * s + j);
        }
    }
    // Symmetric counts (cnt(s, d) = cnt(d, s)): the in-place exchange swaps the blocks.
    run!(
        c,
        MPI_Alltoallv
            / MPI_Ialltoallv(
                inplace(),
                null_mut(),
                null_mut(),
                MPI_DATATYPE_NULL,
                pm(&mut got),
                rcounts.as_ptr(),
                rdispls.as_ptr(),
                MPI_INT,
                MPI_COMM_WORLD
            )
    );
    assert_eq!(got, want, "in-place alltoallv");
    // Alltoallw: byte displacements and a type per peer: odd destinations' blocks strided,
    // even ones plain, in one send buffer; ints received.
    let (mut sbuf, mut stypes, mut sdb) = (Vec::new(), Vec::new(), Vec::new());
    for d in 0..n {
        let block = &send[sdispls[d as usize] as usize..][..cnt(me, d) as usize];
        sdb.push(sbuf.len() as i32 * 4);
        if d % 2 == 1 {
            sbuf.extend(spread(block));
            stypes.push(c.every2);
        } else {
            sbuf.extend_from_slice(block);
            stypes.push(MPI_INT);
        }
    }
    let rdb: Vec<i32> = rdispls.iter().map(|d| d * 4).collect();
    let rtypes = vec![MPI_INT; n as usize];
    let mut got = vec![HOLE; at as usize];
    run!(
        c,
        MPI_Alltoallw
            / MPI_Ialltoallw(
                p(&sbuf),
                scounts.as_ptr(),
                sdb.as_ptr(),
                stypes.as_ptr(),
                pm(&mut got),
                rcounts.as_ptr(),
                rdb.as_ptr(),
                rtypes.as_ptr(),
                MPI_COMM_WORLD
            )
    );
    assert_eq!(got, want, "alltoallw with mixed types");
}

/// An `MPI_User_function` summing ints laid out as `every2` (data at every other int).
unsafe extern "C" fn strided_sum(
    invec: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _dt: *mut MPI_Datatype,
) {
    // SAFETY: the library calls this with `*len` elements of `every2` at each buffer.
    unsafe {
        for k in 0..*len as usize {
            *inout.cast::<i32>().add(2 * k) += *invec.cast::<i32>().add(2 * k);
        }
    }
}

/// An `MPI_User_function` summing elements of three ints.
unsafe extern "C" fn triple_sum(
    invec: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _dt: *mut MPI_Datatype,
) {
    // SAFETY: the library calls this with `*len` elements of three ints at each buffer.
    unsafe {
        for k in 0..3 * *len as usize {
            *inout.cast::<i32>().add(k) += *invec.cast::<i32>().add(k);
        }
    }
}

/// # Safety
/// MPI is initialised.
unsafe fn reductions(c: &mut Ctx) {
    let (n, me) = (c.size, c.rank);
    let sum = |i: i32, upto: i32| (0..upto).map(|r| v(r, i)).sum::<i32>();
    let mine: Vec<i32> = (0..4).map(|i| v(me, i)).collect();
    let total: Vec<i32> = (0..4).map(|i| sum(i, n)).collect();
    let root = n - 1;
    // Reduce with a strided type, in place at the root.
    let mut got = spread(&if me == root { mine.clone() } else { vec![HOLE; 4] });
    let src = spread(&mine);
    let send = if me == root { inplace() } else { p(&src) };
    run!(c, MPI_Reduce / MPI_Ireduce(send, pm(&mut got), 4, c.every2, MPI_SUM, root, MPI_COMM_WORLD));
    if me == root {
        assert_eq!(got, spread(&total), "in-place reduce on a strided type");
    }
    // Allreduce: max, in place and strided.
    let mut got = spread(&mine);
    run!(c, MPI_Allreduce / MPI_Iallreduce(inplace(), pm(&mut got), 4, c.every2, MPI_MAX, MPI_COMM_WORLD));
    assert_eq!(got, spread(&(0..4).map(|i| v(n - 1, i)).collect::<Vec<_>>()), "allreduce max");
    // A user operation reading the strided layout.
    let mut op: MPI_Op = MPI_OP_NULL;
    assert_eq!(MPI_Op_create(Some(strided_sum), 1, &mut op), MPI_SUCCESS);
    let mut got = spread(&[HOLE; 4]);
    run!(c, MPI_Allreduce / MPI_Iallreduce(p(&src), pm(&mut got), 4, c.every2, op, MPI_COMM_WORLD));
    assert_eq!(got, spread(&total), "allreduce with a user operation on a strided type");
    MPI_Op_free(&mut op);
    // A user operation on 12-byte elements, large enough for the engine's segmenting
    // algorithms: every call must get whole elements.
    let mut tri: MPI_Datatype = MPI_DATATYPE_NULL;
    MPI_Type_contiguous(3, MPI_INT, &mut tri);
    MPI_Type_commit(&mut tri);
    assert_eq!(MPI_Op_create(Some(triple_sum), 1, &mut op), MPI_SUCCESS);
    let big: Vec<i32> = (0..3003).map(|i| v(me, i)).collect();
    let mut got = vec![HOLE; 3003];
    run!(c, MPI_Allreduce / MPI_Iallreduce(p(&big), pm(&mut got), 1001, tri, op, MPI_COMM_WORLD));
    assert!(
        got.iter().enumerate().all(|(i, &x)| x == sum(i as i32, n)),
        "allreduce with a user operation on 12-byte elements"
    );
    MPI_Op_free(&mut op);
    MPI_Type_free(&mut tri);
    // Reduce-scatter-block: blocks of 2; in place too.
    let send: Vec<i32> = (0..2 * n).map(|i| v(me, i)).collect();
    let want: Vec<i32> = (0..2).map(|j| sum(2 * me + j, n)).collect();
    let mut got = vec![HOLE; 2];
    run!(
        c,
        MPI_Reduce_scatter_block
            / MPI_Ireduce_scatter_block(p(&send), pm(&mut got), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
    );
    assert_eq!(got, want, "reduce_scatter_block");
    let mut got = send.clone();
    run!(
        c,
        MPI_Reduce_scatter_block
            / MPI_Ireduce_scatter_block(inplace(), pm(&mut got), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
    );
    assert_eq!(&got[..2], &want[..], "in-place reduce_scatter_block");
    // Reduce-scatter: rank r gets r + 1 elements.
    let counts: Vec<i32> = (0..n).map(|r| r + 1).collect();
    let total_n: i32 = counts.iter().sum();
    let off: i32 = counts[..me as usize].iter().sum();
    let send: Vec<i32> = (0..total_n).map(|i| v(me, i)).collect();
    let want: Vec<i32> = (0..=me).map(|j| sum(off + j, n)).collect();
    let mut got = spread(&vec![HOLE; me as usize + 1]);
    run!(
        c,
        MPI_Reduce_scatter
            / MPI_Ireduce_scatter(p(&send), pm(&mut got), counts.as_ptr(), MPI_INT, MPI_SUM, MPI_COMM_WORLD)
    );
    assert_eq!(&got[..me as usize + 1], &want[..], "reduce_scatter");
    let mut got = spread(&send);
    run!(
        c,
        MPI_Reduce_scatter
            / MPI_Ireduce_scatter(
                inplace(),
                pm(&mut got),
                counts.as_ptr(),
                c.every2,
                MPI_SUM,
                MPI_COMM_WORLD
            )
    );
    assert_eq!(
        &got[..2 * (me as usize + 1)],
        &spread(&want)[..],
        "in-place reduce_scatter on a strided type"
    );
    // Scans.
    let want: Vec<i32> = (0..4).map(|i| sum(i, me + 1)).collect();
    let mut got = vec![HOLE; 4];
    run!(c, MPI_Scan / MPI_Iscan(p(&mine), pm(&mut got), 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    assert_eq!(got, want, "scan");
    let mut got = spread(&mine);
    run!(c, MPI_Scan / MPI_Iscan(inplace(), pm(&mut got), 4, c.every2, MPI_SUM, MPI_COMM_WORLD));
    assert_eq!(got, spread(&want), "in-place scan on a strided type");
    let want: Vec<i32> = (0..4).map(|i| sum(i, me)).collect();
    let mut got = spread(&[HOLE; 4]);
    run!(c, MPI_Exscan / MPI_Iexscan(p(&src), pm(&mut got), 4, c.every2, MPI_SUM, MPI_COMM_WORLD));
    if me == 0 {
        assert_eq!(got, spread(&[HOLE; 4]), "exscan leaves rank 0's buffer alone");
    } else {
        assert_eq!(got, spread(&want), "exscan on a strided type");
    }
    let mut got = mine.clone();
    run!(c, MPI_Exscan / MPI_Iexscan(inplace(), pm(&mut got), 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if me > 0 {
        assert_eq!(got, want, "in-place exscan");
    }
    // Reduce_local, contiguous and strided.
    let a = [1, 2, 3];
    let mut b = [10, 20, 30];
    assert_eq!(MPI_Reduce_local(p(&a), pm(&mut b), 3, MPI_INT, MPI_PROD), MPI_SUCCESS);
    assert_eq!(b, [10, 40, 90]);
    let (a, mut b) = (spread(&a), spread(&[10, 20, 30]));
    assert_eq!(MPI_Reduce_local(p(&a), pm(&mut b), 3, c.every2, MPI_SUM), MPI_SUCCESS);
    assert_eq!(b, spread(&[11, 22, 33]));
    c.checks += 2;
}

/// Non-blocking collectives in flight together, completed in one `MPI_Waitall`: each keeps
/// its own scratch buffers and unpacks into its own receive buffer when it completes.
///
/// # Safety
/// MPI is initialised.
unsafe fn concurrent(c: &mut Ctx) {
    let (n, me) = (c.size, c.rank);
    let root = 0;
    let want_b: Vec<i32> = (0..6).map(|i| v(root, i)).collect();
    let mut b = spread(&if me == root { want_b.clone() } else { vec![0; 6] });
    let mine: Vec<i32> = (0..3).map(|i| v(me, i)).collect();
    let src = spread(&mine);
    let mut sum = spread(&[HOLE; 3]);
    let mut all = spread(&vec![HOLE; 3 * n as usize]);
    let mut reqs = [MPI_REQUEST_NULL; 3];
    assert_eq!(MPI_Ibcast(pm(&mut b), 6, c.every2, root, MPI_COMM_WORLD, &mut reqs[0]), MPI_SUCCESS);
    assert_eq!(
        MPI_Iallreduce(p(&src), pm(&mut sum), 3, c.every2, MPI_SUM, MPI_COMM_WORLD, &mut reqs[1]),
        MPI_SUCCESS
    );
    assert_eq!(
        MPI_Iallgather(p(&mine), 3, MPI_INT, pm(&mut all), 3, c.every2, MPI_COMM_WORLD, &mut reqs[2]),
        MPI_SUCCESS
    );
    assert_eq!(MPI_Waitall(3, reqs.as_mut_ptr(), null_mut()), MPI_SUCCESS);
    assert!(reqs.iter().all(|&r| r == MPI_REQUEST_NULL));
    assert_eq!(b, spread(&want_b), "concurrent ibcast");
    assert_eq!(
        sum,
        spread(&(0..3).map(|i| (0..n).map(|r| v(r, i)).sum()).collect::<Vec<i32>>()),
        "concurrent iallreduce"
    );
    assert_eq!(
        all,
        spread(&(0..n).flat_map(|r| (0..3).map(move |i| v(r, i))).collect::<Vec<_>>()),
        "concurrent iallgather"
    );
    c.checks += 3;
}

/// Bad arguments return the right class (the communicator returns errors).
///
/// # Safety
/// MPI is initialised.
unsafe fn errors(c: &mut Ctx) {
    let mut class = |rc: c_int| {
        let mut k = 0;
        MPI_Error_class(rc, &mut k);
        c.checks += 1;
        k
    };
    let x = [0i32; 4];
    let mut y = [0i32; 64];
    let mut loose: MPI_Datatype = MPI_DATATYPE_NULL;
    MPI_Type_vector(2, 1, 2, MPI_INT, &mut loose);
    assert_eq!(class(MPI_Bcast(pm(&mut y), 1, loose, 0, MPI_COMM_WORLD)), MPI_ERR_TYPE, "uncommitted type");
    MPI_Type_free(&mut loose);
    assert_eq!(class(MPI_Allreduce(p(&x), pm(&mut y), -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)), MPI_ERR_COUNT);
    assert_eq!(class(MPI_Bcast(pm(&mut y), 1, MPI_INT, -1, MPI_COMM_WORLD)), MPI_ERR_ROOT);
    assert_eq!(
        class(MPI_Reduce(p(&x), pm(&mut y), 1, MPI_INT, MPI_SUM, 1 << 20, MPI_COMM_WORLD)),
        MPI_ERR_ROOT
    );
    assert_eq!(class(MPI_Bcast(pm(&mut y), 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD)), MPI_ERR_TYPE);
    assert_eq!(
        class(MPI_Allreduce(p(&x), pm(&mut y), 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD)),
        MPI_ERR_OP
    );
    assert_eq!(
        class(MPI_Allgatherv(p(&x), 1, MPI_INT, pm(&mut y), null_mut(), null_mut(), MPI_INT, MPI_COMM_WORLD)),
        MPI_ERR_ARG
    );
    assert_eq!(class(MPI_Reduce_local(p(&x), pm(&mut y), 1, MPI_INT, MPI_OP_NULL)), MPI_ERR_OP);
    // Collectives on an intercommunicator (even and odd world ranks) are refused, except
    // barrier (run over the union of both groups).
    if c.size >= 2 {
        let mut half: MPI_Comm = MPI_COMM_NULL;
        MPI_Comm_split(MPI_COMM_WORLD, c.rank % 2, c.rank, &mut half);
        let mut inter: MPI_Comm = MPI_COMM_NULL;
        let remote_leader = if c.rank % 2 == 0 { 1 } else { 0 };
        assert_eq!(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 99, &mut inter), MPI_SUCCESS);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        assert_eq!(MPI_Barrier(inter), MPI_SUCCESS);
        assert_eq!(class(MPI_Allreduce(p(&x), pm(&mut y), 1, MPI_INT, MPI_SUM, inter)), MPI_ERR_COMM);
        MPI_Comm_free(&mut inter);
        MPI_Comm_free(&mut half);
    }
    // Local checks only: no rank takes part in a collective that failed before it started.
    assert_eq!(
        class(MPI_Alltoall(p(&x), 1, MPI_INT, pm(&mut y), 2, MPI_INT, MPI_COMM_WORLD)),
        MPI_ERR_TRUNCATE
    );
}

fn main() {
    // SAFETY: the calls follow the MPI standard's contracts; every pointer is to a live local
    // buffer of the size the call reads or writes.
    unsafe {
        assert_eq!(MPI_Init(null_mut(), null_mut()), MPI_SUCCESS);
        let (mut rank, mut size) = (0, 0);
        MPI_Comm_rank(MPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mut size);
        let mut every2: MPI_Datatype = MPI_DATATYPE_NULL;
        assert_eq!(MPI_Type_create_resized(MPI_INT, 0, 8, &mut every2), MPI_SUCCESS);
        MPI_Type_commit(&mut every2);
        let mut pair: MPI_Datatype = MPI_DATATYPE_NULL;
        MPI_Type_contiguous(2, MPI_INT, &mut pair);
        MPI_Type_commit(&mut pair);
        let mut c = Ctx { rank, size, blocking: true, every2, pair, checks: 0 };
        for blocking in [true, false] {
            c.blocking = blocking;
            bcast(&mut c);
            gather(&mut c);
            scatter(&mut c);
            allgather(&mut c);
            alltoall(&mut c);
            reductions(&mut c);
        }
        concurrent(&mut c);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); // calls on no object
        errors(&mut c);
        MPI_Type_free(&mut every2);
        MPI_Type_free(&mut pair);
        assert_eq!(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
        println!("coll_check: rank {rank} passed {} checks", c.checks);
        MPI_Finalize();
    }
}
