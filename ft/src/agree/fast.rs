//! The failure-free fast path of an agreement: recursive doubling over the members, the
//! exchange pattern of a small allreduce, so that `agree` costs about what an allreduce of
//! the same word costs while nothing fails (ERA's up-then-down tree needs twice the depth).
//!
//! This module owns only the schedule: who sends which partial value to whom at which step,
//! and when the local member holds the merge of every contribution. What happens when the
//! schedule cannot finish (a failure, or another member gave up on it) is
//! [`super::Era`]'s business: it falls back to the tree protocol, keeping any decision taken
//! here (see the invariants in `agree.rs`).
//!
//! ## Schedule (n members, p the largest power of two ≤ n, L = log₂ p)
//! - An *extra* member r ≥ p sends its contribution to r − p (step 0), then waits for the
//!   final value from r − p (step [`FINAL`]).
//! - A *core* member r < p first merges the contribution of r + p if that exists (step 0),
//!   then for k = 1..=L exchanges its merged value with r XOR 2^(k−1) (step k), then holds
//!   the merge of all n contributions and sends it to r + p if that exists.
//!
//! Every member that completes holds the same value: the merge of all n contributions (merge
//! is associative, commutative and idempotent). Failure free: 2·(n − p) + p·L messages, depth
//! L + 2 when n is not a power of two, L otherwise.

use super::{Action, Msg, Value};

/// Step number of the final value sent to an extra member.
pub const FINAL: u8 = u8::MAX;

/// One member's progress through the schedule.
#[derive(Clone, Debug)]
pub(super) struct Fast {
    n: u32,
    me: u32,
    p: u32,
    rounds: u32,
    /// Slot awaited next: 0 (an extra's contribution), 1..=rounds (exchanges), rounds + 1
    /// ([`FINAL`] for an extra; "done" for a core member), rounds + 2 (done, extra).
    slot: u32,
    /// Whether the message of the current slot was sent.
    sent: bool,
    /// Messages that arrived before their slot was awaited: the first inline (the common
    /// case, a partner that started first, costs no allocation), more in `early_more`.
    early: Option<(u32, Value)>,
    early_more: Vec<(u32, Value)>,
}

impl Fast {
    pub(super) fn new(n: u32, me: u32) -> Fast {
        let p: u32 = if n == 0 { 1 } else { 1 << (31 - n.leading_zeros()) };
        let rounds = p.trailing_zeros();
        let slot = if me >= p { rounds + 1 } else { 0 };
        Fast { n, me, p, rounds, slot, sent: false, early: None, early_more: Vec::new() }
    }

    fn is_extra(&self) -> bool {
        self.me >= self.p
    }

    fn done_slot(&self) -> u32 {
        if self.is_extra() {
            self.rounds + 2
        } else {
            self.rounds + 1
        }
    }

    /// The member that sends `step` to us and the slot it fills, if such a message exists.
    fn sender_of(&self, step: u8) -> Option<(u32, u32)> {
        let (me, p) = (self.me, self.p);
        if self.is_extra() {
            return (step == FINAL).then_some((me - p, self.rounds + 1));
        }
        match step {
            0 => (me + p < self.n).then_some((me + p, 0)),
            FINAL => None,
            s if (s as u32) <= self.rounds => Some((me ^ (1u32 << (s - 1)), s as u32)),
            _ => None,
        }
    }

    /// A message from `from` for `step`. Before the local start (`started` false) it is kept;
    /// after, the schedule advances. True when the member may decide (see [`Fast::advance`]).
    /// Unexpected messages (wrong sender or step, duplicates) are dropped.
    pub(super) fn on_msg(
        &mut self,
        from: u32,
        step: u8,
        v: Value,
        started: bool,
        acc: &mut Value,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some((s, slot)) = self.sender_of(step) else { return false };
        let held = |e: &(u32, Value)| e.0 == slot;
        if s != from
            || slot < self.slot
            || self.early.as_ref().is_some_and(held)
            || self.early_more.iter().any(held)
        {
            return false;
        }
        if started && slot == self.slot {
            // The awaited message: no need to keep it.
            acc.merge(&v);
            self.slot += 1;
            self.sent = false;
        } else if self.early.is_none() {
            self.early = Some((slot, v));
        } else {
            self.early_more.push((slot, v));
        }
        started && self.advance(acc, out)
    }

    fn take_early(&mut self, slot: u32) -> Option<Value> {
        if self.early.as_ref().is_some_and(|e| e.0 == slot) {
            return self.early.take().map(|e| e.1);
        }
        let i = self.early_more.iter().position(|e| e.0 == slot)?;
        Some(self.early_more.swap_remove(i).1)
    }

    /// Run the schedule as far as the arrived messages allow, merging into `acc` and pushing
    /// its sends to `out`. True once `acc` holds the merge of every contribution (the member
    /// may decide it).
    pub(super) fn advance(&mut self, acc: &mut Value, out: &mut Vec<Action>) -> bool {
        let send = |out: &mut Vec<Action>, to: u32, step: u8, v: &Value| {
            out.push(Action::Send { to, msg: Msg::Fast { step, v: v.clone() } })
        };
        let done = self.done_slot();
        if self.is_extra() && !self.sent && self.slot <= self.rounds + 1 {
            // Our contribution goes to the core partner first.
            self.sent = true;
            send(out, self.me - self.p, 0, acc);
        }
        while self.slot < done {
            let s = self.slot;
            let needed = if self.is_extra() {
                true
            } else if s == 0 {
                self.me + self.p < self.n
            } else {
                if !self.sent {
                    self.sent = true;
                    send(out, self.me ^ (1u32 << (s - 1)), s as u8, acc);
                }
                true
            };
            if needed {
                match self.take_early(s) {
                    Some(v) => acc.merge(&v),
                    None => return false,
                };
            }
            self.slot += 1;
            self.sent = self.is_extra();
        }
        if !self.is_extra() && !self.sent {
            self.sent = true;
            if self.me + self.p < self.n {
                send(out, self.me + self.p, FINAL, acc);
            }
        }
        true
    }

    /// Approximate heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.early_more.capacity() * std::mem::size_of::<(u32, Value)>()
    }
}
