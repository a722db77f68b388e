//! The weft measurements (the worker role): latency, bw, bibw, mr with OSU semantics.
//!
//! Must stay in lock-step with `benches/peers/osu_p2p.c`: same sizes, iteration counts,
//! warm-up, window, ack, repetitions, reduction and data check.

use std::io::Write as _;
use std::time::{Duration, Instant};

use crate::counts::{counts, sizes, WINDOW};
use crate::report::{reduce, Report, Row};
use crate::{Bench, Buffers, Cli};

const TAG_DATA: i32 = 100;
const TAG_ACK: i32 = 101;

/// Errors of the worker role.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("weft: {0}")]
    Weft(#[from] weft::Error),
    #[error("needs at least 2 ranks, the job has {0}")]
    TooFewRanks(u32),
    #[error("rank {rank}: {bench} size {size}: data mismatch at byte {offset} (got {got}, want {want})")]
    DataMismatch { rank: u32, bench: &'static str, size: u64, offset: usize, got: u8, want: u8 },
    #[error("rank {rank}: {bench} size {size}: receive status {what}")]
    BadStatus { rank: u32, bench: &'static str, size: u64, what: String },
}

impl WorkerError {
    pub fn exit_code(&self) -> u8 {
        match self {
            WorkerError::TooFewRanks(_) => 2,
            WorkerError::DataMismatch { .. } | WorkerError::BadStatus { .. } => 3,
            WorkerError::Weft(_) => 1,
        }
    }
}

fn pattern(i: usize, size: u64) -> u8 {
    ((i as u64 * 7 + size) % 251 + 1) as u8
}

/// Pins this rank to core `rank % ncores`; reports (does not fail) when that is impossible.
fn pin(rank: u32) {
    match core_affinity::get_core_ids() {
        Some(ids) if !ids.is_empty() => {
            let core = ids[rank as usize % ids.len()];
            if !core_affinity::set_for_current(core) {
                eprintln!("weft-bench: rank {rank}: could not pin to core {}", core.id);
            }
        }
        _ => eprintln!("weft-bench: rank {rank}: no core list, not pinned"),
    }
}

/// Post the receives of one window from `src`: into consecutive `size`-byte pieces of `rbuf`,
/// or with `single` all into its first `size` bytes (OSU's `-b single`).
fn post_window<'s>(
    world: &weft::Comm,
    s: &'s weft::Scope<'s, '_>,
    rbuf: &'s mut [u8],
    size: usize,
    single: bool,
    src: u32,
) -> Result<Vec<weft::Request<'s>>, weft::Error> {
    if single {
        return world.irecv_same(s, &mut rbuf[..size], WINDOW, src as i32, TAG_DATA);
    }
    let mut reqs = Vec::with_capacity(2 * WINDOW);
    for chunk in rbuf.chunks_mut(size) {
        reqs.push(world.irecv(s, chunk, src as i32, TAG_DATA)?);
    }
    Ok(reqs)
}

struct Ctx<'a> {
    w: &'a weft::Weft,
    world: weft::Comm,
    rank: u32,
    reps: u32,
    scale: f64,
    sbuf: Vec<u8>,
    /// `WINDOW * max` bytes: one distinct receive buffer per message of a window (`max` bytes
    /// with [`Buffers::Single`]: every message of a window into the same buffer).
    rbuf: Vec<u8>,
    buffers: Buffers,
    /// Latency: time each ping-pong by itself on rank 0 (`--time-each`).
    time_each: bool,
}

