//! `weft-sim`: the deterministic discrete-event simulator of weft's fault-tolerance protocols.
//! It owns the event loop, the network and failure model and the run configuration (this
//! module), the scenarios and their invariant checks ([`proto`]), scale runs and their fits
//! ([`scale`]), and the gossip failure detection and consensus protocols with their driver
//! ([`gossip`]), and the DGRP diagnosis scenario ([`dgrp`]). The `weft-sim` binary is its command line. It lives outside `weft-ft` so
//! that the library the applications link carries no simulator.
//!
//! It drives the **production** state machines — [`weft_ft::agree::Era`],
//! [`weft_ft::shrink::Shrink`], [`weft_ft::revoke::Revoke`], [`weft_ft::detector::Detector`] — and
//! the gossip protocols of [`crate::gossip`] with virtual time, and checks their invariants
//! after every run.
//!
//! - **Event loop** ([`Core`]): a binary heap of `(time, seq, slot)`; `seq` is a global counter,
//!   so ties are broken by insertion order and a run is a pure function of its [`Config`].
//!   Event payloads live in a slab (the heap moves 24-byte keys, never messages).
//! - **Network model** ([`Net`]): a message leaves its sender after the sender's previous
//!   message plus a per-message overhead (`o`, the NIC/CPU cost — a rank that sends 40
//!   messages pays 40·o), then takes `latency` (intra- or inter-node in the two-level
//!   topology) + `bytes / bandwidth` + a seeded random jitter in `[0, jitter]`. Jitter
//!   reorders messages between different pairs; per-(src, dst) FIFO is kept (the engine's
//!   transports are FIFO per peer) by never letting a message overtake the previous one of the
//!   same pair (`--no-fifo` lifts that).
//! - **Failures** ([`Fail`]): fail-stop at a virtual time (before the operation, during it,
//!   cascading, the root or the node leaders, up to N−1 ranks). A dead rank processes
//!   nothing; its messages whose departure time is after its death are lost; messages it sent
//!   before still arrive, and the receiver drops them once it knows the sender failed (what
//!   the glue does). Failure knowledge reaches each live rank as a *notice* after a detection
//!   delay, in a seeded random order over a spread ([`Core`]'s notice waves: one heap entry
//!   per failure, not one per rank). The detector scenario instead lets the real
//!   [`weft_ft::detector::Detector`] find failures by heartbeats.
//! - **Reproducibility**: every processed event is folded into a 64-bit trace hash; the same
//!   config (protocol, n, seed, mode, failures, model) gives the same hash.

pub mod dgrp;
pub mod gossip;
pub mod proto;
pub mod scale;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;

pub use proto::run;

/// SplitMix64: small, fast, seedable, good enough for schedules.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in `0..m` (`m > 0`).
    pub fn below(&mut self, m: u64) -> u64 {
        ((self.next_u64() as u128 * m as u128) >> 64) as u64
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A 64-bit finaliser (SplitMix64's): hashes for schedules and for the trace.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// ⌈log₂ n⌉ (0 for n ≤ 1).
pub fn log2_ceil(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

/// The protocol a run exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// ERA agreement on a flag word.
    Era,
    /// Shrink (ERA on the failed set and a context id).
    Shrink,
    /// Revoke (reliable broadcast over the binomial graph).
    Revoke,
    /// Heartbeat detector: detection and propagation of findings.
    Detector,
    /// Gossip, fault matrix (algorithm 1 of the gossip paper, see [`gossip`]).
    GossipFm,
    /// Gossip, heuristic fault list (algorithm 2).
    GossipHfl,
    /// Gossip, three-phase with push-sum aggregation (algorithm 3).
    Gossip3p,
}

impl Proto {
    /// Every protocol.
    pub const ALL: [Proto; 7] = [
        Proto::Era,
        Proto::Shrink,
        Proto::Revoke,
        Proto::Detector,
        Proto::GossipFm,
        Proto::GossipHfl,
        Proto::Gossip3p,
    ];
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Era => "era",
            Proto::Shrink => "shrink",
            Proto::Revoke => "revoke",
            Proto::Detector => "detector",
            Proto::GossipFm => "gossip-fm",
            Proto::GossipHfl => "gossip-hfl",
            Proto::Gossip3p => "gossip-3p",
        }
    }
    /// Parse a command-line name.
    pub fn parse(s: &str) -> Option<Proto> {
        Proto::ALL.into_iter().find(|p| p.name() == s)
    }
    /// True for the gossip protocols.
    pub fn is_gossip(self) -> bool {
        matches!(self, Proto::GossipFm | Proto::GossipHfl | Proto::Gossip3p)
    }
}

