//! Schedules: a collective as a small DAG of steps, and the activity that executes it.
//!
//! The DAG is kept in layers ("rounds"): the communication steps of a round (send a region
//! to a peer, receive a region from a peer) are posted together; when all of them have
//! completed, the round's local steps (copy, reduce) run in order, then the next round
//! starts. Every edge of the DAG therefore goes from one round to a later one, which is all
//! the algorithms here need and keeps the executor small.
//!
//! A schedule names byte regions of three buffers — the caller's send buffer, its receive
//! buffer and a scratch buffer owned by the run — so it does not depend on addresses and is
//! built once per (collective, communicator, algorithm, count, root, type size) and cached.
//!
//! Executor: `Run`, advanced either as an engine activity (non-blocking calls) or to the end
//! in the caller (`Run::block`, blocking calls), over `RunBufs` that blocking calls borrow
//! from the schedule cache (no allocation per call).
//!
//! Wire format: a message of at most `stage_max` payload bytes (the eager limit) is staged
//! through the run's staging arena with a 16-byte header in front (collective kind, type size, op,
//! root, count) that the receiver compares with its own arguments, so mismatched calls give a
//! typed error instead of corrupt data. Larger messages go raw (single copy, rendezvous) and
//! are checked by exact length. After an error a run sends a 16-byte *abort* header to every
//! peer it still owed a message, so errors (including `ProcFailed`) propagate along the
//! schedule instead of leaving downstream ranks waiting.

use std::borrow::BorrowMut;
use std::ops::Deref;
use std::rc::Rc;

use weft_engine::{Activity, CollPort, CommId, Common, Error, RecvStart, ReqId, Result, Status, Step};

use crate::dtype::DType;
use crate::op::Op;

/// Which buffer a region lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    /// The caller's send buffer (read only).
    Send,
    /// The caller's receive (or in/out) buffer.
    Recv,
    /// Scratch owned by the run.
    Tmp,
}

/// A byte region of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The buffer.
    pub buf: Buf,
    /// Byte offset.
    pub off: usize,
    /// Byte length.
    pub len: usize,
}

impl Region {
    /// The region `[off, off+len)` of `buf`.
    pub const fn new(buf: Buf, off: usize, len: usize) -> Region {
        Region { buf, off, len }
    }
    /// Sub-region at relative offset `off`.
    pub fn sub(self, off: usize, len: usize) -> Region {
        debug_assert!(off + len <= self.len);
        Region { buf: self.buf, off: self.off + off, len }
    }
}

/// A communication step.
#[derive(Clone, Copy, Debug)]
pub enum CommStep {
    /// Send a region to a communicator rank.
    Send { peer: u32, reg: Region },
    /// Receive a region from a communicator rank.
    Recv { peer: u32, reg: Region },
}

/// A local step.
#[derive(Clone, Copy, Debug)]
pub enum LocalStep {
    /// `dst = src` (overlap allowed; skipped when both name the same bytes).
    Copy { src: Region, dst: Region },
    /// `dst = src ∘ dst` (`src_left`) or `dst = dst ∘ src`.
    Reduce { src: Region, dst: Region, src_left: bool },
}

/// One layer of the DAG.
#[derive(Clone, Debug, Default)]
pub struct Round {
    /// Posted together.
    pub comms: Vec<CommStep>,
    /// Run in order once every communication step of the round completed.
    pub locals: Vec<LocalStep>,
}

/// A built schedule.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    /// The layers, in order.
    pub rounds: Vec<Round>,
    /// Scratch bytes a run needs.
    pub tmp_len: usize,
}

impl Schedule {
    /// Number of messages this rank sends.
    pub fn sends(&self) -> usize {
        self.rounds.iter().flat_map(|r| &r.comms).filter(|c| matches!(c, CommStep::Send { .. })).count()
    }
}

/// Schedule builder.
#[derive(Default)]
pub struct ScheduleBuilder {
    rounds: Vec<Round>,
    tmp_len: usize,
}

