//! The engine's state and its plain accessors: [`Engine`] (transports, configuration,
//! extension state) and [`Core`] (everything a transport's poll may touch), the route table,
//! [`EngineConfig`] and [`Stats`], and the queries that only read them (communicator size and
//! rank, transport names, diagnostics).
//!
//! The protocols live beside it, one file each: `send.rs` (send path, per-destination
//! queues), `recv.rs` (receive path and matching of arrivals), `rndv.rs` (rendezvous),
//! `progress.rs` (progress, test and wait), `failure.rs` (failure knowledge and the
//! completion of what failures and revocation end), `finalize.rs` (the goodbye handshake),
//! `create.rs` (communicator creation) and `extend.rs` (the upper layers' interface).
//!
//! One engine per process, driven from the caller's thread: every blocking call and every
//! test/wait runs [`Engine::progress`]. Message path: `isend` → route table → transport
//! `try_send` (or the per-destination pending queue when the transport is full); arrival:
//! transport `poll` → [`Core::on_message`] → posted-receive match or unexpected queue.
//! Large messages use rendezvous: RTS (carrying the exposed buffer) → receiver `get` straight
//! into the user buffer → FIN back to the sender.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::comm::{CommState, Comms};
use crate::error::{Error, Result};
use crate::failure::Failures;
use crate::matching::{Arrived, Matching};
use crate::request::{Phase, ReqId, Requests};
use crate::rndv::{GetInFlight, RndvTodo};
use crate::send::Outgoing;
use crate::split::SplitTodo;
use crate::transport::{Header, RKey, Transport, TransportError};
use crate::{CommId, Status, ANY_TAG, MAX_TAG};

/// Route-table entry of this process itself (delivered without a transport).
pub(crate) const ROUTE_SELF: u8 = u8::MAX;
/// Route-table entry of a peer no transport reaches.
pub(crate) const ROUTE_NONE: u8 = u8::MAX - 1;

/// Idle iterations after which a [`ProgressMode::Poll`] wait yields its core while it stays
/// idle. Spinning on through a long wait costs nothing on an otherwise idle core, but on a
/// shared one the scheduler charges the spin to this process, which then waits for the core
/// when its data arrives; `sched_yield` with nothing else runnable returns at once.
pub(crate) const POLL_IDLE_SPINS: u32 = 1024;

/// How waiting callers spend idle time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// Spin on progress (lowest latency; one rank per core); a wait that stays idle for
    /// 1024 iterations (tens of µs: a peer's large copy, not a message in
    /// flight) yields the core at each further idle iteration.
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
    /// Of those, split ones (the sender wrote the tail).
    pub split_rndv: u64,
    /// Split rendezvous started only after the FINs polled at the decision showed that the
    /// peer had read every rendezvous this process sent it (traffic both ways).
    pub split_late: u64,
    /// CTS messages this process answered without writing (its send given up, or the write
    /// failed).
    pub split_put_refused: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected: u64,
    /// Malformed messages dropped.
    pub malformed: u64,
    /// Messages dropped because their sender had been declared failed.
    pub dropped_from_failed: u64,
    /// Last malformed message seen, if any.
    pub last_malformed: Option<Error>,
    /// Where this process first learned of each failed rank.
    pub learned: FailureOrigins,
}

/// Where the engine first learned of each failed rank: one count per failed rank, for the
/// source that told it first (later notices of the same rank are not counted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureOrigins {
    /// In-band, by transport index (as [`Stats::sent_by_transport`]): the shared-memory
    /// transport's pidfd watch, libfabric's errors, a failed send.
    pub transport: Vec<u64>,
    /// Out-of-band failure sources ([`Engine::add_failure_source`]): the runtime's events
    /// (PMIx `PROC_TERMINATED` / `NODE_DOWN`).
    pub runtime: u64,
    /// Told by an upper layer through [`Ext::notify_failed`]: the FT layer's heartbeat
    /// detector, a peer's finding, an agreement's failed set.
    pub upper: u64,
}

/// Where a failure notice came from (see [`FailureOrigins`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    Transport(usize),
    Runtime,
    Upper,
}

impl FailureOrigins {
    pub(crate) fn count(&mut self, o: Origin) {
        match o {
            Origin::Transport(t) => {
                if let Some(c) = self.transport.get_mut(t) {
                    *c += 1;
                }
            }
            Origin::Runtime => self.runtime += 1,
            Origin::Upper => self.upper += 1,
        }
    }
}

