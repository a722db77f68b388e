//! The progress engine: point-to-point send/receive paths, rendezvous, progress and failures.
//!
//! One engine per process, driven from the caller's thread: every blocking call and every
//! test/wait runs [`Engine::progress`]. Message path: `isend` → route table → transport
//! `try_send` (or the per-destination pending queue when the transport is full); arrival:
//! transport `poll` → [`Core::on_message`] → posted-receive match or unexpected queue.
//! Large messages use rendezvous: RTS (carrying the exposed buffer) → receiver `get` straight
//! into the user buffer → FIN back to the sender.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::buffer::UserBuf;
use crate::comm::ErrScope;
use crate::comm::{CommState, Comms};
use crate::error::{Error, Result};
use crate::failure::Failures;
use crate::matching::{Arrived, Matching, Posted, Unexpected};
use crate::request::{Phase, RecvStart, Req, ReqId, Requests};
use crate::transport::{class, GetStatus, Header, RKey, Transport, TransportError};
use crate::{CommId, Status, ANY_SOURCE, ANY_TAG, MAX_TAG};

const ROUTE_SELF: u8 = u8::MAX;
const ROUTE_NONE: u8 = u8::MAX - 1;
/// Longest `finalize` waits for its peers to confirm its goodbye.
pub const FINALIZE_WAIT: Duration = Duration::from_secs(10);
/// RTS payload: sender request id (8 bytes) + remote key.
const RTS_BODY: usize = 8 + std::mem::size_of::<RKey>();
/// Buffers kept in the arrival pool ([`Core::recycle_buf`]).
const BUF_POOL_MAX: usize = 64;
/// Largest buffer capacity kept in the arrival pool.
const BUF_POOL_CAP: usize = 4096;

/// A copy of `payload` in a buffer from `pool` (see [`Core::recycle_buf`]).
#[inline]
fn pooled_copy(pool: &mut Vec<Vec<u8>>, payload: &[u8]) -> Vec<u8> {
    let mut b = pool.pop().unwrap_or_default();
    b.extend_from_slice(payload);
    b
}

/// How waiting callers spend idle time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// Spin on progress (lowest latency; one rank per core).
    Poll,
    /// Yield the core after a short spin (more ranks than cores).
    Yield,
}

/// Engine settings (the facade fills them from `WEFT_*` variables).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Idle behaviour of blocking calls.
    pub progress: ProgressMode,
    /// Period of the slow path (failure polling of transports and runtime).
    pub slow_period: Duration,
    /// Largest message a transport may send eagerly, capped by the transport's own limit.
    pub eager_limit: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            progress: ProgressMode::Poll,
            slow_period: Duration::from_micros(200),
            eager_limit: usize::MAX,
        }
    }
}

/// Counters for tests and diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Messages handed to each transport, by transport index (eager, RTS and FIN).
    pub sent_by_transport: Vec<u64>,
    /// Messages delivered to self without a transport.
    pub sent_self: u64,
    /// Rendezvous transfers completed as receiver.
    pub rndv_gets: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected: u64,
    /// Malformed messages dropped.
    pub malformed: u64,
    /// Messages dropped because their sender had been declared failed.
    pub dropped_from_failed: u64,
    /// Last malformed message seen, if any.
    pub last_malformed: Option<Error>,
}

/// An out-of-band source of failure notices (the runtime's termination events): appends
/// newly failed world ranks.
pub type FailureSource = Box<dyn FnMut(&mut Vec<u32>)>;

/// A message waiting for transport space, in per-destination FIFO order.
pub(crate) struct Outgoing {
    pub(crate) hdr: Header,
    pub(crate) body: Body,
    /// Eager sends complete when handed to the transport.
    pub(crate) complete: Option<ReqId>,
}

pub(crate) enum Body {
    User(UserBuf),
    Inline([u8; RTS_BODY], u8),
    Owned(Vec<u8>),
}

impl Body {
    fn bytes(&self) -> &[u8] {
        match self {
            Body::User(b) => b.as_slice(),
            Body::Inline(a, n) => &a[..*n as usize],
            Body::Owned(v) => v,
        }
    }
}

/// A matched RTS whose data must be read.
struct RndvTodo {
    req: ReqId,
    peer_world: u32,
    sreq: u64,
    ctx: u32,
    key: RKey,
    len: usize,
    status: Status,
}

/// An asynchronous read in flight.
struct GetInFlight {
    token: u64,
    transport: usize,
    req: ReqId,
    peer_world: u32,
    sreq: u64,
    ctx: u32,
}

/// Everything except the transports, so that a transport's `poll` can borrow the transport
/// while the sink borrows the rest.
pub(crate) struct Core {
    pub(crate) me: u32,
    pub(crate) route: Vec<u8>,
    pub(crate) comms: Comms,
    pub(crate) world: CommId,
    pub(crate) q: Matching,
    pub(crate) reqs: Requests,
    pub(crate) pending: Vec<VecDeque<Outgoing>>,
    pub(crate) n_pending: usize,
    rndv_todo: Vec<RndvTodo>,
    /// Exposures whose FIN arrived; withdrawn after the poll that saw it.
    unexpose_todo: Vec<(u32, RKey)>,
    gets: Vec<GetInFlight>,
    pub(crate) failed: Failures,
    pub(crate) next_ctx: u32,
    pub(crate) stats: Stats,
    /// Messages of upper-layer classes, dispatched to their handlers after the poll.
    pub(crate) ctrl_inbox: Vec<(u32, Header, Vec<u8>)>,
    /// Emptied payload buffers, reused for new arrivals the engine must hold: unexpected
    /// eager messages (until a receive matches them) and control messages (until dispatch).
    /// A sender that runs ahead of its receiver (a pipelined broadcast) would otherwise cost
    /// one allocation and one free per message.
    buf_pool: Vec<Vec<u8>>,
    /// Finalize handshake: goodbyes sent, peers that confirmed ours, acknowledgements owed.
    bye_sent: Vec<bool>,
    confirmed: Vec<bool>,
    acks_to_send: Vec<u32>,
    /// Set whenever work other than polling the transports may be waiting — a matched RTS,
    /// an exposure to withdraw, queued sends, reads in flight, upper-layer messages,
    /// goodbye acknowledgements, activities, a new failure for the slow activities — and
    /// recomputed once that work has run: a progress call of failure-free point-to-point
    /// traffic reads this one word after the poll.
    pub(crate) aux: bool,
    /// The request a blocking [`Engine::wait`] is waiting for (`None` otherwise): a message
    /// that completes it ends the transports' poll at once ([`Core::on_message`]), unless
    /// messages are streaming in.
    awaited: Option<ReqId>,
    /// The last receive posted found its message already arrived (unexpected): messages are
    /// coming in faster than they are received, so a poll that completes the awaited request
    /// goes on reading — the next messages are likely there, and taking them in one batch
    /// saves their receives a request each.
    streaming: bool,
    /// A blocking upper-layer call ([`Engine::idle_wait_ctrl`]) waits for control traffic:
    /// a control message ends the poll, as the awaited request's completion does.
    awaiting_ctrl: bool,
    /// Awaited completions since the last one that went on reading anyway (to notice that
    /// messages started streaming; see [`PROBE_EVERY`]).
    probe: u8,
}

