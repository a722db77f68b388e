//! The driver role: launches the weft job (and the peer jobs), every one a supervised job
//! (`weft_testkit::job`) under a hard timeout, collects the CSV rows they print and prints the
//! report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::{Command, ExitCode, ExitStatus};
use std::time::Duration;

use weft_testkit::job::{Event, Line, SpawnError, Stream, Supervisor};

use crate::peers::{self, Peer, PeerError};
use crate::report::{reduce_rounds, Report, Row};
use crate::Cli;
use crate::{fipp, net};

/// Why a launched job did not finish cleanly.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("timed out after {0} s (process group killed)")]
    Timeout(u64),
    #[error("exited with {status}{}", tail_note(.stderr_tail))]
    Failed { status: ExitStatus, stderr_tail: Vec<String> },
    #[error("finished but printed no result rows")]
    NoRows,
    #[error("{0}")]
    Setup(String),
    /// Printed every row and [`DONE_MARKER`], then did not exit within the grace period
    /// (process group killed): a hang in the MPI's finalize, the rows are complete.
    #[error("hung in finalize after printing all rows; killed after {0} s")]
    HungAfterDone(u64),
}

/// Line a peer prints once all its rows are out and only `MPI_Finalize` is left.
pub const DONE_MARKER: &str = "# osu_p2p: measurements done, finalizing";

fn tail_note(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; last stderr lines:\n    {}", tail.join("\n    "))
    }
}

/// Rows a job printed (also the partial ones of a failed job) and how it ended.
pub struct JobOutput {
    pub rows: Vec<Row>,
    pub result: Result<(), JobError>,
}

/// Runs `cmd` as a supervised job (own process group, killed at `timeout` or when this driver
/// dies); rows are the stdout lines that parse as CSV rows; other output is forwarded to our
/// stderr prefixed with `[label]` (stderr only when `forward_stderr`; its last lines are part
/// of the error either way).
pub fn run_job(label: &str, cmd: Command, timeout: Duration, forward_stderr: bool) -> JobOutput {
    run_job_grace(label, cmd, timeout, forward_stderr, None)
}

/// [`run_job`]; with `done_grace`, a job that printed [`DONE_MARKER`] gets only that long to
/// exit before its group is killed ([`JobError::HungAfterDone`], rows kept).
pub fn run_job_grace(
    label: &str,
    cmd: Command,
    timeout: Duration,
    forward_stderr: bool,
    done_grace: Option<Duration>,
) -> JobOutput {
    let mut job = match Supervisor::new(timeout).spawn(cmd) {
        Ok(j) => j,
        Err(e) => return JobOutput { rows: Vec::new(), result: Err(e.into()) },
    };
    let progress = std::io::stderr().is_terminal();
    let mut rows = Vec::new();
    let mut stderr_tail: Vec<String> = Vec::new();
    let mut graced = false;
    let end = loop {
        match job.next_event() {
            Event::Line(Line { stream: Stream::Out, text }) if text.trim() == DONE_MARKER => {
                if let (Some(g), false) = (done_grace, graced) {
                    job.cut_deadline(g);
                    graced = true;
                }
            }
            Event::Line(Line { stream: Stream::Out, text }) => match Row::parse(&text) {
                Some(r) => {
                    if progress {
                        eprintln!("[{label}] {}", r.csv());
                    }
                    rows.push(r);
                }
                None if text.trim().is_empty() || text.starts_with("benchmark,") => {}
                None => eprintln!("[{label}] {text}"),
            },
            Event::Line(Line { stream: Stream::Err, text }) => {
                if forward_stderr {
                    eprintln!("[{label}] {text}");
                }
                stderr_tail.push(text);
                if stderr_tail.len() > 12 {
                    stderr_tail.remove(0);
                }
            }
            Event::Exited(status) => break Ok(status),
            Event::TimedOut(_) => break Err(()),
        }
    };
    let result = match (end, done_grace) {
        (Err(()), Some(g)) if graced => Err(JobError::HungAfterDone(g.as_secs())),
        (Err(()), _) => Err(JobError::Timeout(timeout.as_secs())),
        (Ok(status), _) if !status.success() => Err(JobError::Failed { status, stderr_tail }),
        (Ok(_), _) if rows.is_empty() => Err(JobError::NoRows),
        (Ok(_), _) => Ok(()),
    };
    JobOutput { rows, result }
}

