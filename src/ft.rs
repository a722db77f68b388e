//! Fault tolerance in the safe API (ULFM): revoke, agree / iagree, shrink / ishrink,
//! acknowledgement (current and older spec), error scope and uniform mode. The protocols are
//! in `weft-ft`; this file only adapts them to [`Comm`] and [`Scope`].
//!
//! Uniform mode ([`Comm::set_uniform`]): covered collectives are followed by an implicit
//! agreement, so every member returns the same outcome class. Covered now: [`Comm::barrier`].
//! Other collectives opt in by calling [`Comm::uniform_after`] on their local result.

use std::rc::Rc;

use weft_engine::{CommId, ErrScope, ReqId};

use crate::api::{Comm, Inner, Request, Scope};
use crate::{Config, Result, Weft};

pub use weft_ft::FtStats;

/// Install the FT layer on a freshly wired engine (called once by `init`).
pub(crate) fn install(
    cfg: &Config,
    rt: &crate::init::SharedRuntime,
    e: &mut weft_engine::Engine,
) -> Result<weft_ft::Ft> {
    let node_of = {
        let r = rt.borrow();
        (0..r.size()).map(|w| r.node_of(w).unwrap_or(0)).collect()
    };
    let opts = weft_ft::FtOptions {
        hb_period_ms: cfg.ft_hb_period_ms,
        hb_timeout_ms: cfg.ft_hb_timeout_ms,
        agree: cfg.ft_agree,
        node_of,
    };
    Ok(weft_ft::Ft::install(e.ext(), opts)?)
}

/// Uniform-mode hook for collectives (see [`Comm::uniform_after`]).
pub(crate) fn uniform_after(c: &Comm, local: std::result::Result<(), crate::EngineError>) -> Result<()> {
    let ft = c.inner.ft.clone();
    let mut e = c.inner.engine.borrow_mut();
    Ok(ft.uniform_after(e.ext(), c.id, local)?)
}

impl Weft {
    /// Counters of the fault-tolerance layer.
    pub fn ft_stats(&self) -> FtStats {
        self.inner.ft.stats()
    }
}

impl Comm {
    fn ft(&self) -> (weft_ft::Ft, std::cell::RefMut<'_, weft_engine::Engine>) {
        (self.inner.ft.clone(), self.inner.engine.borrow_mut())
    }

    /// Revoke the communicator: every pending and future operation on it, at every live
    /// member, completes with `Revoked` (except agree, shrink and the acknowledgement calls).
    /// Returns at once; the revocation propagates by reliable broadcast.
    pub fn revoke(&self) -> Result<()> {
        let (ft, mut e) = self.ft();
        Ok(ft.revoke(e.ext(), self.id)?)
    }

    /// True once the communicator was revoked (locally or by any member).
    pub fn is_revoked(&self) -> Result<bool> {
        Ok(self.inner.engine.borrow().is_revoked(self.id)?)
    }

    /// Fault-tolerant agreement: the AND of `flag` over the live members, the same at every
    /// member. Fails with `ProcFailed` (at every member alike) when some member failed and
    /// the failure was not acknowledged ([`Comm::ack_failed`]) by every member. Works on a
    /// revoked communicator.
    pub fn agree(&self, flag: u64) -> Result<u64> {
        let (ft, mut e) = self.ft();
        Ok(ft.agree(e.ext(), self.id, flag)?)
    }

