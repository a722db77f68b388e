//! `weft-coll`: the collectives of weft, as schedules progressed by the engine.
//!
//! A collective call is turned into a [`schedule::Schedule`] — a small DAG, kept in rounds,
//! of send / receive / local-reduce / copy steps over byte regions of the caller's buffers and
//! a scratch buffer — built once per (communicator, collective, count, root, type size,
//! commutativity; the algorithm follows from these and the overrides) and cached. Every step
//! is point-to-point on the communicator's internal context (`isend_coll` / `irecv_coll`), so
//! collectives are progressed by the same loop as point-to-point traffic.
//!
//! **Two executors of one schedule.** A *non-blocking* call (`start`) runs the schedule as an
//! engine [`weft_engine::Activity`] completing a generic request; any number may be in flight
//! on any communicators. A *blocking* call (`run`) executes it directly in the caller — per
//! round: post, wait on the engine requests (the engine's `wait`, so the progress mode
//! applies), run the local steps — with no activity, no generic request and no allocation:
//!
//! - per-communicator state is a `Vec` indexed by the communicator's slot, and the cache a
//!   short list per communicator with a last-hit index (no hashing per call);
//! - the cached entry owns the buffers a run needs (scratch, a staging arena holding the
//!   16-byte header + payload of every staged message of a round, the in-flight list), which
//!   blocking calls reuse; an eager send that leaves at once allocates no engine request
//!   (`isend_coll_opt`);
//! - the schedule and the reduction are borrowed, not reference-counted or cloned.
//!
//! For 2 ranks an 8-byte allreduce is one send + one receive + one reduce; a barrier one
//! exchange of a header-only message; a bcast one message.
//!
//! **Tags.** Each communicator has a collective sequence number, advanced by every
//! collective call (MPI requires every member to call collectives in the same order). A run
//! uses tag `FIRST_COLL_TAG + seq` (modulo the tag space), so concurrent collectives on one
//! communicator never match each other's messages; within one run, messages between two
//! ranks are matched in order (non-overtaking), which every schedule here respects.
//!
//! **Hierarchy.** The engine does not know nodes. The facade hands [`Coll::new`] the
//! runtime's node id of every world rank. Hierarchical algorithms (bin/bin, bin/star) compose
//! a leader tree and per-node trees into one tree over the communicator's ranks and run it as
//! point-to-point steps on the communicator itself, using node-local and leader rank lists
//! computed from the node map (`hier.rs`). This needs no sub-communicators, hence no extra
//! context ids and no collective communicator creation on first use; the price is that the
//! hierarchy is fixed per call shape rather than reusing tuned flat algorithms inside each
//! level (as Open MPI's `han` does with real sub-communicators).
//!
//! **Errors.** Invalid root → `InvalidRank`; null or short buffers, type/op mismatch, count
//! / root / kind / type-size mismatch between ranks (carried in a 16-byte header of every
//! eager-size message, checked by exact length otherwise) → `InvalidArg` with a message
//! starting "collective argument mismatch". A failed peer → `ProcFailed`; the run then sends
//! an abort header to every rank it still owed a message, so the error travels down the
//! schedule instead of leaving ranks waiting.
//!
//! Modules: `schedule` (step DAG, builder, executor), `select` (names, overrides, defaults),
//! `dtype`, `op`; algorithm families `tree`, `hier`, `recdbl`, `bruck`, `ring`,
//! `rabenseifner`, `pairwise`; one module per collective.

pub mod dtype;
pub mod hier;
pub mod needs;
pub mod op;
pub mod schedule;
pub mod select;
pub mod tree;

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod bruck;
mod gather;
mod pairwise;
mod rabenseifner;
mod recdbl;
mod reduce;
mod reduce_scatter;
mod ring;
mod scan;
mod scatter;

use std::rc::Rc;

use weft_engine::{CollPort, CommId, Common, Error, ReqId, Result, Status, FIRST_COLL_TAG, MAX_TAG};

