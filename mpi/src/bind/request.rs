//! Requests chapter, single requests: wait, test, waitall, free, get_status, cancel, test_cancelled.

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::export;
use crate::obj::request::Active;
use crate::obj::request::*;
use crate::state::{call, On};
use std::ffi::c_int;

export! {
    /// `MPI_Wait`.
    fn MPI_Wait / PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) {
        if request.is_null() {
            return call("MPI_Wait", On::NoObject, |_| Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL")));
        }
        // SAFETY: non-null request pointer from the caller.
        let h = unsafe { *request };
        if h == MPI_REQUEST_NULL {
            // SAFETY: status pointer from the caller.
            unsafe { store(status, empty_status()) };
            return MPI_SUCCESS;
        }
        call("MPI_Wait", On::NoObject, |m| {
            reap(m);
            let (st, e, left) = match wait_plain(m, h) {
                Some(r) => {
                    let (st, e) = r?;
                    // Freed unless it failed (a failure still pending leaves it in place).
                    let left = if e.is_some() { h } else { MPI_REQUEST_NULL };
                    (st, e, left)
                }
                None => {
                    let (st, e) = complete(m, h, true)?.expect("a blocking completion returns an outcome");
                    (st, e, h)
                }
            };
            // SAFETY: pointers from the caller.
            unsafe {
                *request = settled(m, left);
                store(status, st);
            }
            e.map_or(Ok(()), Err)
        })
    }
}

export! {
    /// `MPI_Test`.
    fn MPI_Test / PMPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) on On::NoObject;
    |m| {
        if request.is_null() || flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `request` or `flag` is NULL"));
        }
        // SAFETY: non-null pointers from the caller.
        let h = unsafe { *request };
        if h == MPI_REQUEST_NULL {
            // SAFETY: as above.
            unsafe {
                *flag = 1;
                store(status, empty_status());
            }
            return Ok(());
        }
        match complete(m, h, false)? {
            None => {
                // SAFETY: as above.
                unsafe { *flag = 0 };
                Ok(())
            }
            Some((st, e)) => {
                // SAFETY: as above.
                unsafe {
                    *flag = 1;
                    *request = settled(m, h);
                    store(status, st);
                }
                e.map_or(Ok(()), Err)
            }
        }
    }
}

export! {
    /// `MPI_Waitall`: every request completes; on errors, `MPI_ERR_IN_STATUS` with each status's
    /// `MPI_ERROR` set.
    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status) on On::NoObject;
    |m| {
        if count < 0 {
            return Err(err!(MPI_ERR_COUNT, "invalid count {count}"));
        }
        if count > 0 && requests.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `requests` is NULL"));
        }
        let mut failed = None;
        reap(m);
        for i in 0..count as usize {
            // SAFETY: `requests` holds `count` handles.
            let h = unsafe { *requests.add(i) };
            let (st, e, left) = if h == MPI_REQUEST_NULL {
                (empty_status(), None, h)
            } else if let Some(r) = wait_plain(m, h) {
                let (st, e) = r?;
                // Freed unless it failed (a failure still pending leaves it in place).
                let left = if e.is_some() { h } else { MPI_REQUEST_NULL };
                (st, e, left)
            } else {
                let (st, e) = complete(m, h, true)?.expect("blocking");
                (st, e, h)
            };
            // SAFETY: as above; `statuses` (unless ignored) holds `count` statuses.
            unsafe {
                *requests.add(i) = settled(m, left);
                if !statuses.is_null() {
                    *statuses.add(i) = st;
                }
            }
            if let Some(e) = e {
                failed.get_or_insert(e);
            }
        }
        match failed {
            None => Ok(()),
            Some(e) if statuses.is_null() => Err(e),
            Some(e) => Err(MpiErr::new(MPI_ERR_IN_STATUS, e.msg.clone())),
        }
    }
}

