//! Multi-process test harness shared by the transport crates' integration tests and benches.
//!
//! A multi-process test re-executes its own binary as `n` child processes. The parent
//! ([`Harness::spawn`]) sets four environment variables named after the harness prefix:
//! `<P>_ROLE` (what the child runs), `<P>_RANK`, `<P>_N` and `<P>_DIR` (a scratch directory
//! from [`Harness::scratch_dir`]). A child finds its identity with [`Harness::child_env`].
//! Children exchange business cards (transport addresses) and barrier tokens as files in that
//! directory: [`put_file`] writes and renames, so a reader never sees a partial card,
//! [`Harness::get_file`] waits for a file under the harness deadline, and
//! [`Harness::exchange`] does both for a whole card exchange. Every child is a supervised
//! [`Job`] with a hard time limit (it and its process group are killed at the limit, or when
//! dropped); the parent waits with [`wait_all`], which panics on timeout or on a child that
//! fails. [`mono_ns`] is a clock comparable across processes (kill-to-detection delays),
//! [`pin`] binds the calling thread to a core (latency runs).
//!
//! [`launchers`] finds the third-party launchers (PRRTE, hydra) tests run weft jobs under.
//! [`job`] is the child-process supervisor itself, also used directly by the facade's
//! multi-process tests, the launcher's tests and the benchmark drivers. [`traffic`] is the
//! transport traffic test, run by the shared-memory and the libfabric crates on their own
//! transport, [`pingpong`] their latency probe. [`inproc`] is the single-process counterpart: N engines in N threads over an
//! in-memory transport, for the engine's and the collectives' tests.
//!
//! This crate owns only what does not depend on a concrete transport (`send_blocking` and the
//! traffic test work through the `Transport` trait). Creating a transport, getting its card
//! and connecting stay in each crate's `tests/common/mod.rs`.
//!
//! # Use
//!
//! ```ignore
//! // tests/common/mod.rs
//! use std::time::Duration;
//! use weft_testkit::Harness;
//! pub use weft_testkit::{mono_ns, pin, put_file, wait_all, ChildEnv};
//!
//! /// WEFT_SHM_ROLE, WEFT_SHM_RANK, WEFT_SHM_N, WEFT_SHM_DIR; waits give up after 20 s.
//! pub const H: Harness = Harness::new("WEFT_SHM").with_deadline(Duration::from_secs(20));
//! // child_env(), scratch_dir(), spawn(), get_file(), barrier(), send_blocking() bound to H.
//! weft_testkit::harness_fns!(H);
//!
//! // tests/multiproc.rs
//! const CHILD_ARGS: &[&str] = &["child_main", "--exact", "--nocapture", "--test-threads=1"];
//!
//! #[test]
//! fn child_main() {
//!     // In the parent test process this test does nothing.
//!     let Some(c) = child_env() else { return };
//!     match c.role.as_str() {
//!         "traffic" => traffic(&c), // bootstrap, exchange cards, barrier(&c, "done"), ...
//!         r => panic!("unknown role {r}"),
//!     }
//! }
//!
//! #[test]
//! fn two_processes() {
//!     if child_env().is_some() {
//!         return; // a child runs only `child_main`
//!     }
//!     let dir = scratch_dir("traffic");
//!     let mut ch = spawn("traffic", 2, &dir, CHILD_ARGS, Duration::from_secs(30));
//!     wait_all(&mut ch, &[]);
//!     let _ = std::fs::remove_dir_all(&dir);
//! }
//! ```

pub mod inproc;
pub mod job;
pub mod launchers;
pub mod pingpong;
pub mod traffic;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub use job::{End, Job, Supervisor};
pub use nix::sys::signal::Signal;
pub use weft_engine::transport::{Header, Transport};

/// The environment-variable prefix and the deadline of every wait done by a child.
#[derive(Clone, Copy, Debug)]
pub struct Harness {
    prefix: &'static str,
    deadline: Duration,
}

/// A child's identity, from its environment.
#[derive(Debug)]
pub struct ChildEnv {
    pub role: String,
    pub rank: u32,
    pub n: u32,
    pub dir: PathBuf,
}

impl Harness {
    /// A harness whose children are told their role, rank, size and directory by
    /// `<prefix>_ROLE`, `<prefix>_RANK`, `<prefix>_N` and `<prefix>_DIR`. The wait deadline
    /// is 20 s until [`with_deadline`](Self::with_deadline) changes it.
    pub const fn new(prefix: &'static str) -> Self {
        Self { prefix, deadline: Duration::from_secs(20) }
    }

