//! Dynamic Group of Recommended Processes ("Running resilient MPI applications on a Dynamic
//! Group of Recommended Processes", Camargo and Duarte, 2018): performance-fault diagnosis by
//! tests among the processes, removal of the slow ones from the group that runs the
//! application, and their rejoin once they are good again — as a sans-IO state machine.
//!
//! One [`Dgrp`] per process of a world of `n`. Inputs: [`Dgrp::tick`] (timer, `now` in ns),
//! [`Dgrp::on_msg`], [`Dgrp::on_failure`] (a crash the engine knows), and the round barrier's
//! decided agreement value ([`Dgrp::apply_barrier`]). Outputs: [`Action`]s (send a message).
//!
//! - **Tests** ([`graph`]): every testing interval a recommended process sends a test
//!   request to the processes it must test; the tested process runs the pluggable
//!   [`TestTask`] on the request's argument and replies with the result. A reply with the
//!   right result that arrives within the tester's recommendation threshold for that process
//!   ([`rto`]) passes; a wrong result, a late reply, or none by the threshold fails. A reply
//!   to an older test than the one in flight is ignored, so one late reply never counts
//!   against a test that met the threshold.
//! - **Events**: each process keeps an event counter per process (even = recommended, odd =
//!   non-recommended; crashes make it odd for good). A member that fails a test makes its
//!   counter odd; the tester broadcasts all new counters of an interval in one message by
//!   reliable broadcast over the binomial graph (revoke's mechanism: forward the first copy
//!   of anything new to every neighbour, which reaches every live process while fewer than
//!   the graph's degree have crashed). Counters merge by max, so copies and reorderings are
//!   harmless. A process whose own counter turns odd has left the group and stops testing.
//! - **Rejoin**: a non-member's testers count its consecutive good tests; at the round
//!   barrier a tester proposes a candidate that reached ζ and votes for one above ζ/2 (other
//!   members abstain); the barrier's agreement readmits a proposed candidate when no member
//!   voted against it ([`barrier`]). Nobody readmits alone, so the view stays the same
//!   everywhere.
//! - **Own stalls**: a tester that did not run for over half a test's threshold (it was
//!   itself stopped or starved) drops that test if its deadline passed meanwhile instead of
//!   blaming the tested process for its own delay.
//! - **Own gaps** ([`gaps`]): a process answers tests only when it runs (inside the
//!   application's calls into weft), so a healthy process's reply waits for its next call;
//!   under oversubscription that gap is the application's compute between two calls
//!   stretched by the scheduler (measured: 10–25 ms of CPU in 300–500 ms of wall time at 8
//!   ranks on 2 cores at load 20–30). A tester sees the same gaps between its own runs, so
//!   its threshold for every process is at least `factor ×` its own longest recent gap
//!   (never above the highest threshold): what it would itself have taken to answer is not
//!   held against another process.
//!
//! Invariants (checked by the simulator over random seeds): every process returns the same
//! view from a round barrier; a member slowed beyond the threshold is removed within a
//! bounded number of testing rounds; a non-member tested good ζ times rejoins at the next
//! barrier; a process whose replies meet the threshold is never removed; a crashed process
//! never rejoins.

pub mod barrier;
pub mod gaps;
pub mod graph;
pub mod msg;
pub mod rto;

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::agree::Value;
use crate::{for_each_bmg_neighbor, RankSet};
use gaps::Gaps;
pub use msg::Msg;
use rto::Rto;

/// A test task: a pure function of the request's argument (the tester checks the reply
/// against its own result for the same argument, computed once).
pub type TestTask = Rc<dyn Fn(u64) -> u64>;

/// The default test task: the number of primes up to `arg` (the paper's test computes the
/// primes between 1 and 1000), by trial division so that its cost is a fixed small compute.
pub fn count_primes(arg: u64) -> u64 {
    let limit = arg.min(1 << 20);
    (2..=limit).filter(|&k| (2..).take_while(|d| d * d <= k).all(|d| k % d != 0)).count() as u64
}

