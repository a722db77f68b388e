//! `init`: wire runtime, transports and engine together.
//!
//! Order: read `Config` → start the runtime (weft-run, PMIx or singleton) → bind the process
//! (`WEFT_BIND`) → create the shared-memory segment (peers on this node) and the libfabric
//! endpoint (peers on other nodes) and publish their addresses → fence → connect → hand the
//! transports and the runtime's termination events to the engine.
//!
//! Routing: a peer on the same node goes through shm, any other peer through libfabric; with
//! `WEFT_SHM=off` every peer goes through libfabric (to test the network path on one node).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use weft_engine::{Engine, EngineConfig, Setup, TransportError};
use weft_fabric::{OfiConfig, OfiTransport};
use weft_pmix::Runtime;
use weft_shm::{ShmConfig, ShmTransport};

use crate::{Config, Error};

const SHM_KEY: &str = "shm";
const OFI_KEY: &str = "ofi";

/// The runtime, shared between the facade (finalize, abort) and the engine's failure source.
pub(crate) type SharedRuntime = Rc<RefCell<Box<dyn Runtime>>>;

/// Which peers each transport serves (job ranks).
struct Plan {
    shm_peers: Vec<u32>,
    ofi_peers: Vec<u32>,
}

fn plan(cfg: &Config, rt: &dyn Runtime) -> Result<Plan, Error> {
    let me = rt.rank();
    let local: Vec<u32> = rt.local_peers().iter().copied().filter(|&p| p != me).collect();
    let shm_peers = if cfg.shm { local } else { Vec::new() };
    let mut ofi_peers = Vec::new();
    for p in (0..rt.size()).filter(|&p| p != me) {
        if !shm_peers.contains(&p) {
            ofi_peers.push(p);
        }
    }
    Ok(Plan { shm_peers, ofi_peers })
}

/// The shared-memory settings of `cfg`.
pub(crate) fn shm_config(cfg: &Config) -> ShmConfig {
    ShmConfig {
        inbound_budget: cfg.shm_budget,
        ring_min: cfg.shm_ring_min,
        ring_max: cfg.shm_ring_max,
        eager_limit: cfg.eager_limit.max(64),
        split_limit: if cfg.shm_split_limit == 0 { usize::MAX } else { cfg.shm_split_limit },
    }
}

/// Build an engine for this process from `cfg` and a started runtime.
///
/// The runtime speaks job ranks, the engine universe ranks (a spawned job's ranks start at
/// its universe base, see `weft_pmix::universe`): `u` below converts.
pub(crate) fn wire(cfg: &Config, rt: SharedRuntime) -> Result<Engine, Error> {
    let (me, size, local, base) = {
        let r = rt.borrow();
        (r.rank(), r.size(), r.local_peers().to_vec(), r.universe_base())
    };
    let u = |r: u32| base + r;
    let to_u = |rs: &[u32]| rs.iter().map(|&r| base + r).collect::<Vec<u32>>();
    // Virtual nodes (weft-run --nodes) share one host's cores: bind by the host-wide slot the
    // launcher exports, not by the node-local rank (which would put every node's first rank
    // on core 0).
    let host_slot = std::env::var(weft_pmix::launcher::ENV_HOST_SLOT).ok().and_then(|v| v.parse().ok());
    let local_rank = host_slot.unwrap_or_else(|| local.iter().position(|&p| p == me).unwrap_or(0) as u32);
    // `auto`: like Open MPI's yield-when-idle, spin only while every rank of the job on this
    // host can have a core (counted before binding narrows this process's CPU set).
    // Virtual nodes share the host: under weft-run (one host) that is the whole job.
    // A spawned job shares the host with the jobs before it: count the universe so far.
    let on_host = if host_slot.is_some() { (base + size) as usize } else { local.len().max(1) };
    let progress = cfg.progress.unwrap_or_else(|| auto_progress(on_host, crate::topology::host_cpus()));
    crate::topology::bind_self(cfg.bind, local_rank)?;
    let plan = plan(cfg, &**rt.borrow())?;
    let ecfg = EngineConfig {
        progress,
        slow_period: Duration::from_micros(cfg.slow_period_us),
        // Each transport applies WEFT_EAGER_LIMIT itself (a socket provider raises it).
        eager_limit: usize::MAX,
    };
    let mut engine = if base == 0 {
        Engine::new(me, size, ecfg)
    } else {
        Engine::with_world(u(me), (base..base + size).collect(), base + size, ecfg)?
    };

    let shm = if plan.shm_peers.is_empty() {
        None
    } else {
        let local_shm: Vec<u32> =
            local.iter().copied().filter(|p| *p == me || plan.shm_peers.contains(p)).collect();
        let shm = ShmTransport::create(u(me), &to_u(&local_shm), &shm_config(cfg))?;
        rt.borrow_mut().put(SHM_KEY, &shm.card())?;
        Some(shm)
    };
    let ofi = if plan.ofi_peers.is_empty() {
        None
    } else {
        let ocfg = OfiConfig {
            provider: cfg.fi_provider.clone(),
            domain: cfg.fi_domain.clone(),
            eager_limit: cfg.eager_limit.max(64),
            rcache_monitor: if cfg.rcache_monitor { "on" } else { "off" }.into(),
            ..OfiConfig::default()
        };
        let ofi = OfiTransport::open(u(me), base + size, &ocfg).map_err(TransportError::from)?;
        rt.borrow_mut().put(OFI_KEY, &ofi.address())?;
        Some(ofi)
    };
    {
        let mut r = rt.borrow_mut();
        r.commit()?;
        r.fence()?;
    }
    if let Some(mut shm) = shm {
        let mut cards = Vec::with_capacity(plan.shm_peers.len());
        for &p in &plan.shm_peers {
            cards.push((u(p), rt.borrow_mut().get(p, SHM_KEY)?));
        }
        shm.connect(&cards)?;
        Setup::of(&mut engine).add_transport(Box::new(shm), &to_u(&plan.shm_peers));
    }
    if let Some(mut ofi) = ofi {
        let mut addrs = Vec::with_capacity(plan.ofi_peers.len());
        for &p in &plan.ofi_peers {
            addrs.push((u(p), rt.borrow_mut().get(p, OFI_KEY)?));
        }
        ofi.connect(&addrs).map_err(TransportError::from)?;
        Setup::of(&mut engine).add_transport(Box::new(ofi), &to_u(&plan.ofi_peers));
    }
    let src = rt.clone();
    Setup::of(&mut engine).add_failure_source(Box::new(move |out: &mut Vec<u32>| {
        if let Ok(mut r) = src.try_borrow_mut() {
            r.poll_terminated(out);
        }
    }));
    // A termination event (pushed to the runtime's own thread) is seen at the next progress
    // call, not one slow-path period later.
    if let Some(flag) = rt.borrow().terminated_flag() {
        Setup::of(&mut engine).wake_on(flag);
    }
    // Under weft-run, deaths are also written into a shared page each rank checks at every
    // progress call: no wake-up of the PMIx client's thread on the way.
    if let Some(mut board) = weft_pmix::board::Board::from_env(me, size)? {
        Setup::of(&mut engine).wake_on(board.flag());
        Setup::of(&mut engine).add_failure_source(Box::new(move |out: &mut Vec<u32>| board.poll(out)));
    }
    Ok(engine)
}