    /// The same harness with `deadline` for [`get_file`](Self::get_file),
    /// [`barrier`](Self::barrier), [`barrier_polling`](Self::barrier_polling) and
    /// [`send_blocking`](Self::send_blocking).
    pub const fn with_deadline(self, deadline: Duration) -> Self {
        Self { deadline, ..self }
    }

    /// The deadline of the child-side waits.
    pub const fn deadline(&self) -> Duration {
        self.deadline
    }

    fn var(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.prefix)
    }

    /// `Some` when this process is a child started by [`spawn`](Self::spawn).
    pub fn child_env(&self) -> Option<ChildEnv> {
        let role = std::env::var(self.var("ROLE")).ok()?;
        let get = |s: &str| {
            let k = self.var(s);
            std::env::var(&k).unwrap_or_else(|_| panic!("{k} missing"))
        };
        Some(ChildEnv {
            role,
            rank: get("RANK").parse().unwrap(),
            n: get("N").parse().unwrap(),
            dir: PathBuf::from(get("DIR")),
        })
    }

    /// A fresh scratch directory under the system temporary directory, named after the
    /// prefix (`WEFT_SHM` → `weft-shm-<tag>-<pid>-<ns>`).
    pub fn scratch_dir(&self, tag: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let name = self.prefix.to_ascii_lowercase().replace('_', "-");
        let d = std::env::temp_dir().join(format!("{name}-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Start `n` children running `role`, each killed if still running after `limit`; `args`
    /// are passed to the re-executed binary (for a libtest binary: the test name, `--exact`,
    /// `--nocapture`).
    pub fn spawn(&self, role: &str, n: u32, dir: &Path, args: &[&str], limit: Duration) -> Vec<Job> {
        let exe = std::env::current_exe().unwrap();
        // The child's libtest summary would read as extra test results: stdout is discarded.
        // Its diagnostics go to stderr, which is inherited.
        let sup = Supervisor::new(limit).stdout(job::Io::Null).stderr(job::Io::Inherit);
        (0..n)
            .map(|rank| {
                let mut cmd = Command::new(&exe);
                cmd.args(args)
                    .env(self.var("ROLE"), role)
                    .env(self.var("RANK"), rank.to_string())
                    .env(self.var("N"), n.to_string())
                    .env(self.var("DIR"), dir);
                sup.spawn(cmd).expect("spawn child")
            })
            .collect()
    }

    /// Wait (up to the deadline) for `dir/name` and read it.
    pub fn get_file(&self, dir: &Path, name: &str) -> Vec<u8> {
        let t0 = Instant::now();
        loop {
            if let Ok(b) = std::fs::read(dir.join(name)) {
                return b;
            }
            assert!(t0.elapsed() < self.deadline, "timeout waiting for {name}");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Exchange business cards among all `c.n` children: publish ours as `dir/<name>.<rank>`,
    /// then wait for everyone's. Returns `(rank, card)` for every rank, ours included.
    pub fn exchange(&self, c: &ChildEnv, name: &str, card: &[u8]) -> Vec<(u32, Vec<u8>)> {
        put_file(&c.dir, &format!("{name}.{}", c.rank), card);
        (0..c.n).map(|r| (r, self.get_file(&c.dir, &format!("{name}.{r}")))).collect()
    }

    /// File barrier named `tag` among ranks `0..m`.
    pub fn barrier(&self, c: &ChildEnv, tag: &str, m: u32) {
        put_file(&c.dir, &format!("{tag}.{}", c.rank), b"");
        for r in 0..m {
            self.get_file(&c.dir, &format!("{tag}.{r}"));
        }
    }

    /// File barrier named `tag` among ranks `0..m` that calls `progress` while it waits
    /// instead of sleeping (for a transport whose peers need our progress meanwhile).
    pub fn barrier_polling(&self, c: &ChildEnv, tag: &str, m: u32, mut progress: impl FnMut()) {
        put_file(&c.dir, &format!("{tag}.{}", c.rank), b"");
        let t0 = Instant::now();
        for r in 0..m {
            while !c.dir.join(format!("{tag}.{r}")).exists() {
                progress();
                assert!(t0.elapsed() < self.deadline, "barrier {tag} stuck on {r}");
            }
        }
    }

    /// Send with retry, polling our own inbound traffic meanwhile (so that two ranks sending
    /// to each other with full queues cannot deadlock); received messages go to `sink`.
    pub fn send_blocking<T: Transport + ?Sized>(
        &self,
        t: &mut T,
        peer: u32,
        h: &Header,
        payload: &[u8],
        sink: &mut dyn FnMut(u32, &Header, &[u8]),
    ) {
        let t0 = Instant::now();
        while !t.try_send(peer, h, payload).unwrap() {
            t.poll(64, sink);
            assert!(t0.elapsed() < self.deadline, "send to {peer} stuck");
        }
    }
}

/// Free functions bound to one [`Harness`] constant, for tests written against
/// `child_env()`, `scratch_dir(tag)`, `spawn(role, n, dir, args)`, `get_file(dir, name)`,
/// `barrier(c, tag)` (all `c.n` ranks) and `send_blocking(t, peer, h, payload, sink)`.
/// Expand it in the crate's `tests/common/mod.rs`: `weft_testkit::harness_fns!(H);`.
#[macro_export]
macro_rules! harness_fns {
    ($h:path) => {
        /// `Some` when this process is a child started by [`spawn`].
        pub fn child_env() -> Option<$crate::ChildEnv> {
            $h.child_env()
        }

        /// A fresh scratch directory.
        pub fn scratch_dir(tag: &str) -> std::path::PathBuf {
            $h.scratch_dir(tag)
        }

        /// Start `n` children running `role`, killed after `limit`; `args` go to the
        /// re-executed binary.
        pub fn spawn(
            role: &str,
            n: u32,
            dir: &std::path::Path,
            args: &[&str],
            limit: std::time::Duration,
        ) -> Vec<$crate::Job> {
            $h.spawn(role, n, dir, args, limit)
        }

        /// Wait (up to the harness deadline) for `dir/name` and read it.
        pub fn get_file(dir: &std::path::Path, name: &str) -> Vec<u8> {
            $h.get_file(dir, name)
        }

        /// File barrier named `tag` among all the children.
        pub fn barrier(c: &$crate::ChildEnv, tag: &str) {
            $h.barrier(c, tag, c.n)
        }

        /// Send with retry, polling meanwhile; received messages go to `sink`.
        pub fn send_blocking<T: $crate::Transport + ?Sized>(
            t: &mut T,
            peer: u32,
            h: &$crate::Header,
            payload: &[u8],
            sink: &mut dyn FnMut(u32, &$crate::Header, &[u8]),
        ) {
            $h.send_blocking(t, peer, h, payload, sink)
        }
    };
}

/// Write `bytes` to `dir/name` atomically (write a hidden temporary, then rename).
pub fn put_file(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// Wait for every child until its time limit; panic on the first one that times out or
/// fails (the caller's drop of the jobs then kills the others). Children in `killed` are
/// expected to die by a signal; all others must exit with status 0.
pub fn wait_all(children: &mut [Job], killed: &[usize]) {
    let mut done = vec![false; children.len()];
    while done.iter().any(|d| !d) {
        for (i, c) in children.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            match c.try_end() {
                None => {}
                Some(End::TimedOut(limit)) => panic!("watchdog: child {i} still running after {limit:?}"),
                Some(End::Exited(st)) if !killed.contains(&i) && !st.success() => {
                    panic!("child {i} failed: {st}")
                }
                Some(End::Exited(_)) => done[i] = true,
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Wait until every child `0..n` has created `dir/<tag>.<rank>` (e.g. `armed.<rank>`, written
/// when a child reached the phase where the parent acts on it). Panics if a child ends before,
/// or at the deadline of the children.
pub fn wait_files(children: &mut [Job], dir: &Path, tag: &str) {
    for r in 0..children.len() {
        while !dir.join(format!("{tag}.{r}")).exists() {
            for (i, c) in children.iter_mut().enumerate() {
                if let Some(end) = c.try_end() {
                    panic!("child {i} ended ({end:?}) before every child wrote {tag}.<rank>");
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Monotonic clock in ns (CLOCK_MONOTONIC is system-wide, so comparable across processes).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Pin the calling thread to `cpu`; `false` if that is not possible (no such CPU, or not
/// allowed).
pub fn pin(cpu: usize) -> bool {
    use nix::sched::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    set.set(cpu).is_ok() && sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).is_ok()
}