pub use dtype::{as_bytes, DType, Datatype, DoubleInt, FloatInt, IntInt};
pub use op::{Op, UserFnPtr};
pub use schedule::Schedule;
pub use select::{Alg, Overrides};

use schedule::{Args, Check, OwnedArgs, Run, RunBufs};

/// A collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// Barrier.
    Barrier = 0,
    /// Broadcast.
    Bcast,
    /// Reduce to a root.
    Reduce,
    /// Allreduce.
    Allreduce,
    /// Gather.
    Gather,
    /// Gather with per-rank counts.
    Gatherv,
    /// Scatter.
    Scatter,
    /// Scatter with per-rank counts.
    Scatterv,
    /// Allgather.
    Allgather,
    /// Allgather with per-rank counts.
    Allgatherv,
    /// All-to-all.
    Alltoall,
    /// All-to-all with per-rank counts.
    Alltoallv,
    /// Reduce-scatter with per-rank counts.
    ReduceScatter,
    /// Reduce-scatter with equal blocks.
    ReduceScatterBlock,
    /// Inclusive scan.
    Scan,
    /// Exclusive scan.
    Exscan,
}

impl Kind {
    /// Every collective.
    pub const ALL: [Kind; 16] = [
        Kind::Barrier,
        Kind::Bcast,
        Kind::Reduce,
        Kind::Allreduce,
        Kind::Gather,
        Kind::Gatherv,
        Kind::Scatter,
        Kind::Scatterv,
        Kind::Allgather,
        Kind::Allgatherv,
        Kind::Alltoall,
        Kind::Alltoallv,
        Kind::ReduceScatter,
        Kind::ReduceScatterBlock,
        Kind::Scan,
        Kind::Exscan,
    ];

    /// Lower-case name (`allreduce`, `reduce_scatter_block`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Barrier => "barrier",
            Kind::Bcast => "bcast",
            Kind::Reduce => "reduce",
            Kind::Allreduce => "allreduce",
            Kind::Gather => "gather",
            Kind::Gatherv => "gatherv",
            Kind::Scatter => "scatter",
            Kind::Scatterv => "scatterv",
            Kind::Allgather => "allgather",
            Kind::Allgatherv => "allgatherv",
            Kind::Alltoall => "alltoall",
            Kind::Alltoallv => "alltoallv",
            Kind::ReduceScatter => "reduce_scatter",
            Kind::ReduceScatterBlock => "reduce_scatter_block",
            Kind::Scan => "scan",
            Kind::Exscan => "exscan",
        }
    }

    /// The environment override key, `WEFT_COLL_<NAME>`.
    pub fn env_key(self) -> &'static str {
        match self {
            Kind::Barrier => "WEFT_COLL_BARRIER",
            Kind::Bcast => "WEFT_COLL_BCAST",
            Kind::Reduce => "WEFT_COLL_REDUCE",
            Kind::Allreduce => "WEFT_COLL_ALLREDUCE",
            Kind::Gather => "WEFT_COLL_GATHER",
            Kind::Gatherv => "WEFT_COLL_GATHERV",
            Kind::Scatter => "WEFT_COLL_SCATTER",
            Kind::Scatterv => "WEFT_COLL_SCATTERV",
            Kind::Allgather => "WEFT_COLL_ALLGATHER",
            Kind::Allgatherv => "WEFT_COLL_ALLGATHERV",
            Kind::Alltoall => "WEFT_COLL_ALLTOALL",
            Kind::Alltoallv => "WEFT_COLL_ALLTOALLV",
            Kind::ReduceScatter => "WEFT_COLL_REDUCE_SCATTER",
            Kind::ReduceScatterBlock => "WEFT_COLL_REDUCE_SCATTER_BLOCK",
            Kind::Scan => "WEFT_COLL_SCAN",
            Kind::Exscan => "WEFT_COLL_EXSCAN",
        }
    }

    /// The communicator info key, `coll_<name>`.
    pub fn info_key(self) -> String {
        format!("coll_{}", self.name())
    }

    /// From a wire code.
    pub fn from_code(c: u8) -> Option<Kind> {
        Kind::ALL.get(c as usize).copied()
    }

    /// True for the collectives that take a root.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Kind::Bcast | Kind::Reduce | Kind::Gather | Kind::Gatherv | Kind::Scatter | Kind::Scatterv
        )
    }

    /// True for the collectives that take a reduction operation.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Kind::Reduce
                | Kind::Allreduce
                | Kind::ReduceScatter
                | Kind::ReduceScatterBlock
                | Kind::Scan
                | Kind::Exscan
        )
    }

    fn is_v(self) -> bool {
        matches!(
            self,
            Kind::Gatherv | Kind::Scatterv | Kind::Allgatherv | Kind::Alltoallv | Kind::ReduceScatter
        )
    }
}

