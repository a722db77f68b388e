//! The split rendezvous: for messages of at least the transport's `split_limit` (shared
//! memory, whose cross-memory attach can both read and write a peer's memory), the receiver
//! and the sender each copy half, on their own cores, where the plain rendezvous leaves the
//! whole copy to the receiver while the sender waits for its FIN. Only when the sender has
//! a core to lend: a receiver that has rendezvous sends of its own waiting for that peer's
//! reads (traffic both ways, a bidirectional exchange) reads itself, until the FINs of
//! those sends arrive (it polls for them before each such decision): from then on the peer
//! has read everything and waits, and the rest of the receiver's batch is split with it.
//!
//! Receiver, when an RTS matches: expose the tail of its buffer, send CTS (sender request,
//! receiver request, tail key, tail offset), read the head with `get`, then wait in
//! `RecvAwaitPut`. Sender, on CTS: write the tail from its buffer with `put` and answer
//! PUT_DONE (flag 1 if it did not write: its send was given up on a revocation, or the write
//! failed). Receiver, on PUT_DONE: complete the receive, withdraw the exposure, send FIN; the
//! FIN completes the send as in the plain rendezvous. The sender's buffer is thus read by both
//! sides only before the FIN, and the receiver's buffer is written by the sender only before
//! its PUT_DONE, which the receive waits for whatever happened to the head; if the sender
//! dies instead, the receive fails with `ProcFailed` (a dead process writes nothing more).

use crate::buffer::UserBuf;
use crate::engine::Core;
use crate::error::Error;
use crate::pending::{Awaiting, Body, CtsTodo, Outgoing, RndvTodo, RTS_BODY};
use crate::request::{Phase, Req, ReqId};
use crate::transport::{class, Header, RKey, TransportError};
use crate::Engine;

/// The split's granularity: the tail starts on a multiple of it (the CTS carries the offset
/// in these units).
const PAGE: usize = 4096;

impl Engine {
    /// Start a matched rendezvous as a split one if transport `t` splits messages of this
    /// size (and the receive buffer holds the whole message); otherwise give `todo` back for a
    /// plain read.
    pub(crate) fn start_split(&mut self, todo: RndvTodo, buf: UserBuf, t: usize) -> Result<(), RndvTodo> {
        let n = todo.len;
        if n < self.transports[t].split_limit() || n > buf.len() || n < 2 * PAGE {
            return Err(todo);
        }
        // A peer that is itself waiting for this process to read a rendezvous of its own
        // (traffic both ways) has no idle core to lend: its tail write would queue behind
        // its own reads and delay this receive. The scan costs well under the copy it decides.
        let peer = todo.peer_world;
        let busy =
            |r: &Req| r.is_send && r.peer_world == peer && matches!(r.phase, Phase::SendAwaitFin { .. });
        if self.core.reqs.any(busy) {
            // The FINs of those sends may be waiting in the ring already: a peer that has
            // read everything this process sent it waits with an idle core while this process
            // still reads a batch of its messages (the end of a window both ways, where the
            // slower side would otherwise copy the rest alone). Take them in and decide again.
            self.poll_one(t);
            if self.core.reqs.any(busy) {
                return Err(todo);
            }
            self.core.stats.split_late += 1;
        }
        let offset = (n / 2) & !(PAGE - 1);
        // SAFETY: offset < n ≤ buf.len(), inside the receive buffer.
        let tail = unsafe { buf.ptr().add(offset) };
        let Ok(rkey) = self.transports[t].expose(todo.peer_world, tail, n - offset) else {
            return Err(todo);
        };
        let mut body = [0u8; RTS_BODY];
        body[..8].copy_from_slice(&todo.req.to_raw().to_le_bytes());
        body[8..].copy_from_slice(&rkey);
        let hdr = Header {
            class: class::CTS,
            flags: 0,
            reserved: 0,
            ctx: todo.ctx,
            src: (offset / PAGE) as u32,
            tag: 0,
            len: todo.sreq,
        };
        self.send_or_queue(
            t,
            todo.peer_world,
            Outgoing { hdr, body: Body::Inline(body, RTS_BODY as u8), complete: None },
        );
        // SAFETY: the receive request owns `buf` (valid for writes of n bytes) until it
        // completes, which waits for the PUT_DONE; the sender writes only [offset, n).
        let head = unsafe { self.transports[t].get(todo.peer_world, &todo.key, buf.ptr(), offset) };
        let head = match head {
            Ok(crate::transport::GetStatus::Done) => Ok(()),
            // A splitting transport reads synchronously (`Transport::split_limit`).
            Ok(crate::transport::GetStatus::Pending(_)) => Err(Error::Transport(TransportError::Invalid(
                "asynchronous read in a split rendezvous".into(),
            ))),
            Err(e) => Err(self.core.read_err(e, todo.status.source)),
        };
        // A CTS that found the sender dead completed the receive with its failure already
        // (the send reports it at once): nothing will write the tail then.
        let failed = |r: &Req| matches!(r.phase, Phase::Done(_));
        if self.core.reqs.get(todo.req).is_none_or(failed) {
            self.core.unexpose_todo.push((todo.peer_world, rkey));
            self.core.aux = true;
            return Ok(());
        }
        if let Some(r) = self.core.reqs.get_mut(todo.req) {
            r.phase = Phase::RecvAwaitPut { peer: todo.peer_world };
            self.core.split.awaiting.push(Awaiting {
                req: todo.req,
                status: todo.status,
                key: rkey,
                head,
                sreq: todo.sreq,
                ctx: todo.ctx,
            });
        }
        Ok(())
    }

