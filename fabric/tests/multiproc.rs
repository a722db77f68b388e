//! Multi-process tests of the libfabric transport over `tcp;ofi_rxm` on loopback (`lo`), or the
//! providers listed in `WEFT_FI_TEST_PROVIDER` (e.g. `net`, or `net,tcp;ofi_rxm`): the shared
//! traffic test (`weft_testkit::traffic`: eager traffic and per-peer FIFO, a 64 MiB rendezvous
//! read, here checked to be zero-copy, SIGKILL of a peer with a read in flight), send-only
//! detection (after an exchange, and with no message before the kill), the engine end to end,
//! and an 8-byte ping-pong (printed).
//!
//! Each test re-executes this binary as child processes (`child_main` dispatches on the
//! environment) under a watchdog.

mod common;

use std::cell::Cell;
use std::time::{Duration, Instant};

use common::*;
use weft_engine::transport::{class, Header, Transport, TransportError};
use weft_engine::{Common, Diagnostics, Engine, EngineConfig, Setup};
use weft_fabric::{OfiConfig, OfiTransport};
use weft_testkit::traffic::{Kill, Plan, Step, BIG};

const CHILD_ARGS: &[&str] = &["child_main", "--exact", "--nocapture", "--test-threads=1"];
const WATCHDOG: Duration = Duration::from_secs(90);
/// Bound on failure detection asserted by the kill phase.
const DETECT_BOUND: Duration = Duration::from_secs(10);

#[test]
fn child_main() {
    let Some(c) = child_env() else { return };
    match c.role.as_str() {
        "traffic" => traffic(&c),
        "pingpong" => weft_testkit::pingpong::child(&H, &c, |c| bootstrap(c, &lo_cfg(c))),
        "engine" => engine_child(&c),
        "sendonly" => sendonly_child(&c, true),
        "sendonly-cold" => sendonly_child(&c, false),
        r => panic!("unknown role {r}"),
    }
}

/// The shared traffic test on `OfiTransport`: the peer-death phase leaves a 64 MiB read in
/// flight towards the victim, which must fail, and the death must be seen within
/// [`DETECT_BOUND`].
const PLAN: Plan = Plan {
    ring_msgs: 3000,
    alltoall_msgs: 2000,
    alltoall_len: 3000,
    kill: Kill::ReadInFlight,
    detect_bound: DETECT_BOUND,
};

fn traffic(c: &ChildEnv) {
    // 8 MiB read chunks: the 64 MiB read is split into 8 reads completing one token.
    let cfg = OfiConfig { read_chunk: 8 << 20, rx_buffers: 64, tx_buffers: 32, ..lo_cfg(c) };
    let mut t = bootstrap(c, &cfg);
    if c.rank == 0 {
        eprintln!(
            "ofi: provider {} domain {} inject {} mr_mode {:?} read_chunk {}",
            t.provider(),
            t.domain(),
            t.inject_size(),
            t.mr_mode(),
            t.read_chunk()
        );
    }
    // The rendezvous is zero-copy on both sides: the user buffer itself is registered, and
    // only the RTS and the FIN are copied.
    let mut before = None;
    weft_testkit::traffic::child(&H, c, &mut t, &PLAN, &mut |t: &mut OfiTransport, step| match step {
        Step::BeforeExpose => before = Some(t.stats().clone()),
        Step::Exposed { addr, len } => {
            assert_eq!(t.stats().last_expose, (addr as usize, len), "the user buffer itself is registered");
            assert!(t.is_registered(addr, len));
        }
        Step::RendezvousDone => {
            let (b, a) = (before.as_ref().expect("stats before the expose"), t.stats());
            // The RTS (24 + 32 bytes) and the FIN (24 bytes) both fit fi_tinject.
            assert_eq!(a.pool_sends, b.pool_sends, "send pool unused by the rendezvous");
            assert_eq!(a.bytes_copied - b.bytes_copied, (24 + 32) + 24, "no payload byte copied");
            assert_eq!(a.read_bytes - b.read_bytes, BIG as u64);
            assert_eq!(a.reads_posted - b.reads_posted, 8, "split into 8 reads of 8 MiB");
        }
    });
}

fn run_traffic(n: u32) {
    for p in test_providers() {
        weft_testkit::traffic::run(&H, "traffic", n, CHILD_ARGS, WATCHDOG, |dir| set_provider(dir, &p));
    }
}