/// While not streaming, one awaited completion in this many still lets the poll read on.
const PROBE_EVERY: u8 = 64;

/// The progress engine of one process.
pub struct Engine {
    transports: Vec<Box<dyn Transport>>,
    eager: Vec<usize>,
    failure_sources: Vec<FailureSource>,
    pub(crate) core: Core,
    cfg: EngineConfig,
    idle: u32,
    last_slow: Instant,
    scratch: Vec<u32>,
    pub(crate) ext: crate::extend::Extensions,
}

fn user_status(source: u32, tag: i32, count: usize) -> Status {
    Status { source, tag, count }
}

fn check_tag(tag: i32, wildcard_ok: bool) -> Result<()> {
    if (0..=MAX_TAG).contains(&tag) || (wildcard_ok && tag == ANY_TAG) {
        Ok(())
    } else {
        Err(Error::InvalidTag(tag))
    }
}

impl Engine {
    /// An engine for world rank `me` of `nprocs`, with no transports yet (only self-sends).
    pub fn new(me: u32, nprocs: u32, cfg: EngineConfig) -> Engine {
        let mut comms = Comms::default();
        let world = comms.insert(CommState::new(0, me, (0..nprocs).collect()));
        let mut q = Matching::default();
        for ctx in [0, 1] {
            q.ctx(ctx).expect("ctx 0/1 in range").comm = Some(world);
        }
        let mut route = vec![ROUTE_NONE; nprocs as usize];
        if let Some(r) = route.get_mut(me as usize) {
            *r = ROUTE_SELF;
        }
        Engine {
            transports: Vec::new(),
            eager: Vec::new(),
            failure_sources: Vec::new(),
            core: Core {
                me,
                route,
                comms,
                world,
                q,
                reqs: Requests::default(),
                pending: (0..nprocs).map(|_| VecDeque::new()).collect(),
                n_pending: 0,
                rndv_todo: Vec::new(),
                unexpose_todo: Vec::new(),
                gets: Vec::new(),
                failed: Failures::new(nprocs),
                next_ctx: 2,
                stats: Stats::default(),
                ctrl_inbox: Vec::new(),
                buf_pool: Vec::new(),
                bye_sent: vec![false; nprocs as usize],
                confirmed: vec![false; nprocs as usize],
                acks_to_send: Vec::new(),
                aux: false,
                awaited: None,
                streaming: false,
                awaiting_ctrl: false,
                probe: 0,
            },
            cfg,
            ext: Default::default(),
            idle: 0,
            last_slow: Instant::now(),
            scratch: Vec::new(),
        }
    }

    /// Add a transport that reaches the world ranks `peers`; returns its index.
    /// A later transport does not override an earlier one for the same peer.
    pub fn add_transport(&mut self, t: Box<dyn Transport>, peers: &[u32]) -> usize {
        let idx = self.transports.len();
        assert!(idx < ROUTE_NONE as usize, "too many transports");
        for &p in peers {
            if let Some(r) = self.core.route.get_mut(p as usize) {
                if *r == ROUTE_NONE {
                    *r = idx as u8;
                }
            }
        }
        self.eager.push(t.eager_limit().min(self.cfg.eager_limit));
        self.transports.push(t);
        self.core.stats.sent_by_transport.push(0);
        idx
    }

    /// Add an out-of-band failure source (the runtime's termination events), polled on the
    /// slow path.
    pub fn add_failure_source(&mut self, f: FailureSource) {
        self.failure_sources.push(f);
    }

