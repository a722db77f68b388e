//! Collective latency benchmarks (`weft-bench --bench allreduce,barrier,bcast`): driver and
//! worker, side by side with Open MPI and MPICH (`--peers`, `peers/osu_coll.c`).
//!
//! OSU 7.2's method, identical in the worker below and in `peers/osu_coll.c`: per size,
//! `iters / 10` warm-up calls, then `iters` timed calls (sizes above 8 KiB: a tenth of both).
//! Each allreduce and bcast call is timed on its own and followed by an untimed barrier (so a
//! bcast root cannot run ahead of its receivers); barriers run back to back. Each rank's mean
//! time per call, averaged over ranks (a reduce to rank 0, as osu_allreduce's "Avg Latency");
//! `reps` repetitions, the median. `weft-bench osu --native` relies on this: the same timing
//! as the OSU programs, so MPI/native is the MPI layer's cost. Sizes: allreduce (f32 sum, size/4 elements) 4, 8,
//! ..; barrier 0 only; bcast (bytes, root 0) 1, 2, 4, ..; the powers of two in [min, max].
//! weft's barrier is the collectives engine's (`Comm::barrier`). After the timed loops one
//! call checks the data. `--rounds K` interleaves the implementations K times and takes the
//! median across rounds. Rows are `benchmark,size,impl,value,us`; with `--peers` the report adds
//! weft/openmpi, weft/mpich and weft/best-peer ratios (≤ 1.00: weft is faster).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use weft::coll::Op;
use weft_testkit::job::{Event, Line, Stream, Supervisor};

use crate::job::{load_avg, weft_run_path};
use crate::peers::{self, Peer};
use crate::report::median;

/// One collective benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum CollBench {
    /// Allreduce, f32 sum.
    Allreduce,
    /// Barrier (size 0).
    Barrier,
    /// Broadcast of bytes from rank 0.
    Bcast,
}

impl CollBench {
    const ALL: [CollBench; 3] = [CollBench::Allreduce, CollBench::Barrier, CollBench::Bcast];

    fn name(self) -> &'static str {
        match self {
            CollBench::Allreduce => "allreduce",
            CollBench::Barrier => "barrier",
            CollBench::Bcast => "bcast",
        }
    }

    fn parse(s: &str) -> Option<CollBench> {
        CollBench::ALL.into_iter().find(|b| b.name() == s)
    }

    /// The sizes measured (identical to the loop of osu_coll.c).
    fn sizes(self, min: u64, max: u64) -> Vec<u64> {
        match self {
            CollBench::Barrier => vec![0],
            b => {
                let first = if b == CollBench::Allreduce { 4 } else { 1 };
                std::iter::successors(Some(first), |s| Some(s * 2))
                    .take_while(|&s| s <= max)
                    .filter(|&s| s >= min)
                    .collect()
            }
        }
    }
}

/// True if the command line selects collective benchmarks (`--bench` names one of them).
pub fn selected(args: impl Iterator<Item = String>) -> bool {
    let args: Vec<String> = args.collect();
    let mut lists = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a == "--bench" {
            lists.extend(args.get(i + 1).cloned());
        } else if let Some(v) = a.strip_prefix("--bench=") {
            lists.push(v.to_string());
        }
    }
    lists.iter().flat_map(|l| l.split(',')).any(|b| CollBench::parse(b.trim()).is_some())
}