    /// Deliver what transport `t` has received (at most one poll's budget), in the middle of
    /// other work: the messages only change requests' phases and queue work for after.
    fn poll_one(&mut self, t: usize) {
        let core = &mut self.core;
        self.transports[t].poll_until(64, &mut |peer, h, p| core.on_message(peer, h, p));
    }

    /// Serve the CTS messages (write the tails) and send the FINs of completed split receives.
    pub(crate) fn run_split(&mut self) -> usize {
        let mut n = 0;
        for c in std::mem::take(&mut self.core.split.cts) {
            n += 1;
            let t = self.core.route[c.peer as usize] as usize;
            if t >= self.transports.len() {
                continue; // The peer is gone: its receive no longer waits.
            }
            let sid = ReqId::from_raw(c.sreq);
            let src =
                match self.core.reqs.get(sid) {
                    Some(Req {
                        is_send: true, peer_world, phase: Phase::SendAwaitFin { .. }, buf, ..
                    }) if *peer_world == c.peer && c.offset < buf.len() => Some(*buf),
                    _ => None,
                };
            let written = src.is_some_and(|b| {
                // SAFETY: the send request owns `b` (valid for reads) until its FIN, which the
                // receiver sends only after this write's PUT_DONE.
                let r = unsafe {
                    self.transports[t].put(c.peer, &c.key, b.ptr().add(c.offset), b.len() - c.offset)
                };
                r.is_ok()
            });
            if !written {
                self.core.stats.split_put_refused += 1;
            }
            let hdr = Header {
                class: class::PUT_DONE,
                flags: u8::from(!written),
                reserved: 0,
                ctx: c.ctx,
                src: 0,
                tag: 0,
                len: c.rreq,
            };
            self.send_or_queue(
                t,
                c.peer,
                Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None },
            );
        }
        for (peer, ctx, sreq) in std::mem::take(&mut self.core.split.fins) {
            n += 1;
            let t = self.core.route[peer as usize] as usize;
            if t < self.transports.len() {
                self.send_fin(t, peer, ctx, sreq);
            }
        }
        n
    }
}

impl Core {
    /// A CTS arrived (sender side): queue the tail write for after the poll.
    pub(crate) fn on_cts(&mut self, peer: u32, h: &Header, payload: &[u8]) {
        if payload.len() != RTS_BODY {
            self.malformed(peer, "CTS body size");
            return;
        }
        let rreq = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
        let mut key = [0u8; std::mem::size_of::<RKey>()];
        key.copy_from_slice(&payload[8..]);
        let offset = h.src as usize * PAGE;
        self.split.cts.push(CtsTodo { peer, ctx: h.ctx, sreq: h.len, rreq, key, offset });
        self.aux = true;
    }

    /// A PUT_DONE arrived (receiver side): complete the split receive, withdraw its exposure
    /// and owe the sender its FIN.
    pub(crate) fn on_put_done(&mut self, peer: u32, h: &Header) {
        let id = ReqId::from_raw(h.len);
        let Some(r) = self.reqs.get_mut(id) else {
            self.malformed(peer, "PUT_DONE for no split receive");
            return;
        };
        let cap = r.buf.len();
        let Phase::RecvAwaitPut { peer: from } = r.phase else {
            self.malformed(peer, "PUT_DONE for no split receive");
            return;
        };
        if from != peer {
            self.malformed(peer, "PUT_DONE from another peer");
            return;
        }
        let Some(i) = self.split.awaiting.iter().position(|a| a.req == id) else {
            self.malformed(peer, "PUT_DONE for no split receive");
            return;
        };
        let Awaiting { status, key, head, sreq, ctx, .. } = self.split.awaiting.swap_remove(i);
        // The sender wrote no tail only when it gave the send up on a revocation (or its write
        // failed like a read does): the receive reports it as a failed read.
        let res = match head {
            Err(e) => Err(e),
            Ok(()) if h.flags != 0 => Err(Error::Revoked),
            Ok(()) => {
                self.stats.rndv_gets += 1;
                self.stats.split_rndv += 1;
                Core::recv_result(status, cap)
            }
        };
        self.finish(id, res);
        self.unexpose_todo.push((peer, key));
        self.split.fins.push((peer, ctx, sreq));
        self.aux = true;
    }
}
