//! The `fi_read`s of a get (the data movement of a rendezvous): read contexts and their
//! slots, posting a get's reads in chunks of at most `read_chunk` bytes as the provider
//! accepts them, and counting their completions until the get ends.
//!
//! Calls `failure.rs` (a connection-loss error marks the peer dead; the last completion
//! finishes the get). Called by `completion.rs` (a read's completion) and `rndv.rs` (a new
//! get, gets still waiting to post).

use std::ffi::c_void;

use weft_engine::transport::TransportError;
use weft_fabric_sys as sys;

use super::state::{OfiTransport, OpCtx, KIND_RD};
use crate::error::{is_connection_loss, strerror};

impl OfiTransport {
    /// Read slot `slot` completed (`res`): free the slot, count the read against its get and
    /// finish the get when it was the last one (or the get has failed and none is left).
    pub(super) fn read_done(&mut self, slot: usize, res: Result<(), TransportError>) {
        let owner = self.rd_owner[slot].take();
        self.rd_free.push(slot as u32);
        let Some(token) = owner else { return };
        let Some(g) = self.gets.get_mut(&token) else { return };
        g.outstanding -= 1;
        if let Err(e) = res {
            g.err.get_or_insert(e);
        }
        if g.outstanding == 0 && (g.next >= g.len || g.err.is_some()) {
            self.finish_get(token);
        }
    }

    /// A free read slot, or a new one (its context boxed, so its address never changes).
    fn alloc_rd(&mut self) -> usize {
        if let Some(s) = self.rd_free.pop() {
            return s as usize;
        }
        let s = self.rd_ctx.len();
        self.rd_ctx.push(Box::new(OpCtx::new(KIND_RD, s as u32)));
        self.rd_owner.push(None);
        s
    }

    /// Post as many reads of get `token` as the provider accepts.
    pub(super) fn post_reads(&mut self, token: u64) -> Result<(), TransportError> {
        loop {
            let Some(g) = self.gets.get(&token) else { return Ok(()) };
            if g.next >= g.len || g.err.is_some() {
                return Ok(());
            }
            let (peer, off, dst, desc, remote, key) = (g.peer, g.next, g.dst, g.desc, g.remote, g.key);
            let chunk = self.read_chunk.min(g.len - off);
            let Some(addr) = self.peers[peer as usize].addr else {
                return Err(TransportError::Invalid(format!("rank {peer} is not connected")));
            };
            let slot = self.alloc_rd();
            let ctx = &mut *self.rd_ctx[slot] as *mut OpCtx as *mut c_void;
            // SAFETY: the engine guarantees `dst` is writable for `len` bytes and untouched
            // until the get is reported; off + chunk <= len. The context is boxed in rd_ctx
            // (stable address, alive until after the endpoint closes) and reserved for this
            // read until its completion. `desc` is the registration of dst when needed.
            let ret = unsafe { self.ep.read(dst.add(off), chunk, desc, addr, remote + off as u64, key, ctx) };
            if ret == 0 {
                self.rd_owner[slot] = Some(token);
                self.stats.reads_posted += 1;
                let g = self.gets.get_mut(&token).expect("present above");
                g.outstanding += 1;
                g.next += chunk;
                continue;
            }
            self.rd_free.push(slot as u32);
            if ret == -(sys::FI_EAGAIN as isize) {
                return Ok(());
            }
            let e = if is_connection_loss(ret as i32) {
                self.mark_dead(peer);
                TransportError::PeerDead(peer)
            } else {
                TransportError::Call { call: "fi_read", msg: strerror(ret) }
            };
            return Err(e);
        }
    }
}
