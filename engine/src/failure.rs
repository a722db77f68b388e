//! Failure knowledge and what it ends: the table of world ranks known to have failed (fed by
//! the transports in-band, the runtime out-of-band and the upper layers' detector), each
//! communicator's acknowledged prefix of it, and the one place that completes operations a
//! failure or a revocation ends — requests towards a failed rank, every pending operation of
//! a communicator whose error scope covers the failure, and of a revoked communicator.
//!
//! The table itself is in `fail_table.rs`; the fast path reads only its `any` (one word).

use crate::comm::{CommState, ErrScope};
use crate::engine::Core;
use crate::error::{Error, Result};
use crate::request::{Phase, Req};
use crate::stats::Origin;
use crate::{CommId, Engine};

impl Engine {
    /// Record that world rank `w` failed and complete, with `ProcFailed`, every operation that
    /// can no longer finish: sends to it, receives naming it, rendezvous with it.
    pub(crate) fn notify_failed_from(&mut self, w: u32, origin: Origin) {
        let known = self.core.failed.list.len();
        self.notify_failed(w);
        if self.core.failed.list.len() > known {
            self.core.stats.learned.count(origin);
        }
    }

    /// Record that world rank `w` failed (origin not counted; see `notify_failed_from`).
    pub(crate) fn notify_failed(&mut self, w: u32) {
        if w == self.core.me || self.core.failed.is_failed(w) {
            return;
        }
        if self.core.failed.departed(w) {
            // A finalized rank exited: not a failure, but nothing addressed to it can finish.
            self.complete_towards(w);
            return;
        }
        self.core.failed.insert(w);
        self.core.aux = true; // the slow activities learn of it on the next progress call
        self.complete_towards(w);
        // Communicators with group or universe error scope: every pending operation on them
        // reports the failure, not only those that involve `w`.
        let hit: Vec<(CommId, Vec<u32>)> = self
            .core
            .comms
            .iter()
            .filter(|(_, c)| match c.scope {
                ErrScope::Local => false,
                ErrScope::Group => c.rank_of_world(w).is_some(),
                ErrScope::Universe => true,
            })
            .map(|(id, c)| (id, c.rank_of_world(w).into_iter().collect()))
            .collect();
        for (id, ranks) in hit {
            self.fail_comm_requests(id, &Error::ProcFailed { ranks });
        }
    }

    /// Complete with `ProcFailed` every pending operation that needs world rank `w`.
    fn complete_towards(&mut self, w: u32) {
        let core = &mut self.core;
        let dropped = core.pending.get_mut(w as usize).map(std::mem::take).unwrap_or_default();
        core.n_pending -= dropped.len();
        let mut to_unexpose = Vec::new();
        let mut split_failed = Vec::new();
        let comms = &core.comms;
        core.reqs.for_each_mut(|id, r| {
            // An asynchronous read in flight may still write the user buffer: it completes
            // through the transport (with an error) rather than here.
            // A split receive waits for its sender, whatever rank it was posted for.
            let split_from_w = matches!(r.phase, Phase::RecvAwaitPut { peer } if peer == w);
            if (r.peer_world != w && !split_from_w)
                || matches!(r.phase, Phase::Done(_) | Phase::RecvGetting { .. })
                || matches!(r.phase, Phase::RecvAwaitPut { .. }) && !split_from_w
            {
                return;
            }
            if let Phase::SendAwaitFin { key } = r.phase {
                to_unexpose.push(key);
            }
            if split_from_w {
                split_failed.push(id);
            }
            let rank = comms.get(r.comm).ok().and_then(|c| c.rank_of_world(w)).unwrap_or(w);
            r.phase = Phase::Done(Err(Error::ProcFailed { ranks: vec![rank] }));
        });
        // The split receives from `w` leave the split's table; their tails' exposures go.
        if !split_failed.is_empty() {
            core.split.awaiting.retain(|a| {
                let failed = split_failed.contains(&a.req);
                if failed {
                    to_unexpose.push(a.key);
                }
                !failed
            });
        }
        core.unpost_completed();
        let t = core.route[w as usize];
        if (t as usize) < self.transports.len() {
            for key in to_unexpose {
                self.transports[t as usize].unexpose(w, &key);
            }
        }
    }

