//! The agreed [`Value`] and how contributions merge: the AND of a flag word, the union of
//! failed ranks, the intersection of acknowledged failures, the max of a context id; and the
//! uniform outcome of a decision ([`Value::outcome`]).

/// The agreed value. Rank lists are sorted and free of duplicates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// Flag word, combined with AND.
    pub flag: u64,
    /// Context id proposal, combined with max (shrink).
    pub ctx: u32,
    /// Failed ranks, combined with union.
    pub failed: Vec<u32>,
    /// Failures acknowledged by every contributor, combined with intersection; `None` is the
    /// neutral element ("everything").
    pub acked: Option<Vec<u32>>,
}

/// Add the sorted ranks `b` to the sorted ranks `a`; true if `a` grew.
pub(crate) fn union(a: &mut Vec<u32>, b: &[u32]) -> bool {
    let before = a.len();
    for &x in b {
        if let Err(i) = a.binary_search(&x) {
            a.insert(i, x);
        }
    }
    a.len() != before
}

impl Value {
    /// A contribution: `flag`, context proposal `ctx`, known failed and acknowledged ranks.
    pub fn new(flag: u64, ctx: u32, failed: &[u32], acked: &[u32]) -> Value {
        let mut f = failed.to_vec();
        f.sort_unstable();
        f.dedup();
        let mut a = acked.to_vec();
        a.sort_unstable();
        a.dedup();
        Value { flag, ctx, failed: f, acked: Some(a) }
    }

    /// Make this the neutral element, keeping the allocations.
    pub fn reset_identity(&mut self) {
        self.flag = u64::MAX;
        self.ctx = 0;
        self.failed.clear();
        self.acked = None;
    }

    /// The neutral element of [`Value::merge`].
    pub fn identity() -> Value {
        Value { flag: u64::MAX, ctx: 0, failed: Vec::new(), acked: None }
    }

    /// Rank lists sorted without duplicates (what decoding requires).
    pub fn is_canonical(&self) -> bool {
        let ok = |l: &[u32]| l.windows(2).all(|w| w[0] < w[1]);
        ok(&self.failed) && self.acked.as_deref().is_none_or(ok)
    }

    /// Combine `o` into `self`; returns true if `self` changed.
    pub fn merge(&mut self, o: &Value) -> bool {
        let mut changed = false;
        let f = self.flag & o.flag;
        changed |= f != self.flag;
        self.flag = f;
        if o.ctx > self.ctx {
            self.ctx = o.ctx;
            changed = true;
        }
        changed |= union(&mut self.failed, &o.failed);
        if let Some(oa) = &o.acked {
            match &mut self.acked {
                None => {
                    self.acked = Some(oa.clone());
                    changed = true;
                }
                Some(a) => {
                    let before = a.len();
                    a.retain(|x| oa.binary_search(x).is_ok());
                    changed |= a.len() != before;
                }
            }
        }
        changed
    }

    /// The uniform result of an agreement on this decision: `Ok(flag)`, or `Err((flag,
    /// ranks))` when failed ranks are not acknowledged by every contributor (ULFM reports
    /// `ProcFailed` then; the flag is still the agreed one).
    pub fn outcome(&self) -> Result<u64, (u64, Vec<u32>)> {
        let unacked: Vec<u32> = self
            .failed
            .iter()
            .copied()
            .filter(|r| self.acked.as_ref().is_some_and(|a| a.binary_search(r).is_err()))
            .collect();
        if unacked.is_empty() {
            Ok(self.flag)
        } else {
            Err((self.flag, unacked))
        }
    }
}
