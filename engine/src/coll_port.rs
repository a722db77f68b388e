//! [`CollPort`]: the capability of the collectives layer (`weft-coll`), and only what that
//! layer calls — point-to-point on a communicator's internal context (tags from
//! [`crate::FIRST_COLL_TAG`] on; it never matches user receives), activities that progress a
//! non-blocking collective's schedule, and generic requests for its caller; with
//! [`crate::Common`] (shared with the engine), the communicator view and the blocking
//! primitives of a blocking collective.
//!
//! The collectives hold a [`CollPort`] from [`CollPort::of`] (the facade's call) and in every
//! advance of their activities. Every method is a direct (static) call into the engine.

use crate::activity::Activity;
use crate::engine::ForColl;
use crate::error::Result;
use crate::request::{RecvStart, ReqId};
use crate::{CollPort, CommId, Engine, Status};

impl CollPort {
    /// The collectives' capability over `e`.
    #[inline(always)]
    pub fn of(e: &mut Engine) -> &mut CollPort {
        e.view()
    }

    /// Read-only [`CollPort::of`] (communicator queries, algorithm selection).
    #[inline(always)]
    pub fn of_ref(e: &Engine) -> &CollPort {
        e.view_ref()
    }

    /// Start advancing `a` on every progress call until it reports [`crate::Step::Done`].
    pub fn spawn<A: Activity<CollPort> + 'static>(&mut self, a: A) {
        self.0.extensions.activities.push(Box::new(ForColl(a)));
        self.0.core.aux = true;
    }

    /// A pending request on `c` for a collective; complete it with
    /// [`CollPort::complete_request`]. Callers wait for it with test/wait like any request.
    pub fn new_request(&mut self, c: CommId) -> Result<ReqId> {
        self.0.new_generic(c)
    }

    /// Complete a request made by [`CollPort::new_request`]; ignored if it is not pending.
    pub fn complete_request(&mut self, id: ReqId, res: Result<Status>) {
        self.0.complete_generic(id, res)
    }

    /// Take the result of a complete request without making progress (for activities):
    /// `Ok(None)` while pending.
    pub fn take_result(&mut self, id: ReqId) -> Result<Option<Status>> {
        self.0.take_result(id)
    }

    /// Send on the internal context of `c`.
    ///
    /// # Safety
    /// As [`Engine::isend`].
    pub unsafe fn isend_coll(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.0.isend_ctx(c, 1, buf, len, dst, tag, true) }.map(|r| r.expect("request forced"))
    }

    /// As [`CollPort::isend_coll`], but an eager send handed to the transport at once returns
    /// `Ok(None)` and allocates no request (the buffer may be reused immediately); otherwise
    /// the request to wait for.
    ///
    /// # Safety
    /// As [`Engine::isend`] (while a returned request is pending).
    pub unsafe fn isend_coll_opt(
        &mut self,
        c: CommId,
        buf: *const u8,
        len: usize,
        dst: u32,
        tag: i32,
    ) -> Result<Option<ReqId>> {
        // SAFETY: forwarded contract.
        unsafe { self.0.isend_ctx(c, 1, buf, len, dst, tag, false) }
    }

    /// Receive on the internal context of `c`; a receive matched at once by an eager
    /// message that already arrived completes here: `RecvStart::Done` with its status (or
    /// the receive's error, e.g. truncation), and no request is allocated.
    ///
    /// # Safety
    /// As [`Engine::irecv`] (while a returned request is pending).
    pub unsafe fn irecv_coll_opt(
        &mut self,
        c: CommId,
        buf: *mut u8,
        len: usize,
        src: i32,
        tag: i32,
    ) -> Result<RecvStart> {
        // SAFETY: forwarded contract.
        unsafe { self.0.irecv_ctx(c, 1, buf, len, src, tag, false) }
    }
}
