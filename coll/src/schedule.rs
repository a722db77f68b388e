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
//! Wire format: a message of at most `stage_max` payload bytes (the eager limit) is staged
//! through a scratch copy with a 16-byte header in front (collective kind, type size, op,
//! root, count) that the receiver compares with its own arguments, so mismatched calls give a
//! typed error instead of corrupt data. Larger messages go raw (single copy, rendezvous) and
//! are checked by exact length. After an error a run sends a 16-byte *abort* header to every
//! peer it still owed a message, so errors (including `ProcFailed`) propagate along the
//! schedule instead of leaving downstream ranks waiting.

use std::rc::Rc;

use weft_engine::{Activity, CommId, Engine, Error, ReqId, Result, Status, Step};

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
pub struct Reg {
    /// The buffer.
    pub buf: Buf,
    /// Byte offset.
    pub off: usize,
    /// Byte length.
    pub len: usize,
}

impl Reg {
    /// Region `[off, off+len)` of `buf`.
    pub const fn new(buf: Buf, off: usize, len: usize) -> Reg {
        Reg { buf, off, len }
    }
    /// Sub-region at relative offset `off`.
    pub fn sub(self, off: usize, len: usize) -> Reg {
        debug_assert!(off + len <= self.len);
        Reg { buf: self.buf, off: self.off + off, len }
    }
}

/// A communication step.
#[derive(Clone, Copy, Debug)]
pub enum CStep {
    /// Send a region to a communicator rank.
    Send { peer: u32, reg: Reg },
    /// Receive a region from a communicator rank.
    Recv { peer: u32, reg: Reg },
}

/// A local step.
#[derive(Clone, Copy, Debug)]
pub enum LStep {
    /// `dst = src` (overlap allowed; skipped when both name the same bytes).
    Copy { src: Reg, dst: Reg },
    /// `dst = src ∘ dst` (`src_left`) or `dst = dst ∘ src`.
    Reduce { src: Reg, dst: Reg, src_left: bool },
}

/// One layer of the DAG.
#[derive(Clone, Debug, Default)]
pub struct Round {
    /// Posted together.
    pub comms: Vec<CStep>,
    /// Run in order once every communication step of the round completed.
    pub locals: Vec<LStep>,
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
        self.rounds.iter().flat_map(|r| &r.comms).filter(|c| matches!(c, CStep::Send { .. })).count()
    }
}

/// Schedule builder.
#[derive(Default)]
pub struct Sb {
    rounds: Vec<Round>,
    tmp_len: usize,
}

impl Sb {
    /// An empty builder.
    pub fn new() -> Sb {
        Sb { rounds: vec![Round::default()], tmp_len: 0 }
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

    fn comm(&mut self, c: CStep) {
        // A communication step after local steps of the same round would run before them:
        // start a new round so it sees their result.
        if !self.cur().locals.is_empty() {
            self.rounds.push(Round::default());
        }
        self.cur().comms.push(c);
    }

    /// Send `reg` to `peer`.
    pub fn send(&mut self, peer: u32, reg: Reg) {
        self.comm(CStep::Send { peer, reg });
    }

    /// Receive `reg` from `peer`.
    pub fn recv(&mut self, peer: u32, reg: Reg) {
        self.comm(CStep::Recv { peer, reg });
    }

    /// `dst = src` after this round's communication.
    pub fn copy(&mut self, src: Reg, dst: Reg) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 && src != dst {
            self.cur().locals.push(LStep::Copy { src, dst });
        }
    }

    /// `dst = src ∘ dst` (`src_left`) or `dst ∘ src`, after this round's communication.
    pub fn reduce(&mut self, src: Reg, dst: Reg, src_left: bool) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 {
            self.cur().locals.push(LStep::Reduce { src, dst, src_left });
        }
    }

    /// Allocate `len` scratch bytes (16-byte aligned offsets).
    pub fn tmp(&mut self, len: usize) -> Reg {
        let off = self.tmp_len.div_ceil(16) * 16;
        self.tmp_len = off + len;
        Reg::new(Buf::Tmp, off, len)
    }

    /// The schedule.
    pub fn finish(mut self) -> Schedule {
        self.rounds.retain(|r| !r.comms.is_empty() || !r.locals.is_empty());
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
    fn encode(&self, flags: u8) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        h[0] = self.kind;
        h[1] = self.esize;
        h[2] = self.op;
        h[3] = flags;
        h[4..8].copy_from_slice(&self.root.to_le_bytes());
        h[8..16].copy_from_slice(&self.count.to_le_bytes());
        h
    }
}

fn mismatch(what: String) -> Error {
    Error::InvalidArg(format!("collective argument mismatch: {what}"))
}

/// Decode a header received from `peer` and compare it with ours.
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

/// A communication step in flight.
struct Infl {
    id: ReqId,
    step: usize,
    stage: Vec<u8>,
    staged: bool,
    done: bool,
}

/// Buffers and arguments of one run.
pub(crate) struct RunArgs {
    pub send: *const u8,
    pub send_len: usize,
    pub recv: *mut u8,
    pub recv_len: usize,
    pub dt: DType,
    pub op: Option<Op>,
    pub check: Check,
}