/// How failures are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No failure.
    None,
    /// Dead before the operation; each survivor knows each of them with probability ½ at the
    /// start and hears of the others by notice.
    Before,
    /// At random times during the operation.
    During,
    /// A chain: each victim is the tree parent (or a ring neighbour) of the previous one and
    /// dies shortly after it.
    Cascade,
    /// The root, then the next roots in tree order (or the node leaders), during.
    Root,
    /// A mix of before and during, any number up to N−1.
    Mixed,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 6] =
        [Mode::None, Mode::Before, Mode::During, Mode::Cascade, Mode::Root, Mode::Mixed];
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Before => "before",
            Mode::During => "during",
            Mode::Cascade => "cascade",
            Mode::Root => "root",
            Mode::Mixed => "mixed",
        }
    }
    /// Parse a command-line name.
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// Network model (times in ns).
#[derive(Clone, Debug, PartialEq)]
pub struct Net {
    /// Latency between ranks of one node.
    pub lat_intra: u64,
    /// Latency between nodes.
    pub lat_inter: u64,
    /// Ranks per node (consecutive ranks share a node); 0 or 1: every pair is inter-node.
    pub ranks_per_node: u32,
    /// Sender-side cost of each message.
    pub overhead: u64,
    /// Bytes per ns.
    pub bandwidth: f64,
    /// Random extra delay, uniform in `[0, jitter]`.
    pub jitter: u64,
    /// Keep per-(src, dst) FIFO order.
    pub fifo: bool,
}

impl Default for Net {
    fn default() -> Net {
        Net {
            lat_intra: 400,
            lat_inter: 1_500,
            ranks_per_node: 0,
            overhead: 150,
            bandwidth: 10.0,
            jitter: 1_000,
            fifo: true,
        }
    }
}

impl Net {
    /// Base latency from `a` to `b`.
    pub fn latency(&self, a: u32, b: u32) -> u64 {
        if self.ranks_per_node > 1 && a / self.ranks_per_node == b / self.ranks_per_node {
            self.lat_intra
        } else {
            self.lat_inter
        }
    }
    /// Worst-case delay of one message of `bytes` from a sender with `backlog` messages ahead.
    pub fn max_delay(&self, bytes: u64, backlog: u64) -> u64 {
        (backlog + 1) * self.overhead
            + self.lat_inter.max(self.lat_intra)
            + (bytes as f64 / self.bandwidth) as u64
            + self.jitter
    }
}

/// One scheduled failure: `rank` dies at `frac` of the operation's expected duration
/// (`frac < 0`: before the operation). Drivers map `frac` to their own time scale, so every
/// protocol runs the *same* schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fail {
    /// Victim.
    pub rank: u32,
    /// When, as a fraction of the expected duration of the operation (< 0: before).
    pub frac: f64,
}

/// Everything a run depends on.
#[derive(Clone, Debug)]
pub struct Config {
    /// Protocol.
    pub proto: Proto,
    /// Ranks.
    pub n: u32,
    /// Seed of the scheduler (jitter, notice order, contributions).
    pub seed: u64,
    /// Failure mode the schedule was drawn from.
    pub mode: Mode,
    /// Failures requested.
    pub failures: u32,
    /// The schedule.
    pub fails: Vec<Fail>,
    /// Network model.
    pub net: Net,
    /// Hierarchical bin/bin tree (ERA, shrink) over `net.ranks_per_node`-rank nodes.
    pub binbin: bool,
    /// ERA / shrink: run the failure-free fast path (recursive doubling) first, as the
    /// engine does ([`weft_ft::agree::Era::with_fast_path`]).
    pub fast_path: bool,
    /// Ranks start the operation at a random time in `[0, skew]` ns.
    pub skew: u64,
    /// Failure notices reach a rank `notice_delay` + up to `notice_spread` ns after the death.
    pub notice_delay: u64,
    /// See `notice_delay`.
    pub notice_spread: u64,
    /// Gossip: the initial propagation phase (the safety margin before any decision), in
    /// cycles; `None`: [`gossip::drive::default_min_cycles`] (⌈log₂ N⌉ + 8). `Some(0)` lets the
    /// algorithms decide as soon as their consensus test holds (unsafe for failures that
    /// occurred before the run: agreement violations then become notes, not errors).
    pub gossip_min_cycles: Option<u32>,
    /// Gossip: tolerance of the three-phase aggregation estimates.
    pub gossip_tol: f64,
}

