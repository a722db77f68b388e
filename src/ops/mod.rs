//! The operations core: the one place that wires runtime, engine, collectives and fault
//! tolerance together. Every front end (the safe Rust API in `api.rs`, `coll.rs` and `ft.rs`,
//! and the C ABI in `capi/`) calls these operations and nothing below them.
//!
//! Operations work on communicator and request ids ([`CommId`], [`ReqId`]) and on raw buffers
//! or a collective [`weft_coll::Spec`]; a front end keeps only its language's rules (Rust
//! borrows and scopes, C pointers and error codes). What an operation does (which barrier
//! runs, the uniform-mode hook, the blocking agreement path, how buffer sizes follow from
//! counts) is decided here once, so the front ends cannot drift apart.
//!
//! [`OpsCore`] is one weft instance. It is not `Send`: one thread drives the engine. The engine
//! and the collectives state sit in `RefCell`s that an operation borrows for its own duration;
//! a re-entrant call (a user reduction calling weft) finds them borrowed and fails with
//! `InvalidArg` instead of aliasing them.

use std::cell::{Cell, RefCell, RefMut};

pub use weft_engine::{CommId, Message, ReqId, Stats};
use weft_engine::{Engine, Setup};

use crate::EngineError;

use crate::init::SharedRuntime;
use crate::{Config, Error, Result};

mod coll;
mod comm;
mod comm_idup;
mod dgrp;
mod ft;
mod p2p;
mod spawn;

pub use comm_idup::{PendingDup, WINDOW as IDUP_CTX_WINDOW};
pub use spawn::Spawned;
pub use weft_pmix::universe::SpawnRequest;

/// Result of an engine-level operation: the error keeps its engine variant (a status needs
/// the truncation details, the C ABI maps each variant to its code).
pub type EngineResult<T> = std::result::Result<T, EngineError>;

/// One weft instance: runtime, engine, collectives and FT state.
pub struct OpsCore {
    engine: RefCell<Engine>,
    rt: SharedRuntime,
    cfg: Config,
    finalized: Cell<bool>,
    ft: weft_ft::Ft,
    /// The DGRP diagnosis: nothing is installed on the engine until it starts.
    dgrp: weft_ft::DgrpGlue,
    coll: RefCell<weft_coll::Coll>,
    /// The union communicator with the parents, for a spawned process.
    parent: Option<Spawned>,
}

impl OpsCore {
    /// Start the runtime, wire the transports into an engine, install FT and the collectives.
    pub fn new(cfg: Config) -> Result<OpsCore> {
        OpsCore::with_runtime(cfg, weft_pmix::from_env()?)
    }

    /// As [`OpsCore::new`] on a runtime that is already started (global restart bootstraps
    /// each epoch through its own).
    pub fn with_runtime(cfg: Config, rt: Box<dyn weft_pmix::Runtime>) -> Result<OpsCore> {
        let rt: SharedRuntime = std::rc::Rc::new(RefCell::new(rt));
        let mut engine = crate::init::wire(&cfg, rt.clone())?;
        let spawned = rt.borrow().universe_base() > 0;
        // The heartbeat detector watches a ring of the first job's ranks: a spawned job's
        // processes are watched through their transports' pidfds and the runtime's events.
        let ft_cfg =
            Config { ft_hb_period_ms: if spawned { None } else { cfg.ft_hb_period_ms }, ..cfg.clone() };
        let ft = ft::install(&ft_cfg, &rt, &mut engine)?;
        let coll = coll::state(&cfg, &**rt.borrow());
        let parent = spawn::join_parents(&cfg, &rt, &mut engine)?;
        Ok(OpsCore {
            engine: RefCell::new(engine),
            rt,
            cfg,
            finalized: Cell::new(false),
            ft,
            dgrp: weft_ft::DgrpGlue::new(),
            coll: RefCell::new(coll),
            parent,
        })
    }

    /// The engine, borrowed for one operation.
    #[inline]
    fn eng(&self) -> EngineResult<RefMut<'_, Engine>> {
        self.engine.try_borrow_mut().map_err(|_| reentrant())
    }

    /// True while an operation holds the engine (a call from inside a weft callback would
    /// fail with `InvalidArg`).
    pub fn engine_busy(&self) -> bool {
        self.engine.try_borrow_mut().is_err()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Name of the runtime backend ("weft-run", "pmix", "pmi2", "singleton").
    pub fn runtime_backend(&self) -> &'static str {
        self.rt.borrow().backend()
    }

    /// Leave the job: complete queued sends, then tell the runtime. Later calls do nothing.
    pub fn finalize(&self) -> Result<()> {
        if self.finalized.get() {
            return Ok(());
        }
        let mut e = self.eng()?;
        self.finalized.set(true);
        // The diagnosis ends with the engine: nothing tests or answers past this point.
        let _ = self.dgrp.stop();
        Setup::of(&mut e).finalize();
        drop(e);
        self.rt.borrow_mut().finalize().map_err(Error::from)
    }

    /// Global restart: this instance's epoch is over. Nothing is flushed and the runtime is
    /// not told (the next epoch's instance takes over); later operations fail, and dropping
    /// the instance releases its transports.
    pub fn abandon(&self) {
        self.finalized.set(true);
    }

    /// End the whole job with `code`.
    pub fn abort(&self, code: i32, msg: &str) -> ! {
        self.rt.borrow_mut().abort(code, msg)
    }
}

fn reentrant() -> EngineError {
    EngineError::InvalidArg("weft called re-entrantly (from inside a weft callback)".into())
}
