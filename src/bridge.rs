//! Shared-memory connections between the processes of two jobs of one universe: a spawning
//! job's members and the processes they spawned (`weft_pmix::universe`).
//!
//! Both sides build one shared-memory transport over the same set — the spawning
//! communicator's members and the children, in universe-rank order — so every segment has the
//! same ring layout, but each side maps only the other side's segments: the members of one job
//! already reach each other through the transports of their init. Cards go through the
//! runtime under a key named after the children's universe base (unique per spawn), each side
//! publishing before it waits for the other's, so neither waits on the other. The peers' deaths
//! are seen by the transport's pidfds, as for any local peer.
//!
//! weft-run runs every process on one host, so shared memory always reaches the other job.

use weft_engine::{Engine, Setup, TransportError};
use weft_shm::ShmTransport;

use crate::init::{shm_config, SharedRuntime};
use crate::{Config, EngineError};

/// Connect universe rank `me` to the processes `others` of the other job (`mine`: the members
/// of this side, `me` among them); `children_base` names the spawn.
pub(crate) fn connect(
    cfg: &Config,
    rt: &SharedRuntime,
    engine: &mut Engine,
    me: u32,
    mine: &[u32],
    others: &[u32],
    children_base: u32,
) -> Result<(), EngineError> {
    let mut all: Vec<u32> = mine.iter().chain(others).copied().collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    if all.len() != n {
        return Err(EngineError::InvalidArg("a process is both a parent and a child of the spawn".into()));
    }
    let universe = all.iter().copied().max().map_or(0, |m| m + 1);
    Setup::of(engine).grow_universe(universe);
    Setup::of(engine).retire_dead_transports();
    let rt_err = |e: weft_pmix::RuntimeError| EngineError::Spawn(e.to_string());
    let mut shm = ShmTransport::create(me, &all, &shm_config(cfg))?;
    let key = format!("spawn.{children_base}");
    {
        let mut r = rt.borrow_mut();
        r.put(&key, &shm.card()).map_err(rt_err)?;
        r.commit().map_err(rt_err)?;
    }
    let mut cards = Vec::with_capacity(others.len());
    for &p in others {
        let card = rt.borrow_mut().get_universe(p, &key).map_err(|e| match e {
            weft_pmix::RuntimeError::FenceFailed(_) => EngineError::ProcFailed { ranks: vec![p] },
            e => rt_err(e),
        })?;
        cards.push((p, card));
    }
    match shm.connect(&cards) {
        Ok(()) | Err(TransportError::PeerDead(_)) => {}
        Err(e) => return Err(e.into()),
    }
    Setup::of(engine).add_peer_transport(Box::new(shm), others)?;
    Ok(())
}
