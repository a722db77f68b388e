//! The receive path and the matching of arrivals: posting receives (matched at once against
//! the unexpected queue), probes, matched probes ([`Message`]: a message taken out of
//! matching for one later receive), and [`Core::on_message`], which takes every message off the
//! wire and completes the posted receive it matches or queues it as unexpected. Also owns the
//! pool of arrival buffers and the rule that ends a transport poll at the message a blocking
//! wait is waiting for.

use crate::buffer::UserBuf;
use crate::comm::ErrScope;
use crate::engine::{check_tag, user_status, Core};
use crate::error::{Error, Result};
use crate::matching::{Arrived, Posted, Unexpected};
use crate::pending::{RndvTodo, RTS_BODY};
use crate::request::{Phase, RecvStart, Req, ReqId};
use crate::transport::{class, Header, RKey};
use crate::{CommId, Engine, Status, ANY_SOURCE};

/// While not streaming, one awaited completion in this many still lets the poll read on.
pub(crate) const PROBE_EVERY: u8 = 64;
/// Buffers kept in the arrival pool ([`Core::recycle_buf`]).
const BUF_POOL_MAX: usize = 64;
/// Largest buffer capacity kept in the arrival pool.
const BUF_POOL_CAP: usize = 4096;

/// A copy of `payload` in a buffer from `pool` (see [`Core::recycle_buf`]).
#[inline]
fn pooled_copy(pool: &mut Vec<Vec<u8>>, payload: &[u8]) -> Vec<u8> {
    let mut b = pool.pop().unwrap_or_default();
    b.extend_from_slice(payload);
    b
}

impl Engine {
    /// Blocking receive into `buf` from `src` (or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`](crate::ANY_TAG)).
    pub fn recv(&mut self, c: CommId, buf: &mut [u8], src: i32, tag: i32) -> Result<Status> {
        // SAFETY: `buf` is borrowed mutably for the whole call and the request is waited for
        // (or found complete) before returning.
        let id = unsafe { self.irecv_ctx(c, 0, buf.as_mut_ptr(), buf.len(), src, tag, true)?.pending() };
        loop {
            match self.wait(id) {
                // A blocking receive cannot stay pending (its buffer is released on return):
                // a wildcard receive stopped by an unacknowledged failure is withdrawn and
                // fails with `ProcFailed` (ULFM: blocking operations raise
                // MPI_ERR_PROC_FAILED; only requests report MPI_ERR_PROC_FAILED_PENDING).
                Err(Error::ProcFailedPending) => {
                    if self.cancel(id)? {
                        return Err(self.blocking_failure(c));
                    }
                    // Matched meanwhile: wait for its data.
                }
                r => return r,
            }
        }
    }

