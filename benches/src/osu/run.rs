//! One OSU benchmark on one library: the command line, a supervised run with a hard timeout,
//! and its results as rows.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use weft_testkit::job::{End, Supervisor};

use super::build::Setup;
use super::report::Row;
use super::OsuCli;

/// Which library the binary runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    /// MPICH 5.0.2's `libmpi_abi.so.1` (the binary's own RUNPATH), under MPICH's `mpiexec`.
    Mpich,
    /// weft's `libmpi_abi.so.1`, under `weft-run`.
    Weft,
    /// weft without the MPI layer: `weft-bench`'s own benchmark of the same operation (Rust API).
    Native,
}

impl Lib {
    pub fn name(self) -> &'static str {
        match self {
            Lib::Mpich => "mpich",
            Lib::Weft => "weft",
            Lib::Native => "native",
        }
    }
}

/// The OSU program `osu_<bench>` in the build.
fn program(setup: &Setup, bench: &str) -> Result<PathBuf, String> {
    let name = format!("osu_{bench}");
    [
        "pt2pt/standard",
        "pt2pt/persistent",
        "collective/blocking",
        "collective/non_blocking",
        "collective/neighborhood",
    ]
    .iter()
    .map(|d| setup.bins.join(d).join(&name))
    .find(|p| p.exists())
    .ok_or_else(|| format!("no OSU program {name} in {}", setup.bins.display()))
}

/// `weft-bench`'s own benchmark for OSU's `bench`, if it has one.
pub fn native_name(bench: &str) -> Option<&'static str> {
    Some(match bench {
        "latency" => "latency",
        "bw" => "bw",
        "bibw" => "bibw",
        "allreduce" => "allreduce",
        "barrier" => "barrier",
        "bcast" => "bcast",
        _ => return None,
    })
}

/// Run `weft-bench`'s own benchmark of the operation (same sizes, same job size); its rows.
/// The point-to-point ones run as workers under `weft-run` exactly as the OSU program does on
/// weft (same binding, same sessions); bw and bibw as OSU does by default: a window's
/// receives into one buffer, one timed loop per run.
fn native(cli: &OsuCli, setup: &Setup, bench: &str, round: u32) -> Result<Vec<Row>, String> {
    let name = native_name(bench).ok_or_else(|| format!("weft-bench has no native {bench}"))?;
    let (min, max) = cli.sizes.split_once(':').unwrap_or(("1", cli.sizes.as_str()));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let cmd = if matches!(name, "latency" | "bw" | "bibw") {
        let mut c = weft_job(cli, setup);
        // weft's configuration rejects unknown WEFT_* variables: the job gets none of the driver's.
        c.env_remove("WEFT_RUN").env_remove("WEFT_SUITES");
        c.arg(exe).args(["--worker", "--bench", name, "--min", min, "--max", max]);
        if name == "latency" {
            // osu_latency times each iteration with two MPI_Wtime calls, summed.
            c.args(["--time-each", "--reps", "1"]);
        } else {
            c.args(["--buffers", "single", "--reps", "1"]);
        }
        c
    } else {
        let mut c = Command::new(exe);
        c.args(["--csv", "--bench", name, "--min", min, "--max", max, "--ranks", &cli.ranks.to_string()]);
        // One run of osu_coll.c's default counts (1000 timed calls after 100 warm-up ones, a
        // tenth of both above 8 KiB), as the OSU program makes, not weft-bench's default five
        // runs of 10 000: a short run carries its start-up (caches, frequency, the first calls'
        // plans) in its mean, and MPI/native compares the same loop.
        c.args(["--iters", "1000", "--reps", "1"]);
        c
    };
    let done = Supervisor::new(Duration::from_secs(cli.timeout)).run(cmd).map_err(|e| e.to_string())?;
    match done.end {
        End::Exited(s) if s.success() => {}
        End::Exited(s) => return Err(format!("{s}; stderr: {}", tail(&done.stderr))),
        End::TimedOut(_) => return Err(format!("no result within {} s", cli.timeout)),
    }
    Ok(done
        .stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() == 5 && f[0] == name).then(|| {
                Some(Row {
                    round,
                    bench: bench.to_string(),
                    size: f[1].parse().ok()?,
                    lib: "native",
                    value: f[3].parse().ok()?,
                })
            })?
        })
        .collect())
}

/// Run `osu_<bench>` once on `lib` in round `round`; its result rows.
pub fn one(cli: &OsuCli, setup: &Setup, bench: &str, lib: Lib, round: u32) -> Result<Vec<Row>, String> {
    if lib == Lib::Native {
        return native(cli, setup, bench, round);
    }
    let prog = program(setup, bench)?;
    let n = cli.ranks.to_string();
    let mut cmd = match lib {
        Lib::Mpich => {
            let mut c = Command::new(&setup.mpiexec);
            c.args(["-n", &n, "-bind-to", "core"]).env_remove("LD_LIBRARY_PATH");
            c
        }
        Lib::Weft => {
            let path = match std::env::var("LD_LIBRARY_PATH") {
                Ok(p) if !p.is_empty() => format!("{}:{p}", setup.weft_lib.display()),
                _ => setup.weft_lib.display().to_string(),
            };
            let mut c = weft_job(cli, setup);
            c.env("LD_LIBRARY_PATH", path);
            c
        }
        Lib::Native => unreachable!("handled above"),
    };
    cmd.arg(&prog);
    if bench != "barrier" && bench != "ibarrier" {
        cmd.args(["-m", &cli.sizes]);
    }
    cmd.args(cli.osu_args.split_whitespace());
    let done = Supervisor::new(Duration::from_secs(cli.timeout)).run(cmd).map_err(|e| e.to_string())?;
    match done.end {
        End::Exited(s) if s.success() => {}
        End::Exited(s) => return Err(format!("{s}; stderr: {}", tail(&done.stderr))),
        End::TimedOut(_) => return Err(format!("no result within {} s", cli.timeout)),
    }
    let rows: Vec<Row> = super::parse::results(&done.stdout)
        .into_iter()
        .map(|(size, value)| Row { round, bench: bench.to_string(), size, lib: lib.name(), value })
        .collect();
    if rows.is_empty() {
        return Err(format!("no results in its output: {}", tail(&done.stdout)));
    }
    Ok(rows)
}

/// `weft-run -n N --bind-to core` (and `setsid -w` before the program with
/// `--own-sessions`): the job every weft run of a round starts with.
fn weft_job(cli: &OsuCli, setup: &Setup) -> Command {
    let mut c = Command::new(&setup.weft_run);
    c.args(["-n", &cli.ranks.to_string(), "--bind-to", "core"]);
    if cli.own_sessions {
        c.args(["setsid", "-w"]);
    }
    c
}

fn tail(s: &str) -> String {
    let l: Vec<&str> = s.lines().rev().take(4).collect();
    l.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
