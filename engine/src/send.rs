//! The send path: eager sends straight to the transport or into the per-destination FIFO
//! queue when the transport is full, the start of a rendezvous (expose, RTS), synchronous
//! sends (always a rendezvous), and the flush of those queues on progress. Owns the queue
//! discipline (the queued messages themselves are data, in `pending.rs`): a message to a peer
//! never overtakes an earlier one to the same peer.
//!
//! A blocking send is two calls here: [`Engine::send`] (inlined into its caller) →
//! `isend_ctx` (arguments checked once, route looked up) → the transport's `try_send`, handed
//! the header and the caller's bytes; the transport needs nothing else from the engine.

use crate::buffer::UserBuf;
use crate::comm::ErrScope;
use crate::engine::{check_tag, user_status, Core, ROUTE_NONE, ROUTE_SELF};
use crate::error::{Error, Result};
use crate::pending::{Body, Outgoing, RTS_BODY};
use crate::request::{Phase, Req, ReqId};
use crate::stats::Origin;
use crate::transport::{class, Header, RKey, TransportError};
use crate::{CommId, Engine, Status};

impl Engine {
    /// Blocking send of `buf` to rank `dst` of `c` with `tag`. Inline: a call of its own in
    /// front of `isend_ctx` is a frame on the path of every blocking send.
    #[inline]
    pub fn send(&mut self, c: CommId, buf: &[u8], dst: u32, tag: i32) -> Result<()> {
        // SAFETY: `buf` is borrowed for the whole call and the request is waited for before
        // returning, so the engine never touches it after this function returns.
        let id = unsafe { self.isend_ctx(c, 0, buf.as_ptr(), buf.len(), dst, tag, false)? };
        match id {
            None => Ok(()),
            Some(id) => self.wait(id).map(|_| ()),
        }
    }

