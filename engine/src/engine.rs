//! The engine's top-level state: [`Engine`] (transports and their eager limits, failure
//! sources, configuration, the upper layers' registrations) and [`Core`], everything a
//! transport's poll may touch (routes, communicators, matching queues, requests,
//! per-destination queues, the failure table, the pending work between polls, counters, the
//! finalize handshake's per-peer flags); the constructor and the helpers every protocol
//! shares; and the two capability types declared beside them: [`CollPort`]
//! (what the collectives layer may do, `coll_port.rs`) and [`FtPort`] (what the
//! fault-tolerance layer may do, `ft_port.rs`). Imports only data modules.
//!
//! The protocols live beside it, one file each: `send.rs` (send path, per-destination
//! queues), `recv.rs` (receive path and matching of arrivals), `rndv.rs` (rendezvous),
//! `split.rs` (split rendezvous), `progress.rs` (progress, test and wait), `dispatch.rs`
//! (activities and control-message handlers), `failure.rs` (failure knowledge and the
//! completion of what failures and revocation end), `finalize.rs` (the goodbye handshake),
//! `create.rs` (communicator creation) and `universe.rs` (peers joining at run time).
//!
//! One engine per process, driven from the caller's thread: every blocking call and every
//! test/wait runs [`crate::Common::progress`]. Message path: `send` → `isend_ctx` (route table) →
//! transport `try_send` (or the per-destination pending queue when the transport is full);
//! arrival: transport `poll` → [`Core::on_message`] → posted-receive match or unexpected queue.
//! Large messages use rendezvous: RTS (carrying the exposed buffer) → receiver `get` straight
//! into the user buffer → FIN back to the sender.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::activity::{Activity, Step};
use crate::comm::{CommState, Comms};
use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::fail_table::Failures;
use crate::matching::Matching;
use crate::pending::{GetInFlight, Outgoing, RndvTodo, SplitTodo};
use crate::request::{Phase, ReqId, Requests};
use crate::stats::{Origin, Stats};
use crate::transport::{Header, RKey, Transport, TransportError};
use crate::{CommId, Status, ANY_TAG, MAX_TAG};

/// Route-table entry of this process itself (delivered without a transport).
pub(crate) const ROUTE_SELF: u8 = u8::MAX;
/// Route-table entry of a peer no transport reaches.
pub(crate) const ROUTE_NONE: u8 = u8::MAX - 1;

/// Everything except the transports, so that a transport's `poll` can borrow the transport
/// while the sink borrows the rest.
///
/// Declared here, beside [`Engine`], for the reason given at [`CollPort`]: its methods (the
/// arrival path, request completion) share the engine's code unit.
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
    /// The request a blocking [`crate::Engine::wait`] is waiting for (`None` otherwise): a message
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

/// An out-of-band source of failure notices (the runtime's termination events): appends
/// newly failed world ranks.
pub type FailureSource = Box<dyn FnMut(&mut Vec<u32>)>;

/// Handler of a fault-tolerance message class: `(capability, sender world rank, header,
/// payload)`; see [`FtPort::set_handler`].
pub type ClassHandler = Box<dyn FnMut(&mut FtPort, u32, &Header, &[u8])>;

/// The progress engine of one process.
pub struct Engine {
    pub(crate) transports: Vec<Box<dyn Transport>>,
    pub(crate) eager: Vec<usize>,
    pub(crate) failure_sources: Vec<FailureSource>,
    /// Flags that make the next progress call poll the failure sources (see
    /// [`crate::Setup::wake_on`]).
    pub(crate) failure_wakes: Vec<&'static AtomicBool>,
    pub(crate) core: Core,
    pub(crate) cfg: EngineConfig,
    pub(crate) idle: u32,
    pub(crate) last_slow: Instant,
    pub(crate) scratch: Vec<u32>,
    pub(crate) scratch_origins: Vec<Origin>,
    pub(crate) extensions: Extensions,
}

