//! The C ABI (`include/weft.h`, generated from this module by cbindgen).
//!
//! Thin wrappers over the operations core (`ops/`), which the Rust API calls too, so both
//! behave alike: every function here converts pointers, handles and errors only. Every
//! function is `extern "C"`, returns an
//! [`weft_error`] code as `int`, runs inside `catch_unwind` (a panic becomes
//! `WEFT_ERR_INTERNAL`), and records the detailed message of a failure for
//! [`weft_last_error`]. The instance lives in a thread-local: weft is driven by the thread that
//! called [`weft_init`]; other threads see `WEFT_ERR_NOT_INITIALIZED`.
//!
//! Handles are the engine's raw ids ([`CommId::to_raw`], [`ReqId::to_raw`]); their generation is
//! never 0, so `0` is `WEFT_COMM_NULL` / `WEFT_REQUEST_NULL`, and stale or forged handles are
//! reported as `WEFT_ERR_COMM` / `WEFT_ERR_REQUEST`. All status pointers may be NULL (status
//! ignored); every other output pointer must be non-NULL (`WEFT_ERR_ARG` otherwise).
//!
//! Requests that `weft_testall` found complete while others were still pending are kept in a
//! per-instance table until they are waited for or tested again, so no completion is lost.
//!
//! This file holds the handles and constants, the plumbing every call goes through (the
//! thread's instance, `guard`, pointer and buffer conversion), setup and teardown, and the
//! communicator calls. Sections in submodules: errors and their codes (`error.rs`), statuses
//! (`status.rs`), point-to-point and request completion (`p2p.rs`), fault tolerance (`ft.rs`),
//! the dynamic group (`dgrp.rs`), collectives with their datatypes and reduction operations,
//! including user-defined ones (`coll.rs`), and global restart (`reinit.rs`).

// The item names are the C names (cbindgen copies them verbatim).
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use weft_engine::{CommId, Status};

use crate::ops::OpsCore;
use crate::{EngineError, Error, Weft};

mod coll;
mod dgrp;
mod error;
mod ft;
mod p2p;
mod reinit;
mod status;
pub use coll::*;
pub use dgrp::*;
pub use error::*;
pub use ft::*;
pub use p2p::*;
pub use reinit::*;
pub use status::*;

use error::{set_last_error, CallResult, Fail};
use weft_error::*;

/// Communicator handle.
pub type weft_comm = u64;
/// Request handle.
pub type weft_request = u64;

/// Wildcard source for receives and probes.
pub const WEFT_ANY_SOURCE: i32 = -1;
/// Wildcard tag for receives and probes.
pub const WEFT_ANY_TAG: i32 = -1;
/// Split color that yields no communicator; also the `weft_waitany` index (as `size_t`) when
/// there was nothing to wait for.
pub const WEFT_UNDEFINED: i32 = -1;
/// Largest user tag.
pub const WEFT_MAX_TAG: i32 = (1 << 30) - 1;
const _: () = assert!(WEFT_MAX_TAG == crate::MAX_TAG);
/// The null communicator (never a valid handle).
pub const WEFT_COMM_NULL: weft_comm = 0;
/// The null request (never a valid handle); completed requests are set to it.
pub const WEFT_REQUEST_NULL: weft_request = 0;

// ------------------------------------------------------------------------------ plumbing

/// The instance of this thread, the completions `weft_testall` took but has not reported, and
/// the user-defined reduction operations.
struct State {
    weft: Weft,
    done: Done,
    ops: coll::Ops,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// Run `f` with panics caught; turn its result into a code and record the message.
fn guard(f: impl FnOnce() -> CallResult<()>) -> c_int {
    let fail = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return WEFT_SUCCESS as c_int,
        Ok(Err(fail)) => fail,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Fail::new(WEFT_ERR_INTERNAL, format!("internal error: panic in weft: {what}"))
        }
    };
    set_last_error(&fail.msg);
    fail.code as c_int
}

fn not_initialized() -> Fail {
    Fail::new(WEFT_ERR_NOT_INITIALIZED, "weft is not initialised in this thread: call weft_init first")
}

/// Run `f` with this thread's instance.
fn with_state<T>(f: impl FnOnce(&mut State) -> CallResult<T>) -> CallResult<T> {
    STATE.with(|s| match s.try_borrow_mut() {
        Ok(mut g) => g.as_mut().map_or_else(|| Err(not_initialized()), f),
        Err(_) => Err(Fail::new(WEFT_ERR_INTERNAL, "internal error: re-entrant weft call")),
    })
}

/// The table of completions `weft_testall` took but has not reported.
type Done = HashMap<u64, Result<Status, EngineError>>;

/// Run `f` with the operations core and the table of reported-later completions.
fn with_core<T>(f: impl FnOnce(&OpsCore, &mut Done) -> CallResult<T>) -> CallResult<T> {
    with_state(|s| f(s.weft.core(), &mut s.done))
}

