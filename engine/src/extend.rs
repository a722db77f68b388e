//! The interface of the layers above the engine (collectives, fault tolerance): the
//! capability [`Ext`] and the extension points it reaches.
//!
//! The engine never names those layers. They hold an [`Ext`] — from [`Engine::ext`], and in
//! every activity advance and class handler — which lets them do only this:
//! - **activities** ([`Activity`], [`Ext::spawn`]): state machines advanced by every
//!   progress call — a non-blocking collective's schedule, a detector's timer, an agreement;
//! - **generic requests** ([`Ext::new_request`] / [`Ext::complete_request`]): the handle an
//!   activity gives its caller, waited for with the ordinary test/wait calls;
//! - **message classes** ≥ [`class::FIRST_FREE`] with a handler ([`Ext::set_handler`]),
//!   sent with [`Ext::send_ctrl`], delivered in per-peer FIFO order with the data traffic;
//! - point-to-point on a communicator's **internal context** ([`Ext::isend_coll`]); tags
//!   below [`FIRST_EXT_TAG`] there are the engine's own (barrier, communicator creation),
//!   those from [`FIRST_EXT_TAG`] to [`FIRST_COLL_TAG`] are fixed tags of upper-layer
//!   protocols other than the collectives, which use the tags from [`FIRST_COLL_TAG`] on;
//! - **failure state**: read the failure table, report a failure its own detector found,
//!   revoke a communicator and set its error scope (the FT layer owns those protocols, the
//!   engine enforces them; see `failure.rs`);
//! - **communicator queries** and the creation of a communicator whose context id an upper
//!   layer agreed on (shrink);
//! - the **blocking primitives** an upper layer's blocking call needs: [`Ext::wait`],
//!   [`Ext::progress`], [`Ext::idle_wait`] (a control message ends the poll it arrives in, so a
//!   blocking call that waits for control traffic sees it at once).
//!
//! Handlers and activities run outside the transport poll; they must not block (no `wait`),
//! because a blocked activity would stop the others.

use crate::comm::ErrScope;
use crate::error::{Error, Result};
use crate::request::{Phase, RecvStart, Req, ReqId};
use crate::transport::{class, Header, TransportError};
use crate::{CommId, Engine, Ext, Status};

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
    fn advance(&mut self, e: &mut Ext) -> Step;
}

/// Handler of an upper-layer message class: `(capability, sender world rank, header, payload)`.
pub type ClassHandler = Box<dyn FnMut(&mut Ext, u32, &Header, &[u8])>;

impl Engine {
    /// The capability the collectives and fault-tolerance layers work through.
    #[inline(always)]
    pub fn ext(&mut self) -> &mut Ext {
        // SAFETY: `Ext` is `repr(transparent)` over `Engine`, so the two have one layout, and
        // the returned borrow is the borrow of `self`.
        unsafe { &mut *(self as *mut Engine).cast::<Ext>() }
    }

    /// Read-only view of [`Engine::ext`] (communicator and failure queries).
    #[inline(always)]
    pub fn ext_ref(&self) -> &Ext {
        // SAFETY: as in `ext`.
        unsafe { &*(self as *const Engine).cast::<Ext>() }
    }
}

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

/// First of the fixed tags (below [`FIRST_COLL_TAG`]) an upper layer other than the
/// collectives may use on a communicator's internal context, one per protocol.
pub const FIRST_EXT_TAG: i32 = 8;

/// Peer value of generic requests (neither a rank nor `ANY_SOURCE`).
const GENERIC_PEER: i32 = -2;

impl Engine {
    pub(crate) fn run_slow_activities(&mut self) {
        self.extensions.slow_seen = self.core.failed.list.len();
        let mut acts = std::mem::take(&mut self.extensions.slow);
        let ext = self.ext();
        acts.retain_mut(|a| a.advance(ext) == Step::Continue);
        acts.append(&mut self.extensions.slow);
        self.extensions.slow = acts;
    }

