//! The DGRP scenario: the production diagnosis state machine ([`weft_ft::dgrp::Dgrp`]) of
//! every process under slowdowns and crashes in virtual time, with its invariants, and the
//! diagnosis-latency scale series.
//!
//! **Model** (times in units of the testing interval `I`, 1 ms of virtual time):
//! - A test task takes a base time (20 µs × U[1, 1.5]) at the tested process, on top of the
//!   network model of [`crate::Net`]. Each process ticks every `I/4`.
//! - **Slowdown episodes** (per-process delay distributions): *slow* — the task takes
//!   U[25, 60]·I (far beyond any threshold); *mild* — U[0.05, 0.3]·I more (always within the
//!   threshold floor of one interval); *frozen* — the process handles nothing (SIGSTOP): its
//!   messages and timers wait for the end of the episode.
//! - **Crashes**: fail-stop; every live process learns of it 2·I later, spread over I.
//! - **Round barriers** every `barrier_every` intervals: the agreement is modelled by its
//!   specification — the merge of the contributions of every live process, with every dead
//!   process in the failed set (the agreement completes only once the failures of its
//!   participants are known) — and waits for frozen processes, as a barrier does.
//!
//! **Invariants** (a violation names the seed and the replay command):
//! 1. at every round barrier all live processes return the same view;
//! 2. a member that turns slow or frozen is non-recommended at every live process (other
//!    than itself and processes frozen meanwhile) within `4 + 2 + 3k` testing rounds: the
//!    highest threshold (4 intervals: its tester may have no sample of it yet), a round,
//!    the broadcast, and three rounds per other process faulty meanwhile (`3k`: its tester
//!    may be slow or crashed too — a crash is known 2 to 3 rounds later — and the next one
//!    takes over);
//! 3. once every episode is over and every crash known, a barrier `4 + ζ + 4` rounds later
//!    has every live process in its view (the recovered rejoin after ζ good tests; a test
//!    sent while it was slow may take up to the highest threshold to time out);
//! 4. every removal is justified: the removed process was slow, frozen or dead within the
//!    last threshold (no removal of a process whose replies meet the threshold, whatever a
//!    single late reply of an older test does);
//! 5. a dead process is never in a barrier view.
//!
//! The **planted bug** ([`DgrpConfig::planted`]) makes one member skip the rejoin agreement
//! (it readmits whoever it tested good ζ times, and nobody else); invariant 1 catches it.

use std::fmt;
use std::rc::Rc;

use weft_ft::agree::Value;
use weft_ft::dgrp::{Action, Dgrp, Msg, Options};

use crate::{Core, Delivered, Ev, Net, Rng};

/// The testing interval in virtual ns.
pub const INTERVAL: u64 = 1_000_000;

/// The highest recommendation threshold ([`Options::new`]'s default: 4 intervals).
const MAX_THRESHOLD: u64 = 4 * INTERVAL;

const TICK: u64 = 0;
const DEFER: u64 = 1;

/// Everything a DGRP run depends on.
#[derive(Clone, Debug)]
pub struct DgrpConfig {
    /// Processes.
    pub n: u32,
    /// Seed of the whole schedule.
    pub seed: u64,
    /// Testing intervals simulated.
    pub intervals: u32,
    /// Intervals between round barriers (0: one barrier at the end only).
    pub barrier_every: u32,
    /// Consecutive good tests before a rejoin.
    pub zeta: u32,
    /// Threshold factor.
    pub factor: f64,
    /// Processes with slowdown episodes.
    pub slowed: u32,
    /// Processes that crash.
    pub crashes: u32,
    /// Plant the bug: one member skips the rejoin agreement.
    pub planted: bool,
    /// A fixed episode besides the random ones: process `.0` slow beyond any threshold from
    /// round `.1` to round `.2`.
    pub fixed: Option<(u32, u32, u32)>,
    /// Network model.
    pub net: Net,
}