    /// Name of the transport that carries traffic to world rank `peer` ("self", "none", ...).
    pub fn route_name(&self, peer: u32) -> &'static str {
        match self.core.route.get(peer as usize) {
            Some(&ROUTE_SELF) => "self",
            Some(&r) if (r as usize) < self.transports.len() => self.transports[r as usize].name(),
            _ => "none",
        }
    }

    /// Name of each transport, by index (the index used in [`Stats::sent_by_transport`]).
    pub fn transport_names(&self) -> Vec<&'static str> {
        self.transports.iter().map(|t| t.name()).collect()
    }

    pub(crate) fn transport_count(&self) -> usize {
        self.transports.len()
    }

    pub(crate) fn eager_limit_of(&self, t: usize) -> usize {
        self.eager[t]
    }

    /// The world communicator.
    pub fn world(&self) -> CommId {
        self.core.world
    }

    /// This process's world rank.
    pub fn world_rank(&self) -> u32 {
        self.core.me
    }

    /// Whether `c` names a live communicator.
    #[inline]
    pub fn comm_live(&self, c: CommId) -> bool {
        self.core.comms.get(c).is_ok()
    }

    /// Rank of this process in `c`.
    pub fn comm_rank(&self, c: CommId) -> Result<u32> {
        Ok(self.core.comms.get(c)?.rank)
    }

    /// Size of `c`.
    pub fn comm_size(&self, c: CommId) -> Result<u32> {
        Ok(self.core.comms.get(c)?.size())
    }

    /// World rank of rank `r` of `c`.
    pub fn comm_world_rank(&self, c: CommId, r: u32) -> Result<u32> {
        self.core.comms.get(c)?.world_dest(r)
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.core.stats
    }

    /// Number of requests not yet completed by test/wait.
    pub fn live_requests(&self) -> usize {
        self.core.reqs.live()
    }

    /// A human-readable dump of queues and requests, for diagnosing hangs.
    pub fn debug_state(&mut self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "rank {}: {} live requests, {} queued sends",
            self.core.me,
            self.core.reqs.live(),
            self.core.n_pending
        );
        for (ctx, qs) in self.core.q.iter_mut().enumerate() {
            if qs.posted.is_empty() && qs.unexpected.is_empty() {
                continue;
            }
            let posted: Vec<_> = qs.posted.iter().map(|p| (p.src(), p.tag())).collect();
            let unexp: Vec<_> = qs
                .unexpected
                .iter()
                .map(|u| (u.src, u.tag, u.data.len(), matches!(u.data, Arrived::Rts { .. })))
                .collect();
            let _ = writeln!(
                out,
                "  ctx {ctx}: posted (src,tag) {posted:?}; unexpected (src,tag,len,rts) {unexp:?}"
            );
        }
        self.core.reqs.for_each_mut(|id, r| {
            let _ = writeln!(
                out,
                "  req {id:?}: send={} peer={} tag={} phase={:?}",
                r.is_send, r.peer, r.tag, r.phase
            );
        });
        out
    }

    /// Messages waiting in per-destination queues for transport space.
    pub fn pending_sends(&self) -> usize {
        self.core.n_pending
    }

    /// True while `id` names a request that test/wait has not returned yet.
    pub fn is_pending(&self, id: ReqId) -> bool {
        self.core.reqs.get(id).is_some()
    }

    /// Withdraw a request that has not started moving data: a posted receive that has not
    /// matched, or an eager send still queued for transport space. Returns true if it was
    /// cancelled (and freed); false if it is already under way or done (wait for it).
    pub fn cancel(&mut self, id: ReqId) -> Result<bool> {
        let r = self.core.reqs.get(id).ok_or(Error::InvalidRequest)?;
        match r.phase {
            Phase::RecvPosted => {
                let ctx = self.core.comms.get(r.comm).map(|c| c.ctx).ok();
                for x in ctx.into_iter().flat_map(|c| [c, c + 1]) {
                    if let Some(qs) = self.core.q.ctx(x) {
                        qs.posted.retain(|p| p.req != id);
                    }
                }
            }
            Phase::SendQueued => {
                let w = r.peer_world as usize;
                let before = self.core.pending[w].len();
                self.core.pending[w].retain(|o| o.complete != Some(id));
                self.core.n_pending -= before - self.core.pending[w].len();
            }
            _ => return Ok(false),
        }
        self.core.reqs.remove(id);
        Ok(true)
    }

    // ----------------------------------------------------------------------------- send

    /// Blocking send of `buf` to rank `dst` of `c` with `tag`.
    pub fn send(&mut self, c: CommId, buf: &[u8], dst: u32, tag: i32) -> Result<()> {
        // SAFETY: `buf` is borrowed for the whole call and the request is waited for before
        // returning, so the engine never touches it after this function returns.
        let id = unsafe { self.isend_ctx(c, 0, buf.as_ptr(), buf.len(), dst, tag, false)? };
        match id {
            None => Ok(()),
            Some(id) => self.wait(id).map(|_| ()),
        }
    }

    /// Start a send; the request completes when `buf` may be reused.
    ///
    /// # Safety
    /// `buf` must stay valid for reads of `len` bytes, and must not be written, until the
    /// request has completed (test/wait returned it).
    pub unsafe fn isend(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.isend_ctx(c, 0, buf, len, dst, tag, true) }.map(|r| r.expect("req forced"))
    }

    /// The send path. `coll` selects the internal context (`ctx + 1`). With `want_req` false
    /// an eager send that completes at once returns `None` (no request allocated).
    ///
    /// # Safety
    /// As [`Engine::isend`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn isend_ctx(
        &mut self,
        c: CommId,
        coll: u32,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
        want_req: bool,
    ) -> Result<Option<ReqId>> {
        if buf.is_null() && len > 0 {
            return Err(Error::InvalidArg("null send buffer with nonzero length".into()));
        }
        check_tag(tag, false)?;
        let comm = self.core.comms.get(c)?;
        if comm.revoked {
            return Err(Error::Revoked);
        }
        let w = comm.world_dest(dst)?;
        if self.core.failed.any() && comm.scope != ErrScope::Local {
            self.core.scope_check(comm)?;
        }
        if self.core.failed.is_failed(w) {
            return Err(Error::ProcFailed { ranks: vec![dst] });
        }
        let hdr = Header {
            class: class::EAGER,
            flags: 0,
            reserved: 0,
            ctx: comm.ctx + coll,
            src: comm.rank,
            tag,
            len: len as u64,
        };
        // SAFETY: the caller guarantees buf/len validity until the request completes.
        let ubuf = unsafe { UserBuf::new(buf as *mut u8, len) };
        let status = user_status(dst, tag, len);
        let route = self.core.route[w as usize];
        if route == ROUTE_SELF {
            self.core.stats.sent_self += 1;
            self.core.on_message(w, &hdr, ubuf.as_slice());
            return Ok(self.done_req(want_req, c, w, dst, tag, status));
        }
        if route == ROUTE_NONE {
            return Err(Error::Transport(TransportError::Invalid(format!(
                "no transport reaches world rank {w}"
            ))));
        }
        let t = route as usize;
        if len <= self.eager[t] {
            if self.core.pending[w as usize].is_empty()
                && self.transports[t]
                    .try_send(w, &hdr, ubuf.as_slice())
                    .map_err(|e| self.core.tx_err(e, dst))?
            {
                self.core.stats.sent_by_transport[t] += 1;
                return Ok(self.done_req(want_req, c, w, dst, tag, status));
            }
            let id = self.core.reqs.insert(Req {
                comm: c,
                peer_world: w,
                peer: dst as i32,
                tag,
                buf: ubuf,
                is_send: true,
                phase: Phase::SendQueued,
            });
            self.core.enqueue(w, Outgoing { hdr, body: Body::User(ubuf), complete: Some(id) });
            return Ok(Some(id));
        }
        // Rendezvous: expose the buffer, send an RTS carrying our request id and the key.
        let key = self.transports[t].expose(w, buf, len)?;
        let id = self.core.reqs.insert(Req {
            comm: c,
            peer_world: w,
            peer: dst as i32,
            tag,
            buf: ubuf,
            is_send: true,
            phase: Phase::SendAwaitFin { key },
        });
        let mut body = [0u8; RTS_BODY];
        body[..8].copy_from_slice(&id.to_raw().to_le_bytes());
        body[8..].copy_from_slice(&key);
        let hdr = Header { class: class::RTS, ..hdr };
        let out = Outgoing { hdr, body: Body::Inline(body, RTS_BODY as u8), complete: None };
        self.send_or_queue(t, w, out);
        Ok(Some(id))
    }

    /// The request of a send that completed at once, if the caller wants one.
    #[inline(always)]
    fn done_req(
        &mut self,
        want_req: bool,
        c: CommId,
        w: u32,
        peer: u32,
        tag: i32,
        st: Status,
    ) -> Option<ReqId> {
        if !want_req {
            return None;
        }
        Some(self.core.reqs.insert(Req {
            comm: c,
            peer_world: w,
            peer: peer as i32,
            tag,
            buf: UserBuf::EMPTY,
            is_send: true,
            phase: Phase::Done(Ok(st)),
        }))
    }

    /// Send now if nothing is queued ahead for `w`. True if the message is gone: sent, or
    /// the peer is dead (the failure sweep completes what waited on it).
    #[inline]
    fn try_send_now(&mut self, t: usize, w: u32, hdr: &Header, bytes: &[u8]) -> bool {
        if !self.core.pending[w as usize].is_empty() {
            return false;
        }
        match self.transports[t].try_send(w, hdr, bytes) {
            Ok(true) => {
                self.core.stats.sent_by_transport[t] += 1;
                true
            }
            Ok(false) => false,
            Err(_) => {
                self.notify_failed(w);
                true
            }
        }
    }

    /// As [`Engine::send_or_queue`] for a borrowed payload: sent straight from `payload`
    /// when nothing is queued ahead, copied only to be queued.
    pub(crate) fn send_bytes_or_queue(&mut self, t: usize, w: u32, hdr: Header, payload: &[u8]) {
        if !self.try_send_now(t, w, &hdr, payload) {
            self.core.enqueue(w, Outgoing { hdr, body: Body::Owned(payload.to_vec()), complete: None });
        }
    }

    /// Send a header-only or inline message now if possible, else queue it behind earlier ones.
    pub(crate) fn send_or_queue(&mut self, t: usize, w: u32, out: Outgoing) {
        if !self.try_send_now(t, w, &out.hdr, out.body.bytes()) {
            self.core.enqueue(w, out);
        }
    }

    // -------------------------------------------------------------------------- receive

    /// Blocking receive into `buf` from `src` (or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    pub fn recv(&mut self, c: CommId, buf: &mut [u8], src: i32, tag: i32) -> Result<Status> {
        // SAFETY: `buf` is borrowed mutably for the whole call and the request is waited for
        // (or found complete) before returning.
        let id = unsafe { self.irecv_ctx(c, 0, buf.as_mut_ptr(), buf.len(), src, tag, true)?.pending() };
        self.wait(id)
    }

    /// Post a receive; the request completes when data is in `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid for writes of `len` bytes, and must not be accessed otherwise,
    /// until the request has completed.
    pub unsafe fn irecv(&mut self, c: CommId, buf: *mut u8, len: usize, src: i32, tag: i32) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.irecv_ctx(c, 0, buf, len, src, tag, true).map(RecvStart::pending) }
    }

    /// The receive path. `coll` selects the internal context (`ctx + 1`). With `want_req`
    /// false a receive matched at once by an eager message already here returns its status
    /// (or its error) without allocating a request.
    ///
    /// # Safety
    /// As [`Engine::irecv`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn irecv_ctx(
        &mut self,
        c: CommId,
        coll: u32,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
        want_req: bool,
    ) -> Result<RecvStart> {
        if buf.is_null() && len > 0 {
            return Err(Error::InvalidArg("null receive buffer with nonzero length".into()));
        }
        check_tag(tag, true)?;
        let comm = self.core.comms.get(c)?;
        if comm.revoked {
            return Err(Error::Revoked);
        }
        if self.core.failed.any() && comm.scope != ErrScope::Local {
            self.core.scope_check(comm)?;
        }
        let size = comm.size();
        let src_world = if src == ANY_SOURCE {
            u32::MAX
        } else if src >= 0 && (src as u32) < size {
            comm.world_of[src as usize]
        } else {
            return Err(Error::InvalidRank { rank: src as i64, size });
        };
        let ctx = comm.ctx + coll;
        // SAFETY: the caller guarantees buf/len validity until the request completes.
        let ubuf = unsafe { UserBuf::new(buf, len) };
        // Built where it is inserted, from values in registers: a `Req` built early on the
        // stack and copied into the slot later was re-read in 16-byte pieces over smaller
        // stores, a store-forwarding stall on every posted receive.
        let req =
            |phase| Req { comm: c, peer_world: src_world, peer: src, tag, buf: ubuf, is_send: false, phase };
        let qs = self.core.q.ctx(ctx).ok_or(Error::InvalidComm)?;
        let found = qs.take_unexpected(src, tag);
        self.core.streaming = found.is_some();
        if let Some(u) = found {
            let status = user_status(u.src, u.tag, u.data.len());
            match u.data {
                Arrived::Eager(data) => {
                    ubuf.fill(&data);
                    self.core.recycle_buf(data);
                    let res = Core::recv_result(status, ubuf.len());
                    if !want_req {
                        return res.map(RecvStart::Done);
                    }
                    return Ok(RecvStart::Pending(self.core.reqs.insert(req(Phase::Done(res)))));
                }
                Arrived::Rts { sreq, key, len } => {
                    let id = self.core.reqs.insert(req(Phase::RecvPosted));
                    self.core.aux = true;
                    self.core.rndv_todo.push(RndvTodo {
                        req: id,
                        peer_world: u.src_world,
                        sreq,
                        ctx,
                        key,
                        len: len as usize,
                        status,
                    });
                    self.run_rndv();
                    return Ok(RecvStart::Pending(id));
                }
            }
        }
        if src_world != u32::MAX && self.core.failed.is_failed(src_world) {
            return Err(Error::ProcFailed { ranks: vec![src as u32] });
        }
        let id = self.core.reqs.insert(req(Phase::RecvPosted));
        let qs = self.core.q.ctx(ctx).expect("checked above");
        qs.posted.push_back(Posted::new(src, tag, id));
        Ok(RecvStart::Pending(id))
    }

    /// Start the reads of matched RTS messages (after a poll, or when a receive matched one).
    fn run_rndv(&mut self) {
        while let Some(todo) = self.core.rndv_todo.pop() {
            let Some(req) = self.core.reqs.get(todo.req) else {
                continue;
            };
            let buf = req.buf;
            let n = todo.len.min(buf.len());
            let t = self.core.route[todo.peer_world as usize];
            if t as usize >= self.transports.len() {
                self.core.finish(todo.req, Err(Error::ProcFailed { ranks: vec![todo.status.source] }));
                continue;
            }
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
                    let err = self.core.tx_err(e, todo.status.source);
                    self.core.finish(todo.req, Err(err));
                }
            }
        }
    }

    fn send_fin(&mut self, t: usize, w: u32, ctx: u32, sreq: u64) {
        let hdr = Header { class: class::FIN, flags: 0, reserved: 0, ctx, src: 0, tag: 0, len: sreq };
        self.send_or_queue(t, w, Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None });
    }

    // ------------------------------------------------------------------------- progress

    /// Make progress on every transport once; returns how many events happened.
    pub fn progress(&mut self) -> usize {
        let mut n = 0;
        let core = &mut self.core;
        for t in self.transports.iter_mut() {
            n += t.poll_until(64, &mut |peer, h, p| core.on_message(peer, h, p));
        }
        if self.core.aux {
            n += self.aux_work();
        }
        // The slow path runs by time, busy or idle: a rank that always has traffic must
        // still poll for failures and keep its heartbeats going.
        self.idle = self.idle.wrapping_add(1);
        if self.idle.is_multiple_of(64) && self.last_slow.elapsed() >= self.cfg.slow_period {
            self.slow_path();
        }
        n
    }

    /// The work of a progress call besides the poll (see [`Core::aux`]); recomputes the flag.
    #[inline(never)]
    fn aux_work(&mut self) -> usize {
        let mut n = 0;
        if !self.core.rndv_todo.is_empty() {
            self.run_rndv();
        }
        if !self.core.unexpose_todo.is_empty() {
            for (w, key) in std::mem::take(&mut self.core.unexpose_todo) {
                let t = self.core.route[w as usize] as usize;
                if let Some(t) = self.transports.get_mut(t) {
                    t.unexpose(w, &key);
                }
            }
        }
        if self.core.n_pending > 0 {
            n += self.flush_pending();
        }
        if !self.core.gets.is_empty() {
            n += self.poll_gets();
        }
        if !self.core.ctrl_inbox.is_empty() {
            n += self.dispatch_ctrl();
        }
        if !self.core.acks_to_send.is_empty() {
            let hdr = Header { class: class::BYE_ACK, ..Header::default() };
            for w in std::mem::take(&mut self.core.acks_to_send) {
                let t = self.core.route[w as usize] as usize;
                if t < self.transports.len() {
                    self.send_or_queue(
                        t,
                        w,
                        Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None },
                    );
                }
            }
        }
        if self.ext.has_activities() {
            n += self.run_activities();
        }
        // A new failure wakes the slow activities at once.
        if self.ext.has_slow() && self.ext.slow_seen != self.core.failed.list.len() {
            self.run_slow_activities();
        }
        let c = &self.core;
        self.core.aux = !c.rndv_todo.is_empty()
            || !c.unexpose_todo.is_empty()
            || c.n_pending > 0
            || !c.gets.is_empty()
            || !c.ctrl_inbox.is_empty()
            || !c.acks_to_send.is_empty()
            || self.ext.has_activities()
            || (self.ext.has_slow() && self.ext.slow_seen != c.failed.list.len());
        n
    }

    /// Poll failure sources now (normally done on the slow path every `slow_period`).
    pub fn slow_path(&mut self) {
        self.last_slow = Instant::now();
        let mut found = std::mem::take(&mut self.scratch);
        for t in self.transports.iter_mut() {
            t.poll_failures(&mut found);
        }
        for s in self.failure_sources.iter_mut() {
            s(&mut found);
        }
        if !found.is_empty() {
            // Deliver everything a dead peer managed to send before declaring it failed:
            // data already accepted by a transport is never lost.
            for _ in 0..1024 {
                let core = &mut self.core;
                let mut n = 0;
                for t in self.transports.iter_mut() {
                    n += t.poll(usize::MAX, &mut |peer, h, p| {
                        core.on_message(peer, h, p);
                    });
                }
                if n == 0 {
                    break;
                }
            }
            if !self.core.rndv_todo.is_empty() {
                self.run_rndv();
            }
        }
        for w in found.drain(..) {
            self.notify_failed(w);
        }
        self.scratch = found;
        if self.ext.has_slow() {
            self.run_slow_activities();
        }
    }

    fn flush_pending(&mut self) -> usize {
        let mut sent = 0;
        for w in 0..self.core.pending.len() {
            while let Some(out) = self.core.pending[w].front() {
                let t = self.core.route[w] as usize;
                match self.transports[t].try_send(w as u32, &out.hdr, out.body.bytes()) {
                    Ok(true) => {
                        self.core.stats.sent_by_transport[t] += 1;
                        let out = self.core.pending[w].pop_front().expect("front exists");
                        self.core.n_pending -= 1;
                        sent += 1;
                        if let Some(id) = out.complete {
                            let st = user_status(out.hdr.src, out.hdr.tag, out.hdr.len as usize);
                            let dst = self.core.reqs.get(id).map_or(0, |r| r.peer as u32);
                            self.core.finish(id, Ok(Status { source: dst, ..st }));
                        }
                    }
                    Ok(false) => break,
                    Err(_) => {
                        self.notify_failed(w as u32);
                        break;
                    }
                }
            }
            if self.core.n_pending == 0 {
                break;
            }
        }
        sent
    }

    fn poll_gets(&mut self) -> usize {
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
                        let err = self.core.tx_err(e, status.source);
                        self.core.finish(g.req, Err(err));
                    }
                }
            }
        }
        n
    }

    /// Spend one idle iteration of a wait loop according to the progress mode: progress, and
    /// after 16 idle iterations in yield mode give the core away. For layers that wait for
    /// their own completion condition instead of a request (`spins` starts at 0).
    #[inline]
    pub fn idle_wait(&mut self, spins: &mut u32) {
        if self.progress() > 0 {
            *spins = 0;
            return;
        }
        *spins += 1;
        if self.cfg.progress == ProgressMode::Yield && *spins >= 16 {
            std::thread::yield_now();
        }
    }

    /// As [`Engine::idle_wait`], for a blocking upper-layer call that waits for control
    /// messages (an agreement): a control message ends the poll it arrives in, and is
    /// dispatched at once, without a look at the next message (see [`Engine::wait`]).
    pub fn idle_wait_ctrl(&mut self, spins: &mut u32) {
        self.core.awaiting_ctrl = true;
        self.idle_wait(spins);
        self.core.awaiting_ctrl = false;
    }

    // ------------------------------------------------------------------------- failures

    /// Record that world rank `w` failed and complete, with `ProcFailed`, every operation that
    /// can no longer finish: sends to it, receives naming it, rendezvous with it.
    pub fn notify_failed(&mut self, w: u32) {
        if w == self.core.me || self.core.failed.is_failed(w) {
            return;
        }
        if self.core.failed.departed(w) {
            // A finalized rank exited: not a failure, but nothing addressed to it can finish.
            self.complete_towards(w);
            return;
        }
        self.core.failed.insert(w);
        self.core.aux = true; // the slow activities learn of it on the next progress call
        self.complete_towards(w);
        // Communicators with group or universe error scope: every pending operation on them
        // reports the failure, not only those that involve `w`.
        let hit: Vec<(CommId, Vec<u32>)> = self
            .core
            .comms
            .iter()
            .filter(|(_, c)| match c.scope {
                ErrScope::Local => false,
                ErrScope::Group => c.rank_of_world(w).is_some(),
                ErrScope::Universe => true,
            })
            .map(|(id, c)| (id, c.rank_of_world(w).into_iter().collect()))
            .collect();
        for (id, ranks) in hit {
            self.fail_comm_requests(id, &Error::ProcFailed { ranks });
        }
    }

    /// Complete with `ProcFailed` every pending operation that needs world rank `w`.
    fn complete_towards(&mut self, w: u32) {
        let core = &mut self.core;
        let dropped = core.pending.get_mut(w as usize).map(std::mem::take).unwrap_or_default();
        core.n_pending -= dropped.len();
        let mut to_unexpose = Vec::new();
        let comms = &core.comms;
        core.reqs.for_each_mut(|_, r| {
            // An asynchronous read in flight may still write the user buffer: it completes
            // through the transport (with an error) rather than here.
            if r.peer_world != w || matches!(r.phase, Phase::Done(_) | Phase::RecvGetting { .. }) {
                return;
            }
            if let Phase::SendAwaitFin { key } = r.phase {
                to_unexpose.push(key);
            }
            let rank = comms.get(r.comm).ok().and_then(|c| c.rank_of_world(w)).unwrap_or(w);
            r.phase = Phase::Done(Err(Error::ProcFailed { ranks: vec![rank] }));
        });
        let reqs = &core.reqs;
        for qs in core.q.iter_mut() {
            qs.posted.retain(|p| matches!(reqs.get(p.req), Some(Req { phase: Phase::RecvPosted, .. })));
        }
        let t = core.route[w as usize];
        if (t as usize) < self.transports.len() {
            for key in to_unexpose {
                self.transports[t as usize].unexpose(w, &key);
            }
        }
    }

    /// Leave the job cleanly. Every peer reachable through a transport gets a goodbye, queued
    /// behind our data (per-peer FIFO), and we wait until each has confirmed it — with an
    /// acknowledgement or a goodbye of its own — or is known failed. A transport may still
    /// hold data it has accepted (libfabric's manual progress), so without this wait a fast
    /// rank could exit before its last messages left. Bounded by [`FINALIZE_WAIT`].
    pub fn finalize(&mut self) {
        let deadline = Instant::now() + FINALIZE_WAIT;
        let hdr = Header { class: class::BYE, ..Header::default() };
        let mut waiting = Vec::new();
        for w in 0..self.core.route.len() as u32 {
            let t = self.core.route[w as usize] as usize;
            if t >= self.transports.len() || self.core.failed.is_failed(w) || self.core.failed.departed(w) {
                continue;
            }
            self.core.bye_sent[w as usize] = true;
            self.send_or_queue(t, w, Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None });
            waiting.push(w);
        }
        let mut spins = 0u32;
        loop {
            let core = &self.core;
            waiting.retain(|&w| !core.confirmed[w as usize] && !core.failed.is_failed(w));
            if waiting.is_empty() {
                break;
            }
            self.progress();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::yield_now();
            }
        }
    }

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> &[u32] {
        &self.core.failed.list
    }

    /// Ranks of `c` known to have failed.
    pub fn get_failed(&self, c: CommId) -> Result<Vec<u32>> {
        let comm = self.core.comms.get(c)?;
        Ok(self.core.failed.list.iter().filter_map(|&w| comm.rank_of_world(w)).collect())
    }

    /// Acknowledge every failure known now on `c`: wildcard receives on `c` stop reporting
    /// `ProcFailedPending` for them. Returns how many failed ranks of `c` are acknowledged.
    pub fn ack_failed(&mut self, c: CommId) -> Result<usize> {
        let n = self.core.failed.list.len();
        let comm = self.core.comms.get_mut(c)?;
        comm.acked = n;
        let comm = self.core.comms.get(c)?;
        Ok(self.core.failed.list.iter().filter(|&&w| comm.rank_of_world(w).is_some()).count())
    }

    /// True if `c` has members whose failure it has not acknowledged.
    fn unacked_failure(&self, c: CommId) -> bool {
        let Ok(comm) = self.core.comms.get(c) else {
            return false;
        };
        self.core.failed.list[comm.acked.min(self.core.failed.list.len())..]
            .iter()
            .any(|&w| comm.rank_of_world(w).is_some())
    }

    // ----------------------------------------------------------------- test and wait

    /// Complete `id` if it is done: `Ok(Some(status))` (request freed), `Ok(None)` (still
    /// pending), or the operation's error (request freed; except `ProcFailedPending`, which
    /// leaves a wildcard receive pending).
    pub fn test(&mut self, id: ReqId) -> Result<Option<Status>> {
        if !self.is_done(id)? {
            self.progress();
        }
        self.take_if_done(id)
    }

    fn is_done(&self, id: ReqId) -> Result<bool> {
        match self.core.reqs.get(id) {
            None => Err(Error::InvalidRequest),
            Some(r) => Ok(matches!(r.phase, Phase::Done(_))),
        }
    }

    fn take_if_done(&mut self, id: ReqId) -> Result<Option<Status>> {
        let r = self.core.reqs.get(id).ok_or(Error::InvalidRequest)?;
        match r.phase {
            Phase::Done(_) => {}
            _ => {
                if !r.is_send
                    && r.peer == ANY_SOURCE
                    && self.core.failed.any()
                    && self.unacked_failure(r.comm)
                {
                    return Err(Error::ProcFailedPending);
                }
                return Ok(None);
            }
        }
        match self.core.reqs.remove(id).map(|r| r.phase) {
            Some(Phase::Done(res)) => res.map(Some),
            _ => unreachable!("checked Done above"),
        }
    }

    /// Wait for `id` to complete.
    ///
    /// While it waits, the message that completes `id` ends the poll it arrives in: the
    /// transports do not look further (for a shared-memory ring, reading the next record's
    /// line would cost a transfer from the sender's core between the completion and this
    /// caller). Other waits (`wait_all`, `wait_any`, tests) keep draining in batches.
    pub fn wait(&mut self, id: ReqId) -> Result<Status> {
        let mut spins = 0;
        let r = loop {
            match self.take_if_done(id) {
                Ok(None) => {}
                Ok(Some(st)) => break Ok(st),
                Err(x) => break Err(x),
            }
            self.core.awaited = Some(id);
            self.idle_wait(&mut spins);
        };
        self.core.awaited = None;
        r
    }

    /// Wait for every request; returns all statuses, or the first error after all completed.
    pub fn wait_all(&mut self, ids: &[ReqId]) -> Result<Vec<Status>> {
        let mut out: Vec<Option<Result<Status>>> = ids.iter().map(|_| None).collect();
        let mut left = ids.len();
        let mut spins = 0;
        while left > 0 {
            for (i, &id) in ids.iter().enumerate() {
                if out[i].is_some() {
                    continue;
                }
                match self.take_if_done(id) {
                    Ok(None) => {}
                    Ok(Some(st)) => {
                        out[i] = Some(Ok(st));
                        left -= 1;
                    }
                    Err(e) => {
                        out[i] = Some(Err(e));
                        left -= 1;
                    }
                }
            }
            if left > 0 {
                self.idle_wait(&mut spins);
            }
        }
        out.into_iter().map(|r| r.expect("all filled")).collect()
    }

    /// Wait until one request completes; returns its index and status (or its error).
    pub fn wait_any(&mut self, ids: &[ReqId]) -> Result<(usize, Status)> {
        if ids.is_empty() {
            return Err(Error::InvalidArg("wait_any on an empty request list".into()));
        }
        let mut spins = 0;
        loop {
            let mut valid = 0;
            for (i, &id) in ids.iter().enumerate() {
                match self.take_if_done(id) {
                    Ok(Some(st)) => return Ok((i, st)),
                    Ok(None) => valid += 1,
                    Err(Error::InvalidRequest) => {}
                    Err(e) => return Err(e),
                }
            }
            if valid == 0 {
                return Err(Error::InvalidRequest);
            }
            self.idle_wait(&mut spins);
        }
    }

    /// If every request is done, complete them all and return their statuses.
    pub fn test_all(&mut self, ids: &[ReqId]) -> Result<Option<Vec<Status>>> {
        self.progress();
        for &id in ids {
            if !self.is_done(id)? {
                return Ok(None);
            }
        }
        self.wait_all(ids).map(Some)
    }

    /// Status of the first message that a receive `(src, tag)` on `c` would match, if one
    /// has arrived; the message stays queued.
    pub fn iprobe(&mut self, c: CommId, src: i32, tag: i32) -> Result<Option<Status>> {
        check_tag(tag, true)?;
        let comm = self.core.comms.get(c)?;
        if src != ANY_SOURCE && !(src >= 0 && (src as u32) < comm.size()) {
            return Err(Error::InvalidRank { rank: src as i64, size: comm.size() });
        }
        let (ctx, src_world) = (comm.ctx, if src >= 0 { comm.world_of[src as usize] } else { u32::MAX });
        self.progress();
        let qs = self.core.q.ctx(ctx).ok_or(Error::InvalidComm)?;
        if let Some(u) = qs.peek_unexpected(src, tag) {
            return Ok(Some(user_status(u.src, u.tag, u.data.len())));
        }
        if src_world != u32::MAX && self.core.failed.is_failed(src_world) {
            return Err(Error::ProcFailed { ranks: vec![src as u32] });
        }
        if src == ANY_SOURCE && self.core.failed.any() && self.unacked_failure(c) {
            return Err(Error::ProcFailedPending);
        }
        Ok(None)
    }

    /// Block until a message that a receive `(src, tag)` on `c` would match has arrived.
    pub fn probe(&mut self, c: CommId, src: i32, tag: i32) -> Result<Status> {
        let mut spins = 0;
        loop {
            if let Some(st) = self.iprobe(c, src, tag)? {
                return Ok(st);
            }
            self.idle_wait(&mut spins);
        }
    }
}