impl Config {
    /// A config with a schedule drawn from `(seed, mode, failures)`.
    pub fn new(proto: Proto, n: u32, seed: u64, mode: Mode, failures: u32) -> Config {
        let mut c = Config {
            proto,
            n: n.max(1),
            seed,
            mode,
            failures,
            fails: Vec::new(),
            net: Net::default(),
            binbin: false,
            fast_path: false,
            skew: 0,
            notice_delay: 20_000,
            notice_spread: 20_000,
            gossip_min_cycles: None,
            gossip_tol: 1e-3,
        };
        // Model variations drawn from the seed, so random tests cover them.
        let mut r = Rng::new(seed ^ 0xa5a5);
        if r.below(3) == 0 {
            c.net.ranks_per_node = [2, 4, 16, 32][r.below(4) as usize];
            c.binbin = r.below(2) == 0 && matches!(proto, Proto::Era | Proto::Shrink);
        }
        if r.below(3) == 0 {
            c.skew = r.below(20_000);
        }
        if r.below(4) == 0 {
            c.net.jitter = 10_000; // heavy reordering between pairs
        }
        c.fast_path = r.below(2) == 0 && matches!(proto, Proto::Era | Proto::Shrink);
        c.fails = schedule(proto, c.n, seed, mode, failures, c.net.ranks_per_node, c.binbin);
        c
    }

    /// Mode and number of failures drawn from the seed (what the random tests use).
    pub fn random(proto: Proto, n: u32, seed: u64) -> Config {
        let (mode, k) = random_mode(proto, n, seed);
        Config::new(proto, n, seed, mode, k)
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let margin = self.gossip_min_cycles.map_or(String::new(), |m| format!(" --gossip-min-cycles {m}"));
        format!(
            "cargo run --release -p weft-ft --bin weft-sim -- run --protocol {} --n {} --seed {} --mode {} --failures {}{margin}",
            self.proto.name(),
            self.n,
            self.seed,
            self.mode.name(),
            self.failures
        )
    }
}

/// A (mode, failures) pair drawn from `seed`: most runs have a few failures, some up to N−1
/// (those only at small N: with k failures every rank processes k notices).
pub fn random_mode(proto: Proto, n: u32, seed: u64) -> (Mode, u32) {
    let mut r = Rng::new(seed ^ 0x3c3c);
    let lg = log2_ceil(n).max(1);
    let mode = match r.below(12) {
        0 => Mode::None,
        1..=2 => Mode::Before,
        3..=5 => Mode::During,
        6..=7 => Mode::Cascade,
        8..=9 => Mode::Root,
        _ => Mode::Mixed,
    };
    let cap = n.saturating_sub(1);
    let k = match mode {
        Mode::None => 0,
        Mode::Mixed if n <= 256 && proto != Proto::Detector => {
            // Up to N−1.
            if r.below(3) == 0 {
                cap
            } else {
                r.below(cap as u64 + 1) as u32
            }
        }
        _ => 1 + r.below(lg as u64 + 1) as u32,
    };
    (mode, k.min(cap))
}

/// Fuzz sizes: mostly small, some up to 2^max_log.
pub fn fuzz_n(seed: u64, max_log: u32) -> u32 {
    let mut r = Rng::new(seed ^ 0xf00d);
    let lg = match r.below(10) {
        0..=5 => 1 + r.below(5) as u32,
        6..=8 => 5 + r.below(4) as u32,
        _ => 9 + r.below(max_log.saturating_sub(8).max(1) as u64) as u32,
    }
    .min(max_log);
    let lo = 1u64 << (lg - 1);
    (lo + 1 + r.below(lo)) as u32
}

