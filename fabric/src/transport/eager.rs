//! Eager messages both ways, the engine's `try_send` and `poll` (`api.rs`) and so the hot
//! path: the send (`eager_send`: `fi_tinject` from a stack buffer up to `inject_size`,
//! otherwise a copy into a send-pool buffer and `fi_tsend`) and the delivery of received
//! messages (`eager_poll`: receive slots in the order they were posted, each reposted once
//! read; wire-up messages dropped). Both are `#[inline]`, so the trait method is their body.
//!
//! Calls `completion.rs` (reading the CQ when the pool or the provider is full; reposting
//! receives), `connection.rs` (pending wire-up messages) and `failure.rs`.

use std::ffi::c_void;
use std::ptr;

use weft_engine::transport::{Header, TransportError};
use weft_fabric_sys as sys;

use super::state::{OfiTransport, OpCtx, RxState, INJECT_BUF};
use super::wire::WIREUP_TAG;

impl OfiTransport {
    /// The engine's `try_send`: send `[hdr][payload]` to `peer`; `Ok(false)` when the provider
    /// or the send pool is full.
    #[inline]
    pub(super) fn eager_send(
        &mut self,
        peer: u32,
        hdr: &Header,
        payload: &[u8],
    ) -> Result<bool, TransportError> {
        let addr = self.check_peer(peer)?;
        let total = Header::SIZE + payload.len();
        if total > self.stride {
            return Err(TransportError::Invalid(format!(
                "payload of {} bytes exceeds the eager limit {}",
                payload.len(),
                self.eager
            )));
        }
        let eagain = -(sys::FI_EAGAIN as isize);
        let tag = self.me as u64;
        if total <= self.inject {
            let mut b = [0u8; INJECT_BUF];
            b[..Header::SIZE].copy_from_slice(hdr.as_bytes());
            b[Header::SIZE..total].copy_from_slice(payload);
            // SAFETY: `b` holds `total <= inject_size` initialised bytes; `addr` was inserted.
            let ret = unsafe { self.ep.tinject(b.as_ptr(), total, addr, tag) };
            match ret {
                0 => {
                    self.stats.injects += 1;
                    self.stats.bytes_copied += total as u64;
                    return Ok(true);
                }
                // Fall through to a pool send: with tcp;ofi_rxm, injects towards a dead peer
                // return -FI_EAGAIN forever and never report an error, while a send with a
                // completion fails with ECONNRESET — so a refused inject is retried as one.
                r if r == eagain => self.drain_cq(),
                r => return Err(self.send_failed(peer, "fi_tinject", r)),
            };
        }
        let slot = match self.tx_free.pop() {
            Some(s) => s,
            None => {
                self.drain_cq();
                match self.tx_free.pop() {
                    Some(s) => s,
                    None => {
                        self.stats.send_busy += 1;
                        return Ok(false);
                    }
                }
            }
        };
        let i = slot as usize;
        let base = i * self.stride;
        self.tx_buf[base..base + Header::SIZE].copy_from_slice(hdr.as_bytes());
        self.tx_buf[base + Header::SIZE..base + total].copy_from_slice(payload);
        self.tx_peer[i] = peer;
        let desc = self.tx_mr.as_ref().map_or(ptr::null_mut(), |m| m.desc());
        // SAFETY: pool slot `i` is ours until its completion (taken off the free list); the
        // buffer and the context live until after the endpoint is closed.
        let ret = unsafe {
            let buf = self.tx_buf.as_ptr().add(base);
            let ctx = &mut self.tx_ctx[i] as *mut OpCtx as *mut c_void;
            self.ep.tsend(buf, total, desc, addr, tag, ctx)
        };
        match ret {
            0 => {
                self.stats.pool_sends += 1;
                self.stats.bytes_copied += total as u64;
                Ok(true)
            }
            r if r == eagain => {
                self.tx_free.push(slot);
                self.stats.send_busy += 1;
                self.drain_cq();
                Ok(false)
            }
            r => {
                self.tx_free.push(slot);
                Err(self.send_failed(peer, "fi_tsend", r))
            }
        }
    }

    /// The engine's `poll`: progress, wire-up, then up to `budget` received messages to `sink`
    /// in the order their buffers were posted.
    #[inline]
    pub(super) fn eager_poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        self.drain_cq();
        if !self.wireup.is_empty() {
            self.wireup_step();
        }
        let mut n = 0;
        while n < budget {
            let Some(&slot) = self.rx_order.front() else { break };
            let i = slot as usize;
            match self.rx_state[i] {
                RxState::Posted => break,
                RxState::Done { len, tag } => {
                    let base = i * self.stride;
                    let known = tag < self.nprocs as u64 && self.peers[tag as usize].addr.is_some();
                    let hdr = if len <= self.stride {
                        Header::from_bytes(&self.rx_buf[base..base + len])
                    } else {
                        None
                    };
                    match hdr {
                        Some(h) if known => {
                            sink(tag as u32, &h, &self.rx_buf[base + Header::SIZE..base + len]);
                            self.stats.delivered += 1;
                            n += 1;
                        }
                        None if len == 0 && tag & WIREUP_TAG != 0 => self.stats.wireup_received += 1,
                        _ => self.stats.malformed += 1,
                    }
                }
                RxState::Failed | RxState::Unposted => self.stats.malformed += 1,
            }
            self.rx_order.pop_front();
            if self.post_recv(slot) != 0 {
                self.rx_unposted.push(slot);
            }
        }
        if !self.rx_unposted.is_empty() {
            for slot in std::mem::take(&mut self.rx_unposted) {
                if self.post_recv(slot) != 0 {
                    self.rx_unposted.push(slot);
                }
            }
        }
        n
    }
}
