//! Extension points for the layers above the engine (collectives, fault tolerance).
//!
//! The engine never names those layers. They plug in through:
//! - **activities** ([`Activity`]): state machines advanced by every [`Engine::progress`]
//!   call — a non-blocking collective's schedule, a detector's timer, an agreement;
//! - **generic requests** ([`Engine::new_request`] / [`Engine::complete_request`]): the handle
//!   an activity gives its caller, waited for with the ordinary test/wait calls;
//! - **message classes** ≥ [`class::FIRST_FREE`] with a handler ([`Engine::set_handler`]),
//!   sent with [`Engine::send_ctrl`], delivered in per-peer FIFO order with the data traffic;
//! - point-to-point on a communicator's **internal context** ([`Engine::isend_coll`]); tags
//!   below [`FIRST_COLL_TAG`] there are the engine's own (barrier, communicator creation);
//! - communicator state the FT layer owns the protocol for but the engine enforces:
//!   revocation ([`Engine::revoke_local`]) and error scope ([`Engine::set_error_scope`]).
//!
//! Handlers and activities run outside the transport poll, with `&mut Engine`; they must not
//! block (no `wait`), because a blocked activity would stop the others.

use crate::comm::ErrScope;
use crate::error::{Error, Result};
use crate::request::{Phase, RecvStart, Req, ReqId};
use crate::transport::{class, Header, TransportError};
use crate::{CommId, Engine, Status};

/// What an activity reports after one advance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep advancing it on later progress calls.
    Continue,
    /// Finished: drop it.
    Done,
}

/// A state machine advanced by the progress engine.
pub trait Activity {
    /// Make whatever progress is possible now, without blocking.
    fn advance(&mut self, e: &mut Engine) -> Step;
}

/// Handler of an upper-layer message class: `(engine, sender world rank, header, payload)`.
pub type ClassHandler = Box<dyn FnMut(&mut Engine, u32, &Header, &[u8])>;

/// Extension state held by the engine.
#[derive(Default)]
pub(crate) struct Extensions {
    activities: Vec<Box<dyn Activity>>,
    /// Activities that only need failures and time: advanced on the slow path and when the
    /// failure table grows, never on the per-message path.
    slow: Vec<Box<dyn Activity>>,
    /// Failure count the slow activities were last advanced with.
    pub(crate) slow_seen: usize,
    handlers: Vec<Option<ClassHandler>>,
    /// Messages of a class whose handler is not installed yet (a peer may start a protocol
    /// before this process has set it up); delivered when the handler arrives. Bounded.
    parked: Vec<(u32, Header, Vec<u8>)>,
}

/// At most this many messages wait for a handler; beyond it they count as malformed.
const MAX_PARKED: usize = 4096;

impl Extensions {
    #[inline]
    pub(crate) fn has_activities(&self) -> bool {
        !self.activities.is_empty()
    }

    #[inline]
    pub(crate) fn has_slow(&self) -> bool {
        !self.slow.is_empty()
    }
}

/// First tag upper layers may use on a communicator's internal context.
pub const FIRST_COLL_TAG: i32 = 16;

/// Peer value of generic requests (neither a rank nor `ANY_SOURCE`).
const GENERIC_PEER: i32 = -2;

impl Engine {
    /// Start advancing `a` on every progress call until it reports [`Step::Done`].
    pub fn spawn(&mut self, a: Box<dyn Activity>) {
        self.ext.activities.push(a);
        self.core.aux = true;
    }

    /// Advance `a` on the slow path (every `slow_period`) and whenever a new failure is
    /// recorded — for state machines driven by failures and timers (a failure detector, the
    /// failure notices of agreements), which need not cost anything per message.
    pub fn spawn_slow(&mut self, a: Box<dyn Activity>) {
        self.ext.slow.push(a);
        self.core.aux = true;
    }

    pub(crate) fn run_slow_activities(&mut self) {
        self.ext.slow_seen = self.core.failed.list.len();
        let mut acts = std::mem::take(&mut self.ext.slow);
        acts.retain_mut(|a| a.advance(self) == Step::Continue);
        acts.append(&mut self.ext.slow);
        self.ext.slow = acts;
    }

    pub(crate) fn run_activities(&mut self) -> usize {
        let mut acts = std::mem::take(&mut self.ext.activities);
        let before = acts.len();
        acts.retain_mut(|a| a.advance(self) == Step::Continue);
        let done = before - acts.len();
        // Activities spawned while advancing were pushed to the (empty) list meanwhile.
        acts.append(&mut self.ext.activities);
        self.ext.activities = acts;
        done
    }

