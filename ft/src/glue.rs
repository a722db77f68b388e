//! Glue: drives the sans-IO protocols from the progress engine. This file holds the glue's
//! state (options, counters, cached communicators, agreement instances); the work is in the
//! files of `glue/` listed below.
//!
//! - **Handlers** for the FT message classes ([`crate::class`]): decode ([`crate::wire`];
//!   malformed → counted and dropped), drop anything from a rank known failed, resolve
//!   `(ctx, epoch)` to a live communicator (a message for a communicator this process will
//!   create soon — context id ≥ its `next_ctx` — is parked until it exists; one for an
//!   older or freed communicator is dropped as stale), and feed the state machine.
//! - **One activity**, spawned on first use, advanced by every progress call: it turns new
//!   entries of the engine's failure table into failure notices (one comparison of the failure
//!   count when nothing happened), ticks the detector, and retries parked messages.
//! - **Generic requests**: `iagree` / `ishrink` return an engine request completed when the
//!   local member decides; agreement state is kept after that to answer late requests.
//! - **Data path** (`glue/data_path.rs`): a blocking `agree` of at most four members, none
//!   known failed, runs its direct exchange as eager messages on the communicator's internal
//!   context and decides in the caller without an agreement instance, converting to one when
//!   that cannot finish and rebuilding one when a late message asks for its decision.
//! - **Last member standing**: when every other member of a communicator is known failed and
//!   no message of the next instance arrived, an agreement or shrink is decided at once, as
//!   ERA would decide it (this member's contribution with the failed set), without an
//!   instance: nobody is left to send to or to answer.
//!
//! Actions map to `send_ctrl` (communicator ranks translated to world ranks), `revoke_local`,
//! `notify_failed`, `comm_create_agreed` and `complete_request`.
//!
//! Files: this one holds the state — options, counters, the cached communicators
//! ([`CommInfo`]), the agreement instances and the [`Glue`] that owns them; `glue/api.rs`
//! the operations the facade calls ([`Ft`]); `glue/events.rs` what arrives (messages from
//! peers, new failures, detector ticks, parked messages) and the slow activity that drives
//! it; `glue/revocation.rs` the revoke's reliable broadcast; `glue/agreement.rs` running
//! agreement instances and completing their requests; `glue/data_path.rs` the blocking
//! agreement of a few members over the data path.

use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use weft_engine::{CommId, Common, FtPort, ReqId};

use crate::agree::{self, Era, Tree, Value};
use crate::detector::Detector;
use crate::shrink::CtxPool;

mod agreement;
mod api;
mod data_path;
mod events;
mod revocation;

/// Settings of the FT layer.
#[derive(Clone, Debug, Default)]
pub struct FtOptions {
    /// Heartbeat period in ms (`None`: detector off).
    pub hb_period_ms: Option<u64>,
    /// Suspicion timeout in ms (`None`: three periods).
    pub hb_timeout_ms: Option<u64>,
    /// How agreements run (every rank must use the same).
    pub agree: AgreePath,
    /// Node of each world rank (empty: unknown, flat trees). With ranks on several nodes and
    /// several ranks on one node, agreements use the hierarchical bin/bin tree.
    pub node_of: Vec<u32>,
}

/// How agreements (agree, shrink) run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AgreePath {
    /// Recursive doubling while nothing fails, falling back to ERA's tree
    /// ([`Era::with_fast_path`]).
    #[default]
    Fast,
    /// ERA's tree only.
    Tree,
}

/// Counters of the FT layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FtStats {
    /// Undecodable FT messages dropped.
    pub malformed: u64,
    /// Messages for an older epoch or a freed / unknown communicator, dropped.
    pub stale: u64,
    /// Messages from ranks known failed, dropped.
    pub from_failed: u64,
    /// Messages parked until their communicator exists.
    pub parked: u64,
    /// Revokes delivered here.
    pub revokes: u64,
    /// Agreements (including shrinks) decided here.
    pub decided: u64,
    /// Of those, decided on the failure-free fast path.
    pub decided_fast: u64,
    /// Of those, decided on the communicator's data path (a blocking agreement of at most
    /// four members while none of them is known failed), without an agreement instance.
    pub decided_data: u64,
    /// Blocking agreements begun on the data path that converted to their agreement instance
    /// (a failure, a revoke, or a member on the control path).
    pub converted_data: u64,
    /// Of those, decided alone: every other member was known failed.
    pub decided_alone: u64,
    /// Heartbeats sent.
    pub heartbeats: u64,
    /// Failures this process's detector (or a finding it received) declared.
    pub declared: u64,
}

/// How many decided agreement instances each communicator keeps to answer late requests.
const KEEP_DECIDED: usize = 64;

