//! The FT operations the facade calls, as methods of [`Ft`]: installing the layer,
//! revoke, the agreements (blocking, non-blocking, on a whole value), shrink, and the
//! uniform mode of collectives. Each resolves its communicator, starts the protocol through
//! `agreement.rs` or `revocation.rs`, and waits where the call blocks.

use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use weft_engine::{CommId, Common, Error, FtPort, Header, ReqId, Result};

use crate::agree::Value;
use crate::detector::Detector;
use crate::shrink::CtxPool;
use crate::{class, epoch_of};

use super::*;

impl Ft {
    /// Install the FT layer on `e`: message handlers now; the activity on first use (or now,
    /// when the detector is on).
    pub fn install(e: &mut FtPort, opts: FtOptions) -> Result<Ft> {
        let ft = Ft {
            st: Rc::new(RefCell::new(Glue {
                opts,
                clock: Instant::now(),
                active: false,
                uniform_ever: false,
                seen_failures: 0,
                comms: HashMap::default(),
                sweep_at: MIN_SWEEP,
                insts: HashMap::default(),
                spare: Vec::new(),
                ready: None,
                acts: Vec::with_capacity(8),
                parked: Vec::new(),
                parked_at: 0,
                pool: CtxPool::default(),
                det: None,
                stats: FtStats::default(),
                blocked: None,
                buf: Vec::with_capacity(64),
                data_inflight: None,
            })),
        };
        for cls in [class::REVOKE, class::AGREE, class::HEARTBEAT, class::FINDING] {
            let st = ft.st.clone();
            e.set_handler(
                cls,
                Box::new(move |e: &mut FtPort, peer: u32, h: &Header, p: &[u8]| {
                    let mut g = st.borrow_mut();
                    g.on_message(e, peer, h.class, p);
                    // Parked messages are retried by the slow-path driver, which a process
                    // that never called an FT operation (and has no detector) lacks: without
                    // it a revoke that arrived before its communicator was created here
                    // would never be delivered.
                    if !g.parked.is_empty() {
                        g.ensure_active(e, &st);
                    }
                }),
            )?;
        }
        let mut g = ft.st.borrow_mut();
        if let Some(p) = g.opts.hb_period_ms {
            let period = p.max(1) * 1_000_000;
            let timeout = g.opts.hb_timeout_ms.map_or(3 * period, |t| t.max(1) * 1_000_000);
            let world = e.comm(e.world())?;
            let (n, me) = (world.size(), world.world_rank(world.rank())?);
            let now = g.now();
            let mut d = Detector::new(n, me, period, timeout, now);
            for &w in e.failures().world_ranks() {
                d.on_failure(w, now);
            }
            g.det = Some(d);
            g.ensure_active(e, &ft.st);
        }
        drop(g);
        Ok(ft)
    }

    /// Counters.
    pub fn stats(&self) -> FtStats {
        self.st.borrow().stats.clone()
    }

    pub(super) fn activate(&self, e: &mut FtPort) {
        self.st.borrow_mut().ensure_active(e, &self.st);
    }

    /// Revoke `c` at every live member (reliable broadcast); returns at once.
    pub fn revoke(&self, e: &mut FtPort, c: CommId) -> Result<()> {
        self.activate(e);
        if e.comm(c)?.is_revoked() {
            return Ok(());
        }
        let ctx = e.comm(c)?.ctx();
        let epoch = match self.st.borrow().comms.get(&ctx).filter(|i| i.id == c) {
            Some(i) => i.epoch,
            None => epoch_of(e.comm(c)?.members()),
        };
        self.st.borrow_mut().revoke_here(e, c, ctx, epoch, None)
    }

    /// Start an agreement on `c`: AND of `flag` over the members; the result is written to
    /// `*out` when the returned request completes (with `ProcFailed` if the agreed failed set
    /// has failures not acknowledged by every member; `*out` is valid then too).
    ///
    /// # Safety
    /// `out` must stay valid for a write of a `u64` until the request completes.
    pub unsafe fn iagree(&self, e: &mut FtPort, c: CommId, flag: u64, out: *mut u64) -> Result<ReqId> {
        self.start_agree(e, c, flag, |e| {
            let req = e.new_request(c)?;
            Ok((Local::Agree { req, out }, req))
        })
    }

