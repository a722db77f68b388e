//! The longest gaps between a process's own runs over a sliding window: what its own replies
//! would have waited, which a tester must not hold against the processes it tests.
//!
//! Two buckets of `window` ns each: the maximum over the current bucket and the one before
//! covers between one and two windows of the past, with constant memory and constant work per
//! run. A bucket ends when a gap is noted at or after its end; a gap never straddles buckets
//! (it is noted whole when it ends).

/// Testing intervals per bucket: long enough to cover an application's phases (a process
/// waiting in weft has short gaps while its peers compute, and the other way round in the
/// next phase), short enough that a gap from a burst of load is forgotten within a few
/// seconds at the usual intervals.
pub const WINDOW_INTERVALS: u64 = 8;

/// Sliding maximum of gaps (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gaps {
    window: u64,
    /// End of the current bucket (`None` before the first gap).
    end: Option<u64>,
    cur: u64,
    prev: u64,
}

impl Gaps {
    /// No gap yet; buckets of `window` ns (at least 1).
    pub fn new(window: u64) -> Gaps {
        Gaps { window: window.max(1), end: None, cur: 0, prev: 0 }
    }

    /// A gap of `gap` ns ended at `now`.
    pub fn note(&mut self, now: u64, gap: u64) {
        match self.end {
            None => self.end = Some(now.saturating_add(self.window)),
            Some(end) if now >= end => {
                // One bucket ended: the current becomes the previous; more than one: both are
                // older than the window.
                self.prev = if now < end.saturating_add(self.window) { self.cur } else { 0 };
                self.cur = 0;
                self.end = Some(now.saturating_add(self.window));
            }
            Some(_) => {}
        }
        self.cur = self.cur.max(gap);
    }

    /// The longest gap noted in the last one to two windows.
    pub fn max(&self) -> u64 {
        self.cur.max(self.prev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_longest_gap_for_one_to_two_windows() {
        let mut g = Gaps::new(100);
        assert_eq!(g.max(), 0);
        g.note(10, 5);
        g.note(20, 40);
        g.note(30, 7);
        assert_eq!(g.max(), 40);
        // Next bucket: the 40 is still within the window.
        g.note(115, 3);
        assert_eq!(g.max(), 40);
        // Two buckets later it is gone.
        g.note(220, 2);
        assert_eq!(g.max(), 3);
        // A long silence forgets both buckets.
        g.note(1_000, 9);
        assert_eq!(g.max(), 9);
    }
}