    /// Non-blocking [`Comm::agree`]: `flag` is the contribution on entry and holds the
    /// agreed AND once the request completed (also when it completes with `ProcFailed`).
    pub fn iagree<'scope>(
        &self,
        s: &'scope Scope<'scope, '_>,
        flag: &'scope mut u64,
    ) -> Result<Request<'scope>> {
        self.same_instance(s)?;
        let (ft, mut e) = self.ft();
        let v = *flag;
        // SAFETY: `flag` is borrowed mutably for 'scope, and the scope completes the request
        // before 'scope ends, so the write at completion targets live memory.
        let id = unsafe { ft.iagree(e.ext(), self.id, v, flag as *mut u64)? };
        drop(e);
        Ok(s.register(id))
    }

    /// Shrink: a new communicator of the live members (agreed failed set, agreed context id),
    /// in rank order. Works on a revoked communicator.
    pub fn shrink(&self) -> Result<Comm> {
        let (ft, mut e) = self.ft();
        let id = ft.shrink(e.ext(), self.id)?;
        Ok(Comm { inner: self.inner.clone(), id })
    }

    /// Non-blocking shrink: several may be in flight (on different communicators) and overlap
    /// with other work. The request yields the new communicator.
    pub fn ishrink(&self) -> Result<ShrinkRequest> {
        let mut out = Box::new(0u64);
        let (ft, mut e) = self.ft();
        // SAFETY: the box's heap slot does not move; ShrinkRequest keeps it and does not free
        // it before the request completed (its Drop waits).
        let id = unsafe { ft.ishrink(e.ext(), self.id, &mut *out as *mut u64)? };
        Ok(ShrinkRequest { inner: self.inner.clone(), id: Some(id), out })
    }

    /// Older ULFM spec: acknowledge every failure known now (`MPI_Comm_failure_ack`).
    pub fn failure_ack(&self) -> Result<()> {
        self.ack_failed().map(|_| ())
    }

    /// Older ULFM spec: the ranks whose failure was acknowledged (`MPI_Comm_failure_get_acked`).
    pub fn get_acked(&self) -> Result<Vec<u32>> {
        Ok(self.inner.engine.borrow().get_acked(self.id)?)
    }

    /// Which failures raise errors on this communicator (seed 001): `Local` (default: only
    /// operations involving the failed process), `Group` (any member's failure, until
    /// acknowledged), `Universe` (any failure in the job, until acknowledged).
    pub fn set_error_scope(&self, scope: ErrScope) -> Result<()> {
        Ok(self.inner.engine.borrow_mut().set_error_scope(self.id, scope)?)
    }

    /// The error scope in force.
    pub fn error_scope(&self) -> Result<ErrScope> {
        Ok(self.inner.engine.borrow().error_scope(self.id)?)
    }

    /// Uniform mode: covered collectives (now: [`Comm::barrier`]) are followed by an implicit
    /// agreement so that every member returns the same outcome.
    pub fn set_uniform(&self, on: bool) -> Result<()> {
        let (ft, mut e) = self.ft();
        Ok(ft.set_uniform(e.ext(), self.id, on)?)
    }

    /// For collectives: turn this member's local result into the uniform one when the
    /// communicator is in uniform mode (an agreement runs); otherwise return it unchanged.
    pub fn uniform_after(&self, local: Result<()>) -> Result<()> {
        let local = match local {
            Ok(()) => Ok(()),
            Err(crate::Error::Engine(e)) => Err(e),
            Err(other) => return Err(other),
        };
        uniform_after(self, local)
    }
}

/// A shrink in flight ([`Comm::ishrink`]). Dropping it waits for its completion.
pub struct ShrinkRequest {
    inner: Rc<Inner>,
    id: Option<ReqId>,
    out: Box<u64>,
}

impl ShrinkRequest {
    fn finish(&mut self, r: weft_engine::Result<Option<weft_engine::Status>>) -> Result<Option<Comm>> {
        match r {
            Ok(None) => Ok(None),
            Ok(Some(_)) => {
                self.id = None;
                Ok(Some(Comm { inner: self.inner.clone(), id: CommId::from_raw(*self.out) }))
            }
            Err(e) => {
                self.id = None;
                Err(e.into())
            }
        }
    }

    /// The new communicator once the shrink completed, `None` while in flight.
    pub fn test(&mut self) -> Result<Option<Comm>> {
        let Some(id) = self.id else {
            return Err(crate::EngineError::InvalidRequest.into());
        };
        let r = self.inner.engine.borrow_mut().test(id);
        self.finish(r)
    }

    /// Wait for the new communicator.
    pub fn wait(mut self) -> Result<Comm> {
        let Some(id) = self.id else {
            return Err(crate::EngineError::InvalidRequest.into());
        };
        let r = self.inner.engine.borrow_mut().wait(id).map(Some);
        self.finish(r).map(|c| c.expect("wait completes"))
    }
}

impl Drop for ShrinkRequest {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // The engine writes the result into `out` at completion: wait before freeing it.
            match self.inner.engine.try_borrow_mut() {
                Ok(mut e) => {
                    let _ = e.wait(id);
                }
                // Cannot wait here (re-entrant drop): leak the slot rather than free it.
                Err(_) => {
                    Box::leak(std::mem::replace(&mut self.out, Box::new(0)));
                }
            }
        }
    }
}
