//! One member's state machine of one agreement ([`Era`]): start, messages and failure
//! notices in, [`Action`]s out; the failure-free fast path ([`super::fast`]), the fall-back
//! flood of `Abort`, reports up the tree of its view, the decision and its flood.

use super::fast::{Fast, Step};
use super::msg::{Action, Msg};
use super::tree::Tree;
use super::value::{union, Value};
use crate::RankSet;

/// One member's state in one agreement instance.
#[derive(Clone, Debug)]
pub struct Era {
    pub(super) tree: Tree,
    pub(super) me: u32,
    pub(super) failed: RankSet,
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
