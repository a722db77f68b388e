//! Multi-process tests of the shared-memory transport: ring traffic, CMA, peer death.
//!
//! Each test re-executes this binary as child processes (`child_main` below dispatches on the
//! environment). Every test has a watchdog that kills the children and fails after 30 s.

mod common;

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use common::*;
use weft_engine::transport::{class, GetStatus, Header, Transport, TransportError};
use weft_shm::{ShmConfig, ShmTransport};

const CHILD_ARGS: &[&str] = &["child_main", "--exact", "--nocapture", "--test-threads=1"];
const WATCHDOG: Duration = Duration::from_secs(30);
const CMA_BYTES: usize = 64 << 20;

/// Not a test of its own: the entry point of every child process.
#[test]
fn child_main() {
    let Some(c) = child_env() else { return };
    match c.role.as_str() {
        "traffic" => traffic(&c),
        "pingpong" => pingpong_child(&c),
        "card_then_exit" => {
            let peers: Vec<u32> = (0..c.n).collect();
            let t = ShmTransport::create(c.rank, &peers, &ShmConfig::default()).unwrap();
            put_file(&c.dir, &format!("card.{}", c.rank), &t.card());
            std::process::exit(0);
        }
        r => panic!("unknown role {r}"),
    }
}

fn traffic_cfg() -> ShmConfig {
    // Small rings (64 KiB) so that the traffic wraps many times and hits flow control.
    ShmConfig { ring_min: 64 << 10, ring_max: 64 << 10, ..ShmConfig::default() }
}

const SIZES: &[usize] =
    &[0, 1, 7, 8, 9, 24, 63, 64, 65, 100, 1000, 4095, 4096, 4097, 8192, 12345, 16383, 16384];

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

fn cma_word(rank: u32, i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (rank as u64) << 56
}

