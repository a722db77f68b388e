//! Glue: drives the sans-IO protocols from the progress engine.
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

use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use weft_engine::{Activity, CommId, Common, Error, FtPort, Header, ReqId, Result, Status, Step};

use crate::agree::{self, union, Era, Tree, Value};
use crate::detector::{self, Detector};
use crate::revoke::{self, Revoke};
use crate::shrink::{shrunk_of, CtxPool};
use crate::wire::Wire;
use crate::{class, epoch_of};

mod data_path;

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

struct Driver {
    st: Rc<RefCell<Glue>>,
}

impl Activity<FtPort> for Driver {
    fn advance(&mut self, e: &mut FtPort) -> Step {
        self.st.borrow_mut().advance(e);
        Step::Continue
    }
}

fn hdr(cls: u8, ctx: u32, len: usize) -> Header {
    Header { class: cls, flags: 0, reserved: 0, ctx, src: 0, tag: 0, len: len as u64 }
}

impl Ft {
    /// Install the FT layer on `e`: message handlers now; the activity on first use (or now,
    /// when the detector is on).
    pub fn install(e: &mut FtPort, opts: FtOptions) -> Result<Ft> {
        let ft = Ft {
            st: Rc::new(RefCell::new(Glue {
                opts,
                clock: Instant::now(),
                active: false,
                uniform_ever: false,
                seen_failures: 0,
                comms: HashMap::default(),
                sweep_at: MIN_SWEEP,
                insts: HashMap::default(),
                spare: Vec::new(),
                ready: None,
                acts: Vec::with_capacity(8),
                parked: Vec::new(),
                parked_at: 0,
                pool: CtxPool::default(),
                det: None,
                stats: FtStats::default(),
                blocked: None,
                buf: Vec::with_capacity(64),
                data_inflight: None,
            })),
        };
        for cls in [class::REVOKE, class::AGREE, class::HEARTBEAT, class::FINDING] {
            let st = ft.st.clone();
            e.set_handler(
                cls,
                Box::new(move |e: &mut FtPort, peer: u32, h: &Header, p: &[u8]| {
                    let mut g = st.borrow_mut();
                    g.on_message(e, peer, h.class, p);
                    // Parked messages are retried by the slow-path driver, which a process
                    // that never called an FT operation (and has no detector) lacks: without
                    // it a revoke that arrived before its communicator was created here
                    // would never be delivered.
                    if !g.parked.is_empty() {
                        g.ensure_active(e, &st);
                    }
                }),
            )?;
        }
        let mut g = ft.st.borrow_mut();
        if let Some(p) = g.opts.hb_period_ms {
            let period = p.max(1) * 1_000_000;
            let timeout = g.opts.hb_timeout_ms.map_or(3 * period, |t| t.max(1) * 1_000_000);
            let world = e.comm(e.world())?;
            let (n, me) = (world.size(), world.world_rank(world.rank())?);
            let now = g.now();
            let mut d = Detector::new(n, me, period, timeout, now);
            for &w in e.failures().world_ranks() {
                d.on_failure(w, now);
            }
            g.det = Some(d);
            g.ensure_active(e, &ft.st);
        }
        drop(g);
        Ok(ft)
    }

    /// Counters.
    pub fn stats(&self) -> FtStats {
        self.st.borrow().stats.clone()
    }

    fn activate(&self, e: &mut FtPort) {
        self.st.borrow_mut().ensure_active(e, &self.st);
    }

    /// Revoke `c` at every live member (reliable broadcast); returns at once.
    pub fn revoke(&self, e: &mut FtPort, c: CommId) -> Result<()> {
        self.activate(e);
        if e.comm(c)?.is_revoked() {
            return Ok(());
        }
        let ctx = e.comm(c)?.ctx();
        let epoch = match self.st.borrow().comms.get(&ctx).filter(|i| i.id == c) {
            Some(i) => i.epoch,
            None => epoch_of(e.comm(c)?.members()),
        };
        self.st.borrow_mut().revoke_here(e, c, ctx, epoch, None)
    }

