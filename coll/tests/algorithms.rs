//! Every collective × algorithm × type × operation against a straightforward reference, on
//! communicator sizes 1..9, counts 0, 1, odd and large (rendezvous), roots and node maps;
//! in-process (N engines in N threads), so the matrix runs without processes.

mod common;

use proptest::prelude::*;
use weft_coll::select::valid;
use weft_coll::*;
use weft_engine::{CollPort, Common, Engine, Error};

/// Which operation a case uses.
#[derive(Clone, Copy, Debug)]
enum OpSel {
    Builtin(usize),
    /// Affine-map composition on u64 = (a: u32, b: u32): associative, not commutative.
    Affine,
    /// Wrapping sum through the C function-pointer form (commutative).
    FnPtrSum,
}

fn make_op(s: OpSel) -> Op {
    match s {
        OpSel::Builtin(i) => Op::BUILTIN[i].clone(),
        OpSel::Affine => Op::user(false, |a: &[u8], b: &mut [u8], n| {
            for i in 0..n {
                let x = u64::from_ne_bytes(a[i * 8..i * 8 + 8].try_into().unwrap());
                let y = u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
                let (xa, xb, ya, yb) = (x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32);
                // inout = input ∘ inout: apply x, then y.
                let (ra, rb) = (xa.wrapping_mul(ya), xb.wrapping_mul(ya).wrapping_add(yb));
                b[i * 8..i * 8 + 8].copy_from_slice(&((ra as u64) | ((rb as u64) << 32)).to_ne_bytes());
            }
        }),
        OpSel::FnPtrSum => {
            unsafe extern "C" fn sum(
                a: *const std::ffi::c_void,
                b: *mut std::ffi::c_void,
                n: usize,
                _: *mut std::ffi::c_void,
            ) {
                let (a, b) = (a as *const u8, b as *mut u8);
                for i in 0..n {
                    // SAFETY: n bytes each.
                    unsafe { *b.add(i) = (*b.add(i)).wrapping_add(*a.add(i)) };
                }
            }
            // SAFETY: `sum` reads and writes exactly n bytes.
            unsafe { Op::from_fn(sum, std::ptr::null_mut(), true) }
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    kind: Kind,
    alg: Option<Alg>,
    dt: DType,
    op: Option<OpSel>,
    count: usize,
    root: u32,
    seed: u32,
}

/// One element of type `dt` for (rank, index): small integers so that float sums and
/// products are exact in any order.
fn elem(dt: DType, r: u32, i: usize, seed: u32) -> Vec<u8> {
    let v = ((r as usize * 31 + i * 7 + seed as usize) % 5) as i64 - 2;
    let idx = r as i32;
    match dt {
        DType::U8 | DType::Byte => ((v + 2) as u8 ^ (i as u8).wrapping_mul(17)).to_ne_bytes().to_vec(),
        DType::I8 => (v as i8).to_ne_bytes().to_vec(),
        DType::U16 => ((v + 2) as u16 + i as u16).to_ne_bytes().to_vec(),
        DType::I16 => (v as i16).to_ne_bytes().to_vec(),
        DType::U32 => ((v + 3) as u32).to_ne_bytes().to_vec(),
        DType::I32 => (v as i32).to_ne_bytes().to_vec(),
        DType::U64 => (((v + 3) as u64) | (((r as u64 + i as u64) % 7) << 32)).to_ne_bytes().to_vec(),
        DType::I64 => (v * 1_000_000_007).to_ne_bytes().to_vec(),
        DType::F32 => (v as f32).to_ne_bytes().to_vec(),
        DType::F64 => (v as f64 * 0.5).to_ne_bytes().to_vec(),
        DType::I32I32 => [(v as i32).to_ne_bytes(), idx.to_ne_bytes()].concat(),
        DType::F32I32 => [(v as f32).to_ne_bytes(), idx.to_ne_bytes()].concat(),
        DType::F64I32 => [(v as f64).to_ne_bytes().to_vec(), idx.to_ne_bytes().to_vec(), vec![0; 4]].concat(),
    }
}

fn data(dt: DType, r: u32, n: usize, seed: u32) -> Vec<u8> {
    (0..n).flat_map(|i| elem(dt, r, i, seed)).collect()
}

/// Per-rank counts for v-variants.
fn vcount(i: u32, j: u32, seed: u32) -> usize {
    ((i * 3 + j * 5 + seed) % 5) as usize
}

/// Displacements: prefix sums with a one-element gap.
fn displs(counts: &[usize]) -> Vec<usize> {
    let mut d = Vec::new();
    let mut o = 1;
    for &c in counts {
        d.push(o);
        o += c + 1;
    }
    d
}

fn fold(op: &Op, dt: DType, parts: &[Vec<u8>]) -> Vec<u8> {
    let mut acc = parts[0].clone();
    for p in &parts[1..] {
        op.apply(dt, p, &mut acc, false);
    }
    acc
}

struct Io {
    send: Vec<u8>,
    recv: Vec<u8>,
    scounts: Vec<usize>,
    sdispls: Vec<usize>,
    rcounts: Vec<usize>,
    rdispls: Vec<usize>,
    count: usize,
}

/// Buffers and counts of rank `r` for `c` on `n` ranks.
fn io(c: &Case, r: u32, n: u32) -> Io {
    let (dt, es, k, nu) = (c.dt, c.dt.size(), c.count, n as usize);
    let mut io = Io {
        send: Vec::new(),
        recv: Vec::new(),
        scounts: vec![],
        sdispls: vec![],
        rcounts: vec![],
        rdispls: vec![],
        count: k,
    };
    let root = r == c.root;
    match c.kind {
        Kind::Barrier => {}
        Kind::Bcast => io.recv = if root { data(dt, r, k, c.seed) } else { vec![0; k * es] },
        Kind::Reduce | Kind::Allreduce | Kind::Scan | Kind::Exscan => {
            io.send = data(dt, r, k, c.seed);
            io.recv = vec![0; k * es];
        }
        Kind::Gather | Kind::Allgather => {
            io.send = data(dt, r, k, c.seed);
            io.recv = vec![0; nu * k * es];
        }
        Kind::Scatter => {
            io.send = if root { data(dt, r, nu * k, c.seed) } else { vec![] };
            io.recv = vec![0; k * es];
        }
        Kind::Alltoall => {
            io.send = data(dt, r, nu * k, c.seed);
            io.recv = vec![0; nu * k * es];
        }
        Kind::ReduceScatterBlock => {
            io.send = data(dt, r, nu * k, c.seed);
            io.recv = vec![0; k * es];
        }
        Kind::Gatherv | Kind::Allgatherv => {
            io.count = vcount(r, 0, c.seed);
            io.send = data(dt, r, io.count, c.seed);
            io.rcounts = (0..n).map(|i| vcount(i, 0, c.seed)).collect();
            io.rdispls = displs(&io.rcounts);
            let len = io.rdispls[nu - 1] + io.rcounts[nu - 1];
            io.recv = vec![0; len * es];
        }
        Kind::Scatterv => {
            io.count = vcount(r, 0, c.seed);
            io.scounts = (0..n).map(|i| vcount(i, 0, c.seed)).collect();
            io.sdispls = displs(&io.scounts);
            let len = io.sdispls[nu - 1] + io.scounts[nu - 1];
            io.send = if root { data(dt, r, len, c.seed) } else { vec![] };
            io.recv = vec![0; io.count * es];
        }
        Kind::Alltoallv => {
            io.scounts = (0..n).map(|j| vcount(r, j, c.seed)).collect();
            io.sdispls = displs(&io.scounts);
            io.rcounts = (0..n).map(|j| vcount(j, r, c.seed)).collect();
            io.rdispls = displs(&io.rcounts);
            io.send = data(dt, r, io.sdispls[nu - 1] + io.scounts[nu - 1], c.seed);
            io.recv = vec![0; (io.rdispls[nu - 1] + io.rcounts[nu - 1]) * es];
        }
        Kind::ReduceScatter => {
            io.rcounts = (0..n).map(|i| vcount(i, 1, c.seed)).collect();
            let total: usize = io.rcounts.iter().sum();
            io.send = data(dt, r, total, c.seed);
            io.recv = vec![0; io.rcounts[r as usize] * es];
        }
    }
    io
}

/// The expected receive buffer of rank `r`, or `None` when it is not defined.
fn expected(c: &Case, r: u32, n: u32) -> Option<Vec<u8>> {
    let es = c.dt.size();
    let ios: Vec<Io> = (0..n).map(|i| io(c, i, n)).collect();
    let me = &ios[r as usize];
    let op = c.op.map(make_op);
    let k = c.count;
    let root = c.root as usize;
    let blk = |v: &Vec<u8>, i: usize, len: usize| v[i * len..(i + 1) * len].to_vec();
    Some(match c.kind {
        Kind::Barrier => vec![],
        Kind::Bcast => ios[root].recv.clone(),
        Kind::Reduce if r as usize != root => return None,
        Kind::Reduce | Kind::Allreduce => {
            fold(op.as_ref().unwrap(), c.dt, &ios.iter().map(|x| x.send.clone()).collect::<Vec<_>>())
        }
        Kind::Scan => fold(
            op.as_ref().unwrap(),
            c.dt,
            &ios[..=r as usize].iter().map(|x| x.send.clone()).collect::<Vec<_>>(),
        ),
        Kind::Exscan if r == 0 => return None,
        Kind::Exscan => fold(
            op.as_ref().unwrap(),
            c.dt,
            &ios[..r as usize].iter().map(|x| x.send.clone()).collect::<Vec<_>>(),
        ),
        Kind::Gather if r as usize != root => return None,
        Kind::Gather | Kind::Allgather => ios.iter().flat_map(|x| x.send.clone()).collect(),
        Kind::Scatter => blk(&ios[root].send, r as usize, k * es),
        Kind::Alltoall => ios.iter().flat_map(|x| blk(&x.send, r as usize, k * es)).collect(),
        Kind::ReduceScatterBlock => {
            let parts: Vec<Vec<u8>> = ios.iter().map(|x| blk(&x.send, r as usize, k * es)).collect();
            fold(op.as_ref().unwrap(), c.dt, &parts)
        }
        Kind::Gatherv if r as usize != root => return None,
        Kind::Gatherv | Kind::Allgatherv => {
            let mut out = vec![0u8; me.recv.len()];
            for (i, x) in ios.iter().enumerate() {
                let d = me.rdispls[i] * es;
                out[d..d + x.send.len()].copy_from_slice(&x.send);
            }
            out
        }
        Kind::Scatterv => {
            let d = ios[root].sdispls[r as usize] * es;
            ios[root].send[d..d + me.recv.len()].to_vec()
        }
        Kind::Alltoallv => {
            let mut out = vec![0u8; me.recv.len()];
            for (j, x) in ios.iter().enumerate() {
                let (sd, len, rd) =
                    (x.sdispls[r as usize] * es, x.scounts[r as usize] * es, me.rdispls[j] * es);
                out[rd..rd + len].copy_from_slice(&x.send[sd..sd + len]);
            }
            out
        }
        Kind::ReduceScatter => {
            let off: usize = me.rcounts[..r as usize].iter().sum::<usize>() * es;
            let len = me.rcounts[r as usize] * es;
            let parts: Vec<Vec<u8>> = ios.iter().map(|x| x.send[off..off + len].to_vec()).collect();
            fold(op.as_ref().unwrap(), c.dt, &parts)
        }
    })
}

fn exec(e: &mut Engine, coll: &mut Coll, c: &Case, r: u32, n: u32) -> Result<Vec<u8>, Error> {
    let w = e.world();
    let key = c.kind.info_key();
    coll.set_info(w, &key, c.alg.map_or("auto", |a| a.name())).unwrap();
    let mut io = io(c, r, n);
    let mut spec = Spec::new(c.kind, c.dt);
    spec.send = if io.send.is_empty() { std::ptr::null() } else { io.send.as_ptr() };
    spec.send_len = io.send.len();
    spec.recv = if io.recv.is_empty() { std::ptr::null_mut() } else { io.recv.as_mut_ptr() };
    spec.recv_len = io.recv.len();
    spec.op = c.op.map(make_op);
    spec.count = io.count;
    spec.root = c.root;
    spec.scounts = &io.scounts;
    spec.sdispls = &io.sdispls;
    spec.rcounts = &io.rcounts;
    spec.rdispls = &io.rdispls;
    // SAFETY: buffers outlive the blocking call.
    unsafe { coll.run(CollPort::of(e), w, &spec)? };
    Ok(io.recv)
}

fn check_case(e: &mut Engine, coll: &mut Coll, c: &Case, r: u32, n: u32) {
    let got = exec(e, coll, c, r, n).unwrap_or_else(|x| panic!("rank {r}/{n} {c:?}: {x}"));
    if let Some(want) = expected(c, r, n) {
        if got != want {
            panic!("rank {r}/{n} {c:?}: wrong result\n got  {got:?}\n want {want:?}");
        }
    }
}

fn reduces(k: Kind) -> bool {
    matches!(
        k,
        Kind::Reduce
            | Kind::Allreduce
            | Kind::ReduceScatter
            | Kind::ReduceScatterBlock
            | Kind::Scan
            | Kind::Exscan
    )
}

/// Operations applicable to `dt`, as selectors.
fn ops_for(dt: DType) -> Vec<OpSel> {
    let mut v: Vec<OpSel> =
        (0..Op::BUILTIN.len()).filter(|&i| Op::BUILTIN[i].check(dt).is_ok()).map(OpSel::Builtin).collect();
    if dt == DType::U64 {
        v.push(OpSel::Affine);
    }
    if dt == DType::U8 {
        v.push(OpSel::FnPtrSum);
    }
    v
}

/// The deterministic matrix for communicator size `n`.
fn matrix(n: u32, nodes_tag: u32) -> Vec<Case> {
    let mut cases = Vec::new();
    for kind in Kind::ALL {
        let algs: Vec<Option<Alg>> = std::iter::once(None).chain(valid(kind).into_iter().map(Some)).collect();
        for alg in algs {
            for &count in &[0usize, 1, 7, 300] {
                let roots = if matches!(
                    kind,
                    Kind::Bcast
                        | Kind::Reduce
                        | Kind::Gather
                        | Kind::Gatherv
                        | Kind::Scatter
                        | Kind::Scatterv
                ) {
                    vec![0, n - 1, n / 2]
                } else {
                    vec![0]
                };
                for root in roots {
                    let seed = (count as u32 * 7 + root + nodes_tag) % 11;
                    if reduces(kind) {
                        // Every op on a few types, and one op on every applicable type.
                        for dt in [DType::I32, DType::U64, DType::F64I32] {
                            for op in ops_for(dt) {
                                cases.push(Case { kind, alg, dt, op: Some(op), count, root, seed });
                            }
                        }
                    } else {
                        for dt in [DType::U8, DType::F64, DType::F64I32] {
                            cases.push(Case { kind, alg, dt, op: None, count, root, seed });
                        }
                    }
                }
            }
        }
    }
    cases
}

fn run_matrix(n: u32, nodes: &'static [u32]) {
    let cases = matrix(n, nodes.first().copied().unwrap_or(0));
    common::run(n, nodes, move |r, e, coll, _| {
        for c in &cases {
            check_case(e, coll, c, r, n);
        }
    });
}

#[test]
fn matrix_1_to_4() {
    for n in 1..=4 {
        run_matrix(n, &[]);
    }
}

#[test]
fn matrix_5_to_7() {
    for n in 5..=7 {
        run_matrix(n, &[]);
    }
}

#[test]
fn matrix_8_9() {
    run_matrix(8, &[]);
    run_matrix(9, &[]);
}

#[test]
fn matrix_uneven_nodes() {
    // 3+1, 2+2+1, interleaved 2+2+2+1 (node ids not in rank order).
    run_matrix(4, &[0, 0, 0, 1]);
    run_matrix(5, &[0, 0, 1, 1, 2]);
    run_matrix(7, &[2, 0, 1, 2, 0, 1, 3]);
}

#[test]
fn every_type_every_op_allreduce() {
    let mut cases = Vec::new();
    for dt in DType::ALL {
        for op in ops_for(dt) {
            for alg in [Alg::RecDbl, Alg::Ring, Alg::Rabenseifner, Alg::BinBin] {
                cases.push(Case {
                    kind: Kind::Allreduce,
                    alg: Some(alg),
                    dt,
                    op: Some(op),
                    count: 13,
                    root: 0,
                    seed: 3,
                });
            }
        }
    }
    common::run(6, &[0, 0, 1, 1, 1, 2], move |r, e, coll, _| {
        for c in &cases {
            check_case(e, coll, c, r, 6);
        }
    });
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    (0..Kind::ALL.len()).prop_map(|i| Kind::ALL[i])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn random_cases(kind in kind_strategy(), n in 1u32..10, alg_i in 0usize..16, count in prop_oneof![Just(0usize), 1usize..40, 1000usize..3000],
                    dt_i in 0usize..14, op_i in 0usize..16, root_s in 0u32..64, seed in 0u32..100, node_split in 1u32..4) {
        let algs = valid(kind);
        let alg = if alg_i >= algs.len() { None } else { Some(algs[alg_i]) };
        let mut dt = DType::ALL[dt_i];
        let op = if reduces(kind) {
            let mut ops = ops_for(dt);
            if ops.is_empty() { dt = DType::I64; ops = ops_for(dt); }
            Some(ops[op_i % ops.len()])
        } else { None };
        let c = Case { kind, alg, dt, op, count, root: root_s % n, seed };
        let nodes: Vec<u32> = (0..n).map(|r| r * node_split / n).collect();
        let nodes: &'static [u32] = Box::leak(nodes.into_boxed_slice());
        common::run(n, nodes, move |r, e, coll, _| check_case(e, coll, &c, r, n));
    }
}
