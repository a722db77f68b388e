//! Heartbeat failure detector on an observation ring ("Failure Detection and Propagation in HPC
//! Systems", Bosilca et al., SC16).
//!
//! Each live rank **observes its predecessor** among the live ranks of the world (cyclic) and
//! **emits heartbeats to its successor** every `period` ns. When nothing arrived from the
//! predecessor for `timeout` ns, it is declared failed: the finding is delivered locally and
//! **reliably broadcast** over the binomial graph (every rank forwards the first copy of a
//! finding to all its BMG neighbours), and the ring re-closes: the observer now watches the
//! next live predecessor (granting it a full timeout), and whoever learns that its successor
//! failed sends a heartbeat to the new successor at once.
//!
//! Bounds: a rank silent since `t` is declared by its observer by `t + timeout + tick
//! granularity`; it sent its last heartbeat at most one `period` before going silent, so a
//! freeze is detected within `timeout + period` of the last heartbeat. A rank whose own ticks
//! stopped for longer than `timeout` (it was itself frozen or starved) restarts its
//! observation instead of accusing its predecessor.

use crate::{for_each_bmg_neighbor, RankSet};

/// What the detector asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send a heartbeat to world rank `to`.
    Heartbeat { to: u32 },
    /// Send the finding "`rank` failed" to world rank `to`.
    Forward { to: u32, rank: u32 },
    /// `rank` is failed: record it (the driver tells the engine).
    Declare { rank: u32 },
}

/// The detector of one rank.
#[derive(Clone, Debug)]
pub struct Detector {
    n: u32,
    me: u32,
    period: u64,
    timeout: u64,
    failed: RankSet,
    forwarded: RankSet,
    pred: Option<u32>,
    succ: Option<u32>,
    last_heard: u64,
    next_hb: u64,
    last_tick: u64,
    counter: u64,
}

impl Detector {
    /// Rank `me` of `n`, heartbeat `period` and suspicion `timeout` in ns, started at `now`.
    pub fn new(n: u32, me: u32, period: u64, timeout: u64, now: u64) -> Detector {
        let mut d = Detector {
            n,
            me,
            period: period.max(1),
            timeout,
            failed: RankSet::new(),
            forwarded: RankSet::new(),
            pred: None,
            succ: None,
            last_heard: now,
            next_hb: now,
            last_tick: now,
            counter: 0,
        };
        d.pred = d.live_step(n - 1);
        d.succ = d.live_step(1);
        d
    }

    /// The observed rank.
    pub fn pred(&self) -> Option<u32> {
        self.pred
    }

    /// The rank observing us.
    pub fn succ(&self) -> Option<u32> {
        self.succ
    }

    /// When the driver should tick next (ns).
    pub fn next_deadline(&self) -> u64 {
        match self.pred {
            // Nobody left to observe: only the heartbeat timer matters.
            None => self.next_hb,
            Some(_) => self.next_hb.min(self.last_heard.saturating_add(self.timeout + 1)),
        }
    }

    /// Ranks known failed.
    pub fn is_failed(&self, r: u32) -> bool {
        self.failed.contains(&r)
    }

    /// Nearest live rank at `me + k·step` (step = 1 forward, n−1 backward).
    fn live_step(&self, step: u32) -> Option<u32> {
        let mut r = self.me;
        for _ in 1..self.n {
            r = ((r as u64 + step as u64) % self.n as u64) as u32;
            if !self.failed.contains(&r) {
                return Some(r);
            }
        }
        None
    }

    /// Timer tick.
    pub fn tick(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if now.saturating_sub(self.last_tick) > self.timeout {
            // We did not run for a whole timeout: our own silence, not the predecessor's.
            self.last_heard = now;
        }
        self.last_tick = now;
        if now >= self.next_hb {
            if let Some(s) = self.succ {
                self.counter += 1;
                out.push(Action::Heartbeat { to: s });
            }
            self.next_hb = now + self.period;
        }
        if let Some(p) = self.pred {
            if now.saturating_sub(self.last_heard) > self.timeout {
                self.found(p, None, now, &mut out);
            }
        }
        out
    }

    /// Heartbeat counter (for the wire).
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// A heartbeat from `from`.
    pub fn on_heartbeat(&mut self, from: u32, now: u64) -> Vec<Action> {
        if Some(from) == self.pred {
            self.last_heard = now;
        }
        Vec::new()
    }

    /// A finding "`rank` failed" from `from`.
    pub fn on_finding(&mut self, from: u32, rank: u32, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if rank == self.me {
            // We were declared failed (we were frozen): nothing of ours counts any more; the
            // driver keeps us quiet. Do not propagate.
            return out;
        }
        self.found(rank, Some(from), now, &mut out);
        out
    }

    /// `rank` failed, learned from another source (transport, runtime).
    pub fn on_failure(&mut self, rank: u32, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if rank != self.me && self.failed.insert(rank) {
            self.reclose(now, &mut out);
        }
        out
    }

    fn found(&mut self, rank: u32, from: Option<u32>, now: u64, out: &mut Vec<Action>) {
        if rank >= self.n || rank == self.me {
            return;
        }
        if self.forwarded.insert(rank) {
            let failed = &self.failed;
            for_each_bmg_neighbor(self.n, self.me, |to| {
                if Some(to) != from && to != rank && !failed.contains(&to) {
                    out.push(Action::Forward { to, rank });
                }
            });
        }
        if self.failed.insert(rank) {
            out.push(Action::Declare { rank });
            self.reclose(now, out);
        }
    }

