//! Fault-tolerance operations of the core: revoke, agree (the blocking low-latency path and
//! the non-blocking one), shrink, error scope and uniform mode, and the failure knowledge a
//! front end may read (failed and acknowledged ranks). The protocols are `weft-ft`'s.

use weft_engine::{CommId, Common, Communicators, ErrScope, FtPort, ReqId};

use super::{EngineResult, OpsCore};
use crate::{Config, Result};

/// Install the FT layer on a freshly wired engine.
pub(super) fn install(
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
    Ok(weft_ft::Ft::install(FtPort::of(e), opts)?)
}

impl OpsCore {
    /// Counters of the fault-tolerance layer.
    pub fn ft_stats(&self) -> weft_ft::FtStats {
        self.ft.stats()
    }

    /// Revoke `c` at every live member; returns at once.
    pub fn revoke(&self, c: CommId) -> EngineResult<()> {
        self.ft.revoke(FtPort::of(&mut *self.eng()?), c)
    }

    /// True once `c` was revoked (locally or by any member).
    pub fn is_revoked(&self, c: CommId) -> EngineResult<bool> {
        self.eng()?.comm(c).map(|v| v.is_revoked())
    }

    /// Fault-tolerant agreement, blocking, on the low-latency path: `*flag` is the
    /// contribution on entry and the AND over the live members on return, also when the
    /// agreement completes with `ProcFailed`.
    pub fn agree(&self, c: CommId, flag: &mut u64) -> EngineResult<()> {
        self.ft.agree(FtPort::of(&mut *self.eng()?), c, flag)
    }

    /// Non-blocking agreement: `*out` holds the agreed value once the request completed.
    ///
    /// # Safety
    /// `out` must stay valid for writes until the request completes.
    pub unsafe fn iagree(&self, c: CommId, flag: u64, out: *mut u64) -> EngineResult<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.ft.iagree(FtPort::of(&mut *self.eng()?), c, flag, out) }
    }

    /// Shrink: a new communicator of the live members of `c`.
    pub fn shrink(&self, c: CommId) -> EngineResult<CommId> {
        self.ft.shrink(FtPort::of(&mut *self.eng()?), c)
    }

    /// Non-blocking shrink: `*out` holds the new communicator's raw id once the request
    /// completed.
    ///
    /// # Safety
    /// `out` must stay valid for writes until the request completes.
    pub unsafe fn ishrink(&self, c: CommId, out: *mut u64) -> EngineResult<ReqId> {
        // SAFETY: forwarded contract.
        unsafe { self.ft.ishrink(FtPort::of(&mut *self.eng()?), c, out) }
    }

    /// Which failures raise errors on `c`.
    pub fn set_error_scope(&self, c: CommId, scope: ErrScope) -> EngineResult<()> {
        Communicators::of(&mut *self.eng()?).set_error_scope(c, scope)
    }

    /// The error scope of `c`.
    pub fn error_scope(&self, c: CommId) -> EngineResult<ErrScope> {
        self.eng()?.comm(c).map(|v| v.error_scope())
    }

    /// Uniform mode: covered collectives are followed by an agreement on their outcome.
    pub fn set_uniform(&self, c: CommId, on: bool) -> EngineResult<()> {
        self.ft.set_uniform(FtPort::of(&mut *self.eng()?), c, on)
    }

    /// A collective's local outcome made uniform when `c` is in uniform mode.
    #[inline]
    pub fn uniform_after(&self, c: CommId, local: EngineResult<()>) -> EngineResult<()> {
        if !self.ft.may_be_uniform() {
            return local;
        }
        self.ft.uniform_after(FtPort::of(&mut *self.eng()?), c, local)
    }

    /// Ranks of `c` known to have failed.
    pub fn get_failed(&self, c: CommId) -> EngineResult<Vec<u32>> {
        self.eng()?.comm(c).map(|v| v.failed())
    }

    /// Acknowledge the failures known now; how many failed ranks are acknowledged.
    pub fn ack_failed(&self, c: CommId) -> EngineResult<usize> {
        Communicators::of(&mut *self.eng()?).ack_failed(c)
    }

    /// The ranks of `c` whose failure was acknowledged.
    pub fn get_acked(&self, c: CommId) -> EngineResult<Vec<u32>> {
        self.eng()?.comm(c).map(|v| v.acked())
    }

    /// World ranks known to have failed, in order of detection.
    pub fn failed_world_ranks(&self) -> Vec<u32> {
        self.engine.borrow().failures().world_ranks().to_vec()
    }
}
