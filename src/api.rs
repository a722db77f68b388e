//! The safe Rust API: [`Weft`] (one per process), [`Comm`] handles, and scoped non-blocking
//! [`Request`]s.
//!
//! Non-blocking operations borrow their buffers for the lifetime of a [`Scope`]; the scope
//! does not end before every request started in it has completed (like `std::thread::scope`),
//! so a forgotten or leaked request can never leave the engine writing into freed memory.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use weft_engine::{CommId, ReqId};

use crate::ops::OpsCore;
use crate::{Config, EngineError, Error, Status};

use crate::Result;

/// Set while a `Weft` exists in this process (the runtime backends are process-global).
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// An initialised weft instance: the progress engine, its transports and the runtime.
///
/// Not `Send`: one thread drives the engine.
pub struct Weft {
    core: Rc<OpsCore>,
    /// Global restart: the epoch this instance belongs to.
    epoch: Option<u64>,
    /// This handle finalizes the instance on drop (false for [`Weft::handle`]).
    owner: bool,
}

/// Initialise weft from the environment: reads `WEFT_*` settings, bootstraps through
/// `weft-run`, a PMIx server or as a singleton, and connects the transports.
///
/// ```no_run
/// let w = weft::init()?;
/// let world = w.world();
/// if world.rank() == 0 {
///     world.send(b"hello", 1, 7)?;
/// } else if world.rank() == 1 {
///     let mut buf = [0u8; 5];
///     let st = world.recv(&mut buf, weft::ANY_SOURCE, 7)?;
///     assert_eq!((st.source, st.count), (0, 5));
/// }
/// w.finalize()?;
/// # Ok::<(), weft::Error>(())
/// ```
pub fn init() -> Result<Weft> {
    let cfg = Config::from_env()?;
    init_with(cfg)
}

/// Initialise weft with an explicit configuration (the environment's `WEFT_*` keys are not
/// read).
pub fn init_with(cfg: Config) -> Result<Weft> {
    start(|| OpsCore::new(cfg), None)
}

/// True while a `Weft` exists in this process.
pub(crate) fn initialized() -> bool {
    INITIALIZED.load(Ordering::Acquire)
}

/// Build the instance with `core` unless one exists already.
fn start(core: impl FnOnce() -> Result<OpsCore>, epoch: Option<u64>) -> Result<Weft> {
    if INITIALIZED.swap(true, Ordering::AcqRel) {
        return Err(Error::AlreadyInitialized);
    }
    let res = core().map(|core| Weft { core: Rc::new(core), epoch, owner: true });
    if res.is_err() {
        INITIALIZED.store(false, Ordering::Release);
    }
    res
}

/// The instance of one global-restart epoch, bootstrapped through `rt`.
pub(crate) fn init_epoch(cfg: Config, rt: Box<dyn weft_pmix::Runtime>, epoch: u64) -> Result<Weft> {
    start(|| OpsCore::with_runtime(cfg, rt), Some(epoch))
}

impl Weft {
    /// The communicator of every process of the job.
    pub fn world(&self) -> Comm {
        Comm { core: self.core.clone(), id: self.core.world() }
    }

    /// The operations core of this instance (what the C ABI calls).
    pub(crate) fn core(&self) -> &OpsCore {
        &self.core
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        self.core.config()
    }

    /// The node this process runs on (the runtime's dense node id; a virtual node under
    /// `weft-run --nodes`).
    pub fn node_id(&self) -> u32 {
        self.core.node_id()
    }

    /// Global restart: the epoch of this instance (0 first, one more per rollback); `None`
    /// for an instance of [`init`].
    pub fn epoch(&self) -> Option<u64> {
        self.epoch
    }

    /// False for a [`Weft::handle`] (the instance is finalized by its owner).
    pub(crate) fn owns(&self) -> bool {
        self.owner
    }

    /// A second handle on this instance that does not finalize it on drop (the C ABI's
    /// thread state during a global-restart epoch).
    pub(crate) fn handle(&self) -> Weft {
        Weft { core: self.core.clone(), epoch: self.epoch, owner: false }
    }

