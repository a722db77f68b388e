//! Failure knowledge and what it ends: the table of world ranks known to have failed (fed by
//! the transports in-band, the runtime out-of-band and the upper layers' detector), each
//! communicator's acknowledged prefix of it, and the one place that completes operations a
//! failure or a revocation ends — requests towards a failed rank, every pending operation of
//! a communicator whose error scope covers the failure, and of a revoked communicator.
//!
//! The fast path reads only [`Failures::any`] (one word); the per-rank bits are consulted
//! only when some failure is known.

use crate::comm::{CommState, ErrScope};
use crate::engine::{Core, Origin};
use crate::error::{Error, Result};
use crate::request::{Phase, Req};
use crate::{CommId, Engine};

/// Known failed processes, in the order they were learned.
#[derive(Default, Debug)]
pub(crate) struct Failures {
    bits: Vec<u64>,
    /// Failed world ranks in order of detection; communicators acknowledge a prefix of it.
    pub(crate) list: Vec<u32>,
    /// Ranks that said goodbye (finalized): their exit is not a failure.
    departed: Vec<u64>,
}

impl Failures {
    pub(crate) fn new(nprocs: u32) -> Failures {
        let words = (nprocs as usize).div_ceil(64);
        Failures { bits: vec![0; words], list: Vec::new(), departed: vec![0; words] }
    }

    /// Cover world ranks `0..nprocs` (never shrinks): peers that joined the job.
    pub(crate) fn grow(&mut self, nprocs: u32) {
        let words = (nprocs as usize).div_ceil(64);
        if words > self.bits.len() {
            self.bits.resize(words, 0);
            self.departed.resize(words, 0);
        }
    }

    /// Record that `w` finalized.
    pub(crate) fn depart(&mut self, w: u32) {
        if let Some(b) = self.departed.get_mut(w as usize / 64) {
            *b |= 1u64 << (w % 64);
        }
    }

    /// True if `w` finalized (its exit is expected).
    pub(crate) fn departed(&self, w: u32) -> bool {
        self.departed.get(w as usize / 64).is_some_and(|b| b & (1u64 << (w % 64)) != 0)
    }

    /// True when at least one failure is known: the one word the fast path reads.
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        !self.list.is_empty()
    }

    #[inline]
    pub(crate) fn is_failed(&self, w: u32) -> bool {
        self.any() && self.bits.get(w as usize / 64).is_some_and(|b| b & (1u64 << (w % 64)) != 0)
    }

    /// Record `w` as failed; false if it was already known (or out of range).
    pub(crate) fn insert(&mut self, w: u32) -> bool {
        let Some(b) = self.bits.get_mut(w as usize / 64) else {
            return false;
        };
        let m = 1u64 << (w % 64);
        if *b & m != 0 {
            return false;
        }
        *b |= m;
        self.list.push(w);
        true
    }
}

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

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> &[u32] {
        &self.core.failed.list
    }

    /// Ranks of `c` known to have failed.
    pub fn get_failed(&self, c: CommId) -> Result<Vec<u32>> {
        let comm = self.core.comms.get(c)?;
        Ok(self.core.failed.list.iter().filter_map(|&w| comm.rank_of_world(w)).collect())
    }

    /// Acknowledge every failure known now on `c`: wildcard receives on `c` stop reporting
    /// `ProcFailedPending` for them. Returns how many failed ranks of `c` are acknowledged.
    pub fn ack_failed(&mut self, c: CommId) -> Result<usize> {
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

    /// Number of failures known so far (grows by one per newly failed process): activities
    /// compare it with the value they saw last to notice new failures cheaply.
    pub(crate) fn failure_count(&self) -> usize {
        self.core.failed.list.len()
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

    /// True if `c` was revoked.
    pub fn is_revoked(&self, c: CommId) -> Result<bool> {
        Ok(self.core.comms.get(c)?.revoked)
    }

    /// Set which failures raise errors on `c`.
    pub fn set_error_scope(&mut self, c: CommId, scope: ErrScope) -> Result<()> {
        self.core.comms.get_mut(c)?.scope = scope;
        Ok(())
    }

    /// The error scope of `c`.
    pub fn error_scope(&self, c: CommId) -> Result<ErrScope> {
        Ok(self.core.comms.get(c)?.scope)
    }

    /// Ranks of `c` whose failure `c` has acknowledged (ULFM's older `get_acked`).
    pub fn get_acked(&self, c: CommId) -> Result<Vec<u32>> {
        let comm = self.core.comms.get(c)?;
        let n = comm.acked.min(self.core.failed.list.len());
        Ok(self.core.failed.list[..n].iter().filter_map(|&w| comm.rank_of_world(w)).collect())
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
