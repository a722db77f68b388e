//! Multi-process tests of the libfabric transport over `tcp;ofi_rxm` on loopback (`lo`), or the
//! providers listed in `WEFT_FI_TEST_PROVIDER` (e.g. `net`, or `net,tcp;ofi_rxm`):
//! eager traffic and per-peer FIFO, a 64 MiB zero-copy rendezvous read, SIGKILL of a peer
//! with reads in flight, the engine end to end, and an 8-byte ping-pong (printed).
//!
//! Each test re-executes this binary as child processes (`child_main` dispatches on the
//! environment) under a watchdog.

mod common;

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use common::*;
use weft_engine::transport::{class, GetStatus, Header, RKey, Transport, TransportError};
use weft_engine::{Engine, EngineConfig};
use weft_fabric::{OfiConfig, OfiTransport};

const CHILD_ARGS: &[&str] = &["child_main", "--exact", "--nocapture", "--test-threads=1"];
const WATCHDOG: Duration = Duration::from_secs(90);
const BIG: usize = 64 << 20;
/// Bound on failure detection asserted by the kill phase.
const DETECT_BOUND: Duration = Duration::from_secs(10);

#[test]
fn child_main() {
    let Some(c) = child_env() else { return };
    match c.role.as_str() {
        "traffic" => traffic(&c),
        "pingpong" => pingpong(&c),
        "engine" => engine_child(&c),
        "sendonly" => sendonly_child(&c),
        r => panic!("unknown role {r}"),
    }
}

const SIZES: &[usize] = &[0, 1, 7, 8, 39, 40, 41, 64, 100, 1000, 4095, 4096, 4097, 8192, 12345, 16383, 16384];

fn size_of_msg(seq: u32) -> usize {
    if seq & 1 == 0 {
        SIZES[(seq as usize / 2) % SIZES.len()]
    } else {
        (seq as usize).wrapping_mul(7919) % 16385
    }
}

fn byte(src: u32, seq: u32, k: usize) -> u8 {
    (src.wrapping_mul(31) ^ seq.wrapping_mul(7)).wrapping_add(k as u32) as u8
}

fn fill(buf: &mut [u8], src: u32, seq: u32) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = byte(src, seq, k);
    }
}

fn check(p: &[u8], src: u32, seq: u32) {
    for (k, b) in p.iter().enumerate() {
        assert_eq!(*b, byte(src, seq, k), "payload byte {k} of msg {seq} from {src}");
    }
}

fn word(rank: u32, i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (rank as u64) << 56
}

fn key_of(p: &[u8]) -> RKey {
    p[..32].try_into().unwrap()
}