    /// Start an agreement on `c`: AND of `flag` over the members; the result is written to
    /// `*out` when the returned request completes (with `ProcFailed` if the agreed failed set
    /// has failures not acknowledged by every member; `*out` is valid then too).
    ///
    /// # Safety
    /// `out` must stay valid for a write of a `u64` until the request completes.
    pub unsafe fn iagree(&self, e: &mut FtPort, c: CommId, flag: u64, out: *mut u64) -> Result<ReqId> {
        self.start_agree(e, c, flag, |e| {
            let req = e.new_request(c)?;
            Ok((Local::Agree { req, out }, req))
        })
    }

    /// Start an agreement on `c` with contribution `flag`; `local` (called once `c` is known
    /// valid) says where its outcome goes.
    fn start_agree<T>(
        &self,
        e: &mut FtPort,
        c: CommId,
        flag: u64,
        local: impl FnOnce(&mut FtPort) -> Result<(Local, T)>,
    ) -> Result<T> {
        self.activate(e);
        let mut g = self.st.borrow_mut();
        let ctx = g.info(e, c)?;
        let (local, t) = local(e)?;
        let failed = e.comm(c)?.failed();
        let acked = e.comm(c)?.acked();
        g.start(e, ctx, local, Value::new(flag, 0, &failed, &acked), true);
        Ok(t)
    }

    /// Blocking agreement: `*flag` is this member's contribution on entry and the AND over
    /// the live members on return, also when the agreement completes with `ProcFailed`
    /// (failures not acknowledged by every member). Waits on the engine directly, without an
    /// engine request.
    pub fn agree(&self, e: &mut FtPort, c: CommId, flag: &mut u64) -> Result<()> {
        self.activate(e);
        {
            let mut g = self.st.borrow_mut();
            let ctx = g.info(e, c)?;
            if g.decide_alone(e, ctx) {
                // The only contributor left: the AND is its flag, and the agreed failed set
                // (every other member) is reported unless this member acknowledged it all.
                return if e.comm(c).is_ok_and(|v| v.has_unacked_failure()) {
                    let acked = e.comm(c)?.acked();
                    let mut ranks = e.comm(c)?.failed();
                    ranks.retain(|r| !acked.contains(r));
                    Err(Error::ProcFailed { ranks })
                } else {
                    Ok(())
                };
            }
            if let Some(x) = g.data_begin(e, ctx) {
                drop(g);
                if let Some(v) = self.data_agree(e, c, x, *flag)? {
                    *flag = v;
                    return Ok(());
                }
                return self.blocked_outcome(e, flag);
            }
        }
        self.start_agree(e, c, *flag, |_| Ok((Local::Blocking, ())))?;
        self.blocked_outcome(e, flag)
    }

    /// The outcome of the blocking agreement started on `flag`'s behalf (see [`Ft::agree`]).
    fn blocked_outcome(&self, e: &mut FtPort, flag: &mut u64) -> Result<()> {
        let (v, r) = match self.wait_blocked(e).outcome() {
            Ok(v) => (v, Ok(())),
            Err((v, ranks)) => (v, Err(Error::ProcFailed { ranks })),
        };
        *flag = v;
        r
    }

    /// Blocking agreement on a whole [`Value`] — AND of the flags, max of the context ids,
    /// union of `failed`, intersection of `acked` — returning the decision as it is, for a
    /// protocol that encodes its own sets in it (the DGRP round barrier). The agreement adds
    /// the ranks of `c` that fail to `failed`; no acknowledgement rule applies.
    pub fn agree_value(&self, e: &mut FtPort, c: CommId, v: Value) -> Result<Value> {
        if !v.is_canonical() {
            return Err(Error::InvalidArg(
                "agreement value: rank lists must be sorted, without duplicates".into(),
            ));
        }
        self.activate(e);
        {
            let mut g = self.st.borrow_mut();
            let ctx = g.info(e, c)?;
            g.start(e, ctx, Local::Blocking, v, false);
        }
        Ok(self.wait_blocked(e))
    }

    /// Wait for the decision of the blocking agreement just started (`blocked` is empty
    /// before: every blocking agreement takes its decision here).
    fn wait_blocked(&self, e: &mut FtPort) -> Value {
        let mut spins = 0;
        loop {
            if let Some(v) = self.st.borrow_mut().blocked.take() {
                return v;
            }
            e.idle_wait(&mut spins);
        }
    }

