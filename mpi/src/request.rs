//! Requests: what an `MPI_Request` names (an operation running in the core, or one that
//! completed when it started), how it completes (status, unpacking of a strided receive), and
//! the wait and test functions.
//!
//! Completion goes through [`complete`]: it asks the core once (test) or until done (wait),
//! turns the outcome into an `MPI_Status` and frees the request unless it is persistent. At
//! `MPI_THREAD_MULTIPLE` a blocking wait polls with the process lock released between polls
//! ([`block_on`]), so other threads' calls proceed.

use std::ffi::c_int;

use weft::ops::ReqId;
use weft::{EngineError, Status};

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::export;
use crate::handle::{Kind, Table};
use crate::state::{self, call, Mpi, On};

/// What to do when a core request completes.
pub(crate) enum After {
    /// Nothing.
    Nothing,
    /// Keep this buffer alive until then (a packed send, a collective's scratch).
    Keep(Vec<u8>),
    /// Unpack the received bytes through a type into the user's buffer.
    Unpack { packed: Vec<u8>, dst: *mut u8, count: usize, ty: std::sync::Arc<crate::datatype::TypeInfo> },
    /// Run this when the request completes successfully (copies out of scratch buffers).
    Run(Box<dyn FnOnce(&Mpi) -> MpiResult>),
}

/// One request.
pub(crate) enum Req {
    /// Running in the core.
    Core { id: ReqId, comm: MPI_Comm, after: After },
    /// Already complete (a receive from `MPI_PROC_NULL`, ...) with this status.
    Done { status: MPI_Status, comm: MPI_Comm },
    /// Several core requests that complete as one (a neighborhood collective).
    Parts { parts: crate::neighbor::Parts, comm: MPI_Comm },
}

impl Req {
    pub(crate) fn comm(&self) -> MPI_Comm {
        match self {
            Req::Core { comm, .. } | Req::Done { comm, .. } | Req::Parts { comm, .. } => *comm,
        }
    }
}

/// The request table.
pub(crate) struct Requests {
    table: Table<Req>,
}

impl Requests {
    pub(crate) fn new() -> Requests {
        Requests { table: Table::new(Kind::Request) }
    }

    #[inline]
    pub(crate) fn insert(&mut self, r: Req) -> MPI_Request {
        self.table.insert(r)
    }

    #[inline]
    pub(crate) fn get(&self, h: MPI_Request) -> Option<&Req> {
        self.table.get(h)
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, h: MPI_Request) -> Option<&mut Req> {
        self.table.get_mut(h)
    }

    #[inline]
    pub(crate) fn remove(&mut self, h: MPI_Request) -> Option<Req> {
        self.table.remove(h)
    }
}

/// The status of a request that was `MPI_REQUEST_NULL` or `MPI_PROC_NULL`: source and tag
/// wildcards, count 0 (the standard's "empty status").
pub(crate) fn empty_status() -> MPI_Status {
    MPI_Status {
        MPI_SOURCE: MPI_ANY_SOURCE,
        MPI_TAG: MPI_ANY_TAG,
        MPI_ERROR: MPI_SUCCESS,
        MPI_internal: [0; 5],
    }
}

/// The status of a message from `MPI_PROC_NULL`.
pub(crate) fn proc_null_status() -> MPI_Status {
    MPI_Status { MPI_SOURCE: MPI_PROC_NULL, ..empty_status() }
}

/// An `MPI_Status` from the core's, with `error` in `MPI_ERROR`. The byte count sits in
/// `MPI_internal[0..2]`, the cancelled flag in `MPI_internal[2]`.
#[inline]
pub(crate) fn status_of(s: &Status, error: c_int) -> MPI_Status {
    let tag = if s.tag == weft::ANY_TAG { MPI_ANY_TAG } else { s.tag };
    let mut st =
        MPI_Status { MPI_SOURCE: s.source as c_int, MPI_TAG: tag, MPI_ERROR: error, MPI_internal: [0; 5] };
    set_count(&mut st, s.count);
    st
}

/// Store a byte count in a status.
#[inline]
pub(crate) fn set_count(st: &mut MPI_Status, bytes: usize) {
    st.MPI_internal[0] = bytes as u32 as c_int;
    st.MPI_internal[1] = ((bytes as u64) >> 32) as u32 as c_int;
}

/// The byte count of a status.
#[inline]
pub(crate) fn count_of(st: &MPI_Status) -> usize {
    (st.MPI_internal[0] as u32 as u64 | ((st.MPI_internal[1] as u32 as u64) << 32)) as usize
}

/// Write `st` through a status pointer unless it is `MPI_STATUS_IGNORE`.
///
/// # Safety
/// A non-null `p` must be valid for a write of an `MPI_Status`.
#[inline(always)]
pub(crate) unsafe fn store(p: *mut MPI_Status, st: MPI_Status) {
    if !p.is_null() {
        // SAFETY: non-null and valid by the caller's contract.
        unsafe { p.write(st) };
    }
}

/// Wait for core request `id`, releasing the process lock between polls at
/// `MPI_THREAD_MULTIPLE`.
#[inline]
pub(crate) fn block_on(m: &Mpi, id: ReqId) -> Result<Status, EngineError> {
    if !state::multiple() {
        return m.core.wait(id);
    }
    loop {
        if let Some(st) = m.core.test(id)? {
            return Ok(st);
        }
        state::unlocked(std::thread::yield_now);
    }
}

/// The outcome of completing one request: its status, and the error (already in the
/// status's `MPI_ERROR`) if it failed.
pub(crate) type Outcome = (MPI_Status, Option<MpiErr>);

