//! Non-blocking overlap, typed errors for mismatched arguments, failure propagation, and the
//! inter-node message count of hierarchical trees; in-process.

mod common;

use weft_coll::*;
use weft_engine::{CollPort, Common, Communicators, Diagnostics, Engine, Error, ReqId};

/// Start an i64 allreduce (sum) of `send` into `recv`.
unsafe fn iallreduce(
    e: &mut Engine,
    c: &mut Coll,
    comm: weft_engine::CommId,
    send: &[i64],
    recv: &mut [i64],
) -> Result<ReqId, Error> {
    let mut s = Spec::new(Kind::Allreduce, DType::I64);
    s.send = send.as_ptr() as *const u8;
    s.send_len = send.len() * 8;
    s.recv = recv.as_mut_ptr() as *mut u8;
    s.recv_len = recv.len() * 8;
    s.count = send.len();
    s.op = Some(Op::Sum);
    // SAFETY: forwarded.
    unsafe { c.start(CollPort::of(e), comm, &s) }
}

#[test]
fn outstanding_collectives_complete_in_any_order() {
    common::run(5, &[], |r, e, c, _| {
        let w = e.world();
        let comms: Vec<_> = (0..3).map(|_| Communicators::of(e).dup(w).unwrap()).collect();
        let sends: Vec<Vec<i64>> =
            (0..6).map(|k| (0..(1 + k * 100)).map(|i| (r as i64 + 1) * (i + k) as i64).collect()).collect();
        let mut recvs: Vec<Vec<i64>> = sends.iter().map(|s| vec![0; s.len()]).collect();
        // Collective k runs on communicator k % 3; each rank starts them in a rank-dependent
        // order of communicators (the order on any one communicator is the same everywhere).
        let mut ids = vec![None; 6];
        let mut outs: Vec<Option<&mut Vec<i64>>> = recvs.iter_mut().map(Some).collect();
        for j in 0..2 {
            for i in 0..3 {
                let k = (i + r as usize) % 3 + 3 * j;
                let d = outs[k].take().unwrap();
                // SAFETY: sends[k] and recvs[k] (through d) are not touched again until every
                // request has been waited for below.
                ids[k] = Some(unsafe { iallreduce(e, c, comms[k % 3], &sends[k], d).unwrap() });
            }
        }
        let ids: Vec<_> = ids.into_iter().map(Option::unwrap).collect();
        // Complete in reverse order on even ranks, forward on odd ones.
        let order: Vec<usize> = if r % 2 == 0 { (0..6).rev().collect() } else { (0..6).collect() };
        for k in order {
            e.wait(ids[k]).unwrap();
        }
        for (k, d) in recvs.iter().enumerate() {
            for (i, &x) in d.iter().enumerate() {
                assert_eq!(x, 15 * (i + k) as i64, "collective {k} element {i}");
            }
        }
    });
}

#[test]
fn same_communicator_nonblocking_do_not_cross() {
    common::run(4, &[0, 0, 1, 1], |r, e, c, _| {
        let w = e.world();
        let a = vec![r as i64; 3];
        let b = vec![10 * r as i64; 500];
        let (mut ra, mut rb) = (vec![0; 3], vec![0; 500]);
        // SAFETY: a and ra are left alone until x has been waited for.
        let x = unsafe { iallreduce(e, c, w, &a, &mut ra).unwrap() };
        // SAFETY: b and rb are left alone until y has been waited for.
        let y = unsafe { iallreduce(e, c, w, &b, &mut rb).unwrap() };
        e.wait(y).unwrap();
        e.wait(x).unwrap();
        assert!(ra.iter().all(|&v| v == 6) && rb.iter().all(|&v| v == 60));
    });
}

fn bcast(e: &mut Engine, c: &mut Coll, buf: &mut [u8], root: u32) -> Result<(), Error> {
    let mut s = Spec::new(Kind::Bcast, DType::U8);
    s.recv = buf.as_mut_ptr();
    s.recv_len = buf.len();
    s.count = buf.len();
    s.root = root;
    let w = e.world();
    // SAFETY: blocking.
    unsafe { c.run(CollPort::of(e), w, &s) }
}

fn is_mismatch(x: &Error) -> bool {
    matches!(x, Error::InvalidArg(m) if m.contains("mismatch"))
}