/// Settings (times in ns). Every process must use the same.
#[derive(Clone)]
pub struct Options {
    /// Testing interval.
    pub interval: u64,
    /// Tolerance factor on the retransmission-timeout estimate (default 2.5).
    pub factor: f64,
    /// Consecutive good tests before a non-member may rejoin (default 5).
    pub zeta: u32,
    /// Threshold before the first sample of a process, and the highest threshold.
    pub initial_threshold: u64,
    /// Lowest threshold (absorbs scheduler noise on sub-millisecond round trips).
    pub min_threshold: u64,
    /// Argument of the test task.
    pub task_arg: u64,
    /// The test task.
    pub task: TestTask,
}

impl Options {
    /// Defaults for testing `interval`: factor 2.5, ζ = 5, threshold between one interval
    /// (floor) and four (initial value and ceiling), primes up to 1000 as the task.
    pub fn new(interval: u64) -> Options {
        let interval = interval.max(1);
        Options {
            interval,
            factor: 2.5,
            zeta: 5,
            initial_threshold: interval.saturating_mul(4),
            min_threshold: interval,
            task_arg: 1000,
            task: Rc::new(count_primes),
        }
    }

    /// Reject settings the protocol cannot run with.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.interval == 0 {
            return Err("the testing interval must be positive");
        }
        if !(self.factor.is_finite() && self.factor >= 1.0) {
            return Err("the threshold factor must be a finite number ≥ 1");
        }
        if self.zeta == 0 {
            return Err("ζ (good tests before a rejoin) must be at least 1");
        }
        Ok(())
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("interval", &self.interval)
            .field("factor", &self.factor)
            .field("zeta", &self.zeta)
            .field("initial_threshold", &self.initial_threshold)
            .field("min_threshold", &self.min_threshold)
            .field("task_arg", &self.task_arg)
            .finish_non_exhaustive()
    }
}

/// What the state machine asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send `msg` to process `to`.
    Send { to: u32, msg: Msg },
}

/// Why a member was found non-recommended (the simulator checks every removal is justified).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The tested process.
    pub rank: u32,
    /// Measured round trip (ns), `None` for a timeout or a wrong result.
    pub rtt: Option<u64>,
    /// The threshold in force.
    pub threshold: u64,
}

/// Counters of one process's diagnosis.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Test requests sent.
    pub tests: u64,
    /// Tests passed.
    pub passed: u64,
    /// Tests failed by a late reply or a timeout.
    pub late: u64,
    /// Tests failed by a wrong result.
    pub wrong: u64,
    /// Replies to tests no longer in flight, ignored.
    pub stale: u64,
    /// Test requests answered.
    pub answered: u64,
    /// Removals this process found (members it tested non-recommended).
    pub removals: u64,
    /// Tests dropped because this process itself stalled.
    pub own_stalls: u64,
    /// Round barriers applied.
    pub rounds: u64,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    seq: u32,
    sent: u64,
}

/// What a tester keeps about one process it tests.
#[derive(Clone, Copy, Debug)]
struct Peer {
    rto: Rto,
    streak: u32,
    inflight: Option<InFlight>,
}

/// The diagnosis state of one process. Its size follows the processes it tests and the
/// processes with a nonzero event counter, not the world size: the simulator runs 2^16 of
/// them.
pub struct Dgrp {
    n: u32,
    me: u32,
    opts: Options,
    expected: u64,
    /// Nonzero event counters (absent: 0, recommended).
    counters: BTreeMap<u32, u32>,
    crashed: RankSet,
    peers: BTreeMap<u32, Peer>,
    next_seq: u32,
    next_round: u64,
    last_run: Option<u64>,
    gaps: Gaps,
    pending_events: Vec<(u32, u32)>,
    verdicts: Vec<Verdict>,
    view: Option<Vec<u32>>,
    stats: Stats,
}

