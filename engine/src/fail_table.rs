//! The failure-knowledge table: which world ranks are known to have failed (in the order
//! they were learned) and which said goodbye. Plain data; `failure.rs` holds what a new
//! failure ends.
//!
//! The fast path reads only [`Failures::any`] (one word); the per-rank bits are consulted
//! only when some failure is known.

/// Known failed processes, in the order they were learned.
#[derive(Default, Debug)]
pub(crate) struct Failures {
    bits: Vec<u64>,
    /// Failed world ranks in order of detection; communicators acknowledge a prefix of it.
    pub(crate) list: Vec<u32>,
    /// Ranks that said goodbye (finalized): their exit is not a failure.
    departed: Vec<u64>,
}

impl Failures {
    pub(crate) fn new(nprocs: u32) -> Failures {
        let words = (nprocs as usize).div_ceil(64);
        Failures { bits: vec![0; words], list: Vec::new(), departed: vec![0; words] }
    }

    /// Cover world ranks `0..nprocs` (never shrinks): peers that joined the job.
    pub(crate) fn grow(&mut self, nprocs: u32) {
        let words = (nprocs as usize).div_ceil(64);
        if words > self.bits.len() {
            self.bits.resize(words, 0);
            self.departed.resize(words, 0);
        }
    }

    /// Record that `w` finalized.
    pub(crate) fn depart(&mut self, w: u32) {
        if let Some(b) = self.departed.get_mut(w as usize / 64) {
            *b |= 1u64 << (w % 64);
        }
    }

    /// True if `w` finalized (its exit is expected).
    pub(crate) fn departed(&self, w: u32) -> bool {
        self.departed.get(w as usize / 64).is_some_and(|b| b & (1u64 << (w % 64)) != 0)
    }

    /// True when at least one failure is known: the one word the fast path reads.
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        !self.list.is_empty()
    }

    #[inline]
    pub(crate) fn is_failed(&self, w: u32) -> bool {
        self.any() && self.bits.get(w as usize / 64).is_some_and(|b| b & (1u64 << (w % 64)) != 0)
    }

    /// Record `w` as failed; false if it was already known (or out of range).
    pub(crate) fn insert(&mut self, w: u32) -> bool {
        let Some(b) = self.bits.get_mut(w as usize / 64) else {
            return false;
        };
        let m = 1u64 << (w % 64);
        if *b & m != 0 {
            return false;
        }
        *b |= m;
        self.list.push(w);
        true
    }
}
