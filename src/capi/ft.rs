//! C ABI of the fault-tolerance operations (ULFM): revoke, agree / iagree, shrink / ishrink,
//! acknowledgement (current spec: `weft_comm_ack_failed` / `weft_comm_get_failed`, above; older
//! spec: `weft_comm_failure_ack` / `weft_comm_failure_get_acked`), error scope and uniform mode.
//! Same conventions as the rest of the C ABI.

use std::ffi::c_int;

use weft_engine::{CommId, ErrScope};

use super::{array, comm, guard, put, weft_comm, weft_request, with_state, Fail, R, WEFT_COMM_NULL};
use crate::EngineError;

/// Error scope: only operations that involve a failed process report it (default).
pub const WEFT_SCOPE_LOCAL: c_int = 0;
/// Error scope: any failure of a member raises errors on the communicator until acknowledged.
pub const WEFT_SCOPE_GROUP: c_int = 1;
/// Error scope: any failure in the job raises errors on the communicator until acknowledged.
pub const WEFT_SCOPE_UNIVERSE: c_int = 2;

/// Run `f` with the FT layer and the engine of this thread's instance.
fn with_ft<T>(f: impl FnOnce(&weft_ft::Ft, &mut weft_engine::Engine) -> R<T>) -> R<T> {
    with_state(|s| {
        let ft = s.weft.inner.ft.clone();
        s.weft.with_engine(|e| f(&ft, e))
    })
}

/// Revoke `c` at every live member; returns at once.
#[no_mangle]
pub extern "C" fn weft_comm_revoke(c: weft_comm) -> c_int {
    guard(|| with_ft(|ft, e| Ok(ft.revoke(e.ext(), comm(c))?)))
}

/// `*flag` = 1 if `c` was revoked, else 0.
///
/// # Safety
/// `flag` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_is_revoked(c: weft_comm, flag: *mut c_int) -> c_int {
    guard(|| {
        let r = with_ft(|_, e| Ok(e.is_revoked(comm(c))?))?;
        // SAFETY: the caller's contract.
        unsafe { put(flag, r as c_int, "flag") }
    })
}

/// Fault-tolerant agreement: `*flag` in: this member's contribution; out: the AND over the
/// live members. Returns `WEFT_ERR_PROC_FAILED` at every member alike when a member failed and
/// not every member acknowledged it (`*flag` is set then too). Works on a revoked communicator.
///
/// # Safety
/// `flag` must be valid for reads and writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_agree(c: weft_comm, flag: *mut u64) -> c_int {
    guard(|| {
        if flag.is_null() {
            return Err(Fail::null("flag"));
        }
        with_ft(|ft, e| {
            // SAFETY: non-NULL, valid for reads and writes per the contract; waited for here.
            let req = unsafe { ft.iagree(e.ext(), comm(c), *flag, flag)? };
            e.wait(req)?;
            Ok(())
        })
    })
}

/// Non-blocking agreement: `*flag` is read now and written with the agreed AND when `*req`
/// completes (`weft_wait` / `weft_test`).
///
/// # Safety
/// `flag` must stay valid for reads and writes until the request completes; `req` valid for
/// writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_iagree(c: weft_comm, flag: *mut u64, req: *mut weft_request) -> c_int {
    guard(|| {
        if flag.is_null() || req.is_null() {
            return Err(Fail::null(if flag.is_null() { "flag" } else { "req" }));
        }
        with_ft(|ft, e| {
            // SAFETY: the caller keeps `flag` valid until completion.
            let id = unsafe { ft.iagree(e.ext(), comm(c), *flag, flag)? };
            // SAFETY: the caller's contract.
            unsafe { put(req, id.to_raw(), "req") }
        })
    })
}