    /// Start a shrink of `c`; when the request completes, `*out` holds the new communicator
    /// ([`CommId::to_raw`]; also in the status's `count`).
    ///
    /// # Safety
    /// `out` must stay valid for a write of a `u64` until the request completes.
    pub unsafe fn ishrink(&self, e: &mut FtPort, c: CommId, out: *mut u64) -> Result<ReqId> {
        self.activate(e);
        let mut g = self.st.borrow_mut();
        let ctx = g.info(e, c)?;
        let req = e.new_request(c)?;
        let failed = e.comm(c)?.failed();
        let prop = g.pool.propose(e.contexts().next());
        g.start(e, ctx, Local::Shrink { req, out }, Value::new(u64::MAX, prop, &failed, &[]), true);
        Ok(req)
    }

    /// Blocking shrink.
    pub fn shrink(&self, e: &mut FtPort, c: CommId) -> Result<CommId> {
        let mut out = 0u64;
        // SAFETY: `out` outlives the request: it is waited for below.
        let req = unsafe { self.ishrink(e, c, &mut out)? };
        e.wait(req)?;
        Ok(CommId::from_raw(out))
    }

    /// Uniform mode of `c`: collectives that call [`Ft::uniform_after`] agree on their outcome.
    pub fn set_uniform(&self, e: &mut FtPort, c: CommId, on: bool) -> Result<()> {
        let mut g = self.st.borrow_mut();
        let ctx = g.info(e, c)?;
        g.comms.get_mut(&ctx).expect("just resolved").uniform = on;
        g.uniform_ever |= on;
        Ok(())
    }

    /// False when no communicator was ever put in uniform mode (then [`Ft::uniform_after`]
    /// returns the local outcome on every communicator).
    #[inline]
    pub fn may_be_uniform(&self) -> bool {
        self.st.borrow().uniform_ever
    }

    /// True if `c` is in uniform mode.
    pub fn is_uniform(&self, e: &FtPort, c: CommId) -> bool {
        let g = self.st.borrow();
        if !g.uniform_ever {
            return false;
        }
        e.comm(c)
            .map(|v| v.ctx())
            .ok()
            .and_then(|ctx| g.comms.get(&ctx))
            .is_some_and(|i| i.id == c && i.uniform)
    }

    /// Make the outcome of a collective on `c` uniform (when `c` is in uniform mode): an
    /// agreement on "did it succeed here" follows, and every member returns the same class:
    /// `Ok` everywhere, or the same error class everywhere (`ProcFailed` with the agreed
    /// ranks, else `Revoked`, else the local error / a generic "failed at another member").
    pub fn uniform_after(&self, e: &mut FtPort, c: CommId, local: Result<()>) -> Result<()> {
        if !self.is_uniform(e, c) {
            return local;
        }
        const OK: u64 = 1;
        const NO_PF: u64 = 2;
        const NO_REV: u64 = 4;
        let mut flag = OK | NO_PF | NO_REV;
        match &local {
            Ok(()) => {}
            Err(Error::ProcFailed { .. } | Error::ProcFailedPending) => flag &= !(OK | NO_PF),
            Err(Error::Revoked) => flag &= !(OK | NO_REV),
            Err(_) => flag &= !OK,
        }
        let mut out = 0u64;
        // SAFETY: `out` outlives the request: it is waited for below.
        let req = unsafe { self.iagree(e, c, flag, &mut out)? };
        let agreed = e.wait(req);
        match agreed {
            Ok(_) if out & OK != 0 => Ok(()),
            Err(Error::ProcFailed { ranks }) => Err(Error::ProcFailed { ranks }),
            Err(other) => Err(other),
            Ok(_) if out & NO_PF == 0 => Err(match local {
                Err(e @ Error::ProcFailed { .. }) => e,
                _ => Error::ProcFailed { ranks: e.comm(c).map(|v| v.failed()).unwrap_or_default() },
            }),
            Ok(_) if out & NO_REV == 0 => Err(Error::Revoked),
            Ok(_) => Err(match local {
                Err(e) => e,
                Ok(()) => Error::InvalidArg("uniform collective: it failed at another member".into()),
            }),
        }
    }
}

