//! Rendezvous, the engine's `expose`, `unexpose`, `get` and `poll_gets` (`api.rs`):
//! exposing a buffer for remote reads (`rndv_expose`: registered through the registration
//! cache, described in an `RKey`; `rndv_unexpose` releases it), starting a get (`rndv_get`:
//! checks the key, registers the destination under `FI_MR_LOCAL`, posts its reads) and
//! handing over the gets that ended (`rndv_poll_gets`).
//!
//! Calls `completion.rs` (progress), `read.rs` (posting reads) and `failure.rs`.

use std::ptr;

use weft_engine::transport::{GetStatus, RKey, TransportError};
use weft_fabric_sys as sys;

use super::state::{Get, OfiTransport};
use super::wire::RemoteRegion;
use crate::mr::Mr;

impl OfiTransport {
    /// The engine's `expose`: register `addr..addr+len` for remote reads by `peer`. The
    /// pointer is never dereferenced here: it is registered, and the provider reads it only
    /// while the engine keeps the buffer exposed (the trait's contract).
    #[inline]
    pub(super) fn rndv_expose(
        &mut self,
        peer: u32,
        addr: *const u8,
        len: usize,
    ) -> Result<RKey, TransportError> {
        self.check_peer(peer)?;
        self.stats.exposes += 1;
        if len == 0 {
            return Ok(RemoteRegion { addr: 0, key: 0, len: 0, owner: self.me }.encode());
        }
        let (domain, ep, mode) = (&self.domain, &self.ep, self.mode);
        let next_key = &mut self.next_mr_key;
        let (id, mr) = self.rcache.acquire(addr as usize, len, || {
            *next_key += 1;
            let access = (sys::FI_REMOTE_READ | sys::FI_READ) as u64;
            // SAFETY: the engine keeps `addr..addr+len` alive until unexpose; the cached
            // registration may outlive it, but no transfer uses it after unexpose.
            unsafe { Mr::reg(domain, Some(ep), mode, addr, len, access, *next_key) }
        })?;
        let key = mr.key();
        let remote = if mode.virt_addr { addr as u64 } else { (addr as usize - mr.addr()) as u64 };
        self.stats.last_expose = (mr.addr(), mr.len());
        self.exposed.insert(key, id);
        Ok(RemoteRegion { addr: remote, key, len: len as u64, owner: self.me }.encode())
    }

    /// The engine's `unexpose`: release the registration behind `key`.
    #[inline]
    pub(super) fn rndv_unexpose(&mut self, key: &RKey) {
        let Some(r) = RemoteRegion::decode(key) else { return };
        if r.len == 0 {
            return;
        }
        if let Some(&id) = self.exposed.get(&r.key) {
            if self.rcache.release(id) == Some(0) {
                self.exposed.remove(&r.key);
            }
        }
    }

    /// The engine's `get`: read `len` bytes of `peer`'s exposure `key` into `dst`.
    ///
    /// # Safety
    /// As the engine's `Transport::get`: `dst` stays writable for `len` bytes, untouched,
    /// until the get is reported.
    #[inline]
    pub(super) unsafe fn rndv_get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError> {
        self.check_peer(peer)?;
        let r = RemoteRegion::decode(key)
            .ok_or_else(|| TransportError::Invalid("not a weft-fabric RKey".into()))?;
        if r.owner != peer {
            return Err(TransportError::Invalid(format!("RKey of rank {} used for rank {peer}", r.owner)));
        }
        if len as u64 > r.len {
            return Err(TransportError::Invalid(format!(
                "read of {len} bytes from a {}-byte exposure",
                r.len
            )));
        }
        if len == 0 {
            return Ok(GetStatus::Done);
        }
        if dst.is_null() {
            return Err(TransportError::Invalid("null destination".into()));
        }
        let (mut desc, mut local) = (ptr::null_mut(), None);
        if self.mode.local {
            let (domain, ep, mode) = (&self.domain, &self.ep, self.mode);
            let next_key = &mut self.next_mr_key;
            let (id, mr) = self.rcache.acquire(dst as usize, len, || {
                *next_key += 1;
                let access = (sys::FI_REMOTE_READ | sys::FI_READ) as u64;
                // SAFETY: the caller keeps dst valid until the read is reported.
                unsafe { Mr::reg(domain, Some(ep), mode, dst, len, access, *next_key) }
            })?;
            desc = mr.desc();
            local = Some(id);
        }
        let token = self.next_token;
        self.next_token += 1;
        self.stats.read_bytes += len as u64;
        self.gets.insert(
            token,
            Get {
                peer,
                dst,
                len,
                next: 0,
                remote: r.addr,
                key: r.key,
                desc,
                local,
                outstanding: 0,
                err: None,
            },
        );
        if let Err(e) = self.post_reads(token) {
            match self.gets.get_mut(&token) {
                Some(g) if g.outstanding > 0 => g.err = Some(e),
                Some(_) => {
                    let g = self.gets.remove(&token).expect("present");
                    if let Some(id) = g.local {
                        self.rcache.release(id);
                    }
                    return Err(e);
                }
                // mark_dead already completed it with PeerDead.
                None => {
                    self.gets_done.retain(|(t, _)| *t != token);
                    return Err(e);
                }
            }
        }
        Ok(GetStatus::Pending(token))
    }

    /// The engine's `poll_gets`: progress, post the reads that are waiting, hand over the gets
    /// that ended.
    #[inline]
    pub(super) fn rndv_poll_gets(&mut self, done: &mut Vec<(u64, Result<(), TransportError>)>) {
        self.drain_cq();
        let waiting: Vec<u64> =
            self.gets.iter().filter(|(_, g)| g.next < g.len && g.err.is_none()).map(|(t, _)| *t).collect();
        for t in waiting {
            if let Err(e) = self.post_reads(t) {
                if let Some(g) = self.gets.get_mut(&t) {
                    g.err = Some(e);
                    if g.outstanding == 0 {
                        self.finish_get(t);
                    }
                }
            }
        }
        done.append(&mut self.gets_done);
    }
}