/// Arguments of one collective call (counts and displacements in elements).
///
/// `count` is: the element count (bcast, reduce, allreduce, scan, exscan); the per-rank block
/// (gather, scatter, allgather, alltoall, reduce_scatter_block); this rank's send count
/// (gatherv, allgatherv) or receive count (scatterv). Unused slices may be empty; `rcounts`
/// of gatherv and `scounts`/`sdispls` of scatterv are read at the root only.
#[derive(Clone, Debug)]
pub struct Spec<'a> {
    /// The collective.
    pub kind: Kind,
    /// Send buffer (may be null when its length is 0).
    pub send: *const u8,
    /// Send buffer length in bytes.
    pub send_len: usize,
    /// Receive (or in/out) buffer.
    pub recv: *mut u8,
    /// Receive buffer length in bytes.
    pub recv_len: usize,
    /// Element type.
    pub dtype: DType,
    /// Reduction (reducing collectives only).
    pub op: Option<Op>,
    /// See the type's documentation.
    pub count: usize,
    /// Root (rooted collectives).
    pub root: u32,
    /// Per-rank send counts.
    pub scounts: &'a [usize],
    /// Per-rank send displacements.
    pub sdispls: &'a [usize],
    /// Per-rank receive counts.
    pub rcounts: &'a [usize],
    /// Per-rank receive displacements.
    pub rdispls: &'a [usize],
}

impl Args for Spec<'_> {
    #[inline(always)]
    fn send(&self) -> (*const u8, usize) {
        (self.send, self.send_len)
    }
    #[inline(always)]
    fn recv(&self) -> (*mut u8, usize) {
        (self.recv, self.recv_len)
    }
    #[inline(always)]
    fn dt(&self) -> DType {
        self.dtype
    }
    #[inline(always)]
    fn op(&self) -> Option<&Op> {
        self.op.as_ref()
    }
}

impl Spec<'_> {
    /// A spec with no buffers, counts or operation.
    pub const fn new(kind: Kind, dtype: DType) -> Spec<'static> {
        Spec {
            kind,
            send: std::ptr::null(),
            send_len: 0,
            recv: std::ptr::null_mut(),
            recv_len: 0,
            dtype,
            op: None,
            count: 0,
            root: 0,
            scounts: &[],
            sdispls: &[],
            rcounts: &[],
            rdispls: &[],
        }
    }
}

/// What schedule builders see.
pub(crate) struct BuildContext<'a> {
    pub rank: u32,
    pub n: u32,
    pub es: usize,
    pub count: usize,
    pub root: u32,
    pub nodes: &'a [u32],
    pub commute: bool,
    pub scounts: &'a [usize],
    pub sdispls: &'a [usize],
    pub rcounts: &'a [usize],
    pub rdispls: &'a [usize],
}

impl BuildContext<'_> {
    /// The tree of a tree-shaped algorithm, rooted at `root`.
    pub(crate) fn tree(&self, alg: Alg, root: u32) -> tree::Tree {
        use tree::Shape;
        match alg {
            Alg::Knomial => tree::flat(Shape::Knomial(4), self.rank, self.n, root),
            Alg::Flat => tree::flat(Shape::Binary, self.rank, self.n, root),
            Alg::Linear => tree::flat(Shape::Star, self.rank, self.n, root),
            Alg::BinBin => hier::tree(self.nodes, self.rank, root, Shape::Binary, Shape::Binary),
            Alg::BinStar => hier::tree(self.nodes, self.rank, root, Shape::Binary, Shape::Star),
            _ => tree::flat(Shape::Knomial(2), self.rank, self.n, root),
        }
    }
}