/// What the collectives layer may do with the engine: post point-to-point on a
/// communicator's internal context, run activities and generic requests, wait, and read
/// communicators. Its methods are in `coll_port.rs`.
///
/// Declared here, beside [`Engine`], because the compiler groups a type's methods into the
/// code unit of the module that declares the type: with the ports here, every caller of the
/// send and receive paths shares their unit, which keeps those paths internal and lets them
/// use the cheaper internal calling convention (one instruction less per send and per
/// receive).
#[repr(transparent)]
pub struct CollPort(pub(crate) Engine);

/// What the fault-tolerance layer may do with the engine: activities, message classes and
/// their handlers, generic requests, internal-context point-to-point, the failure table,
/// revocation, communicator and context-id queries, creation of agreed communicators. Its
/// methods are in `ft_port.rs`; declared here for the reason given at [`CollPort`].
#[repr(transparent)]
pub struct FtPort(pub(crate) Engine);

/// An activity as the engine runs it: the upper layer's state machine, given the capability
/// of its layer.
pub(crate) trait Run {
    fn run(&mut self, e: &mut Engine) -> Step;
}

/// A collectives activity ([`CollPort::spawn`]).
pub(crate) struct ForColl<A>(pub(crate) A);

impl<A: Activity<CollPort>> Run for ForColl<A> {
    #[inline]
    fn run(&mut self, e: &mut Engine) -> Step {
        self.0.advance(e.view())
    }
}

/// A fault-tolerance activity ([`FtPort::spawn`], [`FtPort::spawn_slow`]).
pub(crate) struct ForFt<A>(pub(crate) A);

impl<A: Activity<FtPort>> Run for ForFt<A> {
    #[inline]
    fn run(&mut self, e: &mut Engine) -> Step {
        self.0.advance(e.view())
    }
}

/// The upper layers' registrations: activities, handlers, messages parked for a handler.
#[derive(Default)]
pub(crate) struct Extensions {
    pub(crate) activities: Vec<Box<dyn Run>>,
    /// Activities that only need failures and time: advanced on the slow path and when the
    /// failure table grows, never on the per-message path.
    pub(crate) slow: Vec<Box<dyn Run>>,
    /// Failure count the slow activities were last advanced with.
    pub(crate) slow_seen: usize,
    pub(crate) handlers: Vec<Option<ClassHandler>>,
    /// Messages of a class whose handler is not installed yet (a peer may start a protocol
    /// before this process has set it up); delivered when the handler arrives. Bounded.
    pub(crate) parked: Vec<(u32, Header, Vec<u8>)>,
}

impl Extensions {
    #[inline]
    pub(crate) fn has_activities(&self) -> bool {
        !self.activities.is_empty()
    }

    #[inline]
    pub(crate) fn has_slow(&self) -> bool {
        !self.slow.is_empty()
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
                pending: (0..nprocs).map(|_| Default::default()).collect(),
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

    /// This process's world rank.
    pub fn world_rank(&self) -> u32 {
        self.core.me
    }

    /// True while `id` names a request that test/wait has not returned yet.
    pub fn is_pending(&self, id: ReqId) -> bool {
        self.core.reqs.get(id).is_some()
    }

    /// This engine as the view `V` (a capability or interface type).
    #[inline(always)]
    pub(crate) fn view<V: View>(&mut self) -> &mut V {
        // SAFETY: `V: View` is `repr(transparent)` over `Engine` (the trait's contract), so
        // the two have one layout, and the returned borrow is the borrow of `self`.
        unsafe { &mut *(self as *mut Engine).cast::<V>() }
    }

    /// This engine as the read-only view `V`.
    #[inline(always)]
    pub(crate) fn view_ref<V: View>(&self) -> &V {
        // SAFETY: as in `view`.
        unsafe { &*(self as *const Engine).cast::<V>() }
    }
}

/// A type that is the engine under another name, offering a narrow set of its methods (the
/// layers' capabilities and the facade's interfaces): [`Engine::view`] turns the engine into
/// one.
///
/// # Safety
/// The type must be `#[repr(transparent)]` over [`Engine`].
pub(crate) unsafe trait View {}
// SAFETY: `repr(transparent)` over `Engine` (declared above).
unsafe impl View for CollPort {}
// SAFETY: `repr(transparent)` over `Engine` (declared above).
unsafe impl View for FtPort {}

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
