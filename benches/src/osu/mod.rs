//! `weft-bench osu`: the same OSU Micro-Benchmarks 7.2 binaries on MPICH 5.0.2's standard-ABI
//! library and on weft's, interleaved, with the ratio.
//!
//! A program compiled once against the MPI 5.0 standard ABI runs on every library that
//! implements it, so one build of OSU (with MPICH's `mpicc_abi`) is timed on both libraries by
//! switching the library path: MPICH's under its own launcher (`mpiexec` of the same
//! installation, `-bind-to core`), weft's under `weft-run` with weft's `libmpi_abi.so.1` first on
//! `LD_LIBRARY_PATH` (ranks pinned one per core, weft's default). Each round runs every library
//! once per benchmark, back to back, in an order that rotates from round to round (so no library
//! always runs first, or right after another); ratios are formed within a round and their median
//! over the rounds is reported (`report.rs`).
//!
//! Files: `build.rs` (unpacking and building OSU once), `run.rs` (one benchmark on one library),
//! `parse.rs` (OSU's output), `report.rs` (the table).

mod build;
mod parse;
mod report;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Command line of `weft-bench osu`.
#[derive(Parser, Clone, Debug)]
#[command(
    name = "weft-bench osu",
    about = "The same OSU 7.2 binaries (built once with MPICH's mpicc_abi) on MPICH 5.0.2's \
             libmpi_abi.so.1 and on weft's, interleaved, with weft/MPICH ratios"
)]
pub struct OsuCli {
    /// Benchmarks (OSU program names without `osu_`), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "latency,bw,bibw,allreduce,barrier,bcast")]
    pub bench: Vec<String>,
    /// Ranks per job.
    #[arg(short = 'n', long = "ranks", default_value_t = 2)]
    pub ranks: u32,
    /// Message sizes, OSU's `-m` syntax (`MIN:MAX`); barrier has none.
    #[arg(long, default_value = "8:1048576")]
    pub sizes: String,
    /// Interleaved rounds (weft and MPICH once each per round).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub rounds: u32,
    /// Extra arguments for every OSU run (e.g. `-i 2000`).
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    pub osu_args: String,
    /// The OSU 7.2 tarball (default: $WEFT_SUITES or ../shared/suites next to the repository).
    #[arg(long)]
    pub tarball: Option<PathBuf>,
    /// Where OSU is built (kept between runs; default target/osu-abi in the repository).
    #[arg(long)]
    pub build_dir: Option<PathBuf>,
    /// MPICH's `mpicc_abi` (default: from PATH).
    #[arg(long)]
    pub mpicc_abi: Option<PathBuf>,
    /// Hard timeout of each run, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Print CSV (`benchmark,size,impl,value,unit`) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Print every run's value (`round,benchmark,size,impl,value`) instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub raw: bool,
    /// Start each weft rank in its own session (`setsid -w`), as MPICH's hydra does with its
    /// ranks. Under Linux autogroup scheduling (`/proc/sys/kernel/sched_autogroup_enabled`)
    /// a session is a scheduling group, so on a loaded machine MPICH's ranks otherwise each
    /// get a group's share of the CPU while weft's share one group with the shell that
    /// started them; no effect on an idle machine.
    #[arg(long)]
    pub own_sessions: bool,
    /// Also run weft-bench's own benchmark of each operation (latency, bw, bibw, allreduce,
    /// barrier, bcast: weft without the MPI layer) in every round, and print MPI/native.
    #[arg(long)]
    pub native: bool,
}

/// Entry point of `weft-bench osu …` (`args` without the program name and `osu`).
pub fn main(args: Vec<String>) -> ExitCode {
    let cli = OsuCli::parse_from(std::iter::once("weft-bench osu".to_string()).chain(args));
    let setup = match build::prepare(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("weft-bench osu: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut rows = Vec::new();
    let mut failed = false;
    for round in 0..cli.rounds {
        for bench in &cli.bench {
            let native = cli.native && run::native_name(bench).is_some();
            let mut libs = vec![run::Lib::Mpich, run::Lib::Weft];
            if native {
                libs.push(run::Lib::Native);
            }
            let k = round as usize % libs.len();
            libs.rotate_left(k);
            for lib in libs {
                match run::one(&cli, &setup, bench, lib, round) {
                    Ok(r) => rows.extend(r),
                    Err(e) => {
                        eprintln!("weft-bench osu: round {round}: osu_{bench} on {}: {e}", lib.name());
                        failed = true;
                    }
                }
            }
        }
    }
    let table = report::Table::new(&rows);
    if cli.raw {
        print!("{}", report::raw(&rows));
    } else if cli.csv {
        print!("{}", table.csv());
    } else {
        print!("{}", table.text(cli.ranks, cli.rounds));
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
