//! `weft-bench reinit`: the cost of global restart (Reinit) against the two other ways the
//! same application recovers from a SIGKILLed rank, measured in one run.
//!
//! | method | one job | time measured (median over `--kills`) |
//! |---|---|---|
//! | `reinit` | `weft::reinit`, `--kills` failures in a row (one per epoch) | kill → every rank back in the resilient main of the next epoch with the full-size world; phases: detection (kill → weft-run saw the death), respawn (→ the replacement joined the epoch service), re-wiring (→ every rank back in main: teardown, fence, shm/fabric connect) |
//! | `shrink` | `weft::init`, one failure per job | kill → every survivor has the revoked and shrunk world (ULFM recovery; the world is one rank smaller) |
//! | `restart` | `weft::init` + file checkpoints, one failure per job | kill → the job aborted, a new job launched by this driver, every rank back in main (before loading the checkpoint, as for `reinit`) |
//!
//! The application is the same in all three: an allreduce per iteration, a checkpoint every
//! 10 iterations, 0.5 s of iterations before each failure; the victim writes its `CLOCK_MONOTONIC` stamp to a file right before it
//! SIGKILLs itself, and rank 0 of the recovered job reads it (every process of the host shares
//! the clock). Workers print `REINITROW method total_us [detect_us respawn_us rewire_us]`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Parser;
use weft::checkpoint::{FileCheckpoint, MemCheckpoint};
use weft::coll::Op;
use weft::Weft;
use weft_pmix::epoch::{joined_ns, last_rollback, mono_ns};
use weft_testkit::job::{End, Supervisor};

use crate::report::median;

const ROW: &str = "REINITROW";
/// Iteration of an epoch (or job) at which the victim dies, at the earliest.
const KILL_AT: u64 = 15;
/// The application computes at least this long in an epoch before the victim dies (a job
/// runs for a while between failures; weft-run's standby process is started meanwhile).
const EPOCH_RUN: Duration = Duration::from_millis(500);

#[derive(Parser, Debug)]
#[command(
    name = "weft-bench reinit",
    about = "Global restart (Reinit) vs revoke+shrink vs whole-job restart"
)]
pub struct ReinitCli {
    /// Ranks per job.
    #[arg(short = 'n', default_value_t = 8)]
    ranks: u32,
    /// Failures per method (reinit: in a row in one job; the others: one job each).
    #[arg(long, default_value_t = 5)]
    kills: u32,
    /// Hard timeout per job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// Run the reinit job with `weft-run --no-standby` (every replacement is a fresh fork/exec).
    #[arg(long = "no-standby")]
    no_standby: bool,
    /// Worker role (internal): reinit | shrink | restart | resume.
    #[arg(long, hide = true)]
    worker: Option<String>,
    /// Directory for kill stamps and checkpoints (internal).
    #[arg(long, hide = true)]
    dir: Option<PathBuf>,
}

fn die() -> ! {
    // SAFETY: raise() with a valid signal number has no memory-safety preconditions.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned")
}

/// The victim's last act: write its stamp to `dir/kill-TAG`, then SIGKILL itself.
fn stamp_and_die(dir: &Path, tag: &str) -> ! {
    let _ = std::fs::write(dir.join(format!("kill-{tag}")), mono_ns().to_string());
    die()
}

fn read_stamp(dir: &Path, tag: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join(format!("kill-{tag}"))).ok()?.trim().parse().ok()
}

fn us(from: u64, to: u64) -> f64 {
    to.saturating_sub(from) as f64 / 1e3
}

/// One iteration of the application: an allreduce of one word.
fn iteration(w: &Weft, it: u64) -> weft::Result<()> {
    let mut v = [it];
    w.world().allreduce_inplace(&mut v, Op::Max)
}

