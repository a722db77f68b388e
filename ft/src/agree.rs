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

use std::collections::HashMap;
use std::sync::Arc;

use crate::{FailedView, RankSet};

mod fast;
use fast::{Fast, Step};
pub use fast::{DIRECT as FAST_DIRECT, DIRECT_MAX as FAST_DIRECT_MAX, FINAL as FAST_FINAL};

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

/// Agreement messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// A subtree's merged contribution, child → parent.
    Up(Value),
    /// The decision.
    Decide(Value),
    /// Fast path: a partial value for recursive-doubling step `step` ([`FAST_FINAL`]: the
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

/// A static reduction tree over ranks `0..n`.
#[derive(Clone, Debug)]
pub enum Tree {
    /// Binary heap order: parent of `i` is `(i−1)/2`; the order is the rank order.
    Binary { n: u32 },
    /// Any tree given explicitly (hierarchical bin/bin).
    Explicit(Arc<Explicit>),
}

/// An explicit tree: parents, children and an order in which ancestors precede descendants.
#[derive(Clone, Debug)]
pub struct Explicit {
    parent: Vec<u32>,
    children: Vec<Vec<u32>>,
    order: Vec<u32>,
}

const NONE: u32 = u32::MAX;

fn bin_positions(members: &[u32], parent: &mut [u32], children: &mut [Vec<u32>]) {
    for i in 1..members.len() {
        let p = members[(i - 1) / 2];
        parent[members[i] as usize] = p;
        children[p as usize].push(members[i]);
    }
}

impl Tree {
    /// Flat binary tree over `n` ranks.
    pub fn binary(n: u32) -> Tree {
        Tree::Binary { n }
    }

    /// Hierarchical bin/bin tree: `node_of[r]` is rank `r`'s node. The first rank of each
    /// node is its leader; leaders form a binary tree (in order of first appearance), and each
    /// node's ranks a binary tree under their leader. With one node (or one rank per node)
    /// this is a binary tree.
    pub fn bin_bin(node_of: &[u32]) -> Tree {
        let n = node_of.len();
        let mut nodes: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut index: HashMap<u32, usize> = HashMap::new();
        for (r, &nd) in node_of.iter().enumerate() {
            let i = *index.entry(nd).or_insert_with(|| {
                nodes.push((nd, Vec::new()));
                nodes.len() - 1
            });
            nodes[i].1.push(r as u32);
        }
        let mut parent = vec![NONE; n];
        let mut children = vec![Vec::new(); n];
        let leaders: Vec<u32> = nodes.iter().map(|x| x.1[0]).collect();
        bin_positions(&leaders, &mut parent, &mut children);
        for (_, members) in &nodes {
            bin_positions(members, &mut parent, &mut children);
        }
        // Breadth-first order from the root: ancestors before descendants.
        let mut order = Vec::with_capacity(n);
        if n > 0 {
            order.push(leaders[0]);
            let mut i = 0;
            while i < order.len() {
                let x = order[i] as usize;
                order.extend_from_slice(&children[x]);
                i += 1;
            }
        }
        Tree::Explicit(Arc::new(Explicit { parent, children, order }))
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        match self {
            Tree::Binary { n } => *n,
            Tree::Explicit(t) => t.parent.len() as u32,
        }
    }

    fn parent(&self, x: u32) -> Option<u32> {
        match self {
            Tree::Binary { .. } => (x > 0).then(|| (x - 1) / 2),
            Tree::Explicit(t) => Some(t.parent[x as usize]).filter(|&p| p != NONE),
        }
    }

    fn children(&self, x: u32, out: &mut Vec<u32>) {
        match self {
            Tree::Binary { n } => {
                for c in [2 * x as u64 + 1, 2 * x as u64 + 2] {
                    if c < *n as u64 {
                        out.push(c as u32);
                    }
                }
            }
            Tree::Explicit(t) => out.extend_from_slice(&t.children[x as usize]),
        }
    }

    fn static_root(&self) -> u32 {
        match self {
            Tree::Binary { .. } => 0,
            Tree::Explicit(t) => t.order.first().copied().unwrap_or(0),
        }
    }

    /// First rank in tree order not in `failed`.
    fn first_live<F: FailedView + ?Sized>(&self, failed: &F) -> Option<u32> {
        match self {
            Tree::Binary { n } => (0..*n).find(|&r| !failed.has(r)),
            Tree::Explicit(t) => t.order.iter().copied().find(|&r| !failed.has(r)),
        }
    }

    /// True if `x` is a strict descendant of `a` in the static tree.
    pub fn is_descendant(&self, x: u32, a: u32) -> bool {
        let mut p = self.parent(x);
        while let Some(q) = p {
            if q == a {
                return true;
            }
            p = self.parent(q);
        }
        false
    }

    /// Parent of `x` in the view `failed` (`None`: `x` is the root).
    pub fn live_parent<F: FailedView + ?Sized>(&self, x: u32, failed: &F) -> Option<u32> {
        let mut a = self.parent(x);
        while let Some(p) = a {
            if !failed.has(p) {
                return Some(p);
            }
            a = self.parent(p);
        }
        match self.first_live(failed) {
            Some(r) if r != x => Some(r),
            _ => None,
        }
    }

    fn expand<F: FailedView + ?Sized>(&self, x: u32, failed: &F, out: &mut Vec<u32>) {
        let mut st = Vec::new();
        self.children(x, &mut st);
        while let Some(c) = st.pop() {
            if failed.has(c) {
                self.children(c, &mut st);
            } else {
                out.push(c);
            }
        }
    }

