//! Dynamic processes in the operations core: a collective spawn over a communicator, and the
//! connection of a spawned process to its parents at init.
//!
//! A spawn makes a new job of the universe (`weft_pmix::universe`). Collective over the
//! parents' communicator: the members agree on a context id (the maximum of their next free
//! ones), the root asks the runtime to start the children — passing them, as job data, the
//! parents' universe ranks with their jobs and that context id — and broadcasts the outcome
//! (the new job, or why it failed). Every parent then connects to every child
//! (`crate::bridge`), and both sides install the *union* communicator — the parents in their
//! communicator's order, then the children in rank order — on the agreed context id, which is
//! free at the children too: a child installs it at init, before anything else allocates a
//! context. Front ends build their intercommunicator on that union.

use weft_engine::{CommId, Common, Contexts, Engine, Setup};
use weft_pmix::universe::{JobRef, Parents, SpawnRequest, KEY_SPAWN_CTX, KEY_SPAWN_PARENTS};

use super::{EngineResult, OpsCore};
use crate::init::SharedRuntime;
use crate::{Config, EngineError};

/// The union communicator of a spawn and where the two groups sit in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spawned {
    /// Parents (ranks `0..parents`), then children.
    pub union: CommId,
    pub parents: u32,
    pub children: u32,
}

/// Size of the root's broadcast record: status, base, size, text length, text.
const RECORD: usize = 1024;

impl OpsCore {
    /// Collective over `c`: start `req` (significant at `root` only) as a new job and connect
    /// to it. Every member returns the same outcome: the union communicator, or the error the
    /// root met (a runtime that cannot start processes names itself).
    pub fn comm_spawn(&self, c: CommId, root: u32, req: Option<&SpawnRequest>) -> EngineResult<Spawned> {
        let me_rank = self.comm_rank(c)?;
        let group = self.comm_group(c)?;
        if root as usize >= group.len() {
            return Err(EngineError::InvalidRank { rank: root.into(), size: group.len() as u32 });
        }
        let ctx = self.max_u32(c, self.next_ctx()?)?;
        let mut record = [0u8; RECORD];
        if me_rank == root {
            let outcome = match req {
                None => Err("the root passed no command".to_string()),
                Some(r) => {
                    let parents = Parents { jobs: self.rt.borrow().jobs(), ranks: group.clone() };
                    let mut r = r.clone();
                    r.job_info.push((KEY_SPAWN_PARENTS.into(), parents.encode()));
                    r.job_info.push((KEY_SPAWN_CTX.into(), ctx.to_string()));
                    self.rt.borrow_mut().spawn(&r).map_err(|e| match e {
                        weft_pmix::RuntimeError::Spawn(m) => m,
                        e => format!("spawn: {e}"),
                    })
                }
            };
            encode(&mut record, &outcome);
        }
        self.bcast_bytes(c, &mut record, root)?;
        let job = decode(&record)?;
        self.rt.borrow_mut().add_job(job.clone()).map_err(|e| EngineError::Spawn(e.to_string()))?;
        let children: Vec<u32> = (job.base..job.base + job.size).collect();
        let me = group[me_rank as usize];
        let mut e = self.eng()?;
        // The children share the host: spinning while they and the runtime need cores stalls
        // both (a parent's first exchanges with its child took milliseconds at 2 ranks on 2
        // cores, 50 µs when yielding).
        if let Some(mode) = crate::init::grown_universe_progress(&self.cfg, job.base + job.size) {
            Setup::of(&mut e).set_progress_mode(mode);
        }
        crate::bridge::connect(&self.cfg, &self.rt, &mut e, me, &group, &children, job.base)?;
        let union: Vec<u32> = group.iter().chain(&children).copied().collect();
        let id = Contexts::of(&mut e).create_agreed(ctx, union)?;
        Ok(Spawned { union: id, parents: group.len() as u32, children: job.size })
    }

    /// The union communicator with this process's parents, if it was spawned.
    pub fn parent(&self) -> Option<Spawned> {
        self.parent
    }
}

/// The root's outcome as a broadcast record.
fn encode(rec: &mut [u8; RECORD], outcome: &Result<JobRef, String>) {
    let (ok, base, size, text) = match outcome {
        Ok(j) => (1u32, j.base, j.size, j.nspace.as_bytes()),
        Err(msg) => (0, 0, 0, msg.as_bytes()),
    };
    let text = &text[..text.len().min(RECORD - 16)];
    for (i, w) in [ok, base, size, text.len() as u32].iter().enumerate() {
        rec[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    rec[16..16 + text.len()].copy_from_slice(text);
}

/// Inverse of [`encode`]: the new job, or the root's error.
fn decode(rec: &[u8; RECORD]) -> EngineResult<JobRef> {
    let word = |i: usize| u32::from_le_bytes([rec[4 * i], rec[4 * i + 1], rec[4 * i + 2], rec[4 * i + 3]]);
    let len = (word(3) as usize).min(RECORD - 16);
    let text = String::from_utf8_lossy(&rec[16..16 + len]).into_owned();
    match word(0) {
        1 if word(2) > 0 => Ok(JobRef { nspace: text, base: word(1), size: word(2) }),
        _ => Err(EngineError::Spawn(text)),
    }
}

/// At init of a spawned process: connect to the parents named by the job data and install
/// the union communicator. `None` for a process that was not spawned.
pub(super) fn join_parents(
    cfg: &Config,
    rt: &SharedRuntime,
    e: &mut Engine,
) -> crate::Result<Option<Spawned>> {
    let (parents, ctx) = {
        let mut r = rt.borrow_mut();
        match (r.job_string(KEY_SPAWN_PARENTS), r.job_string(KEY_SPAWN_CTX)) {
            (Some(p), Some(c)) => (p, c),
            _ => return Ok(None),
        }
    };
    let parents = Parents::decode(&parents)?;
    let ctx: u32 = ctx
        .trim()
        .parse()
        .map_err(|_| EngineError::Spawn(format!("malformed {KEY_SPAWN_CTX} value {ctx:?}")))?;
    for j in &parents.jobs {
        rt.borrow_mut().add_job(j.clone())?;
    }
    let world = e.comm(e.world())?.members().to_vec();
    let me = e.world_rank();
    let base = world.first().copied().unwrap_or(me);
    if ctx < Contexts::of_ref(e).next() {
        return Err(
            EngineError::Spawn(format!("context id {ctx} from the parents is already in use here")).into()
        );
    }
    crate::bridge::connect(cfg, rt, e, me, &world, &parents.ranks, base)?;
    let union: Vec<u32> = parents.ranks.iter().chain(&world).copied().collect();
    let id = Contexts::of(e).create_agreed(ctx, union)?;
    Ok(Some(Spawned { union: id, parents: parents.ranks.len() as u32, children: world.len() as u32 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_record_round_trip() {
        let mut rec = [0u8; RECORD];
        let job = JobRef { nspace: "weft-1.u4".into(), base: 4, size: 2 };
        encode(&mut rec, &Ok(job.clone()));
        assert_eq!(decode(&rec).unwrap(), job);
        let mut rec = [0u8; RECORD];
        encode(&mut rec, &Err("the pmi2 runtime cannot start processes".into()));
        match decode(&rec) {
            Err(EngineError::Spawn(m)) => assert!(m.contains("pmi2")),
            other => panic!("expected a spawn error, got {other:?}"),
        }
        let mut rec = [0u8; RECORD];
        encode(&mut rec, &Err("x".repeat(5000)));
        assert!(matches!(decode(&rec), Err(EngineError::Spawn(m)) if m.len() == RECORD - 16));
    }
}