fn schedule(proto: Proto, n: u32, seed: u64, mode: Mode, k: u32, rpn: u32, binbin: bool) -> Vec<Fail> {
    let mut r = Rng::new(seed ^ 0x77);
    let k = k.min(n.saturating_sub(1));
    let mut out: Vec<Fail> = Vec::new();
    let mut dead = weft_ft::RankSet::new();
    let mut add = |out: &mut Vec<Fail>, rank: u32, frac: f64| {
        if out.len() < k as usize && dead.insert(rank) {
            out.push(Fail { rank, frac });
        }
    };
    let during = |r: &mut Rng| r.unit() * 1.2;
    let mut guard = 0;
    while out.len() < k as usize && guard < 100 * (k as usize + 10) {
        guard += 1;
        match mode {
            Mode::None => break,
            Mode::Before => {
                let v = r.below(n as u64) as u32;
                add(&mut out, v, -1.0);
            }
            Mode::During => {
                let v = r.below(n as u64) as u32;
                let t = during(&mut r);
                add(&mut out, v, t);
            }
            Mode::Cascade => {
                // Chains: start anywhere, then the tree parent (ERA), the ring predecessor
                // (detector) or a random BMG neighbour, each a little later.
                let mut v = r.below(n as u64) as u32;
                let mut t = during(&mut r) * 0.7;
                for _ in 0..k {
                    add(&mut out, v, t);
                    t += r.unit() * 0.05;
                    v = match proto {
                        Proto::Era | Proto::Shrink if v > 0 => (v - 1) / 2,
                        Proto::Detector => (v + n - 1) % n,
                        _ => {
                            let nb = weft_ft::bmg_neighbors(n, v);
                            if nb.is_empty() {
                                break;
                            }
                            nb[r.below(nb.len() as u64) as usize]
                        }
                    };
                }
            }
            Mode::Root => {
                // The root and its successors in tree order (0, 1, 2, …), or the leaders of
                // the hierarchical tree's nodes.
                let step = if binbin && rpn > 1 { rpn } else { 1 };
                let mut t = during(&mut r) * 0.5;
                for i in 0..k {
                    let v = (i as u64 * step as u64 % n as u64) as u32;
                    add(&mut out, v, t);
                    t += r.unit() * 0.2;
                }
                let v = r.below(n as u64) as u32;
                add(&mut out, v, t);
            }
            Mode::Mixed => {
                let v = r.below(n as u64) as u32;
                let t = if r.below(3) == 0 { -1.0 } else { during(&mut r) };
                add(&mut out, v, t);
            }
        }
    }
    out.sort_by(|a, b| a.frac.total_cmp(&b.frac).then(a.rank.cmp(&b.rank)));
    out
}

/// Events.
#[derive(Debug)]
pub enum Ev<M> {
    /// A message.
    Msg {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// When it left the sender.
        depart: u64,
        /// Causal depth (rounds): sender's depth + 1, or 0 for messages that do not count.
        depth: u32,
        /// Payload.
        msg: M,
    },
    /// A timer of `rank` (driver-defined `tag`).
    Timer {
        /// Rank.
        rank: u32,
        /// Tag.
        tag: u64,
    },
    /// `rank` dies.
    Kill {
        /// Victim.
        rank: u32,
    },
    /// The next notice of failure wave `wave`.
    Notice {
        /// Wave index.
        wave: u32,
    },
}

struct Wave {
    victim: u32,
    start: u64,
    spread: u64,
    a: u64,
    b: u64,
    i: u64,
}

/// The event loop, network model and per-rank accounting shared by every scenario.
pub struct Core<M> {
    /// Virtual time (ns).
    pub now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    slab: Vec<Option<Ev<M>>>,
    free: Vec<u32>,
    /// The network model.
    pub net: Net,
    /// Scheduler randomness.
    pub rng: Rng,
    /// Death time of each rank (`u64::MAX`: alive).
    pub died: Vec<u64>,
    nic: Vec<u64>,
    fifo: HashMap<u64, (u64, u32)>,
    /// Messages sent by each rank.
    pub sent: Vec<u32>,
    /// Bytes sent by each rank.
    pub bytes: Vec<u64>,
    /// Causal depth reached by each rank.
    pub depth: Vec<u32>,
    waves: Vec<Wave>,
    /// Trace hash of the processed events.
    pub trace: u64,
    /// Events processed.
    pub events: u64,
    /// Messages sent in total.
    pub msgs: u64,
}

impl<M> Core<M> {
    /// `n` ranks, all alive, at time 0.
    pub fn new(n: u32, net: Net, seed: u64) -> Core<M> {
        let n = n as usize;
        Core {
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            net,
            rng: Rng::new(seed),
            died: vec![u64::MAX; n],
            nic: vec![0; n],
            fifo: HashMap::new(),
            sent: vec![0; n],
            bytes: vec![0; n],
            depth: vec![0; n],
            waves: Vec::new(),
            trace: 0xcbf2_9ce4_8422_2325,
            events: 0,
            msgs: 0,
        }
    }

    /// Number of ranks.
    pub fn n(&self) -> u32 {
        self.died.len() as u32
    }

    /// True if `r` is alive now.
    #[inline]
    pub fn alive(&self, r: u32) -> bool {
        self.died[r as usize] == u64::MAX
    }