impl Dgrp {
    /// Process `me` of `n`, started at `now`; every process starts recommended.
    pub fn new(n: u32, me: u32, opts: Options, now: u64) -> Result<Dgrp, &'static str> {
        opts.check()?;
        if me >= n {
            return Err("rank out of range");
        }
        let expected = (opts.task)(opts.task_arg);
        Ok(Dgrp {
            n,
            me,
            expected,
            counters: BTreeMap::new(),
            crashed: RankSet::new(),
            peers: BTreeMap::new(),
            next_seq: 0,
            next_round: now,
            last_run: None,
            gaps: Gaps::new(opts.interval.saturating_mul(gaps::WINDOW_INTERVALS)),
            pending_events: Vec::new(),
            verdicts: Vec::new(),
            view: None,
            stats: Stats::default(),
            opts,
        })
    }

    /// World size.
    pub fn size(&self) -> u32 {
        self.n
    }

    /// Event counter of process `r` (even: recommended here, odd: non-recommended).
    pub fn counter(&self, r: u32) -> u32 {
        self.counters.get(&r).copied().unwrap_or(0)
    }

    /// Event counters of every process, by rank.
    pub fn counters(&self) -> Vec<u32> {
        (0..self.n).map(|r| self.counter(r)).collect()
    }

    /// True if `r` is recommended in this process's current knowledge.
    pub fn is_member(&self, r: u32) -> bool {
        r < self.n && self.counter(r).is_multiple_of(2) && !self.crashed.contains(&r)
    }

    /// Processes held non-recommended here (crashed ones included), in rank order.
    pub fn non_members(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.counters.iter().filter(|(_, c)| *c % 2 == 1).map(|(&r, _)| r).collect();
        v.extend(self.crashed.iter().copied());
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The current view here (members in rank order): between barriers it may differ from
    /// other processes' views; [`Dgrp::apply_barrier`] makes it the agreed one.
    pub fn current_view(&self) -> Vec<u32> {
        (0..self.n).filter(|&r| self.is_member(r)).collect()
    }

    /// The view decided by the last round barrier (`None` before the first).
    pub fn barrier_view(&self) -> Option<&[u32]> {
        self.view.as_deref()
    }

    /// Consecutive good tests of `r` by this process (reset by a failed test or a change of
    /// `r`'s membership).
    pub fn streak(&self, r: u32) -> u32 {
        self.peers.get(&r).map_or(0, |p| p.streak)
    }

    /// The recommendation threshold this process uses for `r` (ns): the estimate from `r`'s
    /// replies, raised to this process's own-gap allowance.
    pub fn threshold(&self, r: u32) -> u64 {
        let rto = self.peers.get(&r).map_or_else(|| self.fresh_rto().threshold(), |p| p.rto.threshold());
        rto.max(self.gap_allowance())
    }

    /// The least threshold this process applies to anyone: `factor ×` its own longest gap
    /// between two runs in the recent window, at most the highest threshold.
    pub fn gap_allowance(&self) -> u64 {
        let a = self.opts.factor * self.gaps.max() as f64;
        (a.min(self.opts.initial_threshold as f64)) as u64
    }

    fn fresh_rto(&self) -> Rto {
        Rto::new(self.opts.initial_threshold, self.opts.min_threshold, self.opts.factor)
    }

    /// Crashed processes known here.
    pub fn crashed(&self) -> &[u32] {
        self.crashed.as_slice()
    }

    /// Counters of this process's diagnosis.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The removals this process found since the last call (for checks and reports).
    pub fn take_verdicts(&mut self) -> Vec<Verdict> {
        std::mem::take(&mut self.verdicts)
    }

    /// When the driver should tick next (ns): the next interval or the earliest deadline of a
    /// test in flight.
    pub fn next_deadline(&self) -> u64 {
        let mut t = self.next_round;
        let floor = self.gap_allowance();
        for p in self.peers.values() {
            if let Some(f) = p.inflight {
                t = t.min(f.sent.saturating_add(p.rto.threshold().max(floor)).saturating_add(1));
            }
        }
        t
    }

    /// Note that this process runs at `now`: the gap since its last run goes to the own-gap
    /// window. If it had not run for over half a test's threshold (it was itself stopped or
    /// starved) and the test's deadline passed meanwhile, the test is dropped without a
    /// verdict: its lateness may be this process's own.
    fn ran(&mut self, now: u64) {
        let Some(gap) = self.last_run.map(|t| now.saturating_sub(t)) else {
            self.last_run = Some(now);
            return;
        };
        self.last_run = Some(now);
        let floor = self.gap_allowance();
        self.gaps.note(now, gap);
        if gap <= self.opts.min_threshold / 2 {
            return;
        }
        for p in self.peers.values_mut() {
            let th = p.rto.threshold().max(floor);
            // Only a stall long against the test's threshold drops it. A shorter one cannot
            // hide a reply from the tick that expires the test (the engine hands a progress
            // call's messages to the handler before it ticks the activities), and it is
            // already within the own-gap allowance.
            if gap > th / 2 && p.inflight.is_some_and(|f| now.saturating_sub(f.sent) > th) {
                p.inflight = None;
                self.stats.own_stalls += 1;
            }
        }
    }

    /// Timer: fail the tests past their threshold, and start the tests of a new interval.
    /// Call it whenever this process runs (the engine: every progress call): the gaps between
    /// calls are this process's own gaps ([`gaps`]), and a gap over half a test's threshold
    /// is taken for its own stall.
    pub fn tick(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        self.ran(now);
        let floor = self.gap_allowance();
        let expired: Vec<(u32, u64)> = self
            .peers
            .iter()
            .map(|(&r, p)| (r, p, p.rto.threshold().max(floor)))
            .filter(|(_, p, th)| p.inflight.is_some_and(|f| now.saturating_sub(f.sent) > *th))
            .map(|(r, _, th)| (r, th))
            .collect();
        for (r, th) in expired {
            if let Some(p) = self.peers.get_mut(&r) {
                p.inflight = None;
            }
            self.stats.late += 1;
            self.failed_test(Verdict { rank: r, rtt: None, threshold: th });
        }
        if now >= self.next_round {
            self.next_round = now.saturating_add(self.opts.interval);
            if self.is_member(self.me) {
                let mut targets: Vec<u32> = self.non_members();
                targets.retain(|&r| r != self.me && !self.crashed.contains(&r) && self.tests_non_member(r));
                targets.extend(graph::ring_target(self.n, self.me, |r| self.is_member(r)));
                for r in targets {
                    self.send_test(r, now, &mut out);
                }
            }
        }
        self.flush_events(None, &mut out);
        out
    }

    /// True if this process is one of the testers of non-member `c` ([`graph`]).
    pub fn tests_non_member(&self, c: u32) -> bool {
        let k = graph::non_member_testers(self.n);
        graph::tests_non_member(self.n, self.me, c, k, |r| self.is_member(r))
    }

    fn send_test(&mut self, r: u32, now: u64, out: &mut Vec<Action>) {
        let fresh = self.fresh_rto();
        let p = self.peers.entry(r).or_insert(Peer { rto: fresh, streak: 0, inflight: None });
        if p.inflight.is_some() {
            return;
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        p.inflight = Some(InFlight { seq, sent: now });
        self.stats.tests += 1;
        out.push(Action::Send { to: r, msg: Msg::TestReq { seq, arg: self.opts.task_arg } });
    }

    /// A message from process `from` at `now` (messages from crashed processes are dropped).
    pub fn on_msg(&mut self, from: u32, msg: Msg, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if from >= self.n || self.crashed.contains(&from) {
            return out;
        }
        match msg {
            Msg::TestReq { seq, arg } => {
                // Run the task every time: its compute time is what the test measures.
                let result = (self.opts.task)(arg);
                self.stats.answered += 1;
                out.push(Action::Send { to: from, msg: Msg::TestReply { seq, result } });
            }
            Msg::TestReply { seq, result } => {
                self.ran(now);
                let member = self.is_member(from);
                let floor = self.gap_allowance();
                let Some(p) = self.peers.get_mut(&from) else {
                    self.stats.stale += 1;
                    return out;
                };
                match p.inflight {
                    Some(f) if f.seq == seq => {
                        p.inflight = None;
                        let rtt = now.saturating_sub(f.sent);
                        let th = p.rto.threshold().max(floor);
                        if result != self.expected {
                            self.stats.wrong += 1;
                            self.failed_test(Verdict { rank: from, rtt: None, threshold: th });
                        } else if rtt > th {
                            self.stats.late += 1;
                            self.failed_test(Verdict { rank: from, rtt: Some(rtt), threshold: th });
                        } else {
                            self.stats.passed += 1;
                            p.rto.sample(rtt);
                            if !member {
                                p.streak = p.streak.saturating_add(1);
                            }
                        }
                        self.flush_events(None, &mut out);
                    }
                    _ => self.stats.stale += 1,
                }
            }
            Msg::Events(ev) => {
                let mut new = Vec::new();
                for (r, c) in ev {
                    if r < self.n && c > self.counter(r) {
                        self.set_counter(r, c);
                        new.push((r, c));
                    }
                }
                if !new.is_empty() {
                    self.pending_events.extend(new);
                    self.flush_events(Some(from), &mut out);
                }
            }
        }
        out
    }

    /// Process `r` crashed: non-recommended for good, never tested again.
    pub fn on_failure(&mut self, r: u32) {
        if r >= self.n || !self.crashed.insert(r) {
            return;
        }
        if self.counter(r).is_multiple_of(2) {
            self.counters.insert(r, self.counter(r) + 1);
        }
        self.peers.remove(&r);
    }

    fn set_counter(&mut self, r: u32, c: u32) {
        let was_member = self.is_member(r);
        self.counters.insert(r, c);
        if was_member != self.is_member(r) {
            if let Some(p) = self.peers.get_mut(&r) {
                p.streak = 0;
            }
        }
    }

    fn failed_test(&mut self, v: Verdict) {
        let r = v.rank;
        if let Some(p) = self.peers.get_mut(&r) {
            p.streak = 0;
        }
        if self.is_member(r) && self.is_member(self.me) {
            let c = self.counter(r) + 1;
            self.set_counter(r, c);
            self.pending_events.push((r, c));
            self.stats.removals += 1;
            self.verdicts.push(v);
        }
    }

    /// Reliable broadcast of the pending events to every live neighbour in the binomial
    /// graph but `from`.
    fn flush_events(&mut self, from: Option<u32>, out: &mut Vec<Action>) {
        if self.pending_events.is_empty() {
            return;
        }
        let ev = std::mem::take(&mut self.pending_events);
        for_each_bmg_neighbor(self.n, self.me, |v| {
            if Some(v) != from && !self.crashed.contains(&v) {
                out.push(Action::Send { to: v, msg: Msg::Events(ev.clone()) });
            }
        });
    }

    /// This process's contribution to the round barrier's agreement ([`barrier`]).
    pub fn barrier_contribution(&self) -> Value {
        let non_rec = self.non_members();
        let member = self.is_member(self.me);
        let zeta = self.opts.zeta;
        let cands: Vec<u32> = non_rec.iter().copied().filter(|r| !self.crashed.contains(r)).collect();
        let proposals: Vec<u32> = if member {
            cands.iter().copied().filter(|&r| self.tests_non_member(r) && self.streak(r) >= zeta).collect()
        } else {
            vec![]
        };
        // A member that does not test a candidate abstains (yes, for the intersection).
        let votes: Option<Vec<u32>> = member.then(|| {
            cands.into_iter().filter(|&r| !self.tests_non_member(r) || 2 * self.streak(r) > zeta).collect()
        });
        barrier::contribution(self.n, self.crashed.as_slice(), &non_rec, &proposals, votes.as_deref())
    }

    /// The round barrier's agreement decided `v`: adopt its view (returned, in rank order).
    /// Counters follow: a process held non-recommended turns odd, a readmitted one even.
    pub fn apply_barrier(&mut self, v: &Value) -> Vec<u32> {
        let (view, _rejoined) = barrier::decide(self.n, v);
        let n = self.n;
        for &x in &v.failed {
            if x < n {
                self.on_failure(x);
            }
        }
        // Only processes with a nonzero counter or named in the decision can change (the
        // decision names every process out of the view).
        let mut touched: Vec<u32> = self.counters.keys().copied().collect();
        touched.extend(v.failed.iter().map(|&x| x % n.max(1)));
        touched.sort_unstable();
        touched.dedup();
        for r in touched {
            let in_view = view.binary_search(&r).is_ok();
            // A crash learned here after this barrier's decision keeps its process out of the
            // counters for good (the decision's view still names it, as everywhere).
            if in_view && self.crashed.contains(&r) {
                continue;
            }
            if in_view != self.counter(r).is_multiple_of(2) {
                self.set_counter(r, self.counter(r) + 1);
            }
        }
        self.stats.rounds += 1;
        self.view = Some(view.clone());
        view
    }
}

#[cfg(test)]
mod tests;