    /// Post a receive; the request completes when data is in `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid for writes of `len` bytes, and must not be accessed otherwise,
    /// until the request has completed.
    pub unsafe fn irecv(&mut self, c: CommId, buf: *mut u8, len: usize, src: i32, tag: i32) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.irecv_ctx(c, 0, buf, len, src, tag, true).map(RecvStart::pending) }
    }

    /// The receive path. `coll` selects the internal context (`ctx + 1`). With `want_req`
    /// false a receive matched at once by an eager message already here returns its status
    /// (or its error) without allocating a request.
    ///
    /// # Safety
    /// As [`Engine::irecv`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn irecv_ctx(
        &mut self,
        c: CommId,
        coll: u32,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
        want_req: bool,
    ) -> Result<RecvStart> {
        if buf.is_null() && len > 0 {
            return Err(Error::InvalidArg("null receive buffer with nonzero length".into()));
        }
        check_tag(tag, true)?;
        let comm = self.core.comms.get(c)?;
        if comm.revoked {
            return Err(Error::Revoked);
        }
        if self.core.failed.any() && comm.scope != ErrScope::Local {
            self.core.scope_check(comm)?;
        }
        let size = comm.size();
        let src_world = if src == ANY_SOURCE {
            u32::MAX
        } else if src >= 0 && (src as u32) < size {
            comm.world_of[src as usize]
        } else {
            return Err(Error::InvalidRank { rank: src as i64, size });
        };
        let ctx = comm.ctx + coll;
        // SAFETY: the caller guarantees buf/len validity until the request completes.
        let ubuf = unsafe { UserBuf::new(buf, len) };
        // Built where it is inserted, from values in registers: a `Req` built early on the
        // stack and copied into the slot later was re-read in 16-byte pieces over smaller
        // stores, a store-forwarding stall on every posted receive.
        let req =
            |phase| Req { comm: c, peer_world: src_world, peer: src, tag, buf: ubuf, is_send: false, phase };
        // `let else`, not `ok_or(Error::InvalidComm)`: that builds the error on every call and
        // drops it out of line when the queue exists (11 instructions per posted receive).
        let Some(qs) = self.core.q.ctx(ctx) else {
            return Err(Error::InvalidComm);
        };
        let found = qs.take_unexpected(src, tag);
        self.core.streaming = found.is_some();
        if let Some(u) = found {
            return self.recv_matched(u, ctx, ubuf, req, want_req);
        }
        if src_world != u32::MAX && self.core.failed.is_failed(src_world) {
            return Err(Error::ProcFailed { ranks: vec![src as u32] });
        }
        let id = self.core.reqs.insert(req(Phase::RecvPosted));
        let qs = self.core.q.ctx(ctx).expect("checked above");
        qs.posted.push_back(Posted::new(src, tag, id));
        Ok(RecvStart::Pending(id))
    }

    /// Status of the first message that a receive `(src, tag)` on `c` would match, if one
    /// has arrived; the message stays queued.
    pub fn iprobe(&mut self, c: CommId, src: i32, tag: i32) -> Result<Option<Status>> {
        check_tag(tag, true)?;
        let comm = self.core.comms.get(c)?;
        if src != ANY_SOURCE && !(src >= 0 && (src as u32) < comm.size()) {
            return Err(Error::InvalidRank { rank: src as i64, size: comm.size() });
        }
        let (ctx, src_world) = (comm.ctx, if src >= 0 { comm.world_of[src as usize] } else { u32::MAX });
        self.progress();
        // Like a receive posted now: a revoked communicator, or a failure its error scope
        // raises, fails the probe even when a matching message is queued.
        let comm = self.core.comms.get(c)?;
        if comm.revoked {
            return Err(Error::Revoked);
        }
        if self.core.failed.any() && comm.scope != ErrScope::Local {
            self.core.scope_check(comm)?;
        }
        let Some(qs) = self.core.q.ctx(ctx) else {
            return Err(Error::InvalidComm);
        };
        if let Some(u) = qs.peek_unexpected(src, tag) {
            return Ok(Some(user_status(u.src, u.tag, u.data.len())));
        }
        if src_world != u32::MAX && self.core.failed.is_failed(src_world) {
            return Err(Error::ProcFailed { ranks: vec![src as u32] });
        }
        if src == ANY_SOURCE && self.core.failed.any() && self.unacked_failure(c) {
            return Err(Error::ProcFailedPending);
        }
        Ok(None)
    }

    /// Block until a message that a receive `(src, tag)` on `c` would match has arrived.
    /// Ends like a blocking receive when none can come: [`Error::Revoked`] once `c` is
    /// revoked, [`Error::ProcFailed`] when `src` failed, or, for [`ANY_SOURCE`], when a
    /// process of `c` failed and is not acknowledged (the ranks not acknowledged; a blocking
    /// call does not report the pending form).
    pub fn probe(&mut self, c: CommId, src: i32, tag: i32) -> Result<Status> {
        let mut spins = 0;
        loop {
            match self.iprobe(c, src, tag) {
                Ok(Some(st)) => return Ok(st),
                Ok(None) => self.idle_wait(&mut spins),
                Err(Error::ProcFailedPending) => return Err(self.blocking_failure(c)),
                Err(e) => return Err(e),
            }
        }
    }

    /// The error a blocking wildcard call on `c` ends with when a failure is not acknowledged:
    /// [`Error::ProcFailed`] with the failed ranks of `c` not acknowledged.
    fn blocking_failure(&self, c: CommId) -> Error {
        match self.core.comms.get(c) {
            Ok(comm) => {
                let list = &self.core.failed.list;
                let unacked = &list[comm.acked.min(list.len())..];
                Error::ProcFailed { ranks: unacked.iter().filter_map(|&w| comm.rank_of_world(w)).collect() }
            }
            Err(e) => e,
        }
    }

    /// Receive `u`, a message already taken out of context `ctx`'s unexpected queue, into
    /// `ubuf`: eager data is copied now, a rendezvous offer starts its read. `req` builds the
    /// request from its phase. With `want_req` false an eager message returns its status (or
    /// error) without allocating a request.
    #[inline(always)]
    fn recv_matched(
        &mut self,
        u: Unexpected,
        ctx: u32,
        ubuf: UserBuf,
        req: impl FnOnce(Phase) -> Req,
        want_req: bool,
    ) -> Result<RecvStart> {
        let status = user_status(u.src, u.tag, u.data.len());
        match u.data {
            Arrived::Eager(data) => {
                ubuf.fill(&data);
                self.core.recycle_buf(data);
                let res = Core::recv_result(status, ubuf.len());
                if !want_req {
                    return res.map(RecvStart::Done);
                }
                Ok(RecvStart::Pending(self.core.reqs.insert(req(Phase::Done(res)))))
            }
            Arrived::Rts { sreq, key, len } => {
                let id = self.core.reqs.insert(req(Phase::RecvPosted));
                self.core.aux = true;
                self.core.rndv_todo.push(RndvTodo {
                    req: id,
                    peer_world: u.src_world,
                    sreq,
                    ctx,
                    key,
                    len: len as usize,
                    status,
                });
                self.run_rndv();
                Ok(RecvStart::Pending(id))
            }
        }
    }

    /// Matched probe (`MPI_Improbe`): take the first message that a receive `(src, tag)` on
    /// `c` would match out of the matching queue, if one has arrived. No later receive or
    /// probe can match it; only [`Engine::imrecv`] with the returned handle receives it.
    pub fn improbe(&mut self, c: CommId, src: i32, tag: i32) -> Result<Option<Message>> {
        if self.iprobe(c, src, tag)?.is_none() {
            return Ok(None);
        }
        let ctx = self.core.comms.get(c)?.ctx;
        let Some(qs) = self.core.q.ctx(ctx) else {
            return Err(Error::InvalidComm);
        };
        Ok(qs.take_unexpected(src, tag).map(|u| Message { comm: c, ctx, u }))
    }

    /// Receive a message taken by [`Engine::improbe`] into `buf` (`MPI_Imrecv`); the request
    /// completes when the data is there (at once for an eager message).
    ///
    /// # Safety
    /// As [`Engine::irecv`].
    pub unsafe fn imrecv(&mut self, m: Message, buf: *mut u8, len: usize) -> Result<ReqId> {
        if buf.is_null() && len > 0 {
            return Err(Error::InvalidArg("null receive buffer with nonzero length".into()));
        }
        self.core.comms.get(m.comm)?;
        // SAFETY: the caller guarantees buf/len validity until the request completes.
        let ubuf = unsafe { UserBuf::new(buf, len) };
        let (comm, peer_world, peer, tag) = (m.comm, m.u.src_world, m.u.src as i32, m.u.tag);
        let req = |phase| Req { comm, peer_world, peer, tag, buf: ubuf, is_send: false, phase };
        self.recv_matched(m.u, m.ctx, ubuf, req, true).map(RecvStart::pending)
    }
}