#[test]
fn mismatched_arguments_give_typed_errors() {
    common::run(4, &[], |r, e, c, _| {
        let w = e.world();
        // Invalid root, null buffer with nonzero count, short buffer: rejected locally.
        let mut b = [0u8; 8];
        assert!(matches!(bcast(e, c, &mut b, 9), Err(Error::InvalidRank { rank: 9, size: 4 })));
        let mut s = Spec::new(Kind::Allreduce, DType::I32);
        s.count = 4;
        s.op = Some(Op::Sum);
        // SAFETY: null buffers with a nonzero count are rejected before any access.
        assert!(matches!(unsafe { c.run(CollPort::of(e), w, &s) }, Err(Error::InvalidArg(_))));
        let (x, mut y) = ([0i32; 2], [0i32; 4]);
        s.send = x.as_ptr() as *const u8;
        s.send_len = 8;
        s.recv = y.as_mut_ptr() as *mut u8;
        s.recv_len = 16;
        // SAFETY: send_len and recv_len are the sizes of x and y, which outlive the call.
        assert!(matches!(unsafe { c.run(CollPort::of(e), w, &s) }, Err(Error::InvalidArg(_))));
        // Operation not applicable to the type.
        s.dtype = DType::F64;
        s.op = Some(Op::Band);
        // SAFETY: as above (x and y, their true sizes).
        assert!(matches!(unsafe { c.run(CollPort::of(e), w, &s) }, Err(Error::InvalidArg(_))));
        e.barrier(w).unwrap();

        // Count mismatch: rank 3 (a leaf of the binomial tree, fed by rank 2) passes 3
        // elements fewer; small (header-checked) and large (length-checked) messages.
        for len in [8usize, 2000] {
            let n = if r == 3 { len - 3 } else { len };
            let mut buf = vec![1u8; n];
            let res = bcast(e, c, &mut buf, 0);
            if r == 3 {
                assert!(res.as_ref().is_err_and(is_mismatch), "len {len}: {res:?}");
            } else {
                res.unwrap();
            }
            e.barrier(w).unwrap();
        }
        // Root mismatch: rank 3 names root 2 (its parent in both trees), the others root 0.
        // (A rank whose assumed parent never sends cannot detect anything: MPI leaves such
        // programs erroneous; weft detects the mismatch wherever a message arrives.)
        let mut buf = vec![0u8; 16];
        let res = bcast(e, c, &mut buf, if r == 3 { 2 } else { 0 });
        if r == 3 {
            assert!(
                res.as_ref().is_err_and(|x| matches!(x, Error::InvalidArg(m) if m.contains("root"))),
                "{res:?}"
            );
        } else {
            res.unwrap();
        }
        e.barrier(w).unwrap();
        // Kind mismatch: rank 0 broadcasts, the others reduce.
        let mut buf = vec![0u8; 8];
        let res = if r == 0 {
            bcast(e, c, &mut buf, 0)
        } else {
            let src = [0u8; 8];
            let mut s = Spec::new(Kind::Reduce, DType::U8);
            s.send = src.as_ptr();
            s.send_len = 8;
            s.recv = buf.as_mut_ptr();
            s.recv_len = 8;
            s.count = 8;
            s.op = Some(Op::Sum);
            // SAFETY: src and buf hold the 8 bytes named and outlive this blocking call.
            unsafe { c.run(CollPort::of(e), w, &s) }
        };
        assert!(res.is_ok() || res.as_ref().is_err_and(is_mismatch), "{res:?}");
        e.barrier(w).unwrap();
        // Still usable afterwards.
        let mut buf = vec![r as u8; 4];
        bcast(e, c, &mut buf, 2).unwrap();
        assert_eq!(buf, vec![2u8; 4]);
    });
}

/// A call shape already cached (its schedule and buffer needs known) still rejects bad
/// buffers, a wrong type/operation pair and a freed communicator, and stays usable after.
/// An allreduce (sum) of the four i64 of `x` into `y`, without buffer lengths.
fn sum4(x: &[i64; 4], y: &mut [i64; 4]) -> Spec<'static> {
    let mut s = Spec::new(Kind::Allreduce, DType::I64);
    s.count = 4;
    s.op = Some(Op::Sum);
    s.send = x.as_ptr() as *const u8;
    s.recv = y.as_mut_ptr() as *mut u8;
    s
}

