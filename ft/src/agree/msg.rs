//! What agreement members exchange ([`Msg`]: up, decide, fast-path steps, abort) and what a
//! member asks its driver to do ([`Action`]: send, or return the decision).

use super::value::Value;

/// Agreement messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// A subtree's merged contribution, child → parent.
    Up(Value),
    /// The decision.
    Decide(Value),
    /// Fast path: a partial value for recursive-doubling step `step` ([`FAST_FINAL`](super::FAST_FINAL): the
    /// final value, to an extra member; step 1 of a direct exchange: the sender's
    /// contribution).
    Fast { step: u8, v: Value },
    /// Fast path abandoned: fall back to the tree (flooded over tree edges).
    Abort,
}

/// What the agreement asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send `msg` to rank `to`.
    Send { to: u32, msg: Msg },
    /// The local member decided (emitted once): return to the caller.
    Decided(Value),
}