impl Core {
    /// Group/universe error scope: an operation on `comm` fails while a failure in its scope
    /// is unacknowledged.
    fn scope_check(&self, comm: &CommState) -> Result<()> {
        let new = &self.failed.list[comm.acked.min(self.failed.list.len())..];
        let ranks: Vec<u32> = new.iter().filter_map(|&w| comm.rank_of_world(w)).collect();
        let raise = match comm.scope {
            ErrScope::Local => false,
            ErrScope::Group => !ranks.is_empty(),
            ErrScope::Universe => !new.is_empty(),
        };
        if raise {
            Err(Error::ProcFailed { ranks })
        } else {
            Ok(())
        }
    }

    fn recv_result(status: Status, capacity: usize) -> Result<Status> {
        if status.count > capacity {
            Err(Error::Truncated { incoming: status.count, capacity, sender: status.source, tag: status.tag })
        } else {
            Ok(status)
        }
    }

    /// Return a buffer from [`pooled_copy`] to the pool (bounded: at most
    /// [`BUF_POOL_MAX`] buffers of at most [`BUF_POOL_CAP`] bytes are kept).
    #[inline]
    pub(crate) fn recycle_buf(&mut self, mut b: Vec<u8>) {
        if self.buf_pool.len() < BUF_POOL_MAX && b.capacity() <= BUF_POOL_CAP {
            b.clear();
            self.buf_pool.push(b);
        }
    }