    /// Global restart: leave this epoch's instance without flushing or telling the runtime.
    pub(crate) fn abandon(self) {
        self.core.abandon();
    }

    /// Name of the runtime backend ("weft-run", "pmix", "pmi2", "singleton").
    pub fn runtime_backend(&self) -> &'static str {
        self.core.runtime_backend()
    }

    /// Run the progress engine once; returns how many events it handled.
    pub fn progress(&self) -> usize {
        self.core.progress()
    }

    /// Engine counters.
    pub fn stats(&self) -> weft_engine::Stats {
        self.core.stats()
    }

    /// Messages handed to each transport so far, by transport name ("shm", "ofi").
    pub fn messages_by_transport(&self) -> Vec<(&'static str, u64)> {
        self.core.messages_by_transport()
    }

    /// How many failed ranks this process learned of first from each source (one count per
    /// failed rank): each transport by name (in-band), "runtime" (PMIx termination and
    /// node-down events), "upper" (the FT layer's detector and findings).
    pub fn failures_by_source(&self) -> Vec<(&'static str, u64)> {
        self.core.failures_by_source()
    }

    /// A human-readable dump of the engine's queues and pending requests, for diagnosing
    /// a hang (what each rank is waiting for).
    pub fn debug_state(&self) -> String {
        self.core.debug_state()
    }

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> Vec<u32> {
        self.core.failed_world_ranks()
    }

    /// Run `f` with a scope for non-blocking operations; every request started in the scope
    /// is completed before `scope` returns.
    ///
    /// ```no_run
    /// let w = weft::init()?;
    /// let world = w.world();
    /// let (me, n) = (world.rank(), world.size());
    /// let sbuf = [me as u8; 4];
    /// let mut rbuf = [0u8; 4];
    /// w.scope(|s| {
    ///     let r = world.irecv(s, &mut rbuf, ((me + n - 1) % n) as i32, 0)?;
    ///     let q = world.isend(s, &sbuf, (me + 1) % n, 0)?;
    ///     weft::wait_all(&mut [r, q])
    /// })?;
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn scope<'env, F, T>(&'env self, f: F) -> T
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
    {
        let scope = Scope {
            core: &self.core,
            live: RefCell::new(Vec::new()),
            _scope: PhantomData,
            _env: PhantomData,
        };
        let guard = ScopeGuard(&scope);
        let out = f(&scope);
        drop(guard);
        out
    }

    /// Leave the job: complete queued sends, then tell the runtime. Further use of
    /// communicators of this instance is an error.
    pub fn finalize(self) -> Result<()> {
        if !self.owner {
            return Err(Error::Reinit(
                "weft_finalize inside the resilient main: global restart finalizes".into(),
            ));
        }
        self.finalize_inner()
    }

    fn finalize_inner(&self) -> Result<()> {
        let r = self.core.finalize();
        INITIALIZED.store(false, Ordering::Release);
        r
    }

    /// End the whole job with `code`.
    pub fn abort(&self, code: i32, msg: &str) -> ! {
        self.core.abort(code, msg)
    }
}

impl Drop for Weft {
    fn drop(&mut self) {
        if self.owner {
            let _ = self.finalize_inner();
        }
    }
}

/// A communicator handle. Cheap to clone; all clones name the same communicator.
#[derive(Clone)]
pub struct Comm {
    pub(crate) core: Rc<OpsCore>,
    pub(crate) id: CommId,
}

impl Comm {
    /// A handle on communicator `id` of the same instance.
    pub(crate) fn with_id(&self, id: CommId) -> Comm {
        Comm { core: self.core.clone(), id }
    }

    /// The engine handle (for the C ABI and diagnostics).
    pub fn id(&self) -> CommId {
        self.id
    }

    /// This process's rank (0 if the communicator was freed).
    pub fn rank(&self) -> u32 {
        self.core.comm_rank(self.id).unwrap_or(0)
    }

    /// Number of ranks (0 if the communicator was freed).
    pub fn size(&self) -> u32 {
        self.core.comm_size(self.id).unwrap_or(0)
    }

