//! Running agreement instances (ERA, with its failure-free fast path): starting the next
//! instance of a communicator, feeding it messages and failures with the reused action
//! buffer ([`Glue::drive`], the agreement's hot path), deciding alone when every other member
//! failed, recycling instances, and completing the local request of a decision (agree,
//! shrink — which creates the new communicator — or the blocking call).

use rustc_hash::FxHashMap as HashMap;

use weft_engine::{Common, Error, FtPort, Status};

use crate::agree::{self, union, Era, Tree, Value};
use crate::shrink::{shrunk_of, CtxPool};
use crate::wire::Wire;

use super::events::send_wire;
use super::*;

impl Glue {
    /// The agreement tree of a communicator of world ranks `world_of`: bin/bin when its
    /// members span several nodes with more than one member on some node, binary otherwise.
    pub(super) fn tree_for(node_of: &[u32], world_of: &[u32]) -> Tree {
        let nodes: Vec<u32> =
            world_of.iter().map(|&w| node_of.get(w as usize).copied().unwrap_or(0)).collect();
        let mut distinct = nodes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > 1 && distinct.len() < nodes.len() {
            Tree::bin_bin(&nodes)
        } else {
            Tree::binary(world_of.len() as u32)
        }
    }

    /// Run `f` on instance `(ctx, seq)` of a resolved communicator with the reused action
    /// buffer, then carry out the actions. The instance is created if new and `create`;
    /// otherwise a missing instance returns false (nothing done).
    ///
    /// This is the agreement's hot path: it looks the communicator and the instance up once
    /// each and works on the fields of `self` separately (a failure-free agreement used to
    /// spend more time in map lookups than in the protocol).
    pub(super) fn drive(
        &mut self,
        e: &mut FtPort,
        ctx: u32,
        seq: u32,
        create: bool,
        f: impl FnOnce(&mut AgreeInstance, &mut Vec<agree::Action>),
    ) -> bool {
        let Glue { opts, comms, insts, spare, ready, acts, buf, stats, pool, blocked, .. } = self;
        let Some(info) = comms.get_mut(&ctx) else { return false };
        let inst: &mut AgreeInstance = if create {
            insts.entry((ctx, seq)).or_insert_with(|| match ready.take() {
                Some(r) if r.fits(ctx, info, e) => r.inst,
                r => {
                    *ready = r;
                    new_agree_instance(e, info, opts, spare)
                }
            })
        } else {
            match insts.get_mut(&(ctx, seq)) {
                Some(b) => b,
                None => return false,
            }
        };
        f(inst, acts);
        // If this call decided: the local request and the path, taken while we hold the
        // instance.
        let mut done = acts
            .iter()
            .any(|a| matches!(a, agree::Action::Decided(_)))
            .then(|| (inst.local.take(), inst.era.on_fast_path()));
        for a in acts.drain(..) {
            match a {
                agree::Action::Send { to, msg } => {
                    let w = info.world_of[to as usize];
                    send_wire(e, buf, w, ctx, &Wire::Agree { ctx, epoch: info.epoch, seq, msg });
                }
                agree::Action::Decided(v) => {
                    let Some((local, fast)) = done.take() else { continue };
                    // Without a local request: an instance rebuilt from the data path's log,
                    // whose decision was counted when it was taken.
                    if let Some(local) = local {
                        stats.decided += 1;
                        stats.decided_fast += fast as u64;
                        complete(e, info, pool, blocked, v, local);
                        // Kept to answer late requests; the oldest goes in `housekeep`.
                        info.kept.push_back(seq);
                    }
                }
            }
        }
        true
    }

    /// True if this member is the only live one of `ctx` and nothing arrived for its next
    /// instance: that instance is then decided here (its sequence number is used up and the
    /// decision counted; the caller completes it). ERA would decide the same alone: no other
    /// member can have decided an instance this member has not contributed to, and messages
    /// from failed members are dropped, so no late request can come.
    pub(super) fn decide_alone(&mut self, e: &FtPort, ctx: u32) -> bool {
        let Some(info) = self.comms.get_mut(&ctx) else { return false };
        if !info.is_alone(e) || self.insts.contains_key(&(ctx, info.next_seq)) {
            return false;
        }
        info.next_seq += 1;
        self.stats.decided += 1;
        self.stats.decided_alone += 1;
        true
    }

    /// Start the next instance of `ctx` with contribution `v`; `view`: `v.failed` is exactly
    /// this member's view of the failures ([`Era::start_view_into`]).
    pub(super) fn start(&mut self, e: &mut FtPort, ctx: u32, local: Local, mut v: Value, view: bool) {
        if self.decide_alone(e, ctx) {
            let Glue { comms, pool, blocked, .. } = self;
            let info = &comms[&ctx];
            let others: Vec<u32> = (0..info.world_of.len() as u32).filter(|&r| r != info.rank).collect();
            union(&mut v.failed, &others);
            complete(e, info, pool, blocked, v, local);
            return;
        }
        let info = self.comms.get_mut(&ctx).expect("resolved");
        let seq = info.next_seq;
        info.next_seq += 1;
        self.drive(e, ctx, seq, true, |inst, out| {
            inst.local = Some(local);
            if view {
                inst.era.start_view_into(v, out);
            } else {
                inst.era.start_into(v, out);
            }
        });
        self.housekeep(e, ctx);
    }