    /// Start an agreement on `c` with contribution `flag`; `local` (called once `c` is known
    /// valid) says where its outcome goes.
    pub(super) fn start_agree<T>(
        &self,
        e: &mut FtPort,
        c: CommId,
        flag: u64,
        local: impl FnOnce(&mut FtPort) -> Result<(Local, T)>,
    ) -> Result<T> {
        self.activate(e);
        let mut g = self.st.borrow_mut();
        let ctx = g.info(e, c)?;
        let (local, t) = local(e)?;
        let failed = e.comm(c)?.failed();
        let acked = e.comm(c)?.acked();
        g.start(e, ctx, local, Value::new(flag, 0, &failed, &acked), true);
        Ok(t)
    }

    /// Blocking agreement: `*flag` is this member's contribution on entry and the AND over
    /// the live members on return, also when the agreement completes with `ProcFailed`
    /// (failures not acknowledged by every member). Waits on the engine directly, without an
    /// engine request.
    pub fn agree(&self, e: &mut FtPort, c: CommId, flag: &mut u64) -> Result<()> {
        self.activate(e);
        {
            let mut g = self.st.borrow_mut();
            let ctx = g.info(e, c)?;
            if g.decide_alone(e, ctx) {
                // The only contributor left: the AND is its flag, and the agreed failed set
                // (every other member) is reported unless this member acknowledged it all.
                return if e.comm(c).is_ok_and(|v| v.has_unacked_failure()) {
                    let acked = e.comm(c)?.acked();
                    let mut ranks = e.comm(c)?.failed();
                    ranks.retain(|r| !acked.contains(r));
                    Err(Error::ProcFailed { ranks })
                } else {
                    Ok(())
                };
            }
            if let Some(x) = g.data_begin(e, ctx) {
                drop(g);
                if let Some(v) = self.data_agree(e, c, x, *flag)? {
                    *flag = v;
                    return Ok(());
                }
                return self.blocked_outcome(e, flag);
            }
        }
        self.start_agree(e, c, *flag, |_| Ok((Local::Blocking, ())))?;
        self.blocked_outcome(e, flag)
    }

    /// The outcome of the blocking agreement started on `flag`'s behalf (see [`Ft::agree`]).
    pub(super) fn blocked_outcome(&self, e: &mut FtPort, flag: &mut u64) -> Result<()> {
        let (v, r) = match self.wait_blocked(e).outcome() {
            Ok(v) => (v, Ok(())),
            Err((v, ranks)) => (v, Err(Error::ProcFailed { ranks })),
        };
        *flag = v;
        r
    }

    /// Blocking agreement on a whole [`Value`] — AND of the flags, max of the context ids,
    /// union of `failed`, intersection of `acked` — returning the decision as it is, for a
    /// protocol that encodes its own sets in it (the DGRP round barrier). The agreement adds
    /// the ranks of `c` that fail to `failed`; no acknowledgement rule applies.
    pub fn agree_value(&self, e: &mut FtPort, c: CommId, v: Value) -> Result<Value> {
        if !v.is_canonical() {
            return Err(Error::InvalidArg(
                "agreement value: rank lists must be sorted, without duplicates".into(),
            ));
        }
        self.activate(e);
        {
            let mut g = self.st.borrow_mut();
            let ctx = g.info(e, c)?;
            g.start(e, ctx, Local::Blocking, v, false);
        }
        Ok(self.wait_blocked(e))
    }

    /// Wait for the decision of the blocking agreement just started (`blocked` is empty
    /// before: every blocking agreement takes its decision here).
    pub(super) fn wait_blocked(&self, e: &mut FtPort) -> Value {
        let mut spins = 0;
        loop {
            if let Some(v) = self.st.borrow_mut().blocked.take() {
                return v;
            }
            e.idle_wait(&mut spins);
        }
    }

