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
//! Sections in submodules: fault tolerance (`ft.rs`) and collectives with their datatypes and
//! reduction operations, including user-defined ones (`coll.rs`).

// The item names are the C names (cbindgen copies them verbatim).
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use weft_engine::{CommId, ReqId, Status};

use crate::ops::OpsCore;
use crate::{EngineError, Error, Weft};

mod coll;
mod dgrp;
mod ft;
pub use coll::*;
pub use dgrp::*;
pub use ft::*;

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

/// Error codes. Each engine/facade error variant has exactly one code; `WEFT_ERR_ARG` also
/// covers bad arguments caught by the C layer (NULL pointers), `WEFT_ERR_NOT_INITIALIZED`,
/// `WEFT_ERR_INTERNAL` (a caught panic), `WEFT_ERR_OP` and `WEFT_ERR_DATATYPE` exist only in
/// the C ABI. New codes are appended, so existing values never change.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_error {
    WEFT_SUCCESS = 0,
    /// `InvalidRank`
    WEFT_ERR_RANK,
    /// `InvalidTag`
    WEFT_ERR_TAG,
    /// `Truncated` (the status holds the incoming size)
    WEFT_ERR_TRUNCATE,
    /// `InvalidComm`
    WEFT_ERR_COMM,
    /// `InvalidRequest`
    WEFT_ERR_REQUEST,
    /// `InvalidArg`, or a NULL pointer where one is not allowed
    WEFT_ERR_ARG,
    /// `ProcFailed`
    WEFT_ERR_PROC_FAILED,
    /// `ProcFailedPending` (the request stays pending)
    WEFT_ERR_PROC_FAILED_PENDING,
    /// `Revoked`
    WEFT_ERR_REVOKED,
    /// `Transport`
    WEFT_ERR_TRANSPORT,
    /// `Malformed`
    WEFT_ERR_MALFORMED,
    /// facade `Runtime` (bootstrap through weft-run / PMIx failed)
    WEFT_ERR_RUNTIME,
    /// facade `Config` (bad `WEFT_*` setting)
    WEFT_ERR_CONFIG,
    /// facade `Topology` (hwloc discovery or process binding failed)
    WEFT_ERR_TOPOLOGY,
    /// called before `weft_init` (or after `weft_finalize`), or from another thread
    WEFT_ERR_NOT_INITIALIZED,
    /// facade `AlreadyInitialized`
    WEFT_ERR_ALREADY_INITIALIZED,
    /// a bug in weft (a caught panic)
    WEFT_ERR_INTERNAL,
    /// invalid reduction operation: unknown or freed handle, `WEFT_OP_NULL`, or an operation
    /// that does not apply to the datatype (collectives)
    WEFT_ERR_OP,
    /// invalid datatype value (collectives)
    WEFT_ERR_DATATYPE,
}

use weft_error::*;

/// What a completed receive, probe or request reports.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct weft_status {
    /// Sender's rank (for sends: the destination); `WEFT_ANY_SOURCE` if unknown.
    pub source: i32,
    /// Tag of the message; `WEFT_ANY_TAG` if unknown.
    pub tag: i32,
    /// Bytes in the message (for a truncated receive: the incoming size).
    pub count: usize,
    /// The request's own error code (`weft_waitall` / `weft_testall` report per request).
    pub error: i32,
}

/// The code of a facade error.
pub fn error_code(e: &Error) -> weft_error {
    match e {
        Error::Engine(e) => engine_error_code(e),
        Error::Runtime(_) => WEFT_ERR_RUNTIME,
        Error::Config { .. } => WEFT_ERR_CONFIG,
        Error::AlreadyInitialized => WEFT_ERR_ALREADY_INITIALIZED,
        // hwloc / binding failure at init. Shares RUNTIME until it gets its own code (header).
        Error::Topology(_) => WEFT_ERR_TOPOLOGY,
    }
}