/// This executable's path. When it was rebuilt while the driver runs, Linux reports the old
/// inode as `<path> (deleted)`: the path itself (the new build) is what later jobs run.
pub(crate) fn self_exe() -> Result<PathBuf, JobError> {
    let exe = std::env::current_exe().map_err(|e| JobError::Setup(format!("current_exe: {e}")))?;
    match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
        Some(live) if std::path::Path::new(live).is_file() => Ok(PathBuf::from(live)),
        _ => Ok(exe),
    }
}

/// `weft-run`: `$WEFT_RUN`, else next to this executable.
pub(crate) fn weft_run_path() -> Result<PathBuf, JobError> {
    if let Some(p) = std::env::var_os("WEFT_RUN") {
        return Ok(PathBuf::from(p));
    }
    let exe = self_exe()?;
    let p = exe.with_file_name("weft-run");
    if p.is_file() {
        Ok(p)
    } else {
        Err(JobError::Setup(format!(
            "weft-run not found at {} (build it: cargo build -p weft-pmix --release --bin \
             weft-run, or set WEFT_RUN)",
            p.display()
        )))
    }
}

/// Launches `weft-run -n N --timeout T <self> --worker …` (`--net`: with `--nodes 2`, or
/// `--map 1,N-1` for more ranks, so that ranks 0 and 1 are always on different virtual nodes).
fn run_weft(cli: &Cli) -> JobOutput {
    let setup = || -> Result<Command, JobError> {
        let run = weft_run_path()?;
        let exe = self_exe()?;
        let mut cmd = Command::new(run);
        // weft's Config rejects unknown WEFT_* variables: keep the driver's own out of the job.
        cmd.env_remove("WEFT_RUN").env_remove("WEFT_BENCH_PEER_DIR");
        cmd.arg("-n").arg(cli.ranks.to_string()).arg("--timeout").arg(cli.timeout.to_string());
        if cli.net_mode() {
            match cli.ranks {
                2 => cmd.args(["--nodes", "2"]),
                n => cmd.arg("--map").arg(format!("1,{}", n - 1)),
            };
            // The provider fi_pingpong runs on (the one weft would pick, or WEFT_FI_PROVIDER),
            // on loopback. WEFT_BIND=none: every rank is local rank 0 of its node, so `core`
            // would put both on core 0 (and the worker's pinning only sees that core); the
            // worker pins rank r -> core r instead.
            cmd.env("WEFT_FI_PROVIDER", fipp::provider())
                .env("WEFT_FI_DOMAIN", "lo")
                .env("WEFT_BIND", "none");
            // Beside MPICH over the wheel's libfabric, weft runs over that same library.
            if cli.peers {
                if let Some(w) = peers::mpich_wheel() {
                    cmd.envs(w.libfabric_env());
                }
            }
        }
        cmd.arg(exe).arg("--worker").args(cli.worker_args());
        if cli.no_pin {
            cmd.arg("--no-pin");
        }
        Ok(cmd)
    };
    match setup() {
        // weft-run's own timeout fires first; ours is the backstop.
        Ok(cmd) => run_job("weft", cmd, Duration::from_secs(cli.timeout + 15), true),
        Err(e) => JobOutput { rows: Vec::new(), result: Err(e) },
    }
}