impl ScheduleBuilder {
    /// An empty builder.
    pub fn new() -> ScheduleBuilder {
        ScheduleBuilder { rounds: vec![Round::default()], tmp_len: 0 }
    }

    fn cur(&mut self) -> &mut Round {
        self.rounds.last_mut().expect("one round")
    }

    /// Start a new round (later steps wait for everything added so far).
    pub fn next(&mut self) {
        let r = self.cur();
        if !r.comms.is_empty() || !r.locals.is_empty() {
            self.rounds.push(Round::default());
        }
    }

    fn comm(&mut self, c: CommStep) {
        // A communication step after local steps of the same round would run before them:
        // start a new round so it sees their result.
        if !self.cur().locals.is_empty() {
            self.rounds.push(Round::default());
        }
        self.cur().comms.push(c);
    }

    /// Send `reg` to `peer`.
    pub fn send(&mut self, peer: u32, reg: Region) {
        self.comm(CommStep::Send { peer, reg });
    }

    /// Receive `reg` from `peer`.
    pub fn recv(&mut self, peer: u32, reg: Region) {
        self.comm(CommStep::Recv { peer, reg });
    }

    /// `dst = src` after this round's communication.
    pub fn copy(&mut self, src: Region, dst: Region) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 && src != dst {
            self.cur().locals.push(LocalStep::Copy { src, dst });
        }
    }

    /// `dst = src ∘ dst` (`src_left`) or `dst ∘ src`, after this round's communication.
    pub fn reduce(&mut self, src: Region, dst: Region, src_left: bool) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 {
            self.cur().locals.push(LocalStep::Reduce { src, dst, src_left });
        }
    }

    /// Allocate `len` scratch bytes (16-byte aligned offsets).
    pub fn tmp(&mut self, len: usize) -> Region {
        let off = self.tmp_len.div_ceil(16) * 16;
        self.tmp_len = off + len;
        Region::new(Buf::Tmp, off, len)
    }

    /// The schedule.
    ///
    /// Within a round the sends are put before the receives (each kind keeps its order, so
    /// messages between two ranks stay in program order): the executor posts them in this
    /// order, so a round's messages leave before this rank spends time on its receives'
    /// bookkeeping. A message that arrives before its receive is posted is taken from the
    /// engine's unexpected queue, from a pooled buffer. (Receives first measured 9% slower
    /// for a 2-rank allreduce and 12% for a barrier, once the executor no longer stalled on
    /// store forwarding after the sends.)
    pub fn finish(mut self) -> Schedule {
        self.rounds.retain(|r| !r.comms.is_empty() || !r.locals.is_empty());
        for r in &mut self.rounds {
            r.comms.sort_by_key(|c| matches!(c, CommStep::Recv { .. }));
        }
        Schedule { rounds: self.rounds, tmp_len: self.tmp_len }
    }
}

/// Size of the collective header.
pub const HDR: usize = 16;
const FLAG_ABORT_FAILED: u8 = 1;
const FLAG_ABORT_REVOKED: u8 = 2;
const FLAG_ABORT_OTHER: u8 = 3;

/// What both sides of a collective must agree on; carried in staged messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// Collective kind code.
    pub kind: u8,
    /// Element size.
    pub esize: u8,
    /// Operation code (0 = none).
    pub op: u8,
    /// Root (u32::MAX = not rooted).
    pub root: u32,
    /// Element count every rank must pass (u64::MAX = not checked, v-variants).
    pub count: u64,
}

impl Check {
    /// The header as two little-endian words (bytes 0..8: kind, element size, op, flags,
    /// root; bytes 8..16: count). Kept and compared as words: written byte by byte and read
    /// back 16 at a time, it cost a store-forwarding stall per message.
    fn words(&self, flags: u8) -> [u64; 2] {
        let lo = self.kind as u64
            | (self.esize as u64) << 8
            | (self.op as u64) << 16
            | (flags as u64) << 24
            | (self.root as u64) << 32;
        [lo, self.count]
    }