    /// Bookkeeping moved off the agreement's critical path (it runs after this member's
    /// first message left, while the peers' are on their way): drop the decisions kept
    /// beyond [`KEEP_DECIDED`] and reset a recycled instance for the next agreement.
    pub(super) fn housekeep(&mut self, e: &FtPort, ctx: u32) {
        let Glue { opts, comms, insts, spare, ready, .. } = self;
        let Some(info) = comms.get_mut(&ctx) else { return };
        prune(info, insts, spare, ctx);
        // (Re)build it unless it already fits: one left for another communicator, or from
        // before a failure, goes back to the spares.
        if ready.as_ref().is_some_and(|r| r.fits(ctx, info, e)) || spare.is_empty() {
            return;
        }
        if let Some(old) = ready.take() {
            spare.push(old.inst);
        }
        let inst = new_agree_instance(e, info, opts, spare);
        *ready = Some(Ready { ctx, id: info.id, failures: e.failures().count(), inst });
    }
}

/// A new agreement instance for `info` (a recycled box when there is one).
#[allow(clippy::vec_box)]
pub(super) fn new_agree_instance(
    e: &FtPort,
    info: &CommInfo,
    opts: &FtOptions,
    spare: &mut Vec<Box<AgreeInstance>>,
) -> Box<AgreeInstance> {
    let failed: Vec<u32> = e.failures().world_ranks().iter().filter_map(|&w| info.rank_of(w)).collect();
    let fast = opts.agree == AgreePath::Fast;
    let tree = info.tree.get_or_init(|| Glue::tree_for(&opts.node_of, &info.world_of));
    match spare.pop() {
        Some(mut b) => {
            b.era.reset(tree.clone(), info.rank, &failed, fast);
            b.local = None;
            b
        }
        None => {
            let era = if fast {
                Era::new_fast(tree.clone(), info.rank, &failed)
            } else {
                Era::new(tree.clone(), info.rank, &failed)
            };
            Box::new(AgreeInstance { era, local: None })
        }
    }
}

/// The local member's instance decided `v`: complete its agree or shrink request.
pub(super) fn complete(
    e: &mut FtPort,
    info: &CommInfo,
    pool: &mut CtxPool,
    blocked: &mut Option<Value>,
    v: Value,
    local: Local,
) {
    let me = info.rank;
    // The agreed failed set is failure knowledge: a member that had not detected one of these
    // failures yet learns it now, so that acknowledging after an agreement (or a uniform
    // collective) that reported them covers them, as it does at the members that detected them.
    for &r in &v.failed {
        if let Some(&w) = info.world_of.get(r as usize) {
            e.notify_failed(w);
        }
    }
    match local {
        Local::Blocking => *blocked = Some(v),
        Local::Agree { req, out } => {
            let res = match v.outcome() {
                Ok(f) => {
                    // SAFETY: iagree's contract: `out` is valid until the request completes.
                    unsafe { out.write(f) };
                    Ok(Status { source: me, tag: 0, count: 0 })
                }
                Err((f, ranks)) => {
                    // SAFETY: as above.
                    unsafe { out.write(f) };
                    Err(Error::ProcFailed { ranks })
                }
            };
            e.complete_request(req, res);
        }
        Local::Shrink { req, out } => {
            let s = shrunk_of(info.world_of.len() as u32, &v);
            let res = if s.survivors.binary_search(&me).is_err() {
                Err(Error::ProcFailed { ranks: vec![me] })
            } else if !pool.commit(s.ctx) {
                Err(Error::InvalidArg(format!(
                    "shrink: context id {} was agreed by two concurrent shrinks (call them in the same order everywhere)",
                    s.ctx
                )))
            } else {
                let members = s.survivors.iter().map(|&r| info.world_of[r as usize]).collect();
                e.comm_create_agreed(s.ctx, members)
            };
            match res {
                Ok(id) => {
                    // SAFETY: ishrink's contract: `out` is valid until the request completes.
                    unsafe { out.write(id.to_raw()) };
                    e.complete_request(req, Ok(Status { source: me, tag: 0, count: id.to_raw() as usize }));
                }
                Err(err) => e.complete_request(req, Err(err)),
            }
        }
    }
}

/// Keep the last [`KEEP_DECIDED`] instances of `ctx` decided here (they answer late
/// requests): older ones go, their boxes reused for later instances. O(1) per decision.
#[allow(clippy::vec_box)]
pub(super) fn prune(
    info: &mut CommInfo,
    insts: &mut HashMap<(u32, u32), Box<AgreeInstance>>,
    spare: &mut Vec<Box<AgreeInstance>>,
    ctx: u32,
) {
    while info.kept.len() > KEEP_DECIDED {
        let old = info.kept.pop_front().expect("longer than KEEP_DECIDED");
        if let Some(b) = insts.remove(&(ctx, old)) {
            if spare.len() < KEEP_DECIDED {
                spare.push(b);
            }
        }
    }
}