/// 1-minute load average from /proc/loadavg.
pub(crate) fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The driver role. Exit status 1 when a job failed (the table still shows what was measured).
pub fn run(cli: &Cli) -> ExitCode {
    let benches = cli.benches();
    let load_before = load_avg();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut failed = false;
    // Implementations that failed or are unavailable are not retried in later rounds.
    let mut weft_dead = false;
    let mut dead_peers: Vec<Peer> = Vec::new();
    let peer_list: &[Peer] = match (cli.peers, cli.net_mode()) {
        (false, _) => &[],
        (true, false) => &Peer::ALL,
        (true, true) => &Peer::NET,
    };
    let mut fipp_setup = None;
    if cli.fi_pingpong {
        match fipp::prepare(!cli.no_pin) {
            Ok(s) => fipp_setup = Some(s),
            Err(e) => {
                eprintln!("weft-bench: fi_pingpong unavailable: {e}");
                notes.push(format!("fi_pingpong unavailable: {e}"));
            }
        }
    }
    let mut fipp_samples = Vec::new();

    for round in 1..=cli.rounds {
        if cli.rounds > 1 {
            eprintln!("weft-bench: round {round}/{}", cli.rounds);
        }
        if !weft_dead {
            let weft = run_weft(cli);
            rows.extend(weft.rows);
            if let Err(e) = weft.result {
                eprintln!("weft-bench: weft job failed: {e}");
                notes.push(format!("FAILED weft (round {round}): {e}"));
                failed = true;
                weft_dead = true;
            }
        }
        for &peer in peer_list {
            if dead_peers.contains(&peer) {
                continue;
            }
            match peers::run(peer, cli) {
                Ok(out) => {
                    rows.extend(out.rows);
                    if let Err(e @ JobError::HungAfterDone(_)) = &out.result {
                        eprintln!("weft-bench: peer {}: {e}", peer.name());
                        notes.push(format!("{} (round {round}): {e}; its rows are complete", peer.name()));
                    } else if let Err(e) = out.result {
                        eprintln!("weft-bench: peer {} failed: {e}", peer.name());
                        notes.push(format!("FAILED {} (round {round}): {e}", peer.name()));
                        failed = true;
                        dead_peers.push(peer);
                    }
                }
                Err(e) => {
                    eprintln!("weft-bench: {e}");
                    notes.push(e.to_string());
                    // A missing MPI is a skip, not a failure.
                    failed |= !matches!(e, PeerError::Unavailable { .. });
                    dead_peers.push(peer);
                }
            }
        }
        if let Some(setup) = &fipp_setup {
            match fipp::run(setup, Duration::from_secs(cli.timeout.min(120))) {
                Ok(v) => {
                    eprintln!("[fi_pingpong] latency,{},fi_pingpong,{v:.3},us", fipp::SIZE);
                    fipp_samples.push(v);
                }
                Err(e) => {
                    eprintln!("weft-bench: {e}");
                    notes.push(format!("FAILED fi_pingpong (round {round}): {e}"));
                    failed = true;
                    fipp_setup = None;
                }
            }
        }
    }

    let rows = reduce_rounds(rows);
    if cli.net_mode() {
        notes.extend(net::shm_suspects(&rows));
    }
    let peer_cols: Vec<&str> = peer_list.iter().map(|p| p.name()).collect();
    let ncores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = match (load_before, load_avg()) {
        (Some(a), Some(b)) => Some(format!(
            "machine: {ncores} cores, 1-min load average {a:.2} before / {b:.2} after the run \
             (the ranks themselves add ~{}; more than that means other work competed for the \
             cores and the numbers are noisy)",
            cli.ranks.min(ncores as u32)
        )),
        _ => None,
    };
    let report = Report {
        benches: &benches,
        rows: &rows,
        peers: &peer_cols,
        notes: &notes,
        reps: cli.reps,
        iters_scale: cli.iters_scale,
        pinned: !cli.no_pin,
        ranks: cli.ranks,
        rounds: cli.rounds,
        load,
    };
    let fi = (!fipp_samples.is_empty()).then(|| crate::pt2pt::reduce(fipp_samples.clone(), true));
    if cli.csv {
        print!("{}", report.csv());
        if let Some(f) = fi {
            print!("{}", net::fipp_csv(&rows, f));
        }
    } else if cli.net_mode() {
        print!("{}", net::net_table(&report.table(), cli, &peer_cols));
        if let Some(f) = fi {
            let how = fipp_setup.as_ref().map_or(String::new(), fipp::Setup::describe);
            print!("{}", net::fipp_table(&rows, f, fipp_samples.len(), &how));
        }
    } else {
        print!("{}", report.table());
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
