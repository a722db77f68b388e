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
//! - **Every member tests every non-member** that is not crashed: the rejoin vote needs each
//!   member's own record of the candidate's consecutive good tests (a member votes yes when
//!   its record exceeds ζ/2), and non-members are few whenever the group is useful.
//!   Crashed processes are never tested: they stay non-recommended for good.

/// The member a member `me` tests: the next member after `me` in cyclic order (`None` when
/// `me` is the only member). `member(r)` says whether `r` is in the view.
pub fn ring_target(n: u32, me: u32, member: impl Fn(u32) -> bool) -> Option<u32> {
    (1..n).map(|k| ((me as u64 + k as u64) % n as u64) as u32).find(|&r| member(r))
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
}