/// The code of an engine error.
pub fn engine_error_code(e: &EngineError) -> weft_error {
    match e {
        EngineError::InvalidRank { .. } => WEFT_ERR_RANK,
        EngineError::InvalidTag(_) => WEFT_ERR_TAG,
        EngineError::Truncated { .. } => WEFT_ERR_TRUNCATE,
        EngineError::InvalidComm => WEFT_ERR_COMM,
        EngineError::InvalidRequest => WEFT_ERR_REQUEST,
        EngineError::InvalidArg(_) => WEFT_ERR_ARG,
        EngineError::ProcFailed { .. } => WEFT_ERR_PROC_FAILED,
        EngineError::ProcFailedPending => WEFT_ERR_PROC_FAILED_PENDING,
        EngineError::Revoked => WEFT_ERR_REVOKED,
        EngineError::Transport(_) => WEFT_ERR_TRANSPORT,
        EngineError::Malformed { .. } => WEFT_ERR_MALFORMED,
        // Unavoidable: the engine's `Error` is `#[non_exhaustive]`. A variant added there
        // reports INTERNAL until it is given its own code here.
        _ => WEFT_ERR_INTERNAL,
    }
}

// ------------------------------------------------------------------------------ plumbing

/// A failed call: its code and the message for `weft_last_error`.
struct Fail {
    code: weft_error,
    msg: String,
}

impl Fail {
    fn new(code: weft_error, msg: impl Into<String>) -> Fail {
        Fail { code, msg: msg.into() }
    }
    fn null(what: &str) -> Fail {
        Fail::new(WEFT_ERR_ARG, format!("invalid argument: `{what}` is NULL"))
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::new(error_code(&e), e.to_string())
    }
}

impl From<EngineError> for Fail {
    fn from(e: EngineError) -> Fail {
        Fail::new(engine_error_code(&e), e.to_string())
    }
}

/// Result of a C call's body: the value, or the failure to report as a code.
type CallResult<T> = Result<T, Fail>;

/// The instance of this thread, the completions `weft_testall` took but has not reported, and
/// the user-defined reduction operations.
struct State {
    weft: Weft,
    done: Done,
    ops: coll::Ops,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = c);
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

/// Write a status through an optional (nullable) pointer.
///
/// # Safety
/// `p` must be NULL or valid for a write of `weft_status`.
unsafe fn put_status(p: *mut weft_status, st: weft_status) {
    if !p.is_null() {
        // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
        unsafe { p.write(st) };
    }
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

const EMPTY: weft_status = weft_status { source: WEFT_ANY_SOURCE, tag: WEFT_ANY_TAG, count: 0, error: 0 };

/// The status a finished operation reports (a truncated receive keeps its sender, tag and the
/// incoming size).
fn status_of(r: &Result<Status, EngineError>) -> weft_status {
    match r {
        Ok(s) => weft_status { source: s.source as i32, tag: s.tag, count: s.count, error: 0 },
        Err(EngineError::Truncated { incoming, sender, tag, .. }) => weft_status {
            source: *sender as i32,
            tag: *tag,
            count: *incoming,
            error: WEFT_ERR_TRUNCATE as i32,
        },
        Err(e) => weft_status { error: engine_error_code(e) as i32, ..EMPTY },
    }
}

fn comm(c: weft_comm) -> CommId {
    CommId::from_raw(c)
}

/// Complete request `id` if it is done (`wait`: block until it is). `None` while pending
/// (including `ProcFailedPending`, which is returned as `Some(Err)` but leaves it pending).
fn finish(
    core: &OpsCore,
    done: &mut Done,
    id: weft_request,
    wait: bool,
) -> Option<Result<Status, EngineError>> {
    if let Some(r) = done.remove(&id) {
        return Some(r);
    }
    let rid = ReqId::from_raw(id);
    let r = if wait { core.wait(rid).map(Some) } else { core.test(rid) };
    r.transpose()
}

/// Report a finished request: fill the status, clear the handle unless the request is still
/// pending (`ProcFailedPending`) or was never valid, and return its result.
///
/// # Safety
/// `req` must be valid for writes; `st` NULL or valid for writes.
unsafe fn report(
    r: Result<Status, EngineError>,
    req: *mut weft_request,
    st: *mut weft_status,
) -> CallResult<()> {
    // SAFETY: forwarded contract.
    unsafe { put_status(st, status_of(&r)) };
    if !matches!(r, Err(EngineError::ProcFailedPending | EngineError::InvalidRequest)) {
        // SAFETY: forwarded contract.
        unsafe { *req = WEFT_REQUEST_NULL };
    }
    r.map(|_| ()).map_err(Fail::from)
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
        let st = STATE.with(|s| s.try_borrow_mut().map(|mut s| s.take()));
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

// ---------------------------------------------------------------------------- point to point

/// Blocking send of `len` bytes of `buf` to rank `dst` of `c` with `tag` (0..=WEFT_MAX_TAG).
///
/// # Safety
/// `buf` must be valid for reads of `len` bytes (it may be NULL when `len == 0`).
#[no_mangle]
pub unsafe extern "C" fn weft_send(
    buf: *const c_void,
    len: usize,
    dst: c_int,
    tag: c_int,
    c: weft_comm,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let buf = unsafe { bytes(buf, len, "buf")? };
        with_core(|core, _| Ok(core.send(comm(c), buf, core.dest(comm(c), dst)?, tag)?))
    })
}

