//! Requests: what an `MPI_Request` names (an operation running in the core, one that
//! completed when it started, or a persistent request), how it completes (status, unpacking of
//! a strided receive), the process's request table and what lives beside requests (orphans,
//! the buffered-send pool), persistent requests, and the parts of a
//! neighborhood collective's request. The request functions are in `bind/request.rs` and
//! `bind/completion.rs`.
//!
//! Completion goes through [`complete`]: it asks the core once (test) or until done (wait),
//! turns the outcome into an `MPI_Status` and frees the request unless it is persistent (a
//! persistent one goes back to inactive). After a completion the caller's handle becomes
//! [`settled`]: `MPI_REQUEST_NULL` if the request is gone, the same handle if it lives on. At
//! `MPI_THREAD_MULTIPLE` a blocking wait polls with the process lock released between polls
//! ([`block_on`]), so other threads' calls proceed.
//!
//! A request freed while active (`MPI_Request_free`) becomes an orphan: it completes in the
//! background (every completion call reaps the finished orphans, running their completion
//! step, e.g. the unpack of a strided receive into the user's buffer). A contiguous receive's
//! data lands as soon as the message matches; a strided one's is unpacked only at the next
//! completion call (wait, test, or a blocking call that completes through them).

use std::ffi::{c_int, c_void};

use weft::ops::ReqId;
use weft::{EngineError, Status};

use std::cell::RefCell;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::handle::{Kind, Table};
use crate::state::{self, Mpi, Owned};

