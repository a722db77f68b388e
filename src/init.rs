//! `init`: wire runtime, transports and engine together.
//!
//! Order: read `Config` → start the runtime (weft-run, PMIx or singleton) → create the
//! shared-memory segment and publish its card → fence → connect to local peers → hand the
//! transport and the runtime's termination events to the engine.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use weft_engine::{Engine, EngineConfig};
use weft_pmix::Runtime;
use weft_shm::{ShmConfig, ShmTransport};

use crate::{Config, Error};

const SHM_KEY: &str = "shm";

/// The runtime, shared between the facade (finalize, abort) and the engine's failure source.
pub(crate) type SharedRuntime = Rc<RefCell<Box<dyn Runtime>>>;

/// Build an engine for this process from `cfg` and a started runtime.
pub(crate) fn wire(cfg: &Config, rt: SharedRuntime) -> Result<Engine, Error> {
    let (me, size, local) = {
        let r = rt.borrow();
        (r.rank(), r.size(), r.local_peers().to_vec())
    };
    let mut engine = Engine::new(
        me,
        size,
        EngineConfig {
            progress: cfg.progress,
            slow_period: Duration::from_micros(cfg.slow_period_us),
            eager_limit: cfg.eager_limit,
        },
    );
    let others: Vec<u32> = local.iter().copied().filter(|&p| p != me).collect();
    let shm = if others.is_empty() {
        None
    } else {
        let scfg = ShmConfig {
            inbound_budget: cfg.shm_budget,
            ring_min: cfg.shm_ring_min,
            ring_max: cfg.shm_ring_max,
            eager_limit: cfg.eager_limit.max(64),
        };
        let shm = ShmTransport::create(me, &local, &scfg)?;
        rt.borrow_mut().put(SHM_KEY, &shm.card())?;
        Some(shm)
    };
    {
        let mut r = rt.borrow_mut();
        r.commit()?;
        r.fence()?;
    }
    if let Some(mut shm) = shm {
        let mut cards = Vec::with_capacity(others.len());
        for &p in &others {
            cards.push((p, rt.borrow_mut().get(p, SHM_KEY)?));
        }
        shm.connect(&cards)?;
        engine.add_transport(Box::new(shm), &others);
    }
    let src = rt.clone();
    engine.add_failure_source(Box::new(move |out: &mut Vec<u32>| {
        if let Ok(mut r) = src.try_borrow_mut() {
            r.poll_terminated(out);
        }
    }));
    Ok(engine)
}
