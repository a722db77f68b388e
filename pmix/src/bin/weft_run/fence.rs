//! Fault-tolerant fence bookkeeping of `weft-run` (pure state machine, no I/O).
//!
//! Semantics (also documented in `weft_pmix::launcher::protocol`): epoch `k` is expected from
//! every rank expected at `k-1` (all ranks at `k = 1`) minus the ranks named by a failed epoch
//! and minus finalized ranks. Epoch `k` fails as soon as an expected, unfinalized rank is dead
//! without having entered it; the failure set is fixed at that moment and every rank that
//! enters `k` (before or after) gets it. Epoch `k` succeeds when every expected, unfinalized
//! rank entered it. A dead rank is thus named by exactly one failed epoch.

use std::collections::BTreeMap;

/// What the server must send after an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Send FENCE_DONE(epoch, whole store) to `notify`.
    Done { epoch: u32, notify: Vec<u32> },
    /// Send FENCE_FAILED(epoch, failed) to `notify`.
    Failed { epoch: u32, failed: Vec<u32>, notify: Vec<u32> },
}

#[derive(Debug)]
pub struct Fences {
    epoch: u32,
    expected: Vec<bool>,
    arrived: Vec<bool>,
    dead: Vec<bool>,
    finalized: Vec<bool>,
    /// Next epoch each rank may enter.
    next: Vec<u32>,
    failed_epochs: BTreeMap<u32, Vec<u32>>,
}

impl Fences {
    pub fn new(size: u32) -> Fences {
        let n = size as usize;
        Fences {
            epoch: 1,
            expected: vec![true; n],
            arrived: vec![false; n],
            dead: vec![false; n],
            finalized: vec![false; n],
            next: vec![1; n],
            failed_epochs: BTreeMap::new(),
        }
    }

    /// `rank` sent FENCE(epoch). `Err` is a protocol violation by `rank`.
    pub fn enter(&mut self, rank: u32, epoch: u32) -> Result<Vec<Outcome>, String> {
        let r = rank as usize;
        if r >= self.expected.len() {
            return Err(format!("fence from unknown rank {rank}"));
        }
        if self.finalized[r] {
            return Err("fence after finalize".into());
        }
        if epoch != self.next[r] {
            return Err(format!("fence epoch {epoch}, expected {}", self.next[r]));
        }
        self.next[r] = epoch + 1;
        if epoch < self.epoch {
            return match self.failed_epochs.get(&epoch) {
                Some(failed) => {
                    Ok(vec![Outcome::Failed { epoch, failed: failed.clone(), notify: vec![rank] }])
                }
                None => Err(format!("fence epoch {epoch} already completed without this rank")),
            };
        }
        if epoch > self.epoch || !self.expected[r] {
            return Err(format!("fence epoch {epoch} not open for this rank"));
        }
        self.arrived[r] = true;
        Ok(self.settle())
    }

    /// `rank` died (any way that counts as failure).
    #[cfg(test)]
    pub fn on_dead(&mut self, rank: u32) -> Vec<Outcome> {
        self.on_dead_many(&[rank])
    }

    /// Several ranks died at once (a whole node): a fence they fail names all of them.
    pub fn on_dead_many(&mut self, ranks: &[u32]) -> Vec<Outcome> {
        for &r in ranks {
            if let Some(d) = self.dead.get_mut(r as usize) {
                *d = true;
            }
        }
        self.settle()
    }

    /// `rank` finalized (or left the job without ever joining it).
    pub fn on_finalized(&mut self, rank: u32) -> Vec<Outcome> {
        if let Some(f) = self.finalized.get_mut(rank as usize) {
            *f = true;
        }
        self.settle()
    }

    fn notify_list(&self) -> Vec<u32> {
        (0..self.arrived.len())
            .filter(|&i| self.arrived[i] && !self.dead[i] && !self.finalized[i])
            .map(|i| i as u32)
            .collect()
    }

    fn advance(&mut self, drop: &[u32]) {
        for &r in drop {
            self.expected[r as usize] = false;
        }
        for i in 0..self.expected.len() {
            if self.finalized[i] {
                self.expected[i] = false;
            }
            self.arrived[i] = false;
        }
        self.epoch += 1;
    }

