//! Completion of arrays of requests beyond `MPI_Waitall`: `MPI_Waitany`, `MPI_Testany`,
//! `MPI_Waitsome`, `MPI_Testsome` and `MPI_Testall`, with the standard's rules:
//! `MPI_REQUEST_NULL` and inactive persistent requests are skipped; with none active the
//! any/some functions return `MPI_UNDEFINED` (and the empty status). `MPI_Waitsome` and
//! `MPI_Testsome` report failed requests with `MPI_ERR_IN_STATUS` and each status's
//! `MPI_ERROR` (the error itself when statuses are ignored); `MPI_Testall` completes nothing
//! unless every request is complete.
//!
//! The blocking ones poll: each round tests every active request once (a test runs the
//! progress engine), then pauses with the lock released (`request::idle`).

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::export;
use crate::obj::request::{complete, empty_status, idle, inactive, peek, settled, store, Outcome};
use crate::state::{Mpi, On};

/// Check an array argument of `count` requests.
fn check_array(count: c_int, requests: *mut MPI_Request) -> MpiResult<usize> {
    if count < 0 {
        return Err(err!(MPI_ERR_COUNT, "invalid count {count}"));
    }
    if count > 0 && requests.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `requests` is NULL"));
    }
    Ok(count as usize)
}

/// Test the active requests once; the first that completed, with its index. `Ok(None)` with
/// `any` false if no request is active.
///
/// # Safety
/// `requests` holds `n` handles.
unsafe fn test_any(
    m: &Mpi,
    n: usize,
    requests: *mut MPI_Request,
    any: &mut bool,
) -> MpiResult<Option<(usize, Outcome)>> {
    *any = false;
    for i in 0..n {
        // SAFETY: `requests` holds `n` handles.
        let h = unsafe { *requests.add(i) };
        if inactive(m, h) {
            continue;
        }
        *any = true;
        if let Some(out) = complete(m, h, false)? {
            // SAFETY: as above.
            unsafe { *requests.add(i) = settled(m, h) };
            return Ok(Some((i, out)));
        }
    }
    Ok(None)
}

/// Complete every active request that is done; how many (`MPI_UNDEFINED` if none is
/// active), with indices and statuses written and the first error.
///
/// # Safety
/// `requests` holds `n` handles; `indices` room for `n` (non-null), `statuses` for `n` or
/// null.
unsafe fn test_some(
    m: &Mpi,
    n: usize,
    requests: *mut MPI_Request,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> MpiResult<(c_int, Option<MpiErr>)> {
    let (mut done, mut any, mut failed) = (0usize, false, None);
    for i in 0..n {
        // SAFETY: `requests` holds `n` handles.
        let h = unsafe { *requests.add(i) };
        if inactive(m, h) {
            continue;
        }
        any = true;
        if let Some((st, e)) = complete(m, h, false)? {
            // SAFETY: the arrays hold `n` entries; `done < n`.
            unsafe {
                *requests.add(i) = settled(m, h);
                *indices.add(done) = i as c_int;
                if !statuses.is_null() {
                    *statuses.add(done) = st;
                }
            }
            done += 1;
            if let Some(e) = e {
                failed.get_or_insert(e);
            }
        }
    }
    Ok((if any { done as c_int } else { MPI_UNDEFINED }, failed))
}

/// The error a some/all function returns for a failed request.
fn in_status(e: MpiErr, statuses: *mut MPI_Status) -> MpiErr {
    if statuses.is_null() {
        e
    } else {
        e.with_class(MPI_ERR_IN_STATUS)
    }
}

export! {
    /// `MPI_Waitany`: wait until one active request completes.
    fn MPI_Waitany / PMPI_Waitany(count: c_int, requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status) on On::NoObject;
    |m| {
        let n = check_array(count, requests)?;
        if index.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `index` is NULL"));
        }
        let (mut any, mut spins) = (false, 0);
        loop {
            // SAFETY: `requests` holds `n` handles (checked non-null when n > 0).
            if let Some((i, (st, e))) = unsafe { test_any(m, n, requests, &mut any)? } {
                // SAFETY: output pointers from the caller.
                unsafe {
                    *index = i as c_int;
                    store(status, st);
                }
                return e.map_or(Ok(()), Err);
            }
            if !any {
                // SAFETY: output pointers from the caller.
                unsafe {
                    *index = MPI_UNDEFINED;
                    store(status, empty_status());
                }
                return Ok(());
            }
            idle(&mut spins);
        }
    }
}

