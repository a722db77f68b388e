//! The safe Rust API: [`Weft`] (one per process), [`Comm`] handles, and scoped non-blocking
//! [`Request`]s.
//!
//! Non-blocking operations borrow their buffers for the lifetime of a [`Scope`]; the scope
//! does not end before every request started in it has completed (like `std::thread::scope`),
//! so a forgotten or leaked request can never leave the engine writing into freed memory.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use weft_engine::{CommId, Engine, ReqId};

use crate::init::SharedRuntime;
use crate::{Config, EngineError, Error, Status};

use crate::Result;

/// Set while a `Weft` exists in this process (the runtime backends are process-global).
static INITIALIZED: AtomicBool = AtomicBool::new(false);

pub(crate) struct Inner {
    pub(crate) engine: RefCell<Engine>,
    rt: SharedRuntime,
    cfg: Config,
    finalized: Cell<bool>,
    pub(crate) ft: weft_ft::Ft,
    pub(crate) coll: RefCell<weft_coll::Coll>, // collectives state (src/coll.rs)
}

/// An initialised weft instance: the progress engine, its transports and the runtime.
///
/// Not `Send`: one thread drives the engine.
pub struct Weft {
    pub(crate) inner: Rc<Inner>,
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
    if INITIALIZED.swap(true, Ordering::AcqRel) {
        return Err(Error::AlreadyInitialized);
    }
    let res = (|| {
        let rt: SharedRuntime = Rc::new(RefCell::new(weft_pmix::from_env()?));
        let mut engine = crate::init::wire(&cfg, rt.clone())?;
        let ft = crate::ft::install(&cfg, &rt, &mut engine)?;
        let coll = RefCell::new(crate::coll::state(&cfg, &**rt.borrow())); // node map → coll
        Ok(Weft {
            inner: Rc::new(Inner {
                engine: RefCell::new(engine),
                rt,
                cfg,
                finalized: Cell::new(false),
                ft,
                coll,
            }),
        })
    })();
    if res.is_err() {
        INITIALIZED.store(false, Ordering::Release);
    }
    res
}

impl Weft {
    /// The communicator of every process of the job.
    pub fn world(&self) -> Comm {
        let id = self.inner.engine.borrow().world();
        Comm { inner: self.inner.clone(), id }
    }

    /// Run `f` with the engine (for the C ABI, which manages raw request handles itself).
    pub(crate) fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        f(&mut self.inner.engine.borrow_mut())
    }

    /// A handle for an engine communicator id (validity is checked on each use).
    pub(crate) fn comm_from_id(&self, id: CommId) -> Comm {
        Comm { inner: self.inner.clone(), id }
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// Name of the runtime backend ("weft-run", "pmix", "singleton").
    pub fn runtime_backend(&self) -> &'static str {
        self.inner.rt.borrow().backend()
    }

    /// Run the progress engine once; returns how many events it handled.
    pub fn progress(&self) -> usize {
        self.inner.engine.borrow_mut().progress()
    }

    /// Engine counters.
    pub fn stats(&self) -> weft_engine::Stats {
        self.inner.engine.borrow().stats().clone()
    }

    /// Messages handed to each transport so far, by transport name ("shm", "ofi").
    pub fn messages_by_transport(&self) -> Vec<(&'static str, u64)> {
        let e = self.inner.engine.borrow();
        e.transport_names().into_iter().zip(e.stats().sent_by_transport.iter().copied()).collect()
    }

    /// A human-readable dump of the engine's queues and pending requests, for diagnosing
    /// a hang (what each rank is waiting for).
    pub fn debug_state(&self) -> String {
        self.inner.engine.borrow_mut().debug_state()
    }

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> Vec<u32> {
        self.inner.engine.borrow().failed_world_ranks().to_vec()
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
            inner: &self.inner,
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
        self.finalize_inner()
    }

    fn finalize_inner(&self) -> Result<()> {
        if self.inner.finalized.replace(true) {
            return Ok(());
        }
        self.inner.engine.borrow_mut().finalize();
        let r = self.inner.rt.borrow_mut().finalize().map_err(Error::from);
        INITIALIZED.store(false, Ordering::Release);
        r
    }

    /// End the whole job with `code`.
    pub fn abort(&self, code: i32, msg: &str) -> ! {
        self.inner.rt.borrow_mut().abort(code, msg)
    }
}

