//! What arrives at the FT layer and the activity that drives it: the message handlers'
//! entry ([`Glue::on_message`]: decode, drop what comes from a failed rank, resolve
//! `(ctx, epoch)` to a live communicator, park what is early, dispatch), the communicator
//! cache, the slow activity ([`Driver`]: new failures, detector ticks, parked messages), and
//! the encoding of every message sent.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use weft_engine::{Activity, CommId, Common, FtPort, Header, Result, Step};

use crate::detector;
use crate::epoch_of;
use crate::wire::Wire;

use super::*;

pub(super) struct Driver {
    pub(super) st: Rc<RefCell<Glue>>,
}

impl Activity<FtPort> for Driver {
    fn advance(&mut self, e: &mut FtPort) -> Step {
        self.st.borrow_mut().advance(e);
        Step::Continue
    }
}

impl Glue {
    pub(super) fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    pub(super) fn ensure_active(&mut self, e: &mut FtPort, st: &Rc<RefCell<Glue>>) {
        if !self.active {
            self.active = true;
            // `seen_failures` stays where it was (0): the first advance replays every failure
            // known so far to the instances that messages created before this activation
            // (state machines ignore failures they already know).
            // Failures, detector ticks and parked messages are all it handles: the engine
            // advances it on its slow path and on new failures, not per message.
            e.spawn_slow(Driver { st: st.clone() });
        }
    }

    /// Cache the communicator `c`; returns its context id.
    pub(super) fn info(&mut self, e: &FtPort, c: CommId) -> Result<u32> {
        let ctx = e.comm(c)?.ctx();
        if self.comms.get(&ctx).is_none_or(|i| i.id != c) {
            if self.comms.contains_key(&ctx) {
                // A freed communicator's context reused: its agreements are over.
                self.forget(ctx);
            }
            if self.comms.len() >= self.sweep_at {
                self.sweep_freed(e);
            }
            let v = e.comm(c)?;
            let (world_of, rank) = (v.members().to_vec(), v.rank());
            let info = CommInfo {
                id: c,
                epoch: epoch_of(&world_of),
                world_of,
                rank,
                tree: std::cell::OnceCell::new(),
                next_seq: 0,
                kept: VecDeque::new(),
                uniform: false,
                alone_at: usize::MAX,
                alone: false,
                data: data_path::DataLog::default(),
            };
            self.comms.insert(ctx, info);
        }
        Ok(ctx)
    }

    /// Drop the state of communicator context `ctx`: its info and its agreement instances.
    pub(super) fn forget(&mut self, ctx: u32) {
        if self.comms.remove(&ctx).is_some() {
            self.insts.retain(|k, _| k.0 != ctx);
        }
    }

    /// Drop the state of every freed communicator, in one pass over the instances. Called when
    /// the table has doubled since the last sweep, so creating communicators stays amortised
    /// O(1) however many were created and freed before (a revoke or an agreement on a new
    /// communicator must not pay for the history of the job).
    pub(super) fn sweep_freed(&mut self, e: &FtPort) {
        self.comms.retain(|&ctx, i| e.comm(i.id).map(|v| v.ctx()) == Ok(ctx));
        let comms = &self.comms;
        self.insts.retain(|k, _| comms.contains_key(&k.0));
        self.sweep_at = (2 * self.comms.len()).max(MIN_SWEEP);
    }

    /// Resolve an incoming `(ctx, epoch)`: `Ok(Some(ctx))` live, `Ok(None)` parked, `Err` stale.
    pub(super) fn resolve(&mut self, e: &FtPort, ctx: u32, epoch: u32) -> std::result::Result<bool, ()> {
        if let Some(i) = self.comms.get(&ctx).filter(|i| e.comm(i.id).map(|v| v.ctx()) == Ok(ctx)) {
            // The common case: one lookup.
            return if i.epoch == epoch { Ok(true) } else { Err(()) };
        }
        let live = match e.contexts().comm_of(ctx) {
            Some(c) => self.info(e, c).is_ok(),
            None => false,
        };
        if !live {
            self.forget(ctx);
            return if e.contexts().may_come(ctx) { Ok(false) } else { Err(()) };
        }
        if self.comms[&ctx].epoch != epoch {
            return Err(());
        }
        Ok(true)
    }

    /// The live communicator of context `ctx` with its epoch: from the cache when it is
    /// there, else from the engine.
    pub(super) fn live_comm(&self, e: &FtPort, ctx: u32) -> Option<(CommId, u32)> {
        if let Some(i) = self.comms.get(&ctx).filter(|i| e.comm(i.id).map(|v| v.ctx()) == Ok(ctx)) {
            return Some((i.id, i.epoch));
        }
        let c = e.contexts().comm_of(ctx)?;
        Some((c, epoch_of(e.comm(c).ok()?.members())))
    }

    /// Keep a message for a communicator not created here yet (bounded).
    pub(super) fn park(&mut self, peer: u32, cls: u8, p: &[u8]) {
        if self.parked.len() < MAX_PARKED {
            self.stats.parked += 1;
            self.parked.push((peer, cls, p.to_vec()));
        } else {
            self.stats.malformed += 1;
        }
    }