/// Blocking receive into `buf` (capacity `len`) from `src` (or `WEFT_ANY_SOURCE`) with `tag`
/// (or `WEFT_ANY_TAG`). A longer message returns `WEFT_ERR_TRUNCATE` with `st->count` = its
/// size. `st` may be NULL.
///
/// # Safety
/// `buf` must be valid for writes of `len` bytes (or NULL when `len == 0`); `st` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn weft_recv(
    buf: *mut c_void,
    len: usize,
    src: c_int,
    tag: c_int,
    c: weft_comm,
    st: *mut weft_status,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let buf = unsafe { bytes_mut(buf, len, "buf")? };
        let r = with_core(|core, _| Ok(core.recv(comm(c), buf, src, tag)))?;
        // SAFETY: the caller's contract.
        unsafe { put_status(st, status_of(&r)) };
        r.map(|_| ()).map_err(Fail::from)
    })
}

/// Start a send; `*req` = its handle. `buf` must not be modified until the request completes.
///
/// # Safety
/// `buf` must stay valid for reads of `len` bytes, unmodified, until the request completes;
/// `req` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_isend(
    buf: *const c_void,
    len: usize,
    dst: c_int,
    tag: c_int,
    c: weft_comm,
    req: *mut weft_request,
) -> c_int {
    guard(|| {
        if req.is_null() {
            return Err(Fail::null("req"));
        }
        with_core(|core, _| {
            let dst = core.dest(comm(c), dst)?;
            // SAFETY: the caller guarantees `buf` stays valid and unmodified until completion.
            let id = unsafe { core.isend(comm(c), buf.cast(), len, dst, tag)? };
            // SAFETY: the caller's contract.
            unsafe { put(req, id.to_raw(), "req") }
        })
    })
}

/// Post a receive; `*req` = its handle. `buf` must not be accessed until the request completes.
///
/// # Safety
/// `buf` must stay valid for writes of `len` bytes, otherwise unaccessed, until the request
/// completes; `req` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_irecv(
    buf: *mut c_void,
    len: usize,
    src: c_int,
    tag: c_int,
    c: weft_comm,
    req: *mut weft_request,
) -> c_int {
    guard(|| {
        if req.is_null() {
            return Err(Fail::null("req"));
        }
        with_core(|core, _| {
            // SAFETY: the caller guarantees `buf` stays valid and unaccessed until completion.
            let id = unsafe { core.irecv(comm(c), buf.cast(), len, src, tag)? };
            // SAFETY: the caller's contract.
            unsafe { put(req, id.to_raw(), "req") }
        })
    })
}

/// Wait for `*req`; then `*req` = `WEFT_REQUEST_NULL` (also when it completed with an error,
/// except `WEFT_ERR_PROC_FAILED_PENDING`, which leaves it pending). A NULL request returns at
/// once with an empty status.
///
/// # Safety
/// `req` must be NULL or valid for reads and writes; `st` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_wait(req: *mut weft_request, st: *mut weft_status) -> c_int {
    guard(|| {
        if req.is_null() {
            return Err(Fail::null("req"));
        }
        // SAFETY: non-NULL and valid per the caller's contract.
        let id = unsafe { *req };
        if id == WEFT_REQUEST_NULL {
            // SAFETY: the caller's contract.
            unsafe { put_status(st, EMPTY) };
            return with_state(|_| Ok(()));
        }
        let r = with_core(|core, done| Ok(finish(core, done, id, true)))?;
        let r = r.unwrap_or(Err(EngineError::InvalidRequest));
        // SAFETY: the caller's contract.
        unsafe { report(r, req, st) }
    })
}

