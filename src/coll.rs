//! Collectives in the safe API: `impl Comm` blocks over `weft-coll`.
//!
//! Every collective comes blocking (`allreduce`) and non-blocking (`iallreduce`, buffers
//! borrowed for the [`Scope`] like `isend`). Element types implement [`Datatype`]: every
//! fixed-size integer and float, and the MINLOC/MAXLOC pairs [`IntInt`], [`FloatInt`],
//! [`DoubleInt`]; raw bytes with an explicit [`DType`] go through [`Comm::allreduce_raw`]
//! and the unsafe [`Comm::start_raw`] (for the C ABI). Algorithms are chosen per call
//! (`weft_coll::select`), overridable with `WEFT_COLL_<NAME>` or [`Comm::set_info`].
//!
//! ```no_run
//! use weft::coll::Op;
//! let w = weft::init()?;
//! let world = w.world();
//! let mine = [world.rank() as f64; 4];
//! let mut sum = [0.0; 4];
//! world.allreduce(&mine, &mut sum, Op::Sum)?;
//! let a = [1u32, 2];
//! let mut out = [0u32; 2];
//! w.scope(|s| {
//!     let r = world.iallreduce(s, &a, &mut out, Op::Max)?;
//!     r.wait().map(|_| ())
//! })?;
//! # Ok::<(), weft::Error>(())
//! ```

use std::mem::size_of_val;

pub use weft_coll::select::Alg;
pub use weft_coll::{
    as_bytes, DType, Datatype, DoubleInt, FloatInt, IntInt, Kind, Op, Overrides, Spec, UserFnPtr,
};

use crate::api::{Comm, Request, Scope};
use crate::{Config, Result};

/// The collectives state of a weft instance: node of every world rank (from the runtime),
/// the `WEFT_COLL_*` overrides, and the eager limit (largest header-checked message).
pub(crate) fn state(cfg: &Config, rt: &dyn weft_pmix::Runtime) -> weft_coll::Coll {
    let nodes = (0..rt.size()).map(|r| rt.node_of(r).unwrap_or(0)).collect();
    let mut c = weft_coll::Coll::new(nodes, cfg.eager_limit);
    c.set_overrides(cfg.coll.clone());
    c
}

fn rd<T: Datatype>(s: &[T]) -> (*const u8, usize) {
    (s.as_ptr() as *const u8, size_of_val(s))
}

fn wr<T: Datatype>(s: &mut [T]) -> (*mut u8, usize) {
    (s.as_mut_ptr() as *mut u8, size_of_val(s))
}

fn spec<'a>(
    kind: Kind,
    dt: DType,
    send: (*const u8, usize),
    recv: (*mut u8, usize),
    count: usize,
) -> Spec<'a> {
    let mut s = Spec::new(kind, dt);
    (s.send, s.send_len, s.recv, s.recv_len, s.count) = (send.0, send.1, recv.0, recv.1, count);
    s
}

const NONE: (*const u8, usize) = (std::ptr::null(), 0);

impl Comm {
    /// Blocking: executed in the caller (post, wait on the engine requests, reduce), without
    /// an activity or a generic request.
    fn coll_run(&self, spec: &Spec) -> Result<()> {
        let mut e = self.inner.engine.borrow_mut();
        // SAFETY: the buffers in `spec` are borrowed by the caller for this whole call, which
        // returns only when the collective is over.
        unsafe { self.inner.coll.borrow_mut().run(e.ext(), self.id, spec)? };
        Ok(())
    }