impl Glue {
    fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    fn ensure_active(&mut self, e: &mut FtPort, st: &Rc<RefCell<Glue>>) {
        if !self.active {
            self.active = true;
            // `seen_failures` stays where it was (0): the first advance replays every failure
            // known so far to the instances that messages created before this activation
            // (state machines ignore failures they already know).
            // Failures, detector ticks and parked messages are all it handles: the engine
            // advances it on its slow path and on new failures, not per message.
            e.spawn_slow(Driver { st: st.clone() });
        }
    }

    /// Cache the communicator `c`; returns its context id.
    fn info(&mut self, e: &FtPort, c: CommId) -> Result<u32> {
        let ctx = e.comm(c)?.ctx();
        if self.comms.get(&ctx).is_none_or(|i| i.id != c) {
            if self.comms.contains_key(&ctx) {
                // A freed communicator's context reused: its agreements are over.
                self.forget(ctx);
            }
            if self.comms.len() >= self.sweep_at {
                self.sweep_freed(e);
            }
            let world_of = e.comm(c).map(|v| v.members().to_vec())?;
            let rank = e.comm(c)?.rank();
            let info = CommInfo {
                id: c,
                epoch: epoch_of(&world_of),
                world_of,
                rank,
                tree: std::cell::OnceCell::new(),
                next_seq: 0,
                kept: VecDeque::new(),
                uniform: false,
                alone_at: usize::MAX,
                alone: false,
                data: data_path::DataLog::default(),
            };
            self.comms.insert(ctx, info);
        }
        Ok(ctx)
    }

    /// Drop the state of communicator context `ctx`: its info and its agreement instances.
    fn forget(&mut self, ctx: u32) {
        if self.comms.remove(&ctx).is_some() {
            self.insts.retain(|k, _| k.0 != ctx);
        }
    }

    /// Drop the state of every freed communicator, in one pass over the instances. Called when
    /// the table has doubled since the last sweep, so creating communicators stays amortised
    /// O(1) however many were created and freed before (a revoke or an agreement on a new
    /// communicator must not pay for the history of the job).
    fn sweep_freed(&mut self, e: &FtPort) {
        self.comms.retain(|&ctx, i| e.comm(i.id).map(|v| v.ctx()) == Ok(ctx));
        let comms = &self.comms;
        self.insts.retain(|k, _| comms.contains_key(&k.0));
        self.sweep_at = (2 * self.comms.len()).max(MIN_SWEEP);
    }

    /// The agreement tree of a communicator of world ranks `world_of`: bin/bin when its
    /// members span several nodes with more than one member on some node, binary otherwise.
    fn tree_for(node_of: &[u32], world_of: &[u32]) -> Tree {
        let nodes: Vec<u32> =
            world_of.iter().map(|&w| node_of.get(w as usize).copied().unwrap_or(0)).collect();
        let mut distinct = nodes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > 1 && distinct.len() < nodes.len() {
            Tree::bin_bin(&nodes)
        } else {
            Tree::binary(world_of.len() as u32)
        }
    }

    /// Resolve an incoming `(ctx, epoch)`: `Ok(Some(ctx))` live, `Ok(None)` parked, `Err` stale.
    fn resolve(&mut self, e: &FtPort, ctx: u32, epoch: u32) -> std::result::Result<bool, ()> {
        if let Some(i) = self.comms.get(&ctx).filter(|i| e.comm(i.id).map(|v| v.ctx()) == Ok(ctx)) {
            // The common case: one lookup.
            return if i.epoch == epoch { Ok(true) } else { Err(()) };
        }
        let live = match e.contexts().comm_of(ctx) {
            Some(c) => self.info(e, c).is_ok(),
            None => false,
        };
        if !live {
            self.forget(ctx);
            return if e.contexts().may_come(ctx) { Ok(false) } else { Err(()) };
        }
        if self.comms[&ctx].epoch != epoch {
            return Err(());
        }
        Ok(true)
    }