#[test]
fn cached_call_shape_still_validates() {
    common::run(3, &[], |_r, e, c, _| {
        let w = e.world();
        let d = Communicators::of(e).dup(w).unwrap();
        let (x, mut y) = ([1i64; 4], [0i64; 4]);
        let s = Spec { send_len: 32, recv_len: 32, ..sum4(&x, &mut y) };
        for _ in 0..2 {
            // SAFETY: x and y hold the 32 bytes named and outlive this blocking call.
            unsafe { c.run(CollPort::of(e), d, &s) }.unwrap();
            assert_eq!(y, [3i64; 4]);
        }
        // Same shape, bad buffers: a short receive buffer, a null send buffer.
        let mut t = Spec { recv_len: 24, ..s.clone() };
        // SAFETY: x and y are larger than the lengths named.
        let r = unsafe { c.run(CollPort::of(e), d, &t) };
        assert!(matches!(&r, Err(Error::InvalidArg(m)) if m.contains("receive buffer of 24 bytes")), "{r:?}");
        t = Spec { send: std::ptr::null(), ..s.clone() };
        // SAFETY: the null send buffer is rejected before any access; y is as above.
        let r = unsafe { c.run(CollPort::of(e), d, &t) };
        assert!(matches!(&r, Err(Error::InvalidArg(m)) if m.contains("null send")), "{r:?}");
        // Same shape and element size, an operation the type does not take.
        t = Spec { dtype: DType::F64, op: Some(Op::Band), ..s.clone() };
        // SAFETY: x and y, their true sizes, outlive the call.
        assert!(matches!(unsafe { c.run(CollPort::of(e), d, &t) }, Err(Error::InvalidArg(_))));
        // The rejected calls used no sequence number: the next good one still matches.
        y = [0; 4];
        // SAFETY: as in the loop above.
        unsafe { c.run(CollPort::of(e), d, &s) }.unwrap();
        assert_eq!(y, [3i64; 4]);
        e.barrier(w).unwrap();
        Communicators::of(e).free(d).unwrap();
        // SAFETY: as in the loop above (the freed communicator is rejected anyway).
        assert!(matches!(unsafe { c.run(CollPort::of(e), d, &s) }, Err(Error::InvalidComm)));
    });
}

#[test]
fn bare_calls_are_sized_by_the_cached_shape_and_still_checked() {
    common::run(3, &[], |r, e, c, _| {
        let w = e.world();
        let d = Communicators::of(e).dup(w).unwrap();
        let (x, mut y) = ([1i64; 4], [0i64; 4]);
        let s = sum4(&x, &mut y);
        let mut sized = 0;
        for _ in 0..3 {
            let mut t = s.clone();
            // SAFETY: x and y hold the 32 bytes the sizing gives them and outlive the call.
            unsafe {
                c.run_bare(CollPort::of(e), d, &mut t, |t| {
                    sized += 1;
                    (t.send_len, t.recv_len) = (32, 32);
                    Ok(())
                })
            }
            .unwrap();
            assert_eq!((t.send_len, t.recv_len), (32, 32));
            assert_eq!(y, [3i64; 4]);
            y = [0; 4];
        }
        assert_eq!(sized, 1, "only the first call of the shape is sized by the caller");
        // Same shape, a null receive buffer: not run from the cache; the sizing rejects it.
        let mut t = Spec { recv: std::ptr::null_mut(), ..s.clone() };
        // SAFETY: nothing is accessed (the call is rejected before it runs).
        let res =
            unsafe { c.run_bare(CollPort::of(e), d, &mut t, |_| Err(Error::InvalidArg("null recv".into()))) };
        assert!(matches!(&res, Err(Error::InvalidArg(m)) if m == "null recv"), "{res:?}");
        // A bcast: the root sends, the others receive, the second call from the cache.
        let mut b = [0u8; 8];
        if r == 0 {
            b = [7; 8];
        }
        for _ in 0..2 {
            let mut t = Spec::new(Kind::Bcast, DType::U8);
            (t.count, t.recv) = (8, b.as_mut_ptr());
            // SAFETY: b holds 8 bytes and outlives the call.
            unsafe {
                c.run_bare(CollPort::of(e), d, &mut t, |t| {
                    t.recv_len = 8;
                    Ok(())
                })
            }
            .unwrap();
            assert_eq!(b, [7; 8]);
        }
        e.barrier(w).unwrap();
        Communicators::of(e).free(d).unwrap();
    });
}

