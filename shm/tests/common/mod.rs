//! Multi-process harness of the shared-memory transport, shared by the integration tests and
//! the ping-pong benchmark. The transport-independent part (re-executed children, card files,
//! deadlines, watchdog, the ping-pong itself) is `weft-testkit`; this module binds it to the
//! `WEFT_SHM_*` variables (`WEFT_SHM_ROLE`, `WEFT_SHM_RANK`, `WEFT_SHM_N`, `WEFT_SHM_DIR`) with
//! a 20 s deadline, and adds what needs `ShmTransport`: bootstrap.
// Each target (test, bench) uses a different subset of the helpers.
#![allow(dead_code, unused_imports)]

use std::time::Duration;

use weft_shm::{ShmConfig, ShmTransport};
use weft_testkit::Harness;
pub use weft_testkit::{put_file, wait_all, ChildEnv};

/// The shm tests' harness: `WEFT_SHM_*` variables; every child-side wait gives up after 20 s.
pub const H: Harness = Harness::new("WEFT_SHM").with_deadline(Duration::from_secs(20));

// child_env, scratch_dir, spawn, get_file, barrier, send_blocking.
weft_testkit::harness_fns!(H);

/// Create the transport, publish the card, read all cards, connect.
pub fn bootstrap(c: &ChildEnv, cfg: &ShmConfig) -> ShmTransport {
    let peers: Vec<u32> = (0..c.n).collect();
    let mut t = ShmTransport::create(c.rank, &peers, cfg).unwrap();
    t.connect(&H.exchange(c, "card", &t.card())).unwrap();
    t
}

/// Run the ping-pong (`weft_testkit::pingpong`) between two child processes and return the
/// one-way latency line.
pub fn run_pingpong(args: &[&str], iters: usize) -> String {
    weft_testkit::pingpong::run(&H, args, iters, Duration::from_secs(60), |_| {})
}

/// Entry point of a ping-pong child.
pub fn pingpong_child(c: &ChildEnv) {
    weft_testkit::pingpong::child(&H, c, |c| bootstrap(c, &ShmConfig::default()));
}
