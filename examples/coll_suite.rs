//! Multi-process collectives suite, run by `tests/coll.rs` under `weft-run`.
//!
//! Modes (first argument):
//! - `all`: every collective × every algorithm, counts 0, 1, 7 and 3000 (rendezvous), roots
//!   0 and n−1, against closed-form expected values; MINLOC and a user operation;
//! - `overlap`: several non-blocking collectives outstanding on different communicators,
//!   completed in reverse / any order;
//! - `errors`: invalid root, short buffers, count and root mismatches give typed errors;
//! - `icount BENCH ITERS`: ITERS calls of one 8-byte collective (`allreduce`, `barrier`,
//!   `bcast`, or `pingpong` for a point-to-point send+receive round trip), for instruction
//!   counting under `valgrind --tool=callgrind` (run it twice with different ITERS and take
//!   the difference per call);
//! - `counter`: prints `counter <alg> <messages>`: messages sent over the network
//!   transport ("ofi") by one small allreduce, summed over ranks (rank 0 prints).

use weft::coll::{Alg, DoubleInt, Kind, Op};
use weft::{Comm, EngineError, Error};

/// Result of a suite step (the first error ends the run).
type SuiteResult<T> = Result<T, Error>;

fn check(ok: bool, what: impl FnOnce() -> String) {
    if !ok {
        eprintln!("FAIL: {}", what());
        std::process::exit(3);
    }
}

fn v(r: u32, i: usize) -> i64 {
    r as i64 * 1000 + i as i64
}

fn sum_over(ranks: impl Iterator<Item = u32>, f: impl Fn(u32) -> i64) -> i64 {
    ranks.map(f).sum()
}

fn displs(c: &[usize]) -> Vec<usize> {
    let mut d = vec![0; c.len()];
    for i in 1..c.len() {
        d[i] = d[i - 1] + c[i - 1] + 1; // one-element gaps
    }
    d
}