/// Write `v` through a non-NULL output pointer.
///
/// # Safety
/// `p` must be NULL or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> CallResult<()> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
    unsafe { p.write(v) };
    Ok(())
}

/// A C array as a slice (empty when `n == 0`, whatever the pointer).
///
/// # Safety
/// If `n > 0` and `p` is non-NULL, `p` must be valid for reads and writes of `n` elements,
/// not aliased for the call.
unsafe fn array<'a, T>(p: *mut T, n: usize, what: &str) -> CallResult<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-NULL, and the caller guarantees `n` valid, unaliased elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

fn null_buf(what: &str, len: usize) -> Fail {
    Fail::new(WEFT_ERR_ARG, format!("invalid argument: `{what}` is NULL with length {len}"))
}

/// A C send buffer as a byte slice (empty when `len == 0`, whatever the pointer).
///
/// # Safety
/// If `len > 0` and `p` is non-NULL, `p` must be valid for reads of `len` bytes.
unsafe fn bytes<'a>(p: *const c_void, len: usize, what: &str) -> CallResult<&'a [u8]> {
    match (len, p.is_null()) {
        (0, _) => Ok(&[]),
        (_, true) => Err(null_buf(what, len)),
        // SAFETY: non-NULL, and the caller guarantees `len` readable bytes.
        _ => Ok(unsafe { std::slice::from_raw_parts(p.cast(), len) }),
    }
}

/// A C receive buffer as a byte slice (empty when `len == 0`, whatever the pointer).
///
/// # Safety
/// If `len > 0` and `p` is non-NULL, `p` must be valid for writes of `len` bytes, not aliased
/// for the call.
unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize, what: &str) -> CallResult<&'a mut [u8]> {
    match (len, p.is_null()) {
        (0, _) => Ok(&mut []),
        (_, true) => Err(null_buf(what, len)),
        // SAFETY: non-NULL, and the caller guarantees `len` writable, unaliased bytes.
        _ => Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), len) }),
    }
}

fn comm(c: weft_comm) -> CommId {
    CommId::from_raw(c)
}

// ----------------------------------------------------------------------- setup and teardown

/// Initialise weft in this thread (reads the `WEFT_*` environment; bootstraps through
/// weft-run, PMIx or as a singleton).
#[no_mangle]
pub extern "C" fn weft_init() -> c_int {
    guard(|| {
        STATE.with(|s| {
            let mut s =
                s.try_borrow_mut().map_err(|_| Fail::new(WEFT_ERR_INTERNAL, "re-entrant weft call"))?;
            if s.is_some() {
                return Err(Error::AlreadyInitialized.into());
            }
            *s = Some(State { weft: crate::init()?, done: HashMap::new(), ops: coll::Ops::default() });
            Ok(())
        })
    })
}

/// Leave the job (queued sends are completed first). Handles become invalid.
#[no_mangle]
pub extern "C" fn weft_finalize() -> c_int {
    guard(|| {
        // Inside weft_reinit's resilient main the instance belongs to weft_reinit: it stays.
        let st = STATE.with(|s| {
            s.try_borrow_mut()
                .map(|mut s| if s.as_ref().is_some_and(|st| !st.weft.owns()) { None } else { s.take() })
        });
        if STATE.with(|s| s.try_borrow().map(|s| s.is_some()).unwrap_or(false)) {
            return Err(Error::Reinit(
                "weft_finalize inside the resilient main: weft_reinit finalizes".into(),
            )
            .into());
        }
        match st {
            Ok(Some(st)) => Ok(st.weft.finalize()?),
            Ok(None) => Err(not_initialized()),
            Err(_) => Err(Fail::new(WEFT_ERR_INTERNAL, "re-entrant weft call")),
        }
    })
}

/// `*flag` = 1 if weft is initialised in this thread, else 0. Callable at any time.
///
/// # Safety
/// `flag` must be NULL or valid for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn weft_initialized(flag: *mut c_int) -> c_int {
    guard(|| {
        let init = STATE.with(|s| s.try_borrow().map(|s| s.is_some()).unwrap_or(true));
        // SAFETY: the caller's contract.
        unsafe { put(flag, init as c_int, "flag") }
    })
}

/// End the whole job with exit code `code`; `msg` (may be NULL) is printed. Does not return
/// once initialised.
///
/// # Safety
/// `msg` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn weft_abort(code: c_int, msg: *const c_char) -> c_int {
    let msg = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string.
        unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
    };
    guard(|| with_state(|s| s.weft.abort(code, &msg)))
}

// ----------------------------------------------------------------------------- communicators

/// `*out` = the communicator of every process of the job.
///
/// # Safety
/// `out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_world(out: *mut weft_comm) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| with_core(|core, _| unsafe { put(out, core.world().to_raw(), "out") }))
}