/// What to do when a core request completes.
pub(crate) enum After {
    /// Nothing.
    Nothing,
    /// Keep this buffer alive until then (a packed send, a collective's scratch).
    Keep(#[allow(dead_code, reason = "held only to be dropped when the request completes")] Vec<u8>),
    /// Unpack the received bytes through a type into the user's buffer.
    Unpack(Box<Unpack>),
    /// Run this when the request completes successfully (copies out of scratch buffers).
    Run(Box<dyn FnOnce(&Mpi) -> MpiResult>),
}

/// The receive of a strided type: where its packed bytes go when it completes.
pub(crate) struct Unpack {
    pub(crate) packed: Vec<u8>,
    pub(crate) dst: *mut u8,
    pub(crate) count: usize,
    pub(crate) ty: std::sync::Arc<crate::obj::datatype::TypeInfo>,
}

/// One request.
pub(crate) enum Req {
    /// Running in the core.
    Core { id: ReqId, comm: MPI_Comm, after: After },
    /// Already complete (a receive from `MPI_PROC_NULL`, a cancelled operation, ...) with
    /// this status.
    Done { status: MPI_Status, comm: MPI_Comm },
    /// Several core requests that complete as one (a neighborhood collective).
    Parts { parts: Box<Parts>, comm: MPI_Comm },
    /// A persistent request (`MPI_Send_init`, ...), active or not.
    Persistent(Box<Persistent>),
}

impl Req {
    pub(crate) fn comm(&self) -> MPI_Comm {
        match self {
            Req::Core { comm, .. } | Req::Done { comm, .. } | Req::Parts { comm, .. } => *comm,
            Req::Persistent(p) => p.comm,
        }
    }
}

/// The request table, with what lives beside requests: orphans (freed while active), the
/// buffered-send pool.
pub(crate) struct Requests {
    pub(crate) table: Table<Req>,
    /// Core requests freed by the application while active, with their completion steps.
    orphans: Vec<(ReqId, After)>,
    /// The buffer attached by `MPI_Buffer_attach` and the buffered sends using it.
    pub(crate) bsend: Pool,
}

impl Requests {
    pub(crate) fn new() -> Requests {
        Requests { table: Table::new(Kind::Request), orphans: Vec::new(), bsend: Pool::default() }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, h: MPI_Request) -> Option<&mut Req> {
        self.table.get_mut(h)
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
    pub(crate) fn remove(&mut self, h: MPI_Request) -> Option<Req> {
        self.table.remove(h)
    }

    /// Free request `h` without taking it out (its completion step is done or empty).
    #[inline]
    pub(crate) fn discard(&mut self, h: MPI_Request) {
        self.table.discard(h);
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
    let mut spins = 0;
    loop {
        if let Some(st) = m.core.test(id)? {
            return Ok(st);
        }
        idle(&mut spins);
    }
}

/// Polls a blocking call makes with the lock released before it starts yielding the CPU.
const SPINS_BEFORE_YIELD: u32 = 16;

/// Between two polls of a blocking call: release the process lock (at
/// `MPI_THREAD_MULTIPLE`) so other threads' calls run, and after [`SPINS_BEFORE_YIELD`]
/// fruitless polls also yield the CPU (a thread that needs it may share this core).
pub(crate) fn idle(spins: &mut u32) {
    *spins += 1;
    if *spins < SPINS_BEFORE_YIELD {
        state::unlocked(std::hint::spin_loop);
    } else {
        state::unlocked(std::thread::yield_now);
    }
}

/// The outcome of completing one request: its status, and the error (already in the
/// status's `MPI_ERROR`) if it failed.
pub(crate) type Outcome = (MPI_Status, Option<MpiErr>);

/// How a request stands before completion is attempted.
enum Stand {
    /// Complete: this status (the request is freed, or a persistent one made inactive).
    Ready(MPI_Status),
    /// Running in the core.
    Running(ReqId, MPI_Comm),
    /// Several core requests completing as one (`neighbor::complete_parts` completes it).
    Parts,
}

/// Complete request `h` (blocking if `block`); `None` if it is still pending. A completed
/// request is freed, a persistent one made inactive (an inactive one completes at once with
/// the empty status).
pub(crate) fn complete(m: &Mpi, h: MPI_Request, block: bool) -> MpiResult<Option<Outcome>> {
    reap(m);
    let stand = {
        let mut reqs = m.reqs().borrow_mut();
        match reqs.get_mut(h) {
            None => return Err(invalid(h)),
            Some(Req::Done { status, .. }) => {
                let st = *status;
                reqs.remove(h);
                Stand::Ready(st)
            }
            Some(Req::Persistent(p)) => match &p.active {
                Active::No => Stand::Ready(empty_status()),
                Active::Done(st) => {
                    let st = *st;
                    p.active = Active::No;
                    Stand::Ready(st)
                }
                Active::Core(id, _) => Stand::Running(*id, p.comm),
            },
            Some(Req::Core { id, comm, .. }) => Stand::Running(*id, *comm),
            Some(Req::Parts { .. }) => Stand::Parts,
        }
    };
    let (id, comm) = match stand {
        Stand::Ready(st) => return Ok(Some((st, failed(&st)))),
        Stand::Running(id, comm) => (id, comm),
        Stand::Parts => return complete_parts(m, h, block),
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
    settle(m, h, comm, res).map(Some)
}

/// The outcome of request `h` on `comm` whose core request came back with `res`: a failure
/// still pending leaves it in place; otherwise its completion step runs and it is freed (a
/// persistent one made inactive).
fn settle(m: &Mpi, h: MPI_Request, comm: MPI_Comm, res: Result<Status, EngineError>) -> MpiResult<Outcome> {
    if matches!(res, Err(EngineError::ProcFailedPending)) {
        // The request stays pending (the standard's MPIX_ERR_PROC_FAILED_PENDING).
        let e = MpiErr::from(EngineError::ProcFailedPending).on(comm);
        let mut st = empty_status();
        st.MPI_ERROR = e.class;
        return Ok((st, Some(e)));
    }
    let after = take_after(m, h, None)?;
    let (mut st, e) = finish(m, res, after)?;
    m.own_status(comm, &mut st);
    Ok((st, e.map(|e| e.on(comm))))
}

/// Wait for request `h` if it is a plain one (a core operation with nothing to do when it
/// completes: a non-blocking send, or a receive into a contiguous buffer), the common case of
/// `MPI_Wait` and `MPI_Waitall`: one table lookup before the wait and the slot freed after it,
/// and the request's handle is dead afterwards. `None` for every other request, which
/// [`complete`] handles. The caller reaps the orphans ([`reap`]) once per call.
#[inline]
pub(crate) fn wait_plain(m: &Mpi, h: MPI_Request) -> Option<MpiResult<Outcome>> {
    let (id, comm) = match m.reqs().borrow().get(h) {
        Some(Req::Core { id, comm, after: After::Nothing }) => (*id, *comm),
        _ => return None,
    };
    Some(match block_on(m, id) {
        Ok(s) => {
            m.reqs().borrow_mut().discard(h);
            let mut st = status_of(&s, MPI_SUCCESS);
            m.own_status(comm, &mut st);
            Ok((st, None))
        }
        res => settle(m, h, comm, res),
    })
}

/// The error a completed status records (a request that completed before the call that
/// completes it: `MPI_Request_get_status` or `MPI_Testall` saw it done).
fn failed(st: &MPI_Status) -> Option<MpiErr> {
    (st.MPI_ERROR != MPI_SUCCESS).then(|| {
        let text = crate::error::class_text(st.MPI_ERROR).unwrap_or("unknown error class");
        MpiErr::new(st.MPI_ERROR, format!("the operation failed: {text}"))
    })
}

/// Take the completion step of request `h`, whose core request just completed: a persistent
/// request becomes inactive; a plain one is freed, or with `keep` becomes a `Done` request on
/// that communicator (its status is filled in by the caller).
fn take_after(m: &Mpi, h: MPI_Request, keep: Option<MPI_Comm>) -> MpiResult<After> {
    let mut reqs = m.reqs().borrow_mut();
    let after = match (reqs.get_mut(h), keep) {
        (Some(Req::Persistent(p)), _) => match std::mem::replace(&mut p.active, Active::No) {
            Active::Core(_, after) => Some(after),
            _ => None,
        },
        (Some(r @ Req::Core { .. }), Some(comm)) => {
            match std::mem::replace(r, Req::Done { status: empty_status(), comm }) {
                Req::Core { after, .. } => Some(after),
                _ => None,
            }
        }
        (Some(Req::Core { .. }), None) => match reqs.remove(h) {
            Some(Req::Core { after, .. }) => Some(after),
            _ => None,
        },
        _ => None,
    };
    after.ok_or_else(|| err!(MPI_ERR_INTERN, "request {h:#x} vanished while completing"))
}

/// The handle a caller holds after completing `h`: `MPI_REQUEST_NULL` if the request was
/// freed, `h` if it lives on (persistent, or left pending by `MPI_ERR_PROC_FAILED_PENDING`).
#[inline]
pub(crate) fn settled(m: &Mpi, h: MPI_Request) -> MPI_Request {
    if h != MPI_REQUEST_NULL && m.reqs().borrow().get(h).is_some() {
        h
    } else {
        MPI_REQUEST_NULL
    }
}

/// True for `MPI_REQUEST_NULL` and inactive persistent requests (the any/some functions skip
/// them).
pub(crate) fn inactive(m: &Mpi, h: MPI_Request) -> bool {
    h == MPI_REQUEST_NULL
        || matches!(m.reqs().borrow().get(h), Some(Req::Persistent(p)) if matches!(p.active, Active::No))
}

/// Complete the orphans (requests freed while active) that are done; keep the others.
#[inline]
pub(crate) fn reap(m: &Mpi) {
    if !m.reqs().borrow().orphans.is_empty() {
        reap_some(m);
    }
}

#[cold]
fn reap_some(m: &Mpi) {
    let orphans = std::mem::take(&mut m.reqs().borrow_mut().orphans);
    let mut left = Vec::new();
    for (id, after) in orphans {
        match m.core.test(id) {
            Ok(None) | Err(EngineError::ProcFailedPending) => left.push((id, after)),
            // Nobody holds the request any more: its outcome goes nowhere (the standard's
            // rule for a freed request), but its completion step runs.
            res => drop(finish(m, res.map(|s| s.expect("checked Some")), after)),
        }
    }
    m.reqs().borrow_mut().orphans.extend(left);
}

/// Withdraw request `h` of a call that failed: cancel its core operation if it has not matched
/// (the request is freed), otherwise wait for it to complete (its outcome is dropped).
pub(crate) fn withdraw(m: &Mpi, h: MPI_Request) -> MpiResult {
    let id = match m.reqs().borrow().get(h) {
        Some(Req::Core { id, .. }) => Some(*id),
        Some(_) => None,
        None => return Err(invalid(h)),
    };
    if let Some(id) = id {
        if m.core.cancel(id)? {
            m.reqs().borrow_mut().remove(h);
            return Ok(());
        }
    }
    complete(m, h, true).map(drop)
}

/// Free request `h`: an inactive or complete one at once, an active one once it completes
/// (it becomes an orphan).
pub(crate) fn free(m: &Mpi, h: MPI_Request) -> MpiResult {
    let mut reqs = m.reqs().borrow_mut();
    match reqs.remove(h) {
        None => Err(invalid(h)),
        Some(Req::Done { .. }) => Ok(()),
        Some(Req::Core { id, after, .. }) => {
            reqs.orphans.push((id, after));
            Ok(())
        }
        Some(Req::Parts { parts, .. }) => {
            reqs.orphans.extend(parts.into_pending());
            Ok(())
        }
        Some(Req::Persistent(p)) => {
            if let Active::Core(id, after) = p.active {
                reqs.orphans.push((id, after));
            }
            Ok(())
        }
    }
}

/// Turn a core outcome into a status, running the request's completion step.
pub(crate) fn finish(m: &Mpi, res: Result<Status, EngineError>, after: After) -> MpiResult<Outcome> {
    match res {
        Ok(s) => {
            let post = match after {
                After::Nothing | After::Keep(_) => Ok(()),
                After::Unpack(u) => {
                    let Unpack { packed, dst, count, ty } = *u;
                    // SAFETY: `dst` is the receive buffer the application handed to the receive
                    // call and must keep valid until the request completes (now).
                    unsafe { crate::obj::datatype::unpack(&packed[..s.count], dst, count, &ty) }
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

/// The status of a cancelled operation: empty, with the cancelled flag set.
pub(crate) fn cancelled_status() -> MPI_Status {
    let mut st = empty_status();
    st.MPI_internal[2] = 1;
    st
}

/// The status of request `h` if it is complete, leaving it in place: a core request that is
/// done becomes a `Done` request holding its outcome (its completion step has run).
pub(crate) fn peek(m: &Mpi, h: MPI_Request) -> MpiResult<Option<MPI_Status>> {
    // The table's borrow ends with this statement (the parts path borrows it again).
    let head = match m.reqs().borrow().get(h) {
        None => return Err(invalid(h)),
        Some(Req::Done { status, .. }) => return Ok(Some(*status)),
        Some(Req::Persistent(p)) => match &p.active {
            Active::No => return Ok(Some(empty_status())),
            Active::Done(st) => return Ok(Some(*st)),
            Active::Core(id, _) => Some((*id, p.comm)),
        },
        Some(Req::Core { id, comm, .. }) => Some((*id, *comm)),
        Some(Req::Parts { .. }) => None,
    };
    let Some((id, comm)) = head else {
        return peek_parts(m, h);
    };
    let res = match m.core.test(id) {
        Ok(None) | Err(EngineError::ProcFailedPending) => return Ok(None),
        Ok(Some(s)) => Ok(s),
        Err(e) => Err(e),
    };
    // The core request is gone: keep its outcome in the MPI request.
    let after = take_after(m, h, Some(comm))?;
    let (mut st, _) = finish(m, res, after)?;
    m.own_status(comm, &mut st);
    match m.reqs().borrow_mut().get_mut(h) {
        Some(Req::Persistent(p)) => p.active = Active::Done(st),
        Some(Req::Done { status, .. }) => *status = st,
        _ => {}
    }
    Ok(Some(st))
}

/// The process's table of requests (see [`Owned`]).
static REQS: Owned<RefCell<Requests>> = Owned::new();

impl Mpi {
    /// The table of requests.
    #[inline(always)]
    pub(crate) fn reqs(&self) -> &RefCell<Requests> {
        REQS.get(self)
    }
}

/// Make the table of requests (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Requests) {
    REQS.make(RefCell::new(table));
}

/// The send modes of the standard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `MPI_Send`: completes when the buffer may be reused.
    Standard,
    /// `MPI_Ssend`: completes once the receiver matched the message.
    Sync,
    /// `MPI_Bsend`: copied into the attached buffer, complete at once.
    Buffered,
    /// `MPI_Rsend`: the receive is posted already; a standard send is a correct ready send.
    Ready,
}

/// How an operation stands once started.
pub(crate) enum Started {
    /// Running in the core, with its completion step.
    Core(ReqId, After),
    /// Complete already, with this status.
    Done(MPI_Status),
}

impl Started {
    /// As a (non-persistent) request on communicator handle `comm`.
    pub(crate) fn into_req(self, comm: MPI_Comm) -> Req {
        match self {
            Started::Core(id, after) => Req::Core { id, comm, after },
            Started::Done(status) => Req::Done { status, comm },
        }
    }
}

/// The operation a persistent request runs on each start.
#[derive(Clone, Copy)]
pub(crate) enum PersistentOp {
    Send { mode: Mode, buf: *const c_void, count: MPI_Count, dt: MPI_Datatype, dest: c_int, tag: c_int },
    Recv { buf: *mut c_void, count: MPI_Count, dt: MPI_Datatype, src: c_int, tag: c_int },
}

/// Whether a persistent request is running.
pub(crate) enum Active {
    /// Inactive: created, or completed since its last start.
    No,
    /// Started and running in the core.
    Core(ReqId, After),
    /// Started and complete already (`MPI_PROC_NULL`, a buffered send, a cancel), not yet
    /// completed by a wait or test.
    Done(MPI_Status),
}

/// A persistent request.
pub(crate) struct Persistent {
    pub(crate) op: PersistentOp,
    pub(crate) comm: MPI_Comm,
    pub(crate) active: Active,
}

/// The core requests of a non-blocking neighborhood collective still running, and the first
/// error of those that completed.
pub(crate) struct Parts {
    pub(crate) pending: Vec<(ReqId, After)>,
    pub(crate) failed: Option<MpiErr>,
}

impl Parts {
    /// The parts still running (a request freed while active leaves them to complete alone).
    pub(crate) fn into_pending(self) -> Vec<(ReqId, After)> {
        self.pending
    }
}

/// The status of `Parts` request `h` if all its parts are done, leaving the request in place
/// (it becomes a `Done` request holding that status).
pub(crate) fn peek_parts(m: &Mpi, h: MPI_Request) -> MpiResult<Option<MPI_Status>> {
    let Some((st, _)) = run_parts(m, h, false)? else {
        return Ok(None);
    };
    let mut reqs = m.reqs().borrow_mut();
    if let Some(r) = reqs.get_mut(h) {
        let comm = r.comm();
        *r = Req::Done { status: st, comm };
    }
    Ok(Some(st))
}

/// Complete what has completed of `Parts` request `h` (everything, if `block`); its outcome
/// once all parts are done (the request is then freed), `None` while some run.
pub(crate) fn complete_parts(m: &Mpi, h: MPI_Request, block: bool) -> MpiResult<Option<Outcome>> {
    let out = run_parts(m, h, block)?;
    if out.is_some() {
        m.reqs().borrow_mut().remove(h);
    }
    Ok(out)
}

/// Run the parts of `Parts` request `h` that have completed (all of them, if `block`); the
/// request's outcome once every part is done (the request stays), `None` while some run.
fn run_parts(m: &Mpi, h: MPI_Request, block: bool) -> MpiResult<Option<Outcome>> {
    let (pending, mut failed, comm) = match m.reqs().borrow_mut().get_mut(h) {
        Some(Req::Parts { parts, comm }) => (std::mem::take(&mut parts.pending), parts.failed.take(), *comm),
        _ => return Err(crate::obj::request::invalid(h)),
    };
    let mut still = Vec::new();
    for (id, after) in pending {
        let res = if block {
            block_on(m, id)
        } else {
            match m.core.test(id) {
                Ok(None) => {
                    still.push((id, after));
                    continue;
                }
                Ok(Some(s)) => Ok(s),
                Err(e) => Err(e),
            }
        };
        if let (_, Some(e)) = finish(m, res, after)? {
            failed.get_or_insert(e);
        }
    }
    if !still.is_empty() {
        if let Some(Req::Parts { parts, .. }) = m.reqs().borrow_mut().get_mut(h) {
            parts.pending = still;
            parts.failed = failed;
        }
        return Ok(None);
    }
    let mut st = empty_status();
    if let Some(e) = &failed {
        st.MPI_ERROR = e.class;
    }
    Ok(Some((st, failed.map(|e| e.on(comm)))))
}

/// The attached buffer and the sends in flight from it.
#[derive(Default)]
pub(crate) struct Pool {
    /// Start and size of the attached buffer.
    pub(crate) attached: Option<(*mut u8, usize)>,
    /// Sends from the buffer: (offset, bytes taken, core request), ordered by offset.
    pub(crate) live: Vec<(usize, usize, ReqId)>,
}

impl Pool {
    /// The first offset with `need` free bytes.
    pub(crate) fn room(&self, need: usize) -> Option<usize> {
        let size = self.attached?.1;
        let mut at = 0;
        for &(off, len, _) in &self.live {
            if off - at >= need {
                return Some(at);
            }
            at = off + len;
        }
        (size - at >= need).then_some(at)
    }
}