    fn reclose(&mut self, now: u64, out: &mut Vec<Action>) {
        let pred = self.live_step(self.n - 1);
        if pred != self.pred {
            self.pred = pred;
            self.last_heard = now;
        }
        let succ = self.live_step(1);
        if succ != self.succ {
            self.succ = succ;
            if let Some(s) = succ {
                self.counter += 1;
                out.push(Action::Heartbeat { to: s });
                self.next_hb = now + self.period;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Simulate `n` detectors with message delay `delay`; `frozen` = (rank, from, until):
    /// that rank neither ticks nor receives in the interval. Returns, per rank, when it
    /// declared each failure.
    fn sim(
        n: u32,
        period: u64,
        timeout: u64,
        delay: u64,
        frozen: Option<(u32, u64, u64)>,
        end: u64,
    ) -> Vec<Vec<(u32, u64)>> {
        let mut d: Vec<Detector> = (0..n).map(|r| Detector::new(n, r, period, timeout, 0)).collect();
        let mut inflight: Vec<(u64, u32, u32, Option<u32>)> = Vec::new(); // (at, from, to, finding)
        let mut declared = vec![Vec::new(); n as usize];
        let step = MS / 10;
        let mut now = 0;
        let is_frozen = |r: u32, t: u64| frozen.is_some_and(|(f, a, b)| f == r && t >= a && t < b);
        while now < end {
            let mut acts: Vec<(u32, Action)> = Vec::new();
            let (due, rest): (Vec<_>, Vec<_>) = inflight.drain(..).partition(|m| m.0 <= now);
            inflight = rest;
            for (_, from, to, f) in due {
                if is_frozen(to, now) {
                    inflight.push((now + step, from, to, f));
                    continue;
                }
                // Messages from a rank this receiver declared failed are ignored.
                if d[to as usize].is_failed(from) {
                    continue;
                }
                let a = match f {
                    None => d[to as usize].on_heartbeat(from, now),
                    Some(r) => d[to as usize].on_finding(from, r, now),
                };
                acts.extend(a.into_iter().map(|a| (to, a)));
            }
            for r in 0..n {
                if !is_frozen(r, now) {
                    acts.extend(d[r as usize].tick(now).into_iter().map(|a| (r, a)));
                }
            }
            for (r, a) in acts {
                match a {
                    Action::Heartbeat { to } => inflight.push((now + delay, r, to, None)),
                    Action::Forward { to, rank } => inflight.push((now + delay, r, to, Some(rank))),
                    Action::Declare { rank } => declared[r as usize].push((rank, now)),
                }
            }
            now += step;
        }
        declared
    }

    #[test]
    fn no_false_positive_with_delays_under_the_timeout() {
        let out = sim(6, 10 * MS, 30 * MS, 15 * MS, None, 500 * MS);
        assert!(out.iter().all(|d| d.is_empty()), "{out:?}");
    }

    #[test]
    fn delay_over_the_timeout_is_a_suspicion() {
        let out = sim(4, 10 * MS, 30 * MS, 45 * MS, None, 200 * MS);
        assert!(out.iter().any(|d| !d.is_empty()));
    }

    #[test]
    fn frozen_rank_declared_within_timeout_plus_period_and_ring_recloses() {
        let (period, timeout) = (10 * MS, 30 * MS);
        let freeze = 100 * MS;
        let out = sim(6, period, timeout, MS / 2, Some((3, freeze, 400 * MS)), 600 * MS);
        for (r, d) in out.iter().enumerate() {
            if r == 3 {
                continue;
            }
            assert_eq!(d.len(), 1, "rank {r} declared {d:?}");
            let (rank, at) = d[0];
            assert_eq!(rank, 3);
            // The observer declares within timeout + period of the freeze; the others hear of
            // it a few message delays later.
            assert!(at <= freeze + timeout + period + 5 * MS, "rank {r} at {} ms", at / MS);
        }
        // After it resumes (at 400 ms) it may accuse others, but its findings are ignored:
        // the other ranks declared nothing else (checked above: exactly one declaration).
    }

    #[test]
    fn ring_recloses_around_consecutive_failures() {
        let mut d = Detector::new(5, 2, 10, 30, 0);
        assert_eq!((d.pred(), d.succ()), (Some(1), Some(3)));
        d.on_failure(1, 5);
        assert_eq!(d.pred(), Some(0));
        let a = d.on_failure(3, 5);
        assert_eq!(d.succ(), Some(4));
        assert!(a.contains(&Action::Heartbeat { to: 4 }));
        let a = d.on_finding(4, 0, 6);
        assert!(a.contains(&Action::Declare { rank: 0 }));
        assert_eq!(d.pred(), Some(4));
        // A second copy of the finding is not forwarded again.
        assert!(d.on_finding(1, 0, 7).is_empty());
    }

    #[test]
    fn self_freeze_does_not_accuse_the_predecessor() {
        let mut d = Detector::new(3, 1, 10, 30, 0);
        d.tick(0);
        // No tick for 100 (we were stopped): the first tick after must not declare.
        let a = d.tick(100);
        assert!(!a.iter().any(|x| matches!(x, Action::Declare { .. })), "{a:?}");
    }
}