/// The progress mode `WEFT_PROGRESS=auto` picks once the universe has grown to `universe`
/// processes (a spawn started more), counted as at init: under weft-run every process of the
/// universe runs on this host. `None` when the mode was set explicitly or the launcher is
/// another (whose processes are not all on one host).
pub(crate) fn grown_universe_progress(cfg: &Config, universe: u32) -> Option<weft_engine::ProgressMode> {
    let one_host = std::env::var_os(weft_pmix::launcher::ENV_HOST_SLOT).is_some();
    progress_for_universe(cfg.progress.is_some(), one_host, universe as usize, crate::topology::host_cpus())
}

/// [`grown_universe_progress`] for a mode set explicitly or not, a universe on one host or
/// not, of `universe` processes on `cpus` CPUs.
fn progress_for_universe(
    explicit: bool,
    one_host: bool,
    universe: usize,
    cpus: usize,
) -> Option<weft_engine::ProgressMode> {
    (!explicit && one_host).then(|| auto_progress(universe, cpus))
}

/// The progress mode `WEFT_PROGRESS=auto` picks for `ranks` ranks on a host with `cpus` usable
/// CPUs.
fn auto_progress(ranks: usize, cpus: usize) -> weft_engine::ProgressMode {
    if ranks > cpus {
        weft_engine::ProgressMode::Yield
    } else {
        weft_engine::ProgressMode::Poll
    }
}

#[cfg(test)]
mod progress_tests {
    use super::auto_progress;
    use weft_engine::ProgressMode;

    #[test]
    fn auto_yields_only_when_oversubscribed() {
        assert_eq!(auto_progress(2, 2), ProgressMode::Poll);
        assert_eq!(auto_progress(1, 8), ProgressMode::Poll);
        assert_eq!(auto_progress(3, 2), ProgressMode::Yield);
        assert_eq!(auto_progress(4, 0), ProgressMode::Yield);
    }

    #[test]
    fn a_spawn_that_fills_the_host_turns_auto_to_yield() {
        use super::progress_for_universe;
        // 2 ranks on 2 cores spin; with a third process spawned they yield.
        assert_eq!(progress_for_universe(false, true, 2, 2), Some(ProgressMode::Poll));
        assert_eq!(progress_for_universe(false, true, 3, 2), Some(ProgressMode::Yield));
        // An explicit WEFT_PROGRESS stays; another launcher's universe spans hosts.
        assert_eq!(progress_for_universe(true, true, 3, 2), None);
        assert_eq!(progress_for_universe(false, false, 3, 2), None);
    }
}