/// Command line of the collective benchmarks (driver and worker).
#[derive(Parser, Clone, Debug)]
#[command(
    name = "weft-bench",
    about = "OSU-style collective latency benchmarks for weft (allreduce, barrier, bcast), \
             optionally side by side with Open MPI and MPICH"
)]
pub struct CollCli {
    /// Collectives to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', required = true)]
    pub bench: Vec<CollBench>,
    /// Print CSV (`benchmark,size,impl,value,unit`, plus ratio rows) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Also run `peers/osu_coll.c` with Open MPI and MPICH and print weft/peer ratios.
    #[arg(long)]
    pub peers: bool,
    /// Smallest size in bytes.
    #[arg(long, default_value_t = 0)]
    pub min: u64,
    /// Largest size in bytes.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(0..=(1 << 24)))]
    pub max: u64,
    /// Ranks per job.
    #[arg(short = 'n', long = "ranks", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..))]
    pub ranks: u32,
    /// Timed calls per size (sizes above 8 KiB: a tenth); warm-up a tenth of that.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(10..))]
    pub iters: u32,
    /// Timed repetitions per size (median).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub reps: u32,
    /// Interleaved rounds of every implementation (median across rounds).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Do not pin ranks (weft: rank r -> core r % ncores; peers: bind to core).
    #[arg(long)]
    pub no_pin: bool,
    /// Hard timeout of each job in seconds (its process group is killed).
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Internal: run as a worker inside a job.
    #[arg(long, hide = true)]
    pub worker: bool,
}

impl CollCli {
    fn benches(&self) -> Vec<CollBench> {
        CollBench::ALL.into_iter().filter(|b| self.bench.contains(b)).collect()
    }

    /// MPICH (ch4:ucx here) busy-polls without yielding: with more ranks than cores each call
    /// takes milliseconds, so its oversubscribed jobs run a hundredth of the iterations.
    fn oversubscribed(&self) -> bool {
        self.ranks as usize > std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    fn worker_args(&self) -> Vec<String> {
        self.worker_args_iters(self.iters)
    }

    fn worker_args_iters(&self, iters: u32) -> Vec<String> {
        let names: Vec<&str> = self.benches().iter().map(|b| b.name()).collect();
        let mut v: Vec<String> = vec!["--bench".into(), names.join(",")];
        for (k, x) in [("--min", self.min), ("--max", self.max)] {
            v.extend([k.to_string(), x.to_string()]);
        }
        for (k, x) in [("--iters", iters), ("--reps", self.reps)] {
            v.extend([k.to_string(), x.to_string()]);
        }
        v
    }
}

/// Entry point for the collective benchmarks (`args` without the program name).
pub fn main(args: Vec<String>) -> ExitCode {
    let cli = match CollCli::try_parse_from(std::iter::once("weft-bench".to_string()).chain(args)) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let in_job =
        ["PMIX_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK"].iter().any(|v| std::env::var_os(v).is_some());
    if cli.worker || in_job {
        match worker(&cli) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft-bench worker: {e}");
                ExitCode::FAILURE
            }
        }
    } else {
        drive(&cli)
    }
}

// ------------------------------------------------------------------------------ worker

/// (timed calls, warm-up calls) for one size: `iters` and a tenth of it, both a tenth above
/// 8 KiB, as osu_coll.c (whose defaults are `iters` = 1000).
fn counts(iters: u32, size: u64) -> (u32, u32) {
    let it = if size > 8192 { (iters / 10).max(1) } else { iters };
    (it, it / 10)
}

fn pin(rank: u32) {
    if let Some(ids) = core_affinity::get_core_ids().filter(|i| !i.is_empty()) {
        if !core_affinity::set_for_current(ids[rank as usize % ids.len()]) {
            eprintln!("weft-bench: rank {rank}: could not pin");
        }
    }
}