    fn enqueue(&mut self, w: u32, out: Outgoing) {
        self.pending[w as usize].push_back(out);
        self.n_pending += 1;
        self.aux = true;
    }

    pub(crate) fn finish(&mut self, id: ReqId, res: Result<Status>) {
        if let Some(r) = self.reqs.get_mut(id) {
            r.phase = Phase::Done(res);
        }
    }

    /// Turn a transport error on the path to communicator rank `rank` into the user error.
    fn tx_err(&self, e: TransportError, rank: u32) -> Error {
        match e {
            TransportError::PeerDead(_) => Error::ProcFailed { ranks: vec![rank] },
            e => Error::Transport(e),
        }
    }

    fn malformed(&mut self, peer: u32, what: &'static str) {
        self.stats.malformed += 1;
        self.stats.last_malformed = Some(Error::Malformed { peer, what });
    }

    /// Handle one message off the wire. Never panics on malformed input: it is counted and
    /// dropped. Returns `true` when the poll should stop after this message, so that whoever
    /// waits for it sees it at once: it completed (or advanced) the request a blocking
    /// [`Engine::wait`] waits for, or it is control traffic while an upper layer's blocking
    /// call waits for such ([`Engine::idle_wait_ctrl`]). (Otherwise control traffic does not
    /// stop it: a revoke, say, then reaches the upper layer only after the data that arrived
    /// with it, which pending receives may be waiting for.)
    #[inline]
    pub(crate) fn on_message(&mut self, peer: u32, h: &Header, payload: &[u8]) -> bool {
        match h.class {
            class::EAGER => {
                if payload.len() as u64 != h.len {
                    self.malformed(peer, "eager length mismatch");
                    return false;
                }
                self.arrive(peer, h, None, payload)
            }
            class::RTS => {
                if payload.len() != RTS_BODY {
                    self.malformed(peer, "RTS body size");
                    return false;
                }
                let sreq = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
                let mut key = [0u8; std::mem::size_of::<RKey>()];
                key.copy_from_slice(&payload[8..]);
                self.arrive(peer, h, Some((sreq, key)), &[])
            }
            class::FIN => {
                self.on_fin(peer, h);
                self.awaited == Some(ReqId::from_raw(h.len))
            }
            class::BYE => {
                self.failed.depart(peer);
                self.confirmed[peer as usize] = true;
                // Our own goodbye already tells it we have everything it sent.
                if !self.bye_sent[peer as usize] {
                    self.acks_to_send.push(peer);
                    self.aux = true;
                }
                false
            }
            class::BYE_ACK => {
                self.confirmed[peer as usize] = true;
                false
            }
            c if c >= class::FIRST_FREE => {
                if self.failed.is_failed(peer) {
                    self.stats.dropped_from_failed += 1;
                    return false;
                }
                let b = pooled_copy(&mut self.buf_pool, payload);
                self.ctrl_inbox.push((peer, *h, b));
                self.aux = true;
                self.awaiting_ctrl
            }
            _ => {
                self.malformed(peer, "unknown message class");
                false
            }
        }
    }