// two_processes, four_processes.
weft_testkit::traffic_tests!(child_env, run_traffic);

/// The engine end to end over OfiTransport: eager and rendezvous sends both ways.
fn engine_child(c: &ChildEnv) {
    let t = bootstrap(c, &lo_cfg(c));
    let other = 1 - c.rank;
    let mut e = Engine::new(c.rank, 2, EngineConfig::default());
    Setup::of(&mut e).add_transport(Box::new(t), &[other]);
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
    let st = Diagnostics::of(&e).stats();
    assert!(st.sent_by_transport[0] >= 9, "{st:?}");
    Setup::of(&mut e).finalize();
    barrier(c, "engine-done");
}

#[test]
fn engine_over_ofi() {
    if child_env().is_some() {
        return;
    }
    for p in test_providers() {
        let dir = scratch_dir("engine");
        set_provider(&dir, &p);
        let mut ch = spawn("engine", 2, &dir, CHILD_ARGS, WATCHDOG);
        wait_all(&mut ch, &[]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// 8-byte ping-pong latency (`weft_testkit::pingpong`) over the test provider on lo (printed,
/// not asserted). Meaningful in a release build:
/// `cargo test -p weft-fabric --release --test multiproc pingpong -- --nocapture`.
#[test]
fn pingpong_latency() {
    if child_env().is_some() {
        return;
    }
    let iters = std::env::var("WEFT_FI_PP_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000usize);
    for p in test_providers() {
        let s = weft_testkit::pingpong::run(&H, CHILD_ARGS, iters, WATCHDOG, |dir| set_provider(dir, &p));
        println!("weft-fabric OfiTransport ping-pong, {p} on lo, 8-byte payload: one-way latency (ns) {s}");
    }
}

/// Send-only detection: rank 1 is SIGKILLed; rank 0 keeps sending to it (8-byte messages by
/// `fi_tinject`, 1 KiB ones from the send pool, which have completions) with no read in
/// flight, and must see the death within DETECT_BOUND. `connected`: one exchange first, so the
/// connection exists both ways; otherwise no message of the test is sent before the kill, and
/// only the transport's own wire-up (waited for here) has connected the two.
fn sendonly_child(c: &ChildEnv, connected: bool) {
    let mut t = bootstrap(c, &lo_cfg(c));
    let t0 = Instant::now();
    while !connected && !t.wired_up() {
        t.poll(8, &mut |_, _, _| panic!("no message is sent before the kill"));
        assert!(t0.elapsed() < Duration::from_secs(30), "wire-up not accepted: {:?}", t.stats());
    }
    if connected {
        let h = Header { class: class::EAGER, len: 0, ..Header::default() };
        let got = Cell::new(false);
        send_blocking(&mut t, 1 - c.rank, &h, &[], &mut |_, _, _| got.set(true));
        let t0 = Instant::now();
        while !got.get() {
            t.poll(8, &mut |_, _, _| got.set(true));
            assert!(t0.elapsed() < Duration::from_secs(30));
        }
    }
    put_file(&c.dir, &format!("armed.{}", c.rank), b"");
    if c.rank == 1 {
        // Alive until killed, driving progress (the peer's connection requests are accepted).
        loop {
            t.poll(8, &mut |_, _, _| {});
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // No progress while waiting for the kill: the scenario is a sender whose sends meet the
    // dead connection. A rank that polls an idle connection can see the peer's FIN first;
    // rxm then closes the connection, every later send starts a reconnection that is refused
    // and returns -FI_EAGAIN, and nothing is ever reported (the silent-peer case in the
    // crate README, left to launcher events and the heartbeat detector).
    while !c.dir.join("killed").exists() {
        std::thread::sleep(Duration::from_millis(1));
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
    sendonly_run("sendonly");
}

/// Send-only detection towards a peer that was never connected: the first message is sent
/// after the kill.
#[test]
fn sendonly_detection_never_connected() {
    sendonly_run("sendonly-cold");
}

fn sendonly_run(role: &str) {
    if child_env().is_some() {
        return;
    }
    for p in test_providers() {
        let dir = scratch_dir(role);
        set_provider(&dir, &p);
        let mut ch = spawn(role, 2, &dir, CHILD_ARGS, WATCHDOG);
        wait_files(&mut ch, &dir, "armed");
        ch[1].signal(Signal::SIGKILL).unwrap();
        put_file(&dir, "killed", mono_ns().to_string().as_bytes());
        wait_all(&mut ch, &[1]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