/// Communicators known to the FT layer before the first sweep of freed ones.
const MIN_SWEEP: usize = 16;
/// At most this many messages wait for their communicator.
const MAX_PARKED: usize = 4096;

struct CommInfo {
    id: CommId,
    epoch: u32,
    world_of: Vec<u32>,
    rank: u32,
    /// The agreement tree, built by the first agreement (a revoke needs none).
    tree: std::cell::OnceCell<Tree>,
    next_seq: u32,
    /// Sequence numbers of the instances decided here, oldest first, at most
    /// [`KEEP_DECIDED`]: the decisions kept to answer late requests. An instance below
    /// `next_seq` that is not in `insts` was decided and dropped, so its messages are stale.
    kept: VecDeque<u32>,
    uniform: bool,
    /// Failure count at which `alone` was computed (`usize::MAX`: not yet).
    alone_at: usize,
    /// Every other member was known failed at `alone_at` failures.
    alone: bool,
    /// Agreements decided on the data path, and contributions that came early there.
    data: data_path::DataLog,
}

impl CommInfo {
    fn rank_of(&self, w: u32) -> Option<u32> {
        rank_in(&self.world_of, w)
    }

    /// True if every other member is known failed: recomputed (O(members)) only when the
    /// failure count changed.
    fn is_alone(&mut self, e: &FtPort) -> bool {
        let fc = e.failures().count();
        if fc != self.alone_at {
            self.alone_at = fc;
            let me = self.rank as usize;
            self.alone = self.world_of.iter().enumerate().all(|(r, &w)| r == me || e.failures().contains(w));
        }
        self.alone
    }
}

/// Rank of world rank `w` in a communicator of members `world_of`.
fn rank_in(world_of: &[u32], w: u32) -> Option<u32> {
    if world_of.get(w as usize) == Some(&w) {
        return Some(w); // the world communicator and its duplicates
    }
    world_of.iter().position(|&x| x == w).map(|p| p as u32)
}

enum Local {
    Agree {
        req: ReqId,
        out: *mut u64,
    },
    /// The blocking [`Ft::agree`]: the outcome goes to [`Glue::blocked`].
    Blocking,
    Shrink {
        req: ReqId,
        out: *mut u64,
    },
}

/// See [`Glue::ready`]: valid while the communicator and the failure count are unchanged.
struct Ready {
    ctx: u32,
    id: CommId,
    failures: usize,
    inst: Box<AgreeInstance>,
}

impl Ready {
    /// Built for communicator `info` (context `ctx`) with the failures known now.
    fn fits(&self, ctx: u32, info: &CommInfo, e: &FtPort) -> bool {
        self.ctx == ctx && self.id == info.id && self.failures == e.failures().count()
    }
}

struct AgreeInstance {
    era: Era,
    local: Option<Local>,
}

struct Glue {
    opts: FtOptions,
    clock: Instant,
    active: bool,
    /// Some communicator was put in uniform mode (ever): while false, no collective's outcome
    /// needs an agreement and [`Ft::may_be_uniform`] says so without a lookup.
    uniform_ever: bool,
    seen_failures: usize,
    comms: HashMap<u32, CommInfo>,
    /// Size of `comms` at which freed communicators are swept out ([`Glue::sweep_freed`]).
    sweep_at: usize,
    /// Agreement instances by (context id, sequence number). Boxed so that inserting one
    /// moves a pointer, not the state machine; pruned boxes are reused (`spare`), so the
    /// failure-free agreement allocates nothing for its instance.
    insts: HashMap<(u32, u32), Box<AgreeInstance>>,
    #[allow(clippy::vec_box)] // boxes, not instances: they move into `insts` by pointer
    spare: Vec<Box<AgreeInstance>>,
    /// A recycled instance already reset for the next agreement on a communicator (done
    /// after this member's first message left, while it waits: off the critical path).
    ready: Option<Ready>,
    /// Action buffer handed to the state machines, reused for every call.
    acts: Vec<agree::Action>,
    parked: Vec<(u32, u8, Vec<u8>)>,
    /// The engine's count of installed communicators when the parked messages were last
    /// retried: a new communicator may be the one they wait for.
    parked_at: u64,
    pool: CtxPool,
    det: Option<Detector>,
    stats: FtStats,
    /// Decision of the blocking agreement in progress (there is at most one: it blocks the
    /// only thread that uses this engine).
    blocked: Option<Value>,
    /// Encoding buffer, reused for every message sent.
    buf: Vec<u8>,
    /// The agreement (context id, sequence number) this member runs on the data path now.
    data_inflight: Option<(u32, u32)>,
}

/// Handle on the FT layer of one process (cheap to clone).
#[derive(Clone)]
pub struct Ft {
    st: Rc<RefCell<Glue>>,
}
