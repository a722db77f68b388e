//! [`FtPort`]: the capability of the fault-tolerance layer (`weft-ft`), and only what that
//! layer calls:
//! - **activities** ([`FtPort::spawn`], [`FtPort::spawn_slow`]): a detector's timer, an
//!   agreement, a revoke's propagation;
//! - **message classes** ≥ [`class::FIRST_FREE`] with a handler ([`FtPort::set_handler`]),
//!   sent with [`FtPort::send_ctrl`], delivered in per-peer FIFO order with the data traffic;
//! - **generic requests** for the caller of a non-blocking protocol, and point-to-point on a
//!   communicator's internal context with the fixed tags from [`crate::FIRST_EXT_TAG`];
//! - **failure state**: read the failure table, report a failure its own detector found,
//!   revoke a communicator (the FT layer owns those protocols, the engine enforces them; see
//!   `failure.rs`);
//! - the communicator view, the context ids ([`crate::Contexts`]) and the creation of a
//!   communicator whose context id the layer agreed on (shrink);
//! - [`FtPort::idle_wait`], the idle step of its blocking calls (a control message ends the
//!   poll it arrives in, so a blocking call that waits for control traffic sees it at once);
//! - and, through [`crate::Common`] (shared with the engine): the world communicator, the
//!   communicator and failure-table views, `wait` and `cancel`.
//!
//! Handlers and activities run outside the transport poll; they must not block.

use crate::activity::Activity;
use crate::contexts::Contexts;
use crate::engine::ForFt;
use crate::error::{Error, Result};
use crate::request::{RecvStart, ReqId};
use crate::stats::Origin;
use crate::transport::{class, Header, TransportError};
use crate::{ClassHandler, CommId, Engine, FtPort, Status};

impl FtPort {
    /// The fault-tolerance layer's capability over `e`.
    #[inline(always)]
    pub fn of(e: &mut Engine) -> &mut FtPort {
        e.view()
    }

    /// Start advancing `a` on every progress call until it reports [`crate::Step::Done`].
    pub fn spawn<A: Activity<FtPort> + 'static>(&mut self, a: A) {
        self.0.extensions.activities.push(Box::new(ForFt(a)));
        self.0.core.aux = true;
    }

    /// Advance `a` on the slow path (every `slow_period`) and whenever a new failure is
    /// recorded — for state machines driven by failures and timers (a failure detector, the
    /// failure notices of agreements), which need not cost anything per message.
    pub fn spawn_slow<A: Activity<FtPort> + 'static>(&mut self, a: A) {
        self.0.extensions.slow.push(Box::new(ForFt(a)));
        self.0.core.aux = true;
    }

    /// Route messages of `class` (≥ [`class::FIRST_FREE`]) to `h`.
    pub fn set_handler(&mut self, cls: u8, h: ClassHandler) -> Result<()> {
        if cls < class::FIRST_FREE {
            return Err(Error::InvalidArg(format!("message class {cls} is reserved by the engine")));
        }
        let x = &mut self.0.extensions;
        let i = cls as usize;
        if x.handlers.len() <= i {
            x.handlers.resize_with(i + 1, || None);
        }
        x.handlers[i] = Some(h);
        let (now, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut x.parked).into_iter().partition(|m| m.1.class == cls);
        x.parked = later;
        if !now.is_empty() {
            self.0.core.ctrl_inbox.splice(0..0, now);
            self.0.core.aux = true;
        }
        Ok(())
    }

    /// Send a fault-tolerance message (class ≥ [`class::FIRST_FREE`]) to world rank `peer`.
    /// The payload is copied; the message is queued behind earlier traffic if the transport is
    /// full. Messages to self are delivered through the handler on the next progress call.
    pub fn send_ctrl(&mut self, peer: u32, hdr: Header, payload: &[u8]) -> Result<()> {
        let e = &mut self.0;
        if hdr.class < class::FIRST_FREE {
            return Err(Error::InvalidArg(format!("message class {} is reserved by the engine", hdr.class)));
        }
        if peer == e.core.me {
            e.core.ctrl_inbox.push((peer, hdr, payload.to_vec()));
            e.core.aux = true;
            return Ok(());
        }
        let Some(&t) = e.core.route.get(peer as usize) else {
            return Err(Error::InvalidRank { rank: peer as i64, size: e.core.route.len() as u32 });
        };
        // Before the route: a failed peer's transport may have been retired.
        if e.core.failed.is_failed(peer) {
            return Err(Error::ProcFailed { ranks: vec![peer] });
        }
        if t as usize >= e.transports.len() {
            return Err(Error::Transport(TransportError::Invalid(format!(
                "no transport reaches world rank {peer}"
            ))));
        }
        if payload.len() > e.eager[t as usize].max(64) {
            return Err(Error::InvalidArg(format!(
                "control payload of {} bytes exceeds the eager limit",
                payload.len()
            )));
        }
        e.send_bytes_or_queue(t as usize, peer, hdr, payload);
        Ok(())
    }

    /// A pending request on `c` for a fault-tolerance operation; complete it with
    /// [`FtPort::complete_request`]. Callers wait for it with test/wait like any request.
    pub fn new_request(&mut self, c: CommId) -> Result<ReqId> {
        self.0.new_generic(c)
    }

    /// Complete a request made by [`FtPort::new_request`]; ignored if it is not pending.
    pub fn complete_request(&mut self, id: ReqId, res: Result<Status>) {
        self.0.complete_generic(id, res)
    }

    /// Take the result of a complete request without making progress (for activities):
    /// `Ok(None)` while pending.
    pub fn take_result(&mut self, id: ReqId) -> Result<Option<Status>> {
        self.0.take_result(id)
    }

    /// Send on the internal context of `c` (see [`crate::CollPort::isend_coll_opt`]).
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

    /// Receive on the internal context of `c` (see [`crate::CollPort::irecv_coll_opt`]).
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

    /// One idle iteration of a loop that waits for its own condition: progress, and after
    /// 16 idle iterations in yield mode (1024 in poll mode) give the core away (`spins` starts
    /// at 0).
    #[inline]
    pub fn idle_wait(&mut self, spins: &mut u32) {
        self.0.idle_wait(spins)
    }

    /// Context ids: the next free one, those that may still come, the communicator of one.
    #[inline]
    pub fn contexts(&self) -> &Contexts {
        Contexts::of_ref(&self.0)
    }

    /// Create a communicator from a context id and members agreed on by this layer (see
    /// [`Contexts::create_agreed`]).
    pub fn comm_create_agreed(&mut self, ctx: u32, world_of: Vec<u32>) -> Result<CommId> {
        self.0.comm_create_agreed(ctx, world_of)
    }

    /// Report that world rank `w` failed (this layer's detector found it): every operation
    /// that can no longer finish completes with `ProcFailed`.
    pub fn notify_failed(&mut self, w: u32) {
        self.0.notify_failed_from(w, Origin::Upper)
    }

    /// Revoke `c` locally: every pending point-to-point operation on it (user and internal
    /// context) completes with `Revoked`, and later ones fail at once. Returns false if it
    /// was already revoked. This layer propagates revocation to the other members.
    pub fn revoke_local(&mut self, c: CommId) -> Result<bool> {
        self.0.revoke_local(c)
    }
}