/// `*flag` = 1 and as [`weft_wait`] if `*req` is complete (or NULL); else `*flag` = 0.
///
/// # Safety
/// `req` must be NULL or valid for reads and writes; `flag` NULL or valid for writes; `st`
/// NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_test(req: *mut weft_request, flag: *mut c_int, st: *mut weft_status) -> c_int {
    guard(|| {
        if req.is_null() || flag.is_null() {
            return Err(Fail::null(if req.is_null() { "req" } else { "flag" }));
        }
        // SAFETY: non-NULL and valid per the caller's contract.
        let id = unsafe { *req };
        if id == WEFT_REQUEST_NULL {
            // SAFETY: the caller's contract.
            unsafe { put_status(st, EMPTY) };
            // SAFETY: the caller's contract.
            return with_state(|_| unsafe { put(flag, 1, "flag") });
        }
        let r = with_core(|core, done| Ok(finish(core, done, id, false)))?;
        let complete = matches!(&r, Some(r) if !matches!(r, Err(EngineError::ProcFailedPending)));
        // SAFETY: the caller's contract.
        unsafe { put(flag, complete as c_int, "flag")? };
        match r {
            None => Ok(()),
            // SAFETY: the caller's contract.
            Some(r) => unsafe { report(r, req, st) },
        }
    })
}

/// Wait for all `n` requests (NULL entries are skipped) and set them to `WEFT_REQUEST_NULL`.
/// Returns the first error in index order; `sts[i].error` holds each request's own code.
///
/// # Safety
/// `reqs` must be valid for `n` reads and writes; `sts` NULL or valid for `n` writes.
#[no_mangle]
pub unsafe extern "C" fn weft_waitall(n: usize, reqs: *mut weft_request, sts: *mut weft_status) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let reqs = unsafe { array(reqs, n, "reqs")? };
        // SAFETY: the caller's contract.
        unsafe { wait_all(reqs, sts) }
    })
}

