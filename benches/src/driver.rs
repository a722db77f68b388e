//! The driver role: launches the weft job (and the peer jobs), every one a supervised job
//! ([`crate::job`]) under a hard timeout, collects the CSV rows they print and prints the
//! report.

use std::process::{Command, ExitCode};
use std::time::Duration;

use crate::job::{load_avg, run_job, self_exe, weft_run_path, JobError, JobOutput};
use crate::peers::{self, Peer, PeerError};
use crate::report::{reduce, reduce_rounds, Report};
use crate::Cli;
use crate::{fipp, net};

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
    let fi = (!fipp_samples.is_empty()).then(|| reduce(fipp_samples.clone(), true));
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
