//! `weft-bench ft`: fault-tolerance benchmarks, weft side by side with Open MPI 5 + ULFM
//! (`peers/ft_ulfm.c`, `--peers`). This file owns the entry point, the line formats shared by
//! the driver and the workers, and small numeric helpers.
//!
//! Every scenario runs in its own job (a scenario with a failure kills one rank of its job):
//!
//! | scenario | what rank 0 reports |
//! |---|---|
//! | `healthy` | `agree` vs `allreduce` (same 8-byte word, BAND) in the same run and their ratio, `iagree`, `shrink` of a healthy communicator, revoke propagation (the revoke benchmark of Bouteiller, Bosilca and Dongarra, "Plan B: Interruption of Ongoing MPI Operations to Support Failure Recovery", EuroMPI 2015: plan A is an allreduce loop on a communicator that rank 0 revokes, measured until every rank's plan-A allreduce returns `Revoked`; plan B is the same loop on a duplicate communicator, whose first three allreduces after the revoke show the disturbance) and revoke+shrink recovery vs a shrink without revoke |
//! | `agree-c` (with `healthy`) | `healthy`'s agree and allreduce loops through the C ABI (`weft_comm_agree`, `weft_allreduce`) in a job of their own, for the agreement's latency from C against Rust |
//! | `overhead` | 8 B ping-pong latency (ranks 0 and 1) and 8 B allreduce latency in three jobs, alternated in every round: FT layer installed but unused, after one `agree` (FT activity running), heartbeat detector on |
//! | `kill-recover` | the last rank stamps CLOCK_MONOTONIC, sends the stamp, SIGKILLs itself while the others are in an allreduce with it; survivors: error → revoke → shrink → allreduce on the shrunk communicator. Kill → error, shrink duration, kill → shrunk allreduce done |
//! | `detect-*` | kill (or SIGSTOP for `hb`) → every survivor's failure table has the victim, per source: `shm` (in-band pidfd; launcher SIGSTOPped so its events cannot arrive), `launcher` (victim alone on virtual node 1, no traffic to it), `fabric` (victim on node 1, survivors send to it, launcher stopped), `hb` (victim SIGSTOPped, heartbeat detector), `default` (same node, all sources); with `--peers`, `launcher` also under PRRTE (`detect_prrte_us`: shm off, the PMIx event alone) |
//!
//! Stamps are CLOCK_MONOTONIC, shared by every process of the host: the victim sends its
//! stamp before it dies (on a duplicate communicator that is never revoked).

//! Files: `cli.rs` (the options), `scenarios.rs` (what each rank of a scenario job measures;
//! `capi_agree.rs` the `agree-c` scenario through the C ABI),
//! `jobs.rs` (launching and supervising the jobs, the driver loop), `peer.rs` (the Open MPI 5
//! peer's build and command line), `rows.rs` (the result rows and job counts the driver
//! collects), `report.rs` (tables and CSV).

mod capi_agree;
mod cli;
mod jobs;
mod peer;
mod report;
mod rows;
mod scenarios;

use clap::Parser;

use crate::report::median;
pub use cli::FtCli;

/// Prefix of every result line a worker (weft or the ULFM peer) prints.
const ROW: &str = "FTROW";
/// Line printed by rank 0 of a worker right before finalize.
const FINALIZING: &str = "# ft: done, finalizing";
/// The Open MPI 5 peer's label.
const OMPI: &str = "ompi5-ulfm";

fn ncores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn scaled(base: u64, scale: f64) -> u64 {
    ((base as f64 * scale + 0.5) as u64).max(1)
}

/// Entry point of `weft-bench ft …` (`args` without the program name and `ft`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    let cli = FtCli::parse_from(std::iter::once("weft-bench ft".to_string()).chain(args));
    if !(cli.iters_scale > 0.0 && cli.iters_scale.is_finite()) || cli.ranks.iter().any(|&n| n < 2) {
        eprintln!("weft-bench ft: --iters-scale must be positive and every --ranks at least 2");
        return std::process::ExitCode::from(2);
    }
    match cli.worker.as_deref() {
        Some("agree-c") => match capi_agree::run(&cli) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft-bench ft worker (agree-c): {e}");
                std::process::ExitCode::FAILURE
            }
        },
        Some(s) => match scenarios::run(&cli, s) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft-bench ft worker ({s}): {e}");
                std::process::ExitCode::FAILURE
            }
        },
        None => jobs::drive(&cli),
    }
}
