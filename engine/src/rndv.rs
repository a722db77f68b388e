//! The rendezvous protocol for messages above the eager limit: the sender exposes its buffer
//! and sends an RTS carrying its request id and the remote key (`send.rs`); the receiver,
//! once the RTS matches a receive, reads the data straight into the user buffer with the
//! transport's `get` (at once or asynchronously) and sends a FIN back; the FIN completes the
//! send and withdraws the exposure. Large messages on a transport that can also write a
//! peer's memory split the copy between both sides (`split.rs`). A rendezvous to this process
//! itself (a synchronous send to self) is copied from the sender's request when it matches.
//! Its work items (matched offers, reads in flight) are data in `pending.rs`.

use crate::buffer::UserBuf;
use crate::engine::{user_status, Core, ROUTE_SELF};
use crate::error::Error;
use crate::pending::{Body, GetInFlight, Outgoing, RndvTodo, RTS_BODY};
use crate::request::{Phase, Req, ReqId};
use crate::transport::{class, GetStatus, Header, TransportError};
use crate::Engine;

impl Engine {
    /// Start the reads of matched RTS messages (after a poll, or when a receive matched one).
    pub(crate) fn run_rndv(&mut self) {
        while let Some(todo) = self.core.rndv_todo.pop() {
            let Some(req) = self.core.reqs.get(todo.req) else {
                continue;
            };
            let buf = req.buf;
            let comm = req.comm;
            // A revoked communicator's sender may have given its send up (below): no read.
            if self.core.comms.get(comm).is_ok_and(|c| c.revoked) {
                self.core.finish(todo.req, Err(Error::Revoked));
                continue;
            }
            let n = todo.len.min(buf.len());
            let t = self.core.route[todo.peer_world as usize];
            if t == ROUTE_SELF {
                self.self_rndv(todo, buf);
                continue;
            }
            if t as usize >= self.transports.len() {
                self.core.finish(todo.req, Err(Error::ProcFailed { ranks: vec![todo.status.source] }));
                continue;
            }
            let todo = match self.start_split(todo, buf, t as usize) {
                Ok(()) => continue,
                Err(todo) => todo,
            };
            // SAFETY: the receive request owns `buf` (valid for writes of buf.len() ≥ n bytes)
            // until it completes, and it completes only after the read is done.
            let r = unsafe { self.transports[t as usize].get(todo.peer_world, &todo.key, buf.ptr(), n) };
            match r {
                Ok(GetStatus::Done) => {
                    self.core.stats.rndv_gets += 1;
                    self.core.finish(todo.req, Core::recv_result(todo.status, buf.len()));
                    self.send_fin(t as usize, todo.peer_world, todo.ctx, todo.sreq);
                }
                Ok(GetStatus::Pending(token)) => {
                    if let Some(r) = self.core.reqs.get_mut(todo.req) {
                        r.phase = Phase::RecvGetting { status: todo.status };
                    }
                    self.core.aux = true;
                    self.core.gets.push(GetInFlight {
                        token,
                        transport: t as usize,
                        req: todo.req,
                        peer_world: todo.peer_world,
                        sreq: todo.sreq,
                        ctx: todo.ctx,
                    });
                }
                Err(e) => {
                    let err = self.core.read_err(e, todo.status.source);
                    self.core.finish(todo.req, Err(err));
                }
            }
        }
    }

    /// A matched rendezvous from this process to itself (a synchronous send): copy from the
    /// sender's request's buffer, complete the receive, then the send.
    fn self_rndv(&mut self, todo: RndvTodo, buf: UserBuf) {
        let sid = ReqId::from_raw(todo.sreq);
        let Some(src) = self.core.reqs.get(sid).filter(|r| r.is_send).map(|r| r.buf) else {
            self.core.malformed(todo.peer_world, "self rendezvous for no send");
            return;
        };
        buf.fill(src.as_slice());
        self.core.finish(todo.req, Core::recv_result(todo.status, buf.len()));
        if let Some(r) = self.core.reqs.get_mut(sid) {
            r.phase = Phase::Done(Ok(user_status(r.peer as u32, r.tag, r.buf.len())));
        }
    }

    pub(crate) fn send_fin(&mut self, t: usize, w: u32, ctx: u32, sreq: u64) {
        let hdr = Header { class: class::FIN, flags: 0, reserved: 0, ctx, src: 0, tag: 0, len: sreq };
        self.send_or_queue(t, w, Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None });
    }

    pub(crate) fn poll_gets(&mut self) -> usize {
        let mut done = Vec::new();
        let mut n = 0;
        for t in 0..self.transports.len() {
            self.transports[t].poll_gets(&mut done);
            for (token, res) in done.drain(..) {
                let Some(i) = self.core.gets.iter().position(|g| g.token == token && g.transport == t) else {
                    continue;
                };
                let g = self.core.gets.swap_remove(i);
                n += 1;
                let Some(Req { phase: Phase::RecvGetting { status, .. }, buf, .. }) =
                    self.core.reqs.get(g.req)
                else {
                    continue;
                };
                let (status, cap) = (*status, buf.len());
                match res {
                    Ok(()) => {
                        self.core.stats.rndv_gets += 1;
                        self.core.finish(g.req, Core::recv_result(status, cap));
                        self.send_fin(t, g.peer_world, g.ctx, g.sreq);
                    }
                    Err(e) => {
                        let err = self.core.read_err(e, status.source);
                        self.core.finish(g.req, Err(err));
                    }
                }
            }
        }
        n
    }

    /// Withdraw the exposures whose FIN arrived in the last poll.
    pub(crate) fn withdraw_exposures(&mut self) {
        for (w, key) in std::mem::take(&mut self.core.unexpose_todo) {
            let t = self.core.route[w as usize] as usize;
            if let Some(t) = self.transports.get_mut(t) {
                t.unexpose(w, &key);
            }
        }
    }
}

impl Core {
    /// The error of a failed rendezvous read from world rank `w`'s exposure. Besides the
    /// sender's death, a read call fails only when the sender's buffer is gone, and a sender gives a
    /// rendezvous send up before the FIN only when its communicator is revoked
    /// (`fail_comm_requests`); the revocation reaches this process after the read, so the
    /// receive reports `Revoked` (a revoke racing a read may also let the read see data the
    /// sender's application already reused; the communicator is revoked either way).
    pub(crate) fn read_err(&self, e: TransportError, w: u32) -> Error {
        match e {
            TransportError::Call { .. } => Error::Revoked,
            e => self.tx_err(e, w),
        }
    }

    pub(crate) fn on_fin(&mut self, peer: u32, h: &Header) {
        let id = ReqId::from_raw(h.len);
        match self.reqs.get_mut(id) {
            Some(r) if r.is_send && r.peer_world == peer && matches!(r.phase, Phase::SendAwaitFin { .. }) => {
                if let Phase::SendAwaitFin { key } = r.phase {
                    self.unexpose_todo.push((peer, key));
                    self.aux = true;
                }
                let st = user_status(r.peer as u32, r.tag, r.buf.len());
                r.phase = Phase::Done(Ok(st));
            }
            _ => self.malformed(peer, "FIN for no rendezvous send"),
        }
    }
}