fn one(w: &Comm, kind: Kind, k: usize, root: u32) -> SuiteResult<()> {
    let (me, n) = (w.rank(), w.size());
    let nu = n as usize;
    let tag = || format!("{} count {k} root {root} rank {me}/{n}", kind.name());
    match kind {
        Kind::Barrier => w.barrier()?,
        Kind::Bcast => {
            let mut b: Vec<i64> = (0..k).map(|i| if me == root { v(root, i) } else { -1 }).collect();
            w.bcast(&mut b, root)?;
            check(b.iter().enumerate().all(|(i, &x)| x == v(root, i)), tag);
        }
        Kind::Reduce | Kind::Allreduce => {
            let s: Vec<i64> = (0..k).map(|i| v(me, i)).collect();
            let mut d = vec![0i64; k];
            if kind == Kind::Reduce {
                w.reduce(&s, &mut d, Op::Sum, root)?;
            } else {
                w.allreduce(&s, &mut d, Op::Sum)?;
            }
            if kind == Kind::Allreduce || me == root {
                check(d.iter().enumerate().all(|(i, &x)| x == sum_over(0..n, |r| v(r, i))), tag);
            }
        }
        Kind::Scan | Kind::Exscan => {
            let s: Vec<i64> = (0..k).map(|i| v(me, i)).collect();
            let mut d = vec![0i64; k];
            if kind == Kind::Scan {
                w.scan(&s, &mut d, Op::Sum)?;
                check(d.iter().enumerate().all(|(i, &x)| x == sum_over(0..=me, |r| v(r, i))), tag);
            } else {
                w.exscan(&s, &mut d, Op::Sum)?;
                check(me == 0 || d.iter().enumerate().all(|(i, &x)| x == sum_over(0..me, |r| v(r, i))), tag);
            }
        }
        Kind::Gather | Kind::Allgather => {
            let s: Vec<i64> = (0..k).map(|i| v(me, i)).collect();
            let mut d = vec![0i64; k * nu];
            if kind == Kind::Gather {
                w.gather(&s, &mut d, root)?;
            } else {
                w.allgather(&s, &mut d)?;
            }
            if kind == Kind::Allgather || me == root {
                check((0..nu * k).all(|j| d[j] == v((j / k) as u32, j % k)), tag);
            }
        }
        Kind::Scatter => {
            let s: Vec<i64> = if me == root { (0..k * nu).map(|j| v(root, j)).collect() } else { vec![] };
            let mut d = vec![0i64; k];
            w.scatter(&s, &mut d, root)?;
            check(d.iter().enumerate().all(|(i, &x)| x == v(root, me as usize * k + i)), tag);
        }
        Kind::Alltoall => {
            let s: Vec<i64> = (0..k * nu).map(|j| v(me, j)).collect();
            let mut d = vec![0i64; k * nu];
            w.alltoall(&s, &mut d)?;
            check((0..nu * k).all(|j| d[j] == v((j / k) as u32, me as usize * k + j % k)), tag);
        }
        Kind::ReduceScatterBlock => {
            let s: Vec<i64> = (0..k * nu).map(|j| v(me, j)).collect();
            let mut d = vec![0i64; k];
            w.reduce_scatter_block(&s, &mut d, Op::Sum)?;
            check(
                d.iter().enumerate().all(|(i, &x)| x == sum_over(0..n, |r| v(r, me as usize * k + i))),
                tag,
            );
        }
        Kind::ReduceScatter => {
            let counts: Vec<usize> = (0..nu).map(|q| (q + k) % 3 + k / 2).collect();
            let total: usize = counts.iter().sum();
            let off: usize = counts[..me as usize].iter().sum();
            let s: Vec<i64> = (0..total).map(|j| v(me, j)).collect();
            let mut d = vec![0i64; counts[me as usize]];
            w.reduce_scatter(&s, &mut d, &counts, Op::Sum)?;
            check(d.iter().enumerate().all(|(i, &x)| x == sum_over(0..n, |r| v(r, off + i))), tag);
        }
        Kind::Gatherv | Kind::Allgatherv => {
            let counts: Vec<usize> = (0..nu).map(|q| (q + k) % 3 + k / 2).collect();
            let dsp = displs(&counts);
            let s: Vec<i64> = (0..counts[me as usize]).map(|i| v(me, i)).collect();
            let mut d = vec![-7i64; dsp[nu - 1] + counts[nu - 1]];
            if kind == Kind::Gatherv {
                w.gatherv(&s, &mut d, &counts, &dsp, root)?;
            } else {
                w.allgatherv(&s, &mut d, &counts, &dsp)?;
            }
            if kind == Kind::Allgatherv || me == root {
                check((0..nu).all(|q| (0..counts[q]).all(|i| d[dsp[q] + i] == v(q as u32, i))), tag);
            }
        }
        Kind::Scatterv => {
            let counts: Vec<usize> = (0..nu).map(|q| (q + k) % 3 + k / 2).collect();
            let dsp = displs(&counts);
            let s: Vec<i64> = if me == root {
                (0..dsp[nu - 1] + counts[nu - 1]).map(|j| v(root, j)).collect()
            } else {
                vec![]
            };
            let mut d = vec![0i64; counts[me as usize]];
            w.scatterv(&s, &counts, &dsp, &mut d, root)?;
            check(d.iter().enumerate().all(|(i, &x)| x == v(root, dsp[me as usize] + i)), tag);
        }
        Kind::Alltoallv => {
            let cnt = |from: usize, to: usize| (from + 2 * to + k) % 3 + k / 2;
            let sc: Vec<usize> = (0..nu).map(|j| cnt(me as usize, j)).collect();
            let rc: Vec<usize> = (0..nu).map(|j| cnt(j, me as usize)).collect();
            let (sd, rdp) = (displs(&sc), displs(&rc));
            let s: Vec<i64> = (0..sd[nu - 1] + sc[nu - 1]).map(|j| v(me, j)).collect();
            let mut d = vec![0i64; rdp[nu - 1] + rc[nu - 1]];
            w.alltoallv(&s, &sc, &sd, &mut d, &rc, &rdp)?;
            // What rank j sent me starts at its displacement for me.
            let ok = (0..nu).all(|j| {
                let jsd = displs(&(0..nu).map(|t| cnt(j, t)).collect::<Vec<_>>());
                (0..rc[j]).all(|i| d[rdp[j] + i] == v(j as u32, jsd[me as usize] + i))
            });
            check(ok, tag);
        }
    }
    Ok(())
}