/// The request `*request` names, for a call that needs one: a null pointer is `MPI_ERR_ARG`,
/// `MPI_REQUEST_NULL` is `MPI_ERR_REQUEST` (it cannot be `what`).
///
/// # Safety
/// A non-null `request` must be valid for reads.
unsafe fn live_arg(request: *mut MPI_Request, what: &str) -> MpiResult<MPI_Request> {
    if request.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `request` is NULL"));
    }
    // SAFETY: non-null, valid by the caller's contract.
    let h = unsafe { *request };
    if h == MPI_REQUEST_NULL {
        return Err(err!(MPI_ERR_REQUEST, "invalid request: MPI_REQUEST_NULL cannot be {what}"));
    }
    Ok(h)
}

export! {
    /// `MPI_Request_free`: free a request; an active one completes in the background first.
    fn MPI_Request_free / PMPI_Request_free(request: *mut MPI_Request) on On::NoObject;
    |m| {
        // SAFETY: the request pointer from the caller.
        let h = unsafe { live_arg(request, "freed")? };
        free(m, h)?;
        // SAFETY: as above.
        unsafe { *request = MPI_REQUEST_NULL };
        Ok(())
    }
}

export! {
    /// `MPI_Request_get_status`: whether the request is complete, and its status, without
    /// freeing it (an inactive or null request is complete with the empty status).
    fn MPI_Request_get_status / PMPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) on On::NoObject;
    |m| {
        if flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` is NULL"));
        }
        let st = if request == MPI_REQUEST_NULL {
            Some(empty_status())
        } else {
            peek(m, request)?
        };
        // SAFETY: pointers from the caller.
        unsafe {
            *flag = st.is_some() as c_int;
            if let Some(st) = st {
                store(status, st);
            }
        }
        Ok(())
    }
}

export! {
    /// `MPI_Cancel`: withdraw a pending operation if the core can (a receive that has not
    /// matched; a send still queued for transport space). The request must still be
    /// completed; `MPI_Test_cancelled` on its status says whether the cancel took.
    fn MPI_Cancel / PMPI_Cancel(request: *mut MPI_Request) on On::NoObject;
    |m| {
        // SAFETY: the request pointer from the caller.
        let h = unsafe { live_arg(request, "cancelled")? };
        let id = match m.reqs().borrow().get(h) {
            None => return Err(invalid(h)),
            Some(Req::Core { id, .. }) => *id,
            Some(Req::Persistent(p)) => match &p.active {
                Active::Core(id, _) => *id,
                Active::Done(_) => return Ok(()),
                Active::No => {
                    return Err(err!(MPI_ERR_REQUEST, "invalid request {h:#x}: an inactive persistent request cannot be cancelled"))
                }
            },
            Some(Req::Done { .. }) => return Ok(()),
            Some(Req::Parts { .. }) => {
                return Err(err!(MPI_ERR_REQUEST, "a non-blocking neighborhood collective cannot be cancelled"))
            }
        };
        if !m.core.cancel(id)? {
            return Ok(());
        }
        // Withdrawn: the core freed its request; the MPI request completes as cancelled
        // (dropping the completion step: a cancelled receive writes nothing).
        let mut reqs = m.reqs().borrow_mut();
        match reqs.get_mut(h) {
            Some(Req::Persistent(p)) => p.active = Active::Done(cancelled_status()),
            Some(r) => {
                let comm = r.comm();
                *r = Req::Done { status: cancelled_status(), comm };
            }
            None => {}
        }
        Ok(())
    }
}

export! {
    /// `MPI_Test_cancelled`: whether the operation of this status was cancelled.
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) on On::NoObject;
    |_| {
        if status.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `status` is NULL"));
        }
        // SAFETY: non-null status from the caller.
        let c = unsafe { (*status).MPI_internal[2] != 0 };
        // SAFETY: output pointer from the caller.
        unsafe { crate::put(flag, c as c_int, "flag") }
    }
}
