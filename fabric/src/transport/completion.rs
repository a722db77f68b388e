//! The completion queue and the receive ring it feeds: posting a receive buffer
//! (`post_recv`), reading every available completion (`drain_cq`, which also drives the
//! provider's manual progress) and dispatching each, or each error entry, to the slot its
//! context names: a receive is marked done or failed, a pool send returns its buffer (a
//! failed one marks the peer dead), a read is counted (`read.rs`).
//!
//! Calls `read.rs` and `failure.rs`. Called by `connection.rs` (the first receives),
//! `eager.rs`, `rndv.rs` and `api.rs`.

use std::ffi::c_void;
use std::ptr;

use weft_engine::transport::TransportError;
use weft_fabric_sys as sys;

use super::state::{OfiTransport, OpCtx, RxState, KIND_RD, KIND_RX, KIND_TX};
use crate::data::{CqEntry, CqErrEntry};
use crate::error::{is_connection_loss, strerror};

/// CQ entries read per `fi_cq_read`.
const CQ_BATCH: usize = 32;

impl OfiTransport {
    /// Post receive slot `slot` (any source, any tag); on success it joins the end of the
    /// delivery order. The `fi_trecv` return value (`-FI_EAGAIN`: the caller retries later).
    pub(super) fn post_recv(&mut self, slot: u32) -> isize {
        let i = slot as usize;
        let desc = self.rx_mr.as_ref().map_or(ptr::null_mut(), |m| m.desc());
        // SAFETY: slot `i` lies inside rx_buf (stride bytes), which outlives the endpoint;
        // the slot is not posted elsewhere and is only read after its completion. Its context
        // lives in rx_ctx (boxed, never moved or freed before the endpoint is closed).
        let ret = unsafe {
            let buf = self.rx_buf.as_mut_ptr().add(i * self.stride);
            let ctx = &mut self.rx_ctx[i] as *mut OpCtx as *mut c_void;
            self.ep.trecv_any(buf, self.stride, desc, ctx)
        };
        if ret == 0 {
            self.rx_state[i] = RxState::Posted;
            self.rx_order.push_back(slot);
        } else {
            self.rx_state[i] = RxState::Unposted;
        }
        ret
    }

    /// Read every available completion (this also drives the provider's manual progress).
    pub(super) fn drain_cq(&mut self) -> usize {
        let mut ents = [CqEntry::default(); CQ_BATCH];
        let mut n = 0;
        loop {
            let got = self.cq.read(&mut ents);
            if got > 0 {
                for e in &ents[..got as usize] {
                    self.on_completion(e.op_context, e.len, e.tag);
                }
                n += got as usize;
                if (got as usize) < CQ_BATCH {
                    break;
                }
            } else if got == -(sys::FI_EAVAIL as isize) {
                match self.cq.read_err() {
                    Some(err) => {
                        self.on_cq_error(&err);
                        n += 1;
                    }
                    None => break,
                }
            } else {
                if got != -(sys::FI_EAGAIN as isize) {
                    self.stats.cq_errors += 1;
                    self.stats.last_cq_error = Some(format!("fi_cq_read: {}", strerror(got)));
                }
                break;
            }
        }
        n
    }

    /// Kind and index of an operation context we posted.
    fn ctx_of(&self, ctx: *mut c_void) -> Option<(u32, usize)> {
        if ctx.is_null() {
            return None;
        }
        // SAFETY: every context handed to libfabric points to an OpCtx in tx_ctx, rx_ctx or
        // rd_ctx, all alive until after the endpoint is closed; the provider returns the
        // pointer unchanged. kind/idx are plain integers we wrote.
        let (kind, idx) = unsafe { ((*(ctx as *const OpCtx)).kind, (*(ctx as *const OpCtx)).idx as usize) };
        let ok = match kind {
            KIND_RX => idx < self.rx_ctx.len(),
            KIND_TX => idx < self.tx_ctx.len(),
            KIND_RD => idx < self.rd_ctx.len(),
            _ => false,
        };
        ok.then_some((kind, idx))
    }

    /// A completion: a receive is done, a pool send returns its buffer, a read is counted.
    fn on_completion(&mut self, ctx: *mut c_void, len: usize, tag: u64) {
        match self.ctx_of(ctx) {
            Some((KIND_RX, i)) => self.rx_state[i] = RxState::Done { len, tag },
            Some((KIND_TX, i)) => self.tx_free.push(i as u32),
            Some((KIND_RD, i)) => self.read_done(i, Ok(())),
            _ => {}
        }
    }

    /// An error entry: a receive slot is dropped and reposted by `poll`, a failed send marks
    /// its peer dead, a failed read ends its get (`PeerDead` when the connection is lost).
    fn on_cq_error(&mut self, err: &CqErrEntry) {
        let text = self.cq.strerror(err);
        self.stats.cq_errors += 1;
        self.stats.last_cq_error = Some(format!("{} (err {}, prov_errno {})", text, err.err, err.prov_errno));
        // We never cancel sends or reads (no fi_cancel; the CQ is not read after the endpoint
        // is closed), so FI_ECANCELED on them means the provider dropped the operation with its
        // connection: rxm reports a peer that went away as FI_ECANCELED, prov_errno ENOTCONN.
        let lost = is_connection_loss(err.err) || err.err == sys::FI_ECANCELED as i32;
        match self.ctx_of(err.op_context) {
            Some((KIND_RX, i)) => {
                self.rx_state[i] = RxState::Failed;
            }
            Some((KIND_TX, i)) => {
                self.tx_free.push(i as u32);
                // A reliable send that failed means the message is lost: the per-peer FIFO
                // contract is broken from here on, so the peer is treated as gone whatever
                // the error.
                self.mark_dead(self.tx_peer[i]);
            }
            Some((KIND_RD, i)) => {
                let peer = self.rd_owner[i].and_then(|t| self.gets.get(&t)).map(|g| g.peer);
                let res = match peer {
                    Some(p) if lost => {
                        self.mark_dead(p);
                        Err(TransportError::PeerDead(p))
                    }
                    _ => Err(TransportError::Call {
                        call: "fi_read",
                        msg: format!("{text} (err {}, prov_errno {})", err.err, err.prov_errno),
                    }),
                };
                self.read_done(i, res);
            }
            _ => {}
        }
    }
}