fn traffic(c: &ChildEnv) {
    let me = c.rank;
    let n = c.n;
    // 8 MiB read chunks: the 64 MiB get is split into 8 reads completing one token.
    let cfg = OfiConfig { read_chunk: 8 << 20, rx_buffers: 64, tx_buffers: 32, ..lo_cfg(c) };
    let mut t = bootstrap(c, &cfg);
    if me == 0 {
        eprintln!(
            "ofi: provider {} domain {} inject {} mr_mode {:?} read_chunk {}",
            t.provider(),
            t.domain(),
            t.inject_size(),
            t.mr_mode(),
            t.read_chunk()
        );
    }
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;

    // Phase 1: ring, M messages of 0..=16 KiB to the next rank.
    const M: u32 = 3000;
    let recv = Cell::new(0u32);
    let mut sink = |src: u32, h: &Header, p: &[u8]| {
        let seq = recv.get();
        assert_eq!(src, prev);
        assert_eq!(h.tag as u32, seq, "FIFO order from {src}");
        assert_eq!(h.src, src);
        assert_eq!(h.len as usize, p.len());
        assert_eq!(p.len(), size_of_msg(seq));
        check(p, src, seq);
        recv.set(seq + 1);
    };
    let mut buf = vec![0u8; 16384];
    for seq in 0..M {
        let len = size_of_msg(seq);
        fill(&mut buf[..len], me, seq);
        let h =
            Header { class: class::EAGER, src: me, tag: seq as i32, len: len as u64, ..Header::default() };
        send_blocking(&mut t, next, &h, &buf[..len], &mut sink);
    }
    let t0 = Instant::now();
    while recv.get() < M {
        t.poll(64, &mut sink);
        assert!(t0.elapsed() < Duration::from_secs(30), "ring stuck at {}", recv.get());
    }
    eprintln!("rank {me}: ring phase ok ({M} messages, {:?})", t.stats());
    barrier_polling(c, &mut t, "phase1", n);

    // Phase 2: all-to-all, K messages to every other rank; per-source FIFO.
    const K: u32 = 2000;
    let seen = RefCell::new(vec![0u32; n as usize]);
    let mut sink2 = |src: u32, h: &Header, p: &[u8]| {
        let mut s = seen.borrow_mut();
        let seq = s[src as usize];
        assert_eq!(h.tag as u32, seq, "FIFO order from {src}");
        assert_eq!(p.len(), (seq as usize * 13) % 3000);
        check(p, src, seq);
        s[src as usize] = seq + 1;
    };
    for seq in 0..K {
        for d in 1..n {
            let dst = (me + d) % n;
            let len = (seq as usize * 13) % 3000;
            fill(&mut buf[..len], me, seq);
            let h = Header {
                class: class::EAGER,
                src: me,
                tag: seq as i32,
                len: len as u64,
                ..Header::default()
            };
            send_blocking(&mut t, dst, &h, &buf[..len], &mut sink2);
        }
    }
    let t0 = Instant::now();
    while seen.borrow().iter().enumerate().any(|(r, s)| r as u32 != me && *s < K) {
        t.poll(7, &mut sink2);
        assert!(t0.elapsed() < Duration::from_secs(30), "all-to-all stuck");
    }
    eprintln!("rank {me}: all-to-all phase ok ({} messages per peer)", K);
    barrier_polling(c, &mut t, "phase2", n);

    // Phase 3: 64 MiB rendezvous read from the previous rank, zero-copy on both sides.
    let words = BIG / 8;
    let src: Vec<u64> = (0..words).map(|i| word(me, i)).collect();
    let before = t.stats().clone();
    let key = t.expose(next, src.as_ptr() as *const u8, BIG).unwrap();
    assert_eq!(t.stats().last_expose, (src.as_ptr() as usize, BIG), "the user buffer itself is registered");
    assert!(t.is_registered(src.as_ptr() as *const u8, BIG));
    let got_rts: RefCell<Option<RKey>> = RefCell::new(None);
    let got_fin = Cell::new(false);
    let mut sink3 = |s: u32, h: &Header, p: &[u8]| match h.class {
        class::RTS => {
            assert_eq!(s, prev);
            *got_rts.borrow_mut() = Some(key_of(p));
        }
        class::FIN => {
            assert_eq!(s, next);
            got_fin.set(true);
        }
        c => panic!("unexpected class {c}"),
    };
    let h = Header { class: class::RTS, src: me, len: BIG as u64, ..Header::default() };
    send_blocking(&mut t, next, &h, &key, &mut sink3);
    let t0 = Instant::now();
    while got_rts.borrow().is_none() {
        t.poll(8, &mut sink3);
        assert!(t0.elapsed() < Duration::from_secs(30), "no RTS");
    }
    let k = got_rts.borrow().unwrap();
    let mut dst = vec![0u64; words];
    // SAFETY: dst is a live exclusive buffer of BIG bytes.
    let too_long = unsafe { t.get(prev, &k, dst.as_mut_ptr() as *mut u8, BIG + 1) };
    assert!(matches!(too_long, Err(TransportError::Invalid(_))));
    let tg = Instant::now();
    // SAFETY: as above; dst is not touched until the token is reported.
    let st = unsafe { t.get(prev, &k, dst.as_mut_ptr() as *mut u8, BIG) }.unwrap();
    let GetStatus::Pending(tok) = st else { panic!("expected a pending read") };
    let mut done = Vec::new();
    while done.is_empty() {
        t.poll(8, &mut sink3);
        t.poll_gets(&mut done);
        assert!(tg.elapsed() < Duration::from_secs(30), "64 MiB read stuck");
    }
    let dt = tg.elapsed();
    assert_eq!(done, vec![(tok, Ok(()))]);
    for (i, w) in dst.iter().enumerate() {
        assert_eq!(*w, word(prev, i), "word {i}");
    }
    let fin = Header { class: class::FIN, src: me, ..Header::default() };
    send_blocking(&mut t, prev, &fin, &[], &mut sink3);
    let t0 = Instant::now();
    while !got_fin.get() {
        t.poll(8, &mut sink3);
        assert!(t0.elapsed() < Duration::from_secs(30), "no FIN");
    }
    let after = t.stats().clone();
    // Only the RTS (24 + 32 bytes) and the FIN (24 bytes) were copied; both fit fi_tinject.
    assert_eq!(after.pool_sends, before.pool_sends, "send pool unused by the rendezvous");
    assert_eq!(after.bytes_copied - before.bytes_copied, (24 + 32) + 24, "no payload byte copied");
    assert_eq!(after.read_bytes - before.read_bytes, BIG as u64);
    assert_eq!(after.reads_posted - before.reads_posted, 8, "split into 8 reads of 8 MiB");
    eprintln!(
        "rank {me}: 64 MiB rendezvous read ok ({:.2} GB/s, {} reads)",
        BIG as f64 / dt.as_secs_f64() / 1e9,
        after.reads_posted - before.reads_posted
    );
    t.unexpose(next, &key);
    drop(dst);
    barrier_polling(c, &mut t, "phase3", n);

    // Phase 4: the last rank exposes a buffer to every survivor, then stops making progress;
    // survivors post a 64 MiB read from it (it cannot complete: the victim does not progress),
    // then the parent SIGKILLs the victim and survivors must see the failure within
    // DETECT_BOUND: the read reported failed by poll_gets, and/or poll_failures.
    let victim = n - 1;
    if me == victim {
        for s in 0..victim {
            let key = t.expose(s, src.as_ptr() as *const u8, BIG).unwrap();
            let h = Header { class: class::RTS, src: me, len: BIG as u64, ..Header::default() };
            send_blocking(&mut t, s, &h, &key, &mut |_, _, _| {});
        }
        // Make sure the RTSs left (injects are buffered by the provider): drive progress a bit.
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(300) {
            t.poll(8, &mut |_, _, _| {});
        }
        put_file(&c.dir, &format!("armed.{me}"), b"");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let vkey: RefCell<Option<RKey>> = RefCell::new(None);
    let t0 = Instant::now();
    while vkey.borrow().is_none() {
        t.poll(8, &mut |s, h, p| {
            assert_eq!((s, h.class), (victim, class::RTS));
            *vkey.borrow_mut() = Some(key_of(p));
        });
        assert!(t0.elapsed() < Duration::from_secs(30), "no RTS from the victim");
    }
    let mut f = Vec::new();
    t.poll_failures(&mut f);
    assert!(f.is_empty(), "spurious failures {f:?}");
    put_file(&c.dir, &format!("armed.{me}"), b"");
    // A survivor that gets ahead may already send the ring token of the last phase.
    let early_token = Cell::new(false);
    let t0 = Instant::now();
    while !c.dir.join("killed").exists() {
        t.poll(8, &mut |s, h, _| {
            if s != victim {
                assert_eq!(h.tag, 777, "unexpected message from {s}");
                early_token.set(true);
            }
        });
        assert!(t0.elapsed() < Duration::from_secs(30), "no kill");
    }
    // The victim is dead but nothing told this transport: post a 64 MiB read from it.
    let mut dst = vec![0u64; words];
    // SAFETY: dst stays alive and untouched until the token is reported (or the process ends).
    let st = unsafe { t.get(victim, &vkey.borrow().unwrap(), dst.as_mut_ptr() as *mut u8, BIG) };
    eprintln!("rank {me}: get from the killed rank returned {st:?}");
    let tok = match st {
        Ok(GetStatus::Pending(tok)) => Some(tok),
        Err(TransportError::PeerDead(v)) if v == victim => None,
        other => panic!("unexpected get result {other:?}"),
    };
    let mut done = Vec::new();
    let killed: u64 = String::from_utf8(get_file(&c.dir, "killed")).unwrap().parse().unwrap();
    let mut read_failed_at = if tok.is_none() { Some(mono_ns()) } else { None };
    let mut failure_at = None;
    let mut send_result = None;
    let t0 = Instant::now();
    while read_failed_at.is_none() || failure_at.is_none() {
        t.poll(8, &mut |s, h, _| {
            if s != victim {
                assert_eq!(h.tag, 777, "unexpected message from {s}");
                early_token.set(true);
            }
        });
        t.poll_gets(&mut done);
        if read_failed_at.is_none() {
            if let Some((k, r)) = done.pop() {
                assert_eq!(Some(k), tok);
                assert_eq!(r, Err(TransportError::PeerDead(victim)));
                read_failed_at = Some(mono_ns());
            }
        }
        if failure_at.is_none() {
            t.poll_failures(&mut f);
            if !f.is_empty() {
                assert_eq!(f, vec![victim]);
                failure_at = Some(mono_ns());
            }
        }
        if t0.elapsed() > DETECT_BOUND {
            panic!(
                "rank {me}: victim's death not seen within {DETECT_BOUND:?} (read failed: {}, poll_failures: {}, stats {:?})",
                read_failed_at.is_some(),
                failure_at.is_some(),
                t.stats()
            );
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let us = |at: Option<u64>| at.unwrap().saturating_sub(killed) / 1000;
    // Later operations towards the dead peer fail at once.
    send_result.get_or_insert(t.try_send(victim, &Header::default(), b"x"));
    assert_eq!(send_result, Some(Err(TransportError::PeerDead(victim))));
    // SAFETY: dst is a live buffer.
    let r = unsafe { t.get(victim, &vkey.borrow().unwrap(), dst.as_mut_ptr() as *mut u8, 8) };
    assert_eq!(r, Err(TransportError::PeerDead(victim)));
    f.clear();
    t.poll_failures(&mut f);
    assert!(f.is_empty(), "reported twice");
    eprintln!(
        "rank {me}: after SIGKILL of rank {victim}: pending read failed after {} µs, poll_failures after {} µs (CQ error: {:?})",
        us(read_failed_at),
        us(failure_at),
        t.stats().last_cq_error
    );
    // Survivors still talk: one message around the survivors' ring.
    if n > 2 {
        let nxt = (me + 1) % (n - 1);
        let got = Cell::new(early_token.get());
        let mut s4 = |_: u32, h: &Header, _: &[u8]| {
            assert_eq!(h.tag, 777);
            got.set(true)
        };
        let h = Header { tag: 777, ..Header::default() };
        send_blocking(&mut t, nxt, &h, b"", &mut s4);
        let t0 = Instant::now();
        while !got.get() {
            t.poll(8, &mut s4);
            assert!(t0.elapsed() < Duration::from_secs(10));
        }
        barrier_polling(c, &mut t, "post", n - 1);
    }
}

fn run_traffic(n: u32) {
    for p in test_providers() {
        run_traffic_on(n, &p);
    }
}

fn run_traffic_on(n: u32, provider: &str) {
    let dir = scratch_dir("traffic");
    set_provider(&dir, provider);
    let mut ch = spawn("traffic", n, &dir, CHILD_ARGS);
    let t0 = Instant::now();
    for r in 0..n {
        while !dir.join(format!("armed.{r}")).exists() {
            if t0.elapsed() > WATCHDOG || ch.iter_mut().any(|c| c.try_wait().unwrap().is_some()) {
                kill_all(&mut ch);
                panic!("{provider}: children did not reach the kill phase");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    ch[n as usize - 1].kill().unwrap();
    put_file(&dir, "killed", mono_ns().to_string().as_bytes());
    let left = WATCHDOG.saturating_sub(t0.elapsed());
    wait_all(&mut ch, left, &[n as usize - 1]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_processes() {
    if child_env().is_some() {
        return;
    }
    run_traffic(2);
}

#[test]
fn four_processes() {
    if child_env().is_some() {
        return;
    }
    run_traffic(4);
}

/// The engine end to end over OfiTransport: eager and rendezvous sends both ways.
fn engine_child(c: &ChildEnv) {
    let t = bootstrap(c, &lo_cfg(c));
    let other = 1 - c.rank;
    let mut e = Engine::new(c.rank, 2, EngineConfig::default());
    e.add_transport(Box::new(t), &[other]);
    let w = e.world();
    // tcp;ofi_rxm and net emulate RMA, so their eager limit is raised to 64 KiB.
    for (i, &len) in [0usize, 8, 65536, 65537, 1 << 20, 9 << 20].iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|k| (k * 3 + i) as u8).collect();
        let mut back = vec![0u8; len];
        if c.rank == 0 {
            e.send(w, &data, 1, i as i32).unwrap();
            let st = e.recv(w, &mut back, 1, i as i32).unwrap();
            assert_eq!(st.count, len);
            assert!(back == data, "echo of {len} bytes differs");
        } else {
            let st = e.recv(w, &mut back, 0, i as i32).unwrap();
            assert_eq!(st.count, len);
            e.send(w, &back, 0, i as i32).unwrap();
        }
    }
    // 3 eager + 3 rendezvous messages each way (RTS + FIN or data per message).
    assert!(e.stats().sent_by_transport[0] >= 9, "{:?}", e.stats());
    e.finalize();
    barrier_files(c, "engine-done");
}

fn barrier_files(c: &ChildEnv, tag: &str) {
    put_file(&c.dir, &format!("{tag}.{}", c.rank), b"");
    for r in 0..c.n {
        get_file(&c.dir, &format!("{tag}.{r}"));
    }
}

#[test]
fn engine_over_ofi() {
    if child_env().is_some() {
        return;
    }
    for p in test_providers() {
        let dir = scratch_dir("engine");
        set_provider(&dir, &p);
        let mut ch = spawn("engine", 2, &dir, CHILD_ARGS);
        wait_all(&mut ch, WATCHDOG, &[]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Ping-pong role: `iters` round trips of an 8-byte payload (after a warm-up); rank 0 writes
/// the one-way latency to `dir/lat`.
fn pingpong(c: &ChildEnv) {
    let iters: usize = String::from_utf8(get_file(&c.dir, "iters")).unwrap().trim().parse().unwrap();
    let pinned = pin(c.rank as usize);
    let mut t = bootstrap(c, &lo_cfg(c));
    let other = 1 - c.rank;
    let payload = [7u8; 8];
    let mut sink = |_: u32, _: &Header, p: &[u8]| assert_eq!(p.len(), 8);
    let mut run = |t: &mut OfiTransport, n: usize| -> Duration {
        let start = Instant::now();
        let h = Header { class: 1, len: 8, ..Header::default() };
        for _ in 0..n {
            if c.rank == 0 {
                while !t.try_send(other, &h, &payload).unwrap() {}
                while t.poll(1, &mut sink) == 0 {}
            } else {
                while t.poll(1, &mut sink) == 0 {}
                while !t.try_send(other, &h, &payload).unwrap() {}
            }
        }
        start.elapsed()
    };
    run(&mut t, 1000.min(iters));
    let d = run(&mut t, iters);
    if c.rank == 0 {
        let line = format!(
            "{:.2} µs one-way ({} iterations, {})",
            d.as_nanos() as f64 / (2 * iters) as f64 / 1000.0,
            iters,
            if pinned { "pinned" } else { "unpinned" }
        );
        put_file(&c.dir, "lat", line.as_bytes());
    }
    barrier_polling(c, &mut t, "pp-done", 2);
}

/// 8-byte ping-pong latency over the test provider on lo (printed, not asserted). Meaningful in a
/// release build: `cargo test -p weft-fabric --release --test multiproc pingpong -- --nocapture`.
#[test]
fn pingpong_latency() {
    if child_env().is_some() {
        return;
    }
    let iters = std::env::var("WEFT_FI_PP_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000usize);
    for p in test_providers() {
        let dir = scratch_dir("pp");
        set_provider(&dir, &p);
        std::fs::write(dir.join("iters"), iters.to_string()).unwrap();
        let mut ch = spawn("pingpong", 2, &dir, CHILD_ARGS);
        wait_all(&mut ch, WATCHDOG, &[]);
        let s = String::from_utf8(std::fs::read(dir.join("lat")).unwrap()).unwrap();
        println!("weft-fabric OfiTransport ping-pong, {p} on lo, 8-byte payload: {s}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Send-only detection: rank 1 is SIGKILLed; rank 0 keeps sending to it (8-byte messages by
/// `fi_tinject`, 1 KiB ones from the send pool, which have completions) with no read in
/// flight, and must see the death within DETECT_BOUND.
fn sendonly_child(c: &ChildEnv) {
    let mut t = bootstrap(c, &lo_cfg(c));
    // One exchange so the rxm connection is established both ways.
    let h = Header { class: class::EAGER, len: 0, ..Header::default() };
    let got = Cell::new(false);
    send_blocking(&mut t, 1 - c.rank, &h, &[], &mut |_, _, _| got.set(true));
    let t0 = Instant::now();
    while !got.get() {
        t.poll(8, &mut |_, _, _| got.set(true));
        assert!(t0.elapsed() < Duration::from_secs(30));
    }
    put_file(&c.dir, &format!("armed.{}", c.rank), b"");
    if c.rank == 1 {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    while !c.dir.join("killed").exists() {
        t.poll(8, &mut |_, _, _| {});
    }
    let killed: u64 = String::from_utf8(get_file(&c.dir, "killed")).unwrap().parse().unwrap();
    let big = [5u8; 1024];
    let (mut sent_small, mut sent_big, mut f) = (0u32, 0u32, Vec::new());
    let inject_only = std::env::var("WEFT_FI_TEST_INJECT_ONLY").is_ok_and(|v| v == "1");
    let t0 = Instant::now();
    let how = loop {
        let h8 = Header { class: class::EAGER, len: 8, ..Header::default() };
        match t.try_send(1, &h8, &big[..8]) {
            Ok(true) => sent_small += 1,
            Ok(false) => {}
            Err(e) => break format!("try_send(8 B) -> {e}"),
        }
        let hb = Header { class: class::EAGER, len: 1024, ..Header::default() };
        // WEFT_FI_TEST_INJECT_ONLY=1: only small messages (fi_tinject) — an experiment that
        // shows tcp;ofi_rxm never reporting the loss (see the crate README); prints, no assert.
        match if inject_only { Ok(false) } else { t.try_send(1, &hb, &big) } {
            Ok(true) => sent_big += 1,
            Ok(false) => {}
            Err(e) => break format!("try_send(1 KiB) -> {e}"),
        }
        t.poll(8, &mut |_, _, _| {});
        t.poll_failures(&mut f);
        if !f.is_empty() {
            assert_eq!(f, vec![1]);
            break "poll_failures".to_string();
        }
        if inject_only && t0.elapsed() > DETECT_BOUND {
            eprintln!("inject-only: death NOT seen within {DETECT_BOUND:?}: {:?}", t.stats());
            return;
        }
        assert!(
            t0.elapsed() < DETECT_BOUND,
            "death not seen by sends within {DETECT_BOUND:?}: {:?}",
            t.stats()
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let us = mono_ns().saturating_sub(killed) / 1000;
    assert_eq!(t.try_send(1, &Header::default(), b"x"), Err(TransportError::PeerDead(1)));
    eprintln!(
        "send-only detection: {how} after {us} µs ({sent_small} injects and {sent_big} pool sends accepted after the kill; CQ error {:?})",
        t.stats().last_cq_error
    );
}

#[test]
fn sendonly_detection() {
    if child_env().is_some() {
        return;
    }
    for p in test_providers() {
        let dir = scratch_dir("sendonly");
        set_provider(&dir, &p);
        let mut ch = spawn("sendonly", 2, &dir, CHILD_ARGS);
        let t0 = Instant::now();
        while !dir.join("armed.1").exists() || !dir.join("armed.0").exists() {
            if t0.elapsed() > WATCHDOG || ch.iter_mut().any(|c| c.try_wait().unwrap().is_some()) {
                kill_all(&mut ch);
                panic!("{p}: children did not reach the kill phase");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        ch[1].kill().unwrap();
        put_file(&dir, "killed", mono_ns().to_string().as_bytes());
        wait_all(&mut ch, WATCHDOG, &[1]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
