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
}