    fn encode(&self, flags: u8) -> [u8; HDR] {
        let [lo, hi] = self.words(flags);
        let mut h = [0u8; HDR];
        h[..8].copy_from_slice(&lo.to_le_bytes());
        h[8..].copy_from_slice(&hi.to_le_bytes());
        h
    }
}

/// Write header `w` at `p`.
///
/// # Safety
/// `p` must be valid for writes of [`HDR`] bytes.
#[inline(always)]
unsafe fn put_header(p: *mut u8, w: [u64; 2]) {
    // SAFETY: the caller guarantees HDR writable bytes; unaligned writes need no alignment.
    unsafe {
        (p as *mut u64).write_unaligned(w[0].to_le());
        (p.add(8) as *mut u64).write_unaligned(w[1].to_le());
    }
}

/// Header words `h` as stored in a run, read as the two 8-byte loads they were stored with.
/// Merged into one 16-byte load (as the compiler does with a plain copy) they cannot be
/// forwarded from those stores; the load then waits until every earlier store of this core
/// has reached the cache — including the last message's stores to a peer's ring lines,
/// whose transfer from the peer's core it so puts on the critical path of every call.
#[inline(always)]
fn load_hdr(h: &[u64; 2]) -> [u64; 2] {
    // SAFETY: reads through a valid reference; volatile only keeps the compiler from
    // merging the two loads.
    unsafe { [std::ptr::read_volatile(&h[0]), std::ptr::read_volatile(&h[1])] }
}

/// Whether the header at `h` is exactly `w` (the common case: no further decoding).
#[inline(always)]
fn header_is(h: &[u8], w: [u64; 2]) -> bool {
    h.len() >= HDR
        && u64::from_le_bytes(h[..8].try_into().expect("8")) == w[0]
        && u64::from_le_bytes(h[8..16].try_into().expect("8")) == w[1]
}

fn mismatch(what: String) -> Error {
    Error::InvalidArg(format!("collective argument mismatch: {what}"))
}

/// Decode a header received from `peer` that is not exactly ours: the error it means.
#[cold]
#[inline(never)]
fn check_header(h: &[u8], mine: &Check, peer: u32) -> Result<()> {
    let flags = h[3];
    let a = u32::from_le_bytes(h[4..8].try_into().expect("4"));
    match flags {
        0 => {}
        FLAG_ABORT_FAILED => return Err(Error::ProcFailed { ranks: vec![a] }),
        FLAG_ABORT_REVOKED => return Err(Error::Revoked),
        _ => return Err(mismatch(format!("rank {peer} aborted the collective after an error"))),
    }
    let count = u64::from_le_bytes(h[8..16].try_into().expect("8"));
    if h[0] != mine.kind {
        return Err(mismatch(format!(
            "rank {peer} called {}, this rank called {}",
            crate::Kind::from_code(h[0]).map_or("?", |k| k.name()),
            crate::Kind::from_code(mine.kind).map_or("?", |k| k.name())
        )));
    }
    if h[1] != mine.esize {
        return Err(mismatch(format!("rank {peer} uses {}-byte elements, this rank {}", h[1], mine.esize)));
    }
    if h[2] != mine.op {
        return Err(mismatch(format!("rank {peer} uses another reduction operation")));
    }
    if a != mine.root {
        return Err(mismatch(format!("rank {peer} names root {a}, this rank root {}", mine.root)));
    }
    if count != mine.count {
        return Err(mismatch(format!("rank {peer} passed count {count}, this rank {}", mine.count)));
    }
    Ok(())
}

/// Where a posted communication step stands.
#[derive(Clone, Copy)]
enum Wait {
    /// Waiting for this engine request.
    Req(ReqId),
    /// A receive matched when it was posted: complete, still to be finished (header check,
    /// copy out of the staging slot).
    Early(Status),
    /// Nothing left to do (an eager send that left at once, or a step already finished).
    Done,
}

