//! Point-to-point, completion and communicator operations of the core: sends, receives and
//! probes on a communicator id, waiting for and testing request ids, communicator creation and
//! the failure knowledge a front end may read (failed and acknowledged ranks).

use weft_engine::{CommId, Common, Communicators, Diagnostics, Message, ReqId, Stats, Status};

use super::{EngineResult, OpsCore};
use crate::EngineError;

impl OpsCore {
    /// The communicator of every process of the job.
    pub fn world(&self) -> CommId {
        self.engine.borrow().world()
    }

    /// This process's rank in `c`.
    pub fn comm_rank(&self, c: CommId) -> EngineResult<u32> {
        self.eng()?.comm(c).map(|v| v.rank())
    }

    /// The world ranks of `c`'s members, in rank order.
    pub fn comm_group(&self, c: CommId) -> EngineResult<Vec<u32>> {
        Ok(self.eng()?.comm(c)?.members().to_vec())
    }

    /// Number of ranks of `c`.
    pub fn comm_size(&self, c: CommId) -> EngineResult<u32> {
        self.eng()?.comm(c).map(|v| v.size())
    }

    /// A destination rank from a signed value: negative ranks are invalid (`ANY_SOURCE` is
    /// not a destination).
    pub fn dest(&self, c: CommId, dst: i32) -> EngineResult<u32> {
        if dst < 0 {
            let size = self.comm_size(c)?;
            return Err(EngineError::InvalidRank { rank: dst.into(), size });
        }
        Ok(dst as u32)
    }