impl Ctx<'_> {
    fn check(&self, bench: Bench, buf: &[u8], size: u64) -> Result<(), WorkerError> {
        match buf.iter().enumerate().find(|&(i, &b)| b != pattern(i, size)) {
            None => Ok(()),
            Some((offset, &got)) => Err(WorkerError::DataMismatch {
                rank: self.rank,
                bench: bench.name(),
                size,
                offset,
                got,
                want: pattern(offset, size),
            }),
        }
    }

    fn check_status(&self, bench: Bench, st: &weft::Status, size: u64, src: u32) -> Result<(), WorkerError> {
        if st.count as u64 != size || st.source != src || st.tag != TAG_DATA {
            return Err(WorkerError::BadStatus {
                rank: self.rank,
                bench: bench.name(),
                size,
                what: format!(
                    "source {} tag {} count {} (want source {src} tag {TAG_DATA} count {size})",
                    st.source, st.tag, st.count
                ),
            });
        }
        Ok(())
    }

    /// `n` ping-pongs; returns the last receive's status (rank 0 and 1).
    fn pingpong(&mut self, size: usize, n: u64) -> Result<Option<weft::Status>, weft::Error> {
        if self.rank > 1 {
            return Ok(None); // idle rank: no buffers, only barriers
        }
        let (sbuf, rbuf) = (&self.sbuf[..size], &mut self.rbuf[..size]);
        let mut last = None;
        for _ in 0..n {
            match self.rank {
                0 => {
                    self.world.send(sbuf, 1, TAG_DATA)?;
                    last = Some(self.world.recv(rbuf, 1, TAG_DATA)?);
                }
                1 => {
                    last = Some(self.world.recv(rbuf, 0, TAG_DATA)?);
                    self.world.send(sbuf, 0, TAG_DATA)?;
                }
                _ => {}
            }
        }
        Ok(last)
    }

    /// Rank 0's side of `n` ping-pongs, each timed by itself as OSU 7.2's osu_latency times
    /// its iterations (a clock read before the send, one after the receive); the sum in
    /// seconds. What the clock reads cost inside each timed span is in the figure, as in OSU's.
    fn pingpong_each(&mut self, size: usize, n: u64) -> Result<f64, weft::Error> {
        let (sbuf, rbuf) = (&self.sbuf[..size], &mut self.rbuf[..size]);
        let mut total = Duration::ZERO;
        for _ in 0..n {
            let t0 = Instant::now();
            self.world.send(sbuf, 1, TAG_DATA)?;
            self.world.recv(rbuf, 1, TAG_DATA)?;
            total += t0.elapsed();
        }
        Ok(total.as_secs_f64())
    }

    fn latency(&mut self, size: u64) -> Result<f64, WorkerError> {
        let (iters, skip) = counts(Bench::Latency, size, self.scale);
        let n = size as usize;
        self.world.barrier()?;
        self.pingpong(n, skip)?;
        let mut res = Vec::with_capacity(self.reps as usize);
        for _ in 0..self.reps {
            self.world.barrier()?;
            let secs = if self.time_each && self.rank == 0 {
                self.pingpong_each(n, iters)?
            } else {
                let t0 = Instant::now();
                self.pingpong(n, iters)?;
                t0.elapsed().as_secs_f64()
            };
            res.push(secs * 1e6 / (2.0 * iters as f64));
        }
        // One untimed exchange into a zeroed buffer checks data and status.
        if let Some(r) = self.rbuf.get_mut(..n) {
            r.fill(0);
        }
        self.world.barrier()?;
        if let Some(st) = self.pingpong(n, 1)? {
            self.check_status(Bench::Latency, &st, size, 1 - self.rank)?;
            self.check(Bench::Latency, &self.rbuf[..n], size)?;
        }
        Ok(reduce(res, true))
    }

    /// `n` windows; returns the receive statuses of the last window (receiving ranks).
    fn windows(&mut self, size: usize, n: u64, bidir: bool) -> Result<Vec<weft::Status>, weft::Error> {
        if self.rank > 1 {
            return Ok(Vec::new()); // idle rank: no buffers, only barriers
        }
        let world = &self.world;
        let sbuf = &self.sbuf[..size];
        let single = self.buffers == Buffers::Single;
        let mut statuses = Vec::new();
        let mut ack = [0u8; 4];
        for _ in 0..n {
            let rbuf = &mut self.rbuf[..size * if single { 1 } else { WINDOW }];
            if bidir {
                let peer = 1 - self.rank;
                statuses = self.w.scope(|s| -> Result<Vec<weft::Status>, weft::Error> {
                    let mut reqs = post_window(world, s, rbuf, size, single, peer)?;
                    reqs.reserve(WINDOW);
                    for _ in 0..WINDOW {
                        reqs.push(world.isend(s, sbuf, peer, TAG_DATA)?);
                    }
                    let mut st = weft::wait_all(&mut reqs)?;
                    st.truncate(WINDOW);
                    Ok(st)
                })?;
            } else if self.rank == 0 {
                self.w.scope(|s| -> Result<(), weft::Error> {
                    let mut reqs = Vec::with_capacity(WINDOW);
                    for _ in 0..WINDOW {
                        reqs.push(world.isend(s, sbuf, 1, TAG_DATA)?);
                    }
                    weft::wait_all(&mut reqs)?;
                    Ok(())
                })?;
                world.recv(&mut ack, 1, TAG_ACK)?;
            } else if self.rank == 1 {
                statuses = self.w.scope(|s| -> Result<Vec<weft::Status>, weft::Error> {
                    let mut reqs = post_window(world, s, rbuf, size, single, 0)?;
                    weft::wait_all(&mut reqs)
                })?;
                world.send(&ack, 0, TAG_ACK)?;
            }
        }
        Ok(statuses)
    }

    /// Runs one window benchmark; returns windows per second of the fastest repetition and
    /// the iteration count.
    fn window_bench(&mut self, bench: Bench, size: u64) -> Result<(f64, u64), WorkerError> {
        let (iters, skip) = counts(bench, size, self.scale);
        let n = size as usize;
        let bidir = bench == Bench::Bibw;
        self.world.barrier()?;
        self.windows(n, skip, bidir)?;
        let mut res = Vec::with_capacity(self.reps as usize);
        for _ in 0..self.reps {
            self.world.barrier()?;
            let t0 = Instant::now();
            self.windows(n, iters, bidir)?;
            res.push(1.0 / t0.elapsed().as_secs_f64());
        }
        let receiver = self.rank == 1 || (bidir && self.rank == 0);
        let used = if self.buffers == Buffers::Single { n } else { n * WINDOW };
        if receiver {
            self.rbuf[..used].fill(0);
        }
        self.world.barrier()?;
        let statuses = self.windows(n, 1, bidir)?;
        if receiver {
            if statuses.len() != WINDOW {
                return Err(WorkerError::BadStatus {
                    rank: self.rank,
                    bench: bench.name(),
                    size,
                    what: format!("list has {} entries, want {WINDOW}", statuses.len()),
                });
            }
            for st in &statuses {
                self.check_status(bench, st, size, 1 - self.rank)?;
            }
            for chunk in self.rbuf[..used].chunks(n) {
                self.check(bench, chunk, size)?;
            }
        }
        Ok((reduce(res, false), iters))
    }

    fn measure(&mut self, bench: Bench, size: u64) -> Result<f64, WorkerError> {
        let n = size as usize;
        // Ranks >= 2 have no buffers: they only join the barriers.
        for (i, b) in self.sbuf.iter_mut().take(n).enumerate() {
            *b = pattern(i, size);
        }
        Ok(match bench {
            Bench::Latency => self.latency(size)?,
            Bench::Bw | Bench::Bibw | Bench::Mr => {
                let (per_s, iters) = self.window_bench(bench, size)?;
                let msgs = (iters * WINDOW as u64) as f64 * if bench == Bench::Bibw { 2.0 } else { 1.0 };
                if bench == Bench::Mr {
                    msgs * per_s
                } else {
                    msgs * size as f64 * per_s / 1e6
                }
            }
        })
    }
}

