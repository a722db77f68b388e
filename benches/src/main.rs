//! `weft-bench`: OSU-style point-to-point benchmarks for weft, side by side with Open MPI and
//! MPICH.
//!
//! Roles:
//! - **driver** (started outside any launcher): launches `weft-run -n N <self> --worker …`,
//!   optionally builds and launches the MPI peer programs (`--peers`), collects the CSV rows
//!   every job prints and prints one table (or CSV) with ratios;
//! - **worker** (started inside a job: `PMIX_RANK` (weft-run, PRRTE, Slurm), `PMI_FD` or `OMPI_COMM_WORLD_RANK`
//!   set, or `--worker`): runs the measurements; rank 0 prints CSV rows (`--worker`) or the
//!   finished table (`weft-run -n 2 weft-bench`).

mod coll;
mod counts;
mod dgrp;
mod driver;
mod fipp;
mod ft;
mod job;
mod net;
mod osu;
mod peers;
mod pt2pt;
mod reinit;
mod report;

use std::process::ExitCode;

use clap::{Parser, ValueEnum};

/// One benchmark of the suite (OSU micro-benchmarks semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum Bench {
    /// Ping-pong between ranks 0 and 1; one-way latency in µs (half the round trip).
    Latency,
    /// Window of 64 isends (rank 0) / irecvs (rank 1), then a 4-byte ack; MB/s.
    Bw,
    /// Both directions at once (64 irecvs + 64 isends per window on each side); MB/s.
    Bibw,
    /// Message rate of the `bw` window pattern; messages/s (sizes ≤ 8 KiB).
    Mr,
}

impl Bench {
    pub const ALL: [Bench; 4] = [Bench::Latency, Bench::Bw, Bench::Bibw, Bench::Mr];

    pub fn name(self) -> &'static str {
        match self {
            Bench::Latency => "latency",
            Bench::Bw => "bw",
            Bench::Bibw => "bibw",
            Bench::Mr => "mr",
        }
    }

    pub fn parse(s: &str) -> Option<Bench> {
        Bench::ALL.into_iter().find(|b| b.name() == s)
    }

    pub fn unit(self) -> &'static str {
        match self {
            Bench::Latency => "us",
            Bench::Bw | Bench::Bibw => "MB/s",
            Bench::Mr => "msg/s",
        }
    }

    /// Latency: lower is better. Bandwidth and message rate: higher is better.
    pub fn lower_is_better(self) -> bool {
        self == Bench::Latency
    }
}

/// Receive buffers of a window benchmark (OSU's `-b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Buffers {
    /// One receive buffer per message of a window.
    Multiple,
    /// Every message of a window into the same buffer (as OSU 7.2 does by default).
    Single,
}

impl Buffers {
    pub fn name(self) -> &'static str {
        match self {
            Buffers::Multiple => "multiple",
            Buffers::Single => "single",
        }
    }
}

/// Command line shared by the driver and the worker (the driver forwards the relevant options).
#[derive(Parser, Clone, Debug)]
#[command(
    name = "weft-bench",
    version,
    about = "OSU-style point-to-point benchmarks for weft (latency, bw, bibw, mr), \
             optionally side by side with Open MPI and MPICH",
    after_help = "Run alone it launches `weft-run -n RANKS` itself (weft-run next to this \
                  executable, or $WEFT_RUN); run inside a weft-run job it is a worker and rank 0 \
                  prints the table."
)]
pub struct Cli {
    /// Benchmarks to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "latency,bw,bibw,mr")]
    pub bench: Vec<Bench>,
    /// Print CSV (`benchmark,size,impl,value,unit`) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Also run the Open MPI and MPICH peer programs and print weft/peer ratios.
    #[arg(long)]
    pub peers: bool,
    /// Smallest message size in bytes (sizes are the powers of two in [min, max]).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub min: u64,
    /// Largest message size in bytes.
    #[arg(long, default_value_t = 4 << 20, value_parser = clap::value_parser!(u64).range(1..=(1 << 25)))]
    pub max: u64,
    /// Number of ranks per job (only ranks 0 and 1 exchange messages; others join barriers).
    #[arg(short = 'n', long = "ranks", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..))]
    pub ranks: u32,
    /// Multiply every iteration and warm-up count by this factor.
    #[arg(long, default_value_t = 1.0)]
    pub iters_scale: f64,
    /// Timed repetitions per size (latency: median, bandwidth/rate: max).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub reps: u32,
    /// Interleaved rounds: run weft and each peer once per round, reduce across rounds (spreads
    /// the background load of a shared machine evenly over the implementations).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Do not pin ranks to cores (weft: rank r -> core r % ncores; peers: --bind-to none).
    #[arg(long)]
    pub no_pin: bool,
    /// Receive buffers of bw and bibw: `multiple` (one per message of a window, 64 distinct
    /// buffers) or `single` (the whole window into one buffer, OSU's default `-b single`).
    #[arg(long, value_enum, default_value_t = Buffers::Multiple)]
    pub buffers: Buffers,
    /// latency: rank 0 times each ping-pong by itself (a clock read before the send and one
    /// after the receive, the round trips' times summed), as OSU 7.2's osu_latency does with
    /// MPI_Wtime; `weft-bench osu --native` runs its native latency so. Default: one clock
    /// read around each repetition's whole loop.
    #[arg(long)]
    pub time_each: bool,
    /// Hard timeout of each launched job, in seconds (the job's process group is killed).
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Network path: weft's ranks on 2 virtual nodes (`weft-run --nodes 2`) over libfabric on
    /// `lo`, on the provider weft picks (`tcp;ofi_rxm`) or `WEFT_FI_PROVIDER` (e.g. `net`); with
    /// --peers, Open MPI (ob1 + tcp BTL) and MPICH (shared memory off, TCP) on `lo` too.
    #[arg(long)]
    pub net: bool,
    /// Virtual nodes of the weft job: 1 (default, shared memory) or 2 (same as --net).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub nodes: Option<u32>,
    /// With --net: also run raw `fi_pingpong` (8 B, on lo, same provider as weft) and compare
    /// weft's 8 B latency with it.
    #[arg(long)]
    pub fi_pingpong: bool,
    /// Internal: run as a worker inside a job and stream CSV rows from rank 0.
    #[arg(long, hide = true)]
    pub worker: bool,
}