/// A message taken out of matching by [`Engine::improbe`], waiting for [`Engine::imrecv`].
/// Dropping it discards the message (a rendezvous sender then never completes).
#[derive(Debug)]
pub struct Message {
    comm: CommId,
    ctx: u32,
    u: Unexpected,
}

impl Message {
    /// The message's status: source, tag and byte count.
    pub fn status(&self) -> Status {
        user_status(self.u.src, self.u.tag, self.u.data.len())
    }
}

impl Core {
    pub(crate) fn recv_result(status: Status, capacity: usize) -> Result<Status> {
        if status.count > capacity {
            Err(Error::Truncated { incoming: status.count, capacity, sender: status.source, tag: status.tag })
        } else {
            Ok(status)
        }
    }

    /// Return a buffer from [`pooled_copy`] to the pool (bounded: at most
    /// [`BUF_POOL_MAX`] buffers of at most [`BUF_POOL_CAP`] bytes are kept).
    #[inline]
    pub(crate) fn recycle_buf(&mut self, mut b: Vec<u8>) {
        if self.buf_pool.len() < BUF_POOL_MAX && b.capacity() <= BUF_POOL_CAP {
            b.clear();
            self.buf_pool.push(b);
        }
    }

    /// Handle one message off the wire. Never panics on malformed input: it is counted and
    /// dropped. Returns `true` when the poll should stop after this message, so that whoever
    /// waits for it sees it at once: it completed (or advanced) the request a blocking
    /// [`Engine::wait`] waits for, or it is control traffic. A control message (a revoke, a
    /// failure notice, an agreement step) is dispatched to its upper layer right after the
    /// poll, before the transport reads the next record: on a shared-memory ring that read is
    /// a cache-line transfer from the sender's core, which would delay a revoke's delivery
    /// (and a blocking agreement's next step) by a transfer each. Messages already read keep
    /// their order; what follows the control message in any ring is read by the next poll.
    #[inline]
    pub(crate) fn on_message(&mut self, peer: u32, h: &Header, payload: &[u8]) -> bool {
        match h.class {
            class::EAGER => {
                if payload.len() as u64 != h.len {
                    self.malformed(peer, "eager length mismatch");
                    return false;
                }
                self.arrive(peer, h, None, payload)
            }
            class::RTS => {
                if payload.len() != RTS_BODY {
                    self.malformed(peer, "RTS body size");
                    return false;
                }
                let sreq = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
                let mut key = [0u8; std::mem::size_of::<RKey>()];
                key.copy_from_slice(&payload[8..]);
                self.arrive(peer, h, Some((sreq, key)), &[])
            }
            class::FIN => {
                self.on_fin(peer, h);
                self.awaited == Some(ReqId::from_raw(h.len))
            }
            class::CTS => {
                self.on_cts(peer, h, payload);
                false
            }
            class::PUT_DONE => {
                self.on_put_done(peer, h);
                self.awaited == Some(ReqId::from_raw(h.len))
            }
            class::BYE => {
                self.on_bye(peer);
                false
            }
            class::BYE_ACK => {
                self.confirmed[peer as usize] = true;
                false
            }
            c if c >= class::FIRST_FREE => {
                if self.failed.is_failed(peer) {
                    self.stats.dropped_from_failed += 1;
                    return false;
                }
                let b = pooled_copy(&mut self.buf_pool, payload);
                self.ctrl_inbox.push((peer, *h, b));
                self.aux = true;
                true
            }
            _ => {
                self.malformed(peer, "unknown message class");
                false
            }
        }
    }

