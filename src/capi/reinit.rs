//! C ABI of global restart (Reinit): `weft_reinit` runs a resilient main in epochs and
//! `weft_reinit_state` tells the main why it runs (the `MPI_Reinit` shape of the Reinit++
//! paper). See `crate::reinit` for the model.
//!
//! The C path back to the restart point: every weft call of an abandoned epoch that involves a
//! peer returns `WEFT_ERR_REINIT`; the resilient main returns that code (no `longjmp`), and
//! `weft_reinit` calls it again in the new epoch with this thread's instance replaced. Inside
//! the main, `weft_init` fails with `WEFT_ERR_ALREADY_INITIALIZED` and `weft_finalize` with
//! `WEFT_ERR_REINIT_USAGE`: `weft_reinit` owns the instance.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int};

use super::weft_error::*;
use super::{coll, guard, Fail, State, STATE};
use crate::{EngineError, Error, ReinitState};

/// `weft_reinit_state`: first call of the resilient main in a process of the original job.
pub const WEFT_REINIT_NEW: c_int = 0;
/// `weft_reinit_state`: a survivor rolled back after a failure (reload its own checkpoint).
pub const WEFT_REINIT_REINITED: c_int = 1;
/// `weft_reinit_state`: a process respawned in place of a failed one (reload from a copy held
/// elsewhere).
pub const WEFT_REINIT_RESTARTED: c_int = 2;

/// The resilient main: returns 0 when done, the code of a failed weft call (in particular
/// `WEFT_ERR_REINIT`) otherwise.
pub type weft_resilient_main = Option<unsafe extern "C" fn(argc: c_int, argv: *mut *mut c_char) -> c_int>;

thread_local! {
    static CURRENT: Cell<c_int> = const { Cell::new(-1) };
    static EPOCH: Cell<i64> = const { Cell::new(-1) };
}

/// Run `main(argc, argv)` under global restart (weft-run only): initialise weft for the
/// current epoch, call `main`, and when it returns after a rollback, start the next epoch and
/// call it again. Returns `WEFT_SUCCESS` once `main` returned 0 in an epoch every rank
/// completed; `WEFT_ERR_REINIT_MAIN` when it returned another error; `WEFT_ERR_REINIT_USAGE`
/// when called a second time, after `weft_init`, or under a runtime that cannot respawn
/// processes (`weft_last_error` names it). weft is finalized when it returns.
///
/// # Safety
/// `main` must be a valid function or NULL; `argv` is passed to it unchanged.
#[no_mangle]
pub unsafe extern "C" fn weft_reinit(
    argc: c_int,
    argv: *mut *mut c_char,
    main: weft_resilient_main,
) -> c_int {
    guard(|| {
        let main = main.ok_or_else(|| Fail::null("main"))?;
        if STATE.with(|s| s.try_borrow().map(|s| s.is_some()).unwrap_or(true)) {
            return Err(Error::Reinit("called while weft is initialised (after weft_init)".into()).into());
        }
        crate::reinit(|state, w| {
            CURRENT.set(match state {
                ReinitState::New => WEFT_REINIT_NEW,
                ReinitState::Reinited => WEFT_REINIT_REINITED,
                ReinitState::Restarted => WEFT_REINIT_RESTARTED,
            });
            EPOCH.set(w.epoch().map_or(-1, |e| e as i64));
            let st = State { weft: w.handle(), done: HashMap::new(), ops: coll::Ops::default() };
            STATE.with(|s| *s.borrow_mut() = Some(st));
            // SAFETY: the caller's contract: `main` is a valid function taking (argc, argv).
            let rc = unsafe { main(argc, argv) };
            STATE.with(|s| s.borrow_mut().take());
            CURRENT.set(-1);
            EPOCH.set(-1);
            let epoch = w.epoch().unwrap_or(0);
            // A failure seen before the launcher's rollback arrived: `reinit` handles it as
            // for the Rust front end (reports detector-declared ranks, waits for the rollback).
            let failure =
                [WEFT_ERR_PROC_FAILED, WEFT_ERR_PROC_FAILED_PENDING, WEFT_ERR_REVOKED, WEFT_ERR_TRANSPORT]
                    .iter()
                    .any(|&c| c as c_int == rc);
            match rc {
                0 => Ok(()),
                _ if failure => Err(Error::Engine(EngineError::ProcFailed { ranks: w.failed_world_ranks() })),
                rc if rc == WEFT_ERR_REINIT as c_int => {
                    Err(Error::Rollback { epoch: weft_pmix::epoch::rolled_back().unwrap_or(epoch) })
                }
                rc => Err(Error::ResilientMain { code: rc }),
            }
        })?;
        Ok(())
    })
}

/// The epoch of the running resilient main (0 first, one more per rollback); -1 outside
/// `weft_reinit`'s main.
#[no_mangle]
pub extern "C" fn weft_reinit_epoch() -> i64 {
    EPOCH.get()
}

/// Why the resilient main runs: `WEFT_REINIT_NEW`, `WEFT_REINIT_REINITED` or
/// `WEFT_REINIT_RESTARTED`; -1 outside `weft_reinit`'s main.
#[no_mangle]
pub extern "C" fn weft_reinit_state() -> c_int {
    CURRENT.get()
}
