//! Early Returning Agreement (ERA, from "Practical Scalable Consensus for Pseudo-Synchronous
//! Distributed Systems", Herault et al., SC15): fault-tolerant agreement on a [`Value`] — the
//! AND of a flag word, the union of failed ranks, the intersection of acknowledged failures
//! and the max of a context id — over a reduction tree with re-parenting.
//!
//! ## Algorithm
//! A static tree ([`Tree`]: flat binary, or hierarchical bin/bin over nodes) is fixed for the
//! communicator. In a member's *view* (the failures it knows), its parent is its nearest live
//! static ancestor; a member whose static ancestors are all dead is an *orphan top*, and the
//! first live member in the tree's order (ancestors come before descendants) is the root,
//! which adopts every other orphan top. Children are the inverse: live static children, and in
//! place of a dead child, that child's live children (recursively).
//!
//! - **Up**: a member that has its own contribution and a report from every child in its
//!   view sends the merged value up (again whenever it learned something new: reports are
//!   idempotent — AND, union, intersection and max absorb duplicates). The root instead
//!   **decides**.
//! - **Decide**: the decision floods the tree: a member that decides (or learns the decision)
//!   sends it to its parent and children except the one it came from, and returns at once
//!   (early return). It keeps the decision: a later `Up` (from a member re-parented to it
//!   after a failure) is answered with the decision, and when its own parent changes it sends
//!   the decision to the new parent.
//! - **Failures**: parents and children are recomputed; undecided members re-send up once
//!   complete in the new view; the root may die — the next member in tree order takes over.
//!
//! ## Failure-free fast path ([`Era::with_fast_path`])
//! Before the tree, members run recursive doubling (`fast`) — the exchange of a small
//! allreduce; with at most [`FAST_DIRECT_MAX`] members, a direct exchange, everyone to
//! everyone — and decide as soon as they hold the merge of all contributions, without
//! any message of the tree. With failures known at the start, the direct exchange runs over
//! the live members when every member starts with the same view of the failures
//! ([`Era::start_view_into`]; a contribution made with another view makes its receiver fall
//! back). A member that cannot finish it (it learns of a failure after its start, or starts
//! with one in its view on any other schedule) *falls back*: it floods `Abort` over the tree edges of its
//! view (re-sent to new neighbours when the view changes) and runs the tree protocol with
//! its partial value. Any tree message (`Abort`, `Up`, `Decide`) also makes a member fall
//! back; one that already decided on the fast path joins the tree as a decided member: it
//! sends `Decide` to its neighbours and answers `Up` with it.
//!
//! ## Invariants
//! - Every fast-path decision is the merge of all n contributions (over the live members: of
//!   every member outside the view F every decider started with, all with the same F), so
//!   fast decisions agree with each other. A member that decided on the fast path never sends `Up`, so no
//!   tree root can complete while it lives without its `Decide` reaching that root first
//!   (the argument below): a tree decision equals any fast decision held by a live member.
//! - The flood reaches every live member (a member forwards to each neighbour of every view
//!   it holds), so a member stuck on the fast path — waiting for a partner that fell back or
//!   died — is always released.
//! - A member's parent changes only when that parent dies, so a child's report to a live
//!   parent stays valid; the decision can enter a subtree only through its top, and every
//!   live member holding a decision forwards it to its new parent, so a new root cannot
//!   complete (it waits for every orphan top) without hearing of an earlier decision held by
//!   a live member: all live members decide the same value (uniformity).
//! - Failure free: n−1 `Up` and n−1 `Decide` messages, depth ⌈log₂ n⌉ each way.
//! - Validity: the flag is the AND over every live member's contribution (contributions of
//!   members that died may or may not be included).
//! - Termination: every failure is eventually known to every live member (fail-stop with a
//!   complete detector), after which the tree is stable and the protocol completes.
//!
//! The outcome is uniform: [`Value::outcome`] reports `Err` (ULFM `ProcFailed`) exactly when
//! the agreed failed set holds ranks not acknowledged by every contributor.
//!
//! ## Files
//! `value.rs` (the value and its merge), `msg.rs` (messages and actions), `tree.rs` (the
//! trees and a member's view of them), `fast.rs` (the fast path's schedule), `era.rs` (a
//! member's state machine), `tests.rs` (a simulator of whole runs).

mod era;
mod fast;
mod msg;
mod tree;
mod value;

pub use era::Era;
pub use fast::{DIRECT as FAST_DIRECT, DIRECT_MAX as FAST_DIRECT_MAX, FINAL as FAST_FINAL};
pub use msg::{Action, Msg};
pub use tree::{Explicit, Tree};
pub(crate) use value::union;
pub use value::Value;

#[cfg(test)]
mod tests;