/// An out-of-band source of failure notices (the runtime's termination events): appends
/// newly failed world ranks.
pub type FailureSource = Box<dyn FnMut(&mut Vec<u32>)>;

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
    pub(crate) rndv_todo: Vec<RndvTodo>,
    /// Exposures whose FIN arrived; withdrawn after the poll that saw it.
    pub(crate) unexpose_todo: Vec<(u32, RKey)>,
    pub(crate) gets: Vec<GetInFlight>,
    /// Split rendezvous work after the poll: tail writes asked for (sender side) and FINs
    /// owed for completed split receives (receiver side).
    pub(crate) split: SplitTodo,
    pub(crate) failed: Failures,
    pub(crate) next_ctx: u32,
    /// Context-id windows reserved by creations still agreeing on their ids (below
    /// `next_ctx`, yet possibly the id of a communicator this process will install).
    pub(crate) ctx_windows: Vec<(u32, u32)>,
    /// Communicators installed so far (a layer holding messages for a communicator not yet
    /// installed retries them when this grows).
    pub(crate) comms_installed: u64,
    pub(crate) stats: Stats,
    /// Messages of upper-layer classes, dispatched to their handlers after the poll.
    pub(crate) ctrl_inbox: Vec<(u32, Header, Vec<u8>)>,
    /// Emptied payload buffers, reused for new arrivals the engine must hold: unexpected
    /// eager messages (until a receive matches them) and control messages (until dispatch).
    /// A sender that runs ahead of its receiver (a pipelined broadcast) would otherwise cost
    /// one allocation and one free per message.
    pub(crate) buf_pool: Vec<Vec<u8>>,
    /// Finalize handshake: goodbyes sent, peers that confirmed ours, acknowledgements owed.
    pub(crate) bye_sent: Vec<bool>,
    pub(crate) confirmed: Vec<bool>,
    pub(crate) acks_to_send: Vec<u32>,
    /// Set whenever work other than polling the transports may be waiting — a matched RTS,
    /// an exposure to withdraw, queued sends, reads in flight, upper-layer messages,
    /// goodbye acknowledgements, activities, a new failure for the slow activities — and
    /// recomputed once that work has run: a progress call of failure-free point-to-point
    /// traffic reads this one word after the poll.
    pub(crate) aux: bool,
    /// The request a blocking [`Engine::wait`] is waiting for (`None` otherwise): a message
    /// that completes it ends the transports' poll at once ([`Core::on_message`]), unless
    /// messages are streaming in.
    pub(crate) awaited: Option<ReqId>,
    /// The last receive posted found its message already arrived (unexpected): messages are
    /// coming in faster than they are received, so a poll that completes the awaited request
    /// goes on reading — the next messages are likely there, and taking them in one batch
    /// saves their receives a request each.
    pub(crate) streaming: bool,
    /// Awaited completions since the last one that went on reading anyway (to notice that
    /// messages started streaming; see [`crate::recv::PROBE_EVERY`]).
    pub(crate) probe: u8,
}

/// The progress engine of one process.
pub struct Engine {
    pub(crate) transports: Vec<Box<dyn Transport>>,
    pub(crate) eager: Vec<usize>,
    pub(crate) failure_sources: Vec<FailureSource>,
    /// Flags that make the next progress call poll the failure sources (see
    /// [`Engine::wake_on`]).
    pub(crate) failure_wakes: Vec<&'static AtomicBool>,
    pub(crate) core: Core,
    pub(crate) cfg: EngineConfig,
    pub(crate) idle: u32,
    pub(crate) last_slow: Instant,
    pub(crate) scratch: Vec<u32>,
    pub(crate) scratch_origins: Vec<Origin>,
    pub(crate) extensions: crate::extend::Extensions,
}

/// What the collectives and fault-tolerance layers may do with the engine: a view of the
/// [`Engine`] that exposes the extension points, failure and communicator state, and the
/// blocking primitives, and none of the user-facing API. Its methods are in `extend.rs`.
///
/// Declared here, beside [`Engine`], because the compiler groups a type's methods into the
/// code unit of the module that declares the type: with both types here, every caller of the
/// send and receive paths shares their unit, which keeps those paths internal and lets them use
/// the cheaper internal calling convention (one instruction less per send and per receive).
#[repr(transparent)]
pub struct Ext(pub(crate) Engine);

pub(crate) fn user_status(source: u32, tag: i32, count: usize) -> Status {
    Status { source, tag, count }
}

pub(crate) fn check_tag(tag: i32, wildcard_ok: bool) -> Result<()> {
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
            failure_wakes: Vec::new(),
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
                split: SplitTodo::default(),
                failed: Failures::new(nprocs),
                next_ctx: 2,
                ctx_windows: Vec::new(),
                comms_installed: 0,
                stats: Stats::default(),
                ctrl_inbox: Vec::new(),
                buf_pool: Vec::new(),
                bye_sent: vec![false; nprocs as usize],
                confirmed: vec![false; nprocs as usize],
                acks_to_send: Vec::new(),
                aux: false,
                awaited: None,
                streaming: false,
                probe: 0,
            },
            cfg,
            extensions: Default::default(),
            idle: 0,
            last_slow: Instant::now(),
            scratch: Vec::new(),
            scratch_origins: Vec::new(),
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
        self.core.stats.learned.transport.push(0);
        idx
    }

    /// Add an out-of-band failure source (the runtime's termination events), polled on the
    /// slow path.
    pub fn add_failure_source(&mut self, f: FailureSource) {
        self.failure_sources.push(f);
    }

    /// Make the next progress call run the slow path (poll the failure sources) whenever
    /// `flag` is set, instead of waiting for the slow-path period: a failure source whose
    /// notices arrive on another thread (the PMIx client's event handler) sets it. Costs one
    /// relaxed atomic load per progress call; the source itself clears the flag when polled.
    pub fn wake_on(&mut self, flag: &'static AtomicBool) {
        self.failure_wakes.push(flag);
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

    /// How waiting callers spend idle time from now on (a host that gained processes, e.g.
    /// by a spawn, may no longer give every spinning process a core).
    pub fn set_progress_mode(&mut self, mode: ProgressMode) {
        self.cfg.progress = mode;
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
}

impl Core {
    pub(crate) fn finish(&mut self, id: ReqId, res: Result<Status>) {
        if let Some(r) = self.reqs.get_mut(id) {
            r.phase = Phase::Done(res);
        }
    }

    /// Turn a transport error on the path to communicator rank `rank` into the user error.
    pub(crate) fn tx_err(&self, e: TransportError, rank: u32) -> Error {
        match e {
            TransportError::PeerDead(_) => Error::ProcFailed { ranks: vec![rank] },
            e => Error::Transport(e),
        }
    }

    pub(crate) fn malformed(&mut self, peer: u32, what: &'static str) {
        self.stats.malformed += 1;
        self.stats.last_malformed = Some(Error::Malformed { peer, what });
    }
}