/// The body of [`weft_waitall`].
///
/// # Safety
/// `sts` must be NULL or valid for `reqs.len()` writes.
unsafe fn wait_all(reqs: &mut [weft_request], sts: *mut weft_status) -> CallResult<()> {
    let mut first = Ok(());
    for (i, req) in reqs.iter_mut().enumerate() {
        let st = if sts.is_null() { sts } else { sts.wrapping_add(i) };
        if *req == WEFT_REQUEST_NULL {
            // SAFETY: `st` is NULL or element `i` of the caller's array.
            unsafe { put_status(st, EMPTY) };
            continue;
        }
        let r = with_core(|core, done| Ok(finish(core, done, *req, true)))?;
        let r = r.unwrap_or(Err(EngineError::InvalidRequest));
        // SAFETY: `req` is an element of the caller's array; `st` as above.
        let r = unsafe { report(r, req, st) };
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Wait until one of the `n` requests completes: `*index` = its index, its status in `*st`,
/// and it is set to `WEFT_REQUEST_NULL`. If every entry is NULL, returns at once with
/// `*index` = `(size_t)WEFT_UNDEFINED`.
///
/// # Safety
/// `reqs` must be valid for `n` reads and writes; `index` NULL or valid for writes; `st` NULL
/// or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_waitany(
    n: usize,
    reqs: *mut weft_request,
    index: *mut usize,
    st: *mut weft_status,
) -> c_int {
    guard(|| {
        if index.is_null() {
            return Err(Fail::null("index"));
        }
        // SAFETY: the caller's contract.
        let reqs = unsafe { array(reqs, n, "reqs")? };
        let found = with_core(|core, done| {
            let mut spins = 0u32;
            loop {
                let mut live = 0;
                for (i, &id) in reqs.iter().enumerate() {
                    if id == WEFT_REQUEST_NULL {
                        continue;
                    }
                    live += 1;
                    if let Some(r) = finish(core, done, id, false) {
                        return Ok(Some((i, r)));
                    }
                }
                if live == 0 {
                    return Ok(None);
                }
                spins += 1;
                if spins >= 16 {
                    std::thread::yield_now();
                }
            }
        })?;
        match found {
            None => {
                // SAFETY: the caller's contract.
                unsafe { put_status(st, EMPTY) };
                // SAFETY: the caller's contract.
                unsafe { put(index, WEFT_UNDEFINED as usize, "index") }
            }
            Some((i, r)) => {
                // SAFETY: the caller's contract.
                unsafe { put(index, i, "index")? };
                // SAFETY: `reqs[i]` is an element of the caller's array; `st` per contract.
                unsafe { report(r, &mut reqs[i], st) }
            }
        }
    })
}

/// If all `n` requests are complete (NULL entries count as complete): `*flag` = 1, and as
/// [`weft_waitall`]. Otherwise `*flag` = 0 and the handles stay valid (completions already
/// seen are kept until the requests are waited for or tested again).
///
/// # Safety
/// `reqs` must be valid for `n` reads and writes; `flag` NULL or valid for writes; `sts` NULL
/// or valid for `n` writes.
#[no_mangle]
pub unsafe extern "C" fn weft_testall(
    n: usize,
    reqs: *mut weft_request,
    flag: *mut c_int,
    sts: *mut weft_status,
) -> c_int {
    guard(|| {
        if flag.is_null() {
            return Err(Fail::null("flag"));
        }
        // SAFETY: the caller's contract.
        let reqs = unsafe { array(reqs, n, "reqs")? };
        let all = with_core(|core, done| {
            let mut all = true;
            for &id in reqs.iter().filter(|&&id| id != WEFT_REQUEST_NULL) {
                if done.contains_key(&id) {
                    continue;
                }
                match finish(core, done, id, false) {
                    None => all = false,
                    Some(Err(EngineError::ProcFailedPending)) => {
                        return Err(Fail::from(EngineError::ProcFailedPending));
                    }
                    Some(r) => {
                        done.insert(id, r);
                    }
                }
            }
            Ok(all)
        });
        // SAFETY: the caller's contract.
        unsafe { put(flag, all.as_ref().is_ok_and(|&a| a) as c_int, "flag")? };
        if !all? {
            return Ok(());
        }
        // SAFETY: the caller's contract; every result is in the table now, so this does not
        // block.
        unsafe { wait_all(reqs, sts) }
    })
}

/// Wait until a message matching `(src, tag)` on `c` has arrived; its status in `*st`.
///
/// # Safety
/// `st` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_probe(src: c_int, tag: c_int, c: weft_comm, st: *mut weft_status) -> c_int {
    guard(|| {
        let s = with_core(|core, _| Ok(core.probe(comm(c), src, tag)?))?;
        // SAFETY: the caller's contract.
        unsafe { put_status(st, status_of(&Ok(s))) };
        Ok(())
    })
}

/// `*flag` = 1 and the status of a matching message if one has arrived, else `*flag` = 0.
///
/// # Safety
/// `flag` must be NULL or valid for writes; `st` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_iprobe(
    src: c_int,
    tag: c_int,
    c: weft_comm,
    flag: *mut c_int,
    st: *mut weft_status,
) -> c_int {
    guard(|| {
        if flag.is_null() {
            return Err(Fail::null("flag"));
        }
        let s = with_core(|core, _| Ok(core.iprobe(comm(c), src, tag)?))?;
        // SAFETY: the caller's contract.
        unsafe { put(flag, s.is_some() as c_int, "flag")? };
        if let Some(s) = s {
            // SAFETY: the caller's contract.
            unsafe { put_status(st, status_of(&Ok(s))) };
        }
        Ok(())
    })
}

// --------------------------------------------------------------------------------- errors