impl Drop for Weft {
    fn drop(&mut self) {
        let _ = self.finalize_inner();
    }
}

/// A communicator handle. Cheap to clone; all clones name the same communicator.
#[derive(Clone)]
pub struct Comm {
    pub(crate) inner: Rc<Inner>,
    pub(crate) id: CommId,
}

impl Comm {
    fn eng(&self) -> std::cell::RefMut<'_, Engine> {
        self.inner.engine.borrow_mut()
    }

    /// The engine handle (for the C ABI and diagnostics).
    pub fn id(&self) -> CommId {
        self.id
    }

    /// This process's rank (0 if the communicator was freed).
    pub fn rank(&self) -> u32 {
        self.inner.engine.borrow().comm_rank(self.id).unwrap_or(0)
    }

    /// Number of ranks (0 if the communicator was freed).
    pub fn size(&self) -> u32 {
        self.inner.engine.borrow().comm_size(self.id).unwrap_or(0)
    }

    /// Name of the transport used to reach `rank` ("self", "shm", ...).
    pub fn transport_to(&self, rank: u32) -> Result<&'static str> {
        let e = self.inner.engine.borrow();
        let w = e.comm_world_rank(self.id, rank)?;
        Ok(e.route_name(w))
    }

    /// Blocking send of `buf` to `dst` with `tag` (0..=`MAX_TAG`).
    pub fn send(&self, buf: &[u8], dst: u32, tag: i32) -> Result<()> {
        Ok(self.eng().send(self.id, buf, dst, tag)?)
    }

    /// Blocking receive from `src` (or [`crate::ANY_SOURCE`]) with `tag` (or
    /// [`crate::ANY_TAG`]). A message longer than `buf` completes with `Truncated`.
    pub fn recv(&self, buf: &mut [u8], src: i32, tag: i32) -> Result<Status> {
        Ok(self.eng().recv(self.id, buf, src, tag)?)
    }

    pub(crate) fn same_instance(&self, s: &Scope<'_, '_>) -> Result<()> {
        if std::ptr::eq(Rc::as_ptr(&self.inner), s.inner as *const Inner) {
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
        let id = unsafe { self.eng().isend(self.id, buf.as_ptr(), buf.len(), dst, tag)? };
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
        let id = unsafe { self.eng().irecv(self.id, buf.as_mut_ptr(), buf.len(), src, tag)? };
        Ok(s.register(id))
    }

    /// Wait until a message matching `(src, tag)` has arrived; returns its status.
    pub fn probe(&self, src: i32, tag: i32) -> Result<Status> {
        Ok(self.eng().probe(self.id, src, tag)?)
    }

    /// The status of a matching message if one has arrived.
    pub fn iprobe(&self, src: i32, tag: i32) -> Result<Option<Status>> {
        Ok(self.eng().iprobe(self.id, src, tag)?)
    }

    /// Block until every member has entered the barrier.
    pub fn barrier(&self) -> Result<()> {
        // The collectives engine's barrier: on an error it sends an abort along the schedule,
        // so a rank whose partners are alive does not wait for one that bailed out (the
        // engine's internal barrier, used for communicator creation, does not).
        let r = self.coll_barrier().map_err(|e| match e {
            Error::Engine(x) => x,
            other => EngineError::InvalidArg(other.to_string()),
        });
        crate::ft::uniform_after(self, r) // FT hook: uniform mode (src/ft.rs)
    }

    /// Duplicate the communicator (collective).
    pub fn dup(&self) -> Result<Comm> {
        let id = self.eng().comm_dup(self.id)?;
        Ok(Comm { inner: self.inner.clone(), id })
    }

    /// Split by `color` (or [`crate::UNDEFINED`]), ordering by `key` (collective).
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        let id = self.eng().comm_split(self.id, color, key)?;
        Ok(id.map(|id| Comm { inner: self.inner.clone(), id }))
    }

    /// Free the communicator. Other clones of this handle become invalid.
    pub fn free(self) -> Result<()> {
        Ok(self.eng().comm_free(self.id)?)
    }

    /// Ranks of this communicator known to have failed.
    pub fn get_failed(&self) -> Result<Vec<u32>> {
        Ok(self.eng().get_failed(self.id)?)
    }

    /// Acknowledge the failures known now, so wildcard receives proceed; returns how many
    /// failed ranks are acknowledged.
    pub fn ack_failed(&self) -> Result<usize> {
        Ok(self.eng().ack_failed(self.id)?)
    }
}

