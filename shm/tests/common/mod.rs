//! Multi-process harness shared by the integration tests and the ping-pong benchmark.
//!
//! The parent re-executes the current binary with `WEFT_SHM_ROLE=<role>`, `WEFT_SHM_RANK`,
//! `WEFT_SHM_N` and `WEFT_SHM_DIR` set; children exchange business cards through files in
//! that directory (write + rename, so a reader never sees a partial card). Every wait has a
//! deadline; the parent's watchdog kills all children and fails after a timeout.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use weft_engine::transport::{Header, Transport};
use weft_shm::{ShmConfig, ShmTransport};

pub const ROLE_VAR: &str = "WEFT_SHM_ROLE";

/// A child's identity, from its environment.
pub struct ChildEnv {
    pub role: String,
    pub rank: u32,
    pub n: u32,
    pub dir: PathBuf,
}

/// `Some` when this process is a child started by [`spawn`].
pub fn child_env() -> Option<ChildEnv> {
    let role = std::env::var(ROLE_VAR).ok()?;
    let get = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} missing"));
    Some(ChildEnv {
        role,
        rank: get("WEFT_SHM_RANK").parse().unwrap(),
        n: get("WEFT_SHM_N").parse().unwrap(),
        dir: PathBuf::from(get("WEFT_SHM_DIR")),
    })
}

/// A fresh scratch directory.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let d = std::env::temp_dir().join(format!("weft-shm-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Start `n` children running `role`; `args` are passed to the re-executed binary (for a
/// libtest binary: the test name, `--exact`, `--nocapture`).
pub fn spawn(role: &str, n: u32, dir: &Path, args: &[&str]) -> Vec<Child> {
    let exe = std::env::current_exe().unwrap();
    (0..n)
        .map(|rank| {
            Command::new(&exe)
                .args(args)
                .env(ROLE_VAR, role)
                .env("WEFT_SHM_RANK", rank.to_string())
                .env("WEFT_SHM_N", n.to_string())
                .env("WEFT_SHM_DIR", dir)
                // The child's libtest summary would read as extra test results; its
                // diagnostics go to stderr, which is inherited.
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn child")
        })
        .collect()
}

/// Wait for every child with a watchdog: on timeout, kill them all and panic. Children in
/// `killed` are expected to die by SIGKILL; all others must exit with status 0.
pub fn wait_all(children: &mut [Child], timeout: Duration, killed: &[usize]) {
    let t0 = Instant::now();
    let mut done = vec![false; children.len()];
    while done.iter().any(|d| !d) {
        for (i, c) in children.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            if let Some(st) = c.try_wait().unwrap() {
                done[i] = true;
                if !killed.contains(&i) && !st.success() {
                    kill_all(children);
                    panic!("child {i} failed: {st}");
                }
            }
        }
        if t0.elapsed() > timeout {
            kill_all(children);
            panic!("watchdog: children still running after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn kill_all(children: &mut [Child]) {
    for c in children.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Monotonic clock in ns (CLOCK_MONOTONIC is system-wide, so comparable across processes).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Write `bytes` to `dir/name` atomically.
pub fn put_file(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// Wait (deadline 20 s) for `dir/name` and read it.
pub fn get_file(dir: &Path, name: &str) -> Vec<u8> {
    let t0 = Instant::now();
    loop {
        if let Ok(b) = std::fs::read(dir.join(name)) {
            return b;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "timeout waiting for {name}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Create the transport, publish the card, read all cards, connect.
pub fn bootstrap(c: &ChildEnv, cfg: &ShmConfig) -> ShmTransport {
    let peers: Vec<u32> = (0..c.n).collect();
    let mut t = ShmTransport::create(c.rank, &peers, cfg).unwrap();
    put_file(&c.dir, &format!("card.{}", c.rank), &t.card());
    let cards: Vec<(u32, Vec<u8>)> = (0..c.n).map(|r| (r, get_file(&c.dir, &format!("card.{r}")))).collect();
    t.connect(&cards).unwrap();
    t
}

/// File-based barrier among the children (named `tag`).
pub fn barrier(c: &ChildEnv, tag: &str) {
    put_file(&c.dir, &format!("{tag}.{}", c.rank), b"");
    for r in 0..c.n {
        get_file(&c.dir, &format!("{tag}.{r}"));
    }
}

/// Send with retry, polling our own inbound rings meanwhile (so that two ranks sending to each
/// other with full rings cannot deadlock); received messages go to `sink`.
pub fn send_blocking(
    t: &mut ShmTransport,
    peer: u32,
    h: &Header,
    payload: &[u8],
    sink: &mut dyn FnMut(u32, &Header, &[u8]),
) {
    let t0 = Instant::now();
    while !t.try_send(peer, h, payload).unwrap() {
        t.poll(64, sink);
        assert!(t0.elapsed() < Duration::from_secs(20), "send to {peer} stuck");
    }
}

/// Pin the calling thread to `cpu`.
pub fn pin(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
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
    let mut ch = spawn("pingpong", 2, &dir, args);
    wait_all(&mut ch, Duration::from_secs(60), &[]);
    let s = String::from_utf8(std::fs::read(dir.join("lat")).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    s
}

/// Entry point of a ping-pong child.
pub fn pingpong_child(c: &ChildEnv) {
    let iters: usize = String::from_utf8(get_file(&c.dir, "iters")).unwrap().trim().parse().unwrap();
    pingpong(c, iters);
}
