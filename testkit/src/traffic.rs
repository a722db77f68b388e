//! The transport traffic test, one body for every [`Transport`]: the shared-memory and the
//! libfabric crates run it from their `tests/multiproc.rs` with their own transport.
//!
//! Each of `n` children (started by [`run`]) builds its transport, connects it and calls
//! [`child`], which runs four phases:
//!
//! 1. ring: [`Plan::ring_msgs`] eager messages of 0..=16 KiB (odd sizes, sizes around 8-byte
//!    and page boundaries) to the next rank; per-source FIFO order, header fields and every
//!    payload byte are checked;
//! 2. all-to-all: [`Plan::alltoall_msgs`] messages of `(seq * 13) % alltoall_len` bytes to
//!    every other rank, checked the same way;
//! 3. rendezvous: a [`BIG`] read of the previous rank's exposed buffer (RTS with the key, the
//!    read, FIN back), synchronous or completed through `poll_gets`; a read longer than the
//!    exposure must be refused;
//! 4. peer death: the parent SIGKILLs the last rank; every survivor must see it through
//!    `poll_failures` (and, with [`Kill::ReadInFlight`], through the failure of a read posted
//!    towards it) within [`Plan::detect_bound`] of the kill; later sends and reads towards it
//!    fail with `PeerDead`, the failure is reported once, and the survivors still exchange a
//!    message around their own ring.
//!
//! Between phases the children meet in a file barrier that keeps driving the transport's
//! progress (`poll_gets`) without delivering messages. Every wait gives up at the harness
//! deadline; the parent kills every child at its time limit.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::time::{Duration, Instant};

use weft_engine::transport::{class, GetStatus, Header, RKey, Transport, TransportError};

use crate::{mono_ns, put_file, wait_all, wait_files, ChildEnv, Harness, Signal};

/// Bytes of the rendezvous read of phase 3.
pub const BIG: usize = 64 << 20;
/// Largest eager message of phase 1.
pub const MAX_EAGER: usize = 16 << 10;

/// Phase-1 sizes: empty, around 8-byte words, around provider inject sizes (39..41, 63..65),
/// around pages, and the largest eager message.
const SIZES: &[usize] =
    &[0, 1, 7, 8, 9, 24, 39, 40, 41, 63, 64, 65, 100, 1000, 4095, 4096, 4097, 8192, 12345, 16383, 16384];

/// Tag of the message the survivors send around their ring after the kill.
const SURVIVOR_TAG: i32 = 777;
/// Message tag of the victim's RTS in [`Kill::ReadInFlight`].
const VICTIM_RTS_TAG: i32 = 99;

/// How the victim dies in phase 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    /// The victim idles; survivors learn of its death from `poll_failures`.
    Idle,
    /// The victim exposes a [`BIG`] buffer to every survivor and stops making progress; after
    /// the kill each survivor posts a read of it, which must fail, and `poll_failures` must
    /// report the victim too.
    ReadInFlight,
}

/// The sizes of one run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Phase-1 messages per rank.
    pub ring_msgs: u32,
    /// Phase-2 messages per (rank, peer).
    pub alltoall_msgs: u32,
    /// Phase-2 payloads are `(seq * 13) % alltoall_len` bytes.
    pub alltoall_len: usize,
    /// Phase 4.
    pub kill: Kill,
    /// Longest accepted delay from the kill to a survivor seeing it.
    pub detect_bound: Duration,
}

/// Points of phase 3 at which [`child`] hands the transport to its caller's observer (for
/// transport-specific checks of the rendezvous, e.g. that nothing was copied).
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Right before this rank exposes its buffer.
    BeforeExpose,
    /// The buffer `addr..addr + len` was exposed to the next rank.
    Exposed { addr: *const u8, len: usize },
    /// This rank's read completed and its FIN came back.
    RendezvousDone,
}