    /// Name of the transport that reaches `rank` of `c` ("self", "shm", "ofi").
    pub fn transport_to(&self, c: CommId, rank: u32) -> EngineResult<&'static str> {
        let e = self.eng()?;
        let w = e.comm(c).and_then(|v| v.world_rank(rank))?;
        Ok(Diagnostics::of(&e).route_name(w))
    }

    /// Blocking send of `buf` to `dst` with `tag`.
    #[inline]
    pub fn send(&self, c: CommId, buf: &[u8], dst: u32, tag: i32) -> EngineResult<()> {
        self.eng()?.send(c, buf, dst, tag)
    }

    /// Blocking receive into `buf` from `src` (or `ANY_SOURCE`) with `tag` (or `ANY_TAG`).
    #[inline]
    pub fn recv(&self, c: CommId, buf: &mut [u8], src: i32, tag: i32) -> EngineResult<Status> {
        self.eng()?.recv(c, buf, src, tag)
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

    /// Block until `id` completes.
    #[inline]
    pub fn wait(&self, id: ReqId) -> EngineResult<Status> {
        self.eng()?.wait(id)
    }

    /// `Some(status)` once `id` completed, `None` while pending.
    #[inline]
    pub fn test(&self, id: ReqId) -> EngineResult<Option<Status>> {
        self.eng()?.test(id)
    }

    /// Withdraw a receive that has not matched (or a send not yet handed to a transport).
    pub fn cancel(&self, id: ReqId) -> EngineResult<bool> {
        self.eng()?.cancel(id)
    }

    /// Wait for every request; on error all have still completed and the first error is
    /// returned.
    pub fn wait_all(&self, ids: &[ReqId]) -> EngineResult<Vec<Status>> {
        self.eng()?.wait_all(ids)
    }

    /// Wait until one request completes: its index and status.
    pub fn wait_any(&self, ids: &[ReqId]) -> EngineResult<(usize, Status)> {
        self.eng()?.wait_any(ids)
    }

    /// If every request is complete, their statuses.
    pub fn test_all(&self, ids: &[ReqId]) -> EngineResult<Option<Vec<Status>>> {
        self.eng()?.test_all(ids)
    }

    /// Complete every request of `ids` before their buffers are released (the end of a Rust
    /// scope). A wildcard receive that cannot complete because of an unacknowledged failure is
    /// withdrawn instead.
    pub fn complete_all(&self, ids: &[ReqId]) {
        // A panic here is better than releasing buffers the engine may still write.
        let mut e = self.engine.borrow_mut();
        for &id in ids {
            while e.is_pending(id) {
                match e.wait(id) {
                    Err(EngineError::ProcFailedPending) => {
                        let _ = e.cancel(id);
                    }
                    _ => break,
                }
            }
        }
    }

    /// Keep only the ids of `ids` that are still pending.
    pub fn retain_pending(&self, ids: &mut Vec<ReqId>) {
        let e = self.engine.borrow();
        ids.retain(|&r| e.is_pending(r));
    }

    /// Duplicate `c` (collective over `c`).
    pub fn comm_dup(&self, c: CommId) -> EngineResult<CommId> {
        Communicators::of(&mut *self.eng()?).dup(c)
    }

    /// Split `c` by `color` (or `UNDEFINED`: no communicator), ranks ordered by `key`.
    pub fn comm_split(&self, c: CommId, color: i32, key: i32) -> EngineResult<Option<CommId>> {
        Communicators::of(&mut *self.eng()?).split(c, color, key)
    }

    /// A communicator of the ranks `members` of `c` (in that order), created by those members
    /// only; `tag` separates concurrent creations over overlapping groups.
    pub fn comm_create_group(&self, c: CommId, members: &[u32], tag: i32) -> EngineResult<CommId> {
        Communicators::of(&mut *self.eng()?).create_group(c, members, tag)
    }

    /// The node this process runs on (the runtime's dense node id; `weft-run`'s virtual nodes
    /// count as nodes).
    pub fn node_id(&self) -> u32 {
        self.rt.borrow().node_id()
    }

    /// Number of processes in the job.
    pub fn job_size(&self) -> u32 {
        self.rt.borrow().size()
    }

    /// Free `c`; receives still posted on it complete with `InvalidComm`.
    pub fn comm_free(&self, c: CommId) -> EngineResult<()> {
        Communicators::of(&mut *self.eng()?).free(c)
    }

    /// Ranks of `c` known to have failed.
    pub fn get_failed(&self, c: CommId) -> EngineResult<Vec<u32>> {
        self.eng()?.comm(c).map(|v| v.failed())
    }

    /// Acknowledge the failures known now; how many failed ranks are acknowledged.
    pub fn ack_failed(&self, c: CommId) -> EngineResult<usize> {
        Communicators::of(&mut *self.eng()?).ack_failed(c)
    }

    /// The ranks of `c` whose failure was acknowledged.
    pub fn get_acked(&self, c: CommId) -> EngineResult<Vec<u32>> {
        self.eng()?.comm(c).map(|v| v.acked())
    }

    /// Run the progress engine once; how many events it handled.
    pub fn progress(&self) -> usize {
        self.engine.borrow_mut().progress()
    }

    /// Engine counters.
    pub fn stats(&self) -> Stats {
        Diagnostics::of(&self.engine.borrow()).stats().clone()
    }

    /// Messages handed to each transport so far, by transport name.
    pub fn messages_by_transport(&self) -> Vec<(&'static str, u64)> {
        let e = self.engine.borrow();
        let d = Diagnostics::of(&e);
        d.transport_names().into_iter().zip(d.stats().sent_by_transport.iter().copied()).collect()
    }

    /// How many failed ranks this process learned of first from each source: every transport
    /// by name (in-band: "shm" is its pidfd watch, "ofi" libfabric's errors), "runtime" (the
    /// launcher's PMIx events) and "upper" (the FT layer: heartbeat detector, peers' findings).
    pub fn failures_by_source(&self) -> Vec<(&'static str, u64)> {
        let e = self.engine.borrow();
        let l = &Diagnostics::of(&e).stats().learned;
        let mut v: Vec<(&'static str, u64)> =
            Diagnostics::of(&e).transport_names().into_iter().zip(l.transport.iter().copied()).collect();
        v.push(("runtime", l.runtime));
        v.push(("upper", l.upper));
        v
    }

    /// The engine's queues and pending requests, for diagnosing a hang.
    pub fn debug_state(&self) -> String {
        Diagnostics::of(&self.engine.borrow()).debug_state()
    }

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> Vec<u32> {
        self.engine.borrow().failures().world_ranks().to_vec()
    }
}