fn worker(cli: &CollCli) -> Result<(), String> {
    let w = weft::init().map_err(|e| e.to_string())?;
    let world = w.world();
    let (rank, n) = (world.rank(), world.size());
    if !cli.no_pin {
        pin(rank);
    }
    let max = cli.max as usize;
    let mut s = vec![0f32; max.div_ceil(4) + 2];
    let mut r = vec![0f32; max.div_ceil(4) + 2];
    let mut b = vec![0u8; max + 8];
    let err = |e: weft::Error| format!("rank {rank}: {e}");
    for bench in cli.benches() {
        for size in bench.sizes(cli.min, cli.max) {
            let (iters, skip) = counts(cli.iters, size);
            let k = size as usize;
            let call = |s: &[f32], r: &mut [f32], b: &mut [u8]| -> Result<(), weft::Error> {
                match bench {
                    CollBench::Allreduce => world.allreduce(&s[..k / 4], &mut r[..k / 4], Op::Sum),
                    CollBench::Barrier => world.barrier(),
                    CollBench::Bcast => world.bcast(&mut b[..k], 0),
                }
            };
            let mut v = Vec::with_capacity(cli.reps as usize);
            for _ in 0..cli.reps {
                let mut timed = Duration::ZERO;
                world.barrier().map_err(err)?;
                for i in 0..iters + skip {
                    let t0 = Instant::now();
                    call(&s, &mut r, &mut b).map_err(err)?;
                    let dt = t0.elapsed();
                    if bench != CollBench::Barrier {
                        world.barrier().map_err(err)?;
                    }
                    if i >= skip {
                        timed += dt;
                    }
                }
                let mine = [timed.as_secs_f64() * 1e6 / iters as f64];
                let mut sum = [0.0f64];
                world.reduce(&mine, &mut sum, Op::Sum, 0).map_err(err)?;
                v.push(sum[0] / n as f64);
            }
            // Data check (as osu_coll.c).
            s.fill(1.0);
            for (i, x) in b.iter_mut().enumerate().take(k) {
                *x = if rank == 0 { (i * 7 + 1) as u8 } else { 0 };
            }
            call(&s, &mut r, &mut b).map_err(err)?;
            let ok = match bench {
                CollBench::Allreduce => r[..k / 4].iter().all(|&x| x == n as f32),
                CollBench::Barrier => true,
                CollBench::Bcast => b[..k].iter().enumerate().all(|(i, &x)| x == (i * 7 + 1) as u8),
            };
            if !ok {
                return Err(format!("rank {rank}: {} size {size}: data check failed", bench.name()));
            }
            s.fill(0.0);
            if rank == 0 {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{},{size},weft,{:.3},us", bench.name(), median(v));
                let _ = out.flush();
            }
        }
    }
    world.barrier().map_err(err)?;
    w.finalize().map_err(|e| e.to_string())
}

// ------------------------------------------------------------------------------ driver

/// One measured value.
#[derive(Clone, Debug)]
struct Row {
    bench: CollBench,
    size: u64,
    imp: String,
    value: f64,
}

fn parse_row(l: &str) -> Option<Row> {
    let f: Vec<&str> = l.trim().split(',').collect();
    if f.len() != 5 || f[4] != "us" {
        return None;
    }
    Some(Row {
        bench: CollBench::parse(f[0])?,
        size: f[1].parse().ok()?,
        imp: f[2].to_string(),
        value: f[3].parse().ok().filter(|v: &f64| v.is_finite())?,
    })
}

const DONE_MARKER: &str = "# osu_coll: measurements done, finalizing";

