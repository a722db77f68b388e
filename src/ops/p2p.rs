//! Point-to-point operations of the core: sends (standard, synchronous), receives, probes and
//! matched probes on a communicator id, and the check of a signed destination rank. Their
//! requests complete in `request.rs`.

use weft_engine::{CommId, Message, ReqId, Status};

use super::{reentrant, EngineResult, OpsCore};
use crate::EngineError;

impl OpsCore {
    /// A destination rank from a signed value: negative ranks are invalid (`ANY_SOURCE` is
    /// not a destination).
    pub fn dest(&self, c: CommId, dst: i32) -> EngineResult<u32> {
        if dst < 0 {
            let size = self.comm_size(c)?;
            return Err(EngineError::InvalidRank { rank: dst.into(), size });
        }
        Ok(dst as u32)
    }

    /// Blocking send of `buf` to `dst` with `tag`. The engine checks `dst` and `tag` (an
    /// invalid one fails before anything is sent). The engine is borrowed here, not through
    /// `OpsCore::eng` (`instance.rs`): this and [`OpsCore::recv`] are the hot path of every
    /// blocking message, kept to one call per file.
    #[inline]
    pub fn send(&self, c: CommId, buf: &[u8], dst: u32, tag: i32) -> EngineResult<()> {
        self.engine.try_borrow_mut().map_err(|_| reentrant())?.send(c, buf, dst, tag)
    }

    /// Blocking receive into `buf` from `src` (or `ANY_SOURCE`) with `tag` (or `ANY_TAG`);
    /// the engine borrowed as in [`OpsCore::send`].
    #[inline]
    pub fn recv(&self, c: CommId, buf: &mut [u8], src: i32, tag: i32) -> EngineResult<Status> {
        self.engine.try_borrow_mut().map_err(|_| reentrant())?.recv(c, buf, src, tag)
    }

    /// Start a send of `len` bytes at `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid for reads of `len` bytes, and unmodified, until the request
    /// completes.
    #[inline]
    pub unsafe fn isend(
        &self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> EngineResult<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.eng()?.isend(c, buf, len, dst, tag) }
    }

    /// Post a receive of up to `len` bytes into `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid for writes of `len` bytes, and otherwise unaccessed, until the
    /// request completes.
    #[inline]
    pub unsafe fn irecv(
        &self,
        c: CommId,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
    ) -> EngineResult<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.eng()?.irecv(c, buf, len, src, tag) }
    }

    /// Start a synchronous send of `len` bytes at `buf`: it completes only once the receiver
    /// has matched it (always the rendezvous path; the standard send's path is unchanged).
    ///
    /// # Safety
    /// As [`OpsCore::isend`].
    pub unsafe fn issend(
        &self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> EngineResult<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.eng()?.issend(c, buf, len, dst, tag) }
    }

    /// Matched probe: take the first message matching `(src, tag)` out of matching, if one
    /// has arrived; only [`OpsCore::imrecv`] can receive it.
    pub fn improbe(&self, c: CommId, src: i32, tag: i32) -> EngineResult<Option<Message>> {
        self.eng()?.improbe(c, src, tag)
    }

    /// Receive a message taken by [`OpsCore::improbe`] into up to `len` bytes at `buf`.
    ///
    /// # Safety
    /// As [`OpsCore::irecv`].
    pub unsafe fn imrecv(&self, m: Message, buf: *mut u8, len: usize) -> EngineResult<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.eng()?.imrecv(m, buf, len) }
    }

    /// Wait until a message matching `(src, tag)` has arrived; its status.
    pub fn probe(&self, c: CommId, src: i32, tag: i32) -> EngineResult<Status> {
        self.eng()?.probe(c, src, tag)
    }

    /// The status of a matching message if one has arrived.
    pub fn iprobe(&self, c: CommId, src: i32, tag: i32) -> EngineResult<Option<Status>> {
        self.eng()?.iprobe(c, src, tag)
    }
}
