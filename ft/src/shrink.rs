//! Shrink: an agreement ([`crate::agree::Era`]) whose value carries the failed set (union)
//! and a new context id (max of every contributor's proposal); the survivors, in rank order,
//! are the communicator's ranks minus the agreed failed set.
//!
//! Context ids for several shrinks in flight at once: each member proposes from a
//! [`CtxPool`], which never proposes the same id to two pending shrinks and never proposes
//! an id below one it already proposed, so at any member the proposals of concurrent shrinks
//! are distinct and increasing in call order. When every member calls its concurrent
//! ishrinks in the same order (as MPI requires per communicator, and the usual case across
//! communicators), the decided ids differ wherever the groups overlap. An id that collides
//! anyway is detected at install time ([`CtxPool::commit`]) and reported, never silently
//! shared.

use crate::agree::{Action, Era, Msg, Tree, Value};

/// Outcome of a shrink, identical at every survivor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shrunk {
    /// Context id of the new communicator.
    pub ctx: u32,
    /// Survivors (ranks of the old communicator), in rank order.
    pub survivors: Vec<u32>,
    /// The agreed failed ranks.
    pub failed: Vec<u32>,
}

/// Result of a shrink decision over `n` ranks.
pub fn shrunk_of(n: u32, d: &Value) -> Shrunk {
    let survivors = (0..n).filter(|r| d.failed.binary_search(r).is_err()).collect();
    Shrunk { ctx: d.ctx, survivors, failed: d.failed.clone() }
}

/// What a shrink asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShrinkAction {
    /// Send an agreement message.
    Send { to: u32, msg: Msg },
    /// Build the new communicator.
    Done(Shrunk),
}

/// One member's state in one shrink.
#[derive(Clone, Debug)]
pub struct Shrink {
    n: u32,
    era: Era,
}

fn map(n: u32, acts: Vec<Action>) -> Vec<ShrinkAction> {
    acts.into_iter()
        .map(|a| match a {
            Action::Send { to, msg } => ShrinkAction::Send { to, msg },
            Action::Decided(d) => ShrinkAction::Done(shrunk_of(n, &d)),
        })
        .collect()
}

impl Shrink {
    /// Member `me` of the tree, knowing `failed`.
    pub fn new(tree: Tree, me: u32, failed: &[u32]) -> Shrink {
        Shrink { n: tree.size(), era: Era::new(tree, me, failed) }
    }
    /// Run the agreement's failure-free fast path first ([`Era::with_fast_path`]).
    pub fn with_fast_path(self) -> Shrink {
        Shrink { n: self.n, era: self.era.with_fast_path() }
    }
    /// Contribute the context proposal `ctx` and the known `failed` ranks.
    pub fn start(&mut self, ctx: u32, failed: &[u32]) -> Vec<ShrinkAction> {
        map(self.n, self.era.start(Value::new(u64::MAX, ctx, failed, &[])))
    }
    /// An agreement message from `from`.
    pub fn on_msg(&mut self, from: u32, msg: Msg) -> Vec<ShrinkAction> {
        map(self.n, self.era.on_msg(from, msg))
    }
    /// Rank `r` failed.
    pub fn on_failure(&mut self, r: u32) -> Vec<ShrinkAction> {
        map(self.n, self.era.on_failure(r))
    }
    /// The agreement inside.
    pub fn era(&self) -> &Era {
        &self.era
    }
}

/// Context-id proposals of one process for its shrinks.
#[derive(Clone, Debug, Default)]
pub struct CtxPool {
    /// Lowest id this process may still propose.
    hi: u32,
    /// Ids decided by shrinks of this process and installed (or about to be).
    taken: Vec<u32>,
}