/// The executor: an engine activity that runs one schedule and completes a generic request.
pub(crate) struct Run {
    s: Rc<Schedule>,
    comm: CommId,
    tag: i32,
    a: RunArgs,
    tmp: Vec<u64>,
    req: ReqId,
    stage_max: usize,
    round: usize,
    posted: bool,
    infl: Vec<Infl>,
    err: Option<Error>,
    /// Abort messages in flight (after an error); the run ends when they are out.
    aborts: Vec<(ReqId, Vec<u8>)>,
}

impl Run {
    pub(crate) fn new(
        s: Rc<Schedule>,
        comm: CommId,
        tag: i32,
        a: RunArgs,
        req: ReqId,
        stage_max: usize,
    ) -> Run {
        let tmp = vec![0u64; s.tmp_len.div_ceil(8)];
        Run {
            s,
            comm,
            tag,
            a,
            tmp,
            req,
            stage_max,
            round: 0,
            posted: false,
            infl: Vec::new(),
            err: None,
            aborts: Vec::new(),
        }
    }

    fn ptr(&mut self, r: Reg) -> Result<*mut u8> {
        let (base, cap) = match r.buf {
            Buf::Send => (self.a.send as *mut u8, self.a.send_len),
            Buf::Recv => (self.a.recv, self.a.recv_len),
            Buf::Tmp => (self.tmp.as_mut_ptr() as *mut u8, self.tmp.len() * 8),
        };
        if r.off + r.len > cap || (base.is_null() && r.len > 0) {
            return Err(Error::InvalidArg(format!(
                "collective buffer too short: needs {} bytes of the {:?} buffer, has {cap}",
                r.off + r.len,
                r.buf
            )));
        }
        // SAFETY: in bounds of a buffer the caller guaranteed valid for this run.
        Ok(unsafe { base.add(r.off) })
    }

    fn slice(&mut self, r: Reg) -> Result<&[u8]> {
        let p = self.ptr(r)?;
        // SAFETY: bounds checked by `ptr`; the caller guaranteed validity.
        Ok(unsafe { std::slice::from_raw_parts(p, r.len) })
    }

    fn post(&mut self, e: &mut Engine) -> Result<()> {
        let s = self.s.clone();
        for (i, c) in s.rounds[self.round].comms.iter().enumerate() {
            let (peer, reg, is_send) = match *c {
                CStep::Send { peer, reg } => (peer, reg, true),
                CStep::Recv { peer, reg } => (peer, reg, false),
            };
            let staged = reg.len <= self.stage_max;
            let mut stage = Vec::new();
            let id = if is_send {
                if staged {
                    stage.reserve_exact(HDR + reg.len);
                    stage.extend_from_slice(&self.a.check.encode(0));
                    let data = self.slice(reg)?;
                    stage.extend_from_slice(data);
                    // SAFETY: `stage` is kept in `infl` (or leaked) until the send completes.
                    unsafe { e.isend_coll(self.comm, stage.as_ptr(), stage.len(), peer, self.tag) }
                } else {
                    let p = self.ptr(reg)?;
                    // SAFETY: the caller keeps the buffers valid until the run completes.
                    unsafe { e.isend_coll(self.comm, p, reg.len, peer, self.tag) }
                }
            } else if staged {
                stage.resize(HDR + reg.len, 0);
                self.ptr(reg)?;
                // SAFETY: as above.
                unsafe { e.irecv_coll(self.comm, stage.as_mut_ptr(), stage.len(), peer as i32, self.tag) }
            } else {
                let p = self.ptr(reg)?;
                // SAFETY: as above.
                unsafe { e.irecv_coll(self.comm, p, reg.len, peer as i32, self.tag) }
            };
            let id = id?;
            self.infl.push(Infl { id, step: i, stage, staged, done: false });
        }
        Ok(())
    }

    fn finish_recv(&mut self, k: usize, st: Status) -> Result<()> {
        let s = self.s.clone();
        let CStep::Recv { peer, reg } = s.rounds[self.round].comms[self.infl[k].step] else {
            return Ok(());
        };
        if self.infl[k].staged {
            let stage = std::mem::take(&mut self.infl[k].stage);
            if st.count >= HDR {
                check_header(&stage[..HDR], &self.a.check, peer)?;
            }
            if st.count != HDR + reg.len {
                return Err(mismatch(format!(
                    "rank {peer} sent {} bytes where {} were expected (count mismatch)",
                    st.count.saturating_sub(HDR),
                    reg.len
                )));
            }
            let p = self.ptr(reg)?;
            // SAFETY: `p` is valid for reg.len bytes (checked by `ptr`).
            unsafe { std::ptr::copy_nonoverlapping(stage.as_ptr().add(HDR), p, reg.len) };
        } else if st.count != reg.len {
            if st.count == HDR {
                // An abort header where raw data was expected.
                let mut h = [0u8; HDR];
                let p = self.ptr(reg)?;
                // SAFETY: reg.len > stage_max ≥ HDR bytes were written by the receive.
                unsafe { std::ptr::copy_nonoverlapping(p, h.as_mut_ptr(), HDR) };
                check_header(&h, &self.a.check, peer)?;
            }
            return Err(mismatch(format!(
                "rank {peer} sent {} bytes where {} were expected (count mismatch)",
                st.count, reg.len
            )));
        }
        Ok(())
    }