    pub(super) fn send(&mut self, e: &mut FtPort, w: u32, ctx: u32, m: &Wire) {
        send_wire(e, &mut self.buf, w, ctx, m);
    }

    pub(super) fn on_message(&mut self, e: &mut FtPort, peer: u32, cls: u8, p: &[u8]) {
        if e.failures().world_ranks().contains(&peer) {
            self.stats.from_failed += 1;
            return;
        }
        let w = match Wire::decode(cls, p) {
            Ok(w) => w,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        match w {
            Wire::Revoke { ctx, epoch } => self.on_revoke(e, peer, ctx, epoch, p),
            Wire::Agree { ctx, epoch, seq, msg } => {
                match self.resolve(e, ctx, epoch) {
                    Err(()) => {
                        self.stats.stale += 1;
                        return;
                    }
                    Ok(false) => {
                        self.park(peer, cls, p);
                        return;
                    }
                    Ok(true) => {}
                }
                let info = &self.comms[&ctx];
                let next_seq = info.next_seq;
                let Some(from) = info.rank_of(peer) else {
                    self.stats.malformed += 1;
                    return;
                };
                if seq > next_seq.saturating_add(1 << 16) {
                    self.stats.stale += 1;
                    return;
                }
                // Below `next_seq` without an instance: decided and dropped, stale, unless it
                // ran on the data path here.
                let create = seq >= next_seq
                    || (!self.insts.contains_key(&(ctx, seq)) && self.data_known(e, ctx, seq));
                if !self.drive(e, ctx, seq, create, |inst, out| inst.era.on_msg_into(from, msg, out)) {
                    self.stats.stale += 1;
                }
            }
            Wire::Heartbeat { .. } => {
                let now = self.now();
                if let Some(d) = &mut self.det {
                    d.on_heartbeat(peer, now);
                }
            }
            Wire::Finding { rank } => {
                let now = self.now();
                match &mut self.det {
                    Some(d) => {
                        let acts = d.on_finding(peer, rank, now);
                        self.apply_det(e, acts);
                    }
                    None => e.notify_failed(rank),
                }
            }
        }
    }

    pub(super) fn apply_det(&mut self, e: &mut FtPort, acts: Vec<detector::Action>) {
        for a in acts {
            match a {
                detector::Action::Heartbeat { to } => {
                    self.stats.heartbeats += 1;
                    let c = self.det.as_ref().map_or(0, |d| d.counter());
                    self.send(e, to, 0, &Wire::Heartbeat { counter: c });
                }
                detector::Action::Forward { to, rank } => self.send(e, to, 0, &Wire::Finding { rank }),
                detector::Action::Declare { rank } => {
                    self.stats.declared += 1;
                    e.notify_failed(rank);
                }
            }
        }
    }

    pub(super) fn advance(&mut self, e: &mut FtPort) {
        let fc = e.failures().count();
        if fc != self.seen_failures {
            let new: Vec<u32> = e.failures().world_ranks()[self.seen_failures.min(fc)..].to_vec();
            self.seen_failures = fc;
            for w in new {
                self.on_world_failure(e, w);
            }
        }
        if self.det.is_some() {
            let now = self.now();
            let d = self.det.as_mut().expect("checked");
            if now >= d.next_deadline() {
                let acts = d.tick(now);
                self.apply_det(e, acts);
            }
        }
        if !self.parked.is_empty() && e.contexts().installed() != self.parked_at {
            self.parked_at = e.contexts().installed();
            for (peer, cls, p) in std::mem::take(&mut self.parked) {
                self.on_message(e, peer, cls, &p);
            }
        }
    }

    pub(super) fn on_world_failure(&mut self, e: &mut FtPort, w: u32) {
        if let Some(d) = &mut self.det {
            let now = self.clock.elapsed().as_nanos() as u64;
            let acts = d.on_failure(w, now);
            self.apply_det(e, acts);
        }
        let keys: Vec<(u32, u32)> = self.insts.keys().copied().collect();
        for (ctx, seq) in keys {
            let Some(info) = self.comms.get(&ctx) else { continue };
            if e.comm(info.id).map(|v| v.ctx()) != Ok(ctx) {
                self.forget(ctx); // a freed communicator
                continue;
            }
            let Some(r) = info.rank_of(w) else { continue };
            self.drive(e, ctx, seq, false, |inst, out| inst.era.on_failure_into(r, out));
        }
    }
}

/// Encode `m` into `buf` and send it to world rank `w`.
pub(super) fn send_wire(e: &mut FtPort, buf: &mut Vec<u8>, w: u32, ctx: u32, m: &Wire) {
    buf.clear();
    m.encode_into(buf);
    // A failed destination is fine to skip: the failure notice path handles it.
    let _ = e.send_ctrl(w, hdr(m.class(), ctx, buf.len()), buf);
}

pub(super) fn hdr(cls: u8, ctx: u32, len: usize) -> Header {
    Header { class: cls, flags: 0, reserved: 0, ctx, src: 0, tag: 0, len: len as u64 }
}