/// The worker role: initialise weft, pin, measure; rank 0 streams CSV rows (`--worker`) or
/// prints the finished table / CSV (started directly by `weft-run`).
pub fn run_worker(cli: &Cli) -> Result<(), WorkerError> {
    let w = weft::init()?;
    let world = w.world();
    let (rank, nranks) = (world.rank(), world.size());
    if nranks < 2 {
        return Err(WorkerError::TooFewRanks(nranks));
    }
    if !cli.no_pin {
        pin(rank);
    }
    let benches = cli.benches();
    let max = sizes_max(&benches, cli);
    let active = rank < 2;
    let mut ctx = Ctx {
        w: &w,
        world: world.clone(),
        rank,
        reps: cli.reps,
        scale: cli.iters_scale,
        sbuf: vec![0u8; if active { max } else { 0 }],
        rbuf: vec![
            0u8;
            if !active {
                0
            } else if cli.buffers == Buffers::Single {
                max
            } else {
                max * WINDOW
            }
        ],
        buffers: cli.buffers,
        time_each: cli.time_each,
    };
    // Touch every page before measuring (as the C peer's memset does).
    ctx.rbuf.fill(1);

    let mut rows = Vec::new();
    for &bench in &benches {
        for size in sizes(bench, cli.min, cli.max) {
            let value = ctx.measure(bench, size)?;
            if rank == 0 {
                let row = Row::new(bench, size, "weft", value);
                if cli.worker {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{}", row.csv());
                    let _ = out.flush();
                }
                rows.push(row);
            }
        }
    }
    world.barrier()?;
    drop(ctx);
    w.finalize()?;

    if rank == 0 && !cli.worker {
        let report = Report {
            benches: &benches,
            rows: &rows,
            peers: &[],
            notes: &[],
            reps: cli.reps,
            iters_scale: cli.iters_scale,
            pinned: !cli.no_pin,
            ranks: nranks,
            rounds: 1,
            load: None,
        };
        print!("{}", if cli.csv { report.csv() } else { report.table() });
    }
    Ok(())
}

/// Largest size any selected benchmark uses (buffer size).
fn sizes_max(benches: &[Bench], cli: &Cli) -> usize {
    benches.iter().flat_map(|&b| sizes(b, cli.min, cli.max)).max().unwrap_or(1) as usize
}