impl DgrpConfig {
    /// A random configuration for `n` processes from `seed`: up to n/2 slowed, up to n/4
    /// crashes (at least one process never faulty).
    pub fn random(n: u32, seed: u64) -> DgrpConfig {
        let mut rng = Rng::new(seed ^ 0xd6e9);
        let n = n.max(2);
        let slowed = rng.below(n as u64 / 2 + 1) as u32;
        let crashes = rng.below(n as u64 / 4 + 1) as u32;
        DgrpConfig {
            n,
            seed,
            intervals: 160,
            barrier_every: 2 + rng.below(6) as u32,
            zeta: 2 + rng.below(6) as u32,
            factor: 2.5,
            slowed,
            crashes: crashes.min(n - 1 - slowed.min(n - 1)),
            planted: false,
            fixed: None,
            net: Net::default(),
        }
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        format!(
            "weft-sim dgrp --n {} --seed {} --intervals {} --barrier-every {} --zeta {} --slowed {} --crashes {}{}",
            self.n,
            self.seed,
            self.intervals,
            self.barrier_every,
            self.zeta,
            self.slowed,
            self.crashes,
            if self.planted { " --planted" } else { "" }
        )
    }
}

/// What a DGRP run measured.
#[derive(Clone, Debug, Default)]
pub struct DgrpReport {
    /// Testing rounds from the onset of a slowdown to its removal at every live process.
    pub removal_rounds: Vec<u32>,
    /// Testing rounds from the end of a process's last fault to the barrier that readmitted it.
    pub rejoin_rounds: Vec<u32>,
    /// Testing rounds from the end of a watched slowdown until every member had tested the
    /// process good ζ times in a row (ready to rejoin at the next barrier).
    pub ready_rounds: Vec<u32>,
    /// Size of the last barrier's view (`None`: no barrier).
    pub final_view: Option<usize>,
    /// Round barriers held.
    pub barriers: u32,
    /// Removals found by testers.
    pub removals: u64,
    /// Messages sent in all.
    pub msgs: u64,
    /// Tests sent in all.
    pub tests: u64,
    /// Trace hash.
    pub trace: u64,
}

impl fmt::Display for DgrpReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stat = |v: &[u32]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                format!(
                    "max {} mean {:.2}",
                    v.iter().max().unwrap(),
                    v.iter().sum::<u32>() as f64 / v.len() as f64
                )
            }
        };
        write!(
            f,
            "barriers {}  removals {}  removal latency (rounds) {}  rejoin-ready latency (rounds) {}  rejoin at barrier (rounds) {}  tests {}  msgs {}  trace {:016x}",
            self.barriers,
            self.removals,
            stat(&self.removal_rounds),
            stat(&self.ready_rounds),
            stat(&self.rejoin_rounds),
            self.tests,
            self.msgs,
            self.trace
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Slow(u64),
    Mild(u64),
    Frozen,
}

#[derive(Clone, Copy, Debug)]
struct Episode {
    rank: u32,
    start: u64,
    end: u64,
    kind: Kind,
}

impl Episode {
    fn hard(&self) -> bool {
        !matches!(self.kind, Kind::Mild(_))
    }
}

/// One removal-latency watch: episode `ep` of a process that was a member everywhere.
struct Watch {
    ep: usize,
    faulty: u32,
    done: bool,
    ready: bool,
}

struct Sim<'c> {
    c: &'c DgrpConfig,
    core: Core<Msg>,
    d: Vec<Dgrp>,
    eps: Vec<Episode>,
    by_rank: Vec<Vec<usize>>,
    crash_at: Vec<u64>,
    deferred: Vec<Option<(u32, u32, Msg)>>,
    free: Vec<u64>,
    rep: DgrpReport,
    watches: Vec<Watch>,
    bug: Option<u32>,
    /// End of each process's last hard episode, for the rejoin check.
    quiet_from: Vec<u64>,
    /// Out of the previous barrier's view.
    out_before: Vec<bool>,
}

fn err(c: &DgrpConfig, what: String) -> String {
    format!("INVARIANT VIOLATED: {what}\n  replay: {}", c.replay_command())
}