/// `*rank` = this process's rank in `c`.
///
/// # Safety
/// `rank` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_rank(c: weft_comm, rank: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| with_core(|core, _| unsafe { put(rank, core.comm_rank(comm(c))? as c_int, "rank") }))
}

/// `*size` = number of ranks of `c`.
///
/// # Safety
/// `size` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_size(c: weft_comm, size: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| with_core(|core, _| unsafe { put(size, core.comm_size(comm(c))? as c_int, "size") }))
}

/// Duplicate `c` (collective over `c`).
///
/// # Safety
/// `out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_dup(c: weft_comm, out: *mut weft_comm) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let id = with_core(|core, _| Ok(core.comm_dup(comm(c))?))?;
        // SAFETY: the caller's contract.
        unsafe { put(out, id.to_raw(), "out") }
    })
}

/// Split `c` by `color` (≥ 0 or `WEFT_UNDEFINED`), ranks ordered by `key` (collective over
/// `c`). `*out` = the new communicator, or `WEFT_COMM_NULL` for `WEFT_UNDEFINED`.
///
/// # Safety
/// `out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_split(
    c: weft_comm,
    color: c_int,
    key: c_int,
    out: *mut weft_comm,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let id = with_core(|core, _| Ok(core.comm_split(comm(c), color, key)?))?;
        // SAFETY: the caller's contract.
        unsafe { put(out, id.map_or(WEFT_COMM_NULL, CommId::to_raw), "out") }
    })
}

/// Free `*c` and set it to `WEFT_COMM_NULL`. Receives still posted on it complete with
/// `WEFT_ERR_COMM`. The world communicator cannot be freed (`WEFT_ERR_ARG`).
///
/// # Safety
/// `c` must be NULL or valid for reads and writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_free(c: *mut weft_comm) -> c_int {
    guard(|| {
        if c.is_null() {
            return Err(Fail::null("comm"));
        }
        // SAFETY: non-NULL and valid per the caller's contract.
        let id = unsafe { *c };
        with_core(|core, _| Ok(core.comm_free(comm(id))?))?;
        // SAFETY: as above.
        unsafe { put(c, WEFT_COMM_NULL, "comm") }
    })
}

/// Ranks of `c` known to have failed: up to `cap` of them are written to `ranks`, and `*n` =
/// how many there are in all (call again with a larger array if `*n > cap`).
///
/// # Safety
/// `ranks` must be valid for `cap` writes (or NULL with `cap == 0`); `n` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_get_failed(
    c: weft_comm,
    ranks: *mut c_int,
    cap: usize,
    n: *mut usize,
) -> c_int {
    guard(|| {
        if n.is_null() {
            return Err(Fail::null("n"));
        }
        // SAFETY: the caller's contract.
        let out = unsafe { array(ranks, cap, "ranks")? };
        let failed = with_core(|core, _| Ok(core.get_failed(comm(c))?))?;
        for (o, &r) in out.iter_mut().zip(&failed) {
            *o = r as c_int;
        }
        // SAFETY: the caller's contract.
        unsafe { put(n, failed.len(), "n") }
    })
}

/// Acknowledge the failures known now on `c` (wildcard receives then proceed); `*n` = how
/// many failed ranks of `c` are acknowledged.
///
/// # Safety
/// `n` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_ack_failed(c: weft_comm, n: *mut usize) -> c_int {
    guard(|| {
        if n.is_null() {
            return Err(Fail::null("n"));
        }
        let k = with_core(|core, _| Ok(core.ack_failed(comm(c))?))?;
        // SAFETY: the caller's contract.
        unsafe { put(n, k, "n") }
    })
}

/// Block until every member of `c` has entered the barrier.
#[no_mangle]
pub extern "C" fn weft_barrier(c: weft_comm) -> c_int {
    guard(|| with_core(|core, _| Ok(core.barrier(comm(c))?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_before_init_fail_cleanly() {
        let mut rank = -1;
        // SAFETY: `rank` is a valid `int`.
        let rc = unsafe { weft_comm_rank(1, &mut rank) };
        assert_eq!(rc, WEFT_ERR_NOT_INITIALIZED as c_int);
        // SAFETY: `weft_last_error` returns a NUL-terminated string.
        assert!(!unsafe { CStr::from_ptr(weft_last_error()) }.to_bytes().is_empty());
        let mut req = WEFT_REQUEST_NULL;
        // SAFETY: `req` is valid; the status is ignored.
        assert_eq!(unsafe { weft_wait(&mut req, std::ptr::null_mut()) }, WEFT_ERR_NOT_INITIALIZED as c_int);
        // SAFETY: a NULL flag is reported, not dereferenced.
        assert_eq!(unsafe { weft_initialized(std::ptr::null_mut()) }, WEFT_ERR_ARG as c_int);
    }
}