    /// Start a shrink of `c`; when the request completes, `*out` holds the new communicator
    /// ([`CommId::to_raw`]; also in the status's `count`).
    ///
    /// # Safety
    /// `out` must stay valid for a write of a `u64` until the request completes.
    pub unsafe fn ishrink(&self, e: &mut FtPort, c: CommId, out: *mut u64) -> Result<ReqId> {
        self.activate(e);
        let mut g = self.st.borrow_mut();
        let ctx = g.info(e, c)?;
        let req = e.new_request(c)?;
        let failed = e.comm(c)?.failed();
        let prop = g.pool.propose(e.contexts().next());
        g.start(e, ctx, Local::Shrink { req, out }, Value::new(u64::MAX, prop, &failed, &[]), true);
        Ok(req)
    }

    /// Blocking shrink.
    pub fn shrink(&self, e: &mut FtPort, c: CommId) -> Result<CommId> {
        let mut out = 0u64;
        // SAFETY: `out` outlives the request: it is waited for below.
        let req = unsafe { self.ishrink(e, c, &mut out)? };
        e.wait(req)?;
        Ok(CommId::from_raw(out))
    }

    /// Uniform mode of `c`: collectives that call [`Ft::uniform_after`] agree on their outcome.
    pub fn set_uniform(&self, e: &mut FtPort, c: CommId, on: bool) -> Result<()> {
        let mut g = self.st.borrow_mut();
        let ctx = g.info(e, c)?;
        g.comms.get_mut(&ctx).expect("just resolved").uniform = on;
        g.uniform_ever |= on;
        Ok(())
    }

    /// False when no communicator was ever put in uniform mode (then [`Ft::uniform_after`]
    /// returns the local outcome on every communicator).
    #[inline]
    pub fn may_be_uniform(&self) -> bool {
        self.st.borrow().uniform_ever
    }

    /// True if `c` is in uniform mode.
    pub fn is_uniform(&self, e: &FtPort, c: CommId) -> bool {
        let g = self.st.borrow();
        if !g.uniform_ever {
            return false;
        }
        e.comm(c)
            .map(|v| v.ctx())
            .ok()
            .and_then(|ctx| g.comms.get(&ctx))
            .is_some_and(|i| i.id == c && i.uniform)
    }

    /// Make the outcome of a collective on `c` uniform (when `c` is in uniform mode): an
    /// agreement on "did it succeed here" follows, and every member returns the same class:
    /// `Ok` everywhere, or the same error class everywhere (`ProcFailed` with the agreed
    /// ranks, else `Revoked`, else the local error / a generic "failed at another member").
    pub fn uniform_after(&self, e: &mut FtPort, c: CommId, local: Result<()>) -> Result<()> {
        if !self.is_uniform(e, c) {
            return local;
        }
        const OK: u64 = 1;
        const NO_PF: u64 = 2;
        const NO_REV: u64 = 4;
        let mut flag = OK | NO_PF | NO_REV;
        match &local {
            Ok(()) => {}
            Err(Error::ProcFailed { .. } | Error::ProcFailedPending) => flag &= !(OK | NO_PF),
            Err(Error::Revoked) => flag &= !(OK | NO_REV),
            Err(_) => flag &= !OK,
        }
        let mut out = 0u64;
        // SAFETY: `out` outlives the request: it is waited for below.
        let req = unsafe { self.iagree(e, c, flag, &mut out)? };
        let agreed = e.wait(req);
        match agreed {
            Ok(_) if out & OK != 0 => Ok(()),
            Err(Error::ProcFailed { ranks }) => Err(Error::ProcFailed { ranks }),
            Err(other) => Err(other),
            Ok(_) if out & NO_PF == 0 => Err(match local {
                Err(e @ Error::ProcFailed { .. }) => e,
                _ => Error::ProcFailed { ranks: e.comm(c).map(|v| v.failed()).unwrap_or_default() },
            }),
            Ok(_) if out & NO_REV == 0 => Err(Error::Revoked),
            Ok(_) => Err(match local {
                Err(e) => e,
                Ok(()) => Error::InvalidArg("uniform collective: it failed at another member".into()),
            }),
        }
    }
}