    /// Acknowledge every failure known now on `c`: wildcard receives on `c` stop reporting
    /// `ProcFailedPending` for them. Returns how many failed ranks of `c` are acknowledged.
    pub(crate) fn ack_failed(&mut self, c: CommId) -> Result<usize> {
        let n = self.core.failed.list.len();
        let comm = self.core.comms.get_mut(c)?;
        comm.acked = n;
        let comm = self.core.comms.get(c)?;
        Ok(self.core.failed.list.iter().filter(|&&w| comm.rank_of_world(w).is_some()).count())
    }

    /// True if `c` has members whose failure it has not acknowledged.
    pub(crate) fn unacked_failure(&self, c: CommId) -> bool {
        let Ok(comm) = self.core.comms.get(c) else {
            return false;
        };
        self.core.failed.list[comm.acked.min(self.core.failed.list.len())..]
            .iter()
            .any(|&w| comm.rank_of_world(w).is_some())
    }

    /// Revoke `c` locally: every pending point-to-point operation on it (user and internal
    /// context) completes with `Revoked`, and later ones fail at once. Returns false if it
    /// was already revoked. The FT layer propagates revocation to the other members.
    pub(crate) fn revoke_local(&mut self, c: CommId) -> Result<bool> {
        let comm = self.core.comms.get_mut(c)?;
        if comm.revoked {
            return Ok(false);
        }
        comm.revoked = true;
        let ctx = comm.ctx;
        self.fail_comm_requests(c, &Error::Revoked);
        // Nothing that arrives for it later can be received.
        for x in [ctx, ctx + 1] {
            if let Some(qs) = self.core.q.ctx(x) {
                qs.unexpected.clear();
            }
        }
        Ok(true)
    }

    /// Complete every pending operation on `c` that may safely end now with `err`: posted and
    /// queued receives and sends. Asynchronous reads in flight finish through the transport.
    pub(crate) fn fail_comm_requests(&mut self, c: CommId, err: &Error) {
        let core = &mut self.core;
        let mut ids = Vec::new();
        core.reqs.for_each_mut(|id, r| {
            if r.comm == c
                && matches!(r.phase, Phase::RecvPosted | Phase::SendQueued | Phase::SendAwaitFin { .. })
            {
                r.phase = Phase::Done(Err(err.clone()));
                ids.push(id);
            }
        });
        if ids.is_empty() {
            return;
        }
        // Only the communicator's own contexts can hold its receives: a job that created and
        // freed many communicators does not pay for their queues here.
        if let Ok(comm) = core.comms.get(c) {
            let ctx = comm.ctx;
            core.unpost_completed_in(&[ctx, ctx + 1]);
        }
        for q in core.pending.iter_mut() {
            let before = q.len();
            q.retain(|o| o.complete.is_none_or(|id| !ids.contains(&id)));
            core.n_pending -= before - q.len();
        }
    }
}

impl Core {
    /// Take out of the posted queues every receive that no longer waits for a match: those
    /// just completed by a failure or a revocation.
    fn unpost_completed(&mut self) {
        let reqs = &self.reqs;
        for qs in self.q.iter_mut().filter(|qs| !qs.posted.is_empty()) {
            qs.posted.retain(|p| matches!(reqs.get(p.req), Some(Req { phase: Phase::RecvPosted, .. })));
        }
    }

    /// [`Core::unpost_completed`] for the contexts `ctxs` only.
    fn unpost_completed_in(&mut self, ctxs: &[u32]) {
        let reqs = &self.reqs;
        for &ctx in ctxs {
            if let Some(qs) = self.q.ctx(ctx) {
                qs.posted.retain(|p| matches!(reqs.get(p.req), Some(Req { phase: Phase::RecvPosted, .. })));
            }
        }
    }

    /// Group/universe error scope: an operation on `comm` fails while a failure in its scope
    /// is unacknowledged.
    pub(crate) fn scope_check(&self, comm: &CommState) -> Result<()> {
        let new = &self.failed.list[comm.acked.min(self.failed.list.len())..];
        let ranks: Vec<u32> = new.iter().filter_map(|&w| comm.rank_of_world(w)).collect();
        let raise = match comm.scope {
            ErrScope::Local => false,
            ErrScope::Group => !ranks.is_empty(),
            ErrScope::Universe => !new.is_empty(),
        };
        if raise {
            Err(Error::ProcFailed { ranks })
        } else {
            Ok(())
        }
    }
}
