//! The job runner: builds the `weft-run` command line of every scenario job, runs the jobs
//! (weft's and the peer's) as supervised jobs with a hard timeout, collects the `FTROW` lines
//! they print ([`FtRow`]), and counts what ran ([`Runs`]); [`drive`] is the driver's loop over
//! rounds, job sizes and scenarios.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use weft_testkit::job::{Event, Line, Stream, Supervisor};

use super::peer::{build_peer, ompi5, ompi_cmd, opal_prefix};
use super::report::report;
use super::rows::{FtRow, Runs};
use super::{ncores, FtCli, FINALIZING, OMPI};
use crate::job::weft_run_path;

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

/// `weft-run` command line for one weft worker job.
fn weft_cmd(cli: &FtCli, run: &Path, n: u32, scenario: &str) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(run);
    // The driver's own variables: weft's configuration refuses WEFT_* keys it does not know.
    cmd.env_remove("WEFT_RUN").env_remove("WEFT_BENCH_PEER_DIR").env_remove("WEFT_OMPI_VENV");
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

/// Weft's worker for `scenario` under Open MPI 5's PRRTE (`mpirun --with-ft ulfm`, the PMIx
/// server that delivers `PMIX_EVENT_PROC_TERMINATED`): one node, so shared memory is off
/// (no pidfd watch) and nothing is sent to the victim: the PMIx event is the only path.
fn weft_under_prrte_cmd(cli: &FtCli, mpirun: &Path, n: u32, scenario: &str) -> Command {
    let mut cmd = Command::new(mpirun);
    cmd.env("OPAL_PREFIX", opal_prefix(mpirun));
    cmd.args(["--with-ft", "ulfm", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]);
    cmd.arg("-n").arg(n.to_string());
    cmd.env("PRTE_MCA_prte_abort_non_zero_exit", "0").env_remove("WEFT_RUN_CTL").env_remove("WEFT_OMPI_VENV");
    cmd.env("WEFT_SHM", "off").env("WEFT_FI_PROVIDER", "tcp;ofi_rxm").env("WEFT_FI_DOMAIN", "lo");
    cmd.env("WEFT_BIND", "none");
    if n as usize > ncores() {
        cmd.env("WEFT_PROGRESS", "yield");
    }
    let exe = std::env::current_exe().expect("current_exe");
    cmd.arg(exe)
        .arg("ft")
        .arg("--worker")
        .arg(scenario)
        .arg("--iters-scale")
        .arg(cli.iters_scale.to_string());
    if cli.no_pin {
        cmd.arg("--no-pin");
    }
    cmd
}

/// The driver: every job of the selected scenarios, then the report. Exit status 1 when a job
/// printed no rows or timed out.
pub(super) fn drive(cli: &FtCli) -> std::process::ExitCode {
    let want = |s: &str| cli.bench.iter().any(|b| b == s);
    let Ok(run) = weft_run_path() else {
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
        scen_ff.extend(["healthy", "agree-c"]);
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
                    "overhead-hb" | "agree-c" => None,
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
    // `detect` runs every detection source; `detect-<source>` one of them.
    for s in ["detect-default", "detect-shm", "detect-launcher", "detect-fabric", "detect-hb"] {
        if want("detect") || want(s) {
            fail_scen.push(s);
        }
    }
    for _ in 0..cli.kills {
        for &n in &cli.ranks {
            for &s in &fail_scen {
                go("weft", s, n, weft_cmd(cli, &run, n, s), &mut rows);
                if let Some((mpirun, bin)) = &peer {
                    if matches!(s, "kill-recover" | "detect-default") {
                        go(OMPI, s, n, ompi_cmd(cli, mpirun, bin, n, s), &mut rows);
                    }
                    if s == "detect-launcher" {
                        // The same out-of-band path with PRRTE as the PMIx server.
                        let mut got = vec![];
                        go("weft@prrte", s, n, weft_under_prrte_cmd(cli, mpirun, n, s), &mut got);
                        rows.extend(got.into_iter().filter(|r| r.metric == "detect_launcher_us").map(
                            |mut r| {
                                r.metric = "detect_prrte_us".into();
                                r
                            },
                        ));
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