/// Cache key of a schedule within one communicator. The algorithm is not part of it: it is a
/// function of these fields and of the overrides, and changing an override empties the cache.
///
/// It holds everything [`Coll::validate`] depends on besides the buffers (the type and the
/// operation's code included), so a hit needs only the buffer checks against [`Entry::need`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    kind: Kind,
    count: usize,
    root: u32,
    dt: DType,
    /// [`Op::code`] (0: none).
    op: u8,
    commute: bool,
}

impl Key {
    #[inline(always)]
    fn of(spec: &Spec) -> Key {
        Key {
            kind: spec.kind,
            count: spec.count,
            root: spec.root,
            dt: spec.dtype,
            op: spec.op.as_ref().map_or(0, |o| o.code()),
            commute: spec.op.as_ref().is_none_or(|o| o.commutative()),
        }
    }
}

/// A cached schedule with the buffers blocking calls reuse.
struct Entry {
    key: Key,
    /// Bytes this rank's send and receive buffers must hold ([`needs::needs`]).
    need: (usize, usize),
    sched: Rc<Schedule>,
    stage_len: usize,
    bufs: RunBufs,
}

/// Collectives state of one communicator.
#[derive(Default)]
struct PerComm {
    /// The communicator (its slot may be reused by a later one: then this state is reset).
    id: Option<CommId>,
    seq: u32,
    info: Overrides,
    nodes: Option<Rc<[u32]>>,
    cache: Vec<Entry>,
    /// Index in `cache` of the last hit, tried first.
    last: usize,
}

/// Largest number of cached schedules before the cache is emptied.
const CACHE_MAX: usize = 1024;

/// What a call runs, once validated.
enum Plan {
    /// Nothing to do (zero count).
    Empty,
    /// A cached schedule: `comms[slot].cache[idx]`.
    Cached(usize, usize),
    /// Built for this call only (v-variants).
    Owned(Schedule),
}

/// The collectives state of a process.
pub struct Coll {
    node_of_world: Vec<u32>,
    env: Overrides,
    /// Indexed by the communicator's slot (`CommId::to_raw() as u32`): no hashing per call.
    comms: Vec<PerComm>,
    cached: usize,
    stage_max: usize,
}

impl Coll {
    /// State for a process whose world rank `w` lives on node `node_of_world[w]`; messages of
    /// up to `stage_max` bytes (the eager limit) carry the checking header.
    pub fn new(node_of_world: Vec<u32>, stage_max: usize) -> Coll {
        Coll {
            node_of_world,
            env: Overrides::default(),
            comms: Vec::new(),
            cached: 0,
            stage_max: stage_max.max(schedule::HDR),
        }
    }

    /// Set the process-wide overrides (from `WEFT_COLL_*`).
    pub fn set_overrides(&mut self, o: Overrides) {
        self.env = o;
        for pc in &mut self.comms {
            pc.cache.clear();
        }
        self.cached = 0;
    }

    /// The state of `c`, created (or reset, if its slot held an older communicator) on demand.
    #[inline]
    fn per_comm(&mut self, c: CommId) -> &mut PerComm {
        let slot = c.to_raw() as u32 as usize;
        if slot >= self.comms.len() {
            self.comms.resize_with(slot + 1, PerComm::default);
        }
        let pc = &mut self.comms[slot];
        if pc.id != Some(c) {
            self.cached -= pc.cache.len();
            *pc = PerComm { id: Some(c), ..PerComm::default() };
        }
        pc
    }

