//! The scenarios, rank side: what every rank of a `weft-bench ft --worker <scenario>` job
//! measures, and the `FTROW` lines rank 0 prints. The driver side (which jobs, how they are
//! launched) is in `jobs.rs`.

use std::io::Write as _;
use std::time::{Duration, Instant};

use weft::coll::Op;
use weft::{Comm, Weft};
use weft_testkit::mono_ns;

use super::{median, ncores, scaled, FtCli, FINALIZING, ROW};

/// What every step of a scenario returns: a weft error ends the worker (the driver then sees
/// the job fail).
type WeftResult<T> = Result<T, weft::Error>;

pub(super) fn pin(rank: u32) {
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

fn allreduce(c: &Comm) -> WeftResult<u64> {
    let mut o = [0u64];
    c.allreduce(&[WORD], &mut o, Op::Band)?;
    Ok(o[0])
}

/// Element-wise maximum of `v` over the members of `c`.
fn max_all(c: &Comm, v: &[u64]) -> WeftResult<Vec<u64>> {
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

pub fn run(cli: &FtCli, scenario: &str) -> WeftResult<()> {
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

fn healthy(x: &Ctx) -> WeftResult<()> {
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
            x.w.scope(|s| -> WeftResult<()> {
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
    // Revoke, as in "Plan B: Interruption of Ongoing MPI Operations to Support Failure
    // Recovery" (Bouteiller, Bosilca, Dongarra, EuroMPI 2015): rank 0 revokes plan A's
    // communicator while the others are in its allreduce loop; plan B's loop runs on a
    // duplicate. Plus revoke+shrink vs shrink alone.
    let cycles = scaled(60, x.scale);
    let (mut prop, mut base, mut p1, mut p2, mut p3, mut rs, mut ns, mut rsr) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut p1_last, mut skew, mut p1_ratio, mut p1_last_ratio) = (vec![], vec![], vec![], vec![]);
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
        // This rank's entry into plan B and the end of its first plan-B allreduce (stamps on
        // the host's shared clock): the last rank's entry bounds how early any rank can end.
        let (mut t_enter, mut t_done1) = (0, 0);
        for (i, p) in post.iter_mut().enumerate() {
            let t = mono_ns();
            allreduce(&b)?;
            let d = mono_ns();
            *p = d - t;
            if i == 0 {
                (t_enter, t_done1) = (t, d);
            }
        }
        let s = a.shrink()?;
        let t_sh = mono_ns();
        s.free()?;
        a.free()?;
        let m = max_all(
            &b,
            &[
                t0,
                t_obs,
                t_sh,
                d_base,
                post[0],
                post[1],
                post[2],
                if x.me == 0 { t0h } else { 0 },
                t_h,
                t_enter,
                u64::MAX - t_enter,
                t_done1,
            ],
        )?;
        b.free()?;
        let us = |d: u64| d as f64 / 1e3;
        prop.push(us(m[1] - m[0]));
        rs.push(us(m[2] - m[0]));
        base.push(us(m[3]));
        p1.push(us(m[4]));
        p2.push(us(m[5]));
        p3.push(us(m[6]));
        // m[9] is the last entry into plan B, u64::MAX - m[10] the first.
        p1_last.push(us(m[11] - m[9]));
        skew.push(us(m[9] - (u64::MAX - m[10])));
        p1_ratio.push(m[4] as f64 / m[3].max(1) as f64);
        p1_last_ratio.push((m[11] - m[9]) as f64 / m[3].max(1) as f64);
        ns.push(us(m[8] - m[7]));
        rsr.push((m[2] - m[0]) as f64 / (m[8] - m[7]).max(1) as f64);
    }
    if x.me == 0 {
        for (metric, samples, unit) in [
            ("allreduce_us", ar, "us"),
            ("agree_us", ag, "us"),
            ("agree/allreduce", ratio, "ratio"),
            ("iagree_us", iag, "us"),
            ("shrink_us", sh, "us"),
            ("revoke_prop_us", prop, "us"),
            ("planB_base_us", base, "us"),
            ("planB_post1_us", p1, "us"),
            ("planB_post1/base", p1_ratio, "ratio"),
            ("planB_skew_us", skew, "us"),
            ("planB_post1_last_us", p1_last, "us"),
            ("planB_post1_last/base", p1_last_ratio, "ratio"),
            ("planB_post2_us", p2, "us"),
            ("planB_post3_us", p3, "us"),
            ("revoke_shrink_us", rs, "us"),
            ("shrink_norevoke_us", ns, "us"),
            ("revoke_shrink/norevoke", rsr, "ratio"),
        ] {
            emit(metric, x.n, "weft", median(samples), unit);
        }
    }
    c.barrier()
}

/// One-way 8 B latency between ranks 0 and 1 (µs), rank 0's view; others idle in the
/// closing barrier.
fn pingpong(c: &Comm, me: u32, iters: u64) -> WeftResult<f64> {
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

fn coll_lat(c: &Comm, iters: u64) -> WeftResult<f64> {
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
fn overhead(x: &Ctx, label: &str) -> WeftResult<()> {
    let c = &x.c;
    let (pp, ar) = (scaled(20_000, x.scale), scaled(5_000, x.scale));
    let reps = 7;
    pingpong(c, x.me, scaled(2000, x.scale))?;
    coll_lat(c, scaled(1000, x.scale))?;
    if label == "ft" {
        c.agree(WORD)?;
    }
    let phase = |label: &str| -> WeftResult<()> {
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

/// The victim: send a warm-up message to every survivor on `st` (a first message may set up
/// a connection: on oversubscribed cores that took tens of ms, which the stamp must not
/// include), then stamp, send [stamp, pid] to every survivor, then die (or freeze).
fn victim(st: &Comm, me: u32, freeze: bool) -> ! {
    for r in 0..me {
        let _ = st.send(&[0u8; 16], r, 97);
    }
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

fn stamp_of(st: &Comm, victim: u32) -> WeftResult<(u64, u64)> {
    let mut m = [0u8; 16];
    st.recv(&mut m, victim as i32, 97)?;
    st.recv(&mut m, victim as i32, 99)?;
    Ok((u64::from_le_bytes(m[..8].try_into().expect("8")), u64::from_le_bytes(m[8..].try_into().expect("8"))))
}

fn kill_recover(x: &Ctx) -> WeftResult<()> {
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

fn detect(x: &Ctx, src: &str) -> WeftResult<()> {
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
        // The table is read right after the progress call that may have filled it: a yield
        // first would add a round of every other rank on the core (ms on a loaded host).
        if x.w.failed_world_ranks().contains(&v) {
            break true;
        }
        if x.oversub {
            std::thread::yield_now();
        }
    };
    let t_det = mono_ns();
    let (t_kill, pid) = stamp_of(&st, v)?;
    let det = if ok { t_det - t_kill } else { u64::MAX };
    // From the launcher's SIGCHLD (weft-run's observation time, carried in its PMIx event):
    // the victim's own exit (kill -> zombie) is not in it.
    let from_launcher = match weft_pmix::client::launcher_seen_ns() {
        Some(seen) if ok && src == "launcher" && seen >= t_kill => t_det.saturating_sub(seen),
        _ => u64::MAX,
    };
    if x.me == 0 {
        let mut all = vec![det];
        let mut all_l = vec![from_launcher];
        for r in 1..v {
            let mut b = [0u8; 16];
            st.recv(&mut b, r as i32, 98)?;
            all.push(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")));
            all_l.push(u64::from_le_bytes(b[8..].try_into().expect("8 bytes")));
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
            if src == "launcher" && !all_l.contains(&u64::MAX) {
                let mx = *all_l.iter().max().expect("non-empty");
                emit("detect_launcher_sigchld_us", x.n, "weft", mx as f64 / 1e3, "us");
            }
        }
    } else {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&det.to_le_bytes());
        b[8..].copy_from_slice(&from_launcher.to_le_bytes());
        st.send(&b, 0, 98)?;
    }
    drop(st);
    Ok(())
}
