//! Multi-process harness for the libfabric transport tests (modelled on `shm/tests/common`).
//!
//! The parent re-executes the current test binary with `WEFT_FI_TEST_ROLE=<role>`,
//! `WEFT_FI_TEST_RANK`, `WEFT_FI_TEST_N` and `WEFT_FI_TEST_DIR`; children exchange endpoint
//! addresses through files in that directory (write + rename). Every wait has a deadline and
//! the parent's watchdog kills all children and fails after a timeout.
//!
//! Network rule: every transport here is opened on the loopback domain `lo` with
//! `tcp;ofi_rxm` ([`lo_cfg`]); nothing binds to another interface.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use weft_engine::transport::{Header, Transport};
use weft_fabric::{OfiConfig, OfiTransport};

pub const ROLE_VAR: &str = "WEFT_FI_TEST_ROLE";

/// The configuration every test uses: `tcp;ofi_rxm` on loopback.
pub fn lo_cfg() -> OfiConfig {
    OfiConfig { provider: Some("tcp;ofi_rxm".into()), domain: Some("lo".into()), ..OfiConfig::default() }
}

pub struct ChildEnv {
    pub role: String,
    pub rank: u32,
    pub n: u32,
    pub dir: PathBuf,
}

pub fn child_env() -> Option<ChildEnv> {
    let role = std::env::var(ROLE_VAR).ok()?;
    let get = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} missing"));
    Some(ChildEnv {
        role,
        rank: get("WEFT_FI_TEST_RANK").parse().unwrap(),
        n: get("WEFT_FI_TEST_N").parse().unwrap(),
        dir: PathBuf::from(get("WEFT_FI_TEST_DIR")),
    })
}

pub fn scratch_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let d = std::env::temp_dir().join(format!("weft-fi-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn spawn(role: &str, n: u32, dir: &Path, args: &[&str]) -> Vec<Child> {
    let exe = std::env::current_exe().unwrap();
    (0..n)
        .map(|rank| {
            Command::new(&exe)
                .args(args)
                .env(ROLE_VAR, role)
                .env("WEFT_FI_TEST_RANK", rank.to_string())
                .env("WEFT_FI_TEST_N", n.to_string())
                .env("WEFT_FI_TEST_DIR", dir)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn child")
        })
        .collect()
}

/// Wait for every child with a watchdog; children in `killed` may die by signal.
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

pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn put_file(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// Wait (deadline 30 s) for `dir/name` and read it.
pub fn get_file(dir: &Path, name: &str) -> Vec<u8> {
    let t0 = Instant::now();
    loop {
        if let Ok(b) = std::fs::read(dir.join(name)) {
            return b;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "timeout waiting for {name}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Open the transport on loopback, publish the address, read everyone's, connect.
pub fn bootstrap(c: &ChildEnv, cfg: &OfiConfig) -> OfiTransport {
    let mut t = OfiTransport::open(c.rank, c.n, cfg).unwrap();
    assert_eq!(t.domain(), "lo", "tests must stay on loopback");
    put_file(&c.dir, &format!("addr.{}", c.rank), &t.address());
    let addrs: Vec<(u32, Vec<u8>)> = (0..c.n).map(|r| (r, get_file(&c.dir, &format!("addr.{r}")))).collect();
    t.connect(&addrs).unwrap();
    t
}

/// File barrier among ranks `0..m` — while waiting, keep driving the provider's progress
/// (`poll_gets` reads the CQ) without delivering messages: those of the next phase, sent by a
/// rank that left the barrier first, stay queued for the next `poll`.
pub fn barrier_polling(c: &ChildEnv, t: &mut OfiTransport, tag: &str, m: u32) {
    put_file(&c.dir, &format!("{tag}.{}", c.rank), b"");
    let t0 = Instant::now();
    for r in 0..m {
        while !c.dir.join(format!("{tag}.{r}")).exists() {
            let mut d = Vec::new();
            t.poll_gets(&mut d);
            assert!(t0.elapsed() < Duration::from_secs(30), "barrier {tag} stuck on {r}");
        }
    }
}

/// Send with retry, polling meanwhile.
pub fn send_blocking(
    t: &mut OfiTransport,
    peer: u32,
    h: &Header,
    payload: &[u8],
    sink: &mut dyn FnMut(u32, &Header, &[u8]),
) {
    let t0 = Instant::now();
    while !t.try_send(peer, h, payload).unwrap() {
        t.poll(64, sink);
        assert!(t0.elapsed() < Duration::from_secs(30), "send to {peer} stuck");
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