/// A communication step in flight.
struct InFlight {
    wait: Wait,
    step: usize,
    /// Byte offset of the staging slot in the arena (staged steps).
    off: usize,
    staged: bool,
}

/// Reusable memory of a run: scratch, the staging arena (header + payload of every staged
/// message of one round), the in-flight list and abort buffers. A blocking call borrows the
/// one kept with its cached schedule, so the small path allocates nothing after the first
/// call; a non-blocking run owns its own.
#[derive(Default)]
pub(crate) struct RunBufs {
    tmp: Vec<u64>,
    stage: Vec<u64>,
    infl: Vec<InFlight>,
    /// Abort messages in flight (after an error); the run ends when they are out.
    aborts: Vec<(ReqId, Vec<u8>)>,
}

impl RunBufs {
    /// Make room for a run of a schedule with `tmp_len` scratch and `stage_len` arena bytes;
    /// scratch starts zeroed, as a fresh allocation would.
    fn fit(&mut self, tmp_len: usize, stage_len: usize) {
        let t = tmp_len.div_ceil(8);
        if self.tmp.len() < t {
            self.tmp.resize(t, 0);
        }
        if t > 0 {
            self.tmp[..t].fill(0);
        }
        let st = stage_len.div_ceil(8);
        if self.stage.len() < st {
            self.stage.resize(st, 0);
        }
        self.infl.clear();
    }
}