    /// Match an arrived message (eager data or a rendezvous offer); `true` if it matched the
    /// posted receive [`Core::awaited`] names (and the poll should stop there).
    #[inline]
    fn arrive(&mut self, peer: u32, h: &Header, rts: Option<(u64, RKey)>, payload: &[u8]) -> bool {
        // A process declared failed is failed for good (fail-stop): whatever it sends after
        // the declaration — a frozen process that resumes — is dropped. What it sent before
        // was drained before the declaration (see `slow_path`).
        if self.failed.is_failed(peer) {
            self.stats.dropped_from_failed += 1;
            return false;
        }
        let Some(qs) = self.q.ctx(h.ctx) else {
            self.malformed(peer, "context id out of range");
            return false;
        };
        if qs.retired {
            return false;
        }
        if let Some(cid) = qs.comm {
            // Known communicator: the claimed source must be the peer that sent it.
            match self.comms.get(cid) {
                Ok(c) if c.world_of.get(h.src as usize) == Some(&peer) => {}
                _ => {
                    self.malformed(peer, "source rank does not match sender");
                    return false;
                }
            }
        }
        let status = user_status(h.src, h.tag, h.len as usize);
        if let Some(id) = qs.take_posted(h.src, h.tag) {
            match rts {
                None => {
                    let Some(r) = self.reqs.get_mut(id) else {
                        return false;
                    };
                    r.buf.fill(payload);
                    r.phase = Phase::Done(Core::recv_result(status, r.buf.len()));
                }
                Some((sreq, key)) => {
                    self.aux = true;
                    self.rndv_todo.push(RndvTodo {
                        req: id,
                        peer_world: peer,
                        sreq,
                        ctx: h.ctx,
                        key,
                        len: h.len as usize,
                        status,
                    });
                }
            }
            return self.awaited == Some(id) && self.stop_at_awaited();
        }
        self.stats.unexpected += 1;
        let data = match rts {
            None => Arrived::Eager(pooled_copy(&mut self.buf_pool, payload)),
            Some((sreq, key)) => Arrived::Rts { sreq, key, len: h.len },
        };
        qs.unexpected.push_back(Unexpected { src: h.src, src_world: peer, tag: h.tag, data });
        false
    }

    /// Whether the poll stops after the message that completed the awaited request: not
    /// while messages stream in, nor on one completion in [`PROBE_EVERY`].
    #[inline]
    fn stop_at_awaited(&mut self) -> bool {
        if self.streaming {
            return false;
        }
        self.probe += 1;
        if self.probe < PROBE_EVERY {
            return true;
        }
        self.probe = 0;
        false
    }
}