    pub(crate) fn run_activities(&mut self) -> usize {
        let mut acts = std::mem::take(&mut self.extensions.activities);
        let before = acts.len();
        let ext = self.ext();
        acts.retain_mut(|a| a.advance(ext) == Step::Continue);
        let done = before - acts.len();
        // Activities spawned while advancing were pushed to the (empty) list meanwhile.
        acts.append(&mut self.extensions.activities);
        self.extensions.activities = acts;
        done
    }

    pub(crate) fn dispatch_ctrl(&mut self) -> usize {
        let mut inbox = std::mem::take(&mut self.core.ctrl_inbox);
        let n = inbox.len();
        for (peer, h, payload) in inbox.drain(..) {
            let i = h.class as usize;
            match self.extensions.handlers.get_mut(i).and_then(Option::take) {
                Some(mut handler) => {
                    handler(self.ext(), peer, &h, &payload);
                    // Put it back unless the handler installed a replacement.
                    if self.extensions.handlers[i].is_none() {
                        self.extensions.handlers[i] = Some(handler);
                    }
                    self.core.recycle_buf(payload);
                }
                None if self.extensions.parked.len() < MAX_PARKED => {
                    self.extensions.parked.push((peer, h, payload))
                }
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
}

impl Ext {
    /// Start advancing `a` on every progress call until it reports [`Step::Done`].
    pub fn spawn(&mut self, a: Box<dyn Activity>) {
        self.0.extensions.activities.push(a);
        self.0.core.aux = true;
    }

    /// Advance `a` on the slow path (every `slow_period`) and whenever a new failure is
    /// recorded — for state machines driven by failures and timers (a failure detector, the
    /// failure notices of agreements), which need not cost anything per message.
    pub fn spawn_slow(&mut self, a: Box<dyn Activity>) {
        self.0.extensions.slow.push(a);
        self.0.core.aux = true;
    }

    /// Route messages of `class` (≥ [`class::FIRST_FREE`]) to `h`.
    pub fn set_handler(&mut self, cls: u8, h: ClassHandler) -> Result<()> {
        if cls < class::FIRST_FREE {
            return Err(Error::InvalidArg(format!("message class {cls} is reserved by the engine")));
        }
        let i = cls as usize;
        if self.0.extensions.handlers.len() <= i {
            self.0.extensions.handlers.resize_with(i + 1, || None);
        }
        self.0.extensions.handlers[i] = Some(h);
        let (now, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.0.extensions.parked).into_iter().partition(|m| m.1.class == cls);
        self.0.extensions.parked = later;
        if !now.is_empty() {
            self.0.core.ctrl_inbox.splice(0..0, now);
            self.0.core.aux = true;
        }
        Ok(())
    }

    /// Send an upper-layer message (class ≥ [`class::FIRST_FREE`]) to world rank `peer`.
    /// The payload is copied; the message is queued behind earlier traffic if the transport is
    /// full. Messages to self are delivered through the handler on the next progress call.
    pub fn send_ctrl(&mut self, peer: u32, hdr: Header, payload: &[u8]) -> Result<()> {
        if hdr.class < class::FIRST_FREE {
            return Err(Error::InvalidArg(format!("message class {} is reserved by the engine", hdr.class)));
        }
        if peer == self.0.core.me {
            self.0.core.ctrl_inbox.push((peer, hdr, payload.to_vec()));
            self.0.core.aux = true;
            return Ok(());
        }
        let Some(&t) = self.0.core.route.get(peer as usize) else {
            return Err(Error::InvalidRank { rank: peer as i64, size: self.0.core.route.len() as u32 });
        };
        // Before the route: a failed peer's transport may have been retired.
        if self.0.core.failed.is_failed(peer) {
            return Err(Error::ProcFailed { ranks: vec![peer] });
        }
        if t as usize >= self.0.transport_count() {
            return Err(Error::Transport(TransportError::Invalid(format!(
                "no transport reaches world rank {peer}"
            ))));
        }
        if payload.len() > self.0.eager_limit_of(t as usize).max(64) {
            return Err(Error::InvalidArg(format!(
                "control payload of {} bytes exceeds the eager limit",
                payload.len()
            )));
        }
        self.0.send_bytes_or_queue(t as usize, peer, hdr, payload);
        Ok(())
    }

    /// A pending request on `c` for an upper-layer operation; complete it with
    /// [`Ext::complete_request`]. Callers wait for it with test/wait like any request.
    pub fn new_request(&mut self, c: CommId) -> Result<ReqId> {
        self.0.core.comms.get(c)?;
        Ok(self.0.core.reqs.insert(Req {
            comm: c,
            peer_world: u32::MAX,
            peer: GENERIC_PEER,
            tag: 0,
            buf: crate::buffer::UserBuf::EMPTY,
            is_send: false,
            phase: Phase::Generic,
        }))
    }

    /// Complete a request made by [`Ext::new_request`]; ignored if it is not pending.
    pub fn complete_request(&mut self, id: ReqId, res: Result<Status>) {
        if let Some(r) = self.0.core.reqs.get_mut(id) {
            if matches!(r.phase, Phase::Generic) {
                r.phase = Phase::Done(res);
            }
        }
    }

    /// True if `id` is complete (its result waits for test/wait); no progress is made.
    pub fn is_complete(&self, id: ReqId) -> Result<bool> {
        match self.0.core.reqs.get(id) {
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
        match self.0.core.reqs.remove(id).map(|r| r.phase) {
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
        unsafe { self.0.isend_ctx(c, 1, buf, len, dst, tag, true) }.map(|r| r.expect("request forced"))
    }

    /// As [`Ext::isend_coll`], but an eager send handed to the transport at once returns
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
        unsafe { self.0.isend_ctx(c, 1, buf, len, dst, tag, false) }
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
        unsafe { self.0.irecv_ctx(c, 1, buf, len, src, tag, true).map(RecvStart::pending) }
    }

    /// As [`Ext::irecv_coll`], but a receive matched at once by an eager message that
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
        unsafe { self.0.irecv_ctx(c, 1, buf, len, src, tag, false) }
    }

    /// Withdraw a receive posted on the internal context that has not matched (see
    /// [`Engine::cancel`]): true if it was cancelled and freed, false if it is done (take its
    /// result).
    pub fn cancel(&mut self, id: ReqId) -> Result<bool> {
        self.0.cancel(id)
    }

    // ------------------------------------------------------ blocking primitives

    /// Make progress once (see [`Engine::progress`]).
    #[inline]
    pub fn progress(&mut self) -> usize {
        self.0.progress()
    }

    /// Wait for `id` to complete (see [`Engine::wait`]). Not from an activity or a handler.
    #[inline]
    pub fn wait(&mut self, id: ReqId) -> Result<Status> {
        self.0.wait(id)
    }

    /// One idle iteration of a loop that waits for its own condition: progress, and after
    /// 16 idle iterations in yield mode (1024 in poll mode) give the core away (`spins` starts
    /// at 0).
    #[inline]
    pub fn idle_wait(&mut self, spins: &mut u32) {
        self.0.idle_wait(spins)
    }

    // ------------------------------------------------------ communicators

    /// The world communicator.
    #[inline]
    pub fn world(&self) -> CommId {
        self.0.world()
    }

    /// This process's world rank.
    #[inline]
    pub fn world_rank(&self) -> u32 {
        self.0.world_rank()
    }

    /// Whether `c` names a live communicator.
    #[inline]
    pub fn comm_live(&self, c: CommId) -> bool {
        self.0.comm_live(c)
    }

    /// Rank of this process in `c`.
    #[inline]
    pub fn comm_rank(&self, c: CommId) -> Result<u32> {
        self.0.comm_rank(c)
    }

    /// Size of `c`.
    #[inline]
    pub fn comm_size(&self, c: CommId) -> Result<u32> {
        self.0.comm_size(c)
    }

    /// World ranks of the members of `c`, in communicator rank order, without a copy.
    #[inline]
    pub fn comm_members(&self, c: CommId) -> Result<&[u32]> {
        self.0.comm_members(c)
    }

    /// World ranks of the members of `c`, in communicator rank order.
    pub fn comm_group(&self, c: CommId) -> Result<Vec<u32>> {
        self.0.comm_group(c)
    }

    /// Context id of `c` (its internal context is `ctx + 1`).
    pub fn comm_ctx(&self, c: CommId) -> Result<u32> {
        self.0.comm_ctx(c)
    }

    /// The communicator of this process whose context id is `ctx`, if any.
    pub fn comm_by_ctx(&self, ctx: u32) -> Option<CommId> {
        self.0.comm_by_ctx(ctx)
    }

    /// This process's next free context id (what it contributes to a context agreement).
    pub fn next_ctx(&self) -> u32 {
        self.0.next_ctx()
    }

    /// Reserve a window of up to `n` context ids for a creation whose agreement runs while
    /// this process may create other communicators (see [`Engine`]'s `reserve_ctx`): its
    /// first id and its end; this process's creations take ids past it from now on.
    pub fn reserve_ctx(&mut self, n: u32) -> Result<(u32, u32)> {
        self.0.reserve_ctx(n)
    }

    /// End the reservation of the window ending at `end`, its creation having installed its
    /// communicators below `used`: the ids `used..end` return unless a creation took ids past
    /// the window meanwhile.
    pub fn release_ctx(&mut self, end: u32, used: u32) {
        self.0.release_ctx(end, used)
    }

    /// True if `ctx` names no communicator here yet but may (a message for it can be held
    /// until it does): at or past [`Ext::next_ctx`], or in a window a pending creation
    /// reserved.
    pub fn ctx_may_come(&self, ctx: u32) -> bool {
        self.0.ctx_may_come(ctx)
    }

    /// Number of communicators installed so far: grows whenever one is created here.
    pub fn comms_installed(&self) -> u64 {
        self.0.core.comms_installed
    }

    /// Create a communicator from a context id and members agreed on by an upper layer.
    /// Context id `ctx` must be even and unused by every member (the caller's agreement
    /// guarantees it); this process must be a member.
    pub fn comm_create_agreed(&mut self, ctx: u32, world_of: Vec<u32>) -> Result<CommId> {
        self.0.comm_create_agreed(ctx, world_of)
    }

    // ------------------------------------------------------ failure state

    /// Number of failures known so far (grows by one per newly failed process): activities
    /// compare it with the value they saw last to notice new failures cheaply.
    #[inline]
    pub fn failure_count(&self) -> usize {
        self.0.failure_count()
    }

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> &[u32] {
        self.0.failed_world_ranks()
    }

    /// Ranks of `c` known to have failed.
    pub fn get_failed(&self, c: CommId) -> Result<Vec<u32>> {
        self.0.get_failed(c)
    }

    /// True if world rank `w` is known to have failed.
    #[inline]
    pub fn is_failed(&self, w: u32) -> bool {
        self.0.core.failed.is_failed(w)
    }

    /// True if `c` has members known failed whose failure `c` has not acknowledged.
    #[inline]
    pub fn has_unacked_failure(&self, c: CommId) -> bool {
        self.0.unacked_failure(c)
    }

    /// Ranks of `c` whose failure `c` has acknowledged.
    pub fn get_acked(&self, c: CommId) -> Result<Vec<u32>> {
        self.0.get_acked(c)
    }

    /// Report that world rank `w` failed (an upper layer's detector found it): every operation that can no longer finish completes with
    /// `ProcFailed`.
    pub fn notify_failed(&mut self, w: u32) {
        self.0.notify_failed_from(w, crate::engine::Origin::Upper)
    }

    /// Revoke `c` locally: every pending point-to-point operation on it (user and internal
    /// context) completes with `Revoked`, and later ones fail at once. Returns false if it
    /// was already revoked. The FT layer propagates revocation to the other members.
    pub fn revoke_local(&mut self, c: CommId) -> Result<bool> {
        self.0.revoke_local(c)
    }

    /// True if `c` was revoked.
    pub fn is_revoked(&self, c: CommId) -> Result<bool> {
        self.0.is_revoked(c)
    }

    /// Set which failures raise errors on `c`.
    pub fn set_error_scope(&mut self, c: CommId, scope: ErrScope) -> Result<()> {
        self.0.set_error_scope(c, scope)
    }

    /// The error scope of `c`.
    pub fn error_scope(&self, c: CommId) -> Result<ErrScope> {
        self.0.error_scope(c)
    }
}