fn size_of_msg(seq: u32) -> usize {
    if seq & 1 == 0 {
        SIZES[(seq as usize / 2) % SIZES.len()]
    } else {
        (seq as usize).wrapping_mul(7919) % (MAX_EAGER + 1)
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

/// Word `i` of `rank`'s rendezvous buffer.
fn word(rank: u32, i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (rank as u64) << 56
}

fn key_of(p: &[u8]) -> RKey {
    p[..32].try_into().expect("an RTS carries a 32-byte key")
}

fn eager(me: u32, seq: u32, len: usize) -> Header {
    Header { class: class::EAGER, src: me, tag: seq as i32, len: len as u64, ..Header::default() }
}

/// File barrier among ranks `0..m` that keeps the transport's reads progressing.
pub(crate) fn barrier<T: Transport + ?Sized>(h: &Harness, c: &ChildEnv, t: &mut T, tag: &str, m: u32) {
    let mut done = Vec::new();
    h.barrier_polling(c, tag, m, || {
        t.poll_gets(&mut done);
        done.clear();
        std::thread::sleep(Duration::from_micros(50));
    });
}

/// Poll `t` into `sink` until `done()`; panic with `what` at the harness deadline.
fn poll_until<T: Transport + ?Sized>(
    h: &Harness,
    t: &mut T,
    budget: usize,
    sink: &mut dyn FnMut(u32, &Header, &[u8]),
    what: &str,
    done: impl Fn() -> bool,
) {
    let t0 = Instant::now();
    while !done() {
        t.poll(budget, sink);
        assert!(t0.elapsed() < h.deadline(), "{what}");
    }
}

/// A child's side of the traffic test on its connected transport `t` (all `c.n` ranks
/// connected to each other). `observe` is called at the [`Step`]s of phase 3. The last rank
/// never returns: it waits for the parent's SIGKILL.
pub fn child<T: Transport + ?Sized>(
    h: &Harness,
    c: &ChildEnv,
    t: &mut T,
    plan: &Plan,
    observe: &mut dyn FnMut(&mut T, Step),
) {
    let (me, n) = (c.rank, c.n);
    assert!(t.eager_limit() >= MAX_EAGER, "{}: eager limit {} < {MAX_EAGER}", t.name(), t.eager_limit());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;

    // Phase 1: ring.
    let m = plan.ring_msgs;
    let recv = Cell::new(0u32);
    let mut sink = |src: u32, hd: &Header, p: &[u8]| {
        let seq = recv.get();
        assert_eq!(src, prev);
        assert_eq!(hd.tag as u32, seq, "FIFO order from {src}");
        assert_eq!(hd.src, src);
        assert_eq!(hd.len as usize, p.len());
        assert_eq!(p.len(), size_of_msg(seq));
        check(p, src, seq);
        recv.set(seq + 1);
    };
    let mut buf = vec![0u8; MAX_EAGER.max(plan.alltoall_len)];
    for seq in 0..m {
        let len = size_of_msg(seq);
        fill(&mut buf[..len], me, seq);
        h.send_blocking(t, next, &eager(me, seq, len), &buf[..len], &mut sink);
    }
    poll_until(h, t, 64, &mut sink, "ring stuck", || recv.get() >= m);
    eprintln!("rank {me}: ring phase ok ({m} messages)");
    // Without the barrier, phase-2 traffic would reach the phase-1 sink.
    barrier(h, c, t, "phase1", n);

    // Phase 2: all-to-all; per-source FIFO.
    let k = plan.alltoall_msgs;
    let len_of = |seq: u32| (seq as usize * 13) % plan.alltoall_len;
    let seen = RefCell::new(vec![0u32; n as usize]);
    let mut sink2 = |src: u32, hd: &Header, p: &[u8]| {
        let mut s = seen.borrow_mut();
        let seq = s[src as usize];
        assert_eq!(hd.tag as u32, seq, "FIFO order from {src}");
        assert_eq!(p.len(), len_of(seq));
        check(p, src, seq);
        s[src as usize] = seq + 1;
    };
    for seq in 0..k {
        for d in 1..n {
            let len = len_of(seq);
            fill(&mut buf[..len], me, seq);
            h.send_blocking(t, (me + d) % n, &eager(me, seq, len), &buf[..len], &mut sink2);
        }
    }
    poll_until(h, t, 7, &mut sink2, "all-to-all stuck", || {
        seen.borrow().iter().enumerate().all(|(r, s)| r as u32 == me || *s >= k)
    });
    eprintln!("rank {me}: all-to-all phase ok ({k} messages per peer)");
    barrier(h, c, t, "phase2", n);

    // Phase 3: rendezvous read of BIG bytes from the previous rank.
    let words = BIG / 8;
    let src: Vec<u64> = (0..words).map(|i| word(me, i)).collect();
    observe(t, Step::BeforeExpose);
    let key = t.expose(next, src.as_ptr() as *const u8, BIG).unwrap();
    observe(t, Step::Exposed { addr: src.as_ptr() as *const u8, len: BIG });
    let got_rts: Cell<Option<RKey>> = Cell::new(None);
    let got_fin = Cell::new(false);
    let mut sink3 = |s: u32, hd: &Header, p: &[u8]| match hd.class {
        class::RTS => {
            assert_eq!(s, prev);
            got_rts.set(Some(key_of(p)));
        }
        class::FIN => {
            assert_eq!(s, next);
            got_fin.set(true);
        }
        other => panic!("unexpected class {other}"),
    };
    let rts = Header { class: class::RTS, src: me, len: BIG as u64, ..Header::default() };
    h.send_blocking(t, next, &rts, &key, &mut sink3);
    poll_until(h, t, 8, &mut sink3, "no RTS", || got_rts.get().is_some());
    let pk = got_rts.get().expect("RTS");
    let mut dst = vec![0u64; words];
    // SAFETY: dst is a live buffer of BIG bytes that nothing else touches; a refused read
    // writes nothing.
    let too_long = unsafe { t.get(prev, &pk, dst.as_mut_ptr() as *mut u8, BIG + 1) };
    assert!(matches!(too_long, Err(TransportError::Invalid(_))), "{too_long:?}");
    let tg = Instant::now();
    // SAFETY: as above; dst is not read until the read is reported done.
    match unsafe { t.get(prev, &pk, dst.as_mut_ptr() as *mut u8, BIG) }.unwrap() {
        GetStatus::Done => {}
        GetStatus::Pending(tok) => {
            let mut done = Vec::new();
            while done.is_empty() {
                t.poll(8, &mut sink3);
                t.poll_gets(&mut done);
                assert!(tg.elapsed() < h.deadline(), "{BIG}-byte read stuck");
            }
            assert_eq!(done, vec![(tok, Ok(()))]);
        }
    }
    let dt = tg.elapsed();
    for (i, w) in dst.iter().enumerate() {
        assert_eq!(*w, word(prev, i), "word {i} of the rendezvous read");
    }
    let fin = Header { class: class::FIN, src: me, ..Header::default() };
    h.send_blocking(t, prev, &fin, &[], &mut sink3);
    poll_until(h, t, 8, &mut sink3, "no FIN", || got_fin.get());
    observe(t, Step::RendezvousDone);
    eprintln!(
        "rank {me}: {} MiB rendezvous read ok ({:.2} GB/s)",
        BIG >> 20,
        BIG as f64 / dt.as_secs_f64() / 1e9
    );
    t.unexpose(next, &key);
    drop(dst);
    // Only the victim of a read in flight needs its buffer: an exiting process tears down all
    // its memory before its death is visible, which would lengthen the detection measured.
    let src = (plan.kill == Kill::ReadInFlight && me == n - 1).then_some(src);
    barrier(h, c, t, "phase3", n);

    // Phase 4: the parent kills the last rank.
    let victim = n - 1;
    if me == victim {
        if let Some(src) = &src {
            for s in 0..victim {
                let key = t.expose(s, src.as_ptr() as *const u8, BIG).unwrap();
                let rts = Header { tag: VICTIM_RTS_TAG, ..rts };
                h.send_blocking(t, s, &rts, &key, &mut |_, _, _| {});
            }
            // Make sure the RTSs left (a provider may buffer small sends): progress a while.
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(300) {
                t.poll(8, &mut |_, _, _| {});
            }
        }
        put_file(&c.dir, &format!("armed.{me}"), b"");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let vkey: Cell<Option<RKey>> = Cell::new(None);
    if plan.kill == Kill::ReadInFlight {
        poll_until(
            h,
            t,
            8,
            &mut |s, hd, p| {
                assert_eq!((s, hd.class, hd.tag), (victim, class::RTS, VICTIM_RTS_TAG));
                vkey.set(Some(key_of(p)));
            },
            "no RTS from the victim",
            || vkey.get().is_some(),
        );
    }
    let mut f = Vec::new();
    t.poll_failures(&mut f);
    assert!(f.is_empty(), "spurious failures {f:?}");
    put_file(&c.dir, &format!("armed.{me}"), b"");
    // A survivor that gets ahead may already send the token of the survivors' ring.
    let early_token = Cell::new(false);
    let mut survivors_sink = |s: u32, hd: &Header, _: &[u8]| {
        assert!(s != victim && hd.tag == SURVIVOR_TAG, "unexpected message from {s}");
        early_token.set(true);
    };
    let t0 = Instant::now();
    while !c.dir.join("killed").exists() {
        t.poll(8, &mut survivors_sink);
        assert!(t0.elapsed() < h.deadline(), "no kill");
        // The parent needs a core to kill the victim: do not spin.
        std::thread::sleep(Duration::from_micros(50));
    }
    let killed: u64 = String::from_utf8(h.get_file(&c.dir, "killed")).unwrap().parse().unwrap();
    // With a read in flight: post a read from the victim (dead, but maybe nothing told this
    // transport yet).
    let mut read = None;
    let mut read_failed_at = None;
    let mut dst = vec![0u64; if vkey.get().is_some() { words } else { 1 }];
    if let Some(vk) = vkey.get() {
        // SAFETY: dst stays alive and untouched until the read is reported (or the process
        // ends).
        let st = unsafe { t.get(victim, &vk, dst.as_mut_ptr() as *mut u8, BIG) };
        eprintln!("rank {me}: read from the killed rank returned {st:?}");
        match st {
            Ok(GetStatus::Pending(tok)) => read = Some(tok),
            Err(TransportError::PeerDead(v)) if v == victim => read_failed_at = Some(mono_ns()),
            other => panic!("unexpected result of a read from the killed rank: {other:?}"),
        }
    }
    let mut failure_at = None;
    let mut done = Vec::new();
    loop {
        t.poll(8, &mut survivors_sink);
        t.poll_gets(&mut done);
        if let (Some(tok), None) = (read, read_failed_at) {
            if let Some((k, r)) = done.pop() {
                assert_eq!(k, tok);
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
        if failure_at.is_some() && (read.is_none() || read_failed_at.is_some()) {
            break;
        }
        let waited = Duration::from_nanos(mono_ns().saturating_sub(killed));
        assert!(
            waited < plan.detect_bound,
            "rank {me}: death of rank {victim} not seen within {:?} (read failed: {}, poll_failures: {})",
            plan.detect_bound,
            read_failed_at.is_some(),
            failure_at.is_some()
        );
        std::thread::sleep(Duration::from_micros(50));
    }
    let us = |at: u64| at.saturating_sub(killed) / 1000;
    let read_note = read_failed_at.map_or(String::new(), |at| format!(", read failed after {} µs", us(at)));
    eprintln!(
        "rank {me}: after SIGKILL of rank {victim}: poll_failures after {} µs{read_note}",
        us(failure_at.expect("seen"))
    );
    f.clear();
    t.poll_failures(&mut f);
    assert!(f.is_empty(), "reported twice");
    assert_eq!(t.try_send(victim, &Header::default(), b"x"), Err(TransportError::PeerDead(victim)));
    let vk = vkey.get().unwrap_or(pk);
    // SAFETY: dst is a live buffer of at least 8 bytes.
    let r = unsafe { t.get(victim, &vk, dst.as_mut_ptr() as *mut u8, 8) };
    assert_eq!(r, Err(TransportError::PeerDead(victim)));

    // Survivors still talk: one message around the survivors' ring.
    if n > 2 {
        let nxt = (me + 1) % (n - 1);
        let token = Header { tag: SURVIVOR_TAG, ..Header::default() };
        h.send_blocking(t, nxt, &token, b"", &mut survivors_sink);
        poll_until(h, t, 8, &mut survivors_sink, "no token from the other survivors", || early_token.get());
        barrier(h, c, t, "post", n - 1);
    }
}

/// The traffic test's entry points in a crate's `tests/multiproc.rs`: `two_processes` and
/// `four_processes`, which call `$run(n)` (the crate's wrapper of [`run`]) in the parent test
/// process and do nothing in a child (whose entry point is the crate's `child_main`).
/// `$child_env` is the crate's `child_env` function.
#[macro_export]
macro_rules! traffic_tests {
    ($child_env:path, $run:path) => {
        #[test]
        fn two_processes() {
            if $child_env().is_none() {
                $run(2);
            }
        }

        #[test]
        fn four_processes() {
            if $child_env().is_none() {
                $run(4);
            }
        }
    };
}

/// The parent's side: start `n` children running `role` (`args` go to the re-executed binary;
/// `prepare` may write files the children read into the scratch directory first), wait until
/// every one is in phase 4, SIGKILL the last, and require the others to exit with status 0.
/// Every child is killed if the test is still running after `limit`.
pub fn run(h: &Harness, role: &str, n: u32, args: &[&str], limit: Duration, prepare: impl FnOnce(&Path)) {
    let dir = h.scratch_dir(role);
    prepare(&dir);
    let mut ch = h.spawn(role, n, &dir, args, limit);
    wait_files(&mut ch, &dir, "armed");
    let stamp = mono_ns();
    ch[n as usize - 1].signal(Signal::SIGKILL).expect("kill the victim");
    // Written after the kill: a survivor that sees the file may count on the victim being dead.
    put_file(&dir, "killed", stamp.to_string().as_bytes());
    wait_all(&mut ch, &[n as usize - 1]);
    let _ = std::fs::remove_dir_all(&dir);
}
