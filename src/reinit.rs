//! Global restart (Reinit, after "Reinit++: Evaluating the Performance of Global-Restart
//! Recovery Methods for MPI Fault Tolerance"): [`reinit`] runs a *resilient main* in epochs.
//! When a process fails, `weft-run` respawns it with its old rank and every process rolls back
//! to the restart point, the start of the resilient main, in a new epoch with the full-size
//! world.
//!
//! How a rollback reaches the restart point without `longjmp`: the launcher pushes the new
//! epoch to every process; the instance of the old epoch then reports every peer as failed,
//! so every pending and later call that involves a peer completes with [`Error::Rollback`]
//! (C: `WEFT_ERR_REINIT`). The resilient main returns that error (`?` in Rust, `return rc` in
//! C), [`reinit`] drops the old instance (its shm segments and fabric endpoints, so no message
//! of the old epoch can reach the new one), bootstraps a fresh instance for the new epoch
//! through the launcher's fence, and calls the main again with
//! [`ReinitState::Reinited`] (a survivor) or [`ReinitState::Restarted`] (a respawned process).
//!
//! What the application must do: reload its state from its last checkpoint according to the
//! state (see [`crate::checkpoint`]). What it must not do: keep communicators, requests or the
//! `Weft` of one epoch beyond the main's return (they belong to the abandoned instance).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use weft_pmix::epoch::EpochLink;
use weft_pmix::RuntimeError;

use crate::{Config, Error, Result, Weft};

/// Why the resilient main is being called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReinitState {
    /// The first call in a process of the original job.
    New,
    /// A survivor rolled back after a failure: reload its own checkpoint.
    Reinited,
    /// A process respawned in place of a failed one (until its main has run once): reload
    /// from a copy held elsewhere (a buddy, a file).
    Restarted,
}

/// An error a failure of another process causes (as opposed to bad input or a local fault).
fn is_failure(e: &Error) -> bool {
    matches!(
        e.engine(),
        Some(
            crate::EngineError::ProcFailed { .. }
                | crate::EngineError::ProcFailedPending
                | crate::EngineError::Revoked
                | crate::EngineError::Transport(_)
        )
    )
}

/// `reinit` has been called in this process (it may run once: the epoch service is joined
/// once per process).
static CALLED: AtomicBool = AtomicBool::new(false);

/// Run `main` under global restart with the configuration of the environment; see
/// [`reinit_with`].
pub fn reinit<T>(main: impl FnMut(ReinitState, &Weft) -> Result<T>) -> Result<T> {
    reinit_with(Config::from_env()?, main)
}

/// Run the resilient `main` in epochs (see the module documentation) until it returns in an
/// epoch that every rank completed. Returns `main`'s value, or its error if it failed for
/// another reason than a rollback.
///
/// Errors: [`Error::Reinit`] when called a second time, while a `Weft` of [`crate::init`]
/// exists, or outside `weft-run` (the error names the runtime, which cannot respawn).
pub fn reinit_with<T>(cfg: Config, mut main: impl FnMut(ReinitState, &Weft) -> Result<T>) -> Result<T> {
    if crate::api::initialized() {
        return Err(Error::Reinit("called while weft is initialised (after init / weft_init)".into()));
    }
    if CALLED.swap(true, Ordering::AcqRel) {
        return Err(Error::Reinit("called a second time (it runs once per process)".into()));
    }
    if std::env::var_os(weft_pmix::epoch::ENV_STANDBY).is_some() && cfg.bind != crate::Bind::None {
        // A standby waits for a rank: do the hwloc discovery of its binding before that.
        crate::topology::preload();
    }
    let link = match EpochLink::join() {
        Ok(l) => Arc::new(l),
        Err(e) => {
            // Nothing joined: a later call may try again (and gets the same error if the
            // runtime still cannot respawn).
            CALLED.store(false, Ordering::Release);
            return Err(match e {
                RuntimeError::Env(m) => Error::Reinit(m),
                e => Error::from(e),
            });
        }
    };
    let mut state = if link.start_epoch > 0 { ReinitState::Restarted } else { ReinitState::New };
    let mut cfg = cfg;
    loop {
        let rt = link.runtime();
        let epoch = rt.epoch();
        let res = crate::api::init_epoch(cfg.clone(), Box::new(rt), epoch);
        if res.is_ok() {
            // The process keeps its rank, hence its binding: later epochs skip the topology
            // discovery and binding (tens of milliseconds of the recovery).
            cfg.bind = crate::Bind::None;
        }
        let w = match res {
            Ok(w) => w,
            // The job moved on while this epoch was bootstrapping (a peer died while it
            // connected): take the next one.
            Err(Error::Rollback { .. }) => continue,
            Err(e) if link.epoch() > epoch || (is_failure(&e) && link.wait_rollback(epoch)) => continue,
            Err(e) => return Err(e),
        };
        link.set_running(Some(epoch));
        let res = main(state, &w);
        let outcome = match res {
            Ok(v) => match link.finish(epoch) {
                Ok(()) => Ok(v),
                Err(RuntimeError::Rollback { .. }) => Err(None),
                Err(e) => Err(Some(Error::from(e))),
            },
            Err(_) if link.epoch() > epoch => Err(None),
            // A failure seen before the launcher's rollback arrived: a peer's death seen in-band
            // (the rollback follows), or a rank the heartbeat detector declared, which the
            // launcher is told to kill (then the rollback follows).
            Err(e)
                if is_failure(&e) && {
                    let failed = w.failed_world_ranks();
                    if !failed.is_empty() {
                        let _ = link.report_failed(epoch, &failed);
                    }
                    link.wait_rollback(epoch)
                } =>
            {
                Err(None)
            }
            Err(e) => Err(Some(e)),
        };
        link.set_running(None);
        match outcome {
            Ok(v) => {
                w.finalize()?;
                return Ok(v);
            }
            Err(None) => {
                w.abandon();
                // The process has run main: it holds its own checkpoint from now on.
                state = ReinitState::Reinited;
            }
            Err(Some(e)) => {
                let _ = w.finalize();
                return Err(e);
            }
        }
    }
}
