//! Dynamic process creation in weft-run: the launcher's answer to `PMIx_Spawn`.
//!
//! Design: one *universe* per weft-run. The job started on the command line holds universe
//! ranks `0..N`; each spawned job gets the next ranks (`N..N+k`, then after those) and its own
//! PMIx namespace (`<job>.u<base>`), registered with the spawning job's data for its children
//! (see `weft_pmix::universe`). The launcher's table of processes is indexed by universe rank,
//! so a spawned process is watched, judged, killed on request and announced dead exactly like
//! a rank of the first job. This keeps the spawned processes inside the one PMIx server, which
//! serves every key of every job locally (no second server, no cross-server modex).
//!
//! Limit: the universe holds at most `--universe-size` live processes (default N, as a
//! launcher that offers N slots); a spawn that would exceed it is refused with
//! `PMIX_ERR_OUT_OF_RESOURCE` (MPI_ERR_SPAWN at the caller). Spawned processes run on the
//! first virtual node, unbound, outside `--netns` namespaces.

use std::ffi::OsString;
use std::path::PathBuf;

use weft_pmix::server::{Refusal, SpawnCall};

use super::{RankState, Server};
use crate::job::{resolve_program, spawn_rank, SpawnSpec};

/// What every spawned process's start needs besides its own command line.
pub struct SpawnTemplate {
    /// `LD_LIBRARY_PATH` of every process (`None`: inherited).
    pub ld_library_path: Option<OsString>,
    /// `GLIBC_TUNABLES` of every process (`None`: inherited).
    pub glibc_tunables: Option<OsString>,
    /// The fault-injection control socket (`WEFT_RUN_CTL`).
    pub ctl: PathBuf,
    /// `WEFT_FI_DOMAIN` of the first node.
    pub fi_domain: Option<String>,
    /// Most live processes the universe may hold.
    pub universe_size: u32,
    /// A spawn failed half-way: universe ranks no longer match the launcher's table, so no
    /// further spawn is accepted.
    pub broken: bool,
}

impl Server {
    /// Carry out a client's `PMIx_Spawn`: check the universe's room, register the job, start
    /// its processes, answer with its namespace (or with the PMIx status that refuses it).
    pub(crate) fn spawn_job(&mut self, call: SpawnCall) {
        let SpawnCall { requester, command, args, maxprocs, job_info, reply } = call;
        if self.spawn_template.as_ref().is_none_or(|t| t.broken) {
            reply.answer(Err(Refusal::NotSupported));
            return;
        }
        // Processes that ended but were not judged yet do not hold a slot.
        let idx: Vec<usize> = (0..self.ranks.len()).collect();
        self.check_deaths(&idx, None);
        let live = self.ranks.iter().filter(|r| r.proc_.ended.is_none()).count() as u32;
        let Some(tpl) = self.spawn_template.as_ref() else { return };
        if live.saturating_add(maxprocs) > tpl.universe_size {
            note!(
                "weft-run: rank {requester} asked to spawn {maxprocs} process(es) of {command:?}: \
                 refused, {live} of the universe's {} slots are in use (--universe-size)",
                tpl.universe_size
            );
            reply.answer(Err(Refusal::OutOfResource));
            return;
        }
        let prog = match resolve_program(command.as_ref()) {
            Ok(p) => p,
            Err(e) => {
                note!("weft-run: rank {requester} asked to spawn {command:?}: {e}");
                reply.answer(Err(Refusal::NotFound));
                return;
            }
        };
        let base = self.ranks.len() as u32;
        let nspace = match self.pmix.register_spawned(base, maxprocs, requester, &job_info) {
            Ok(ns) => ns,
            Err(e) => {
                note!("weft-run: cannot register the spawned job: {e}");
                reply.answer(Err(Refusal::Failed));
                return;
            }
        };
        let end = base + maxprocs;
        let tpl = self.spawn_template.as_ref().expect("checked above");
        let spec = SpawnSpec {
            prog: prog.clone(),
            ld_library_path: tpl.ld_library_path.clone(),
            glibc_tunables: tpl.glibc_tunables.clone(),
            argv0: OsString::from(&command),
            args: args.into_iter().map(OsString::from).collect(),
            ctl: tpl.ctl.clone(),
            node_of: vec![0u32; end as usize],
            fi_domains: vec![tpl.fi_domain.clone()],
            netns_fds: vec![],
            cpus: vec![],
            // The failure board covers the job started on the command line only.
            board_fd: None,
        };
        let mut started = Vec::new();
        for u in base..end {
            let res = self.pmix.client_env_of(u).map_err(|e| e.to_string()).and_then(|env| {
                spawn_rank(&spec, u, &env, self.pgid, None)
                    .or_else(|_| spawn_rank(&spec, u, &env, None, None))
                    .map_err(|e| e.to_string())
            });
            match res {
                Ok(p) => started.push(p),
                Err(e) => {
                    note!(
                        "weft-run: cannot start spawned process {u} ({}): {e}; no further spawn \
                         is accepted",
                        prog.display()
                    );
                    for p in started {
                        p.kill();
                        let mut st = RankState::new(p);
                        st.kill_reason = Some("its spawn failed".into());
                        self.ranks.push(st);
                    }
                    if let Some(t) = self.spawn_template.as_mut() {
                        t.broken = true;
                    }
                    reply.answer(Err(Refusal::Failed));
                    return;
                }
            }
        }
        for p in started {
            self.ranks.push(RankState::new(p));
        }
        reply.answer(Ok(&nspace));
    }
}