export! {
    /// `MPI_Testany`: complete one active request if one is done.
    fn MPI_Testany / PMPI_Testany(count: c_int, requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) on On::NoObject;
    |m| {
        let n = check_array(count, requests)?;
        if index.is_null() || flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `index` or `flag` is NULL"));
        }
        let mut any = false;
        // SAFETY: `requests` holds `n` handles.
        let r = unsafe { test_any(m, n, requests, &mut any)? };
        // SAFETY: output pointers from the caller.
        unsafe {
            match r {
                Some((i, (st, e))) => {
                    *index = i as c_int;
                    *flag = 1;
                    store(status, st);
                    return e.map_or(Ok(()), Err);
                }
                None => {
                    *index = MPI_UNDEFINED;
                    *flag = !any as c_int;
                    if !any {
                        store(status, empty_status());
                    }
                }
            }
        }
        Ok(())
    }
}

export! {
    /// `MPI_Waitsome`: wait until at least one active request completes; complete all that
    /// are done.
    fn MPI_Waitsome / PMPI_Waitsome(incount: c_int, requests: *mut MPI_Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status) on On::NoObject;
    |m| {
        let n = check_array(incount, requests)?;
        if outcount.is_null() || (n > 0 && indices.is_null()) {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `outcount` or `indices` is NULL"));
        }
        let mut spins = 0;
        loop {
            // SAFETY: arrays of `n` entries from the caller.
            let (done, e) = unsafe { test_some(m, n, requests, indices, statuses)? };
            if done != 0 {
                // SAFETY: output pointer from the caller.
                unsafe { *outcount = done };
                return e.map_or(Ok(()), |e| Err(in_status(e, statuses)));
            }
            idle(&mut spins);
        }
    }
}

export! {
    /// `MPI_Testsome`: complete the active requests that are done.
    fn MPI_Testsome / PMPI_Testsome(incount: c_int, requests: *mut MPI_Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status) on On::NoObject;
    |m| {
        let n = check_array(incount, requests)?;
        if outcount.is_null() || (n > 0 && indices.is_null()) {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `outcount` or `indices` is NULL"));
        }
        // SAFETY: arrays of `n` entries from the caller.
        let (done, e) = unsafe { test_some(m, n, requests, indices, statuses)? };
        // SAFETY: output pointer from the caller.
        unsafe { *outcount = done };
        e.map_or(Ok(()), |e| Err(in_status(e, statuses)))
    }
}

export! {
    /// `MPI_Testall`: if every request is complete, complete them all (flag true); otherwise
    /// change nothing (flag false).
    fn MPI_Testall / PMPI_Testall(count: c_int, requests: *mut MPI_Request, flag: *mut c_int, statuses: *mut MPI_Status) on On::NoObject;
    |m| {
        let n = check_array(count, requests)?;
        if flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` is NULL"));
        }
        for i in 0..n {
            // SAFETY: `requests` holds `n` handles.
            let h = unsafe { *requests.add(i) };
            if h != MPI_REQUEST_NULL && peek(m, h)?.is_none() {
                // SAFETY: output pointer from the caller.
                unsafe { *flag = 0 };
                return Ok(());
            }
        }
        let mut failed = None;
        for i in 0..n {
            // SAFETY: as above.
            let h = unsafe { *requests.add(i) };
            let (st, e) = if h == MPI_REQUEST_NULL {
                (empty_status(), None)
            } else {
                complete(m, h, false)?.ok_or_else(|| err!(MPI_ERR_INTERN, "request {h:#x} complete, then pending"))?
            };
            // SAFETY: as above; `statuses` (unless ignored) holds `n` statuses.
            unsafe {
                *requests.add(i) = settled(m, h);
                if !statuses.is_null() {
                    *statuses.add(i) = st;
                }
            }
            if let Some(e) = e {
                failed.get_or_insert(e);
            }
        }
        // SAFETY: output pointer from the caller.
        unsafe { *flag = 1 };
        failed.map_or(Ok(()), |e| Err(in_status(e, statuses)))
    }
}