    /// Schedule `ev` at `at` (≥ now).
    pub fn push(&mut self, at: u64, ev: Ev<M>) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(ev);
                s
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((at.max(self.now), self.seq, slot)));
    }

    /// Send `msg` of `bytes` from `from` to `to` through the network model; `hop`: it counts
    /// as a round (causal depth).
    pub fn send(&mut self, from: u32, to: u32, msg: M, bytes: u64, hop: bool) {
        let f = from as usize;
        let depart = self.nic[f].max(self.now) + self.net.overhead;
        self.nic[f] = depart;
        self.sent[f] += 1;
        self.bytes[f] += bytes;
        self.msgs += 1;
        let jitter = if self.net.jitter > 0 { self.rng.below(self.net.jitter + 1) } else { 0 };
        let mut at =
            depart + self.net.latency(from, to) + (bytes as f64 / self.net.bandwidth) as u64 + jitter;
        if self.net.fifo {
            let key = (from as u64) << 32 | to as u64;
            let e = self.fifo.entry(key).or_insert((0, 0));
            at = at.max(e.0);
            e.0 = at;
            e.1 += 1;
        }
        let depth = if hop { self.depth[f] + 1 } else { 0 };
        self.push(at, Ev::Msg { from, to, depart, depth, msg });
    }

    /// A timer for `rank` at `at`.
    pub fn timer(&mut self, rank: u32, at: u64, tag: u64) {
        self.push(at, Ev::Timer { rank, tag });
    }

    /// Every live rank except `victim` learns of its death, one at a time, from
    /// `start` over `spread` ns in a seeded random order.
    pub fn notice_wave(&mut self, victim: u32, start: u64, spread: u64) {
        let n = self.n() as u64;
        let mut a = 1 + self.rng.below(n.max(2) - 1);
        while gcd(a, n) != 1 {
            a += 1;
        }
        let b = self.rng.below(n);
        self.waves.push(Wave { victim, start, spread, a, b, i: 0 });
        let w = (self.waves.len() - 1) as u32;
        self.push(start, Ev::Notice { wave: w });
    }

    fn wave_next(&mut self, w: u32) -> Option<(u32, u32)> {
        let n = self.n() as u64;
        let wv = &mut self.waves[w as usize];
        if wv.i >= n {
            return None;
        }
        let r = ((wv.a as u128 * wv.i as u128 + wv.b as u128) % n as u128) as u32;
        let victim = wv.victim;
        wv.i += 1;
        if wv.i < n {
            let at = wv.start + (wv.spread as u128 * wv.i as u128 / n as u128) as u64;
            self.push(at, Ev::Notice { wave: w });
        }
        Some((r, victim))
    }

    /// The next event to handle, with dead receivers, lost messages and notices already
    /// filtered out. Messages come as `Ev::Msg`; notices as `Ev::Notice` are turned into
    /// `Delivered::Notice`.
    pub fn next_event(&mut self) -> Option<Delivered<M>> {
        loop {
            let Reverse((at, _seq, slot)) = self.heap.pop()?;
            let ev = self.slab[slot as usize].take().expect("live slot");
            self.free.push(slot);
            self.now = at;
            self.events += 1;
            match ev {
                Ev::Msg { from, to, depart, depth, msg } => {
                    if self.net.fifo {
                        let key = (from as u64) << 32 | to as u64;
                        if let Some(e) = self.fifo.get_mut(&key) {
                            e.1 -= 1;
                            if e.1 == 0 {
                                self.fifo.remove(&key);
                            }
                        }
                    }
                    // Lost if the sender died before it left, or the receiver is dead.
                    if self.died[from as usize] < depart || !self.alive(to) {
                        continue;
                    }
                    self.fold(at, 1, from, to);
                    let d = &mut self.depth[to as usize];
                    *d = (*d).max(depth);
                    return Some(Delivered::Msg { from, to, msg });
                }
                Ev::Timer { rank, tag } => {
                    if !self.alive(rank) {
                        continue;
                    }
                    self.fold(at, 2, rank, tag as u32);
                    return Some(Delivered::Timer { rank, tag });
                }
                Ev::Kill { rank } => {
                    if !self.alive(rank) {
                        continue;
                    }
                    self.died[rank as usize] = at;
                    self.fold(at, 3, rank, 0);
                    return Some(Delivered::Kill { rank });
                }
                Ev::Notice { wave } => {
                    let Some((r, victim)) = self.wave_next(wave) else { continue };
                    if r == victim || !self.alive(r) {
                        continue;
                    }
                    self.fold(at, 4, r, victim);
                    return Some(Delivered::Notice { rank: r, failed: victim });
                }
            }
        }
    }

    fn fold(&mut self, at: u64, kind: u64, a: u32, b: u32) {
        self.trace = mix(self.trace ^ at.wrapping_mul(31) ^ (kind << 60) ^ ((a as u64) << 30) ^ b as u64);
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|r| r.0 .0)
    }

    /// Live ranks.
    pub fn survivors(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.n()).filter(|&r| self.alive(r))
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// An event as the driver sees it.
pub enum Delivered<M> {
    /// Message `msg` from `from` at live rank `to`.
    Msg {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// Payload.
        msg: M,
    },
    /// A timer of live rank `rank`.
    Timer {
        /// Rank.
        rank: u32,
        /// Tag.
        tag: u64,
    },
    /// `rank` just died.
    Kill {
        /// Victim.
        rank: u32,
    },
    /// Live rank `rank` learns that `failed` died.
    Notice {
        /// Who learns.
        rank: u32,
        /// Who died.
        failed: u32,
    },
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Protocol.
    pub proto: &'static str,
    /// Ranks.
    pub n: u32,
    /// Seed.
    pub seed: u64,
    /// Ranks that died.
    pub dead: u32,
    /// Rounds (causal depth of the decision / delivery) or gossip cycles (max over ranks).
    pub rounds: f64,
    /// Mean over survivors of the decision round / cycle.
    pub rounds_mean: f64,
    /// Gossip only: the cycle at which consensus was *reached* — the first cycle after which
    /// every survivor holds the final agreed fault view and never changes it (max over
    /// survivors of the cycle of its last view change), independent of the decision margin.
    /// `None` for the tree protocols, or if the survivors' final views differ.
    pub reached: Option<f64>,
    /// Gossip only: mean over survivors of the cycle of the last view change.
    pub reached_mean: Option<f64>,
    /// Virtual time from the start to the last decision / delivery (ns).
    pub vtime: u64,
    /// Messages per process: mean over all ranks.
    pub msgs_mean: f64,
    /// Messages per process: max.
    pub msgs_max: u32,
    /// Bytes per process: mean.
    pub bytes_mean: f64,
    /// Protocol state per process (bytes, mean over ranks, measured on the state machines).
    pub mem_per_proc: f64,
    /// Events processed.
    pub events: u64,
    /// Trace hash.
    pub trace: u64,
    /// Free-form notes (e.g. gossip disagreements that the algorithm does not rule out).
    pub notes: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} n={} seed={} dead={} rounds={:.1} (mean {:.1}) vtime={:.1}us msgs/proc={:.2} (max {}) bytes/proc={:.0} mem/proc={:.0}B events={} trace={:016x}",
            self.proto,
            self.n,
            self.seed,
            self.dead,
            self.rounds,
            self.rounds_mean,
            self.vtime as f64 / 1e3,
            self.msgs_mean,
            self.msgs_max,
            self.bytes_mean,
            self.mem_per_proc,
            self.events,
            self.trace
        )?;
        if let (Some(a), Some(b)) = (self.reached, self.reached_mean) {
            write!(f, " reached={a:.1} (mean {b:.1})")?;
        }
        for n in &self.notes {
            write!(f, "\n  note: {n}")?;
        }
        Ok(())
    }
}

/// A violated invariant.
#[derive(Clone, Debug)]
pub struct Violation {
    /// Which invariant and how.
    pub what: String,
    /// The run.
    pub config: Config,
    /// Trace hash up to the violation.
    pub trace: u64,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "INVARIANT VIOLATED: {}\n  protocol={} n={} seed={} mode={} failures={} trace={:016x}\n  replay: {}",
            self.what,
            self.config.proto.name(),
            self.config.n,
            self.config.seed,
            self.config.mode.name(),
            self.config.failures,
            self.trace,
            self.config.replay_command()
        )
    }
}

impl std::error::Error for Violation {}

/// Summary statistics of per-rank message counts.
pub fn msg_stats<M>(core: &Core<M>) -> (f64, u32, f64) {
    let n = core.n().max(1) as f64;
    let tot: u64 = core.sent.iter().map(|&x| x as u64).sum();
    let max = core.sent.iter().copied().max().unwrap_or(0);
    let bytes: u64 = core.bytes.iter().sum();
    (tot as f64 / n, max, bytes as f64 / n)
}