/// Runs `cmd` as a supervised job under `timeout`; returns the rows it printed and an error
/// text if it failed. A job that printed [`DONE_MARKER`] gets 15 s more to exit (an MPI that
/// hangs in finalize keeps its rows).
fn run_job(label: &str, cmd: Command, timeout: Duration) -> (Vec<Row>, Option<String>) {
    let mut job = match Supervisor::new(timeout).spawn(cmd) {
        Ok(j) => j,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let (mut rows, mut tail) = (Vec::new(), Vec::new());
    let status = loop {
        let (is_out, l) = match job.next_event() {
            Event::Line(Line { stream, text }) => (stream == Stream::Out, text),
            Event::Exited(st) => break Some(st),
            Event::TimedOut(_) => break None,
        };
        if is_out && l.trim() == DONE_MARKER {
            job.cut_deadline(Duration::from_secs(15));
        } else if let Some(r) = is_out.then(|| parse_row(&l)).flatten() {
            eprintln!("[{label}] {l}");
            rows.push(r);
        } else if !l.trim().is_empty() {
            eprintln!("[{label}] {l}");
            if !is_out {
                tail.push(l);
                if tail.len() > 8 {
                    tail.remove(0);
                }
            }
        }
    };
    let err = match status {
        None => Some("timed out or hung in finalize (process group killed)".to_string()),
        Some(st) if !st.success() => Some(format!("exited with {st}; stderr: {}", tail.join(" | "))),
        Some(_) if rows.is_empty() => Some("printed no rows".into()),
        Some(_) => None,
    };
    (rows, err)
}

fn weft_cmd(cli: &CollCli) -> Result<Command, String> {
    let run = weft_run_path().map_err(|_| "weft-run not found next to weft-bench (or set WEFT_RUN)")?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(run);
    cmd.env_remove("WEFT_RUN").env_remove("WEFT_BENCH_PEER_DIR");
    cmd.arg("-n").arg(cli.ranks.to_string()).arg("--timeout").arg(cli.timeout.to_string());
    cmd.arg(exe).arg("--worker").args(cli.worker_args());
    if cli.no_pin {
        cmd.arg("--no-pin");
    }
    Ok(cmd)
}

/// Builds `<target>/peers/osu_coll.<peer>` when missing or older than the source.
fn build_peer(peer: Peer) -> Result<PathBuf, String> {
    const SOURCE: &str = include_str!("../peers/osu_coll.c");
    const SOURCE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/peers/osu_coll.c");
    let mpicc = peer.mpicc_path().map_err(|e| e.to_string())?;
    let dir = peers::build_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = if PathBuf::from(SOURCE_PATH).is_file() {
        PathBuf::from(SOURCE_PATH)
    } else {
        let p = dir.join("osu_coll.c");
        if std::fs::read_to_string(&p).ok().as_deref() != Some(SOURCE) {
            std::fs::write(&p, SOURCE).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        p
    };
    let exe = dir.join(format!("osu_coll.{}", peer.name()));
    let mtime = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if matches!((mtime(&exe), mtime(&src)), (Some(b), Some(s)) if b >= s) {
        return Ok(exe);
    }
    eprintln!("weft-bench: building {} with {}", exe.display(), mpicc.display());
    let tmp = dir.join(format!(".osu_coll.{}.{}.tmp", peer.name(), std::process::id()));
    let out = Command::new(&mpicc).args(["-O2", "-o"]).arg(&tmp).arg(&src).output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => return Err(format!("{}: {}", peer.name(), String::from_utf8_lossy(&o.stderr))),
        Err(e) => return Err(format!("{}: {e}", mpicc.display())),
    }
    std::fs::rename(&tmp, &exe).map_err(|e| format!("{}: {e}", exe.display()))?;
    Ok(exe)
}

fn peer_cmd(peer: Peer, cli: &CollCli, prog: &PathBuf) -> Result<Command, String> {
    let mpirun = peer.mpirun_path().map_err(|e| e.to_string())?;
    let n = cli.ranks.to_string();
    let ncores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = Command::new(mpirun);
    match peer {
        Peer::OpenMpi => {
            let bind = match (cli.no_pin, cli.ranks as usize > ncores) {
                (true, _) => "none",
                (false, true) => "core:overload-allowed",
                (false, false) => "core",
            };
            cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .args(["--allow-run-as-root", "--oversubscribe", "-n", &n])
                .args(["--bind-to", bind, "--map-by", "core", "--mca", "btl", "self,vader"]);
        }
        // The wheel's MPICH is a peer of the network path only (not in `Peer::ALL`).
        Peer::Mpich | Peer::MpichOfi => {
            cmd.args(["-n", &n, "-bind-to", if cli.no_pin { "none" } else { "core" }]);
        }
    }
    let iters =
        if peer == Peer::Mpich && cli.oversubscribed() { (cli.iters / 1000).max(10) } else { cli.iters };
    cmd.arg(prog).arg(peer.name()).args(cli.worker_args_iters(iters));
    Ok(cmd)
}

fn drive(cli: &CollCli) -> ExitCode {
    let load_before = load_avg();
    let peer_list: Vec<Peer> = if cli.peers { Peer::ALL.to_vec() } else { Vec::new() };
    let mut progs: Vec<(Peer, PathBuf)> = Vec::new();
    let mut notes = Vec::new();
    let mut failed = false;
    if cli.peers && cli.oversubscribed() {
        notes.push(format!(
            "more ranks than cores: mpich (busy-polling, no yield) runs {} iterations instead of {}",
            (cli.iters / 1000).max(10),
            cli.iters
        ));
    }
    for &p in &peer_list {
        match build_peer(p) {
            Ok(x) => progs.push((p, x)),
            Err(e) => notes.push(format!("peer {} skipped: {e}", p.name())),
        }
    }
    let timeout = Duration::from_secs(cli.timeout);
    let mut rows = Vec::new();
    let (mut weft_dead, mut dead): (bool, Vec<Peer>) = (false, Vec::new());
    for round in 1..=cli.rounds {
        if cli.rounds > 1 {
            eprintln!("weft-bench: round {round}/{}", cli.rounds);
        }
        if !weft_dead {
            let (r, e) = match weft_cmd(cli) {
                Ok(cmd) => run_job("weft", cmd, timeout + Duration::from_secs(15)),
                Err(e) => (Vec::new(), Some(e)),
            };
            rows.extend(r);
            if let Some(e) = e {
                notes.push(format!("FAILED weft (round {round}): {e}"));
                (failed, weft_dead) = (true, true);
            }
        }
        for (p, prog) in &progs {
            if dead.contains(p) {
                continue;
            }
            let (r, e) = match peer_cmd(*p, cli, prog) {
                Ok(cmd) => run_job(p.name(), cmd, timeout),
                Err(e) => (Vec::new(), Some(e)),
            };
            let complete = !r.is_empty();
            rows.extend(r);
            if let Some(e) = e {
                notes.push(format!(
                    "{} (round {round}): {e}{}",
                    p.name(),
                    if complete { "; rows kept" } else { "" }
                ));
                if !complete {
                    failed = true;
                    dead.push(*p);
                }
            }
        }
    }
    let imps: Vec<&str> = std::iter::once("weft").chain(progs.iter().map(|(p, _)| p.name())).collect();
    let table = reduce(&rows, cli, &imps);
    let ncores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let progress = std::env::var("WEFT_PROGRESS").unwrap_or_else(|_| {
        // weft's default `auto`, resolved as weft resolves it on one host.
        format!("auto ({})", if cli.oversubscribed() { "yield" } else { "poll" })
    });
    let footer = format!(
        "{} ranks ({}), {} cores, weft progress {progress}; {} iterations, median of {} reps{}; \
         load average {} before / {} after",
        cli.ranks,
        if cli.no_pin { "not pinned" } else { "pinned" },
        ncores,
        cli.iters,
        cli.reps,
        if cli.rounds > 1 { format!(", median of {} rounds", cli.rounds) } else { String::new() },
        load_before.map_or("?".into(), |l| format!("{l:.2}")),
        load_avg().map_or("?".into(), |l| format!("{l:.2}")),
    );
    if cli.csv {
        print!("{}", csv(&table, &imps));
    } else {
        print!("{}", text(&table, &imps, &footer));
        for n in &notes {
            println!("# note: {n}");
        }
    }
    for n in &notes {
        eprintln!("note: {n}");
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Per (bench, size): the value of every implementation (median across rounds), in `imps` order.
type Table = Vec<(CollBench, u64, Vec<Option<f64>>)>;

fn reduce(rows: &[Row], cli: &CollCli, imps: &[&str]) -> Table {
    let mut t = Vec::new();
    for b in cli.benches() {
        for size in b.sizes(cli.min, cli.max) {
            let vals = imps
                .iter()
                .map(|imp| {
                    let v: Vec<f64> = rows
                        .iter()
                        .filter(|r| r.bench == b && r.size == size && r.imp == *imp)
                        .map(|r| r.value)
                        .collect();
                    (!v.is_empty()).then(|| median(v))
                })
                .collect();
            t.push((b, size, vals));
        }
    }
    t
}

/// weft / peer for each peer, then weft / best peer.
fn ratios(vals: &[Option<f64>]) -> (Vec<Option<f64>>, Option<f64>) {
    let w = vals[0];
    let per: Vec<Option<f64>> = vals[1..].iter().map(|p| Some(w? / p.filter(|&p| p > 0.0)?)).collect();
    let best = vals[1..].iter().flatten().copied().filter(|&p| p > 0.0).min_by(f64::total_cmp);
    (per, w.zip(best).map(|(w, b)| w / b))
}

fn csv(t: &Table, imps: &[&str]) -> String {
    let mut out = String::from("benchmark,size,impl,value,unit\n");
    for (b, size, vals) in t {
        for (imp, v) in imps.iter().zip(vals) {
            if let Some(v) = v {
                out += &format!("{},{size},{imp},{v:.3},us\n", b.name());
            }
        }
        let (per, best) = ratios(vals);
        for (imp, r) in imps[1..].iter().zip(per) {
            if let Some(r) = r {
                out += &format!("{},{size},weft/{imp},{r:.3},ratio\n", b.name());
            }
        }
        if let Some(r) = best {
            out += &format!("{},{size},weft/best,{r:.3},ratio\n", b.name());
        }
    }
    out
}

fn text(t: &Table, imps: &[&str], footer: &str) -> String {
    let mut out = String::from(
        "# collective latency (us, OSU method: per-rank average per call, averaged over ranks)\n",
    );
    let mut head = format!("{:<10} {:>8}", "benchmark", "size");
    for imp in imps {
        head += &format!(" {imp:>10}");
    }
    for imp in &imps[1..] {
        head += &format!(" {:>12}", format!("weft/{imp}"));
    }
    if imps.len() > 1 {
        head += &format!(" {:>10}", "weft/best");
    }
    out += &head;
    out.push('\n');
    let cell = |v: Option<f64>, w: usize| v.map_or(format!("{:>w$}", "-"), |v| format!("{v:>w$.3}"));
    for (b, size, vals) in t {
        let mut l = format!("{:<10} {size:>8}", b.name());
        for v in vals {
            l += &format!(" {}", cell(*v, 10));
        }
        let (per, best) = ratios(vals);
        for r in per {
            l += &format!(" {}", cell(r, 12));
        }
        if imps.len() > 1 {
            l += &format!(" {}", cell(best, 10));
        }
        out += &l;
        out.push('\n');
    }
    out += &format!("# {footer}\n# ratios: weft / peer; <= 1.00 means weft is faster\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_osu_coll() {
        assert_eq!(CollBench::Allreduce.sizes(0, 8), vec![4, 8]);
        assert_eq!(CollBench::Bcast.sizes(0, 8), vec![1, 2, 4, 8]);
        assert_eq!(CollBench::Barrier.sizes(0, 1 << 20), vec![0]);
        assert_eq!(counts(10_000, 8), (10_000, 1_000));
        assert_eq!(counts(10_000, 16384), (1_000, 100));
    }

    #[test]
    fn routing_and_ratios() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>().into_iter();
        assert!(selected(a("weft-bench --peers --bench allreduce,barrier")));
        assert!(selected(a("weft-bench --bench=bcast")));
        assert!(!selected(a("weft-bench --bench latency,bw")));
        let (per, best) = ratios(&[Some(1.0), Some(2.0), Some(0.5)]);
        assert_eq!(per, vec![Some(0.5), Some(2.0)]);
        assert_eq!(best, Some(2.0));
        assert!(parse_row("allreduce,8,openmpi,0.170,us").is_some());
        assert!(parse_row("latency,8,weft,0.1,us").is_none());
    }
}