    /// Non-blocking: start and register with the scope.
    ///
    /// # Safety
    /// The buffers in `spec` must be borrowed for `'scope`.
    unsafe fn coll_start<'scope>(
        &self,
        s: &'scope Scope<'scope, '_>,
        spec: &Spec,
    ) -> Result<Request<'scope>> {
        self.same_instance(s)?;
        let mut e = self.inner.engine.borrow_mut();
        // SAFETY: the caller borrows the buffers for 'scope; the scope completes the request
        // before 'scope ends.
        let id = unsafe { self.inner.coll.borrow_mut().start(e.ext(), self.id, spec)? };
        drop(e);
        Ok(s.register(id))
    }

    /// Choose the algorithm of one collective on this communicator: key `coll_<name>`
    /// (e.g. `coll_allreduce`), value an algorithm name (`ring`, `binbin`, ...) or `auto`.
    /// Unknown keys and algorithms are `InvalidArg` errors.
    pub fn set_info(&self, key: &str, value: &str) -> Result<()> {
        Ok(self.inner.coll.borrow_mut().set_info(self.id, key, value)?)
    }

    /// The algorithm a call described by `spec` would use now (diagnostics, tests).
    pub fn coll_algorithm(&self, spec: &Spec) -> Result<Alg> {
        let e = self.inner.engine.borrow();
        Ok(self.inner.coll.borrow_mut().algorithm(e.ext_ref(), self.id, spec)?)
    }

    /// Start any collective from raw parts (the C ABI's entry point).
    ///
    /// # Safety
    /// The buffers of `spec` must stay valid (and otherwise unused) until the returned
    /// request completes; it is waited for with the engine's test/wait on its raw id.
    pub unsafe fn start_raw(&self, spec: &Spec) -> Result<weft_engine::ReqId> {
        let mut e = self.inner.engine.borrow_mut();
        // SAFETY: forwarded contract.
        Ok(unsafe { self.inner.coll.borrow_mut().start(e.ext(), self.id, spec)? })
    }

    /// Run any collective from raw parts, blocking (the fast path of [`Comm::allreduce`] and
    /// the other blocking calls: executed in the caller, no request).
    ///
    /// # Safety
    /// The buffers of `spec` must be valid (and otherwise unused) for the duration of the call.
    pub unsafe fn run_raw(&self, spec: &Spec) -> Result<()> {
        let mut e = self.inner.engine.borrow_mut();
        // SAFETY: forwarded contract.
        unsafe { self.inner.coll.borrow_mut().run(e.ext(), self.id, spec)? };
        Ok(())
    }

    /// Barrier through the collectives engine (algorithm selection applies; `barrier` is the
    /// engine's dissemination barrier).
    pub fn coll_barrier(&self) -> Result<()> {
        self.coll_run(&Spec::new(Kind::Barrier, DType::U8))
    }

    /// Non-blocking barrier.
    pub fn ibarrier<'scope>(&self, s: &'scope Scope<'scope, '_>) -> Result<Request<'scope>> {
        // SAFETY: no buffers.
        unsafe { self.coll_start(s, &Spec::new(Kind::Barrier, DType::U8)) }
    }

    /// Broadcast `buf` from `root`.
    pub fn bcast<T: Datatype>(&self, buf: &mut [T], root: u32) -> Result<()> {
        let mut sp = spec(Kind::Bcast, T::DTYPE, NONE, wr(buf), buf.len());
        sp.root = root;
        self.coll_run(&sp)
    }

    /// Non-blocking broadcast.
    pub fn ibcast<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        root: u32,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Bcast, T::DTYPE, NONE, wr(buf), buf.len());
        sp.root = root;
        // SAFETY: `buf` is borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Reduce `send` with `op` into `recv` at `root` (`recv` is ignored elsewhere and may be
    /// empty there).
    pub fn reduce<T: Datatype>(&self, send: &[T], recv: &mut [T], op: Op, root: u32) -> Result<()> {
        let mut sp = spec(Kind::Reduce, T::DTYPE, rd(send), wr(recv), send.len());
        (sp.op, sp.root) = (Some(op), root);
        self.coll_run(&sp)
    }

    /// Non-blocking reduce.
    pub fn ireduce<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: Op,
        root: u32,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Reduce, T::DTYPE, rd(send), wr(recv), send.len());
        (sp.op, sp.root) = (Some(op), root);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Allreduce `send` with `op` into `recv` (same length).
    pub fn allreduce<T: Datatype>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        let mut sp = spec(Kind::Allreduce, T::DTYPE, rd(send), wr(recv), send.len());
        sp.op = Some(op);
        self.coll_run(&sp)
    }

    /// In-place allreduce: `buf` is both contribution and result.
    pub fn allreduce_inplace<T: Datatype>(&self, buf: &mut [T], op: Op) -> Result<()> {
        let (p, len) = wr(buf);
        let mut sp = spec(Kind::Allreduce, T::DTYPE, (p as *const u8, len), (p, len), buf.len());
        sp.op = Some(op);
        self.coll_run(&sp)
    }

    /// Allreduce over raw bytes interpreted as `dtype` (e.g. `DType::Byte` with `Op::Bxor`).
    pub fn allreduce_raw(&self, send: &[u8], recv: &mut [u8], dtype: DType, op: Op) -> Result<()> {
        let count = send.len() / dtype.size();
        let mut sp = spec(Kind::Allreduce, dtype, rd(send), wr(recv), count);
        sp.op = Some(op);
        self.coll_run(&sp)
    }

    /// Non-blocking allreduce.
    pub fn iallreduce<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: Op,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Allreduce, T::DTYPE, rd(send), wr(recv), send.len());
        sp.op = Some(op);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Gather `send` from every rank into `recv` (size × `send.len()`) at `root`.
    pub fn gather<T: Datatype>(&self, send: &[T], recv: &mut [T], root: u32) -> Result<()> {
        let mut sp = spec(Kind::Gather, T::DTYPE, rd(send), wr(recv), send.len());
        sp.root = root;
        self.coll_run(&sp)
    }

    /// Non-blocking gather.
    pub fn igather<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        root: u32,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Gather, T::DTYPE, rd(send), wr(recv), send.len());
        sp.root = root;
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Gather with per-rank counts; `counts` and `displs` (elements) matter at the root.
    pub fn gatherv<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<()> {
        let mut sp = spec(Kind::Gatherv, T::DTYPE, rd(send), wr(recv), send.len());
        (sp.root, sp.rcounts, sp.rdispls) = (root, counts, displs);
        self.coll_run(&sp)
    }

    /// Non-blocking gatherv.
    pub fn igatherv<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Gatherv, T::DTYPE, rd(send), wr(recv), send.len());
        (sp.root, sp.rcounts, sp.rdispls) = (root, counts, displs);
        // SAFETY: buffers borrowed for 'scope (counts are read at start).
        unsafe { self.coll_start(s, &sp) }
    }

    /// Scatter blocks of `send` (size × `recv.len()`, at `root`) into `recv`.
    pub fn scatter<T: Datatype>(&self, send: &[T], recv: &mut [T], root: u32) -> Result<()> {
        let mut sp = spec(Kind::Scatter, T::DTYPE, rd(send), wr(recv), recv.len());
        sp.root = root;
        self.coll_run(&sp)
    }

    /// Non-blocking scatter.
    pub fn iscatter<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        root: u32,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Scatter, T::DTYPE, rd(send), wr(recv), recv.len());
        sp.root = root;
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Scatter with per-rank counts (`counts`, `displs` in elements, read at the root).
    pub fn scatterv<T: Datatype>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: u32,
    ) -> Result<()> {
        let mut sp = spec(Kind::Scatterv, T::DTYPE, rd(send), wr(recv), recv.len());
        (sp.root, sp.scounts, sp.sdispls) = (root, counts, displs);
        self.coll_run(&sp)
    }

    /// Non-blocking scatterv.
    pub fn iscatterv<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'scope mut [T],
        root: u32,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Scatterv, T::DTYPE, rd(send), wr(recv), recv.len());
        (sp.root, sp.scounts, sp.sdispls) = (root, counts, displs);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Allgather `send` from every rank into `recv` (size × `send.len()`).
    pub fn allgather<T: Datatype>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.coll_run(&spec(Kind::Allgather, T::DTYPE, rd(send), wr(recv), send.len()))
    }

    /// Non-blocking allgather.
    pub fn iallgather<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &spec(Kind::Allgather, T::DTYPE, rd(send), wr(recv), send.len())) }
    }

    /// Allgather with per-rank counts (`counts[rank]` must equal `send.len()`).
    pub fn allgatherv<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let mut sp = spec(Kind::Allgatherv, T::DTYPE, rd(send), wr(recv), send.len());
        (sp.rcounts, sp.rdispls) = (counts, displs);
        self.coll_run(&sp)
    }

    /// Non-blocking allgatherv.
    pub fn iallgatherv<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Allgatherv, T::DTYPE, rd(send), wr(recv), send.len());
        (sp.rcounts, sp.rdispls) = (counts, displs);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// All-to-all: block i of `send` goes to rank i, block j of `recv` comes from rank j.
    pub fn alltoall<T: Datatype>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let n = self.size().max(1) as usize;
        self.coll_run(&spec(Kind::Alltoall, T::DTYPE, rd(send), wr(recv), send.len() / n))
    }

    /// Non-blocking all-to-all.
    pub fn ialltoall<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        let n = self.size().max(1) as usize;
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &spec(Kind::Alltoall, T::DTYPE, rd(send), wr(recv), send.len() / n)) }
    }

    /// All-to-all with per-rank counts and displacements (elements).
    pub fn alltoallv<T: Datatype>(
        &self,
        send: &[T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let mut sp = spec(Kind::Alltoallv, T::DTYPE, rd(send), wr(recv), 0);
        (sp.scounts, sp.sdispls, sp.rcounts, sp.rdispls) = (scounts, sdispls, rcounts, rdispls);
        self.coll_run(&sp)
    }

    /// Non-blocking alltoallv.
    #[allow(clippy::too_many_arguments)]
    pub fn ialltoallv<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'scope mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Alltoallv, T::DTYPE, rd(send), wr(recv), 0);
        (sp.scounts, sp.sdispls, sp.rcounts, sp.rdispls) = (scounts, sdispls, rcounts, rdispls);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Reduce-scatter: `send` holds Σ counts elements; rank i gets the reduction of block i
    /// (`counts[i]` elements) in `recv`.
    pub fn reduce_scatter<T: Datatype>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<()> {
        let mut sp = spec(Kind::ReduceScatter, T::DTYPE, rd(send), wr(recv), recv.len());
        (sp.rcounts, sp.op) = (counts, Some(op));
        self.coll_run(&sp)
    }

    /// Non-blocking reduce-scatter.
    pub fn ireduce_scatter<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::ReduceScatter, T::DTYPE, rd(send), wr(recv), recv.len());
        (sp.rcounts, sp.op) = (counts, Some(op));
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Reduce-scatter with equal blocks of `recv.len()` elements.
    pub fn reduce_scatter_block<T: Datatype>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        let mut sp = spec(Kind::ReduceScatterBlock, T::DTYPE, rd(send), wr(recv), recv.len());
        sp.op = Some(op);
        self.coll_run(&sp)
    }

    /// Non-blocking reduce-scatter-block.
    pub fn ireduce_scatter_block<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: Op,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::ReduceScatterBlock, T::DTYPE, rd(send), wr(recv), recv.len());
        sp.op = Some(op);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Inclusive prefix reduction over ranks 0..=rank.
    pub fn scan<T: Datatype>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        let mut sp = spec(Kind::Scan, T::DTYPE, rd(send), wr(recv), send.len());
        sp.op = Some(op);
        self.coll_run(&sp)
    }

    /// Non-blocking scan.
    pub fn iscan<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: Op,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Scan, T::DTYPE, rd(send), wr(recv), send.len());
        sp.op = Some(op);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }

    /// Exclusive prefix reduction over ranks 0..rank (rank 0's `recv` is left untouched).
    pub fn exscan<T: Datatype>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        let mut sp = spec(Kind::Exscan, T::DTYPE, rd(send), wr(recv), send.len());
        sp.op = Some(op);
        self.coll_run(&sp)
    }

    /// Non-blocking exscan.
    pub fn iexscan<'scope, T: Datatype>(
        &self,
        s: &'scope Scope<'scope, '_>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: Op,
    ) -> Result<Request<'scope>> {
        let mut sp = spec(Kind::Exscan, T::DTYPE, rd(send), wr(recv), send.len());
        sp.op = Some(op);
        // SAFETY: buffers borrowed for 'scope.
        unsafe { self.coll_start(s, &sp) }
    }
}
