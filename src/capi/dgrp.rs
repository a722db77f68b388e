//! C ABI of the Dynamic Group of Recommended Processes: start / stop the diagnosis (with a
//! pluggable test task), the current view, the round barrier and the counters. Same
//! conventions as the rest of the C ABI; ranks are world ranks.

use std::ffi::{c_int, c_void};
use std::time::Duration;

use super::{array, guard, put, with_core, Fail};
use crate::ops::OpsCore;
use crate::{DgrpOptions, EngineError};

/// A test task: returns the result for `arg`; `ctx` is the pointer given at start. It must be
/// a pure function of `arg` (the tester compares the reply with its own result).
pub type weft_dgrp_task = Option<unsafe extern "C" fn(arg: u64, ctx: *mut c_void) -> u64>;

/// Counters of this process's diagnosis.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct weft_dgrp_stats {
    /// Test requests sent.
    pub tests: u64,
    /// Tests passed.
    pub passed: u64,
    /// Tests failed by a late reply or a timeout.
    pub late: u64,
    /// Tests failed by a wrong result.
    pub wrong: u64,
    /// Replies to tests no longer in flight, ignored.
    pub stale: u64,
    /// Test requests this process answered.
    pub answered: u64,
    /// Members this process found non-recommended.
    pub removals: u64,
    /// Tests dropped because this process itself stalled.
    pub own_stalls: u64,
    /// Round barriers completed.
    pub rounds: u64,
}

fn options(interval_us: u64, factor: f64, zeta: u32) -> DgrpOptions {
    DgrpOptions { interval: Duration::from_micros(interval_us), factor, zeta }
}

/// Start the diagnosis: testing interval in µs, threshold factor (2.5 in the paper), ζ good
/// tests before a rejoin (5). Every live process calls it with the same values. The test is
/// the number of primes up to 1000.
#[no_mangle]
pub extern "C" fn weft_dgrp_start(interval_us: u64, factor: f64, zeta: u32) -> c_int {
    guard(|| with_core(|core, _| Ok(core.dgrp_start(options(interval_us, factor, zeta).to_ft())?)))
}

/// [`weft_dgrp_start`] with a pluggable test: the tested process computes `task(arg, ctx)`.
///
/// # Safety
/// `task` must be safe to call with `arg` and `ctx` from this thread whenever weft makes
/// progress, until `weft_dgrp_stop` or `weft_finalize`.
#[no_mangle]
pub unsafe extern "C" fn weft_dgrp_start_with_task(
    interval_us: u64,
    factor: f64,
    zeta: u32,
    arg: u64,
    task: weft_dgrp_task,
    ctx: *mut c_void,
) -> c_int {
    guard(|| {
        let Some(f) = task else { return Err(Fail::null("task")) };
        let mut o = options(interval_us, factor, zeta).to_ft();
        o.task_arg = arg;
        // SAFETY: the caller's contract: `f` may be called with `ctx` while the diagnosis runs.
        o.task = std::rc::Rc::new(move |a| unsafe { f(a, ctx) });
        with_core(|core, _| Ok(core.dgrp_start(o)?))
    })
}

/// Stop the diagnosis here (call it everywhere, after a last round barrier).
#[no_mangle]
pub extern "C" fn weft_dgrp_stop() -> c_int {
    guard(|| with_core(|core, _| Ok(core.dgrp_stop()?)))
}

/// Run `get` and copy the view it returns into the caller's array (at most `cap` entries),
/// its full size into `*n`.
///
/// # Safety
/// `ranks` valid for `cap` writes (may be NULL when `cap` is 0); `n` valid for writes.
unsafe fn view_into(
    ranks: *mut c_int,
    cap: usize,
    n: *mut usize,
    get: impl FnOnce(&OpsCore) -> Result<Vec<u32>, EngineError>,
) -> c_int {
    guard(|| {
        if n.is_null() {
            return Err(Fail::null("n"));
        }
        let view = with_core(|core, _| Ok(get(core)?))?;
        // SAFETY: the caller's contract.
        let out = unsafe { array(ranks, cap, "ranks")? };
        for (o, &r) in out.iter_mut().zip(&view) {
            *o = r as c_int;
        }
        // SAFETY: the caller's contract.
        unsafe { put(n, view.len(), "n") }
    })
}

/// This process's current view: up to `cap` world ranks into `ranks`, sorted; `*n` = the
/// view's size (may exceed `cap`).
///
/// # Safety
/// `ranks` valid for `cap` writes (may be NULL when `cap` is 0); `n` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_dgrp_view(ranks: *mut c_int, cap: usize, n: *mut usize) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    unsafe { view_into(ranks, cap, n, |core| core.dgrp_view()) }
}

/// Round barrier: every live process calls it; every caller gets the same view (as for
/// [`weft_dgrp_view`]) for the next computing round.
///
/// # Safety
/// As for [`weft_dgrp_view`].
#[no_mangle]
pub unsafe extern "C" fn weft_dgrp_round_barrier(ranks: *mut c_int, cap: usize, n: *mut usize) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    unsafe { view_into(ranks, cap, n, |core| core.dgrp_round_barrier()) }
}

/// Counters: up to `cap` per-rank event counters into `events` (even: recommended, odd:
/// not), `*n` = the world size, and `*stats` (may be NULL).
///
/// # Safety
/// `events` valid for `cap` writes (may be NULL when `cap` is 0); `n` valid for writes;
/// `stats` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_dgrp_counters(
    events: *mut u32,
    cap: usize,
    n: *mut usize,
    stats: *mut weft_dgrp_stats,
) -> c_int {
    guard(|| {
        if n.is_null() {
            return Err(Fail::null("n"));
        }
        // SAFETY: the caller's contract.
        let out = unsafe { array(events, cap, "events")? };
        let c = with_core(|core, _| Ok(core.dgrp_counters()?))?;
        for (o, &e) in out.iter_mut().zip(&c.events) {
            *o = e;
        }
        if !stats.is_null() {
            let s = &c.stats;
            let st = weft_dgrp_stats {
                tests: s.tests,
                passed: s.passed,
                late: s.late,
                wrong: s.wrong,
                stale: s.stale,
                answered: s.answered,
                removals: s.removals,
                own_stalls: s.own_stalls,
                rounds: s.rounds,
            };
            // SAFETY: non-NULL, valid for writes per the caller's contract.
            unsafe { stats.write(st) };
        }
        // SAFETY: the caller's contract.
        unsafe { put(n, c.events.len(), "n") }
    })
}