    /// Start a send; the request completes when `buf` may be reused.
    ///
    /// # Safety
    /// `buf` must stay valid for reads of `len` bytes, and must not be written, until the
    /// request has completed (test/wait returned it).
    pub unsafe fn isend(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.isend_ctx(c, 0, buf, len, dst, tag, true) }.map(|r| r.expect("req forced"))
    }

    /// The send path. `coll` selects the internal context (`ctx + 1`). With `want_req` false
    /// an eager send that completes at once returns `None` (no request allocated).
    ///
    /// # Safety
    /// As [`Engine::isend`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn isend_ctx(
        &mut self,
        c: CommId,
        coll: u32,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
        want_req: bool,
    ) -> Result<Option<ReqId>> {
        let (w, ctx, src) = self.send_target(c, buf, len, dst, tag)?;
        let hdr =
            Header { class: class::EAGER, flags: 0, reserved: 0, ctx: ctx + coll, src, tag, len: len as u64 };
        // SAFETY: the caller guarantees buf/len validity until the request completes.
        let ubuf = unsafe { UserBuf::new(buf as *mut u8, len) };
        let status = user_status(dst, tag, len);
        let route = self.core.route[w as usize];
        if route == ROUTE_SELF {
            self.core.stats.sent_self += 1;
            self.core.on_message(w, &hdr, ubuf.as_slice());
            return Ok(self.done_req(want_req, c, w, dst, tag, status));
        }
        if route == ROUTE_NONE {
            return Err(Error::Transport(TransportError::Invalid(format!(
                "no transport reaches world rank {w}"
            ))));
        }
        let t = route as usize;
        if len <= self.eager[t] {
            if self.core.pending[w as usize].is_empty()
                && self.transports[t]
                    .try_send(w, &hdr, ubuf.as_slice())
                    .map_err(|e| self.core.tx_err(e, dst))?
            {
                self.core.stats.sent_by_transport[t] += 1;
                return Ok(self.done_req(want_req, c, w, dst, tag, status));
            }
            let id = self.core.reqs.insert(Req {
                comm: c,
                peer_world: w,
                peer: dst as i32,
                tag,
                buf: ubuf,
                is_send: true,
                phase: Phase::SendQueued,
            });
            self.core.enqueue(w, Outgoing { hdr, body: Body::User(ubuf), complete: Some(id) });
            return Ok(Some(id));
        }
        // SAFETY: forwarded contract.
        unsafe { self.start_rndv(c, t, w, dst, hdr, buf, len) }.map(Some)
    }

    /// Start a synchronous send (`MPI_Issend`): the request completes only once the receiver
    /// has matched the message. It always takes the rendezvous path, whose completion (the
    /// receiver's FIN, sent after it matched and read the data) already says so; a send to
    /// this process is read straight from the sender's request when it matches
    /// ([`Engine::run_rndv`]).
    ///
    /// # Safety
    /// As [`Engine::isend`].
    pub unsafe fn issend(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<ReqId> {
        let (w, ctx, src) = self.send_target(c, buf, len, dst, tag)?;
        let hdr = Header { class: class::EAGER, flags: 0, reserved: 0, ctx, src, tag, len: len as u64 };
        let route = self.core.route[w as usize];
        if route == ROUTE_NONE {
            return Err(Error::Transport(TransportError::Invalid(format!(
                "no transport reaches world rank {w}"
            ))));
        }
        if route == ROUTE_SELF {
            // SAFETY: the caller guarantees buf/len validity until the request completes.
            let ubuf = unsafe { UserBuf::new(buf as *mut u8, len) };
            let id = self.core.reqs.insert(Req {
                comm: c,
                peer_world: w,
                peer: dst as i32,
                tag,
                buf: ubuf,
                is_send: true,
                phase: Phase::SendAwaitFin { key: [0; std::mem::size_of::<RKey>()] },
            });
            let mut body = [0u8; RTS_BODY];
            body[..8].copy_from_slice(&id.to_raw().to_le_bytes());
            self.core.stats.sent_self += 1;
            self.core.on_message(w, &Header { class: class::RTS, ..hdr }, &body);
            return Ok(id);
        }
        // SAFETY: forwarded contract.
        unsafe { self.start_rndv(c, route as usize, w, dst, hdr, buf, len) }
    }

    /// Check a send's arguments: the destination's world rank, the communicator's context id
    /// and this process's rank in it. The caller builds the (eager) header in place: a header
    /// returned inside the `Result` was copied twice on the stack on every send.
    #[inline(always)]
    fn send_target(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<(u32, u32, u32)> {
        if buf.is_null() && len > 0 {
            return Err(Error::InvalidArg("null send buffer with nonzero length".into()));
        }
        check_tag(tag, false)?;
        let comm = self.core.comms.get(c)?;
        if comm.revoked {
            return Err(Error::Revoked);
        }
        let w = comm.world_dest(dst)?;
        if self.core.failed.any() && comm.scope != ErrScope::Local {
            self.core.scope_check(comm)?;
        }
        if self.core.failed.is_failed(w) {
            return Err(Error::ProcFailed { ranks: vec![dst] });
        }
        Ok((w, comm.ctx, comm.rank))
    }

    /// Rendezvous through transport `t`: expose the buffer, send an RTS carrying our request
    /// id and the key; the request completes on the receiver's FIN.
    ///
    /// # Safety
    /// As [`Engine::isend`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn start_rndv(
        &mut self,
        c: CommId,
        t: usize,
        w: u32,
        dst: u32,
        hdr: Header,
        buf: *const u8,
        len: usize,
    ) -> Result<ReqId> {
        let key = self.transports[t].expose(w, buf, len)?;
        // SAFETY: the caller guarantees buf/len validity until the request completes.
        let ubuf = unsafe { UserBuf::new(buf as *mut u8, len) };
        let id = self.core.reqs.insert(Req {
            comm: c,
            peer_world: w,
            peer: dst as i32,
            tag: hdr.tag,
            buf: ubuf,
            is_send: true,
            phase: Phase::SendAwaitFin { key },
        });
        let mut body = [0u8; RTS_BODY];
        body[..8].copy_from_slice(&id.to_raw().to_le_bytes());
        body[8..].copy_from_slice(&key);
        let hdr = Header { class: class::RTS, ..hdr };
        let out = Outgoing { hdr, body: Body::Inline(body, RTS_BODY as u8), complete: None };
        self.send_or_queue(t, w, out);
        Ok(id)
    }

    /// The request of a send that completed at once, if the caller wants one.
    #[inline(always)]
    fn done_req(
        &mut self,
        want_req: bool,
        c: CommId,
        w: u32,
        peer: u32,
        tag: i32,
        st: Status,
    ) -> Option<ReqId> {
        if !want_req {
            return None;
        }
        Some(self.core.reqs.insert(Req {
            comm: c,
            peer_world: w,
            peer: peer as i32,
            tag,
            buf: UserBuf::EMPTY,
            is_send: true,
            phase: Phase::Done(Ok(st)),
        }))
    }

    /// Send now if nothing is queued ahead for `w`. True if the message is gone: sent, or
    /// the peer is dead (the failure sweep completes what waited on it).
    #[inline]
    fn try_send_now(&mut self, t: usize, w: u32, hdr: &Header, bytes: &[u8]) -> bool {
        if !self.core.pending[w as usize].is_empty() {
            return false;
        }
        match self.transports[t].try_send(w, hdr, bytes) {
            Ok(true) => {
                self.core.stats.sent_by_transport[t] += 1;
                true
            }
            Ok(false) => false,
            Err(_) => {
                self.notify_failed_from(w, Origin::Transport(t));
                true
            }
        }
    }

    /// As [`Engine::send_or_queue`] for a borrowed payload: sent straight from `payload`
    /// when nothing is queued ahead, copied only to be queued.
    pub(crate) fn send_bytes_or_queue(&mut self, t: usize, w: u32, hdr: Header, payload: &[u8]) {
        if !self.try_send_now(t, w, &hdr, payload) {
            self.core.enqueue(w, Outgoing { hdr, body: Body::Owned(payload.to_vec()), complete: None });
        }
    }

    /// Send a header-only or inline message now if possible, else queue it behind earlier ones.
    pub(crate) fn send_or_queue(&mut self, t: usize, w: u32, out: Outgoing) {
        if !self.try_send_now(t, w, &out.hdr, out.body.bytes()) {
            self.core.enqueue(w, out);
        }
    }

    pub(crate) fn flush_pending(&mut self) -> usize {
        let mut sent = 0;
        for w in 0..self.core.pending.len() {
            while let Some(out) = self.core.pending[w].front() {
                let t = self.core.route[w] as usize;
                match self.transports[t].try_send(w as u32, &out.hdr, out.body.bytes()) {
                    Ok(true) => {
                        self.core.stats.sent_by_transport[t] += 1;
                        let out = self.core.pending[w].pop_front().expect("front exists");
                        self.core.n_pending -= 1;
                        sent += 1;
                        if let Some(id) = out.complete {
                            let st = user_status(out.hdr.src, out.hdr.tag, out.hdr.len as usize);
                            let dst = self.core.reqs.get(id).map_or(0, |r| r.peer as u32);
                            self.core.finish(id, Ok(Status { source: dst, ..st }));
                        }
                    }
                    Ok(false) => break,
                    Err(_) => {
                        self.notify_failed_from(w as u32, Origin::Transport(t));
                        break;
                    }
                }
            }
            if self.core.n_pending == 0 {
                break;
            }
        }
        sent
    }
}

impl Core {
    fn enqueue(&mut self, w: u32, out: Outgoing) {
        self.pending[w as usize].push_back(out);
        self.n_pending += 1;
        self.aux = true;
    }
}
