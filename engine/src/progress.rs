//! Progress and completion: one progress call (poll every transport, then the auxiliary work
//! — queued sends, rendezvous, control messages, activities — and, by time, the slow path
//! that polls for failures), the idle step of blocking loops, test/wait/cancel on requests,
//! and the generic requests of the upper layers. A blocking wait names the request it waits
//! for, so the message that completes it ends the poll (see `recv.rs`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::buffer::UserBuf;
use crate::error::{Error, Result};
use crate::request::{Phase, Req, ReqId};
use crate::stats::Origin;
use crate::{CommId, Engine, ProgressMode, Status, ANY_SOURCE};

/// Idle iterations after which a [`ProgressMode::Poll`] wait yields its core while it stays
/// idle. Spinning on through a long wait costs nothing on an otherwise idle core, but on a
/// shared one the scheduler charges the spin to this process, which then waits for the core
/// when its data arrives; `sched_yield` with nothing else runnable returns at once.
pub(crate) const POLL_IDLE_SPINS: u32 = 1024;

impl Engine {
    /// Make progress on every transport once; returns how many events happened (messages,
    /// and failures learned: a wait loop that just learned of one looks at its request before
    /// it yields the core).
    pub(crate) fn progress(&mut self) -> usize {
        let mut n = 0;
        let core = &mut self.core;
        for t in self.transports.iter_mut() {
            n += t.poll_until(64, &mut |peer, h, p| core.on_message(peer, h, p));
        }
        if self.core.aux {
            n += self.aux_work();
        }
        // The slow path runs by time, busy or idle: a rank that always has traffic must
        // still poll for failures and keep its heartbeats going.
        self.idle = self.idle.wrapping_add(1);
        if self.failure_wakes.iter().any(|f| f.load(Ordering::Relaxed))
            || (self.idle.is_multiple_of(64) && self.last_slow.elapsed() >= self.cfg.slow_period)
        {
            n += self.slow_path();
        }
        n
    }

    /// The work of a progress call besides the poll (see [`Core::aux`]); recomputes the flag.
    #[inline(never)]
    fn aux_work(&mut self) -> usize {
        let mut n = 0;
        if !self.core.rndv_todo.is_empty() {
            self.run_rndv();
        }
        if !self.core.unexpose_todo.is_empty() {
            self.withdraw_exposures();
        }
        if self.core.n_pending > 0 {
            n += self.flush_pending();
        }
        if !self.core.gets.is_empty() {
            n += self.poll_gets();
        }
        if !self.core.split.is_empty() {
            n += self.run_split();
        }
        if !self.core.ctrl_inbox.is_empty() {
            n += self.dispatch_ctrl();
        }
        if !self.core.acks_to_send.is_empty() {
            self.send_bye_acks();
        }
        if self.extensions.has_activities() {
            n += self.run_activities();
        }
        // A new failure wakes the slow activities at once.
        if self.extensions.has_slow() && self.extensions.slow_seen != self.core.failed.list.len() {
            self.run_slow_activities();
        }
        let c = &self.core;
        self.core.aux = !c.rndv_todo.is_empty()
            || !c.unexpose_todo.is_empty()
            || c.n_pending > 0
            || !c.gets.is_empty()
            || !c.split.is_empty()
            || !c.ctrl_inbox.is_empty()
            || !c.acks_to_send.is_empty()
            || self.extensions.has_activities()
            || (self.extensions.has_slow() && self.extensions.slow_seen != c.failed.list.len());
        n
    }