    /// Route messages of `class` (≥ [`class::FIRST_FREE`]) to `h`.
    pub fn set_handler(&mut self, cls: u8, h: ClassHandler) -> Result<()> {
        if cls < class::FIRST_FREE {
            return Err(Error::InvalidArg(format!("message class {cls} is reserved by the engine")));
        }
        let i = cls as usize;
        if self.ext.handlers.len() <= i {
            self.ext.handlers.resize_with(i + 1, || None);
        }
        self.ext.handlers[i] = Some(h);
        let (now, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.ext.parked).into_iter().partition(|m| m.1.class == cls);
        self.ext.parked = later;
        if !now.is_empty() {
            self.core.ctrl_inbox.splice(0..0, now);
            self.core.aux = true;
        }
        Ok(())
    }

    pub(crate) fn dispatch_ctrl(&mut self) -> usize {
        let mut inbox = std::mem::take(&mut self.core.ctrl_inbox);
        let n = inbox.len();
        for (peer, h, payload) in inbox.drain(..) {
            let i = h.class as usize;
            match self.ext.handlers.get_mut(i).and_then(Option::take) {
                Some(mut handler) => {
                    handler(self, peer, &h, &payload);
                    // Put it back unless the handler installed a replacement.
                    if self.ext.handlers[i].is_none() {
                        self.ext.handlers[i] = Some(handler);
                    }
                    self.core.recycle_buf(payload);
                }
                None if self.ext.parked.len() < MAX_PARKED => self.ext.parked.push((peer, h, payload)),
                None => {
                    self.core.stats.malformed += 1;
                    self.core.stats.last_malformed =
                        Some(Error::Malformed { peer, what: "message class without handler" });
                }
            }
        }
        // Keep the inbox's allocation unless a handler queued new messages meanwhile.
        if self.core.ctrl_inbox.is_empty() {
            self.core.ctrl_inbox = inbox;
        }
        n
    }

    /// Send an upper-layer message (class ≥ [`class::FIRST_FREE`]) to world rank `peer`.
    /// The payload is copied; the message is queued behind earlier traffic if the transport is
    /// full. Messages to self are delivered through the handler on the next progress call.
    pub fn send_ctrl(&mut self, peer: u32, hdr: Header, payload: &[u8]) -> Result<()> {
        if hdr.class < class::FIRST_FREE {
            return Err(Error::InvalidArg(format!("message class {} is reserved by the engine", hdr.class)));
        }
        if peer == self.core.me {
            self.core.ctrl_inbox.push((peer, hdr, payload.to_vec()));
            self.core.aux = true;
            return Ok(());
        }
        let Some(&t) = self.core.route.get(peer as usize) else {
            return Err(Error::InvalidRank { rank: peer as i64, size: self.core.route.len() as u32 });
        };
        if t as usize >= self.transport_count() {
            return Err(Error::Transport(TransportError::Invalid(format!(
                "no transport reaches world rank {peer}"
            ))));
        }
        if self.core.failed.is_failed(peer) {
            return Err(Error::ProcFailed { ranks: vec![peer] });
        }
        if payload.len() > self.eager_limit_of(t as usize).max(64) {
            return Err(Error::InvalidArg(format!(
                "control payload of {} bytes exceeds the eager limit",
                payload.len()
            )));
        }
        self.send_bytes_or_queue(t as usize, peer, hdr, payload);
        Ok(())
    }

    /// A pending request on `c` for an upper-layer operation; complete it with
    /// [`Engine::complete_request`]. Callers wait for it with test/wait like any request.
    pub fn new_request(&mut self, c: CommId) -> Result<ReqId> {
        self.core.comms.get(c)?;
        Ok(self.core.reqs.insert(Req {
            comm: c,
            peer_world: u32::MAX,
            peer: GENERIC_PEER,
            tag: 0,
            buf: crate::buffer::UserBuf::EMPTY,
            is_send: false,
            phase: Phase::Generic,
        }))
    }

    /// Complete a request made by [`Engine::new_request`]; ignored if it is not pending.
    pub fn complete_request(&mut self, id: ReqId, res: Result<Status>) {
        if let Some(r) = self.core.reqs.get_mut(id) {
            if matches!(r.phase, Phase::Generic) {
                r.phase = Phase::Done(res);
            }
        }
    }

    /// True if `id` is complete (its result waits for test/wait); no progress is made.
    pub fn is_complete(&self, id: ReqId) -> Result<bool> {
        match self.core.reqs.get(id) {
            None => Err(Error::InvalidRequest),
            Some(r) => Ok(matches!(r.phase, Phase::Done(_))),
        }
    }

    /// Take the result of a complete request without making progress (for activities):
    /// `Ok(None)` while pending.
    pub fn take_result(&mut self, id: ReqId) -> Result<Option<Status>> {
        if !self.is_complete(id)? {
            return Ok(None);
        }
        match self.core.reqs.remove(id).map(|r| r.phase) {
            Some(Phase::Done(res)) => res.map(Some),
            _ => Err(Error::InvalidRequest),
        }
    }