    /// Children of `x` in the view `failed` (sorted).
    pub fn live_children<F: FailedView + ?Sized>(&self, x: u32, failed: &F) -> Vec<u32> {
        let mut out = Vec::new();
        self.expand(x, failed, &mut out);
        let root = self.static_root();
        if root != x && failed.has(root) && self.first_live(failed) == Some(x) {
            // The root adopts the other orphan tops.
            let mut tops = Vec::new();
            self.expand(root, failed, &mut tops);
            out.extend(tops.into_iter().filter(|&t| t != x));
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// One member's state in one agreement instance.
#[derive(Clone, Debug)]
pub struct Era {
    tree: Tree,
    me: u32,
    failed: RankSet,
    mine: bool,
    acc: Value,
    /// Version of `acc` (bumped when it changes), and what was last sent up: (parent, version).
    version: u64,
    sent_up: Option<(u32, u64)>,
    /// Members that sent us `Up`: they reported, and they wait for the decision from us.
    reported: RankSet,
    decided: Option<Value>,
    /// Where the decision was sent (or came from).
    dec_sent: RankSet,
    parent: Option<u32>,
    children: Vec<u32>,
    mode: Mode,
    /// This instance fell back from the fast path: `Abort` is flooded to tree neighbours.
    flood: bool,
    abort_sent: RankSet,
}

/// Which protocol a member runs.
#[derive(Clone, Debug)]
enum Mode {
    /// The tree protocol (ERA).
    Tree,
    /// The fast path, not finished.
    Fast(Fast),
    /// Decided on the fast path; no tree message seen yet.
    FastDone,
}

impl Era {
    /// Member `me` of tree `tree`, knowing the failed ranks `failed`. It may receive messages
    /// before [`Era::start`] (a peer started first); it does not report up before it.
    pub fn new(tree: Tree, me: u32, failed: &[u32]) -> Era {
        let mut era = Era::build(tree, me, failed, Mode::Tree);
        era.refresh_view();
        era
    }

    /// Run the failure-free fast path first (see the module documentation). Every member of
    /// an instance must make the same choice. Call before any other method.
    pub fn with_fast_path(mut self) -> Era {
        self.mode = Mode::Fast(Fast::new(self.tree.size(), self.me));
        self
    }

    /// [`Era::new`] followed by [`Era::with_fast_path`], without computing the tree
    /// neighbours until the member leaves the fast path (the failure-free agreement never
    /// needs them).
    pub fn new_fast(tree: Tree, me: u32, failed: &[u32]) -> Era {
        let fast = Fast::new(tree.size(), me);
        Era::build(tree, me, failed, Mode::Fast(fast))
    }

    /// Make this instance what [`Era::new_fast`] (`fast`) or [`Era::new`] would build,
    /// keeping its allocations: a driver recycles finished instances instead of allocating
    /// and moving a new one for every agreement.
    pub fn reset(&mut self, tree: Tree, me: u32, failed: &[u32], fast: bool) {
        // Destructured so that a new field cannot be forgotten here.
        let Era {
            tree: t,
            me: m,
            failed: f,
            mine,
            acc,
            version,
            sent_up,
            reported,
            decided,
            dec_sent,
            parent,
            children,
            mode,
            flood,
            abort_sent,
        } = self;
        *t = tree;
        *m = me;
        f.clear();
        f.extend(failed.iter().copied().filter(|&r| r != me));
        *mine = false;
        acc.reset_identity();
        *version = 0;
        *sent_up = None;
        reported.clear();
        *decided = None;
        dec_sent.clear();
        *parent = None;
        children.clear();
        *flood = false;
        abort_sent.clear();
        *mode = if fast { Mode::Fast(Fast::new(t.size(), me)) } else { Mode::Tree };
        if !fast {
            self.refresh_view();
        }
    }

    /// A member with no neighbours computed yet ([`Era::refresh_view`]).
    fn build(tree: Tree, me: u32, failed: &[u32], mode: Mode) -> Era {
        Era {
            tree,
            me,
            failed: failed.iter().copied().filter(|&r| r != me).collect(),
            mine: false,
            acc: Value::identity(),
            version: 0,
            sent_up: None,
            reported: RankSet::new(),
            decided: None,
            dec_sent: RankSet::new(),
            parent: None,
            children: Vec::new(),
            mode,
            flood: false,
            abort_sent: RankSet::new(),
        }
    }

    /// Compute the tree neighbours in the current view.
    fn refresh_view(&mut self) {
        self.parent = self.tree.live_parent(self.me, &self.failed);
        self.children = self.tree.live_children(self.me, &self.failed);
    }

    /// True while on the fast path (decided there or not) and no tree message was seen.
    pub fn on_fast_path(&self) -> bool {
        !matches!(self.mode, Mode::Tree)
    }

    /// The decision, once known (kept to answer late requests).
    pub fn decision(&self) -> Option<&Value> {
        self.decided.as_ref()
    }

    /// True if `r` is failed in this member's view (the driver drops its messages, as the
    /// glue does).
    pub fn is_failed(&self, r: u32) -> bool {
        self.failed.contains(&r)
    }

    /// Approximate bytes held by this instance (struct plus heap), for memory accounting.
    pub fn approx_bytes(&self) -> usize {
        let v = |x: &Value| x.failed.capacity() * 4 + x.acked.as_ref().map_or(0, |a| a.capacity() * 4);
        std::mem::size_of::<Era>()
            + self.failed.heap_bytes()
            + self.reported.heap_bytes()
            + self.dec_sent.heap_bytes()
            + self.children.capacity() * 4
            + v(&self.acc)
            + self.decided.as_ref().map_or(0, v)
            + self.abort_sent.heap_bytes()
            + match &self.mode {
                Mode::Fast(f) => f.heap_bytes(),
                _ => 0,
            }
    }

    /// Current parent in this member's view (`None`: root).
    pub fn parent(&self) -> Option<u32> {
        self.parent
    }

    /// Current children in this member's view.
    pub fn children(&self) -> &[u32] {
        &self.children
    }

    /// The local member contributes `v` (its failed set is merged in).
    pub fn start(&mut self, v: Value) -> Vec<Action> {
        let mut out = Vec::new();
        self.start_into(v, &mut out);
        out
    }

    /// [`Era::start`], appending the actions to `out` (a driver reuses one buffer).
    pub fn start_into(&mut self, v: Value, out: &mut Vec<Action>) {
        self.start_with(v, false, out);
    }

    /// [`Era::start_into`] for a contribution whose failed set is the member's view of the
    /// failures (an agreement or a shrink; not a value that encodes other sets there): with
    /// failures known, a direct exchange then runs over the live members instead of falling
    /// back to the tree (see `fast.rs`). Every member of an instance must start it the same way.
    pub fn start_view_into(&mut self, v: Value, out: &mut Vec<Action>) {
        self.start_with(v, true, out);
    }

    fn start_with(&mut self, mut v: Value, view: bool, out: &mut Vec<Action>) {
        if self.mine {
            return;
        }
        if view {
            // Failures the driver knew and had not told this instance yet: learnt before the
            // start, as if told just now.
            for &r in &v.failed {
                if !self.failed.contains(&r) {
                    self.on_failure_into(r, out);
                }
            }
        }
        self.mine = true;
        v.merge(&Value { failed: self.failed.as_slice().to_vec(), ..Value::identity() });
        if self.acc.merge(&v) {
            self.version += 1;
        }
        if let Some(d) = self.decided.clone() {
            // Decided before we even started (a peer told us): return at once.
            out.push(Action::Decided(d));
            return;
        }
        match &mut self.mode {
            // The view is the contribution's failed set now (see above; a contribution that
            // names this member itself falls back).
            Mode::Fast(f) if view && f.is_direct() && v.failed.len() == self.failed.len() => {
                f.set_view(self.failed.as_slice());
                self.fast_advance(out)
            }
            Mode::Fast(f) if view && f.is_direct() => self.fall_back(None, out),
            Mode::Fast(_) if !self.failed.is_empty() => self.fall_back(None, out),
            Mode::Fast(_) => self.fast_advance(out),
            _ => self.check(out),
        }
    }

    /// Make this fresh instance (built with the fast path, not started) a member that decided
    /// `d` on the fast path: the driver ran the direct exchange on another carrier and took
    /// the decision there. It answers tree messages with `d` as a member that decided on this
    /// instance's own fast path does (it never reports `Up`), and emits no `Decided`.
    pub fn restore_fast_decision(&mut self, d: Value) {
        self.mine = true;
        self.acc = d.clone();
        self.version += 1;
        self.decided = Some(d);
        self.mode = Mode::FastDone;
    }

    /// A message from rank `from`.
    pub fn on_msg(&mut self, from: u32, msg: Msg) -> Vec<Action> {
        let mut out = Vec::new();
        self.on_msg_into(from, msg, &mut out);
        out
    }

    /// [`Era::on_msg`], appending the actions to `out`.
    pub fn on_msg_into(&mut self, from: u32, msg: Msg, out: &mut Vec<Action>) {
        if from == self.me || self.failed.contains(&from) || from >= self.tree.size() {
            return;
        }
        match msg {
            Msg::Fast { step, v } => {
                if let Mode::Fast(f) = &mut self.mode {
                    let s = f.on_msg(from, step, v, self.mine, &mut self.acc, out);
                    self.fast_step(s, out);
                }
            }
            Msg::Abort => self.fall_back(Some(from), out),
            Msg::Up(v) => {
                // (A fast-decided member answers below; its flood skips `from`.)
                if self.decided.is_some() {
                    self.dec_sent.insert(from);
                }
                self.fall_back(Some(from), out);
                if let Some(d) = &self.decided {
                    // A late request: answer with the kept decision.
                    out.push(Action::Send { to: from, msg: Msg::Decide(d.clone()) });
                    self.dec_sent.insert(from);
                    return;
                }
                self.reported.insert(from);
                if self.acc.merge(&v) {
                    self.version += 1;
                }
                self.check(out);
            }
            Msg::Decide(v) => {
                if self.decided.is_none() {
                    if self.on_fast_path() {
                        // Joining the tree by its decision: `decide` floods it.
                        self.mode = Mode::Tree;
                        self.flood = true;
                        self.refresh_view();
                    }
                    self.decide(v, Some(from), out);
                } else {
                    self.dec_sent.insert(from);
                    self.fall_back(Some(from), out);
                }
            }
        }
    }

    /// Leave the fast path (if on it): flood `Abort` (or, once decided, `Decide`) to the tree
    /// neighbours other than `from`, and continue with the tree protocol.
    fn fall_back(&mut self, from: Option<u32>, out: &mut Vec<Action>) {
        if !self.on_fast_path() {
            return;
        }
        self.mode = Mode::Tree;
        self.flood = true;
        self.refresh_view();
        if let Some(f) = from {
            self.abort_sent.insert(f);
        }
        self.flood_neighbours(out);
        self.check(out);
    }

    /// Send the flood message to each current tree neighbour that has not had it.
    fn flood_neighbours(&mut self, out: &mut Vec<Action>) {
        let targets: Vec<u32> = self.parent.iter().chain(self.children.iter()).copied().collect();
        for t in targets {
            match &self.decided {
                Some(d) => {
                    if self.dec_sent.insert(t) {
                        out.push(Action::Send { to: t, msg: Msg::Decide(d.clone()) });
                    }
                }
                None => {
                    if self.abort_sent.insert(t) {
                        out.push(Action::Send { to: t, msg: Msg::Abort });
                    }
                }
            }
        }
    }

    /// Run the fast path's schedule; decide when it completes.
    fn fast_advance(&mut self, out: &mut Vec<Action>) {
        let Mode::Fast(f) = &mut self.mode else { return };
        let s = f.advance(&mut self.acc, out);
        self.fast_step(s, out);
    }

    /// Act on where the fast path's schedule stands.
    fn fast_step(&mut self, s: Step, out: &mut Vec<Action>) {
        match s {
            Step::Wait => {}
            Step::Done => self.fast_decide(out),
            // A contribution made with another view of the failures: the members outside
            // this view are told by the flood.
            Step::Mismatch => self.fall_back(None, out),
        }
    }

    /// The fast path completed: `acc` is the merge of every contribution.
    fn fast_decide(&mut self, out: &mut Vec<Action>) {
        self.mode = Mode::FastDone;
        let d = self.acc.clone();
        self.decided = Some(d.clone());
        out.push(Action::Decided(d));
    }

    /// Rank `r` failed.
    pub fn on_failure(&mut self, r: u32) -> Vec<Action> {
        let mut out = Vec::new();
        self.on_failure_into(r, &mut out);
        out
    }

    /// [`Era::on_failure`], appending the actions to `out`.
    pub fn on_failure_into(&mut self, r: u32, out: &mut Vec<Action>) {
        if r == self.me || r >= self.tree.size() || !self.failed.insert(r) {
            return;
        }
        // Validity: a failed static descendant may have died before its contribution reached
        // us (its live children now report here instead). Name it in our report, so that
        // the decision either includes a member's contribution or lists it as failed — ULFM's
        // agree then reports ProcFailed uniformly instead of returning a flag that silently
        // lacks a contribution. Only the failure's ancestors re-report, O(depth) messages.
        // (Found by the simulator: `weft-sim run --protocol era --n 22 --seed 61 --mode
        // during --failures 3` violated it before.)
        if self.decided.is_none() && self.tree.is_descendant(r, self.me) && union(&mut self.acc.failed, &[r])
        {
            self.version += 1;
        }
        self.refresh_view();
        match self.mode {
            // Decided on the fast path: members stuck on it learn of this failure too and
            // fall back; this member answers them when their tree messages arrive.
            Mode::FastDone => return,
            // Not started, nothing sent: the view this member starts with includes `r`.
            Mode::Fast(ref f) if !self.mine && f.is_direct() => return,
            Mode::Fast(_) => {
                self.fall_back(None, out);
                return;
            }
            Mode::Tree if self.flood && self.decided.is_none() => self.flood_neighbours(out),
            Mode::Tree => {}
        }
        if let Some(d) = self.decided.clone() {
            // Make sure the new parent and children hear of the decision.
            let targets: Vec<u32> = self.parent.iter().chain(self.children.iter()).copied().collect();
            for t in targets {
                if self.dec_sent.insert(t) {
                    out.push(Action::Send { to: t, msg: Msg::Decide(d.clone()) });
                }
            }
            return;
        }
        self.check(out);
    }

    fn check(&mut self, out: &mut Vec<Action>) {
        if !self.mine || self.decided.is_some() {
            return;
        }
        if !self.children.iter().all(|c| self.reported.contains(c)) {
            return;
        }
        match self.parent {
            None => {
                let mut d = self.acc.clone();
                union(&mut d.failed, self.failed.as_slice());
                self.decide(d, None, out);
            }
            Some(p) => {
                if self.sent_up != Some((p, self.version)) {
                    self.sent_up = Some((p, self.version));
                    out.push(Action::Send { to: p, msg: Msg::Up(self.acc.clone()) });
                }
            }
        }
    }

    fn decide(&mut self, d: Value, from: Option<u32>, out: &mut Vec<Action>) {
        self.dec_sent.extend(from);
        let mut targets: Vec<u32> = self
            .parent
            .iter()
            .chain(self.children.iter())
            .chain(self.reported.iter())
            .copied()
            .filter(|t| !self.failed.contains(t))
            .collect();
        targets.sort_unstable();
        targets.dedup();
        for t in targets {
            if self.dec_sent.insert(t) {
                out.push(Action::Send { to: t, msg: Msg::Decide(d.clone()) });
            }
        }
        self.decided = Some(d.clone());
        if self.mine {
            out.push(Action::Decided(d));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashSet, VecDeque};

    /// A scripted run: `n` members; `dead` known failed from the start; `kills` = (after how
    /// many delivered messages, victim); notices of a failure reach live members after
    /// `notice_delay` further deliveries; `lifo` reverses delivery order. Returns each
    /// member's decision (None for the dead).
    struct Sim {
        m: Vec<Era>,
        alive: Vec<bool>,
        q: VecDeque<(u32, u32, Msg)>,
        decided: Vec<Option<Value>>,
        msgs: usize,
    }

    impl Sim {
        fn new(tree: Tree, dead: &[u32]) -> Sim {
            let n = tree.size();
            Sim {
                m: (0..n).map(|r| Era::new(tree.clone(), r, dead)).collect(),
                alive: (0..n).map(|r| !dead.contains(&r)).collect(),
                q: VecDeque::new(),
                decided: vec![None; n as usize],
                msgs: 0,
            }
        }
        fn apply(&mut self, r: u32, acts: Vec<Action>) {
            for a in acts {
                match a {
                    Action::Send { to, msg } => self.q.push_back((r, to, msg)),
                    Action::Decided(v) => {
                        assert!(self.decided[r as usize].is_none(), "decided twice");
                        self.decided[r as usize] = Some(v)
                    }
                }
            }
        }
        fn fast(mut self) -> Sim {
            // Half the members built as the glue builds them (neighbours computed lazily).
            self.m = self
                .m
                .into_iter()
                .map(|e| {
                    if e.me % 2 == 0 {
                        Era::new_fast(e.tree.clone(), e.me, e.failed.as_slice())
                    } else {
                        e.with_fast_path()
                    }
                })
                .collect();
            self
        }
        fn deliver_all(&mut self, mut skip: impl FnMut(u32, u32, &Msg) -> bool) -> usize {
            let mut held = VecDeque::new();
            while let Some((f, t, msg)) = self.q.pop_front() {
                if skip(f, t, &msg) {
                    held.push_back((f, t, msg));
                } else if self.alive[t as usize] {
                    let a = self.m[t as usize].on_msg(f, msg);
                    self.apply(t, a);
                }
            }
            let n = held.len();
            self.q = held;
            n
        }
        fn kill(&mut self, v: u32) {
            self.alive[v as usize] = false;
            self.q.retain(|x| x.0 != v);
        }
        fn notify(&mut self, v: u32) {
            for r in 0..self.m.len() as u32 {
                if self.alive[r as usize] {
                    let a = self.m[r as usize].on_failure(v);
                    self.apply(r, a);
                }
            }
        }
        fn run(&mut self, flags: &[u64], kills: &[(usize, u32)], delay: usize, lifo: bool) {
            let n = self.m.len() as u32;
            let mut pending_notice: Vec<(usize, u32)> = Vec::new();
            for r in 0..n {
                if self.alive[r as usize] {
                    let a = self.m[r as usize].start(Value::new(flags[r as usize], r, &[], &[]));
                    self.apply(r, a);
                }
            }
            let mut step = 0;
            loop {
                for &(at, v) in kills {
                    if step == at && self.alive[v as usize] {
                        self.kill(v);
                        pending_notice.push((step + delay, v));
                    }
                }
                let due: Vec<u32> = pending_notice.iter().filter(|x| x.0 <= step).map(|x| x.1).collect();
                pending_notice.retain(|x| x.0 > step);
                for v in due {
                    self.notify(v);
                }
                let next = if lifo { self.q.pop_back() } else { self.q.pop_front() };
                match next {
                    Some((from, to, msg)) => {
                        self.msgs += 1;
                        if self.alive[to as usize] {
                            let a = self.m[to as usize].on_msg(from, msg);
                            self.apply(to, a);
                        }
                    }
                    None if pending_notice.is_empty() => break,
                    None => {}
                }
                step += 1;
                assert!(step < 1_000_000, "no termination");
            }
        }
        fn check_uniform(&self) -> Value {
            let mut d: Option<&Value> = None;
            for (r, x) in self.decided.iter().enumerate() {
                if !self.alive[r] {
                    continue;
                }
                let x = x.as_ref().unwrap_or_else(|| panic!("live member {r} did not decide"));
                match d {
                    None => d = Some(x),
                    Some(y) => assert_eq!(x, y, "member {r} decided differently"),
                }
            }
            d.unwrap().clone()
        }
    }

    #[test]
    fn failure_free_is_logarithmic_and_correct() {
        for n in 1..40u32 {
            let mut s = Sim::new(Tree::binary(n), &[]);
            let flags: Vec<u64> = (0..n).map(|r| !(1u64 << (r % 64))).collect();
            s.run(&flags, &[], 0, false);
            let d = s.check_uniform();
            let want = flags.iter().fold(u64::MAX, |a, b| a & b);
            assert_eq!(d.flag, want);
            assert_eq!(d.ctx, n - 1, "max of contributions");
            assert_eq!(s.msgs, 2 * (n as usize - 1), "n={n}: n−1 up and n−1 decide");
            assert_eq!(d.outcome(), Ok(want));
        }
    }

    #[test]
    fn failures_before_are_reported_uniformly() {
        let mut s = Sim::new(Tree::binary(9), &[0, 4]);
        s.run(&[7; 9], &[], 0, false);
        let d = s.check_uniform();
        assert_eq!(d.failed, vec![0, 4]);
        assert_eq!(d.outcome(), Err((7, vec![0, 4])));
    }

    #[test]
    fn acknowledged_failures_do_not_raise() {
        let tree = Tree::binary(5);
        let mut m: Vec<Era> = (0..5).map(|r| Era::new(tree.clone(), r, &[2])).collect();
        let mut q = VecDeque::new();
        let mut dec = vec![None; 5];
        for r in [0u32, 1, 3, 4] {
            for a in m[r as usize].start(Value::new(3, 0, &[2], &[2])) {
                match a {
                    Action::Send { to, msg } => q.push_back((r, to, msg)),
                    Action::Decided(v) => dec[r as usize] = Some(v),
                }
            }
        }
        while let Some((f, t, msg)) = q.pop_front() {
            for a in m[t as usize].on_msg(f, msg) {
                match a {
                    Action::Send { to, msg } => q.push_back((t, to, msg)),
                    Action::Decided(v) => dec[t as usize] = Some(v),
                }
            }
        }
        for r in [0, 1, 3, 4] {
            assert_eq!(dec[r].as_ref().unwrap().outcome(), Ok(3));
        }
    }

    #[test]
    fn root_dies_during_agreement() {
        // The root dies at various points, with various notice delays and delivery orders.
        for n in [2u32, 3, 5, 8, 13] {
            for at in 0..(3 * n as usize) {
                for delay in [0, 3, 10] {
                    for lifo in [false, true] {
                        let mut s = Sim::new(Tree::binary(n), &[]);
                        s.run(&vec![5; n as usize], &[(at, 0)], delay, lifo);
                        if n > 1 {
                            let d = s.check_uniform();
                            assert_eq!(d.flag, 5);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn root_dies_after_partial_decision_broadcast() {
        // Root decides and reaches only one child before dying: the other subtree must adopt
        // that same decision rather than make a new one.
        let n = 7;
        let tree = Tree::binary(n);
        let mut s = Sim::new(tree, &[]);
        let flags = vec![1u64; n as usize];
        for r in 0..n {
            let a = s.m[r as usize].start(Value::new(flags[r as usize], 0, &[], &[]));
            s.apply(r, a);
        }
        // Deliver everything except Decide messages from 0 to 2.
        let mut held = Vec::new();
        while let Some((f, t, msg)) = s.q.pop_front() {
            if f == 0 && t == 2 && matches!(msg, Msg::Decide(_)) {
                held.push(());
                continue;
            }
            let a = s.m[t as usize].on_msg(f, msg);
            s.apply(t, a);
        }
        assert_eq!(held.len(), 1);
        assert!(s.decided[1].is_some() && s.decided[2].is_none());
        let d1 = s.decided[1].clone().unwrap();
        s.kill(0);
        s.notify(0);
        while let Some((f, t, msg)) = s.q.pop_front() {
            if s.alive[t as usize] {
                let a = s.m[t as usize].on_msg(f, msg);
                s.apply(t, a);
            }
        }
        let d = s.check_uniform();
        assert_eq!(d, d1, "the new root must adopt the decision already returned");
    }

    #[test]
    fn many_failures_during_with_random_schedules() {
        random_runs(false, 300, 0x9e37_79b9_7f4a_7c15);
    }

    fn random_runs(fast: bool, iters: usize, mut seed: u64) {
        let mut rnd = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..iters {
            let n = 2 + rnd(30) as u32;
            let k = rnd(n as u64 / 2 + 1) as usize;
            let kills: Vec<(usize, u32)> =
                (0..k).map(|_| (rnd(4 * n as u64) as usize, rnd(n as u64) as u32)).collect();
            let before: Vec<u32> = if rnd(4) == 0 { vec![rnd(n as u64) as u32] } else { vec![] };
            let delay = rnd(8) as usize;
            let lifo = rnd(2) == 1;
            let hier = rnd(2) == 1;
            let tree = if hier {
                let nodes: Vec<u32> = (0..n).map(|r| r / 3).collect();
                Tree::bin_bin(&nodes)
            } else {
                Tree::binary(n)
            };
            let mut s = Sim::new(tree.clone(), &before);
            if fast {
                s = s.fast();
            }
            if rnd(2) == 0 {
                // Recycled instances (what the glue does): members that went through another
                // agreement, with failures, reset to start this one.
                let mut old = Sim::new(tree.clone(), &[]);
                if rnd(2) == 0 {
                    old = old.fast();
                }
                let v = rnd(n as u64) as u32;
                old.run(&vec![1; n as usize], &[(rnd(2 * n as u64) as usize, v)], 1, rnd(2) == 1);
                for (r, mut e) in old.m.into_iter().enumerate() {
                    e.reset(tree.clone(), r as u32, &before, fast);
                    s.m[r] = e;
                }
            }
            let flags: Vec<u64> = (0..n).map(|_| rnd(4) | 0xf0).collect();
            s.run(&flags, &kills, delay, lifo);
            if s.alive.iter().any(|&a| a) {
                let d = s.check_uniform();
                // Validity: the AND over live members' flags is implied by the decision.
                for (f, _) in flags.iter().zip(&s.alive).filter(|x| *x.1) {
                    assert_eq!(d.flag & f, d.flag);
                }
                // A contribution missing from the flag is named in the failed set.
                for (r, f) in flags.iter().enumerate() {
                    if d.flag & f != d.flag {
                        assert!(
                            d.failed.contains(&(r as u32)),
                            "flag {:#x} lacks the contribution {f:#x} of {r}, not named failed",
                            d.flag
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fast_path_failure_free_is_recursive_doubling() {
        for n in 1..40u32 {
            let mut s = Sim::new(Tree::binary(n), &[]).fast();
            let flags: Vec<u64> = (0..n).map(|r| !(1u64 << (r % 64))).collect();
            s.run(&flags, &[], 0, n % 2 == 0);
            let d = s.check_uniform();
            assert_eq!(d.flag, flags.iter().fold(u64::MAX, |a, b| a & b));
            assert_eq!(d.ctx, n - 1, "max of contributions");
            let p = 1usize << (31 - n.leading_zeros());
            let rounds = p.trailing_zeros() as usize;
            let msgs = if n <= FAST_DIRECT_MAX {
                // Direct exchange: everyone to everyone.
                (n * n.saturating_sub(1)) as usize
            } else {
                2 * (n as usize - p) + p * rounds
            };
            assert_eq!(s.msgs, msgs, "n={n}");
            assert!(s.m.iter().all(|e| e.on_fast_path()), "no tree message when nothing fails");
        }
    }

    #[test]
    fn fast_path_with_failures_before_falls_back_to_the_tree() {
        let mut s = Sim::new(Tree::binary(9), &[0, 4]).fast();
        s.run(&[7; 9], &[], 0, false);
        let d = s.check_uniform();
        assert_eq!(d.failed, vec![0, 4]);
        assert_eq!(d.outcome(), Err((7, vec![0, 4])));
        // Only some members know a failure: the others are released by the flood.
        let tree = Tree::binary(6);
        let mut m: Vec<Era> = (0..6)
            .map(|r| Era::new(tree.clone(), r, if r == 2 { &[5] } else { &[] }).with_fast_path())
            .collect();
        let mut q = VecDeque::new();
        let mut dec = vec![None; 6];
        for r in 0..5u32 {
            let known: &[u32] = if r == 2 { &[5] } else { &[] };
            for a in m[r as usize].start(Value::new(1, 0, known, &[])) {
                match a {
                    Action::Send { to, msg } => q.push_back((r, to, msg)),
                    Action::Decided(v) => dec[r as usize] = Some(v),
                }
            }
        }
        while let Some((f, t, msg)) = q.pop_front() {
            if t == 5 {
                continue;
            }
            for a in m[t as usize].on_msg(f, msg) {
                match a {
                    Action::Send { to, msg } => q.push_back((t, to, msg)),
                    Action::Decided(v) => dec[t as usize] = Some(v),
                }
            }
            if q.is_empty() && dec[..5].iter().any(|d| d.is_none()) {
                // The others learn of 5's death late.
                for r in [0u32, 1, 3, 4] {
                    for a in m[r as usize].on_failure(5) {
                        if let Action::Send { to, msg } = a {
                            q.push_back((r, to, msg));
                        }
                    }
                }
            }
        }
        let d0 = dec[0].clone().expect("0 decided");
        for (r, d) in dec.iter().enumerate().take(5).skip(1) {
            assert_eq!(d.as_ref(), Some(&d0), "member {r}");
        }
        assert_eq!(d0.outcome(), Err((1, vec![5])));
    }

    #[test]
    fn fast_decision_survives_fallback_of_others() {
        // 3 dies after its message to 2 but before its message to 1 leaves: n = 4 (direct
        // exchange), its only message to 1; n = 8 (recursive doubling), its step-2 message to
        // 1, after its step-1 exchange with 2. 0 and 2 decide on the fast path (3's
        // contribution included); 1 falls back and must reach the same value through the tree.
        for (n, step) in [(4u32, 1u8), (8, 2)] {
            fast_decision_survives_fallback(n, step);
        }
    }

    fn fast_decision_survives_fallback(n: u32, step: u8) {
        let mut s = Sim::new(Tree::binary(n), &[]).fast();
        let flags: Vec<u64> = (0..n).map(|r| 0xf00 | (1u64 << r)).collect();
        for r in 0..n {
            let a = s.m[r as usize].start(Value::new(flags[r as usize], r, &[], &[]));
            s.apply(r, a);
        }
        let held =
            s.deliver_all(|f, t, m| f == 3 && t == 1 && matches!(m, Msg::Fast { step: s, .. } if *s == step));
        assert_eq!(held, 1, "n={n}");
        assert!(s.decided[0].is_some() && s.decided[2].is_some() && s.decided[1].is_none(), "n={n}");
        let fast = s.decided[0].clone().unwrap();
        assert_eq!(fast.flag, 0xf00, "n={n}");
        s.kill(3);
        s.notify(3);
        s.deliver_all(|_, _, _| false);
        let d = s.check_uniform();
        assert_eq!(d, fast, "the tree must adopt the fast decision");
        assert!(!s.m[0].on_fast_path(), "0 joined the tree to answer 1");
    }

    /// The driver's data path (the blocking agreement's direct exchange on the collectives'
    /// carrier): a member that decided there has no instance; a tree message rebuilds one,
    /// with the failures known by then, by [`Era::restore_fast_decision`]. Its decision must
    /// win as the live instance's would have: 0 and 2 decide with 3's contribution, 3 dies
    /// before its message reaches 1, 0's instance is dropped and restored knowing 3 failed.
    #[test]
    fn restored_fast_decision_survives_fallback_of_others() {
        let n = 4;
        let mut s = Sim::new(Tree::binary(n), &[]).fast();
        let flags: Vec<u64> = (0..n).map(|r| 0xf00 | (1u64 << r)).collect();
        for r in 0..n {
            let a = s.m[r as usize].start(Value::new(flags[r as usize], 0, &[], &[]));
            s.apply(r, a);
        }
        s.deliver_all(|f, t, m| f == 3 && t == 1 && matches!(m, Msg::Fast { .. }));
        let fast = s.decided[0].clone().expect("0 decided on the fast path");
        assert_eq!(fast.flag, 0xf00);
        let mut restored = Era::new_fast(Tree::binary(n), 0, &[3]);
        restored.restore_fast_decision(fast.clone());
        s.m[0] = restored;
        s.kill(3);
        s.notify(3);
        s.deliver_all(|_, _, _| false);
        assert_eq!(s.check_uniform(), fast, "the tree must adopt the restored decision");
        // A restored member that sees only a late fast-path message stays decided, silent.
        let mut r = Era::new_fast(Tree::binary(n), 0, &[]);
        r.restore_fast_decision(fast.clone());
        assert!(r.on_msg(1, Msg::Fast { step: FAST_DIRECT, v: Value::new(1, 0, &[], &[]) }).is_empty());
        assert_eq!(r.decision(), Some(&fast));
        let up = r.on_msg(1, Msg::Up(Value::new(1, 0, &[], &[])));
        assert!(up.contains(&Action::Send { to: 1, msg: Msg::Decide(fast.clone()) }), "{up:?}");
    }

    #[test]
    fn fast_path_many_failures_during_with_random_schedules() {
        random_runs(true, 1500, 0x2545_f491_4f6c_dd1d);
    }

    /// A xorshift generator: the returned closure gives a number below its argument.
    fn rng(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        }
    }

    /// Each member's flag in the random-schedule tests: its own bit and bits all set.
    fn member_flags(n: u32) -> Vec<u64> {
        (0..n).map(|r| 0xf00 | (1u64 << r)).collect()
    }

    /// What remains in a random-schedule run: the live members, those of them not started, and
    /// the failure notices (member, dead member) not delivered (`knows(member, dead)`).
    #[allow(clippy::type_complexity)]
    fn to_do(
        alive: &[bool],
        started: &[bool],
        knows: impl Fn(u32, u32) -> bool,
    ) -> (Vec<u32>, Vec<u32>, Vec<(u32, u32)>) {
        let n = alive.len() as u32;
        let live: Vec<u32> = (0..n).filter(|&r| alive[r as usize]).collect();
        let unstarted = live.iter().copied().filter(|&r| !started[r as usize]).collect();
        let notices = live
            .iter()
            .flat_map(|&r| (0..n).filter(|&v| !alive[v as usize]).map(move |v| (r, v)))
            .filter(|&(r, v)| !knows(r, v))
            .collect();
        (live, unstarted, notices)
    }

    /// Every live member decided the same value; it holds every live contribution, and one it
    /// lacks is named failed. Returns the decision.
    fn uniform_and_valid(decided: &[Option<Value>], alive: &[bool], flags: &[u64]) -> Value {
        let live: Vec<usize> = (0..alive.len()).filter(|&r| alive[r]).collect();
        let d0 = decided[live[0]].clone().unwrap_or_else(|| panic!("{} did not decide", live[0]));
        for &r in &live {
            assert_eq!(decided[r].as_ref(), Some(&d0), "member {r} of {}", alive.len());
        }
        for (r, f) in flags.iter().enumerate() {
            let has = d0.flag & f == d0.flag;
            assert!(has || !alive[r], "live {r}'s contribution missing: {d0:?}");
            assert!(
                has || d0.failed.contains(&(r as u32)),
                "{r}'s contribution missing, not named failed: {d0:?}"
            );
        }
        d0
    }

    /// The direct exchange over the live members ([`Era::start_view_into`]), at 2 to 4
    /// members: members start with different views of the failures (each knows a random part
    /// of them; some of the dead contributed before dying), more die during, starts, deliveries
    /// and failure notices interleave at random. Every live member decides, uniformly; the
    /// flag holds every live contribution, and one it lacks is named failed.
    #[test]
    fn fast_path_over_live_members_with_random_views() {
        let mut rnd = rng(0x51ed_270b_a7e1_3c4d);
        let mut fast_with_failures = 0;
        for _ in 0..4000 {
            let n = 2 + rnd(3) as u32;
            let tree = Tree::binary(n);
            let flags = member_flags(n);
            let mut dead: Vec<u32> = (0..n).filter(|_| rnd(3) == 0).collect();
            dead.truncate(n as usize - 1);
            let views: Vec<Vec<u32>> =
                (0..n).map(|_| dead.iter().copied().filter(|_| rnd(2) == 0).collect()).collect();
            let mut m: Vec<Era> =
                (0..n).map(|r| Era::new_fast(tree.clone(), r, &views[r as usize])).collect();
            let mut q: Vec<(u32, u32, Msg)> = Vec::new();
            let mut decided: Vec<Option<Value>> = vec![None; n as usize];
            let apply =
                |r: u32, acts: Vec<Action>, q: &mut Vec<(u32, u32, Msg)>, d: &mut Vec<Option<Value>>| {
                    for a in acts {
                        match a {
                            Action::Send { to, msg } => q.push((r, to, msg)),
                            Action::Decided(v) => {
                                assert!(d[r as usize].is_none(), "decided twice");
                                d[r as usize] = Some(v);
                            }
                        }
                    }
                };
            let start = |m: &mut Era, r: u32, all_dead: &[u32], rnd: &mut dyn FnMut(u64) -> u64| {
                // The contribution's failed set: the view, or (the engine knew more than the
                // instance was told) every failure.
                let known: Vec<u32> = if rnd(4) == 0 {
                    all_dead.to_vec()
                } else {
                    (0..n).filter(|&x| m.is_failed(x)).collect()
                };
                let mut out = Vec::new();
                m.start_view_into(Value::new(flags[r as usize], r, &known, &known), &mut out);
                out
            };
            let mut started = vec![false; n as usize];
            // Some of the dead contributed before dying.
            for &d in &dead {
                if rnd(2) == 0 {
                    let a = start(&mut m[d as usize], d, &[], &mut rnd);
                    started[d as usize] = true;
                    apply(d, a, &mut q, &mut decided);
                }
            }
            let mut alive: Vec<bool> = (0..n).map(|r| !dead.contains(&r)).collect();
            let mut kills = rnd(2);
            let mut steps = 0;
            loop {
                steps += 1;
                assert!(steps < 100_000, "no termination");
                let (live, unstarted, notices) = to_do(&alive, &started, |r, v| m[r as usize].is_failed(v));
                if unstarted.is_empty() && q.is_empty() && notices.is_empty() {
                    break;
                }
                match rnd(8) {
                    0 | 1 if !unstarted.is_empty() => {
                        let r = unstarted[rnd(unstarted.len() as u64) as usize];
                        let all_dead: Vec<u32> = (0..n).filter(|&v| !alive[v as usize]).collect();
                        let a = start(&mut m[r as usize], r, &all_dead, &mut rnd);
                        started[r as usize] = true;
                        apply(r, a, &mut q, &mut decided);
                    }
                    2 if !notices.is_empty() => {
                        let (r, v) = notices[rnd(notices.len() as u64) as usize];
                        let a = m[r as usize].on_failure(v);
                        apply(r, a, &mut q, &mut decided);
                    }
                    3 if kills > 0 && live.len() > 1 => {
                        kills -= 1;
                        let v = live[rnd(live.len() as u64) as usize];
                        alive[v as usize] = false;
                        dead.push(v);
                    }
                    _ if !q.is_empty() => {
                        let (f, t, msg) = q.swap_remove(rnd(q.len() as u64) as usize);
                        if alive[t as usize] {
                            let a = m[t as usize].on_msg(f, msg);
                            apply(t, a, &mut q, &mut decided);
                        }
                    }
                    _ => {}
                }
            }
            let live: Vec<u32> = (0..n).filter(|&r| alive[r as usize]).collect();
            let d0 = uniform_and_valid(&decided, &alive, &flags);
            if !d0.failed.is_empty() && live.iter().all(|&r| m[r as usize].on_fast_path()) {
                fast_with_failures += 1;
            }
        }
        // The point of the view: agreements with failures known decided without the tree.
        assert!(fast_with_failures > 100, "{fast_with_failures} fast decisions with failures");
    }

    /// The glue's data path, at random: 2 to 4 members start with no failure known (its
    /// condition); members die during; deliveries and failure notices interleave at random. A
    /// member that decides on the fast path may drop its instance (decided on the data path:
    /// no instance, failure notices not seen); any later message for it rebuilds one as the
    /// glue does, with the failures it knows by then, by [`Era::restore_fast_decision`], and
    /// sends its contribution to the others. Every live member decides, uniformly, and a
    /// restored decision is the one its member returned.
    #[test]
    fn restored_fast_decisions_with_random_schedules() {
        let mut rnd = rng(0x9e37_79b9_7f4a_7c15);
        let mut restored = 0;
        for _ in 0..4000 {
            let n = 2 + rnd(3) as u32;
            let tree = Tree::binary(n);
            let flags = member_flags(n);
            let mut m: Vec<Era> = (0..n).map(|r| Era::new_fast(tree.clone(), r, &[])).collect();
            let mut q: Vec<(u32, u32, Msg)> = Vec::new();
            let mut decided: Vec<Option<Value>> = vec![None; n as usize];
            let mut dropped = vec![false; n as usize];
            let mut known: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
            let mut alive = vec![true; n as usize];
            let mut started = vec![false; n as usize];
            let mut kills = 1 + rnd(2);
            let mut steps = 0;
            loop {
                steps += 1;
                assert!(steps < 100_000, "no termination");
                let (live, unstarted, notices) =
                    to_do(&alive, &started, |r, v| known[r as usize].contains(&v));
                if unstarted.is_empty() && q.is_empty() && notices.is_empty() {
                    break;
                }
                let (r, acts) = match rnd(8) {
                    0 | 1 if !unstarted.is_empty() => {
                        let r = unstarted[rnd(unstarted.len() as u64) as usize];
                        started[r as usize] = true;
                        (r, m[r as usize].start(Value::new(flags[r as usize], 0, &[], &[])))
                    }
                    2 if !notices.is_empty() => {
                        let (r, v) = notices[rnd(notices.len() as u64) as usize];
                        known[r as usize].push(v);
                        // A member without an instance sees no failure notice.
                        (r, if dropped[r as usize] { Vec::new() } else { m[r as usize].on_failure(v) })
                    }
                    3 if kills > 0 && live.len() > 1 => {
                        kills -= 1;
                        let v = live[rnd(live.len() as u64) as usize];
                        alive[v as usize] = false;
                        q.retain(|x| x.0 != v);
                        continue;
                    }
                    _ if !q.is_empty() => {
                        let (f, t, msg) = q.swap_remove(rnd(q.len() as u64) as usize);
                        if !alive[t as usize] {
                            continue;
                        }
                        let mut acts = Vec::new();
                        if dropped[t as usize] {
                            // Rebuilt from the log, as `glue/data_path.rs` does.
                            dropped[t as usize] = false;
                            restored += 1;
                            let d = decided[t as usize].clone().expect("dropped after deciding");
                            let mut e = Era::new_fast(tree.clone(), t, &known[t as usize]);
                            e.restore_fast_decision(d);
                            for to in (0..n).filter(|&x| x != t && !e.is_failed(x)) {
                                let v = Value::new(flags[t as usize], 0, &[], &[]);
                                acts.push(Action::Send { to, msg: Msg::Fast { step: FAST_DIRECT, v } });
                            }
                            m[t as usize] = e;
                        }
                        acts.extend(m[t as usize].on_msg(f, msg));
                        (t, acts)
                    }
                    _ => continue,
                };
                for a in acts {
                    match a {
                        Action::Send { to, msg } => q.push((r, to, msg)),
                        Action::Decided(v) => {
                            assert!(decided[r as usize].is_none(), "{r} decided twice");
                            if m[r as usize].on_fast_path() && rnd(2) == 0 {
                                dropped[r as usize] = true;
                            }
                            decided[r as usize] = Some(v);
                        }
                    }
                }
            }
            uniform_and_valid(&decided, &alive, &flags);
        }
        assert!(restored > 100, "only {restored} instances rebuilt");
    }

    #[test]
    fn bin_bin_tree_is_a_tree() {
        let nodes = [0, 0, 0, 1, 1, 2, 2, 2, 2, 0];
        let t = Tree::bin_bin(&nodes);
        let none = HashSet::new();
        let mut count = 0;
        for r in 0..nodes.len() as u32 {
            for c in t.live_children(r, &none) {
                assert_eq!(t.live_parent(c, &none), Some(r));
                count += 1;
                // Intra-node edges, except between leaders.
                if nodes[c as usize] != nodes[r as usize] {
                    assert!([0u32, 3, 5].contains(&c) && [0u32, 3, 5].contains(&r));
                }
            }
        }
        assert_eq!(count, nodes.len() - 1);
        assert_eq!(t.live_parent(0, &none), None);
        // Parents and children stay inverse in a view with failures (root included).
        let failed: HashSet<u32> = [0, 3, 7].into_iter().collect();
        for r in 0..nodes.len() as u32 {
            if failed.contains(&r) {
                continue;
            }
            for c in t.live_children(r, &failed) {
                assert_eq!(t.live_parent(c, &failed), Some(r), "{c} under {r}");
            }
            if let Some(p) = t.live_parent(r, &failed) {
                assert!(t.live_children(p, &failed).contains(&r));
            }
        }
    }
}