fn traffic(c: &ChildEnv) {
    let me = c.rank;
    let n = c.n;
    let mut t = bootstrap(c, &traffic_cfg());
    assert_eq!(t.ring_bytes(), 64 << 10);
    assert_eq!(t.eager_limit(), 16 << 10);
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;

    // Phase 1: ring pattern, M messages of 0..=16 KiB to the next rank.
    const M: u32 = 4000;
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
        assert!(t0.elapsed() < Duration::from_secs(20), "phase 1 stuck at {}", recv.get());
    }
    eprintln!("rank {me}: ring phase ok");
    // Nobody needs our progress for phase 1 any more: all its sends were accepted and all
    // its receives delivered. Without the barrier, phase-2 traffic would reach phase-1 sinks.
    barrier(c, "phase1");

    // Phase 2: all-to-all, K messages to every other rank; per-source FIFO.
    const K: u32 = 1500;
    let seen = RefCell::new(vec![0u32; n as usize]);
    let mut sink2 = |src: u32, h: &Header, p: &[u8]| {
        let mut s = seen.borrow_mut();
        let seq = s[src as usize];
        assert_eq!(h.tag as u32, seq, "FIFO order from {src}");
        assert_eq!(p.len(), (seq as usize * 13) % 2000);
        check(p, src, seq);
        s[src as usize] = seq + 1;
    };
    for seq in 0..K {
        for d in 1..n {
            let dst = (me + d) % n;
            let len = (seq as usize * 13) % 2000;
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
        assert!(t0.elapsed() < Duration::from_secs(20), "phase 2 stuck");
    }
    eprintln!("rank {me}: all-to-all phase ok");
    barrier(c, "phase2");

    // Phase 3: 64 MiB CMA get from the previous rank.
    let words = CMA_BYTES / 8;
    let src: Vec<u64> = (0..words).map(|i| cma_word(me, i)).collect();
    let key = t.expose(next, src.as_ptr() as *const u8, CMA_BYTES).unwrap();
    let mut rts = Vec::new();
    rts.extend_from_slice(&key);
    let h = Header { class: class::RTS, src: me, len: CMA_BYTES as u64, ..Header::default() };
    let got_rts: RefCell<Option<Vec<u8>>> = RefCell::new(None);
    let got_fin = Cell::new(false);
    let mut sink3 = |s: u32, h: &Header, p: &[u8]| match h.class {
        class::RTS => {
            assert_eq!(s, prev);
            *got_rts.borrow_mut() = Some(p.to_vec());
        }
        class::FIN => {
            assert_eq!(s, next);
            got_fin.set(true);
        }
        c => panic!("unexpected class {c}"),
    };
    send_blocking(&mut t, next, &h, &rts, &mut sink3);
    let t0 = Instant::now();
    while got_rts.borrow().is_none() {
        t.poll(8, &mut sink3);
        assert!(t0.elapsed() < Duration::from_secs(20), "no RTS");
    }
    let k: [u8; 32] = got_rts.borrow().as_ref().unwrap()[..32].try_into().unwrap();
    let mut dst = vec![0u64; words];
    // SAFETY: dst is a live exclusive buffer of CMA_BYTES bytes.
    let too_long = unsafe { t.get(prev, &k, dst.as_mut_ptr() as *mut u8, CMA_BYTES + 1) };
    assert!(matches!(too_long, Err(TransportError::Invalid(_))));
    let tg = Instant::now();
    // SAFETY: as above.
    let st = unsafe { t.get(prev, &k, dst.as_mut_ptr() as *mut u8, CMA_BYTES) }.unwrap();
    let dt = tg.elapsed();
    assert_eq!(st, GetStatus::Done);
    for (i, w) in dst.iter().enumerate() {
        assert_eq!(*w, cma_word(prev, i), "CMA word {i}");
    }
    eprintln!("rank {me}: 64 MiB CMA get ok ({:.2} GB/s)", CMA_BYTES as f64 / dt.as_secs_f64() / 1e9);
    let fin = Header { class: class::FIN, src: me, ..Header::default() };
    send_blocking(&mut t, prev, &fin, &[], &mut sink3);
    let t0 = Instant::now();
    while !got_fin.get() {
        t.poll(8, &mut sink3);
        assert!(t0.elapsed() < Duration::from_secs(20), "no FIN");
    }
    t.unexpose(next, &key);
    drop(src);

    // Phase 4: the last rank gets SIGKILLed by the parent; the others must see it.
    let victim = n - 1;
    let mut f = Vec::new();
    t.poll_failures(&mut f);
    assert!(f.is_empty(), "spurious failures {f:?}");
    put_file(&c.dir, &format!("armed.{me}"), b"");
    if me == victim {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let t0 = Instant::now();
    let detected = loop {
        t.poll_failures(&mut f);
        if !f.is_empty() {
            break mono_ns();
        }
        t.poll(16, &mut |_, _, _| panic!("unexpected message"));
        assert!(t0.elapsed() < Duration::from_secs(20), "death of {victim} not seen");
        std::thread::sleep(Duration::from_micros(50));
    };
    assert_eq!(f, vec![victim]);
    let killed: u64 = String::from_utf8(get_file(&c.dir, "killed")).unwrap().parse().unwrap();
    let delay_us = (detected.saturating_sub(killed)) / 1000;
    eprintln!("rank {me}: saw rank {victim} die {delay_us} µs after SIGKILL");
    assert!(delay_us < 100_000, "failure seen after {delay_us} µs");
    f.clear();
    t.poll_failures(&mut f);
    assert!(f.is_empty(), "reported twice");
    let h = Header::default();
    assert_eq!(t.try_send(victim, &h, b"x"), Err(TransportError::PeerDead(victim)));
    let mut d = [0u8; 8];
    // SAFETY: d is a live 8-byte buffer.
    let r = unsafe { t.get(victim, &k, d.as_mut_ptr(), 8) };
    assert_eq!(r, Err(TransportError::PeerDead(victim)));
    // Survivors still talk: one message around the survivors' ring.
    if n > 2 {
        let nxt = (me + 1) % (n - 1);
        let got = Cell::new(false);
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
        barrier_some(c, "post", n - 1);
    }
}

/// Barrier among ranks 0..m.
fn barrier_some(c: &ChildEnv, tag: &str, m: u32) {
    put_file(&c.dir, &format!("{tag}.{}", c.rank), b"");
    for r in 0..m {
        get_file(&c.dir, &format!("{tag}.{r}"));
    }
}

fn run_traffic(n: u32) {
    let dir = scratch_dir("traffic");
    let mut ch = spawn("traffic", n, &dir, CHILD_ARGS);
    // Wait until everyone is armed, then kill the last rank.
    let t0 = Instant::now();
    for r in 0..n {
        while !dir.join(format!("armed.{r}")).exists() {
            if t0.elapsed() > WATCHDOG || ch.iter_mut().any(|c| c.try_wait().unwrap().is_some()) {
                kill_all(&mut ch);
                panic!("children did not reach the kill phase");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    put_file(&dir, "killed", mono_ns().to_string().as_bytes());
    ch[n as usize - 1].kill().unwrap();
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

/// A peer that dies between `create` and `connect` yields `PeerDead`, both when it is a
/// zombie (pid still allocated) and after it has been reaped.
#[test]
fn peer_dead_between_phases() {
    if child_env().is_some() {
        return;
    }
    for reap_first in [false, true] {
        let dir = scratch_dir("dead");
        let mut t = ShmTransport::create(0, &[0, 1], &ShmConfig::default()).unwrap();
        let mut ch = spawn("card_then_exit", 2, &dir, CHILD_ARGS);
        // Only rank 1 matters; rank 0's child also writes a card that we ignore.
        let card = get_file(&dir, "card.1");
        let pid = ch[1].id();
        let t0 = Instant::now();
        if reap_first {
            wait_all(&mut ch[1..], WATCHDOG, &[]);
        } else {
            loop {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
                let state = stat.rsplit(')').next().unwrap().trim_start().chars().next();
                if state == Some('Z') {
                    break;
                }
                assert!(t0.elapsed() < WATCHDOG, "child did not exit");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(t.connect(&[(1, card)]), Err(TransportError::PeerDead(1)));
        let mut f = Vec::new();
        t.poll_failures(&mut f);
        assert_eq!(f, vec![1]);
        f.clear();
        t.poll_failures(&mut f);
        assert!(f.is_empty());
        assert_eq!(t.try_send(1, &Header::default(), b""), Err(TransportError::PeerDead(1)));
        wait_all(&mut ch, WATCHDOG, &[]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Ping-pong latency between two pinned processes (printed, not asserted). Meaningful only in
/// a release build: `cargo test -p weft-shm --release --test multiproc pingpong -- --nocapture`
/// or `cargo bench -p weft-shm`.
#[test]
fn pingpong_latency() {
    if child_env().is_some() {
        return;
    }
    let line = run_pingpong(CHILD_ARGS, 100_000);
    println!("shm ping-pong, 8-byte payload, 100k iterations: one-way latency (ns) {line}");
}