/// Complete request `h` (blocking if `block`); `None` if it is still pending. A completed
/// request is freed.
pub(crate) fn complete(m: &Mpi, h: MPI_Request, block: bool) -> MpiResult<Option<Outcome>> {
    // The table's borrow ends with this statement: the arms below borrow it again.
    let head = m.reqs.borrow().get(h).map(|r| match r {
        Req::Done { status, .. } => Err(Some(*status)),
        Req::Parts { .. } => Err(None),
        Req::Core { id, comm, .. } => Ok((*id, *comm)),
    });
    let (id, comm) = match head {
        None => return Err(invalid(h)),
        Some(Err(Some(st))) => {
            m.reqs.borrow_mut().remove(h);
            return Ok(Some((st, None)));
        }
        Some(Err(None)) => return crate::neighbor::complete_parts(m, h, block),
        Some(Ok(x)) => x,
    };
    let res = if block {
        block_on(m, id)
    } else {
        match m.core.test(id) {
            Ok(None) => return Ok(None),
            Ok(Some(s)) => Ok(s),
            Err(e) => Err(e),
        }
    };
    if matches!(res, Err(EngineError::ProcFailedPending)) {
        // The request stays pending (the standard's MPIX_ERR_PROC_FAILED_PENDING).
        let e = MpiErr::from(EngineError::ProcFailedPending).on(comm);
        let mut st = empty_status();
        st.MPI_ERROR = e.class;
        return Ok(Some((st, Some(e))));
    }
    let Some(Req::Core { after, .. }) = m.reqs.borrow_mut().remove(h) else {
        return Err(err!(MPI_ERR_INTERN, "request {h:#x} vanished while completing"));
    };
    let (st, e) = finish(m, res, after)?;
    Ok(Some((st, e.map(|e| e.on(comm)))))
}

/// Turn a core outcome into a status, running the request's completion step.
pub(crate) fn finish(m: &Mpi, res: Result<Status, EngineError>, after: After) -> MpiResult<Outcome> {
    match res {
        Ok(s) => {
            let post = match after {
                After::Nothing | After::Keep(_) => Ok(()),
                After::Unpack { packed, dst, count, ty } => {
                    // SAFETY: `dst` is the receive buffer the application handed to the receive
                    // call and must keep valid until the request completes (now).
                    unsafe { crate::datatype::unpack(&packed[..s.count], dst, count, &ty) }
                }
                After::Run(f) => f(m),
            };
            match post {
                Ok(()) => Ok((status_of(&s, MPI_SUCCESS), None)),
                Err(e) => Ok((status_of(&s, e.class), Some(e))),
            }
        }
        Err(e) => {
            let mut st = empty_status();
            if let EngineError::Truncated { capacity, sender, tag, .. } = &e {
                st = status_of(&Status { source: *sender, tag: *tag, count: *capacity }, 0);
            }
            let e = MpiErr::from(e);
            st.MPI_ERROR = e.class;
            Ok((st, Some(e)))
        }
    }
}

/// The error for a handle that names no live request.
#[cold]
pub(crate) fn invalid(h: MPI_Request) -> MpiErr {
    if crate::handle::looks_like(Kind::Request, h) {
        err!(MPI_ERR_REQUEST, "invalid request {h:#x}: already completed or freed")
    } else {
        err!(MPI_ERR_REQUEST, "invalid request {h:#x}: not a request handle")
    }
}

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
            let (st, e) = complete(m, h, true)?.expect("a blocking completion returns an outcome");
            // SAFETY: pointers from the caller.
            unsafe {
                if e.as_ref().is_none_or(|e| e.class != crate::error::MPIX_ERR_PROC_FAILED_PENDING) {
                    *request = MPI_REQUEST_NULL;
                }
                store(status, st);
            }
            e.map_or(Ok(()), Err)
        })
    }
}

export! {
    /// `MPI_Test`.
    fn MPI_Test / PMPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) {
        call("MPI_Test", On::NoObject, |m| {
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
                        if e.as_ref().is_none_or(|e| e.class != crate::error::MPIX_ERR_PROC_FAILED_PENDING) {
                            *request = MPI_REQUEST_NULL;
                        }
                        store(status, st);
                    }
                    e.map_or(Ok(()), Err)
                }
            }
        })
    }
}

export! {
    /// `MPI_Waitall`: every request completes; on errors, `MPI_ERR_IN_STATUS` with each status's
    /// `MPI_ERROR` set.
    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status) {
        call("MPI_Waitall", On::NoObject, |m| {
            if count < 0 {
                return Err(err!(MPI_ERR_COUNT, "invalid count {count}"));
            }
            if count > 0 && requests.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `requests` is NULL"));
            }
            let mut failed = None;
            for i in 0..count as usize {
                // SAFETY: `requests` holds `count` handles.
                let h = unsafe { *requests.add(i) };
                let (st, e) = if h == MPI_REQUEST_NULL {
                    (empty_status(), None)
                } else {
                    complete(m, h, true)?.expect("blocking")
                };
                // SAFETY: as above; `statuses` (unless ignored) holds `count` statuses.
                unsafe {
                    if e.as_ref().is_none_or(|e| e.class != crate::error::MPIX_ERR_PROC_FAILED_PENDING) {
                        *requests.add(i) = MPI_REQUEST_NULL;
                    }
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
                Some(e) => Err(MpiErr::new(MPI_ERR_IN_STATUS, e.msg)),
            }
        })
    }
}