    /// Poll failure sources now (normally done on the slow path every `slow_period`); returns
    /// how many ranks it newly found failed.
    pub(crate) fn slow_path(&mut self) -> usize {
        self.last_slow = Instant::now();
        let mut found = std::mem::take(&mut self.scratch);
        // origins[k] says where found[k] came from.
        let mut origins = std::mem::take(&mut self.scratch_origins);
        for (i, t) in self.transports.iter_mut().enumerate() {
            t.poll_failures(&mut found);
            origins.resize(found.len(), Origin::Transport(i));
        }
        for s in self.failure_sources.iter_mut() {
            s(&mut found);
        }
        origins.resize(found.len(), Origin::Runtime);
        if !found.is_empty() {
            // Deliver everything a dead peer managed to send before declaring it failed:
            // data already accepted by a transport is never lost.
            for _ in 0..1024 {
                let core = &mut self.core;
                let mut n = 0;
                for t in self.transports.iter_mut() {
                    n += t.poll(usize::MAX, &mut |peer, h, p| {
                        core.on_message(peer, h, p);
                    });
                }
                if n == 0 {
                    break;
                }
            }
            if !self.core.rndv_todo.is_empty() {
                self.run_rndv();
            }
        }
        let known = self.core.failed.list.len();
        for (w, origin) in found.drain(..).zip(origins.drain(..)) {
            self.notify_failed_from(w, origin);
        }
        self.scratch = found;
        self.scratch_origins = origins;
        if self.extensions.has_slow() {
            self.run_slow_activities();
        }
        self.core.failed.list.len().saturating_sub(known)
    }

    /// Spend one idle iteration of a wait loop according to the progress mode: progress, and
    /// after 16 idle iterations in yield mode (after [`POLL_IDLE_SPINS`] in poll mode) give the
    /// core away. For layers that wait for their own completion condition instead of a request
    /// (`spins` starts at 0).
    #[inline]
    pub(crate) fn idle_wait(&mut self, spins: &mut u32) {
        if self.progress() > 0 {
            *spins = 0;
            return;
        }
        *spins = spins.saturating_add(1);
        let limit = if self.cfg.progress == ProgressMode::Yield { 16 } else { POLL_IDLE_SPINS };
        if *spins >= limit {
            std::thread::yield_now();
        }
    }

    /// Withdraw a request that has not started moving data: a posted receive that has not
    /// matched, or an eager send still queued for transport space. Returns true if it was
    /// cancelled (and freed); false if it is already under way or done (wait for it).
    pub(crate) fn cancel(&mut self, id: ReqId) -> Result<bool> {
        let Some(r) = self.core.reqs.get(id) else {
            return Err(Error::InvalidRequest);
        };
        match r.phase {
            Phase::RecvPosted => {
                let ctx = self.core.comms.get(r.comm).map(|c| c.ctx).ok();
                for x in ctx.into_iter().flat_map(|c| [c, c + 1]) {
                    if let Some(qs) = self.core.q.ctx(x) {
                        qs.posted.retain(|p| p.req != id);
                    }
                }
            }
            Phase::SendQueued => {
                let w = r.peer_world as usize;
                let before = self.core.pending[w].len();
                self.core.pending[w].retain(|o| o.complete != Some(id));
                self.core.n_pending -= before - self.core.pending[w].len();
            }
            _ => return Ok(false),
        }
        self.core.reqs.remove(id);
        Ok(true)
    }

    /// Complete `id` if it is done: `Ok(Some(status))` (request freed), `Ok(None)` (still
    /// pending), or the operation's error (request freed; except `ProcFailedPending`, which
    /// leaves a wildcard receive pending).
    pub fn test(&mut self, id: ReqId) -> Result<Option<Status>> {
        if !self.is_done(id)? {
            self.progress();
        }
        self.take_if_done(id)
    }

    fn is_done(&self, id: ReqId) -> Result<bool> {
        match self.core.reqs.get(id) {
            None => Err(Error::InvalidRequest),
            Some(r) => Ok(matches!(r.phase, Phase::Done(_))),
        }
    }

    fn take_if_done(&mut self, id: ReqId) -> Result<Option<Status>> {
        let Some(r) = self.core.reqs.get(id) else {
            return Err(Error::InvalidRequest);
        };
        match r.phase {
            Phase::Done(_) => {}
            _ => {
                if !r.is_send
                    && r.peer == ANY_SOURCE
                    && self.core.failed.any()
                    && self.unacked_failure(r.comm)
                {
                    return Err(Error::ProcFailedPending);
                }
                return Ok(None);
            }
        }
        match self.core.reqs.remove(id).map(|r| r.phase) {
            Some(Phase::Done(res)) => res.map(Some),
            _ => unreachable!("checked Done above"),
        }
    }

