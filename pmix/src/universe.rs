//! The jobs of a universe: what a process knows about the jobs it shares communicators with
//! (its own, the job that spawned it, the jobs it spawned), and the keys through which a
//! launcher and a spawning job tell a spawned job where it sits.
//!
//! Every process of a universe has a *universe rank*: a job's rank `r` is universe rank
//! `base + r`, where `base` is the number of processes the launcher had started before that
//! job (the first job has base 0, so its universe ranks are its job ranks). weft-run registers
//! [`KEY_UNIV_BASE`] for every job it spawns. The spawning job passes [`KEY_SPAWN_PARENTS`]
//! (its members and the jobs they belong to) and [`KEY_SPAWN_CTX`] (the context id of the
//! intercommunicator) as spawn job info, which weft-run registers as job-level data of the
//! new job, so the children can connect back.

use crate::RuntimeError;

/// Job-level key (`PMIX_UINT32`): universe rank of the job's rank 0.
pub const KEY_UNIV_BASE: &str = "weft.univ.base";
/// Job-level key (string, [`Parents::encode`]): the spawning processes and their jobs.
pub const KEY_SPAWN_PARENTS: &str = "weft.spawn.parents";
/// Job-level key (string, decimal): context id of the parent/children intercommunicator.
pub const KEY_SPAWN_CTX: &str = "weft.spawn.ctx";

/// One job of the universe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRef {
    /// Its PMIx namespace.
    pub nspace: String,
    /// Universe rank of its rank 0.
    pub base: u32,
    /// Number of processes.
    pub size: u32,
}

impl JobRef {
    /// The job rank of universe rank `u`, if `u` belongs to this job.
    pub fn job_rank(&self, u: u32) -> Option<u32> {
        u.checked_sub(self.base).filter(|&r| r < self.size)
    }
}

/// What a spawned job learns about its parents: the parents' universe ranks (in the rank
/// order of the spawning communicator) and every job they belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parents {
    pub jobs: Vec<JobRef>,
    pub ranks: Vec<u32>,
}

impl Parents {
    /// `ns:base:size;ns:base:size|r,r,r` (namespaces hold no `:`, `;` or `|`).
    pub fn encode(&self) -> String {
        let jobs: Vec<String> =
            self.jobs.iter().map(|j| format!("{}:{}:{}", j.nspace, j.base, j.size)).collect();
        let ranks: Vec<String> = self.ranks.iter().map(u32::to_string).collect();
        format!("{}|{}", jobs.join(";"), ranks.join(","))
    }

    /// Inverse of [`Parents::encode`]; checks that every parent belongs to a listed job.
    pub fn decode(s: &str) -> Result<Parents, RuntimeError> {
        let bad = || RuntimeError::Env(format!("malformed {KEY_SPAWN_PARENTS} value {s:?}"));
        let (jobs, ranks) = s.split_once('|').ok_or_else(bad)?;
        let jobs = jobs
            .split(';')
            .map(|j| {
                let mut it = j.split(':');
                let (ns, base, size) = (it.next(), it.next(), it.next());
                match (ns, base.and_then(|b| b.parse().ok()), size.and_then(|n| n.parse().ok()), it.next()) {
                    (Some(ns), Some(base), Some(size), None) if !ns.is_empty() => {
                        Ok(JobRef { nspace: ns.to_string(), base, size })
                    }
                    _ => Err(bad()),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ranks =
            ranks.split(',').map(|r| r.parse::<u32>().map_err(|_| bad())).collect::<Result<Vec<_>, _>>()?;
        if ranks.is_empty() || ranks.iter().any(|&r| !jobs.iter().any(|j| j.job_rank(r).is_some())) {
            return Err(bad());
        }
        Ok(Parents { jobs, ranks })
    }
}

/// A request to start processes (`MPI_Comm_spawn`'s arguments).
#[derive(Clone, Debug)]
pub struct SpawnRequest {
    /// Program to run (a path, or a name looked up in `PATH` by the launcher).
    pub command: String,
    /// Its arguments (without the program name).
    pub args: Vec<String>,
    /// Number of processes.
    pub maxprocs: u32,
    /// Job-level data for the new job (`weft.*` keys and their string values).
    pub job_info: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_round_trip_and_reject_garbage() {
        let p = Parents {
            jobs: vec![
                JobRef { nspace: "weft-1-ab".into(), base: 0, size: 4 },
                JobRef { nspace: "weft-1-ab.u4".into(), base: 4, size: 1 },
            ],
            ranks: vec![0, 1, 3, 4],
        };
        assert_eq!(Parents::decode(&p.encode()).unwrap(), p);
        assert!(Parents::decode("").is_err());
        assert!(Parents::decode("ns:0:2|").is_err());
        assert!(Parents::decode("ns:0:2|5").is_err(), "rank 5 belongs to no job");
        assert!(Parents::decode("ns:x:2|0").is_err());
        assert_eq!(p.jobs[1].job_rank(4), Some(0));
        assert_eq!(p.jobs[1].job_rank(5), None);
        assert_eq!(p.jobs[1].job_rank(3), None);
    }
}