fn all(w: &Comm) -> SuiteResult<()> {
    let n = w.size();
    let mut runs = 0;
    for kind in Kind::ALL {
        for alg in std::iter::once(None).chain(weft_coll_valid(kind).into_iter().map(Some)) {
            w.set_info(&format!("coll_{}", kind.name()), alg.map_or("auto", |a: Alg| a.name()))?;
            for k in [0usize, 1, 7, 3000] {
                for root in [0, n - 1] {
                    one(w, kind, k, root)?;
                    runs += 1;
                }
            }
        }
    }
    // MINLOC on (f64, index) pairs and a non-commutative user operation (keep the left).
    let mine = [DoubleInt::new(-(w.rank() as f64 % 3.0), w.rank() as i32)];
    let mut out = [DoubleInt::default()];
    w.allreduce(&mine, &mut out, Op::MinLoc)?;
    check(out[0].value == -(((n - 1).min(2)) as f64) && out[0].index == (n - 1).min(2) as i32, || {
        format!("minloc {:?}", out[0])
    });
    let first = Op::user(false, |_a: &[u8], _b: &mut [u8], _n| {
        // inout = input ∘ inout with x ∘ y = x: copy the input (the lower rank's value).
        _b.copy_from_slice(_a);
    });
    let mut o = [0u32; 3];
    w.allreduce(&[w.rank() + 5; 3], &mut o, first)?;
    check(o == [5; 3], || format!("user op {o:?}"));
    if w.rank() == 0 {
        println!("all ok: {runs} collective runs on {n} ranks");
    }
    Ok(())
}

fn weft_coll_valid(k: Kind) -> Vec<Alg> {
    Alg::ALL.into_iter().filter(|a| weft::coll::Overrides::default().set(k, a.name()).is_ok()).collect()
}

fn overlap(wf: &weft::Weft, w: &Comm) -> SuiteResult<()> {
    let comms: Vec<Comm> = (0..3).map(|_| w.dup()).collect::<SuiteResult<_>>()?;
    let (me, n) = (w.rank() as i64, w.size() as i64);
    let a: Vec<i64> = (0..5).map(|i| me + i).collect();
    let b: Vec<i64> = (0..4000).map(|i| me * i).collect();
    let c = [me as u32];
    let (mut ra, mut rb, mut rc) = (vec![0i64; 5], vec![0i64; 4000], vec![0u32; n as usize]);
    let mut bc: Vec<u8> = if me == 1 % n { vec![9; 100] } else { vec![0; 100] };
    wf.scope(|s| -> SuiteResult<()> {
        let mut reqs = vec![
            comms[0].iallreduce(s, &a, &mut ra, Op::Sum)?,
            comms[1].iallreduce(s, &b, &mut rb, Op::Max)?,
            comms[2].iallgather(s, &c, &mut rc)?,
            comms[0].ibcast(s, &mut bc, (1 % n) as u32)?,
            comms[1].ibarrier(s)?,
        ];
        // Odd ranks complete them in reverse order, even ranks in whatever order they finish.
        // A watchdog dumps the engine state if this takes far too long (diagnosing a hang).
        let t0 = std::time::Instant::now();
        while !reqs.is_empty() {
            let i = if me % 2 == 1 { reqs.len() - 1 } else { 0 };
            let mut done = None;
            for (k, r) in reqs.iter_mut().enumerate().skip(i) {
                if r.test()?.is_some() {
                    done = Some(k);
                    break;
                }
                if me % 2 == 1 {
                    break;
                }
            }
            if let Some(k) = done {
                reqs.remove(k);
            }
            if t0.elapsed() > std::time::Duration::from_secs(15) {
                eprintln!(
                    "overlap: rank {me} stuck with {} requests left:\n{}",
                    reqs.len(),
                    wf.debug_state()
                );
                std::process::exit(3);
            }
        }
        Ok(())
    })?;
    check(ra.iter().enumerate().all(|(i, &x)| x == n * (n - 1) / 2 + n * i as i64), || {
        "overlap allreduce".into()
    });
    check(rb.iter().enumerate().all(|(i, &x)| x == (n - 1) * i as i64), || "overlap max".into());
    check(rc.iter().enumerate().all(|(i, &x)| x == i as u32), || "overlap allgather".into());
    check(bc.iter().all(|&x| x == 9), || "overlap bcast".into());
    if me == 0 {
        println!("overlap ok");
    }
    Ok(())
}

