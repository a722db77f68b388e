//! Revoke: reliable broadcast over the binomial graph (BMG) of a communicator.
//!
//! Invariant: on the **first** receipt (or the local call), a member forwards the revoke to
//! every BMG neighbour not known failed (except the one it came from), then delivers
//! (`revoke_local`). Because the BMG's node connectivity equals its degree D ≈ 2·log₂ N, every
//! live member delivers as long as fewer than D members fail, whenever they fail during the
//! propagation: a member that dies after receiving has no duty the others rely on, since every
//! live receiver forwards to all of its own neighbours. Later receipts are ignored, so each
//! member sends at most D messages.

#[cfg(test)]
use crate::bmg_neighbors;
use crate::{for_each_bmg_neighbor, RankSet};

/// What the revoke state machine asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send the revoke message to communicator rank `to`.
    Send { to: u32 },
    /// Revoke locally (complete every pending operation with `Revoked`).
    Deliver,
}

/// Revoke propagation state of one member of one communicator.
#[derive(Clone, Debug)]
pub struct Revoke {
    n: u32,
    me: u32,
    delivered: bool,
    failed: RankSet,
}

impl Revoke {
    /// Member `me` of a communicator of `n` ranks, knowing `failed` (communicator ranks).
    pub fn new(n: u32, me: u32, failed: &[u32]) -> Revoke {
        Revoke { n, me, delivered: false, failed: failed.iter().copied().collect() }
    }

    /// True once this member delivered the revoke.
    pub fn delivered(&self) -> bool {
        self.delivered
    }

    /// True if `r` is known failed here (the driver drops its messages, as the glue does).
    pub fn is_failed(&self, r: u32) -> bool {
        self.failed.contains(&r)
    }

    /// The local process calls revoke.
    pub fn start(&mut self) -> Vec<Action> {
        self.first(None)
    }

    /// A revoke message arrived from communicator rank `from`.
    pub fn on_msg(&mut self, from: u32) -> Vec<Action> {
        self.first(Some(from))
    }

    /// Communicator rank `r` failed: it will not be sent to.
    pub fn on_failure(&mut self, r: u32) -> Vec<Action> {
        self.failed.insert(r);
        Vec::new()
    }

    fn first(&mut self, from: Option<u32>) -> Vec<Action> {
        if self.delivered {
            return Vec::new();
        }
        self.delivered = true;
        let mut out: Vec<Action> = Vec::new();
        for_each_bmg_neighbor(self.n, self.me, |v| {
            if Some(v) != from && !self.failed.contains(&v) {
                out.push(Action::Send { to: v });
            }
        });
        out.push(Action::Deliver);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Run a revoke from `root` over `n` members; `kill` = (after how many deliveries, rank):
    /// the rank dies at that point (its queued messages are lost). Returns who delivered.
    fn run(n: u32, root: u32, dead: &[u32], kill: &[(usize, u32)], lifo: bool) -> Vec<bool> {
        let mut m: Vec<Revoke> = (0..n).map(|r| Revoke::new(n, r, dead)).collect();
        let mut alive: Vec<bool> = (0..n).map(|r| !dead.contains(&r)).collect();
        let mut q: VecDeque<(u32, u32)> = VecDeque::new();
        let mut deliveries = 0;
        let apply = |r: u32, acts: Vec<Action>, q: &mut VecDeque<(u32, u32)>, d: &mut usize| {
            for a in acts {
                match a {
                    Action::Send { to } => q.push_back((r, to)),
                    Action::Deliver => *d += 1,
                }
            }
        };
        let acts = m[root as usize].start();
        apply(root, acts, &mut q, &mut deliveries);
        loop {
            for &(at, victim) in kill {
                if deliveries >= at && alive[victim as usize] {
                    alive[victim as usize] = false;
                    q.retain(|&(from, _)| from != victim);
                    for (r, x) in m.iter_mut().enumerate() {
                        if alive[r] {
                            x.on_failure(victim);
                        }
                    }
                }
            }
            let next = if lifo { q.pop_back() } else { q.pop_front() };
            let Some((from, to)) = next else { break };
            if !alive[to as usize] {
                continue;
            }
            let acts = m[to as usize].on_msg(from);
            apply(to, acts, &mut q, &mut deliveries);
        }
        (0..n as usize).map(|r| !alive[r] || m[r].delivered()).collect()
    }

    #[test]
    fn everyone_delivers_without_failures() {
        for n in 1..40 {
            assert!(run(n, n / 2, &[], &[], false).iter().all(|&x| x));
        }
    }

    #[test]
    fn tolerates_degree_minus_one_failures_before_and_during() {
        let n = 32; // degree 9 (±1, ±2, ±4, ±8, 16)
                    // Dead before: the root's neighbours but one.
        let nb = bmg_neighbors(n, 0);
        let dead: Vec<u32> = nb[..nb.len() - 1].to_vec();
        assert!(run(n, 0, &dead, &[], false).iter().all(|&x| x));
        // Deaths during propagation, including members that received but had not forwarded.
        for lifo in [false, true] {
            let kills = [(1, 1), (2, 2), (3, 31), (5, 4), (8, 16), (9, 30)];
            assert!(run(n, 0, &[], &kills, lifo).iter().all(|&x| x), "lifo={lifo}");
        }
    }

    #[test]
    fn duplicate_receipt_is_ignored() {
        let mut r = Revoke::new(8, 3, &[]);
        assert!(r.on_msg(2).contains(&Action::Deliver));
        assert!(r.on_msg(4).is_empty());
        assert!(r.start().is_empty());
    }
}
