//! `weft-sim`: deterministic simulation of weft's fault-tolerance protocols.
//!
//! ```text
//! weft-sim run   --protocol era --n 1048576 --seed 7 --mode during --failures 16
//! weft-sim scale --protocol revoke --from 10 --to 20 [--csv]
//! weft-sim fuzz  --protocol era --seeds 1000 --max-log 14
//! weft-sim dgrp  --n 16 --seed 3 --slowed 4 --crashes 2 [--planted]
//! weft-sim dgrp-latency --from 4 --to 16
//! ```
//! Every run prints its seed and trace hash; the same command gives the same hash. A violated
//! invariant prints the seed and the replay command, and exits with status 1.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use weft_sim::gossip::drive::FM_MAX_N;
use weft_sim::scale::{fits, scale, ScaleOpts};
use weft_sim::{run, Config, Mode, Proto};

#[derive(Parser)]
#[command(name = "weft-sim", about = "Deterministic simulation of weft's FT protocols")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct Model {
    /// Inter-node latency (ns).
    #[arg(long)]
    latency: Option<u64>,
    /// Intra-node latency (ns).
    #[arg(long)]
    latency_intra: Option<u64>,
    /// Ranks per node (two-level topology; 0 = flat).
    #[arg(long)]
    rpn: Option<u32>,
    /// Per-message sender overhead (ns).
    #[arg(long)]
    overhead: Option<u64>,
    /// Bandwidth (bytes per ns = GB/s).
    #[arg(long)]
    bandwidth: Option<f64>,
    /// Max random extra delay per message (ns).
    #[arg(long)]
    jitter: Option<u64>,
    /// Do not keep per-(src, dst) FIFO order.
    #[arg(long)]
    no_fifo: bool,
    /// Hierarchical bin/bin tree for ERA / shrink (needs --rpn > 1).
    #[arg(long)]
    binbin: bool,
    /// ERA / shrink: run the failure-free fast path (recursive doubling) first, as the engine
    /// does.
    #[arg(long)]
    fast_path: bool,
    /// Gossip: cycles before any decision (the initial propagation phase, a safety margin;
    /// default ⌈log₂N⌉ + 8). 0 measures the algorithms' own consensus test; below the
    /// default, premature (wrong) decisions are reported as notes, not violations.
    #[arg(long)]
    gossip_min_cycles: Option<u32>,
}

