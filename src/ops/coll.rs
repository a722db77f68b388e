//! Collective operations of the core: which barrier runs, blocking and non-blocking runs of a
//! [`Spec`], sizing a spec whose buffers came without lengths (C, MPI), and the
//! per-communicator algorithm choice.

use weft_coll::{Kind, Spec};
use weft_engine::{CollPort, CommId, ReqId};

use super::{EngineResult, OpsCore};
use crate::{Config, EngineError};

/// The collectives state of a new instance: node of every world rank (from the runtime), the
/// `WEFT_COLL_*` overrides, and the eager limit (largest header-checked message).
pub(super) fn state(cfg: &Config, rt: &dyn weft_pmix::Runtime) -> weft_coll::Coll {
    let nodes = (0..rt.size()).map(|r| rt.node_of(r).unwrap_or(0)).collect();
    let mut c = weft_coll::Coll::new(nodes, cfg.eager_limit);
    c.set_overrides(cfg.coll.clone());
    c
}

/// A spec shared by every call that reads it in place (a local one is copied into each call's
/// frame).
struct Shared(Spec<'static>);

// SAFETY: the shared specs hold null pointers and empty slices only and are never written, so
// sharing one between threads shares no data.
unsafe impl Sync for Shared {}

/// The barrier's spec.
static BARRIER: Shared = Shared(Spec::new(Kind::Barrier, weft_coll::DType::U8));

impl OpsCore {
    /// Barrier: the collectives engine's, which on an error sends an abort along its schedule
    /// so that a rank whose partners are alive does not wait for one that bailed out; then the
    /// uniform-mode hook (an agreement on the outcome when the communicator is uniform).
    #[inline]
    pub fn barrier(&self, c: CommId) -> EngineResult<()> {
        // SAFETY: a barrier has no buffers.
        let local = unsafe { self.run(c, &BARRIER.0) };
        self.uniform_after(c, local)
    }

    /// Run a collective to completion in the caller (no activity, no request).
    ///
    /// # Safety
    /// The buffers of `spec` must be valid for its lengths (reads of `send`, reads and writes
    /// of `recv`) and otherwise unused for the duration of the call.
    #[inline]
    pub unsafe fn run(&self, c: CommId, spec: &Spec) -> EngineResult<()> {
        let mut e = self.eng()?;
        let mut coll = self.coll.try_borrow_mut().map_err(|_| super::reentrant())?;
        // SAFETY: forwarded contract.
        unsafe { coll.run(CollPort::of(&mut e), c, spec) }
    }

    /// [`OpsCore::run`] for a spec whose buffers came as bare pointers (C, MPI), this process
    /// being `rank` of `n` ranks of `c`: a call shaped as one that ran on `c` before takes the
    /// buffer lengths its cached plan recorded, so one lookup sizes it, checks it and finds
    /// its plan; any other call is sized by [`OpsCore::size_spec`] first (which rejects a bad
    /// one with the same errors either way).
    ///
    /// # Safety
    /// The buffers of `spec` must be valid for the lengths the call's counts give them (as
    /// [`OpsCore::size_spec`] computes), and otherwise unused for the duration of the call.
    #[inline]
    pub unsafe fn run_bare(&self, c: CommId, rank: u32, n: u32, spec: &mut Spec) -> EngineResult<()> {
        let mut e = self.eng()?;
        let mut coll = self.coll.try_borrow_mut().map_err(|_| super::reentrant())?;
        // SAFETY: forwarded contract.
        unsafe { coll.run_bare(CollPort::of(&mut e), c, spec, |s| Self::size_spec(rank, n, s)) }
    }

    /// Start a collective; the request completes when it is over.
    ///
    /// # Safety
    /// The buffers of `spec` must stay valid for its lengths, and otherwise unused, until the
    /// request completes. The count arrays are read during this call only.
    pub unsafe fn start(&self, c: CommId, spec: &Spec) -> EngineResult<ReqId> {
        let mut e = self.eng()?;
        let mut coll = self.coll.try_borrow_mut().map_err(|_| super::reentrant())?;
        // SAFETY: forwarded contract.
        unsafe { coll.start(CollPort::of(&mut e), c, spec) }
    }

    /// Fill in the buffer lengths of a collective whose buffers came as bare pointers: from the
    /// counts (the table of `weft_coll::needs`), after checking the root, for this process as
    /// `rank` of a communicator of `n` ranks (the caller has read both to know which count
    /// arrays to read). A null buffer that must hold data, and a send buffer equal to the
    /// receive buffer outside allreduce (the only collective that works in place), are
    /// `InvalidArg`.
    pub fn size_spec(rank: u32, n: u32, spec: &mut Spec) -> EngineResult<()> {
        let k = spec.kind;
        if k.rooted() && spec.root >= n {
            return Err(EngineError::InvalidRank { rank: spec.root.into(), size: n });
        }
        let (send_len, recv_len) = weft_coll::needs::needs(spec, rank, n)?;
        let null = |what: &str, len: usize| {
            EngineError::InvalidArg(format!("invalid argument: `{what}` is NULL with length {len}"))
        };
        if send_len > 0 && spec.send.is_null() {
            return Err(null("send", send_len));
        }
        if recv_len > 0 && spec.recv.is_null() {
            return Err(null(if k == Kind::Bcast { "buf" } else { "recv" }, recv_len));
        }
        if send_len > 0 && recv_len > 0 && std::ptr::eq(spec.send, spec.recv) && k != Kind::Allreduce {
            return Err(EngineError::InvalidArg(format!(
                "{}: send and receive buffers are the same (only allreduce works in place)",
                k.name()
            )));
        }
        (spec.send_len, spec.recv_len) = (send_len, recv_len);
        Ok(())
    }

    /// Choose the algorithm of one collective on `c`: key `coll_<name>`, value an algorithm
    /// name or `auto`.
    pub fn set_info(&self, c: CommId, key: &str, value: &str) -> EngineResult<()> {
        self.coll.borrow_mut().set_info(c, key, value)
    }

    /// The algorithm a call described by `spec` would use now.
    pub fn coll_algorithm(&self, c: CommId, spec: &Spec) -> EngineResult<weft_coll::select::Alg> {
        let e = self.eng()?;
        let r = self.coll.borrow_mut().algorithm(CollPort::of_ref(&e), c, spec);
        r
    }
}