/// A scope for non-blocking operations; see [`Weft::scope`].
pub struct Scope<'scope, 'env: 'scope> {
    inner: &'env Inner,
    live: RefCell<Vec<ReqId>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> Scope<'scope, '_> {
    pub(crate) fn register(&'scope self, id: ReqId) -> Request<'scope> {
        let mut live = self.live.borrow_mut();
        if live.len() >= 1024 && live.len().is_power_of_two() {
            let e = self.inner.engine.borrow();
            live.retain(|&r| e.is_pending(r));
        }
        live.push(id);
        Request { id, inner: self.inner }
    }
}

struct ScopeGuard<'a, 'scope, 'env>(&'a Scope<'scope, 'env>);

impl Drop for ScopeGuard<'_, '_, '_> {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut *self.0.live.borrow_mut());
        let mut e = self.0.inner.engine.borrow_mut();
        for id in ids {
            while e.is_pending(id) {
                match e.wait(id) {
                    Err(EngineError::ProcFailedPending) => {
                        // A wildcard receive that cannot complete: withdraw it so its buffer
                        // is released.
                        let _ = e.cancel(id);
                    }
                    _ => break,
                }
            }
        }
    }
}

/// A pending non-blocking operation.
pub struct Request<'scope> {
    id: ReqId,
    inner: &'scope Inner,
}

impl Request<'_> {
    /// Wait for completion.
    pub fn wait(self) -> Result<Status> {
        Ok(self.inner.engine.borrow_mut().wait(self.id)?)
    }

    /// `Some(status)` once complete, `None` while pending.
    pub fn test(&mut self) -> Result<Option<Status>> {
        Ok(self.inner.engine.borrow_mut().test(self.id)?)
    }

    /// Withdraw a receive that has not matched (or a send not yet handed to a transport).
    /// Returns true if it was cancelled.
    pub fn cancel(&mut self) -> Result<bool> {
        Ok(self.inner.engine.borrow_mut().cancel(self.id)?)
    }
}

fn engine_of<'a>(reqs: &[Request<'a>]) -> Option<&'a Inner> {
    reqs.first().map(|r| r.inner)
}

/// Wait for every request; on error, all have still completed and the first error is
/// returned.
pub fn wait_all(reqs: &mut [Request<'_>]) -> Result<Vec<Status>> {
    let Some(inner) = engine_of(reqs) else {
        return Ok(Vec::new());
    };
    let ids: Vec<ReqId> = reqs.iter().map(|r| r.id).collect();
    Ok(inner.engine.borrow_mut().wait_all(&ids)?)
}

/// Wait until one request completes; returns its index and status.
pub fn wait_any(reqs: &mut [Request<'_>]) -> Result<(usize, Status)> {
    let Some(inner) = engine_of(reqs) else {
        return Err(EngineError::InvalidArg("wait_any on an empty request list".into()).into());
    };
    let ids: Vec<ReqId> = reqs.iter().map(|r| r.id).collect();
    Ok(inner.engine.borrow_mut().wait_any(&ids)?)
}

/// If every request is complete, their statuses; otherwise `None`.
pub fn test_all(reqs: &mut [Request<'_>]) -> Result<Option<Vec<Status>>> {
    let Some(inner) = engine_of(reqs) else {
        return Ok(Some(Vec::new()));
    };
    let ids: Vec<ReqId> = reqs.iter().map(|r| r.id).collect();
    Ok(inner.engine.borrow_mut().test_all(&ids)?)
}
