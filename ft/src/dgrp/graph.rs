//! The testing graph: which processes a recommended process tests in one testing interval.
//!
//! - **Members test members on a ring**: a member tests the next member of its view in
//!   cyclic rank order. When views agree, every member has exactly one tester, so a testing
//!   round costs one test per member (the paper's fully connected assignment costs N−1 per
//!   member, N(N−1) in all, which does not scale to thousands of processes), and a member
//!   that turns slow is found by its tester within one interval; the finding then reaches
//!   everyone by reliable broadcast, so the diagnosis latency stays one testing round
//!   whatever N. A removed member's tester moves on to the next member, like the ring
//!   re-closing in adaptive distributed diagnosis.
//! - **A non-member is tested by the `k` members that follow it** in cyclic rank order,
//!   `k = 2⌈log₂ N⌉` (every member when there are fewer): they keep their own records of its
//!   consecutive good tests for the rejoin vote (a tester votes yes when its record exceeds
//!   ζ/2; a member that is not a tester abstains), and a non-member answers O(log N) tests
//!   per interval instead of one per member — with every member testing it, the simulator
//!   showed a returning process at N = 2^13 with a 1 ms interval answering too slowly, its
//!   replies queued behind thousands of others, to ever rejoin. Views differ only between
//!   barriers and only by removals, so the tester sets agree again after each barrier.
//!   Crashed processes are never tested: they stay non-recommended for good.

/// The member a member `me` tests: the next member after `me` in cyclic order (`None` when
/// `me` is the only member). `member(r)` says whether `r` is in the view.
pub fn ring_target(n: u32, me: u32, member: impl Fn(u32) -> bool) -> Option<u32> {
    (1..n).map(|k| ((me as u64 + k as u64) % n as u64) as u32).find(|&r| member(r))
}

/// How many members test each non-member in a world of `n`: `2⌈log₂ n⌉`, at least 1.
pub fn non_member_testers(n: u32) -> u32 {
    (2 * (32 - n.saturating_sub(1).leading_zeros())).max(1)
}

/// True if member `me` is one of the `k` members that follow non-member `c` in cyclic order.
pub fn tests_non_member(n: u32, me: u32, c: u32, k: u32, member: impl Fn(u32) -> bool) -> bool {
    let mut seen = 0;
    for step in 1..n {
        let r = ((c as u64 + step as u64) % n as u64) as u32;
        if member(r) {
            if r == me {
                return true;
            }
            seen += 1;
            if seen == k {
                return false;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_skips_non_members_and_wraps() {
        let view = [0u32, 2, 5, 7];
        let m = |r: u32| view.contains(&r);
        assert_eq!(ring_target(8, 0, m), Some(2));
        assert_eq!(ring_target(8, 2, m), Some(5));
        assert_eq!(ring_target(8, 7, m), Some(0));
        assert_eq!(ring_target(8, 3, m), Some(5));
        assert_eq!(ring_target(8, 0, |r| r == 0), None);
        // Every member is tested by exactly one member.
        let mut tested = [0; 8];
        for &t in &view {
            tested[ring_target(8, t, m).unwrap() as usize] += 1;
        }
        assert!(view.iter().all(|&r| tested[r as usize] == 1));
    }

    #[test]
    fn a_non_member_has_k_testers_following_it() {
        assert_eq!(non_member_testers(1), 1);
        assert_eq!(non_member_testers(4), 4);
        assert_eq!(non_member_testers(1 << 16), 32);
        let view = [0u32, 2, 5, 7];
        let m = |r: u32| view.contains(&r);
        let testers: Vec<u32> = view.iter().copied().filter(|&t| tests_non_member(8, t, 3, 2, m)).collect();
        assert_eq!(testers, vec![5, 7]);
        let testers: Vec<u32> = view.iter().copied().filter(|&t| tests_non_member(8, t, 6, 3, m)).collect();
        assert_eq!(testers, vec![0, 2, 7]);
    }
}
