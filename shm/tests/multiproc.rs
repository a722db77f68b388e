//! Multi-process tests of the shared-memory transport: the shared traffic test
//! (`weft_testkit::traffic`: ring, all-to-all, CMA rendezvous, peer death) on 64 KiB rings,
//! a peer that dies between `create` and `connect`, and the ping-pong latency (printed).
//!
//! Each test re-executes this binary as child processes (`child_main` below dispatches on the
//! environment). Every child is killed, and the test fails, after 30 s (60 s for the
//! ping-pong).

mod common;

use std::time::{Duration, Instant};

use common::*;
use weft_engine::transport::{Header, Transport, TransportError};
use weft_shm::{ShmConfig, ShmTransport};
use weft_testkit::traffic::{Kill, Plan};

const CHILD_ARGS: &[&str] = &["child_main", "--exact", "--nocapture", "--test-threads=1"];
const WATCHDOG: Duration = Duration::from_secs(30);

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

/// The shared traffic test on `ShmTransport` with 64 KiB rings: the peer-death phase has the
/// victim idle (shm has no asynchronous read to leave in flight) and requires the pidfd to
/// report the death within 100 ms.
const PLAN: Plan = Plan {
    ring_msgs: 4000,
    alltoall_msgs: 1500,
    alltoall_len: 2000,
    kill: Kill::Idle,
    detect_bound: Duration::from_millis(100),
};

fn traffic(c: &ChildEnv) {
    let mut t = bootstrap(c, &traffic_cfg());
    assert_eq!(t.ring_bytes(), 64 << 10);
    assert_eq!(t.eager_limit(), 16 << 10);
    // CMA reads are synchronous: nothing of the rendezvous needs checking beyond the data.
    weft_testkit::traffic::child(&H, c, &mut t, &PLAN, &mut |_, _| {});
}

fn run_traffic(n: u32) {
    weft_testkit::traffic::run(&H, "traffic", n, CHILD_ARGS, WATCHDOG, |_| {});
}

// two_processes, four_processes.
weft_testkit::traffic_tests!(child_env, run_traffic);

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
        let mut ch = spawn("card_then_exit", 2, &dir, CHILD_ARGS, WATCHDOG);
        // Only rank 1 matters; rank 0's child also writes a card that we ignore.
        let card = get_file(&dir, "card.1");
        let pid = ch[1].pid();
        let t0 = Instant::now();
        if reap_first {
            wait_all(&mut ch[1..], &[]);
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
        wait_all(&mut ch, &[]);
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
