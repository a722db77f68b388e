//! The round barrier's agreement: what a process contributes and how the decision becomes
//! the view of the next computing round.
//!
//! The barrier is one fault-tolerant agreement (weft's ERA, whose value merges a union of
//! ranks and an intersection of ranks) among every live process — members and non-members
//! alike, as every process of the application arrives at the barrier. The agreed value is
//! encoded in the agreement's [`Value`] over `n` processes:
//!
//! - `failed` (union): `r` < n is a **crashed** process (the agreement itself adds the
//!   processes that fail during it); `n + r` is a process some contributor holds
//!   **non-recommended**; `2n + r` is a **rejoin proposal**: some member tested `r` good ζ
//!   times in a row.
//! - `acked` (intersection): the **yes votes** — a member votes for a candidate when its
//!   count of consecutive good tests of it exceeds ζ/2; a non-member contributes the neutral
//!   element (it does not vote).
//!
//! Decision: a non-crashed process is in the next view unless someone holds it
//! non-recommended, or it is a candidate that was proposed and voted for by every member
//! (consensus among the members). Every process computes the view from the same decided
//! value, so every process returns the same view. The group is never empty: if the rule
//! leaves nobody, the view is the lowest-ranked live process of the decision.

use crate::agree::Value;

/// A process's contribution: its crashed and non-recommended processes, its rejoin proposals
/// and (for a member) its yes votes. Lists need not be sorted.
pub fn contribution(
    n: u32,
    crashed: &[u32],
    non_rec: &[u32],
    proposals: &[u32],
    votes: Option<&[u32]>,
) -> Value {
    let n = n as u64;
    let mut failed: Vec<u32> = crashed
        .iter()
        .map(|&r| r as u64)
        .chain(non_rec.iter().map(|&r| n + r as u64))
        .chain(proposals.iter().map(|&r| 2 * n + r as u64))
        .filter_map(|x| u32::try_from(x).ok())
        .collect();
    failed.sort_unstable();
    failed.dedup();
    let acked = votes.map(|v| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v.dedup();
        v
    });
    Value { flag: u64::MAX, ctx: 0, failed, acked }
}

/// The view of the next round decided by `v` over `n` processes (sorted), and the rejoined
/// processes (those held non-recommended that the members readmitted).
pub fn decide(n: u32, v: &Value) -> (Vec<u32>, Vec<u32>) {
    let nn = n as u64;
    let has = |x: u64| u32::try_from(x).is_ok_and(|x| v.failed.binary_search(&x).is_ok());
    let voted = |r: u32| v.acked.as_ref().is_some_and(|a| a.binary_search(&r).is_ok());
    let mut view = Vec::new();
    let mut rejoined = Vec::new();
    for r in 0..n {
        let rr = r as u64;
        if has(rr) {
            continue;
        }
        if !has(nn + rr) {
            view.push(r);
        } else if has(2 * nn + rr) && voted(r) {
            view.push(r);
            rejoined.push(r);
        }
    }
    if view.is_empty() {
        if let Some(r) = (0..n).find(|&r| !has(r as u64)) {
            view.push(r);
            rejoined.push(r);
        }
    }
    (view, rejoined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(n: u32, parts: &[Value]) -> Value {
        let mut v = Value::identity();
        for p in parts {
            v.merge(p);
        }
        let _ = n;
        v
    }

    #[test]
    fn union_of_removals_and_unanimous_rejoin() {
        let n = 6;
        // 0 and 1 are members; 2 is non-recommended (proposed by 0, voted by both); 3 is
        // non-recommended at 1 only; 4 is crashed; 5 is a member everywhere.
        let a = contribution(n, &[4], &[2, 4], &[2], Some(&[2]));
        let b = contribution(n, &[], &[2, 3], &[], Some(&[2, 3]));
        let c = contribution(n, &[], &[2, 3], &[], None); // non-member 3: no vote
        let (view, rejoined) = decide(n, &merged(n, &[a.clone(), b.clone(), c]));
        assert_eq!(view, vec![0, 1, 2, 5]);
        assert_eq!(rejoined, vec![2]);
        // Without 1's vote for 2, 2 stays out.
        let b2 = contribution(n, &[], &[2, 3], &[], Some(&[3]));
        let (view, _) = decide(n, &merged(n, &[a, b2]));
        assert_eq!(view, vec![0, 1, 5]);
    }

    #[test]
    fn crashed_never_rejoins_and_group_never_empty() {
        let n = 3;
        // Everyone votes for 1, 1 is proposed, but 1 crashed: out.
        let a = contribution(n, &[1], &[1], &[1], Some(&[1]));
        let (view, _) = decide(n, &merged(n, &[a]));
        assert_eq!(view, vec![0, 2]);
        // Everyone non-recommended, 0 crashed: the lowest live process is kept.
        let b = contribution(n, &[0], &[0, 1, 2], &[], Some(&[]));
        let (view, _) = decide(n, &merged(n, &[b]));
        assert_eq!(view, vec![1]);
    }
}