/// The resilient main of the `reinit` worker.
fn reinit_main(cli: &ReinitCli, dir: &Path, ckpt: &mut MemCheckpoint, w: &Weft) -> weft::Result<()> {
    let back = mono_ns();
    let entered = std::time::Instant::now();
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    let epoch = w.epoch().unwrap_or(0);
    if epoch > 0 {
        // Latest: every rank back in main; the replacement's join; the launcher's stamps.
        let rb = last_rollback().filter(|r| r.epoch == epoch);
        let restarted = joined_ns().filter(|_| rb.is_none()).unwrap_or(0);
        let mut v = [back, restarted, rb.map_or(0, |r| r.seen_ns)];
        world.allreduce_inplace(&mut v, Op::Max)?;
        if me == 0 {
            match read_stamp(dir, &format!("e{}", epoch - 1)) {
                Some(kill) => println!(
                    "{ROW} reinit {:.1} {:.1} {:.1} {:.1}",
                    us(kill, v[0]),
                    us(kill, v[2]),
                    us(v[2], v[1]),
                    us(v[1], v[0])
                ),
                None => eprintln!("reinit worker: no kill stamp for epoch {}", epoch - 1),
            }
        }
    }
    let mut it = ckpt.load(w)?.map_or(0, |(v, _)| v * 10);
    let start = it;
    loop {
        let victim = me == (epoch as u32 + 1) % n;
        if epoch < u64::from(cli.kills) && victim && it >= start + KILL_AT && entered.elapsed() >= EPOCH_RUN {
            stamp_and_die(dir, &format!("e{epoch}"));
        }
        if epoch >= u64::from(cli.kills) && it >= start + KILL_AT {
            return Ok(());
        }
        iteration(w, it)?;
        it += 1;
        if it % 10 == 0 {
            ckpt.save(w, it / 10, &it.to_le_bytes())?;
        }
    }
}

/// The `shrink` worker: ULFM recovery of the same application.
fn shrink_worker(dir: &Path) -> weft::Result<()> {
    let w = weft::init()?;
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    let t0 = std::time::Instant::now();
    for it in 0.. {
        if it >= KILL_AT && me == n - 1 && t0.elapsed() >= EPOCH_RUN {
            stamp_and_die(dir, "shrink");
        }
        if iteration(&w, it).is_err() {
            break;
        }
    }
    world.revoke()?;
    let small = world.shrink()?;
    let mut v = [mono_ns()];
    small.allreduce_inplace(&mut v, Op::Max)?;
    if small.rank() == 0 {
        if let Some(kill) = read_stamp(dir, "shrink") {
            println!("{ROW} shrink {:.1}", us(kill, v[0]));
        }
    }
    w.finalize()
}

/// The `restart` worker: on the failure every survivor aborts the job (as an MPI job with
/// fatal errors does); `resume`: the new job back in main, then it loads the checkpoint.
fn restart_worker(dir: &Path, resume: bool) -> weft::Result<()> {
    let w = weft::init()?;
    let back = mono_ns();
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    let store = FileCheckpoint::new(dir.join("ckpt"));
    if resume {
        let mut v = [back];
        world.allreduce_inplace(&mut v, Op::Max)?;
        if me == 0 {
            if let Some(kill) = read_stamp(dir, "restart") {
                println!("{ROW} restart {:.1}", us(kill, v[0]));
            }
        }
        let loaded = store.load(&w)?;
        if loaded.is_none() {
            return Err(weft::Error::Reinit("restart: no checkpoint to resume from".into()));
        }
        return w.finalize();
    }
    let t0 = std::time::Instant::now();
    for it in 0.. {
        if it >= KILL_AT && me == n - 1 && t0.elapsed() >= EPOCH_RUN {
            stamp_and_die(dir, "restart");
        }
        if iteration(&w, it).is_err() {
            w.abort(3, "a rank failed: the job restarts from its checkpoint");
        }
        if (it + 1) % 10 == 0 {
            store.save(&w, (it + 1) / 10, &(it + 1).to_le_bytes())?;
        }
    }
    unreachable!("the loop ends in a failure")
}

fn worker(cli: &ReinitCli, role: &str) -> weft::Result<()> {
    let dir = cli.dir.clone().ok_or_else(|| weft::Error::Reinit("--dir is required".into()))?;
    match role {
        "reinit" => {
            let mut ckpt = MemCheckpoint::new();
            weft::reinit(|_, w| reinit_main(cli, &dir, &mut ckpt, w))
        }
        "shrink" => shrink_worker(&dir),
        "restart" => restart_worker(&dir, false),
        "resume" => restart_worker(&dir, true),
        _ => Err(weft::Error::Reinit(format!("unknown worker role {role:?}"))),
    }
}