    /// Set a communicator info key: `coll_<name>` = algorithm name (or `auto`).
    pub fn set_info(&mut self, c: CommId, key: &str, value: &str) -> Result<()> {
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.info_key() == key)
            .ok_or_else(|| Error::InvalidArg(format!("unknown collective info key {key:?}")))?;
        let pc = self.per_comm(c);
        pc.info.set(kind, value)?;
        let n = pc.cache.len();
        pc.cache.clear();
        self.cached -= n;
        Ok(())
    }

    fn nodes(&mut self, e: &CollPort, c: CommId) -> Result<Rc<[u32]>> {
        let slot = c.to_raw() as u32 as usize;
        if slot >= self.comms.len() || self.comms[slot].id != Some(c) {
            self.per_comm(c);
        }
        let (node_of_world, pc) = (&self.node_of_world, &mut self.comms[slot]);
        if let Some(n) = &pc.nodes {
            return Ok(n.clone());
        }
        let g = e.comm(c)?.members().to_vec();
        let n: Rc<[u32]> = g.iter().map(|&w| node_of_world.get(w as usize).copied().unwrap_or(0)).collect();
        pc.nodes = Some(n.clone());
        Ok(n)
    }

    /// The algorithm a call with `spec` on `c` would use.
    pub fn algorithm(&mut self, e: &CollPort, c: CommId, spec: &Spec) -> Result<Alg> {
        let n = e.comm(c)?.size();
        let nodes = self.nodes(e, c)?;
        Ok(self.pick(c, spec, n, &nodes))
    }

    fn pick(&self, c: CommId, spec: &Spec, n: u32, nodes: &[u32]) -> Alg {
        let slot = c.to_raw() as u32 as usize;
        let info = self.comms.get(slot).filter(|p| p.id == Some(c)).and_then(|p| p.info.get(spec.kind));
        let over = info.or(self.env.get(spec.kind));
        let s = select::Shape {
            n,
            bytes: spec.count * spec.dtype.size(),
            nodes: hier::node_count(nodes),
            commute: spec.op.as_ref().is_none_or(|o| o.commutative()),
        };
        select::choose(spec.kind, over, &s)
    }

    fn validate(spec: &Spec, rank: u32, n: u32) -> Result<()> {
        if spec.kind.rooted() && spec.root >= n {
            return Err(Error::InvalidRank { rank: spec.root as i64, size: n });
        }
        if spec.kind.reduces() {
            match &spec.op {
                None => {
                    return Err(Error::InvalidArg(format!(
                        "{} needs a reduction operation",
                        spec.kind.name()
                    )))
                }
                Some(op) => op.check(spec.dtype)?,
            }
        }
        let (s, r) = needs::needs(spec, rank, n)?;
        for (ptr_null, len, need, what) in [
            (spec.send.is_null(), spec.send_len, s, "send"),
            (spec.recv.is_null(), spec.recv_len, r, "receive"),
        ] {
            if need > 0 && ptr_null {
                return Err(Error::InvalidArg(format!(
                    "{}: null {what} buffer with nonzero count",
                    spec.kind.name()
                )));
            }
            if len < need {
                return Err(Error::InvalidArg(format!(
                    "{}: {what} buffer of {len} bytes, {need} needed",
                    spec.kind.name()
                )));
            }
        }
        Ok(())
    }

    /// The hot path of a call: a live communicator, a cached schedule for this call shape
    /// (not a v-type collective), and buffers that meet the entry's needs. The key holds
    /// every argument [`Coll::validate`] looks at but the buffers, so nothing else needs
    /// checking. `None` sends the call through [`Coll::plan_full`], which validates, builds
    /// and reports errors. Returns small values only: a large `Result` returned through
    /// memory cost a store-forwarding stall per call.
    #[inline(always)]
    fn hit(&mut self, e: &CollPort, c: CommId, spec: &Spec, key: &Key) -> Option<(usize, usize)> {
        let (slot, i) = self.lookup(e, c, spec, key)?;
        let (s, r) = self.comms[slot].cache[i].need;
        let ok = !(s > 0 && spec.send.is_null())
            && spec.send_len >= s
            && !(r > 0 && spec.recv.is_null())
            && spec.recv_len >= r;
        ok.then_some((slot, i))
    }

    /// The cache entry (communicator slot, index) of a call shaped as `key` on `c`, whatever
    /// its buffers.
    #[inline]
    fn lookup(&mut self, e: &CollPort, c: CommId, spec: &Spec, key: &Key) -> Option<(usize, usize)> {
        if spec.kind.is_v() || e.comm(c).is_err() {
            return None;
        }
        let slot = c.to_raw() as u32 as usize;
        let pc = self.comms.get_mut(slot).filter(|p| p.id == Some(c))?;
        // The last hit, then the (short) list of this communicator.
        let i = if pc.cache.get(pc.last).is_some_and(|x| x.key == *key) {
            pc.last
        } else {
            pc.last = pc.cache.iter().position(|x| x.key == *key)?;
            pc.last
        };
        Some((slot, i))
    }

    /// Advance the sequence number of the communicator in `slot`; the tag of this run.
    #[inline(always)]
    fn next_tag(&mut self, slot: usize) -> i32 {
        let pc = &mut self.comms[slot];
        let seq = pc.seq;
        pc.seq = pc.seq.wrapping_add(1);
        FIRST_COLL_TAG + (seq % (MAX_TAG - FIRST_COLL_TAG) as u32) as i32
    }

    /// The checking header of a call.
    #[inline(always)]
    fn check_of(spec: &Spec, key: &Key) -> Check {
        Check {
            kind: spec.kind as u8,
            esize: spec.dtype.size().min(255) as u8,
            op: key.op,
            root: if spec.kind.rooted() { spec.root } else { u32::MAX },
            count: if spec.kind.is_v() { u64::MAX } else { spec.count as u64 },
        }
    }

    /// Validate a call, advance the communicator's sequence number and find (or build) the
    /// schedule, given the outcome of [`Coll::hit`] for `key`. Returns the plan, the tag of
    /// this run and its checking header.
    fn plan(
        &mut self,
        e: &CollPort,
        c: CommId,
        spec: &Spec,
        key: Key,
        hit: Option<(usize, usize)>,
    ) -> Result<(Plan, i32, Check)> {
        let plan = match hit {
            Some((slot, i)) => Plan::Cached(slot, i),
            None => self.plan_full(e, c, spec, key)?,
        };
        let tag = self.next_tag(c.to_raw() as u32 as usize);
        Ok((plan, tag, Self::check_of(spec, &key)))
    }

    /// [`Coll::plan`] without a hit: the full validation, then the cached schedule or a new
    /// one. Leaves the communicator's state in place (so [`Coll::next_tag`] finds it).
    #[inline(never)]
    fn plan_full(&mut self, e: &CollPort, c: CommId, spec: &Spec, key: Key) -> Result<Plan> {
        let v = e.comm(c)?;
        let (rank, n) = (v.rank(), v.size());
        Self::validate(spec, rank, n)?;
        let slot = c.to_raw() as u32 as usize;
        let pc = self.per_comm(c);
        if !spec.kind.is_v() && spec.count == 0 && spec.kind != Kind::Barrier {
            return Ok(Plan::Empty);
        }
        if !spec.kind.is_v() {
            if let Some(i) = pc.cache.iter().position(|x| x.key == key) {
                pc.last = i;
                return Ok(Plan::Cached(slot, i));
            }
        }
        self.plan_miss(e, c, spec, rank, n, slot, key)
    }

    /// [`Coll::plan`] without a cached schedule: build it (and cache it unless it is a v-type
    /// collective).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn plan_miss(
        &mut self,
        e: &CollPort,
        c: CommId,
        spec: &Spec,
        rank: u32,
        n: u32,
        slot: usize,
        key: Key,
    ) -> Result<Plan> {
        let (es, commute) = (spec.dtype.size(), key.commute);
        let nodes = self.nodes(e, c)?;
        let alg = self.pick(c, spec, n, &nodes);
        let ctx = BuildContext {
            rank,
            n,
            es,
            count: spec.count,
            root: spec.root,
            nodes: &nodes,
            commute,
            scounts: spec.scounts,
            sdispls: spec.sdispls,
            rcounts: spec.rcounts,
            rdispls: spec.rdispls,
        };
        let sched = build(&ctx, spec.kind, alg);
        if spec.kind.is_v() {
            return Ok(Plan::Owned(sched));
        }
        let need = needs::needs(spec, rank, n)?;
        if self.cached >= CACHE_MAX {
            for pc in &mut self.comms {
                pc.cache.clear();
            }
            self.cached = 0;
        }
        let stage_len = schedule::stage_len(&sched, self.stage_max);
        let pc = &mut self.comms[slot];
        pc.cache.push(Entry { key, need, sched: Rc::new(sched), stage_len, bufs: RunBufs::default() });
        pc.last = pc.cache.len() - 1;
        self.cached += 1;
        Ok(Plan::Cached(slot, pc.last))
    }

    /// Start a collective on `c`; returns a generic request completed when it is done (wait
    /// for it with the engine's test/wait). The run is an engine activity.
    ///
    /// # Safety
    /// `spec.send` must stay valid for reads of `spec.send_len` bytes and `spec.recv` for
    /// reads and writes of `spec.recv_len` bytes (and not be used otherwise) until the request
    /// has completed.
    pub unsafe fn start(&mut self, e: &mut CollPort, c: CommId, spec: &Spec) -> Result<ReqId> {
        let key = Key::of(spec);
        let hit = self.hit(e, c, spec, &key);
        let (plan, tag, check) = self.plan(e, c, spec, key, hit)?;
        let req = e.new_request(c)?;
        let (sched, stage_len) = match plan {
            Plan::Empty => {
                e.complete_request(req, Ok(Status::default()));
                return Ok(req);
            }
            Plan::Cached(slot, i) => {
                let x = &self.comms[slot].cache[i];
                (x.sched.clone(), x.stage_len)
            }
            Plan::Owned(s) => {
                let l = schedule::stage_len(&s, self.stage_max);
                (Rc::new(s), l)
            }
        };
        let args = OwnedArgs {
            send: spec.send,
            send_len: spec.send_len,
            recv: spec.recv,
            recv_len: spec.recv_len,
            dt: spec.dtype,
            op: spec.op.clone(),
        };
        let run = Run::new(sched, c, tag, args, check, RunBufs::default(), stage_len, self.stage_max);
        schedule::launch(e, run, req);
        Ok(req)
    }

    /// A blocking collective, executed in the caller: no activity and no generic request;
    /// the cached schedule's buffers are reused, so a small call allocates nothing.
    ///
    /// # Safety
    /// As [`Coll::start`] (the buffers need only live for the call).
    pub unsafe fn run(&mut self, e: &mut CollPort, c: CommId, spec: &Spec) -> Result<()> {
        let key = Key::of(spec);
        if let Some((slot, i)) = self.hit(e, c, spec, &key) {
            return self.run_cached(e, c, spec, &key, slot, i);
        }
        // SAFETY: as this function's.
        unsafe { self.run_full(e, c, spec, key) }
    }

    /// Run the cached plan `i` of the communicator in `slot` (a hit for `spec`).
    #[inline(always)]
    fn run_cached(
        &mut self,
        e: &mut CollPort,
        c: CommId,
        spec: &Spec,
        key: &Key,
        slot: usize,
        i: usize,
    ) -> Result<()> {
        let tag = self.next_tag(slot);
        let check = Self::check_of(spec, key);
        let stage_max = self.stage_max;
        let x = &mut self.comms[slot].cache[i];
        Run::new(&*x.sched, c, tag, spec, check, &mut x.bufs, x.stage_len, stage_max).block(e)
    }

    /// [`Coll::run`] for a call whose buffers came as bare pointers (C, MPI): `spec`'s buffer
    /// lengths are filled in here. When the same call shape ran on `c` before, they are the
    /// lengths its cached plan recorded ([`needs::needs`] of that shape), and a call whose
    /// buffers are non-null where data goes and that is not in place outside allreduce runs at
    /// once; otherwise `size` fills them in (and rejects a bad call) before the full path. So a
    /// repeated call is sized and validated once, by the lookup that finds its plan.
    ///
    /// # Safety
    /// The buffers must be valid for the lengths `size` (or the cached plan) gives them, as for
    /// [`Coll::run`].
    #[inline(never)]
    pub unsafe fn run_bare(
        &mut self,
        e: &mut CollPort,
        c: CommId,
        spec: &mut Spec,
        size: impl FnOnce(&mut Spec) -> Result<()>,
    ) -> Result<()> {
        let key = Key::of(spec);
        if let Some((slot, i)) = self.lookup(e, c, spec, &key) {
            let (s, r) = self.comms[slot].cache[i].need;
            let aliased =
                s > 0 && r > 0 && std::ptr::eq(spec.send, spec.recv) && spec.kind != Kind::Allreduce;
            let null = (s > 0 && spec.send.is_null()) || (r > 0 && spec.recv.is_null());
            if !null && !aliased {
                (spec.send_len, spec.recv_len) = (s, r);
                return self.run_cached(e, c, spec, &key, slot, i);
            }
        }
        size(spec)?;
        // SAFETY: as this function's.
        unsafe { self.run_full(e, c, spec, key) }
    }

    /// [`Coll::run`] without a hit.
    ///
    /// # Safety
    /// As [`Coll::run`].
    #[inline(never)]
    unsafe fn run_full(&mut self, e: &mut CollPort, c: CommId, spec: &Spec, key: Key) -> Result<()> {
        let (plan, tag, check) = self.plan(e, c, spec, key, None)?;
        let stage_max = self.stage_max;
        match plan {
            Plan::Empty => Ok(()),
            Plan::Cached(slot, i) => {
                let x = &mut self.comms[slot].cache[i];
                Run::new(&*x.sched, c, tag, spec, check, &mut x.bufs, x.stage_len, stage_max).block(e)
            }
            Plan::Owned(s) => {
                let l = schedule::stage_len(&s, stage_max);
                Run::new(&s, c, tag, spec, check, RunBufs::default(), l, stage_max).block(e)
            }
        }
    }

    /// The schedule a rank would run (for tests and diagnostics).
    #[allow(clippy::too_many_arguments)]
    pub fn schedule_for(
        &self,
        kind: Kind,
        alg: Alg,
        rank: u32,
        n: u32,
        count: usize,
        es: usize,
        nodes: &[u32],
    ) -> Schedule {
        let ctx = BuildContext {
            rank,
            n,
            es,
            count,
            root: 0,
            nodes,
            commute: true,
            scounts: &[],
            sdispls: &[],
            rcounts: &[],
            rdispls: &[],
        };
        build(&ctx, kind, alg)
    }
}

fn build(c: &BuildContext, kind: Kind, alg: Alg) -> Schedule {
    match kind {
        Kind::Barrier => barrier::build(c, alg),
        Kind::Bcast => bcast::build(c, alg),
        Kind::Reduce => reduce::build(c, alg),
        Kind::Allreduce => allreduce::build(c, alg),
        Kind::Gather => gather::build(c, alg),
        Kind::Gatherv => gather::build_v(c),
        Kind::Scatter => scatter::build(c, alg),
        Kind::Scatterv => scatter::build_v(c),
        Kind::Allgather => allgather::build(c, alg),
        Kind::Allgatherv => allgather::build_v(c),
        Kind::Alltoall => alltoall::build(c, alg),
        Kind::Alltoallv => alltoall::build_v(c, alg),
        Kind::ReduceScatterBlock => reduce_scatter::build(c, alg, &vec![c.count; c.n as usize]),
        Kind::ReduceScatter => reduce_scatter::build(c, alg, &c.rcounts[..c.n as usize]),
        Kind::Scan => scan::build(c, alg, false),
        Kind::Exscan => scan::build(c, alg, true),
    }
}
