//! Peer liveness: whether a peer can be used (`check_peer`), turning a failed call into
//! `PeerDead` or a call error (`send_failed`), and marking a peer dead (`mark_dead`), which
//! ends its gets in flight at once. `finish_get` is here because a peer's death is one of the
//! two ways a get ends (the other, its last read completing, is in `read.rs`).
//!
//! Calls into no other behaviour file; every other behaviour file calls into it.

use weft_engine::transport::TransportError;
use weft_fabric_sys as sys;

use super::state::OfiTransport;
use crate::error::{is_connection_loss, strerror};

impl OfiTransport {
    /// The address of `peer` if it is in range, connected and alive; otherwise `Invalid` or
    /// `PeerDead`.
    pub(super) fn check_peer(&self, peer: u32) -> Result<sys::fi_addr_t, TransportError> {
        let p = self.peers.get(peer as usize).ok_or_else(|| {
            TransportError::Invalid(format!("rank {peer} out of range ({} processes)", self.nprocs))
        })?;
        if p.dead {
            return Err(TransportError::PeerDead(peer));
        }
        p.addr.ok_or_else(|| TransportError::Invalid(format!("rank {peer} is not connected")))
    }

    /// The error a failed `call` towards `peer` returns: `PeerDead` (and the peer marked dead)
    /// when `ret` means the connection is lost, a call error otherwise.
    pub(super) fn send_failed(&mut self, peer: u32, call: &'static str, ret: isize) -> TransportError {
        if is_connection_loss(ret as i32) {
            self.mark_dead(peer);
            TransportError::PeerDead(peer)
        } else {
            TransportError::Call { call, msg: strerror(ret) }
        }
    }

    /// Mark `peer` dead once: queue it for `poll_failures` and end its gets with `PeerDead`.
    pub(super) fn mark_dead(&mut self, peer: u32) {
        let Some(p) = self.peers.get_mut(peer as usize) else { return };
        if p.dead {
            return;
        }
        p.dead = true;
        self.newly_dead.push(peer);
        // Reads from the dead peer complete now; their slots stay reserved (orphaned) until
        // the provider returns them, so a late completion cannot be mistaken for a new read.
        let tokens: Vec<u64> = self.gets.iter().filter(|(_, g)| g.peer == peer).map(|(t, _)| *t).collect();
        for t in tokens {
            for o in self.rd_owner.iter_mut().filter(|o| **o == Some(t)) {
                *o = None;
            }
            if let Some(g) = self.gets.get_mut(&t) {
                g.err = Some(TransportError::PeerDead(peer));
            }
            self.finish_get(t);
        }
    }

    /// End get `token`: release its local registration and queue its result for `poll_gets`.
    pub(super) fn finish_get(&mut self, token: u64) {
        let Some(g) = self.gets.remove(&token) else { return };
        if let Some(id) = g.local {
            self.rcache.release(id);
        }
        self.gets_done.push((token, g.err.map_or(Ok(()), Err)));
    }
}
