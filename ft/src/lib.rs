//! `weft-ft`: the fault-tolerance protocols of weft.
//!
//! Each protocol is a **sans-IO state machine** (DESIGN §4): its inputs are a message from a
//! rank, a failure notice for a rank, or a timer tick carrying `now` (nanoseconds); its outputs
//! are a list of actions (send this message to that rank, deliver, decide, declare). No I/O,
//! no clock and no thread inside, and no engine type either: ranks are plain `u32` and
//! messages are plain values encoded by [`wire`]. The engine drives them through [`glue`]; the
//! simulator (a later issue) drives the very same code with virtual time.
//!
//! | module | protocol |
//! |---|---|
//! | [`revoke`] | reliable broadcast over the binomial graph (degree ≈ 2·log₂ N, tolerates degree−1 failures) |
//! | [`agree`] | Early Returning Agreement: fault-tolerant AND of a flag word, union of failed ranks, max of a context id; flat binary or hierarchical bin/bin trees |
//! | [`shrink`] | shrink on top of the agreement: agreed failed set + agreed new context id |
//! | [`detector`] | SC16 observation-ring heartbeat detector with reliable broadcast of findings |
//! | [`wire`] | message encoding; malformed input is rejected, never a panic |
//! | [`glue`] | message-class handlers, one activity, generic requests: drives the above from the engine |

pub mod agree;
pub mod detector;
pub mod glue;
pub mod revoke;
pub mod shrink;
pub mod wire;

pub use glue::{Ft, FtOptions, FtStats};

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
}

/// Neighbours of `me` in the binomial graph over `n` vertices: `me ± 2^k (mod n)` for every
/// `2^k < n`, without duplicates and without `me`. Its node connectivity equals its degree, so
/// a broadcast that forwards to every neighbour reaches every live vertex as long as fewer
/// than `degree` vertices have failed.
pub fn bmg_neighbors(n: u32, me: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if n <= 1 || me >= n {
        return out;
    }
    let mut d: u64 = 1;
    while d < n as u64 {
        let d32 = d as u32;
        for v in [(me as u64 + d) % n as u64, (me as u64 + n as u64 - d % n as u64) % n as u64] {
            let v = v as u32;
            if v != me && !out.contains(&v) {
                out.push(v);
            }
        }
        d = (d32 as u64) * 2;
    }
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