    fn locals(&mut self) -> Result<()> {
        let s = self.s.clone();
        for l in &s.rounds[self.round].locals {
            match *l {
                LStep::Copy { src, dst } => {
                    let (ps, pd) = (self.ptr(src)? as *const u8, self.ptr(dst)?);
                    if !std::ptr::eq(ps, pd) {
                        // SAFETY: both in bounds; `copy` allows overlap.
                        unsafe { std::ptr::copy(ps, pd, src.len) };
                    }
                }
                LStep::Reduce { src, dst, src_left } => {
                    let (ps, pd) = (self.ptr(src)? as *const u8, self.ptr(dst)?);
                    // SAFETY: in bounds; schedules never reduce a region into itself.
                    let (a, b) = unsafe {
                        (std::slice::from_raw_parts(ps, src.len), std::slice::from_raw_parts_mut(pd, dst.len))
                    };
                    if let Some(op) = &self.a.op {
                        op.apply(self.a.dt, a, b, src_left);
                    }
                }
            }
        }
        Ok(())
    }

    /// Advance as far as possible; true when the run is over (request completed).
    fn step(&mut self, e: &mut Engine) -> bool {
        loop {
            if self.err.is_some() {
                return self.drain(e);
            }
            if !self.posted {
                if self.round == self.s.rounds.len() {
                    e.complete_request(self.req, Ok(Status::default()));
                    return true;
                }
                self.posted = true;
                if let Err(x) = self.post(e) {
                    self.fail(e, x);
                    continue;
                }
            }
            let mut pending = false;
            for k in 0..self.infl.len() {
                if self.infl[k].done {
                    continue;
                }
                match e.take_result(self.infl[k].id) {
                    Ok(None) => pending = true,
                    Ok(Some(st)) => {
                        self.infl[k].done = true;
                        if let Err(x) = self.finish_recv(k, st) {
                            self.fail(e, x);
                            break;
                        }
                    }
                    Err(x) => {
                        self.infl[k].done = true;
                        self.fail(e, x);
                        break;
                    }
                }
            }
            if self.err.is_some() {
                continue;
            }
            if pending {
                return false;
            }
            self.infl.clear();
            if let Err(x) = self.locals() {
                self.fail(e, x);
                continue;
            }
            self.round += 1;
            self.posted = false;
        }
    }

    fn fail(&mut self, e: &mut Engine, x: Error) {
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
        let mut peers: Vec<u32> = Vec::new();
        for (ri, r) in self.s.rounds.iter().enumerate().skip(self.round) {
            for (si, c) in r.comms.iter().enumerate() {
                let posted = ri == self.round && self.posted && self.infl.iter().any(|f| f.step == si);
                if let CStep::Send { peer, .. } = *c {
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
            let mut c = self.a.check;
            c.root = a;
            let buf = c.encode(flags).to_vec();
            // SAFETY: `buf` is kept in `aborts` until the send completes.
            if let Ok(id) = unsafe { e.isend_coll(self.comm, buf.as_ptr(), buf.len(), p, self.tag) } {
                self.aborts.push((id, buf));
            }
        }
        self.err = Some(x);
    }

    /// After an error: wait for posted receives (data, an abort or a failure completes each)
    /// and abort messages; abandon unfinished data sends (never read by the engine itself: staged
    /// buffers are leaked, larger ones are rendezvous reads by the peer).
    fn drain(&mut self, e: &mut Engine) -> bool {
        let s = self.s.clone();
        let round = self.round.min(s.rounds.len().saturating_sub(1));
        let mut pending = false;
        for f in self.infl.iter_mut().filter(|f| !f.done) {
            let is_send = matches!(s.rounds.get(round).map(|r| r.comms[f.step]), Some(CStep::Send { .. }));
            if is_send {
                match e.take_result(f.id) {
                    Ok(None) => {
                        std::mem::forget(std::mem::take(&mut f.stage));
                        f.done = true;
                    }
                    _ => f.done = true,
                }
                continue;
            }
            match e.take_result(f.id) {
                Ok(None) => pending = true,
                _ => f.done = true,
            }
        }
        self.aborts.retain(|(id, _)| matches!(e.take_result(*id), Ok(None)));
        if pending || !self.aborts.is_empty() {
            return false;
        }
        let err = self.err.clone().expect("set");
        e.complete_request(self.req, Err(err));
        true
    }
}

impl Activity for Run {
    fn advance(&mut self, e: &mut Engine) -> Step {
        if self.step(e) {
            Step::Done
        } else {
            Step::Continue
        }
    }
}

/// Start a run: advance it once now (so the first messages leave at once), and hand it to
/// the engine if it is not finished.
pub(crate) fn launch(e: &mut Engine, mut run: Run) {
    if !run.step(e) {
        e.spawn(Box::new(run));
    }
}