/// Rows printed by one job, or why it failed.
fn job(cli: &ReinitCli, run: &Path, exe: &Path, role: &str, dir: &Path) -> (Vec<Vec<f64>>, Option<String>) {
    let mut cmd = Command::new(run);
    cmd.args(["-n", &cli.ranks.to_string(), "--timeout", &cli.timeout.to_string()]);
    if cli.no_standby && role == "reinit" {
        cmd.arg("--no-standby");
    }
    cmd.arg(exe).args(["reinit", "--worker", role, "--kills", &cli.kills.to_string(), "--dir"]).arg(dir);
    let done = match Supervisor::new(Duration::from_secs(cli.timeout + 15)).run(cmd) {
        Ok(d) => d,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let rows: Vec<Vec<f64>> = done
        .stdout
        .lines()
        // The resumed job reports the restart.
        .filter_map(|l| {
            l.strip_prefix(ROW)?.trim().strip_prefix(if role == "resume" { "restart" } else { role })
        })
        .map(|rest| rest.split_whitespace().filter_map(|x| x.parse().ok()).collect())
        .collect();
    let err = match done.end {
        End::TimedOut(_) => Some("timed out".to_string()),
        End::Exited(_) if rows.is_empty() => {
            let tail: Vec<&str> = done.stderr.lines().rev().take(6).collect();
            Some(format!("no result; stderr tail: {tail:?}"))
        }
        End::Exited(_) => None,
    };
    (rows, err)
}

fn fresh_dir(base: &Path, name: &str) -> PathBuf {
    let d = base.join(name);
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::create_dir_all(&d);
    d
}

fn driver(cli: &ReinitCli) -> ExitCode {
    let (exe, run) = match (crate::job::self_exe(), crate::job::weft_run_path()) {
        (Ok(e), Ok(r)) => (e, r),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("weft-bench reinit: {e}");
            return ExitCode::FAILURE;
        }
    };
    let base = std::env::temp_dir().join(format!("weft-bench-reinit-{}", std::process::id()));
    let mut failed = false;
    let mut note = |what: &str, err: Option<String>| {
        if let Some(e) = err {
            eprintln!("weft-bench reinit: {what}: {e}");
            failed = true;
        }
    };
    // reinit: one job, `kills` failures in a row.
    let (reinit, err) = job(cli, &run, &exe, "reinit", &fresh_dir(&base, "reinit"));
    note("reinit job", err);
    let (mut shrink, mut restart) = (Vec::new(), Vec::new());
    for k in 0..cli.kills {
        let (rows, err) = job(cli, &run, &exe, "shrink", &fresh_dir(&base, &format!("shrink{k}")));
        note("shrink job", err);
        shrink.extend(rows.iter().filter_map(|r| r.first().copied()));
        // Whole-job restart: the failing job, then (launched by this driver as soon as the
        // first one is gone) the resumed one.
        let dir = fresh_dir(&base, &format!("restart{k}"));
        let _ = job(cli, &run, &exe, "restart", &dir);
        let (rows, err) = job(cli, &run, &exe, "resume", &dir);
        note("restart job", err);
        restart.extend(rows.iter().filter_map(|r| r.first().copied()));
    }
    let _ = std::fs::remove_dir_all(&base);
    let col = |i: usize| median(reinit.iter().filter_map(|r| r.get(i).copied()).collect());
    let (total, detect, respawn, rewire) = (col(0), col(1), col(2), col(3));
    let (shr, rst) = (median(shrink.clone()), median(restart.clone()));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "# weft-bench reinit: {} ranks, {} failures per method, medians in ms{} (load average: {})",
        cli.ranks,
        cli.kills,
        if cli.no_standby { ", reinit without standby" } else { "" },
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!("{:<44} {:>10} {:>8}", "recovery", "median ms", "samples");
    println!("{:<44} {:>10.2} {:>8}", "reinit: kill -> full world back in main", total / 1e3, reinit.len());
    println!("{:<44} {:>10.2}", "  detection (kill -> weft-run saw it)", detect / 1e3);
    println!("{:<44} {:>10.2}", "  respawn (-> replacement joined)", respawn / 1e3);
    println!("{:<44} {:>10.2}", "  re-wiring (-> every rank in main)", rewire / 1e3);
    println!("{:<44} {:>10.2} {:>8}", "revoke + shrink: kill -> shrunk world", shr / 1e3, shrink.len());
    println!("{:<44} {:>10.2} {:>8}", "whole-job restart: kill -> new job in main", rst / 1e3, restart.len());
    println!(
        "reinit / restart = {:.3} (target <= 0.1); reinit median {:.2} ms (target <= 50)",
        total / rst,
        total / 1e3
    );
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Entry point of `weft-bench reinit …` (`args` without the program name and `reinit`).
pub fn main(args: Vec<String>) -> ExitCode {
    let cli = ReinitCli::parse_from(std::iter::once("weft-bench reinit".to_string()).chain(args));
    if cli.ranks < 2 || cli.kills == 0 {
        eprintln!("weft-bench reinit: -n must be at least 2 and --kills at least 1");
        return ExitCode::from(2);
    }
    match cli.worker.clone() {
        Some(role) => match worker(&cli, &role) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft-bench reinit worker ({role}): {e}");
                ExitCode::FAILURE
            }
        },
        None => driver(&cli),
    }
}