    fn settle(&mut self) -> Vec<Outcome> {
        let mut out = Vec::new();
        loop {
            let n = self.expected.len();
            let live_expected = |s: &Self, i: usize| s.expected[i] && !s.finalized[i];
            let failed: Vec<u32> = (0..n)
                .filter(|&i| live_expected(self, i) && !self.arrived[i] && self.dead[i])
                .map(|i| i as u32)
                .collect();
            if !failed.is_empty() {
                let epoch = self.epoch;
                out.push(Outcome::Failed { epoch, failed: failed.clone(), notify: self.notify_list() });
                self.failed_epochs.insert(epoch, failed.clone());
                self.advance(&failed);
                continue;
            }
            let any_arrived = self.arrived.iter().any(|&a| a);
            let complete = (0..n).all(|i| !live_expected(self, i) || self.arrived[i]);
            if any_arrived && complete {
                out.push(Outcome::Done { epoch: self.epoch, notify: self.notify_list() });
                self.advance(&[]);
                continue;
            }
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_arrive() {
        let mut f = Fences::new(3);
        assert!(f.enter(0, 1).unwrap().is_empty());
        assert!(f.enter(2, 1).unwrap().is_empty());
        assert_eq!(f.enter(1, 1).unwrap(), vec![Outcome::Done { epoch: 1, notify: vec![0, 1, 2] }]);
        assert!(f.enter(1, 2).unwrap().is_empty());
    }

    #[test]
    fn death_fails_waiting_fence_then_survivors_continue() {
        let mut f = Fences::new(4);
        f.enter(0, 1).unwrap();
        f.enter(1, 1).unwrap();
        assert_eq!(f.on_dead(3), vec![Outcome::Failed { epoch: 1, failed: vec![3], notify: vec![0, 1] }]);
        // Late comer to epoch 1 gets the same verdict.
        assert_eq!(
            f.enter(2, 1).unwrap(),
            vec![Outcome::Failed { epoch: 1, failed: vec![3], notify: vec![2] }]
        );
        f.enter(0, 2).unwrap();
        f.enter(1, 2).unwrap();
        assert_eq!(f.enter(2, 2).unwrap(), vec![Outcome::Done { epoch: 2, notify: vec![0, 1, 2] }]);
    }

    #[test]
    fn death_before_any_fence_fails_the_next_one() {
        let mut f = Fences::new(2);
        assert!(f.on_dead(1).len() == 1);
        assert_eq!(
            f.enter(0, 1).unwrap(),
            vec![Outcome::Failed { epoch: 1, failed: vec![1], notify: vec![0] }]
        );
        assert_eq!(f.enter(0, 2).unwrap(), vec![Outcome::Done { epoch: 2, notify: vec![0] }]);
    }

    #[test]
    fn death_after_arrival_is_named_by_the_next_fence() {
        let mut f = Fences::new(3);
        f.enter(0, 1).unwrap();
        f.enter(1, 1).unwrap();
        assert!(f.on_dead(1).is_empty());
        let out = f.enter(2, 1).unwrap();
        assert_eq!(
            out,
            vec![
                Outcome::Done { epoch: 1, notify: vec![0, 2] },
                Outcome::Failed { epoch: 2, failed: vec![1], notify: vec![] },
            ]
        );
        assert_eq!(
            f.enter(0, 2).unwrap(),
            vec![Outcome::Failed { epoch: 2, failed: vec![1], notify: vec![0] }]
        );
    }

    #[test]
    fn node_death_is_named_by_one_fence() {
        let mut f = Fences::new(5);
        f.enter(0, 1).unwrap();
        assert_eq!(
            f.on_dead_many(&[3, 4]),
            vec![Outcome::Failed { epoch: 1, failed: vec![3, 4], notify: vec![0] }]
        );
        f.enter(1, 1).unwrap();
        f.enter(2, 1).unwrap();
        f.enter(0, 2).unwrap();
        f.enter(1, 2).unwrap();
        assert_eq!(f.enter(2, 2).unwrap(), vec![Outcome::Done { epoch: 2, notify: vec![0, 1, 2] }]);
    }

    #[test]
    fn finalized_ranks_leave_and_violations_are_errors() {
        let mut f = Fences::new(3);
        f.enter(0, 1).unwrap();
        f.enter(1, 1).unwrap();
        assert_eq!(f.on_finalized(2), vec![Outcome::Done { epoch: 1, notify: vec![0, 1] }]);
        assert!(f.enter(2, 1).is_err());
        assert!(f.enter(0, 5).is_err());
        assert!(f.enter(9, 1).is_err());
        // Second fence with only rank 0 and 1.
        f.enter(0, 2).unwrap();
        assert!(f.enter(0, 2).is_err());
        // A finalized rank dying does not fail fences.
        assert!(f.on_dead(2).is_empty());
        assert_eq!(f.enter(1, 2).unwrap(), vec![Outcome::Done { epoch: 2, notify: vec![0, 1] }]);
    }
}