    /// Revoke communicator `c` (context `ctx`, epoch `epoch`) here: this member's first
    /// sight of the revocation, started locally (`from` = `None`) or by a message from member
    /// `from`. The forwards leave first, then the local delivery. Works on the engine's member
    /// list, not on [`CommInfo`]: a revoke is often the first FT operation on its
    /// communicator, and building the cached state would delay the message.
    fn revoke_here(
        &mut self,
        e: &mut FtPort,
        c: CommId,
        ctx: u32,
        epoch: u32,
        from: Option<u32>,
    ) -> Result<()> {
        let members = e.comm(c)?.members();
        let me = e.comm(c)?.rank();
        let failed: Vec<u32> = if e.failures().count() == 0 {
            Vec::new()
        } else {
            e.failures().world_ranks().iter().filter_map(|&w| rank_in(members, w)).collect()
        };
        let mut rv = Revoke::new(members.len() as u32, me, &failed);
        let acts = match from {
            None => rv.start(),
            Some(f) => rv.on_msg(f),
        };
        for a in acts {
            match a {
                revoke::Action::Send { to } => {
                    let w = e.comm(c)?.members()[to as usize];
                    send_wire(e, &mut self.buf, w, ctx, &Wire::Revoke { ctx, epoch });
                }
                revoke::Action::Deliver => {
                    if e.revoke_local(c).unwrap_or(false) {
                        self.stats.revokes += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// The live communicator of context `ctx` with its epoch: from the cache when it is
    /// there, else from the engine.
    fn live_comm(&self, e: &FtPort, ctx: u32) -> Option<(CommId, u32)> {
        if let Some(i) = self.comms.get(&ctx).filter(|i| e.comm(i.id).map(|v| v.ctx()) == Ok(ctx)) {
            return Some((i.id, i.epoch));
        }
        let c = e.contexts().comm_of(ctx)?;
        Some((c, epoch_of(e.comm(c).map(|v| v.members()).ok()?)))
    }

    /// A revoke message from world rank `peer` for `(ctx, epoch)`.
    fn on_revoke(&mut self, e: &mut FtPort, peer: u32, ctx: u32, epoch: u32, p: &[u8]) {
        let Some((c, ep)) = self.live_comm(e, ctx) else {
            if e.contexts().may_come(ctx) {
                // For a communicator this process will create soon.
                self.park(peer, class::REVOKE, p);
            } else {
                self.stats.stale += 1;
            }
            return;
        };
        if ep != epoch {
            self.stats.stale += 1;
            return;
        }
        if e.comm(c).map(|v| v.is_revoked()).unwrap_or(true) {
            return;
        }
        let Some(from) = e.comm(c).map(|v| v.members()).ok().and_then(|m| rank_in(m, peer)) else {
            self.stats.malformed += 1;
            return;
        };
        // `c` is live (looked up just now), so this cannot fail.
        let _ = self.revoke_here(e, c, ctx, epoch, Some(from));
    }

    fn send(&mut self, e: &mut FtPort, w: u32, ctx: u32, m: &Wire) {
        send_wire(e, &mut self.buf, w, ctx, m);
    }

    /// Keep a message for a communicator not created here yet (bounded).
    fn park(&mut self, peer: u32, cls: u8, p: &[u8]) {
        if self.parked.len() < MAX_PARKED {
            self.stats.parked += 1;
            self.parked.push((peer, cls, p.to_vec()));
        } else {
            self.stats.malformed += 1;
        }
    }

    /// Run `f` on instance `(ctx, seq)` of a resolved communicator with the reused action
    /// buffer, then carry out the actions. The instance is created if new and `create`;
    /// otherwise a missing instance returns false (nothing done).
    ///
    /// This is the agreement's hot path: it looks the communicator and the instance up once
    /// each and works on the fields of `self` separately (a failure-free agreement used to
    /// spend more time in map lookups than in the protocol).
    fn drive(
        &mut self,
        e: &mut FtPort,
        ctx: u32,
        seq: u32,
        create: bool,
        f: impl FnOnce(&mut AgreeInstance, &mut Vec<agree::Action>),
    ) -> bool {
        let Glue { opts, comms, insts, spare, ready, acts, buf, stats, pool, blocked, .. } = self;
        let Some(info) = comms.get_mut(&ctx) else { return false };
        let inst: &mut AgreeInstance = if create {
            insts.entry((ctx, seq)).or_insert_with(|| match ready.take() {
                Some(r) if r.fits(ctx, info, e) => r.inst,
                r => {
                    *ready = r;
                    new_agree_instance(e, info, opts, spare)
                }
            })
        } else {
            match insts.get_mut(&(ctx, seq)) {
                Some(b) => b,
                None => return false,
            }
        };
        f(inst, acts);
        // If this call decided: the local request and the path, taken while we hold the
        // instance.
        let mut done = acts
            .iter()
            .any(|a| matches!(a, agree::Action::Decided(_)))
            .then(|| (inst.local.take(), inst.era.on_fast_path()));
        for a in acts.drain(..) {
            match a {
                agree::Action::Send { to, msg } => {
                    let w = info.world_of[to as usize];
                    send_wire(e, buf, w, ctx, &Wire::Agree { ctx, epoch: info.epoch, seq, msg });
                }
                agree::Action::Decided(v) => {
                    let Some((local, fast)) = done.take() else { continue };
                    // Without a local request: an instance rebuilt from the data path's log,
                    // whose decision was counted when it was taken.
                    if let Some(local) = local {
                        stats.decided += 1;
                        stats.decided_fast += fast as u64;
                        complete(e, info, pool, blocked, v, local);
                        // Kept to answer late requests; the oldest goes in `housekeep`.
                        info.kept.push_back(seq);
                    }
                }
            }
        }
        true
    }

    /// True if this member is the only live one of `ctx` and nothing arrived for its next
    /// instance: that instance is then decided here (its sequence number is used up and the
    /// decision counted; the caller completes it). ERA would decide the same alone: no other
    /// member can have decided an instance this member has not contributed to, and messages
    /// from failed members are dropped, so no late request can come.
    fn decide_alone(&mut self, e: &FtPort, ctx: u32) -> bool {
        let Some(info) = self.comms.get_mut(&ctx) else { return false };
        if !info.is_alone(e) || self.insts.contains_key(&(ctx, info.next_seq)) {
            return false;
        }
        info.next_seq += 1;
        self.stats.decided += 1;
        self.stats.decided_alone += 1;
        true
    }

    /// Start the next instance of `ctx` with contribution `v`; `view`: `v.failed` is exactly
    /// this member's view of the failures ([`Era::start_view_into`]).
    fn start(&mut self, e: &mut FtPort, ctx: u32, local: Local, mut v: Value, view: bool) {
        if self.decide_alone(e, ctx) {
            let Glue { comms, pool, blocked, .. } = self;
            let info = &comms[&ctx];
            let others: Vec<u32> = (0..info.world_of.len() as u32).filter(|&r| r != info.rank).collect();
            union(&mut v.failed, &others);
            complete(e, info, pool, blocked, v, local);
            return;
        }
        let info = self.comms.get_mut(&ctx).expect("resolved");
        let seq = info.next_seq;
        info.next_seq += 1;
        self.drive(e, ctx, seq, true, |inst, out| {
            inst.local = Some(local);
            if view {
                inst.era.start_view_into(v, out);
            } else {
                inst.era.start_into(v, out);
            }
        });
        self.housekeep(e, ctx);
    }

    /// Bookkeeping moved off the agreement's critical path (it runs after this member's
    /// first message left, while the peers' are on their way): drop the decisions kept
    /// beyond [`KEEP_DECIDED`] and reset a recycled instance for the next agreement.
    fn housekeep(&mut self, e: &FtPort, ctx: u32) {
        let Glue { opts, comms, insts, spare, ready, .. } = self;
        let Some(info) = comms.get_mut(&ctx) else { return };
        prune(info, insts, spare, ctx);
        // (Re)build it unless it already fits: one left for another communicator, or from
        // before a failure, goes back to the spares.
        if ready.as_ref().is_some_and(|r| r.fits(ctx, info, e)) || spare.is_empty() {
            return;
        }
        if let Some(old) = ready.take() {
            spare.push(old.inst);
        }
        let inst = new_agree_instance(e, info, opts, spare);
        *ready = Some(Ready { ctx, id: info.id, failures: e.failures().count(), inst });
    }

    fn on_message(&mut self, e: &mut FtPort, peer: u32, cls: u8, p: &[u8]) {
        if e.failures().world_ranks().contains(&peer) {
            self.stats.from_failed += 1;
            return;
        }
        let w = match Wire::decode(cls, p) {
            Ok(w) => w,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        match w {
            Wire::Revoke { ctx, epoch } => self.on_revoke(e, peer, ctx, epoch, p),
            Wire::Agree { ctx, epoch, seq, msg } => {
                match self.resolve(e, ctx, epoch) {
                    Err(()) => {
                        self.stats.stale += 1;
                        return;
                    }
                    Ok(false) => {
                        self.park(peer, cls, p);
                        return;
                    }
                    Ok(true) => {}
                }
                let info = &self.comms[&ctx];
                let next_seq = info.next_seq;
                let Some(from) = info.rank_of(peer) else {
                    self.stats.malformed += 1;
                    return;
                };
                if seq > next_seq.saturating_add(1 << 16) {
                    self.stats.stale += 1;
                    return;
                }
                // Below `next_seq` without an instance: decided and dropped, stale, unless it
                // ran on the data path here.
                let create = seq >= next_seq
                    || (!self.insts.contains_key(&(ctx, seq)) && self.data_known(e, ctx, seq));
                if !self.drive(e, ctx, seq, create, |inst, out| inst.era.on_msg_into(from, msg, out)) {
                    self.stats.stale += 1;
                }
            }
            Wire::Heartbeat { .. } => {
                let now = self.now();
                if let Some(d) = &mut self.det {
                    d.on_heartbeat(peer, now);
                }
            }
            Wire::Finding { rank } => {
                let now = self.now();
                match &mut self.det {
                    Some(d) => {
                        let acts = d.on_finding(peer, rank, now);
                        self.apply_det(e, acts);
                    }
                    None => e.notify_failed(rank),
                }
            }
        }
    }

    fn apply_det(&mut self, e: &mut FtPort, acts: Vec<detector::Action>) {
        for a in acts {
            match a {
                detector::Action::Heartbeat { to } => {
                    self.stats.heartbeats += 1;
                    let c = self.det.as_ref().map_or(0, |d| d.counter());
                    self.send(e, to, 0, &Wire::Heartbeat { counter: c });
                }
                detector::Action::Forward { to, rank } => self.send(e, to, 0, &Wire::Finding { rank }),
                detector::Action::Declare { rank } => {
                    self.stats.declared += 1;
                    e.notify_failed(rank);
                }
            }
        }
    }

    fn advance(&mut self, e: &mut FtPort) {
        let fc = e.failures().count();
        if fc != self.seen_failures {
            let new: Vec<u32> = e.failures().world_ranks()[self.seen_failures.min(fc)..].to_vec();
            self.seen_failures = fc;
            for w in new {
                self.on_world_failure(e, w);
            }
        }
        if self.det.is_some() {
            let now = self.now();
            let d = self.det.as_mut().expect("checked");
            if now >= d.next_deadline() {
                let acts = d.tick(now);
                self.apply_det(e, acts);
            }
        }
        if !self.parked.is_empty() && e.contexts().installed() != self.parked_at {
            self.parked_at = e.contexts().installed();
            for (peer, cls, p) in std::mem::take(&mut self.parked) {
                self.on_message(e, peer, cls, &p);
            }
        }
    }

    fn on_world_failure(&mut self, e: &mut FtPort, w: u32) {
        if let Some(d) = &mut self.det {
            let now = self.clock.elapsed().as_nanos() as u64;
            let acts = d.on_failure(w, now);
            self.apply_det(e, acts);
        }
        let keys: Vec<(u32, u32)> = self.insts.keys().copied().collect();
        for (ctx, seq) in keys {
            let Some(info) = self.comms.get(&ctx) else { continue };
            if e.comm(info.id).map(|v| v.ctx()) != Ok(ctx) {
                self.forget(ctx); // a freed communicator
                continue;
            }
            let Some(r) = info.rank_of(w) else { continue };
            self.drive(e, ctx, seq, false, |inst, out| inst.era.on_failure_into(r, out));
        }
    }
}

/// A new agreement instance for `info` (a recycled box when there is one).
#[allow(clippy::vec_box)]
fn new_agree_instance(
    e: &FtPort,
    info: &CommInfo,
    opts: &FtOptions,
    spare: &mut Vec<Box<AgreeInstance>>,
) -> Box<AgreeInstance> {
    let failed: Vec<u32> = e.failures().world_ranks().iter().filter_map(|&w| info.rank_of(w)).collect();
    let fast = opts.agree == AgreePath::Fast;
    let tree = info.tree.get_or_init(|| Glue::tree_for(&opts.node_of, &info.world_of));
    match spare.pop() {
        Some(mut b) => {
            b.era.reset(tree.clone(), info.rank, &failed, fast);
            b.local = None;
            b
        }
        None => {
            let era = if fast {
                Era::new_fast(tree.clone(), info.rank, &failed)
            } else {
                Era::new(tree.clone(), info.rank, &failed)
            };
            Box::new(AgreeInstance { era, local: None })
        }
    }
}

/// Encode `m` into `buf` and send it to world rank `w`.
fn send_wire(e: &mut FtPort, buf: &mut Vec<u8>, w: u32, ctx: u32, m: &Wire) {
    buf.clear();
    m.encode_into(buf);
    // A failed destination is fine to skip: the failure notice path handles it.
    let _ = e.send_ctrl(w, hdr(m.class(), ctx, buf.len()), buf);
}

/// The local member's instance decided `v`: complete its agree or shrink request.
fn complete(
    e: &mut FtPort,
    info: &CommInfo,
    pool: &mut CtxPool,
    blocked: &mut Option<Value>,
    v: Value,
    local: Local,
) {
    let me = info.rank;
    // The agreed failed set is failure knowledge: a member that had not detected one of these
    // failures yet learns it now, so that acknowledging after an agreement (or a uniform
    // collective) that reported them covers them, as it does at the members that detected them.
    for &r in &v.failed {
        if let Some(&w) = info.world_of.get(r as usize) {
            e.notify_failed(w);
        }
    }
    match local {
        Local::Blocking => *blocked = Some(v),
        Local::Agree { req, out } => {
            let res = match v.outcome() {
                Ok(f) => {
                    // SAFETY: iagree's contract: `out` is valid until the request completes.
                    unsafe { out.write(f) };
                    Ok(Status { source: me, tag: 0, count: 0 })
                }
                Err((f, ranks)) => {
                    // SAFETY: as above.
                    unsafe { out.write(f) };
                    Err(Error::ProcFailed { ranks })
                }
            };
            e.complete_request(req, res);
        }
        Local::Shrink { req, out } => {
            let s = shrunk_of(info.world_of.len() as u32, &v);
            let res = if s.survivors.binary_search(&me).is_err() {
                Err(Error::ProcFailed { ranks: vec![me] })
            } else if !pool.commit(s.ctx) {
                Err(Error::InvalidArg(format!(
                    "shrink: context id {} was agreed by two concurrent shrinks (call them in the same order everywhere)",
                    s.ctx
                )))
            } else {
                let members = s.survivors.iter().map(|&r| info.world_of[r as usize]).collect();
                e.comm_create_agreed(s.ctx, members)
            };
            match res {
                Ok(id) => {
                    // SAFETY: ishrink's contract: `out` is valid until the request completes.
                    unsafe { out.write(id.to_raw()) };
                    e.complete_request(req, Ok(Status { source: me, tag: 0, count: id.to_raw() as usize }));
                }
                Err(err) => e.complete_request(req, Err(err)),
            }
        }
    }
}

/// Keep the last [`KEEP_DECIDED`] instances of `ctx` decided here (they answer late
/// requests): older ones go, their boxes reused for later instances. O(1) per decision.
#[allow(clippy::vec_box)]
fn prune(
    info: &mut CommInfo,
    insts: &mut HashMap<(u32, u32), Box<AgreeInstance>>,
    spare: &mut Vec<Box<AgreeInstance>>,
    ctx: u32,
) {
    while info.kept.len() > KEEP_DECIDED {
        let old = info.kept.pop_front().expect("longer than KEEP_DECIDED");
        if let Some(b) = insts.remove(&(ctx, old)) {
            if spare.len() < KEEP_DECIDED {
                spare.push(b);
            }
        }
    }
}