impl Cli {
    /// True for the network path (`--net` or `--nodes 2`).
    pub fn net_mode(&self) -> bool {
        self.net || self.nodes == Some(2)
    }

    /// The selected benchmarks, deduplicated, in canonical order.
    pub fn benches(&self) -> Vec<Bench> {
        Bench::ALL.into_iter().filter(|b| self.bench.contains(b)).collect()
    }

    /// The options a worker (weft or peer) needs, as command-line arguments.
    pub fn worker_args(&self) -> Vec<String> {
        let names: Vec<&str> = self.benches().iter().map(|b| b.name()).collect();
        vec![
            "--bench".into(),
            names.join(","),
            "--min".into(),
            self.min.to_string(),
            "--max".into(),
            self.max.to_string(),
            "--iters-scale".into(),
            self.iters_scale.to_string(),
            "--reps".into(),
            self.reps.to_string(),
            "--buffers".into(),
            self.buffers.name().into(),
        ]
    }
}

/// True when this process was started by a launcher (weft-run, a PMIx server, Open MPI).
fn inside_job() -> bool {
    ["PMIX_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

/// `weft-bench ulfm [ARGS]`: runs `scripts/ulfm-bench` (it builds the suite's C benchmarks with
/// both compilers and launchers, which is shell work) with `ARGS`, and returns its status.
fn ulfm_bench(args: Vec<String>) -> ExitCode {
    const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/ulfm-bench");
    match std::process::Command::new("bash").arg(SCRIPT).args(args).status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("weft-bench ulfm: cannot run {SCRIPT}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    // `weft-bench ft …`: the fault-tolerance benchmarks (driver and workers in `ft/`).
    if std::env::args().nth(1).as_deref() == Some("ft") {
        return ft::main(std::env::args().skip(2).collect());
    }
    // `weft-bench reinit …`: global restart vs revoke+shrink vs whole-job restart.
    if std::env::args().nth(1).as_deref() == Some("reinit") {
        return reinit::main(std::env::args().skip(2).collect());
    }
    // `weft-bench dgrp …`: HyperQuickSort on a reconfigurable hypercube, per fault scenario.
    if std::env::args().nth(1).as_deref() == Some("dgrp") {
        return dgrp::main(std::env::args().skip(2).collect());
    }
    // `weft-bench osu …`: the same OSU binaries on MPICH's and weft's standard-ABI libraries.
    if std::env::args().nth(1).as_deref() == Some("osu") {
        return osu::main(std::env::args().skip(2).collect());
    }
    // `weft-bench ulfm …`: ICL's ULFM benchmarks on weft and on Open MPI 5 + ULFM, one table.
    if std::env::args().nth(1).as_deref() == Some("ulfm") {
        return ulfm_bench(std::env::args().skip(2).collect());
    }
    // `--bench allreduce,barrier,bcast`: the collective benchmarks (driver and worker in `coll.rs`).
    if coll::selected(std::env::args()) {
        return coll::main(std::env::args().skip(1).collect());
    }
    let cli = Cli::parse();
    if !(cli.iters_scale > 0.0 && cli.iters_scale.is_finite()) {
        eprintln!("weft-bench: --iters-scale must be a positive number");
        return ExitCode::from(2);
    }
    if cli.min > cli.max {
        eprintln!("weft-bench: --min ({}) is larger than --max ({})", cli.min, cli.max);
        return ExitCode::from(2);
    }
    if cli.fi_pingpong && !cli.net_mode() {
        eprintln!("weft-bench: --fi-pingpong needs --net (or --nodes 2)");
        return ExitCode::from(2);
    }
    if cli.worker || inside_job() {
        match pt2pt::run_worker(&cli) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft-bench worker: {e}");
                ExitCode::from(e.exit_code())
            }
        }
    } else {
        driver::run(&cli)
    }
}
