//! Multi-process harness of the shared-memory transport, shared by the integration tests and
//! the ping-pong benchmark. The transport-independent part (re-executed children, card files,
//! deadlines, watchdog) is `weft-testkit`; this module binds it to the `WEFT_SHM_*` variables
//! (`WEFT_SHM_ROLE`, `WEFT_SHM_RANK`, `WEFT_SHM_N`, `WEFT_SHM_DIR`) with a 20 s deadline,
//! and adds what needs `ShmTransport`: bootstrap and the ping-pong.
// Each target (test, bench) uses a different subset of the helpers.
#![allow(dead_code, unused_imports)]

use std::time::{Duration, Instant};

use weft_engine::transport::{Header, Transport};
use weft_shm::{ShmConfig, ShmTransport};
use weft_testkit::Harness;
pub use weft_testkit::{mono_ns, pin, put_file, wait_all, ChildEnv};

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

/// Ping-pong role: rank 0 and 1 pinned to cores 0 and 1, `iters` round trips of an 8-byte
/// payload after a warm-up; rank 0 writes the one-way latency (ns: mean, median and best 1000-iteration window) to
/// `dir/lat`.
pub fn pingpong(c: &ChildEnv, iters: usize) {
    let pinned = pin(c.rank as usize);
    let mut t = bootstrap(c, &ShmConfig::default());
    barrier(c, "pp-ready");
    let other = 1 - c.rank;
    let payload = [7u8; 8];
    let mut got = 0usize;
    let mut sink = |_: u32, _: &Header, p: &[u8]| {
        debug_assert_eq!(p.len(), 8);
        got += 1;
    };
    let mut run = |t: &mut ShmTransport, n: usize| -> Duration {
        let start = Instant::now();
        let mut h = Header { class: 1, len: 8, ..Header::default() };
        for i in 0..n {
            h.tag = i as i32;
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
    run(&mut t, iters / 10);
    // Windows of 1000 round trips: the mean is what a user sees; the median and best window
    // show the transport's own cost when other processes share the two cores.
    const WIN: usize = 1000;
    let mut wins: Vec<f64> =
        (0..iters / WIN).map(|_| run(&mut t, WIN).as_nanos() as f64 / (2 * WIN) as f64).collect();
    if c.rank == 0 {
        let mean = wins.iter().sum::<f64>() / wins.len() as f64;
        wins.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let line = format!(
            "mean {mean:.1} median {:.1} best {:.1} ({})",
            wins[wins.len() / 2],
            wins[0],
            if pinned { "pinned" } else { "unpinned" }
        );
        put_file(&c.dir, "lat", line.as_bytes());
    }
    barrier(c, "pp-done");
}

/// Run the ping-pong between two child processes and return the one-way latency line.
pub fn run_pingpong(args: &[&str], iters: usize) -> String {
    let dir = scratch_dir("pp");
    std::fs::write(dir.join("iters"), iters.to_string()).unwrap();
    let mut ch = spawn("pingpong", 2, &dir, args, Duration::from_secs(60));
    wait_all(&mut ch, &[]);
    let s = String::from_utf8(std::fs::read(dir.join("lat")).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    s
}

/// Entry point of a ping-pong child.
pub fn pingpong_child(c: &ChildEnv) {
    let iters: usize = String::from_utf8(get_file(&c.dir, "iters")).unwrap().trim().parse().unwrap();
    pingpong(c, iters);
}
