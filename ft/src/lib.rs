//! `weft-ft`: the fault-tolerance protocols of weft (revoke, ERA agreement, shrink, heartbeat
//! detector) as sans-IO state machines, their wire encoding, and their glue to the engine.
//!
//! Each protocol is a **sans-IO state machine**: its inputs are a message from a rank, a
//! failure notice for a rank, or a timer tick carrying `now` (nanoseconds); its outputs are a
//! list of actions (send this message to that rank, deliver, decide, declare). No I/O, no clock
//! and no thread inside, and no engine type either: ranks are plain `u32` and messages are
//! plain values encoded by [`wire`]. The engine drives them through [`glue`]; the deterministic
//! simulator (the `weft-sim` crate, which also holds the gossip consensus) drives the very
//! same code with virtual time. This crate has no simulator code and no command-line
//! dependency, so the facade links only the protocols and their glue.
//!
//! | module | protocol |
//! |---|---|
//! | [`revoke`] | reliable broadcast over the binomial graph (degree ≈ 2·log₂ N, tolerates degree−1 failures) |
//! | [`agree`] | Early Returning Agreement ("Practical Scalable Consensus for Pseudo-Synchronous Distributed Systems", Herault et al., SC15): fault-tolerant AND of a flag word, union of failed ranks, max of a context id; flat binary or hierarchical bin/bin trees |
//! | [`shrink`] | shrink on top of the agreement: agreed failed set + agreed new context id |
//! | [`detector`] | observation-ring heartbeat detector ("Failure Detection and Propagation in HPC Systems", Bosilca et al., SC16) with reliable broadcast of findings |
//! | [`wire`] | message encoding; malformed input is rejected, never a panic |
//! | [`dgrp_glue`] | drives the DGRP diagnosis from the engine: handler and slow-path activity installed only while it runs, round barrier by agreement |
//! | [`glue`] | message-class handlers, one activity, generic requests: drives the above from the engine |

pub mod agree;
pub mod detector;
pub mod dgrp;
pub mod dgrp_glue;
pub mod glue;
pub mod revoke;
pub mod shrink;
pub mod wire;

pub use dgrp_glue::{DgrpCounters, DgrpGlue};
pub use glue::{AgreePath, Ft, FtOptions, FtStats};

/// Message classes of the FT protocols (engine classes ≥ `class::FIRST_FREE`; 16..=39 are
/// left to the collectives layer).
pub mod class {
    /// Revoke broadcast.
    pub const REVOKE: u8 = 40;
    /// Agreement (ERA) up and decide messages.
    pub const AGREE: u8 = 41;
    /// Heartbeat of the observation ring.
    pub const HEARTBEAT: u8 = 42;
    /// A detector finding (failed world rank), reliably broadcast.
    pub const FINDING: u8 = 43;
    /// Diagnosis of the dynamic group of recommended processes (tests, replies, events).
    pub const DGRP: u8 = 44;
}

/// A small set of ranks: a sorted `Vec` without duplicates. Per-instance failure knowledge is
/// usually a handful of ranks, so this costs 24 bytes when empty (a `HashSet` costs 48) and
/// one allocation of 4 bytes per member otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankSet(Vec<u32>);

impl RankSet {
    /// The empty set.
    pub const fn new() -> RankSet {
        RankSet(Vec::new())
    }
    /// Membership.
    #[inline]
    pub fn contains(&self, r: &u32) -> bool {
        self.0.binary_search(r).is_ok()
    }
    /// Insert; true if `r` was not there.
    pub fn insert(&mut self, r: u32) -> bool {
        match self.0.binary_search(&r) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, r);
                true
            }
        }
    }
    /// Remove every member (keeps the allocation).
    pub fn clear(&mut self) {
        self.0.clear();
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Members in increasing order.
    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }
    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * 4
    }
    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = &u32> + '_ {
        self.0.iter()
    }
}

impl FromIterator<u32> for RankSet {
    fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> RankSet {
        let mut v: Vec<u32> = it.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        RankSet(v)
    }
}

impl Extend<u32> for RankSet {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, it: I) {
        for r in it {
            self.insert(r);
        }
    }
}

/// A view of which ranks are failed (what tree computations need).
pub trait FailedView {
    /// True if `r` is failed in this view.
    fn has(&self, r: u32) -> bool;
}

impl FailedView for RankSet {
    #[inline]
    fn has(&self, r: u32) -> bool {
        self.contains(&r)
    }
}

impl<S: std::hash::BuildHasher> FailedView for std::collections::HashSet<u32, S> {
    #[inline]
    fn has(&self, r: u32) -> bool {
        self.contains(&r)
    }
}

/// Visit the neighbours of `me` in the binomial graph over `n` vertices (the order and set of
/// [`bmg_neighbors`]) without allocating.
pub fn for_each_bmg_neighbor(n: u32, me: u32, mut f: impl FnMut(u32)) {
    if n <= 1 || me >= n {
        return;
    }
    // Small degree (≤ 2·32): remember what was emitted in a fixed array.
    let mut seen = [0u32; 64];
    let mut k = 0;
    let mut d: u64 = 1;
    while d < n as u64 {
        for v in [(me as u64 + d) % n as u64, (me as u64 + n as u64 - d % n as u64) % n as u64] {
            let v = v as u32;
            if v != me && !seen[..k].contains(&v) {
                seen[k] = v;
                k += 1;
                f(v);
            }
        }
        d *= 2;
    }
}

/// Degree of every vertex of the binomial graph over `n` vertices.
pub fn bmg_degree(n: u32) -> u32 {
    let mut c = 0;
    for_each_bmg_neighbor(n, 0, |_| c += 1);
    c
}

/// Neighbours of `me` in the binomial graph over `n` vertices: `me ± 2^k (mod n)` for every
/// `2^k < n`, without duplicates and without `me`. Its node connectivity equals its degree, so
/// a broadcast that forwards to every neighbour reaches every live vertex as long as fewer
/// than `degree` vertices have failed.
pub fn bmg_neighbors(n: u32, me: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for_each_bmg_neighbor(n, me, |v| out.push(v));
    out
}

/// 32-bit fingerprint of a communicator's membership (FNV-1a over the world ranks): the
/// *epoch* carried by revoke and agreement messages next to the context id. Context ids are
/// never reused by a process, so `(ctx, epoch)` names one communicator incarnation; a message
/// whose pair does not match a live communicator is stale and dropped.
pub fn epoch_of(world_of: &[u32]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for w in world_of {
        for b in w.to_le_bytes() {
            h ^= b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bmg_degree_and_symmetry() {
        for n in 1..70u32 {
            for me in 0..n {
                let nb = bmg_neighbors(n, me);
                assert!(!nb.contains(&me));
                for &v in &nb {
                    assert!(bmg_neighbors(n, v).contains(&me), "n={n} {me}<->{v} not symmetric");
                }
                let lg = 32 - (n.max(1) - 1).leading_zeros();
                assert!(nb.len() as u32 <= 2 * lg, "n={n} degree {}", nb.len());
            }
        }
    }
}
