//! C ABI of point-to-point communication: blocking and non-blocking send and receive, probe,
//! and the completion of requests (`weft_wait`, `weft_test`, `weft_waitall`, `weft_waitany`,
//! `weft_testall`, which also complete the requests of the other sections). Same conventions
//! as the rest of the C ABI.

use std::ffi::{c_int, c_void};

use weft_engine::{ReqId, Status};

use super::error::{CallResult, Fail};
use super::status::{put_status, status_of, weft_status, EMPTY};
use super::{
    array, bytes, bytes_mut, comm, guard, put, weft_comm, weft_request, with_core, with_state, Done,
    WEFT_REQUEST_NULL, WEFT_UNDEFINED,
};
use crate::ops::OpsCore;
use crate::EngineError;

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