    /// Send on the internal context of `c` (collective traffic; never matches user receives).
    ///
    /// # Safety
    /// As [`Engine::isend`].
    pub unsafe fn isend_coll(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.isend_ctx(c, 1, buf, len, dst, tag, true) }.map(|r| r.expect("request forced"))
    }

    /// As [`Engine::isend_coll`], but an eager send handed to the transport at once returns
    /// `Ok(None)` and allocates no request (the buffer may be reused immediately); otherwise
    /// the request to wait for.
    ///
    /// # Safety
    /// As [`Engine::isend`] (while a returned request is pending).
    pub unsafe fn isend_coll_opt(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<Option<ReqId>> {
        // SAFETY: forwarded contract.
        unsafe { self.isend_ctx(c, 1, buf, len, dst, tag, false) }
    }

    /// Receive on the internal context of `c`.
    ///
    /// # Safety
    /// As [`Engine::irecv`].
    pub unsafe fn irecv_coll(
        &mut self,
        c: CommId,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
    ) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.irecv_ctx(c, 1, buf, len, src, tag, true).map(RecvStart::pending) }
    }

    /// As [`Engine::irecv_coll`], but a receive matched at once by an eager message that
    /// already arrived completes here: `RecvStart::Done` with its status (or the receive's
    /// error, e.g. truncation), and no request is allocated.
    ///
    /// # Safety
    /// As [`Engine::irecv`] (while a returned request is pending).
    pub unsafe fn irecv_coll_opt(
        &mut self,
        c: CommId,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
    ) -> Result<RecvStart> {
        // SAFETY: forwarded contract.
        unsafe { self.irecv_ctx(c, 1, buf, len, src, tag, false) }
    }

    /// Number of failures known so far (grows by one per newly failed process): activities
    /// compare it with the value they saw last to notice new failures cheaply.
    pub fn failure_count(&self) -> usize {
        self.core.failed.list.len()
    }

    /// Revoke `c` locally: every pending point-to-point operation on it (user and internal
    /// context) completes with `Revoked`, and later ones fail at once. Returns false if it
    /// was already revoked. The FT layer propagates revocation to the other members.
    pub fn revoke_local(&mut self, c: CommId) -> Result<bool> {
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

    /// Context id of `c` (its internal context is `ctx + 1`).
    pub fn comm_ctx(&self, c: CommId) -> Result<u32> {
        Ok(self.core.comms.get(c)?.ctx)
    }

    /// World ranks of the members of `c`, in communicator rank order.
    pub fn comm_group(&self, c: CommId) -> Result<Vec<u32>> {
        Ok(self.core.comms.get(c)?.world_of.clone())
    }

    /// Create a communicator from parts agreed on by an upper layer (shrink): context id
    /// `ctx` (even, unused by every member — the caller's agreement guarantees it) and the
    /// members' world ranks in rank order. This process must be a member.
    pub fn comm_create_agreed(&mut self, ctx: u32, world_of: Vec<u32>) -> Result<CommId> {
        if !ctx.is_multiple_of(2) || ctx + 1 >= crate::matching::MAX_CTX {
            return Err(Error::InvalidArg(format!("context id {ctx} must be even and in range")));
        }
        let me = self.core.me;
        let rank = world_of
            .iter()
            .position(|&w| w == me)
            .ok_or_else(|| Error::InvalidArg("this process is not a member".into()))?
            as u32;
        self.install_comm(ctx, rank, world_of)
    }

    /// The communicator of this process whose context id is `ctx`, if any (FT message routing).
    pub fn comm_by_ctx(&self, ctx: u32) -> Option<CommId> {
        self.core.comms.iter().find(|(_, c)| c.ctx == ctx).map(|(id, _)| id)
    }

    /// Ranks of `c` whose failure `c` has acknowledged (ULFM's older `get_acked`).
    pub fn get_acked(&self, c: CommId) -> Result<Vec<u32>> {
        let comm = self.core.comms.get(c)?;
        let n = comm.acked.min(self.core.failed.list.len());
        Ok(self.core.failed.list[..n].iter().filter_map(|&w| comm.rank_of_world(w)).collect())
    }

    /// This process's next free context id (what it contributes to a context agreement).
    pub fn next_ctx(&self) -> u32 {
        self.core.next_ctx
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
        let reqs = &core.reqs;
        for qs in core.q.iter_mut() {
            qs.posted.retain(|p| matches!(reqs.get(p.req), Some(Req { phase: Phase::RecvPosted, .. })));
        }
        for q in core.pending.iter_mut() {
            let before = q.len();
            q.retain(|o| o.complete.is_none_or(|id| !ids.contains(&id)));
            core.n_pending -= before - q.len();
        }
    }
}