    /// Name of the transport used to reach `rank` ("self", "shm", ...).
    pub fn transport_to(&self, rank: u32) -> Result<&'static str> {
        Ok(self.core.transport_to(self.id, rank)?)
    }

    /// Blocking send of `buf` to `dst` with `tag` (0..=`MAX_TAG`).
    #[inline]
    pub fn send(&self, buf: &[u8], dst: u32, tag: i32) -> Result<()> {
        Ok(self.core.send(self.id, buf, dst, tag)?)
    }

    /// Blocking receive from `src` (or [`crate::ANY_SOURCE`]) with `tag` (or
    /// [`crate::ANY_TAG`]). A message longer than `buf` completes with `Truncated`.
    #[inline]
    pub fn recv(&self, buf: &mut [u8], src: i32, tag: i32) -> Result<Status> {
        let st = self.core.recv(self.id, buf, src, tag)?;
        // Field by field: the engine writes the status as two 8-byte stores, and a copy of
        // the whole 16-byte status is one vector load that spans both and cannot be
        // forwarded from them (a store-forwarding stall on every blocking receive).
        Ok(Status { source: st.source, tag: st.tag, count: st.count })
    }

    pub(crate) fn same_instance(&self, s: &Scope<'_, '_>) -> Result<()> {
        if std::ptr::eq(Rc::as_ptr(&self.core), s.core as *const OpsCore) {
            Ok(())
        } else {
            Err(EngineError::InvalidArg("scope belongs to another weft instance".into()).into())
        }
    }

    /// Start a send of `buf`; it stays borrowed until the scope ends.
    pub fn isend<'scope>(
        &self,
        s: &'scope Scope<'scope, '_>,
        buf: &'scope [u8],
        dst: u32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        self.same_instance(s)?;
        // SAFETY: `buf` is borrowed for 'scope and the scope completes (or cancels) every
        // request it registered before 'scope ends, so the engine never reads it afterwards.
        let id = unsafe { self.core.isend(self.id, buf.as_ptr(), buf.len(), dst, tag)? };
        Ok(s.register(id))
    }

    /// Post a receive into `buf`; it stays borrowed until the scope ends.
    pub fn irecv<'scope>(
        &self,
        s: &'scope Scope<'scope, '_>,
        buf: &'scope mut [u8],
        src: i32,
        tag: i32,
    ) -> Result<Request<'scope>> {
        self.same_instance(s)?;
        // SAFETY: `buf` is borrowed mutably for 'scope; the scope completes or cancels the
        // request before 'scope ends, so the engine never writes it afterwards.
        let id = unsafe { self.core.irecv(self.id, buf.as_mut_ptr(), buf.len(), src, tag)? };
        Ok(s.register(id))
    }

    /// Post `n` receives that all write into the same `buf`, as an MPI program may (OSU's
    /// bandwidth benchmarks receive a whole window into one buffer by default). Once all have
    /// completed, `buf` holds one of the messages, which one is unspecified; each request's
    /// status describes its own message. `buf` stays borrowed until the scope ends. If a post
    /// fails, the receives posted before it stay in the scope and the error is returned.
    pub fn irecv_same<'scope>(
        &self,
        s: &'scope Scope<'scope, '_>,
        buf: &'scope mut [u8],
        n: usize,
        src: i32,
        tag: i32,
    ) -> Result<Vec<Request<'scope>>> {
        self.same_instance(s)?;
        let mut reqs = Vec::with_capacity(n);
        for _ in 0..n {
            // SAFETY: `buf` is borrowed mutably for 'scope, so nothing else reads or writes it
            // until the scope has completed or cancelled every request registered in it; the
            // requests' writes into it only overlap each other (any byte value is a valid u8).
            let id = unsafe { self.core.irecv(self.id, buf.as_mut_ptr(), buf.len(), src, tag)? };
            reqs.push(s.register(id));
        }
        Ok(reqs)
    }

    /// Wait until a message matching `(src, tag)` has arrived; returns its status.
    pub fn probe(&self, src: i32, tag: i32) -> Result<Status> {
        Ok(self.core.probe(self.id, src, tag)?)
    }

    /// The status of a matching message if one has arrived.
    pub fn iprobe(&self, src: i32, tag: i32) -> Result<Option<Status>> {
        Ok(self.core.iprobe(self.id, src, tag)?)
    }

    /// Block until every member has entered the barrier. On an error the barrier tells the
    /// ranks still waiting for this one, so they do not wait for it; in uniform mode
    /// ([`Comm::set_uniform`]) every member returns the same outcome.
    pub fn barrier(&self) -> Result<()> {
        Ok(self.core.barrier(self.id)?)
    }

    /// Duplicate the communicator (collective).
    pub fn dup(&self) -> Result<Comm> {
        Ok(self.with_id(self.core.comm_dup(self.id)?))
    }

    /// Split by `color` (or [`crate::UNDEFINED`]), ordering by `key` (collective).
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        Ok(self.core.comm_split(self.id, color, key)?.map(|id| self.with_id(id)))
    }

    /// Free the communicator. Other clones of this handle become invalid.
    pub fn free(self) -> Result<()> {
        Ok(self.core.comm_free(self.id)?)
    }

    /// Ranks of this communicator known to have failed.
    pub fn get_failed(&self) -> Result<Vec<u32>> {
        Ok(self.core.get_failed(self.id)?)
    }

    /// Acknowledge the failures known now, so wildcard receives proceed; returns how many
    /// failed ranks are acknowledged.
    pub fn ack_failed(&self) -> Result<usize> {
        Ok(self.core.ack_failed(self.id)?)
    }
}