#[test]
fn failed_rank_gives_proc_failed_without_hang() {
    let only = std::env::var("ALG").ok();
    for alg in ["binomial", "binbin", "ring", "recdbl", "flat"] {
        if only.as_deref().is_some_and(|o| o != alg) {
            continue;
        }
        common::run(6, &[0, 0, 0, 1, 1, 1], move |r, e, c, net| {
            let w = e.world();
            c.set_info(w, "coll_allreduce", alg).unwrap();
            if r == 4 {
                *net.dead[4].lock().unwrap() = true;
                return;
            }
            let s = vec![1i64; 40];
            let mut d = vec![0i64; 40];
            // SAFETY: s and d are left alone until test reports the request complete (a
            // stuck run panics, and nothing progresses the engine after that).
            let id = unsafe { iallreduce(e, c, w, &s, &mut d).unwrap() };
            let t0 = std::time::Instant::now();
            let res = loop {
                match e.test(id) {
                    Ok(None) => {}
                    Ok(Some(st)) => break Ok(st),
                    Err(x) => break Err(x),
                }
                if t0.elapsed().as_secs() > 2 {
                    panic!("{alg} rank {r} stuck: {}", Diagnostics::of(e).debug_state());
                }
            };
            assert!(matches!(res, Err(Error::ProcFailed { .. })), "{alg} rank {r}: {res:?}");
        });
    }
}

#[test]
fn invalid_algorithm_names_are_errors() {
    common::run(1, &[], |_, e, c, _| {
        let w = e.world();
        assert!(matches!(c.set_info(w, "coll_allreduce", "bogus"), Err(Error::InvalidArg(_))));
        assert!(matches!(c.set_info(w, "coll_bcast", "ring"), Err(Error::InvalidArg(_))));
        assert!(matches!(c.set_info(w, "coll_nope", "ring"), Err(Error::InvalidArg(_))));
        c.set_info(w, "coll_allreduce", "bin/bin").unwrap();
        let mut o = Overrides::default();
        assert!(o.set_env("WEFT_COLL_ALLREDUCE", "rabenseifner").unwrap());
        assert!(o.set_env("WEFT_COLL_ALLREDUCE", "nope").is_err());
        assert!(!o.set_env("WEFT_OTHER", "x").unwrap());
    });
}

/// Messages that crossed node boundaries in one small allreduce with `alg`.
fn inter_node_messages(nodes: &'static [u32], alg: &'static str) -> u64 {
    let total = std::sync::Arc::new(std::sync::Mutex::new(0u64));
    let t2 = total.clone();
    let n = nodes.len() as u32;
    common::run(n, nodes, move |r, e, c, net| {
        let w = e.world();
        c.set_info(w, "coll_allreduce", alg).unwrap();
        e.barrier(w).unwrap();
        let before: u64 = (0..n)
            .filter(|&p| nodes[p as usize] != nodes[r as usize])
            .map(|p| net.sent.lock().unwrap()[r as usize][p as usize])
            .sum();
        let s = [r as i64];
        let mut d = [0i64];
        // SAFETY: the request is waited for before s and d are used again.
        unsafe { iallreduce(e, c, w, &s, &mut d).and_then(|id| e.wait(id)).unwrap() };
        let after: u64 = (0..n)
            .filter(|&p| nodes[p as usize] != nodes[r as usize])
            .map(|p| net.sent.lock().unwrap()[r as usize][p as usize])
            .sum();
        *t2.lock().unwrap() += after - before;
        assert_eq!(d[0], (n * (n - 1) / 2) as i64);
        e.barrier(w).unwrap();
    });
    let x = *total.lock().unwrap();
    x
}

#[test]
fn binbin_crosses_nodes_2k_minus_2_times() {
    for nodes in [
        &[0u32, 0, 1, 1][..],
        &[0, 0, 0, 1],
        &[0, 0, 1, 1, 2],
        &[0, 0, 0, 1, 1, 1, 2, 2, 2],
        &[0, 1, 2, 3, 0, 1, 2, 3],
    ] {
        let nodes: &'static [u32] = Box::leak(nodes.to_vec().into_boxed_slice());
        let k = weft_coll::hier::node_count(nodes) as u64;
        assert_eq!(inter_node_messages(nodes, "binbin"), 2 * (k - 1), "{nodes:?}");
        assert_eq!(inter_node_messages(nodes, "binstar"), 2 * (k - 1), "{nodes:?}");
        let flat = inter_node_messages(nodes, "flat");
        assert!(flat > 2 * (k - 1) || nodes.len() <= 4 && flat >= 2 * (k - 1), "{nodes:?}: flat {flat}");
    }
}