    /// Wait for `id` to complete.
    ///
    /// While it waits, the message that completes `id` ends the poll it arrives in: the
    /// transports do not look further (for a shared-memory ring, reading the next record's
    /// line would cost a transfer from the sender's core between the completion and this
    /// caller). Other waits (`wait_all`, `wait_any`, tests) keep draining in batches.
    pub(crate) fn wait(&mut self, id: ReqId) -> Result<Status> {
        let mut spins = 0;
        let r = loop {
            match self.take_if_done(id) {
                Ok(None) => {}
                Ok(Some(st)) => break Ok(st),
                Err(x) => break Err(x),
            }
            self.core.awaited = Some(id);
            self.idle_wait(&mut spins);
        };
        self.core.awaited = None;
        r
    }

    /// Wait for every request; returns all statuses, or the first error after all completed.
    pub fn wait_all(&mut self, ids: &[ReqId]) -> Result<Vec<Status>> {
        let mut out: Vec<Option<Result<Status>>> = ids.iter().map(|_| None).collect();
        let mut left = ids.len();
        let mut spins = 0;
        while left > 0 {
            for (i, &id) in ids.iter().enumerate() {
                if out[i].is_some() {
                    continue;
                }
                match self.take_if_done(id) {
                    Ok(None) => {}
                    Ok(Some(st)) => {
                        out[i] = Some(Ok(st));
                        left -= 1;
                    }
                    Err(e) => {
                        out[i] = Some(Err(e));
                        left -= 1;
                    }
                }
            }
            if left > 0 {
                self.idle_wait(&mut spins);
            }
        }
        out.into_iter().map(|r| r.expect("all filled")).collect()
    }

    /// Wait until one request completes; returns its index and status (or its error).
    pub fn wait_any(&mut self, ids: &[ReqId]) -> Result<(usize, Status)> {
        if ids.is_empty() {
            return Err(Error::InvalidArg("wait_any on an empty request list".into()));
        }
        let mut spins = 0;
        loop {
            let mut valid = 0;
            for (i, &id) in ids.iter().enumerate() {
                match self.take_if_done(id) {
                    Ok(Some(st)) => return Ok((i, st)),
                    Ok(None) => valid += 1,
                    Err(Error::InvalidRequest) => {}
                    Err(e) => return Err(e),
                }
            }
            if valid == 0 {
                return Err(Error::InvalidRequest);
            }
            self.idle_wait(&mut spins);
        }
    }

    /// If every request is done, complete them all and return their statuses.
    pub fn test_all(&mut self, ids: &[ReqId]) -> Result<Option<Vec<Status>>> {
        self.progress();
        for &id in ids {
            if !self.is_done(id)? {
                return Ok(None);
            }
        }
        self.wait_all(ids).map(Some)
    }
}

/// Peer value of generic requests (neither a rank nor `ANY_SOURCE`).
const GENERIC_PEER: i32 = -2;

impl Engine {
    /// A pending generic request on `c` (an upper layer's operation).
    pub(crate) fn new_generic(&mut self, c: CommId) -> Result<ReqId> {
        self.core.comms.get(c)?;
        Ok(self.core.reqs.insert(Req {
            comm: c,
            peer_world: u32::MAX,
            peer: GENERIC_PEER,
            tag: 0,
            buf: UserBuf::EMPTY,
            is_send: false,
            phase: Phase::Generic,
        }))
    }

    /// Complete a generic request; ignored if it is not pending.
    pub(crate) fn complete_generic(&mut self, id: ReqId, res: Result<Status>) {
        if let Some(r) = self.core.reqs.get_mut(id) {
            if matches!(r.phase, Phase::Generic) {
                r.phase = Phase::Done(res);
            }
        }
    }

    /// Take the result of a complete request without making progress: `Ok(None)` while
    /// pending.
    pub(crate) fn take_result(&mut self, id: ReqId) -> Result<Option<Status>> {
        match self.core.reqs.get(id) {
            None => return Err(Error::InvalidRequest),
            Some(r) if !matches!(r.phase, Phase::Done(_)) => return Ok(None),
            Some(_) => {}
        }
        match self.core.reqs.remove(id).map(|r| r.phase) {
            Some(Phase::Done(res)) => res.map(Some),
            _ => Err(Error::InvalidRequest),
        }
    }
}