fn is_mismatch(e: &Error) -> bool {
    matches!(e.engine(), Some(EngineError::InvalidArg(m)) if m.contains("mismatch"))
}

fn errors(w: &Comm) -> SuiteResult<()> {
    let (me, n) = (w.rank(), w.size());
    let mut b = [0u8; 4];
    let e = w.bcast(&mut b, n + 3).unwrap_err();
    check(matches!(e.engine(), Some(EngineError::InvalidRank { .. })), || format!("invalid root: {e}"));
    let mut short = [0i32; 2];
    let e = w.allreduce(&[1i32; 4], &mut short, Op::Sum).unwrap_err();
    check(matches!(e.engine(), Some(EngineError::InvalidArg(_))), || format!("short buffer: {e}"));
    let e = w.allreduce(&[1.0f64; 4], &mut [0.0; 4], Op::Bxor).unwrap_err();
    check(matches!(e.engine(), Some(EngineError::InvalidArg(_))), || format!("op/type: {e}"));
    let e = w.set_info("coll_allreduce", "nosuch").unwrap_err();
    check(matches!(e.engine(), Some(EngineError::InvalidArg(_))), || format!("bad alg: {e}"));
    w.barrier()?;
    // Count mismatch: the last rank (a leaf of the binomial tree) passes fewer elements.
    w.set_info("coll_bcast", "binomial")?;
    for len in [16usize, 40000] {
        let mut buf = vec![1u8; if me == n - 1 { len - 5 } else { len }];
        let r = w.bcast(&mut buf, 0);
        if me == n - 1 {
            check(r.as_ref().is_err_and(is_mismatch), || format!("count mismatch len {len}: {r:?}"));
        } else {
            check(r.is_ok(), || format!("rank {me}: {r:?}"));
        }
        w.barrier()?;
    }
    // Root mismatch that reaches a rank: the last rank names its own parent as root.
    let parent = {
        let rel = n - 1;
        rel & (rel - 1)
    };
    if n > 2 && parent != 0 {
        let mut buf = [0u8; 8];
        let r = w.bcast(&mut buf, if me == n - 1 { parent } else { 0 });
        if me == n - 1 {
            check(r.as_ref().is_err_and(is_mismatch), || format!("root mismatch: {r:?}"));
        }
        w.barrier()?;
    }
    // Still usable.
    let mut x = [me as u64];
    w.allreduce_inplace(&mut x, Op::Sum)?;
    check(x[0] == (n as u64) * (n as u64 - 1) / 2, || "after errors".into());
    if me == 0 {
        println!("errors ok");
    }
    Ok(())
}

fn counter(wf: &weft::Weft, w: &Comm) -> SuiteResult<()> {
    let ofi = |wf: &weft::Weft| -> u64 {
        wf.messages_by_transport().iter().filter(|(t, _)| *t == "ofi").map(|x| x.1).sum()
    };
    for alg in ["binbin", "binstar", "flat", "binomial", "recdbl"] {
        w.set_info("coll_allreduce", alg)?;
        let s = [w.rank() as i64];
        let mut d = [0i64];
        w.allreduce(&s, &mut d, Op::Sum)?; // warm-up (connections)
        w.barrier()?;
        let before = ofi(wf);
        w.allreduce(&s, &mut d, Op::Sum)?;
        let delta = ofi(wf) - before;
        w.barrier()?;
        w.set_info("coll_allreduce", "recdbl")?;
        let mut total = [0u64];
        w.allreduce(&[delta], &mut total, Op::Sum)?;
        if w.rank() == 0 {
            println!("counter {alg} {}", total[0]);
        }
    }
    Ok(())
}

