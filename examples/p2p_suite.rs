//! Point-to-point conformance suite, run by `tests/p2p.rs` under `weft-run -n 4` (and under
//! `mpirun`): ring exchange from 0 B to 64 MiB, wildcard stress with a non-overtaking check,
//! a randomized eager/rendezvous mix, windows of rendezvous messages both ways between rank
//! pairs (into distinct buffers and all into one), probe, waitany/testall, dup/split traffic.
//! Prints `p2p_suite: rank R OK` on success; exits non-zero with a message otherwise.

use weft::{Comm, Weft, ANY_SOURCE, ANY_TAG};

fn fail(msg: String) -> ! {
    eprintln!("p2p_suite: FAILED: {msg}");
    std::process::exit(1);
}

fn check(cond: bool, msg: impl FnOnce() -> String) {
    if !cond {
        fail(msg());
    }
}

/// Deterministic byte pattern for (src, size, index).
fn pat(src: u32, size: usize, i: usize) -> u8 {
    (i as u32).wrapping_mul(31).wrapping_add(src * 7 + size as u32) as u8
}

fn ring(w: &Weft, c: &Comm) -> weft::Result<()> {
    let (me, n) = (c.rank(), c.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let mut sizes: Vec<usize> = vec![0, 1, 3, 8, 63, 64, 1000, 4095, 4096, 16383, 16384, 16385, 100_000];
    let mut s = 1 << 17;
    while s <= 64 << 20 {
        sizes.push(s);
        s <<= 2;
    }
    sizes.push((64 << 20) - 1);
    for &size in &sizes {
        let sbuf: Vec<u8> = (0..size).map(|i| pat(me, size, i)).collect();
        let mut rbuf = vec![0u8; size];
        let st = w.scope(|sc| {
            let r = c.irecv(sc, &mut rbuf, prev as i32, 11)?;
            let q = c.isend(sc, &sbuf, next, 11)?;
            weft::wait_all(&mut [r, q])
        })?;
        check(st[0].source == prev && st[0].count == size, || format!("ring status {:?} size {size}", st[0]));
        if let Some(i) = (0..size).find(|&i| rbuf[i] != pat(prev, size, i)) {
            fail(format!("ring size {size}: byte {i} wrong"));
        }
    }
    Ok(())
}

/// Every rank sends `per` messages to every other rank with tags 0..4 and sizes crossing the
/// eager limit; receivers take them with wildcards and check per-(source, tag) order.
fn wildcard_stress(w: &Weft, c: &Comm, seed: u64, per: usize) -> weft::Result<()> {
    let (me, n) = (c.rank(), c.size());
    let mut rng = seed ^ (me as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut msgs = Vec::new();
    for dst in (0..n).filter(|&d| d != me) {
        for seq in 0..per {
            let tag = (next() % 4) as i32;
            let len = match next() % 4 {
                0 => 8,
                1 => (next() % 2000) as usize + 8,
                2 => 16384 + (next() % 100) as usize,
                _ => (next() % 200_000) as usize + 8,
            };
            let mut b = vec![0u8; len];
            b[..4].copy_from_slice(&(seq as u32).to_le_bytes());
            b[4..8].copy_from_slice(&(tag as u32).to_le_bytes());
            for (i, x) in b[8..].iter_mut().enumerate() {
                *x = pat(me, seq, i);
            }
            msgs.push((dst, tag, b));
        }
    }
    let expect = per * (n as usize - 1);
    let mut last = vec![vec![-1i64; 4]; n as usize];
    let mut rbuf = vec![0u8; 300_000];
    w.scope(|sc| -> weft::Result<()> {
        let mut reqs = Vec::new();
        for (dst, tag, b) in &msgs {
            reqs.push(c.isend(sc, b, *dst, *tag)?);
        }
        for _ in 0..expect {
            let st = c.recv(&mut rbuf, ANY_SOURCE, ANY_TAG)?;
            let seq = u32::from_le_bytes(rbuf[..4].try_into().unwrap()) as i64;
            let tag = u32::from_le_bytes(rbuf[4..8].try_into().unwrap()) as i32;
            check(tag == st.tag, || format!("tag in payload {tag} != status {}", st.tag));
            let prev = &mut last[st.source as usize][tag as usize];
            check(seq > *prev, || {
                format!("non-overtaking violated: src {} tag {tag} seq {seq} after {prev}", st.source)
            });
            *prev = seq;
            if let Some(i) = (8..st.count).find(|&i| rbuf[i] != pat(st.source, seq as usize, i - 8)) {
                fail(format!("wildcard payload byte {i} wrong from {}", st.source));
            }
        }
        weft::wait_all(&mut reqs)?;
        Ok(())
    })?;
    c.barrier()
}

fn probes_and_completion(w: &Weft, c: &Comm) -> weft::Result<()> {
    let (me, n) = (c.rank(), c.size());
    if me == 0 {
        let mut got = vec![false; n as usize];
        for _ in 1..n {
            let st = c.probe(ANY_SOURCE, 5)?;
            let mut b = vec![0u8; st.count];
            let st2 = c.recv(&mut b, st.source as i32, 5)?;
            check(st2 == st && b.len() == st.source as usize * 10, || format!("probe {st:?} recv {st2:?}"));
            got[st.source as usize] = true;
        }
        check(got[1..].iter().all(|&g| g), || "probe missed a sender".into());
        check(c.iprobe(ANY_SOURCE, 5)?.is_none(), || "iprobe found a ghost".into());
    } else {
        c.send(&vec![me as u8; me as usize * 10], 0, 5)?;
    }
    // waitany / testall over a fan-in to rank 0.
    let mut bufs = vec![[0u8; 4]; n as usize];
    let mine = me.to_le_bytes();
    w.scope(|sc| -> weft::Result<()> {
        if me == 0 {
            let mut reqs = Vec::new();
            for (r, b) in bufs.iter_mut().enumerate().skip(1) {
                reqs.push(c.irecv(sc, b, r as i32, 6)?);
            }
            let mut seen = 0;
            while seen < reqs.len() {
                let (i, st) = weft::wait_any(&mut reqs)?;
                check(st.source as usize == i + 1, || format!("waitany index {i} source {}", st.source));
                seen += 1;
            }
        } else {
            let mut r = [c.isend(sc, &mine, 0, 6)?];
            while weft::test_all(&mut r)?.is_none() {}
        }
        Ok(())
    })?;
    if me == 0 {
        check(bufs.iter().enumerate().skip(1).all(|(r, b)| u32::from_le_bytes(*b) == r as u32), || {
            "fan-in data".into()
        });
    }
    c.barrier()
}

fn communicators(c: &Comm) -> weft::Result<()> {
    let (me, n) = (c.rank(), c.size());
    let d = c.dup()?;
    let half = c.split((me % 2) as i32, me as i32)?.expect("colored");
    let (hr, hn) = (half.rank(), half.size());
    let mut b = [0u8; 4];
    // Same tag on three communicators: each message must arrive on its own.
    half.send(&(100 + me).to_le_bytes(), (hr + 1) % hn, 0)?;
    d.send(&(200 + me).to_le_bytes(), (me + 1) % n, 0)?;
    c.send(&(300 + me).to_le_bytes(), (me + 1) % n, 0)?;
    c.recv(&mut b, ANY_SOURCE, 0)?;
    check(u32::from_le_bytes(b) == 300 + (me + n - 1) % n, || "world message crossed".into());
    d.recv(&mut b, ANY_SOURCE, 0)?;
    check(u32::from_le_bytes(b) == 200 + (me + n - 1) % n, || "dup message crossed".into());
    half.recv(&mut b, ANY_SOURCE, 0)?;
    check(u32::from_le_bytes(b) >= 100 && u32::from_le_bytes(b) < 200, || "split message crossed".into());
    half.free()?;
    d.barrier()?;
    d.free()?;
    Ok(())
}

/// Ranks 2k and 2k+1 exchange windows of `WIN` messages both ways (each rank has rendezvous
/// sends of its own waiting for the peer while it reads the peer's), every message with its
/// own content: into distinct buffers (each checked), then all into one buffer
/// ([`Comm::irecv_same`], as OSU's bandwidth benchmarks do: it ends holding one of them).
fn bidir_windows(w: &Weft, c: &Comm) -> weft::Result<()> {
    const WIN: usize = 24;
    let me = c.rank();
    let peer = me ^ 1;
    if peer >= c.size() {
        return Ok(());
    }
    let content = |src: u32, size: usize, k: usize| -> Vec<u8> {
        (0..size).map(|i| pat(src, size, i).wrapping_add(k as u8)).collect()
    };
    for size in [20_000usize, 100_000, 300_000, (1 << 20) + 1] {
        let sbufs: Vec<Vec<u8>> = (0..WIN).map(|k| content(me, size, k)).collect();
        let mut rbuf = vec![0u8; size * WIN];
        let st = w.scope(|sc| {
            let mut reqs = Vec::new();
            for chunk in rbuf.chunks_mut(size) {
                reqs.push(c.irecv(sc, chunk, peer as i32, 12)?);
            }
            for b in &sbufs {
                reqs.push(c.isend(sc, b, peer, 12)?);
            }
            weft::wait_all(&mut reqs)
        })?;
        for (k, chunk) in rbuf.chunks(size).enumerate() {
            check(st[k].source == peer && st[k].count == size, || {
                format!("window status {:?} size {size}", st[k])
            });
            check(chunk == content(peer, size, k).as_slice(), || {
                format!("window size {size}: message {k} wrong")
            });
        }
        let mut one = vec![0u8; size];
        let st = w.scope(|sc| {
            let mut reqs = c.irecv_same(sc, &mut one, WIN, peer as i32, 13)?;
            for b in &sbufs {
                reqs.push(c.isend(sc, b, peer, 13)?);
            }
            weft::wait_all(&mut reqs)
        })?;
        check(st.len() == 2 * WIN, || format!("same-buffer window: {} statuses", st.len()));
        for s in &st[..WIN] {
            check(s.source == peer && s.count == size, || format!("same-buffer status {s:?} size {size}"));
        }
        check((0..WIN).any(|k| one == content(peer, size, k)), || {
            format!("same-buffer window size {size}: the buffer holds none of the messages")
        });
    }
    Ok(())
}

fn main() {
    let w = match weft::init() {
        Ok(w) => w,
        Err(e) => fail(format!("init: {e}")),
    };
    let c = w.world();
    let seed: u64 = std::env::var("P2P_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let per: usize = std::env::var("P2P_PER").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let run = || -> weft::Result<()> {
        ring(&w, &c)?;
        wildcard_stress(&w, &c, seed, per)?;
        bidir_windows(&w, &c)?;
        probes_and_completion(&w, &c)?;
        communicators(&c)?;
        c.barrier()
    };
    if let Err(e) = run() {
        fail(format!("rank {}: {e}", c.rank()));
    }
    let tr = if c.size() > 1 { c.transport_to((c.rank() + 1) % c.size()).unwrap_or("?") } else { "self" };
    let counts: Vec<String> = w.messages_by_transport().iter().map(|(n, c)| format!("{n}={c}")).collect();
    let st = w.stats();
    println!(
        "p2p_suite: rank {} OK (backend {}, transport to next {tr}, seed {seed}) received by rendezvous [all={} split={}] sent [{}]",
        c.rank(),
        w.runtime_backend(),
        st.rndv_gets,
        st.split_rndv,
        counts.join(" ")
    );
    if let Err(e) = w.finalize() {
        fail(format!("finalize: {e}"));
    }
}