/// Staging arena bytes a run of `s` needs: the largest sum, over one round, of the 8-aligned
/// header + payload slots of its staged (≤ `stage_max` bytes) messages.
pub(crate) fn stage_len(s: &Schedule, stage_max: usize) -> usize {
    s.rounds
        .iter()
        .map(|r| {
            r.comms
                .iter()
                .map(|c| match *c {
                    CommStep::Send { reg, .. } | CommStep::Recv { reg, .. } => reg.len,
                })
                .filter(|&l| l <= stage_max)
                .map(|l| (HDR + l).div_ceil(8) * 8)
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

/// The caller's buffers and reduction, as a run reads them. A blocking call reads its
/// [`crate::Spec`] in place (no copy of the caller's fields, whose fresh stores a wider
/// copy could not forward from); a non-blocking run owns an [`OwnedArgs`].
pub(crate) trait Args {
    fn send(&self) -> (*const u8, usize);
    fn recv(&self) -> (*mut u8, usize);
    fn dt(&self) -> DType;
    fn op(&self) -> Option<&Op>;
}

impl<T: Args + ?Sized> Args for &T {
    #[inline(always)]
    fn send(&self) -> (*const u8, usize) {
        (**self).send()
    }
    #[inline(always)]
    fn recv(&self) -> (*mut u8, usize) {
        (**self).recv()
    }
    #[inline(always)]
    fn dt(&self) -> DType {
        (**self).dt()
    }
    #[inline(always)]
    fn op(&self) -> Option<&Op> {
        (**self).op()
    }
}

/// The arguments a non-blocking run keeps.
pub(crate) struct OwnedArgs {
    pub send: *const u8,
    pub send_len: usize,
    pub recv: *mut u8,
    pub recv_len: usize,
    pub dt: DType,
    pub op: Option<Op>,
}

impl Args for OwnedArgs {
    fn send(&self) -> (*const u8, usize) {
        (self.send, self.send_len)
    }
    fn recv(&self) -> (*mut u8, usize) {
        (self.recv, self.recv_len)
    }
    fn dt(&self) -> DType {
        self.dt
    }
    fn op(&self) -> Option<&Op> {
        self.op.as_ref()
    }
}

/// Address of region `r`, bounds-checked against the buffer it names.
#[inline(always)]
fn region(a: &impl Args, tmp: &mut [u64], r: Region) -> Result<*mut u8> {
    let (base, cap) = match r.buf {
        Buf::Send => {
            let (p, l) = a.send();
            (p as *mut u8, l)
        }
        Buf::Recv => a.recv(),
        Buf::Tmp => (tmp.as_mut_ptr() as *mut u8, tmp.len() * 8),
    };
    if r.off + r.len > cap || (base.is_null() && r.len > 0) {
        return Err(short_region(r, cap));
    }
    // SAFETY: in bounds of a buffer the caller guaranteed valid for this run.
    Ok(unsafe { base.add(r.off) })
}

#[cold]
fn short_region(r: Region, cap: usize) -> Error {
    Error::InvalidArg(format!(
        "collective buffer too short: needs {} bytes of the {:?} buffer, has {cap}",
        r.off + r.len,
        r.buf
    ))
}

/// The executor of one schedule. Blocking calls run it directly in the caller
/// ([`Run::block`]: post a round, wait for its engine requests, run its local steps);
/// non-blocking calls hand it to the engine as an [`Activity`] that completes a generic
/// request. `S` is how the schedule is held (`&Schedule` from the cache, or `Rc`), `B` the
/// buffers (borrowed from the cache, or owned).
pub(crate) struct Run<S, B, A> {
    s: S,
    comm: CommId,
    tag: i32,
    a: A,
    check: Check,
    /// The header of every staged data message, as words; read only through [`load_hdr`].
    hdr: [u64; 2],
    b: B,
    stage_max: usize,
    round: usize,
    posted: bool,
    err: Option<Error>,
    /// A data send was abandoned after an error: the engine may still read the arena or the
    /// scratch, so they are leaked instead of reused or freed.
    leak: bool,
}

impl<S: Deref<Target = Schedule>, B: BorrowMut<RunBufs>, A: Args> Run<S, B, A> {
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        s: S,
        comm: CommId,
        tag: i32,
        a: A,
        check: Check,
        mut b: B,
        stage_len: usize,
        stage_max: usize,
    ) -> Self {
        b.borrow_mut().fit(s.tmp_len, stage_len);
        let hdr = check.words(0);
        Run { s, comm, tag, a, check, hdr, b, stage_max, round: 0, posted: false, err: None, leak: false }
    }

    fn post(&mut self, e: &mut CollPort) -> Result<()> {
        let b = self.b.borrow_mut();
        let arena = b.stage.as_mut_ptr() as *mut u8;
        let mut off = 0;
        // In the schedule's order: sends first, then receives (see `ScheduleBuilder::finish`).
        for (i, c) in self.s.rounds[self.round].comms.iter().enumerate() {
            let (peer, reg, is_send) = match *c {
                CommStep::Send { peer, reg } => (peer, reg, true),
                CommStep::Recv { peer, reg } => (peer, reg, false),
            };
            let p = region(&self.a, &mut b.tmp, reg)?;
            let staged = reg.len <= self.stage_max;
            let slot = off;
            if staged {
                off += (HDR + reg.len).div_ceil(8) * 8;
            }
            // SAFETY (every block below): the staging slot lies in the arena, sized by `stage_len` for
            // the largest round and kept (or leaked) until the step completes; user and scratch
            // regions were bounds-checked by `region` and stay valid until the run ends.
            let wait = if is_send {
                let id = if staged {
                    // SAFETY: as above: the slot of HDR + reg.len bytes is in the arena and
                    // holds nothing else; `p` is a checked region that outlives the request.
                    unsafe {
                        let st = arena.add(slot);
                        put_header(st, load_hdr(&self.hdr));
                        std::ptr::copy_nonoverlapping(p, st.add(HDR), reg.len);
                        e.isend_coll_opt(self.comm, st, HDR + reg.len, peer, self.tag)?
                    }
                } else {
                    // SAFETY: as above: `p` is a checked region of reg.len bytes that outlives
                    // the request.
                    unsafe { e.isend_coll_opt(self.comm, p, reg.len, peer, self.tag)? }
                };
                id.map_or(Wait::Done, Wait::Req)
            } else {
                let (dst, len) =
                    // SAFETY: as above: `slot` is an offset inside the arena.
                    if staged { (unsafe { arena.add(slot) }, HDR + reg.len) } else { (p, reg.len) };
                // SAFETY: as above: dst holds len bytes (slot or region) that nothing else
                // touches until the receive completes.
                match unsafe { e.irecv_coll_opt(self.comm, dst, len, peer as i32, self.tag)? } {
                    RecvStart::Pending(id) => Wait::Req(id),
                    RecvStart::Done(st) => Wait::Early(st),
                }
            };
            b.infl.push(InFlight { wait, step: i, off: slot, staged });
        }
        Ok(())
    }

    fn finish_recv(&mut self, k: usize, st: Status) -> Result<()> {
        let b = self.b.borrow_mut();
        let f = &b.infl[k];
        let CommStep::Recv { peer, reg } = self.s.rounds[self.round].comms[f.step] else {
            return Ok(());
        };
        if f.staged {
            // SAFETY: the slot holds HDR + reg.len bytes of the arena and the receive is over.
            let stage = unsafe {
                std::slice::from_raw_parts((b.stage.as_ptr() as *const u8).add(f.off), HDR + reg.len)
            };
            if st.count >= HDR && !header_is(stage, load_hdr(&self.hdr)) {
                check_header(&stage[..HDR], &self.check, peer)?;
            }
            if st.count != HDR + reg.len {
                return Err(mismatch(format!(
                    "rank {peer} sent {} bytes where {} were expected (count mismatch)",
                    st.count.saturating_sub(HDR),
                    reg.len
                )));
            }
            let p = region(&self.a, &mut b.tmp, reg)?;
            // SAFETY: `p` is valid for reg.len bytes (checked by `region`), distinct from the arena.
            unsafe { std::ptr::copy_nonoverlapping(stage.as_ptr().add(HDR), p, reg.len) };
        } else if st.count != reg.len {
            if st.count == HDR {
                // An abort header where raw data was expected.
                let mut h = [0u8; HDR];
                let p = region(&self.a, &mut b.tmp, reg)?;
                // SAFETY: reg.len > stage_max ≥ HDR bytes were written by the receive.
                unsafe { std::ptr::copy_nonoverlapping(p, h.as_mut_ptr(), HDR) };
                check_header(&h, &self.check, peer)?;
            }
            return Err(mismatch(format!(
                "rank {peer} sent {} bytes where {} were expected (count mismatch)",
                st.count, reg.len
            )));
        }
        Ok(())
    }

    fn locals(&mut self) -> Result<()> {
        let tmp = &mut self.b.borrow_mut().tmp;
        for l in &self.s.rounds[self.round].locals {
            match *l {
                LocalStep::Copy { src, dst } => {
                    let (ps, pd) = (region(&self.a, tmp, src)? as *const u8, region(&self.a, tmp, dst)?);
                    if !std::ptr::eq(ps, pd) {
                        // SAFETY: both in bounds; `copy` allows overlap.
                        unsafe { std::ptr::copy(ps, pd, src.len) };
                    }
                }
                LocalStep::Reduce { src, dst, src_left } => {
                    let (ps, pd) = (region(&self.a, tmp, src)? as *const u8, region(&self.a, tmp, dst)?);
                    // SAFETY: in bounds; schedules never reduce a region into itself.
                    let (a, b) = unsafe {
                        (std::slice::from_raw_parts(ps, src.len), std::slice::from_raw_parts_mut(pd, dst.len))
                    };
                    if let Some(op) = self.a.op() {
                        op.apply(self.a.dt(), a, b, src_left);
                    }
                }
            }
        }
        Ok(())
    }

    /// Run to completion in the caller: per round, post its steps, wait for each engine
    /// request in turn (the engine's wait, so the progress mode applies and other activities
    /// advance meanwhile), then run its local steps.
    pub(crate) fn block(&mut self, e: &mut CollPort) -> Result<()> {
        while self.round < self.s.rounds.len() {
            self.posted = true;
            if let Err(x) = self.post(e) {
                return self.fail_and_drain(e, x);
            }
            for k in 0..self.b.borrow().infl.len() {
                let r = match self.b.borrow().infl[k].wait {
                    Wait::Done => continue,
                    Wait::Early(st) => Ok(st),
                    Wait::Req(id) => e.wait(id),
                };
                self.b.borrow_mut().infl[k].wait = Wait::Done;
                if let Err(x) = r.and_then(|st| self.finish_recv(k, st)) {
                    return self.fail_and_drain(e, x);
                }
            }
            self.b.borrow_mut().infl.clear();
            if let Err(x) = self.locals() {
                return self.fail_and_drain(e, x);
            }
            self.round += 1;
            self.posted = false;
        }
        Ok(())
    }

    fn fail_and_drain(&mut self, e: &mut CollPort, x: Error) -> Result<()> {
        // A revocation was seen before it could fail this run; any other error may come
        // without a poll (a member known dead fails the run at once).
        let seen_revoke = matches!(x, Error::Revoked);
        self.fail(e, x);
        // One progress round even when nothing is in flight: a run that fails at once (a
        // member known dead) would otherwise never read the incoming messages, and a caller
        // retrying the collective in a loop would never see the revocation it waits for.
        // After a revocation that round is no use, and it costs the caller the poll of the
        // messages racing in behind the revoke (the peers' next collective).
        if !seen_revoke {
            e.progress();
        }
        let mut spins = 0u32;
        loop {
            if let Some(r) = self.drain(e) {
                return r;
            }
            if e.progress() > 0 {
                spins = 0;
            } else {
                spins += 1;
                if spins >= 16 {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Advance as far as possible without blocking; `Some(result)` when the run is over.
    fn step(&mut self, e: &mut CollPort) -> Option<Result<()>> {
        loop {
            if self.err.is_some() {
                return self.drain(e);
            }
            if !self.posted {
                if self.round == self.s.rounds.len() {
                    return Some(Ok(()));
                }
                self.posted = true;
                if let Err(x) = self.post(e) {
                    self.fail(e, x);
                    continue;
                }
            }
            let mut pending = false;
            for k in 0..self.b.borrow().infl.len() {
                let r = match self.b.borrow().infl[k].wait {
                    Wait::Done => continue,
                    Wait::Early(st) => Ok(Some(st)),
                    Wait::Req(id) => e.take_result(id),
                };
                match r {
                    Ok(None) => pending = true,
                    Ok(Some(st)) => {
                        self.b.borrow_mut().infl[k].wait = Wait::Done;
                        if let Err(x) = self.finish_recv(k, st) {
                            self.fail(e, x);
                            break;
                        }
                    }
                    Err(x) => {
                        self.b.borrow_mut().infl[k].wait = Wait::Done;
                        self.fail(e, x);
                        break;
                    }
                }
            }
            if self.err.is_some() {
                continue;
            }
            if pending {
                return None;
            }
            self.b.borrow_mut().infl.clear();
            if let Err(x) = self.locals() {
                self.fail(e, x);
                continue;
            }
            self.round += 1;
            self.posted = false;
        }
    }

    fn fail(&mut self, e: &mut CollPort, x: Error) {
        let x = match x {
            Error::Truncated { incoming, capacity, sender, .. } => mismatch(format!(
                "rank {sender} sent {} bytes where {} were expected (count mismatch)",
                incoming.saturating_sub(HDR),
                capacity.saturating_sub(HDR)
            )),
            x => x,
        };
        // Posted receives are not withdrawn: their sender is alive and will send (data or
        // an abort), or has failed and the engine completes them. A sender may be blocked
        // on a rendezvous until we read its message, and only then see our abort.
        // Sends not posted yet: the rest of this round (posting may have stopped half-way)
        // and every later round.
        let b = self.b.borrow_mut();
        let mut peers: Vec<u32> = Vec::new();
        for (ri, r) in self.s.rounds.iter().enumerate().skip(self.round) {
            for (si, c) in r.comms.iter().enumerate() {
                let posted = ri == self.round && self.posted && b.infl.iter().any(|f| f.step == si);
                if let CommStep::Send { peer, .. } = *c {
                    if !posted && !peers.contains(&peer) {
                        peers.push(peer);
                    }
                }
            }
        }
        let (flags, a) = match &x {
            Error::ProcFailed { ranks } => (FLAG_ABORT_FAILED, ranks.first().copied().unwrap_or(u32::MAX)),
            Error::Revoked => (FLAG_ABORT_REVOKED, 0),
            _ => (FLAG_ABORT_OTHER, 0),
        };
        for p in peers {
            let mut c = self.check;
            c.root = a;
            let buf = c.encode(flags).to_vec();
            // SAFETY: `buf` is kept in `aborts` until the send completes.
            if let Ok(id) = unsafe { e.isend_coll(self.comm, buf.as_ptr(), buf.len(), p, self.tag) } {
                b.aborts.push((id, buf));
            }
        }
        self.err = Some(x);
    }

    /// After an error: wait for posted receives (data, an abort or a failure completes each)
    /// and abort messages; abandon unfinished data sends (never read by the engine itself: the
    /// arena and scratch they may point into are leaked, larger ones are rendezvous reads by
    /// the peer). `Some(error)` when done.
    fn drain(&mut self, e: &mut CollPort) -> Option<Result<()>> {
        let round = self.round.min(self.s.rounds.len().saturating_sub(1));
        let b = self.b.borrow_mut();
        let mut pending = false;
        for f in b.infl.iter_mut() {
            let Wait::Req(id) = f.wait else {
                f.wait = Wait::Done;
                continue;
            };
            let is_send =
                matches!(self.s.rounds.get(round).map(|r| r.comms[f.step]), Some(CommStep::Send { .. }));
            if is_send {
                if let Ok(None) = e.take_result(id) {
                    self.leak = true;
                }
                f.wait = Wait::Done;
                continue;
            }
            match e.take_result(id) {
                Ok(None) => pending = true,
                _ => f.wait = Wait::Done,
            }
        }
        b.aborts.retain(|(id, _)| matches!(e.take_result(*id), Ok(None)));
        if pending || !b.aborts.is_empty() {
            return None;
        }
        b.infl.clear();
        if self.leak {
            std::mem::forget(std::mem::take(&mut b.stage));
            std::mem::forget(std::mem::take(&mut b.tmp));
        }
        Some(Err(self.err.clone().expect("set")))
    }
}

/// A non-blocking run: the schedule shared with the cache, its own buffers, and the generic
/// request it completes.
pub(crate) struct NonBlockingRun {
    run: Run<Rc<Schedule>, RunBufs, OwnedArgs>,
    req: ReqId,
}

impl NonBlockingRun {
    fn advance_once(&mut self, e: &mut CollPort) -> bool {
        match self.run.step(e) {
            None => false,
            Some(r) => {
                e.complete_request(self.req, r.map(|()| Status::default()));
                true
            }
        }
    }
}

impl Activity<CollPort> for NonBlockingRun {
    fn advance(&mut self, e: &mut CollPort) -> Step {
        if self.advance_once(e) {
            Step::Done
        } else {
            Step::Continue
        }
    }
}

/// Start a non-blocking run: advance it once now (so the first messages leave at once), and
/// hand it to the engine if it is not finished.
pub(crate) fn launch(e: &mut CollPort, run: Run<Rc<Schedule>, RunBufs, OwnedArgs>, req: ReqId) {
    let mut nb = NonBlockingRun { run, req };
    if !nb.advance_once(e) {
        e.spawn(nb);
    }
}