/// A scope for non-blocking operations; see [`Weft::scope`].
pub struct Scope<'scope, 'env: 'scope> {
    core: &'env OpsCore,
    live: RefCell<Vec<ReqId>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> Scope<'scope, '_> {
    pub(crate) fn register(&'scope self, id: ReqId) -> Request<'scope> {
        let mut live = self.live.borrow_mut();
        if live.len() >= 1024 && live.len().is_power_of_two() {
            self.core.retain_pending(&mut live);
        }
        live.push(id);
        Request { id, core: self.core }
    }
}

struct ScopeGuard<'a, 'scope, 'env>(&'a Scope<'scope, 'env>);

impl Drop for ScopeGuard<'_, '_, '_> {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut *self.0.live.borrow_mut());
        self.0.core.complete_all(&ids);
    }
}

/// A pending non-blocking operation.
pub struct Request<'scope> {
    id: ReqId,
    core: &'scope OpsCore,
}

impl Request<'_> {
    /// Wait for completion.
    pub fn wait(self) -> Result<Status> {
        Ok(self.core.wait(self.id)?)
    }

    /// `Some(status)` once complete, `None` while pending.
    pub fn test(&mut self) -> Result<Option<Status>> {
        Ok(self.core.test(self.id)?)
    }

    /// Withdraw a receive that has not matched (or a send not yet handed to a transport).
    /// Returns true if it was cancelled.
    pub fn cancel(&mut self) -> Result<bool> {
        Ok(self.core.cancel(self.id)?)
    }
}

/// The instance of a list of requests and their ids (`None` for an empty list).
fn ids_of<'a>(reqs: &[Request<'a>]) -> Option<(&'a OpsCore, Vec<ReqId>)> {
    let core = reqs.first()?.core;
    Some((core, reqs.iter().map(|r| r.id).collect()))
}

/// Wait for every request; on error, all have still completed and the first error is
/// returned.
pub fn wait_all(reqs: &mut [Request<'_>]) -> Result<Vec<Status>> {
    let Some((core, ids)) = ids_of(reqs) else {
        return Ok(Vec::new());
    };
    Ok(core.wait_all(&ids)?)
}

/// Wait until one request completes; returns its index and status.
pub fn wait_any(reqs: &mut [Request<'_>]) -> Result<(usize, Status)> {
    let Some((core, ids)) = ids_of(reqs) else {
        return Err(EngineError::InvalidArg("wait_any on an empty request list".into()).into());
    };
    Ok(core.wait_any(&ids)?)
}

/// If every request is complete, their statuses; otherwise `None`.
pub fn test_all(reqs: &mut [Request<'_>]) -> Result<Option<Vec<Status>>> {
    let Some((core, ids)) = ids_of(reqs) else {
        return Ok(Some(Vec::new()));
    };
    Ok(core.test_all(&ids)?)
}
