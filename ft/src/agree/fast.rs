//! The failure-free fast path of an agreement: recursive doubling over the members, the
//! exchange pattern of a small allreduce, so that `agree` costs about what an allreduce of
//! the same word costs while nothing fails (ERA's up-then-down tree needs twice the depth);
//! up to [`DIRECT_MAX`] members, a direct exchange instead (everyone sends to everyone).
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
//!
//! ## Direct exchange (n ≤ [`DIRECT_MAX`])
//! Every member sends its contribution to every other one (step [`DIRECT`]) and completes once
//! it merged the n − 1 others: n·(n − 1) messages, depth 1. With few members the extra
//! messages cost less than the rounds they save, and a member completes as soon as every
//! other one has entered, without waiting for partners to be scheduled again between rounds
//! (with more ranks than cores, each round of recursive doubling waits for that).
//!
//! **Over the live members** ([`Fast::set_view`]): a member that starts knowing failures F
//! (its contribution's failed set is exactly F) exchanges with the members outside F only.
//! Every message is its sender's own contribution, so it carries the sender's F: a member
//! completes only with a message from every member outside its F, each with the same F
//! ([`Step::Mismatch`] otherwise: the member falls back). Two members that complete thus
//! started with the same F (each holds the other's F) and merged the same contributions.

use super::msg::{Action, Msg};
use super::value::Value;

/// Step number of the final value sent to an extra member.
pub const FINAL: u8 = u8::MAX;

/// Largest membership that uses the direct exchange instead of recursive doubling.
pub const DIRECT_MAX: u32 = 4;

/// Step number of a direct exchange's message.
pub const DIRECT: u8 = 1;

/// Where the schedule stands after a message or an advance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Waiting for more messages.
    Wait,
    /// The local member holds the merge of every contribution: it may decide.
    Done,
    /// A direct exchange over the live members met a contribution made with another view of
    /// the failures: the schedule cannot complete; the member must fall back.
    Mismatch,
}

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
    /// Messages that arrived before their slot was awaited (direct exchange: before the
    /// local start), keyed by slot (direct exchange: by sender): the first inline (the common
    /// case, a partner that started first, costs no allocation), more in `early_more`.
    early: Option<(u32, Value)>,
    early_more: Vec<(u32, Value)>,
    /// Direct exchange (n ≤ [`DIRECT_MAX`]): bit r is set once member r's contribution
    /// arrived (merged or kept in `early`). Unused (0) with recursive doubling.
    direct: bool,
    got: u64,
    /// Direct exchange over the live members ([`Fast::set_view`]): the failed members
    /// (bits, not sent to nor waited for) and their list, which every contribution must carry.
    dead: u64,
    view: Option<Vec<u32>>,
}

impl Fast {
    pub(super) fn new(n: u32, me: u32) -> Fast {
        let p: u32 = if n == 0 { 1 } else { 1 << (31 - n.leading_zeros()) };
        let rounds = p.trailing_zeros();
        let slot = if me >= p { rounds + 1 } else { 0 };
        let direct = n <= DIRECT_MAX;
        Fast {
            n,
            me,
            p,
            rounds,
            slot,
            sent: false,
            early: None,
            early_more: Vec::new(),
            direct,
            got: 0,
            dead: 0,
            view: None,
        }
    }

    /// True if this schedule is a direct exchange.
    pub(super) fn is_direct(&self) -> bool {
        self.direct
    }

    /// Run the direct exchange over the members outside `failed` (sorted, without the local
    /// member), requiring every contribution to carry exactly `failed` (see the module
    /// documentation). Call at the local start, before [`Fast::advance`]; direct exchange only.
    pub(super) fn set_view(&mut self, failed: &[u32]) {
        debug_assert!(self.direct);
        self.dead = failed.iter().filter(|&&r| r < self.n).fold(0, |m, &r| m | (1u64 << r));
        self.view = Some(failed.to_vec());
    }

    /// True if contribution `v` was made with this member's view (always, without a view).
    fn fits_view(&self, v: &Value) -> bool {
        self.view.as_ref().is_none_or(|f| *f == v.failed)
    }

    /// Keep a message that arrived before it could be merged, under `key`.
    fn keep_early(&mut self, key: u32, v: Value) {
        if self.early.is_none() {
            self.early = Some((key, v));
        } else {
            self.early_more.push((key, v));
        }
    }

    /// [`Fast::advance`] for the direct exchange. The contribution leaves before any early
    /// message is merged into `acc`: each message is its sender's own contribution.
    fn advance_direct(&mut self, acc: &mut Value, out: &mut Vec<Action>) -> Step {
        if !self.sent {
            self.sent = true;
            for to in (0..self.n).filter(|&r| r != self.me && self.dead & (1u64 << r) == 0) {
                out.push(Action::Send { to, msg: Msg::Fast { step: DIRECT, v: acc.clone() } });
            }
        }
        while let Some((_, v)) = self.early.take().or_else(|| self.early_more.pop()) {
            if !self.fits_view(&v) {
                return Step::Mismatch;
            }
            acc.merge(&v);
        }
        if (self.got | self.dead).count_ones() + 1 == self.n {
            Step::Done
        } else {
            Step::Wait
        }
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
    /// after, the schedule advances. Where the schedule stands (see [`Fast::advance`]).
    /// Unexpected messages (wrong sender or step, duplicates) are dropped.
    pub(super) fn on_msg(
        &mut self,
        from: u32,
        step: u8,
        v: Value,
        started: bool,
        acc: &mut Value,
        out: &mut Vec<Action>,
    ) -> Step {
        if self.direct {
            // Any other member's step-`DIRECT` message, once.
            if step != DIRECT || from >= self.n || from == self.me || self.got & (1u64 << from) != 0 {
                return Step::Wait;
            }
            self.got |= 1u64 << from;
            if !started {
                self.keep_early(from, v);
                return Step::Wait;
            }
            if !self.fits_view(&v) {
                return Step::Mismatch;
            }
            acc.merge(&v);
            return self.advance_direct(acc, out);
        }
        let Some((s, slot)) = self.sender_of(step) else { return Step::Wait };
        let held = |e: &(u32, Value)| e.0 == slot;
        if s != from
            || slot < self.slot
            || self.early.as_ref().is_some_and(held)
            || self.early_more.iter().any(held)
        {
            return Step::Wait;
        }
        if started && slot == self.slot {
            // The awaited message: no need to keep it.
            acc.merge(&v);
            self.slot += 1;
            self.sent = false;
        } else {
            self.keep_early(slot, v);
        }
        if started {
            self.advance(acc, out)
        } else {
            Step::Wait
        }
    }

    fn take_early(&mut self, slot: u32) -> Option<Value> {
        if self.early.as_ref().is_some_and(|e| e.0 == slot) {
            return self.early.take().map(|e| e.1);
        }
        let i = self.early_more.iter().position(|e| e.0 == slot)?;
        Some(self.early_more.swap_remove(i).1)
    }

    /// Run the schedule as far as the arrived messages allow, merging into `acc` and pushing
    /// its sends to `out`. [`Step::Done`] once `acc` holds the merge of every contribution
    /// (the member may decide it).
    pub(super) fn advance(&mut self, acc: &mut Value, out: &mut Vec<Action>) -> Step {
        if self.direct {
            return self.advance_direct(acc, out);
        }
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
                    None => return Step::Wait,
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
        Step::Done
    }

    /// Approximate heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.early_more.capacity() * std::mem::size_of::<(u32, Value)>()
            + self.view.as_ref().map_or(0, |v| v.capacity() * 4)
    }
}