    /// Match an arrived message (eager data or a rendezvous offer); `true` if it matched the
    /// posted receive [`Core::awaited`] names (and the poll should stop there).
    #[inline]
    fn arrive(&mut self, peer: u32, h: &Header, rts: Option<(u64, RKey)>, payload: &[u8]) -> bool {
        // A process declared failed is failed for good (fail-stop): whatever it sends after
        // the declaration — a frozen process that resumes — is dropped. What it sent before
        // was drained before the declaration (see `slow_path`).
        if self.failed.is_failed(peer) {
            self.stats.dropped_from_failed += 1;
            return false;
        }
        let Some(qs) = self.q.ctx(h.ctx) else {
            self.malformed(peer, "context id out of range");
            return false;
        };
        if qs.retired {
            return false;
        }
        if let Some(cid) = qs.comm {
            // Known communicator: the claimed source must be the peer that sent it.
            match self.comms.get(cid) {
                Ok(c) if c.world_of.get(h.src as usize) == Some(&peer) => {}
                _ => {
                    self.malformed(peer, "source rank does not match sender");
                    return false;
                }
            }
        }
        let status = user_status(h.src, h.tag, h.len as usize);
        if let Some(id) = qs.take_posted(h.src, h.tag) {
            match rts {
                None => {
                    let Some(r) = self.reqs.get_mut(id) else {
                        return false;
                    };
                    r.buf.fill(payload);
                    r.phase = Phase::Done(Core::recv_result(status, r.buf.len()));
                }
                Some((sreq, key)) => {
                    self.aux = true;
                    self.rndv_todo.push(RndvTodo {
                        req: id,
                        peer_world: peer,
                        sreq,
                        ctx: h.ctx,
                        key,
                        len: h.len as usize,
                        status,
                    });
                }
            }
            return self.awaited == Some(id) && self.stop_at_awaited();
        }
        self.stats.unexpected += 1;
        let data = match rts {
            None => Arrived::Eager(pooled_copy(&mut self.buf_pool, payload)),
            Some((sreq, key)) => Arrived::Rts { sreq, key, len: h.len },
        };
        qs.unexpected.push_back(Unexpected { src: h.src, src_world: peer, tag: h.tag, data });
        false
    }

    /// Whether the poll stops after the message that completed the awaited request: not
    /// while messages stream in, nor on one completion in [`PROBE_EVERY`].
    #[inline]
    fn stop_at_awaited(&mut self) -> bool {
        if self.streaming {
            return false;
        }
        self.probe += 1;
        if self.probe < PROBE_EVERY {
            return true;
        }
        self.probe = 0;
        false
    }

    fn on_fin(&mut self, peer: u32, h: &Header) {
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