impl CtxPool {
    /// A proposal for a new shrink, given the engine's next free id: distinct from every
    /// earlier proposal of this process.
    pub fn propose(&mut self, next_ctx: u32) -> u32 {
        let p = next_ctx.max(self.hi);
        self.hi = p + 2;
        p
    }
    /// Record a decided id; false if this process already used it for another shrink (a
    /// collision between concurrent shrinks called in different orders by different members).
    pub fn commit(&mut self, ctx: u32) -> bool {
        if self.taken.contains(&ctx) {
            return false;
        }
        self.taken.push(ctx);
        if self.taken.len() > 64 {
            self.taken.remove(0);
        }
        self.hi = self.hi.max(ctx + 2);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn run(
        shrinks: &mut [Vec<Shrink>],
        starts: Vec<(usize, u32, u32)>,
        kills: &[(usize, u32)],
    ) -> Vec<Vec<Option<Shrunk>>> {
        // shrinks[i][r]: member r of concurrent shrink i, all on the same n ranks.
        let n = shrinks[0].len();
        let mut q: VecDeque<(usize, u32, u32, Msg)> = VecDeque::new();
        let mut out = vec![vec![None; n]; shrinks.len()];
        let mut alive = vec![true; n];
        let push = |i: usize,
                    r: u32,
                    a: Vec<ShrinkAction>,
                    q: &mut VecDeque<_>,
                    out: &mut Vec<Vec<Option<Shrunk>>>| {
            for x in a {
                match x {
                    ShrinkAction::Send { to, msg } => q.push_back((i, r, to, msg)),
                    ShrinkAction::Done(s) => out[i][r as usize] = Some(s),
                }
            }
        };
        for (i, r, ctx) in starts {
            let a = shrinks[i][r as usize].start(ctx, &[]);
            push(i, r, a, &mut q, &mut out);
        }
        let mut step = 0;
        loop {
            for &(at, v) in kills {
                if at == step && alive[v as usize] {
                    alive[v as usize] = false;
                    q.retain(|x| x.1 != v);
                    for (i, sh) in shrinks.iter_mut().enumerate() {
                        for r in 0..n as u32 {
                            if alive[r as usize] {
                                let a = sh[r as usize].on_failure(v);
                                push(i, r, a, &mut q, &mut out);
                            }
                        }
                    }
                }
            }
            // Interleave the shrinks: take from the back every third step.
            let next = if step % 3 == 2 { q.pop_back() } else { q.pop_front() };
            let Some((i, f, t, msg)) = next else { break };
            if alive[t as usize] {
                let a = shrinks[i][t as usize].on_msg(f, msg);
                push(i, t, a, &mut q, &mut out);
            }
            step += 1;
        }
        for o in out.iter_mut() {
            for (r, x) in o.iter_mut().enumerate() {
                if !alive[r] {
                    *x = None;
                }
            }
        }
        out
    }

    #[test]
    fn concurrent_shrinks_agree_with_a_failure_during() {
        let n = 6u32;
        let mut pools: Vec<CtxPool> = (0..n).map(|_| CtxPool::default()).collect();
        let mut sh: Vec<Vec<Shrink>> =
            (0..3).map(|_| (0..n).map(|r| Shrink::new(Tree::binary(n), r, &[])).collect()).collect();
        let mut starts = Vec::new();
        for i in 0..3 {
            for r in 0..n {
                // Different next_ctx per process.
                starts.push((i, r, pools[r as usize].propose(10 + 2 * r)));
            }
        }
        let out = run(&mut sh, starts, &[(7, 0)]);
        let mut ctxs = Vec::new();
        for o in &out {
            let first = o.iter().flatten().next().unwrap().clone();
            for (r, x) in o.iter().enumerate() {
                if r != 0 {
                    assert_eq!(x.as_ref(), Some(&first), "member {r}");
                }
            }
            assert!(first.failed.is_empty() || first.failed == vec![0]);
            ctxs.push(first.ctx);
        }
        ctxs.sort();
        ctxs.dedup();
        assert_eq!(ctxs.len(), 3, "concurrent shrinks got distinct context ids");
        for (r, p) in pools.iter_mut().enumerate() {
            if r != 0 {
                for o in &out {
                    assert!(p.commit(o[r].as_ref().unwrap().ctx));
                }
            }
        }
    }

    #[test]
    fn survivors_exclude_agreed_failures() {
        let d = Value::new(0, 8, &[1, 3], &[]);
        let s = shrunk_of(5, &d);
        assert_eq!(s.survivors, vec![0, 2, 4]);
        assert_eq!(s.ctx, 8);
    }

    #[test]
    fn pool_detects_collisions() {
        let mut p = CtxPool::default();
        assert_eq!(p.propose(4), 4);
        assert_eq!(p.propose(4), 6);
        assert!(p.commit(10));
        assert!(!p.commit(10));
        assert_eq!(p.propose(4), 12);
    }
}