impl Sim<'_> {
    fn eps_of(&self, r: u32) -> impl Iterator<Item = &Episode> + '_ {
        self.by_rank[r as usize].iter().map(|&i| &self.eps[i])
    }

    fn frozen_until(&self, r: u32, t: u64) -> Option<u64> {
        self.eps_of(r).filter(|e| e.kind == Kind::Frozen && e.start <= t && t < e.end).map(|e| e.end).max()
    }

    fn task_time(&mut self, r: u32, t: u64) -> u64 {
        let base = 20_000 + self.core.rng.below(10_001);
        let extra: u64 = self
            .eps_of(r)
            .filter(|e| e.start <= t && t < e.end)
            .map(|e| match e.kind {
                Kind::Slow(d) | Kind::Mild(d) => d,
                Kind::Frozen => 0,
            })
            .max()
            .unwrap_or(0);
        base + extra
    }

    fn send_all(&mut self, from: u32, acts: Vec<Action>) {
        for Action::Send { to, msg } in acts {
            if matches!(msg, Msg::TestReq { .. }) {
                self.rep.tests += 1;
            }
            let bytes = match &msg {
                Msg::Events(e) => 5 + 8 * e.len() as u64,
                _ => 13,
            };
            self.core.send(from, to, msg, bytes, false);
        }
    }

    fn check_verdicts(&mut self, tester: u32) -> Result<(), String> {
        for v in self.d[tester as usize].take_verdicts() {
            self.rep.removals += 1;
            let now = self.core.now;
            let window = v.threshold + 2 * INTERVAL;
            let justified = self.crash_at[v.rank as usize] <= now
                || self.eps_of(v.rank).any(|e| e.hard() && e.start <= now && e.end + window >= now);
            if !justified {
                return Err(err(
                    self.c,
                    format!(
                        "process {} removed by {} at {} ns (rtt {:?}, threshold {}) while its replies met the threshold",
                        v.rank, tester, now, v.rtt, v.threshold
                    ),
                ));
            }
        }
        Ok(())
    }

    fn handle(&mut self, ev: Delivered<Msg>) -> Result<(), String> {
        let now = self.core.now;
        match ev {
            Delivered::Msg { from, to, msg } => {
                if let Some(end) = self.frozen_until(to, now) {
                    self.core.push(end, Ev::Msg { from, to, depart: now, depth: 0, msg });
                    return Ok(());
                }
                let is_req = matches!(msg, Msg::TestReq { .. });
                let acts = self.d[to as usize].on_msg(from, msg, now);
                if is_req {
                    let delay = self.task_time(to, now);
                    for Action::Send { to: dst, msg } in acts {
                        let slot = match self.free.pop() {
                            Some(s) => {
                                self.deferred[s as usize] = Some((to, dst, msg));
                                s
                            }
                            None => {
                                self.deferred.push(Some((to, dst, msg)));
                                self.deferred.len() as u64 - 1
                            }
                        };
                        self.core.timer(to, now + delay, DEFER + slot);
                    }
                } else {
                    self.send_all(to, acts);
                    self.check_verdicts(to)?;
                }
            }
            Delivered::Timer { rank, tag } => {
                if let Some(end) = self.frozen_until(rank, now) {
                    self.core.timer(rank, end, tag);
                    return Ok(());
                }
                if tag == TICK {
                    let acts = self.d[rank as usize].tick(now);
                    self.send_all(rank, acts);
                    self.check_verdicts(rank)?;
                    self.core.timer(rank, now + INTERVAL / 4, TICK);
                } else {
                    let slot = tag - DEFER;
                    if let Some((from, to, msg)) = self.deferred[slot as usize].take() {
                        self.free.push(slot);
                        self.core.send(from, to, msg, 13, false);
                    }
                }
            }
            Delivered::Kill { rank } => {
                self.core.notice_wave(rank, now + 2 * INTERVAL, INTERVAL);
            }
            Delivered::Notice { rank, failed } => {
                self.d[rank as usize].on_failure(failed);
            }
        }
        Ok(())
    }

    /// Processes faulty at some point in `[a, b]` (episodes of any hard kind, crashes).
    fn faulty_in(&self, a: u64, b: u64) -> u32 {
        let mut f: Vec<u32> =
            self.eps.iter().filter(|e| e.hard() && e.start <= b && e.end >= a).map(|e| e.rank).collect();
        f.extend((0..self.c.n).filter(|&r| self.crash_at[r as usize] <= b));
        f.sort_unstable();
        f.dedup();
        f.len() as u32
    }

    fn observers(&self, p: u32, a: u64, b: u64) -> Vec<u32> {
        (0..self.c.n)
            .filter(|&r| {
                r != p
                    && self.core.alive(r)
                    && !self.eps_of(r).any(|e| e.kind == Kind::Frozen && e.start <= b && e.end >= a)
            })
            .collect()
    }

    /// How long after its last fault a process must be back: a test sent to it while it was
    /// slow times out after at most the highest threshold (4 intervals), then ζ good tests,
    /// with 4 rounds of slack for test phases and the barrier.
    fn rejoin_bound(&self) -> u64 {
        MAX_THRESHOLD + (self.c.zeta as u64 + 4) * INTERVAL
    }

    /// Invariant 2 and the removal latency: poll episode watches.
    fn poll_watches(&mut self) -> Result<(), String> {
        let now = self.core.now;
        for i in 0..self.watches.len() {
            let e = self.eps[self.watches[i].ep];
            if self.watches[i].done && !self.watches[i].ready && now >= e.end && self.core.alive(e.rank) {
                // Recovery: every member (other than frozen ones) tested it good ζ times.
                let obs = self.observers(e.rank, e.end, now);
                let zeta = self.c.zeta;
                let members: Vec<u32> =
                    obs.into_iter().filter(|&r| self.d[r as usize].is_member(r)).collect();
                if !members.is_empty()
                    && members.iter().all(|&r| {
                        let d = &self.d[r as usize];
                        d.is_member(e.rank) || d.streak(e.rank) >= zeta
                    })
                {
                    self.watches[i].ready = true;
                    self.rep.ready_rounds.push((now - e.end).div_ceil(INTERVAL) as u32);
                }
            }
            if self.watches[i].done {
                continue;
            }
            if now < e.start {
                continue;
            }
            let bound = MAX_THRESHOLD + (2 + 3 * self.watches[i].faulty) as u64 * INTERVAL;
            let obs = self.observers(e.rank, e.start, now);
            let removed = obs.iter().all(|&r| !self.d[r as usize].is_member(e.rank));
            if removed {
                self.watches[i].done = true;
                self.rep.removal_rounds.push((now - e.start).div_ceil(INTERVAL) as u32);
            } else if now > e.start + bound {
                self.watches[i].done = true;
                if e.end > e.start + bound && self.core.alive(e.rank) {
                    let holdout = obs.iter().find(|&&r| self.d[r as usize].is_member(e.rank)).copied();
                    return Err(err(
                        self.c,
                        format!(
                            "process {} slowed from {} ns ({:?}) still recommended at {:?} after {} rounds",
                            e.rank,
                            e.start,
                            e.kind,
                            holdout,
                            bound / INTERVAL
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn barrier(&mut self) -> Result<(), String> {
        let n = self.c.n;
        let mut v = Value::identity();
        for r in 0..n {
            if self.core.alive(r) {
                v.merge(&self.d[r as usize].barrier_contribution());
            }
        }
        let dead: Vec<u32> = (0..n).filter(|&r| !self.core.alive(r)).collect();
        v.merge(&Value { failed: dead, ..Value::identity() });
        let mut first: Option<(u32, Vec<u32>)> = None;
        for r in 0..n {
            if !self.core.alive(r) {
                continue;
            }
            let d = &mut self.d[r as usize];
            let was_out: Vec<u32> = d.non_members();
            let own: Vec<u32> = if Some(r) == self.bug {
                was_out
                    .iter()
                    .copied()
                    .filter(|&c| d.streak(c) >= self.c.zeta && !d.crashed().contains(&c))
                    .collect()
            } else {
                Vec::new()
            };
            let agreed = d.apply_barrier(&v);
            let view = if Some(r) == self.bug {
                // The planted bug: rejoins by its own tests, not by the agreement.
                let mut w: Vec<u32> =
                    agreed.iter().copied().filter(|x| was_out.binary_search(x).is_err()).chain(own).collect();
                w.sort_unstable();
                w
            } else {
                agreed
            };
            match &first {
                None => first = Some((r, view)),
                Some((r0, v0)) => {
                    if *v0 != view {
                        let diff: Vec<u32> = (0..n)
                            .filter(|x| v0.binary_search(x).is_ok() != view.binary_search(x).is_ok())
                            .take(8)
                            .collect();
                        return Err(err(
                            self.c,
                            format!(
                                "barrier {}: processes {r0} and {r} returned different views (differ on {diff:?})",
                                self.rep.barriers
                            ),
                        ));
                    }
                }
            }
        }
        self.rep.barriers += 1;
        let Some((_, view)) = first else { return Ok(()) };
        self.rep.final_view = Some(view.len());
        let now = self.core.now;
        for &x in &view {
            if !self.core.alive(x) {
                return Err(err(
                    self.c,
                    format!("dead process {x} is in the view of barrier {}", self.rep.barriers),
                ));
            }
        }
        // Invariant 3: long after the last fault, everyone live is back.
        let quiet =
            (0..n).filter(|&r| self.core.alive(r)).map(|r| self.quiet_from[r as usize]).max().unwrap_or(0);
        let crashes_known =
            (0..n).filter(|&r| !self.core.alive(r)).map(|r| self.crash_at[r as usize] + 4 * INTERVAL).max();
        let quiet = quiet.max(crashes_known.unwrap_or(0));
        for r in 0..n {
            if !self.core.alive(r) {
                continue;
            }
            let in_view = view.binary_search(&r).is_ok();
            if in_view && self.out_before[r as usize] && self.quiet_from[r as usize] <= now {
                // The barrier readmitting r after its last fault.
                let since = now.saturating_sub(self.quiet_from[r as usize]);
                self.rep.rejoin_rounds.push(since.div_ceil(INTERVAL) as u32);
            }
            self.out_before[r as usize] = !in_view;
            if !in_view && now >= quiet + self.rejoin_bound() {
                let streaks: Vec<(u32, u32)> =
                    view.iter().map(|&m| (m, self.d[m as usize].streak(r))).collect();
                return Err(err(
                    self.c,
                    format!(
                        "process {r} recovered at {} ns but is not in the view of barrier {} at {now} ns (ζ = {}; members' good-test streaks for it: {streaks:?})",
                        quiet, self.rep.barriers, self.c.zeta
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Run the DGRP scenario of `c`; `Err` describes the first violated invariant.
pub fn run_dgrp(c: &DgrpConfig) -> Result<DgrpReport, String> {
    let n = c.n.max(2);
    let mut rng = Rng::new(c.seed);
    let end = c.intervals.max(20) as u64 * INTERVAL;
    // Faulty processes: a random subset, never all (process `keep` stays good).
    let keep = rng.below(n as u64) as u32;
    let mut pool: Vec<u32> = (0..n).filter(|&r| r != keep).collect();
    for i in (1..pool.len()).rev() {
        pool.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let slowed: Vec<u32> = pool.iter().copied().take(c.slowed.min(n - 1) as usize).collect();
    let crashed: Vec<u32> = pool
        .iter()
        .copied()
        .skip(slowed.len())
        .take(c.crashes.min(n - 1 - slowed.len() as u32) as usize)
        .collect();
    let last = end * 6 / 10;
    let mut eps = Vec::new();
    for &r in &slowed {
        let k = 1 + rng.below(2);
        let mut t = 5 * INTERVAL + rng.below(last / 3);
        for _ in 0..k {
            let len = 3 * INTERVAL + rng.below(18 * INTERVAL);
            let kind = match rng.below(3) {
                0 => Kind::Slow(25 * INTERVAL + rng.below(35 * INTERVAL)),
                1 => Kind::Mild(INTERVAL / 20 + rng.below(INTERVAL / 4)),
                _ => Kind::Frozen,
            };
            if t + len > last + 20 * INTERVAL {
                break;
            }
            eps.push(Episode { rank: r, start: t, end: t + len, kind });
            t += len + 2 * INTERVAL + rng.below(20 * INTERVAL);
        }
    }
    if let Some((r, a, b)) = c.fixed {
        if r < n && a < b {
            eps.push(Episode {
                rank: r,
                start: a as u64 * INTERVAL,
                end: b as u64 * INTERVAL,
                kind: Kind::Slow(40 * INTERVAL),
            });
        }
    }
    let mut by_rank = vec![Vec::new(); n as usize];
    for (i, e) in eps.iter().enumerate() {
        by_rank[e.rank as usize].push(i);
    }
    let mut crash_at = vec![u64::MAX; n as usize];
    for &r in &crashed {
        crash_at[r as usize] = 5 * INTERVAL + rng.below(last);
    }
    let mut opts = Options::new(INTERVAL);
    debug_assert_eq!(opts.initial_threshold, MAX_THRESHOLD);
    opts.zeta = c.zeta;
    opts.factor = c.factor;
    opts.task = Rc::new(|a| a.wrapping_mul(0x9e37_79b9).rotate_left(7));
    let d: Vec<Dgrp> = (0..n).map(|r| Dgrp::new(n, r, opts.clone(), 0)).collect::<Result<_, _>>()?;
    let mut quiet_from = vec![0u64; n as usize];
    for e in &eps {
        if e.hard() {
            quiet_from[e.rank as usize] = quiet_from[e.rank as usize].max(e.end);
        }
    }
    let bug = c.planted.then(|| (0..n).find(|r| !slowed.contains(r) && !crashed.contains(r))).flatten();
    let mut s = Sim {
        c,
        core: Core::new(n, c.net.clone(), c.seed ^ 0x51_u64),
        d,
        eps,
        by_rank,
        crash_at,
        deferred: Vec::new(),
        free: Vec::new(),
        rep: DgrpReport::default(),
        watches: Vec::new(),
        bug,
        quiet_from,
        out_before: vec![false; n as usize],
    };
    for r in 0..n {
        s.core.timer(r, (r as u64 * 7919) % (INTERVAL / 4), TICK);
    }
    for &r in &crashed {
        s.core.push(s.crash_at[r as usize], Ev::Kill { rank: r });
    }
    // Watch the hard episodes whose process is a member everywhere at onset (decided when
    // the episode starts).
    let mut starts: Vec<usize> = (0..s.eps.len()).filter(|&i| s.eps[i].hard()).collect();
    starts.sort_by_key(|&i| s.eps[i].start);
    let mut next_start = 0;
    let every = if c.barrier_every == 0 { u64::MAX } else { c.barrier_every as u64 * INTERVAL };
    let mut next_barrier = every;
    let mut next_poll = INTERVAL / 4;
    loop {
        let t = s.core.peek_time().unwrap_or(u64::MAX).min(end);
        while next_start < starts.len() && s.eps[starts[next_start]].start <= t {
            let i = starts[next_start];
            next_start += 1;
            let e = s.eps[i];
            s.core.now = s.core.now.max(e.start);
            let obs = s.observers(e.rank, e.start, e.start);
            if s.core.alive(e.rank) && obs.iter().all(|&r| s.d[r as usize].is_member(e.rank)) {
                let faulty = s.faulty_in(e.start, e.start + 8 * INTERVAL);
                s.watches.push(Watch { ep: i, faulty, done: false, ready: false });
            }
        }
        if next_poll <= t {
            s.core.now = s.core.now.max(next_poll);
            s.poll_watches()?;
            next_poll += INTERVAL / 4;
            continue;
        }
        if next_barrier <= t {
            // A barrier waits for frozen processes.
            let wait = (0..n).filter_map(|r| s.frozen_until(r, next_barrier)).max();
            match wait {
                Some(w) if w > next_barrier => next_barrier = w,
                _ => {
                    s.core.now = s.core.now.max(next_barrier);
                    s.barrier()?;
                    next_barrier = next_barrier.saturating_add(every);
                }
            }
            continue;
        }
        if t >= end {
            break;
        }
        let Some(ev) = s.core.next_event() else { break };
        s.handle(ev)?;
    }
    s.core.now = s.core.now.max(end);
    if c.barrier_every > 0 || c.n <= 1 << 12 {
        s.barrier()?;
    }
    s.rep.msgs = s.core.msgs;
    s.rep.trace = s.core.trace;
    Ok(s.rep)
}

/// One row of the diagnosis-latency series: N processes, process N/2 slowed beyond any
/// threshold from round 4 to round 12; one round barrier at the end (only up to 2^12
/// processes: every process computes an N-entry view).
pub fn latency_row(n: u32, seed: u64) -> Result<DgrpReport, String> {
    let c = DgrpConfig {
        n,
        seed,
        intervals: 24,
        barrier_every: 0,
        zeta: 5,
        factor: 2.5,
        slowed: 0,
        crashes: 0,
        planted: false,
        fixed: Some((n / 2, 4, 12)),
        net: Net::default(),
    };
    run_dgrp(&c)
}
