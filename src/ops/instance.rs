//! One weft instance ([`OpsCore`]): its state (engine, runtime, configuration, FT,
//! collectives, the union communicator with the parents), its start, which wires the
//! transports, FT, collectives and parents together, its end (finalize, abandon, abort) and
//! the engine borrow every operation takes (the blocking send and receive, the hot path,
//! write the same borrow inline in `p2p.rs`).

use std::cell::{Cell, RefCell, RefMut};

use weft_engine::{Engine, Setup};

use super::{coll, ft, reentrant, spawn, EngineResult, Spawned};
use crate::init::SharedRuntime;
use crate::{Config, Error, Result};

/// One weft instance: runtime, engine, collectives and FT state.
pub struct OpsCore {
    pub(super) engine: RefCell<Engine>,
    pub(super) rt: SharedRuntime,
    pub(super) cfg: Config,
    pub(super) finalized: Cell<bool>,
    pub(super) ft: weft_ft::Ft,
    /// The DGRP diagnosis: nothing is installed on the engine until it starts.
    pub(super) dgrp: weft_ft::DgrpGlue,
    pub(super) coll: RefCell<weft_coll::Coll>,
    /// The union communicator with the parents, for a spawned process.
    pub(super) parent: Option<Spawned>,
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

    /// The engine, borrowed for one operation (a re-entrant call fails; `OpsCore::send` and
    /// `OpsCore::recv` borrow it the same way inline).
    #[inline]
    pub(super) fn eng(&self) -> EngineResult<RefMut<'_, Engine>> {
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