/// Shrink `c`: `*newcomm` = a new communicator of the live members, in rank order (agreed
/// failed set and context id). Works on a revoked communicator.
///
/// # Safety
/// `newcomm` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_shrink(c: weft_comm, newcomm: *mut weft_comm) -> c_int {
    guard(|| {
        if newcomm.is_null() {
            return Err(Fail::null("newcomm"));
        }
        let id = with_ft(|ft, e| Ok(ft.shrink(e.ext(), comm(c))?))?;
        // SAFETY: the caller's contract.
        unsafe { put(newcomm, id.to_raw(), "newcomm") }
    })
}

/// Non-blocking shrink: `*newcomm` is written when `*req` completes (until then it is
/// `WEFT_COMM_NULL`). Several may be in flight on different communicators.
///
/// # Safety
/// `newcomm` must stay valid for writes until the request completes; `req` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_ishrink(
    c: weft_comm,
    newcomm: *mut weft_comm,
    req: *mut weft_request,
) -> c_int {
    guard(|| {
        if newcomm.is_null() || req.is_null() {
            return Err(Fail::null(if newcomm.is_null() { "newcomm" } else { "req" }));
        }
        // SAFETY: the caller's contract.
        unsafe { newcomm.write(WEFT_COMM_NULL) };
        with_ft(|ft, e| {
            // SAFETY: the caller keeps `newcomm` valid until completion.
            let id = unsafe { ft.ishrink(e.ext(), comm(c), newcomm)? };
            // SAFETY: the caller's contract.
            unsafe { put(req, id.to_raw(), "req") }
        })
    })
}

/// Older ULFM spec: acknowledge every failure known now on `c`.
#[no_mangle]
pub extern "C" fn weft_comm_failure_ack(c: weft_comm) -> c_int {
    guard(|| with_ft(|_, e| Ok(e.ack_failed(comm(c)).map(|_| ())?)))
}

/// Older ULFM spec: ranks of `c` whose failure was acknowledged: up to `cap` written to
/// `ranks`, `*n` = how many in all.
///
/// # Safety
/// `ranks` must be valid for `cap` writes (or NULL with `cap == 0`); `n` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_comm_failure_get_acked(
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
        let acked = with_ft(|_, e| Ok(e.get_acked(comm(c))?))?;
        for (o, &r) in out.iter_mut().zip(&acked) {
            *o = r as c_int;
        }
        // SAFETY: the caller's contract.
        unsafe { put(n, acked.len(), "n") }
    })
}

/// Set the error scope of `c`: `WEFT_SCOPE_LOCAL`, `WEFT_SCOPE_GROUP` or `WEFT_SCOPE_UNIVERSE`.
#[no_mangle]
pub extern "C" fn weft_comm_set_error_scope(c: weft_comm, scope: c_int) -> c_int {
    guard(|| {
        let s = match scope {
            WEFT_SCOPE_LOCAL => ErrScope::Local,
            WEFT_SCOPE_GROUP => ErrScope::Group,
            WEFT_SCOPE_UNIVERSE => ErrScope::Universe,
            _ => return Err(EngineError::InvalidArg(format!("error scope {scope}")).into()),
        };
        with_ft(|_, e| Ok(e.set_error_scope(comm(c), s)?))
    })
}

/// Uniform mode on `c` (`on` ≠ 0): covered collectives (now: `weft_barrier`) are followed by an
/// implicit agreement so every member returns the same outcome.
#[no_mangle]
pub extern "C" fn weft_comm_set_uniform(c: weft_comm, on: c_int) -> c_int {
    guard(|| with_ft(|ft, e| Ok(ft.set_uniform(e.ext(), comm(c), on != 0)?)))
}

/// Uniform-mode hook for the C collectives: the uniform result of a local one.
pub(crate) fn uniform_after(
    e: &mut weft_engine::Engine,
    ft: &weft_ft::Ft,
    c: CommId,
    r: weft_engine::Result<()>,
) -> weft_engine::Result<()> {
    ft.uniform_after(e.ext(), c, r)
}
