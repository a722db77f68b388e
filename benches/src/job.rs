//! Launching jobs from a driver: where `weft-run` and this executable are, the supervised job
//! runner (`weft_testkit::job`, hard timeout, CSV rows collected) and its errors, and the
//! machine's load average for the report. Every driver (point-to-point, collectives, ft, reinit,
//! dgrp) and the peer builds use it; it imports only the row format ([`Row`]).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use weft_testkit::job::{Event, Line, SpawnError, Stream, Supervisor};

use crate::report::Row;

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

/// 1-minute load average from /proc/loadavg.
pub(crate) fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}