impl Model {
    fn apply(&self, c: &mut Config) {
        let n = &mut c.net;
        if let Some(x) = self.latency {
            n.lat_inter = x;
        }
        if let Some(x) = self.latency_intra {
            n.lat_intra = x;
        }
        if let Some(x) = self.rpn {
            n.ranks_per_node = x;
        }
        if let Some(x) = self.overhead {
            n.overhead = x;
        }
        if let Some(x) = self.bandwidth {
            n.bandwidth = x;
        }
        if let Some(x) = self.jitter {
            n.jitter = x;
        }
        if self.no_fifo {
            n.fifo = false;
        }
        if self.binbin {
            c.binbin = true;
        }
        if self.fast_path {
            c.fast_path = true;
        }
        if self.gossip_min_cycles.is_some() {
            c.gossip_min_cycles = self.gossip_min_cycles;
        }
    }
    fn overridden(&self) -> bool {
        self.latency.is_some()
            || self.latency_intra.is_some()
            || self.rpn.is_some()
            || self.overhead.is_some()
            || self.bandwidth.is_some()
            || self.jitter.is_some()
            || self.no_fifo
            || self.binbin
            || self.fast_path
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// One DGRP run (slowdowns and crashes), invariants checked.
    Dgrp {
        #[arg(long, default_value_t = 16)]
        n: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 160)]
        intervals: u32,
        #[arg(long, default_value_t = 4)]
        barrier_every: u32,
        #[arg(long, default_value_t = 5)]
        zeta: u32,
        #[arg(long, default_value_t = 2.5)]
        factor: f64,
        #[arg(long, default_value_t = 2)]
        slowed: u32,
        #[arg(long, default_value_t = 1)]
        crashes: u32,
        /// Plant the bug: one member skips the rejoin agreement.
        #[arg(long)]
        planted: bool,
    },
    /// DGRP diagnosis latency in testing rounds for N = 2^from … 2^to (one member slowed
    /// beyond the threshold from round 4 to 12).
    DgrpLatency {
        #[arg(long, default_value_t = 4)]
        from: u32,
        #[arg(long, default_value_t = 16)]
        to: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// One run, invariants checked.
    Run {
        /// era | shrink | revoke | detector | gossip-fm | gossip-hfl | gossip-3p
        #[arg(long, value_parser = parse_proto)]
        protocol: Proto,
        /// Ranks.
        #[arg(long)]
        n: u32,
        /// Seed (default: from the clock; printed).
        #[arg(long)]
        seed: Option<u64>,
        /// none | before | during | cascade | root | mixed (default: drawn from the seed).
        #[arg(long, value_parser = parse_mode)]
        mode: Option<Mode>,
        /// Number of failures (default: drawn from the seed).
        #[arg(long)]
        failures: Option<u32>,
        #[command(flatten)]
        model: Model,
    },
    /// Scale series N = 2^from … 2^to with fitted growth.
    Scale {
        #[arg(long, value_parser = parse_proto)]
        protocol: Proto,
        #[arg(long, default_value_t = 10)]
        from: u32,
        #[arg(long, default_value_t = 20)]
        to: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Failure mode (default: during for era/shrink/revoke/detector, before for gossip,
        /// as in the gossip paper's experiments).
        #[arg(long, value_parser = parse_mode)]
        mode: Option<Mode>,
        /// Failures per run (default: 4 for tree protocols, 1 for detector and gossip).
        #[arg(long)]
        failures: Option<u32>,
        /// CSV output.
        #[arg(long)]
        csv: bool,
        #[command(flatten)]
        model: Model,
    },
    /// Many random seeds (random sizes up to 2^max-log and random failure schedules).
    Fuzz {
        #[arg(long, value_parser = parse_proto)]
        protocol: Proto,
        #[arg(long, default_value_t = 1000)]
        seeds: u64,
        #[arg(long, default_value_t = 0)]
        first_seed: u64,
        #[arg(long, default_value_t = 12)]
        max_log: u32,
    },
}

fn parse_proto(s: &str) -> Result<Proto, String> {
    Proto::parse(s)
        .ok_or_else(|| format!("unknown protocol {s}; one of {}", Proto::ALL.map(|p| p.name()).join(", ")))
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    Mode::parse(s)
        .ok_or_else(|| format!("unknown mode {s}; one of {}", Mode::ALL.map(|p| p.name()).join(", ")))
}

/// Print one run's report (or its violation, then `on_fail`) and its exit status.
fn outcome<R: std::fmt::Display, E: std::fmt::Display>(
    r: Result<R, E>,
    t: Instant,
    on_fail: impl FnOnce(),
) -> ExitCode {
    match r {
        Ok(r) => {
            println!("{r}");
            println!("wall {:.2}s; all invariants hold", t.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(v) => {
            println!("{v}");
            on_fail();
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Dgrp { n, seed, intervals, barrier_every, zeta, factor, slowed, crashes, planted } => {
            let c = weft_sim::dgrp::DgrpConfig {
                n,
                seed,
                intervals,
                barrier_every,
                zeta,
                factor,
                slowed,
                crashes,
                planted,
                fixed: None,
                net: Default::default(),
            };
            println!("weft-sim dgrp: {}", c.replay_command());
            let t = Instant::now();
            outcome(weft_sim::dgrp::run_dgrp(&c), t, || {})
        }
        Cmd::DgrpLatency { from, to, seed } => {
            println!("dgrp diagnosis latency (testing rounds); one member slowed from round 4 to 12, ζ = 5, factor 2.5");
            println!(
                "{:>8} {:>16} {:>16} {:>12} {:>12} {:>8}",
                "N", "removal(rounds)", "ready(rounds)", "final view", "msgs/proc/rnd", "wall(s)"
            );
            for log in from..=to.min(16) {
                let n = 1u32 << log;
                let t = Instant::now();
                match weft_sim::dgrp::latency_row(n, seed) {
                    Ok(r) => {
                        let first = |v: &[u32]| v.first().map_or("-".to_string(), |x| x.to_string());
                        println!(
                            "{:>8} {:>16} {:>16} {:>12} {:>12.2} {:>8.2}",
                            n,
                            first(&r.removal_rounds),
                            first(&r.ready_rounds),
                            r.final_view.map_or("-".to_string(), |v| v.to_string()),
                            r.msgs as f64 / n as f64 / 24.0,
                            t.elapsed().as_secs_f64()
                        );
                    }
                    Err(v) => {
                        println!("{v}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Cmd::Run { protocol, n, seed, mode, failures, model } => {
            let seed = seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
            let (m0, k0) = weft_sim::random_mode(protocol, n, seed);
            let mut c = Config::new(protocol, n, seed, mode.unwrap_or(m0), failures.unwrap_or(k0));
            model.apply(&mut c);
            println!(
                "weft-sim run: protocol={} n={} seed={} mode={} failures={} rpn={} binbin={} fast_path={} jitter={}ns skew={}ns",
                protocol.name(),
                n,
                seed,
                c.mode.name(),
                c.failures,
                c.net.ranks_per_node,
                c.binbin,
                c.fast_path,
                c.net.jitter,
                c.skew
            );
            let t = Instant::now();
            outcome(run(&c), t, || {
                if model.overridden() {
                    println!("  (add the same network-model flags to the replay command)");
                }
            })
        }
        Cmd::Scale { protocol, from, to, seed, mode, failures, csv, model } => {
            let gossip = protocol.is_gossip();
            let mode = mode.unwrap_or(if gossip { Mode::Before } else { Mode::During });
            let failures = failures.unwrap_or(if gossip || protocol == Proto::Detector { 1 } else { 4 });
            let mut probe = Config::new(protocol, 2, seed, mode, 0);
            probe.net = Default::default();
            model.apply(&mut probe);
            let o = ScaleOpts {
                proto: protocol,
                from,
                to,
                seed,
                mode,
                failures,
                net: probe.net,
                gossip_min_cycles: probe.gossip_min_cycles,
            };
            if csv {
                println!("protocol,log2n,n,seed,dead,rounds_max,rounds_mean,reached_max,reached_mean,msgs_per_proc,msgs_max,bytes_per_proc,mem_per_proc,vtime_us,events,trace,wall_s");
            } else {
                println!(
                    "scale: protocol={} mode={} failures={} seed={} N=2^{from}..2^{to}{}",
                    protocol.name(),
                    mode.name(),
                    failures,
                    seed,
                    o.gossip_min_cycles.map_or(String::new(), |m| format!(" gossip-min-cycles={m}"))
                );
                println!(
                    "{:>8} {:>5} {:>10} {:>10} {:>8} {:>8} {:>10} {:>8} {:>12} {:>10} {:>11} {:>18} {:>7}",
                    "N",
                    "dead",
                    "rounds",
                    "r.mean",
                    "reached",
                    "rch.mean",
                    "msgs/proc",
                    "max",
                    "bytes/proc",
                    "mem/proc",
                    "vtime(us)",
                    "trace",
                    "wall(s)"
                );
            }
            let res = scale(&o, |row| {
                let r = &row.report;
                if csv {
                    println!(
                        "{},{},{},{},{},{},{:.3},{},{},{:.3},{},{:.1},{:.1},{:.3},{},{:016x},{:.3}",
                        r.proto,
                        row.lg,
                        r.n,
                        r.seed,
                        r.dead,
                        r.rounds,
                        r.rounds_mean,
                        r.reached.map_or(String::new(), |x| format!("{x}")),
                        r.reached_mean.map_or(String::new(), |x| format!("{x:.3}")),
                        r.msgs_mean,
                        r.msgs_max,
                        r.bytes_mean,
                        r.mem_per_proc,
                        r.vtime as f64 / 1e3,
                        r.events,
                        r.trace,
                        row.wall
                    );
                } else {
                    println!(
                        "{:>8} {:>5} {:>10.1} {:>10.2} {:>8} {:>8} {:>10.2} {:>8} {:>12.0} {:>10.0} {:>11.1} {:>18x} {:>7.2}",
                        r.n,
                        r.dead,
                        r.rounds,
                        r.rounds_mean,
                        r.reached.map_or("-".into(), |x| format!("{x:.1}")),
                        r.reached_mean.map_or("-".into(), |x| format!("{x:.2}")),
                        r.msgs_mean,
                        r.msgs_max,
                        r.bytes_mean,
                        r.mem_per_proc,
                        r.vtime as f64 / 1e3,
                        r.trace,
                        row.wall
                    );
                    for note in &r.notes {
                        println!("         note: {note}");
                    }
                }
            });
            match res {
                Ok(rows) => {
                    if protocol == Proto::GossipFm && to > FM_MAX_N.trailing_zeros() {
                        println!(
                            "# gossip-fm stopped at N=2^{}: per-process state and every message hold one N-bit column per failure (O(N) per process, O(N^2) overall)",
                            FM_MAX_N.trailing_zeros()
                        );
                    }
                    for (name, a, b, r2) in fits(&rows) {
                        println!("# fit {name}: {a:.3}*log2(N) + {b:.3}  (R^2 = {r2:.4})");
                    }
                    ExitCode::SUCCESS
                }
                Err(v) => {
                    println!("{v}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Fuzz { protocol, seeds, first_seed, max_log } => {
            let t = Instant::now();
            for s in first_seed..first_seed + seeds {
                let n = weft_sim::fuzz_n(s, max_log);
                let c = Config::random(protocol, n, s);
                if let Err(v) = run(&c) {
                    println!("{v}");
                    println!("found after {} seeds, {:.2}s", s - first_seed + 1, t.elapsed().as_secs_f64());
                    return ExitCode::FAILURE;
                }
            }
            println!(
                "fuzz {}: {seeds} seeds from {first_seed}, all invariants hold ({:.2}s)",
                protocol.name(),
                t.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
    }
}