const ALL_CODES: [weft_error; 20] = [
    WEFT_SUCCESS,
    WEFT_ERR_RANK,
    WEFT_ERR_TAG,
    WEFT_ERR_TRUNCATE,
    WEFT_ERR_COMM,
    WEFT_ERR_REQUEST,
    WEFT_ERR_ARG,
    WEFT_ERR_PROC_FAILED,
    WEFT_ERR_PROC_FAILED_PENDING,
    WEFT_ERR_REVOKED,
    WEFT_ERR_TRANSPORT,
    WEFT_ERR_MALFORMED,
    WEFT_ERR_RUNTIME,
    WEFT_ERR_CONFIG,
    WEFT_ERR_TOPOLOGY,
    WEFT_ERR_NOT_INITIALIZED,
    WEFT_ERR_ALREADY_INITIALIZED,
    WEFT_ERR_INTERNAL,
    WEFT_ERR_OP,
    WEFT_ERR_DATATYPE,
];

fn error_str(code: weft_error) -> &'static CStr {
    match code {
        WEFT_SUCCESS => c"success",
        WEFT_ERR_RANK => c"invalid rank",
        WEFT_ERR_TAG => c"invalid tag",
        WEFT_ERR_TRUNCATE => c"message truncated",
        WEFT_ERR_COMM => c"invalid communicator",
        WEFT_ERR_REQUEST => c"invalid request",
        WEFT_ERR_ARG => c"invalid argument",
        WEFT_ERR_PROC_FAILED => c"process failure",
        WEFT_ERR_PROC_FAILED_PENDING => c"wildcard receive pending on unacknowledged process failure",
        WEFT_ERR_REVOKED => c"communicator revoked",
        WEFT_ERR_TRANSPORT => c"transport error",
        WEFT_ERR_MALFORMED => c"malformed message",
        WEFT_ERR_RUNTIME => c"runtime (bootstrap) error",
        WEFT_ERR_CONFIG => c"configuration error",
        WEFT_ERR_TOPOLOGY => c"topology or binding error",
        WEFT_ERR_NOT_INITIALIZED => c"weft is not initialised",
        WEFT_ERR_ALREADY_INITIALIZED => c"weft is already initialised",
        WEFT_ERR_INTERNAL => c"internal error",
        WEFT_ERR_OP => c"invalid reduction operation",
        WEFT_ERR_DATATYPE => c"invalid datatype",
    }
}

/// A static description of error code `code` ("unknown error code" for other values).
#[no_mangle]
pub extern "C" fn weft_error_string(code: c_int) -> *const c_char {
    catch_unwind(|| match ALL_CODES.iter().find(|&&c| c as c_int == code) {
        Some(&c) => error_str(c).as_ptr(),
        None => c"unknown error code".as_ptr(),
    })
    .unwrap_or(c"internal error".as_ptr())
}

/// The detailed message of the last failed call in this thread ("" if none). Valid until the
/// next failing weft call in this thread.
#[no_mangle]
pub extern "C" fn weft_last_error() -> *const c_char {
    catch_unwind(|| LAST_ERROR.try_with(|l| l.borrow().as_ptr()).unwrap_or(c"".as_ptr()))
        .unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_described() {
        for (i, &c) in ALL_CODES.iter().enumerate() {
            assert_eq!(c as usize, i);
            // SAFETY: `weft_error_string` returns a static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(weft_error_string(c as c_int)) };
            assert!(!s.to_bytes().is_empty());
        }
    }

    #[test]
    fn engine_variants_map_one_to_one() {
        let errs = [
            EngineError::InvalidRank { rank: 7, size: 4 },
            EngineError::InvalidTag(-5),
            EngineError::Truncated { incoming: 8, capacity: 4, sender: 1, tag: 2 },
            EngineError::InvalidComm,
            EngineError::InvalidRequest,
            EngineError::InvalidArg("x".into()),
            EngineError::ProcFailed { ranks: vec![1] },
            EngineError::ProcFailedPending,
            EngineError::Revoked,
            EngineError::Malformed { peer: 0, what: "x" },
        ];
        let mut codes: Vec<_> = errs.iter().map(|e| engine_error_code(e) as i32).collect();
        codes.extend([Error::AlreadyInitialized].iter().map(|e| error_code(e) as i32));
        let n = codes.len();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), n);
        assert!(!codes.contains(&(WEFT_ERR_INTERNAL as i32)));
    }

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