/// OSU-method latency (same as `benches/peers/osu_coll.c`): allreduce (f32 sum), barrier
/// (the collectives engine's), bcast; per-rank average over `iters`, averaged over ranks,
/// median of 5 repetitions; rank 0 prints `bench,size,weft,us,us`.
fn lat(w: &Comm) -> SuiteResult<()> {
    let iters = 10000;
    let (s, mut r) = (vec![1.0f32; 2], vec![0.0f32; 2]);
    let mut b = [0u8; 8];
    for bench in ["allreduce", "barrier", "bcast"] {
        let sizes: Vec<usize> = match bench {
            "barrier" => vec![0],
            "allreduce" => vec![4, 8],
            _ => vec![1, 2, 4, 8],
        };
        for size in sizes {
            let mut v = Vec::new();
            for _ in 0..5 {
                let mut t0 = std::time::Instant::now();
                for i in 0..iters + iters / 10 {
                    if i == iters / 10 {
                        w.barrier()?;
                        t0 = std::time::Instant::now();
                    }
                    match bench {
                        "allreduce" => w.allreduce(&s[..size / 4], &mut r[..size / 4], Op::Sum)?,
                        "barrier" => w.barrier()?,
                        _ => w.bcast(&mut b[..size], 0)?,
                    }
                }
                let mine = [t0.elapsed().as_secs_f64() * 1e6 / iters as f64];
                let mut sum = [0.0f64];
                w.reduce(&mine, &mut sum, Op::Sum, 0)?;
                v.push(sum[0] / w.size() as f64);
            }
            v.sort_by(|a, b| a.total_cmp(b));
            if w.rank() == 0 {
                println!("{bench},{size},weft,{:.3},us", v[2]);
            }
        }
    }
    Ok(())
}

/// `icount BENCH ITERS`: see the module documentation.
fn icount(w: &Comm) -> SuiteResult<()> {
    let mut args = std::env::args().skip(2);
    let bench = args.next().unwrap_or_else(|| "allreduce".into());
    let iters: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let (s, mut r) = ([1.0f32; 2], [0.0f32; 2]);
    let mut b = [0u8; 8];
    let peer = 1 - w.rank().min(1);
    w.barrier()?;
    for _ in 0..iters {
        match bench.as_str() {
            "allreduce" => w.allreduce(&s, &mut r, Op::Sum)?,
            "barrier" => w.barrier()?,
            "bcast" => w.bcast(&mut b, 0)?,
            _ if w.rank() == 0 => {
                w.send(&b, peer, 1)?;
                w.recv(&mut b, peer as i32, 1)?;
            }
            _ if w.rank() == 1 => {
                w.recv(&mut b, peer as i32, 1)?;
                w.send(&b, peer, 1)?;
            }
            _ => {}
        }
    }
    w.barrier()?;
    check(bench != "allreduce" || r[0] == w.size() as f32, || format!("allreduce gave {r:?}"));
    Ok(())
}

fn main() {
    let wf = weft::init().expect("init");
    let w = wf.world();
    let mode = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let r = match mode.as_str() {
        "all" => all(&w),
        "overlap" => overlap(&wf, &w),
        "errors" => errors(&w),
        "counter" => counter(&wf, &w),
        "lat" => lat(&w),
        "icount" => icount(&w),
        m => {
            eprintln!("unknown mode {m}");
            std::process::exit(2)
        }
    };
    if let Err(e) = r {
        eprintln!("rank {}: {e}", w.rank());
        std::process::exit(1);
    }
    wf.finalize().expect("finalize");
}
