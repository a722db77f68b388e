//! Collectives in the safe API: `impl Comm` blocks over `weft-coll`.
//!
//! Every collective comes blocking (`allreduce`) and non-blocking (`iallreduce`, buffers
//! borrowed for the [`Scope`] like `isend`). Element types implement [`Datatype`]: every
//! fixed-size integer and float, and the MINLOC/MAXLOC pairs [`IntInt`], [`FloatInt`],
//! [`DoubleInt`]; raw bytes with an explicit [`DType`] go through [`Comm::allreduce_raw`].
//! Algorithms are chosen per call (`weft_coll::select`), overridable with `WEFT_COLL_<NAME>`
//! or [`Comm::set_info`].
//!
//! This file holds only the Rust rules: slices become a [`Spec`], blocking calls borrow their
//! buffers for the call and non-blocking ones for the [`Scope`]. Each blocking /
//! non-blocking pair is generated from one description by `collectives!`; both run through
//! the operations core (`ops/coll.rs`), as the C ABI's collectives do.
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
use crate::Result;

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
    ///
    /// # Safety
    /// The buffers in `spec` must be borrowed by the caller for the whole call.
    #[inline]
    unsafe fn coll_run(&self, spec: &Spec) -> Result<()> {
        // SAFETY: forwarded contract; the call returns only when the collective is over.
        unsafe { Ok(self.core.run(self.id, spec)?) }
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
        // SAFETY: the caller borrows the buffers for 'scope; the scope completes the request
        // before 'scope ends.
        let id = unsafe { self.core.start(self.id, spec)? };
        Ok(s.register(id))
    }

    /// Choose the algorithm of one collective on this communicator: key `coll_<name>`
    /// (e.g. `coll_allreduce`), value an algorithm name (`ring`, `binbin`, ...) or `auto`.
    /// Unknown keys and algorithms are `InvalidArg` errors.
    pub fn set_info(&self, key: &str, value: &str) -> Result<()> {
        Ok(self.core.set_info(self.id, key, value)?)
    }

    /// The algorithm a call described by `spec` would use now (diagnostics, tests).
    pub fn coll_algorithm(&self, spec: &Spec) -> Result<Alg> {
        Ok(self.core.coll_algorithm(self.id, spec)?)
    }

    /// Non-blocking barrier.
    pub fn ibarrier<'scope>(&self, s: &'scope Scope<'scope, '_>) -> Result<Request<'scope>> {
        // SAFETY: no buffers.
        unsafe { self.coll_start(s, &Spec::new(Kind::Barrier, DType::U8)) }
    }

    /// In-place allreduce: `buf` is both contribution and result.
    pub fn allreduce_inplace<T: Datatype>(&self, buf: &mut [T], op: Op) -> Result<()> {
        let (p, len) = wr(buf);
        let mut sp = spec(Kind::Allreduce, T::DTYPE, (p as *const u8, len), (p, len), buf.len());
        sp.op = Some(op);
        // SAFETY: `buf` is borrowed mutably for the call.
        unsafe { self.coll_run(&sp) }
    }

    /// Allreduce over raw bytes interpreted as `dtype` (e.g. `DType::Byte` with `Op::Bxor`).
    pub fn allreduce_raw(&self, send: &[u8], recv: &mut [u8], dtype: DType, op: Op) -> Result<()> {
        let count = send.len() / dtype.size();
        let mut sp = spec(Kind::Allreduce, dtype, rd(send), wr(recv), count);
        sp.op = Some(op);
        // SAFETY: the buffers are borrowed for the call.
        unsafe { self.coll_run(&sp) }
    }
}

/// The type of one collective parameter: `ref` / `mut` are element buffers (`&[T]`,
/// `&mut [T]`) borrowed for `$l`; `(type)` is any other argument.
macro_rules! param {
    (ref, $l:lifetime, $T:ident) => { &$l [$T] };
    (mut, $l:lifetime, $T:ident) => { &$l mut [$T] };
    (($t:ty), $l:lifetime, $T:ident) => { $t };
}

/// Generate a blocking collective and its non-blocking twin from one description:
/// `name / iname (param: kind, ...) [with comm] => spec`, where `spec` builds the call's
/// [`Spec`] from the parameters (and `comm`, the communicator, when named).
macro_rules! collectives {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident / $iname:ident ($($p:ident: $k:tt),*) $(with $c:ident)? => $spec:expr;
    )*) => {
        impl Comm { $(
            $(#[doc = $doc])*
            #[allow(clippy::too_many_arguments)]
            pub fn $name<T: Datatype>(&self, $($p: param!($k, '_, T)),*) -> Result<()> {
                $(let $c = self;)?
                let sp = $spec;
                // SAFETY: the buffers are borrowed for the whole call, which returns only when
                // the collective is over.
                unsafe { self.coll_run(&sp) }
            }

            #[doc = concat!("Non-blocking [`Comm::", stringify!($name), "`]: the buffers stay \
                borrowed until the scope ends; count and displacement arrays are read at once.")]
            #[allow(clippy::too_many_arguments)]
            pub fn $iname<'scope, T: Datatype>(
                &self,
                s: &'scope Scope<'scope, '_>,
                $($p: param!($k, 'scope, T)),*
            ) -> Result<Request<'scope>> {
                $(let $c = self;)?
                let sp = $spec;
                // SAFETY: the buffers are borrowed for 'scope, and the scope completes the
                // request before 'scope ends.
                unsafe { self.coll_start(s, &sp) }
            }
        )* }
    };
}

collectives! {
    /// Broadcast `buf` from `root`.
    bcast / ibcast (buf: mut, root: (u32)) => {
        Spec { root, ..spec(Kind::Bcast, T::DTYPE, NONE, wr(buf), buf.len()) }
    };

    /// Reduce `send` with `op` into `recv` at `root` (`recv` is ignored elsewhere and may be
    /// empty there).
    reduce / ireduce (send: ref, recv: mut, op: (Op), root: (u32)) => {
        Spec { op: Some(op), root, ..spec(Kind::Reduce, T::DTYPE, rd(send), wr(recv), send.len()) }
    };

    /// Allreduce `send` with `op` into `recv` (same length).
    allreduce / iallreduce (send: ref, recv: mut, op: (Op)) => {
        Spec { op: Some(op), ..spec(Kind::Allreduce, T::DTYPE, rd(send), wr(recv), send.len()) }
    };

    /// Gather `send` from every rank into `recv` (size × `send.len()`) at `root`.
    gather / igather (send: ref, recv: mut, root: (u32)) => {
        Spec { root, ..spec(Kind::Gather, T::DTYPE, rd(send), wr(recv), send.len()) }
    };

    /// Gather with per-rank counts; `counts` and `displs` (elements) matter at the root.
    gatherv / igatherv (send: ref, recv: mut, counts: (&[usize]), displs: (&[usize]), root: (u32)) => {
        let sp = spec(Kind::Gatherv, T::DTYPE, rd(send), wr(recv), send.len());
        Spec { root, rcounts: counts, rdispls: displs, ..sp }
    };

    /// Scatter blocks of `send` (size × `recv.len()`, at `root`) into `recv`.
    scatter / iscatter (send: ref, recv: mut, root: (u32)) => {
        Spec { root, ..spec(Kind::Scatter, T::DTYPE, rd(send), wr(recv), recv.len()) }
    };

    /// Scatter with per-rank counts (`counts`, `displs` in elements, read at the root).
    scatterv / iscatterv (send: ref, counts: (&[usize]), displs: (&[usize]), recv: mut, root: (u32)) => {
        let sp = spec(Kind::Scatterv, T::DTYPE, rd(send), wr(recv), recv.len());
        Spec { root, scounts: counts, sdispls: displs, ..sp }
    };

    /// Allgather `send` from every rank into `recv` (size × `send.len()`).
    allgather / iallgather (send: ref, recv: mut) => {
        spec(Kind::Allgather, T::DTYPE, rd(send), wr(recv), send.len())
    };

    /// Allgather with per-rank counts (`counts[rank]` must equal `send.len()`).
    allgatherv / iallgatherv (send: ref, recv: mut, counts: (&[usize]), displs: (&[usize])) => {
        let sp = spec(Kind::Allgatherv, T::DTYPE, rd(send), wr(recv), send.len());
        Spec { rcounts: counts, rdispls: displs, ..sp }
    };

    /// All-to-all: block i of `send` goes to rank i, block j of `recv` comes from rank j.
    alltoall / ialltoall (send: ref, recv: mut) with c => {
        let n = c.size().max(1) as usize;
        spec(Kind::Alltoall, T::DTYPE, rd(send), wr(recv), send.len() / n)
    };

    /// All-to-all with per-rank counts and displacements (elements).
    alltoallv / ialltoallv (send: ref, scounts: (&[usize]), sdispls: (&[usize]), recv: mut,
                            rcounts: (&[usize]), rdispls: (&[usize])) => {
        let sp = spec(Kind::Alltoallv, T::DTYPE, rd(send), wr(recv), 0);
        Spec { scounts, sdispls, rcounts, rdispls, ..sp }
    };

    /// Reduce-scatter: `send` holds Σ counts elements; rank i gets the reduction of block i
    /// (`counts[i]` elements) in `recv`.
    reduce_scatter / ireduce_scatter (send: ref, recv: mut, counts: (&[usize]), op: (Op)) => {
        let sp = spec(Kind::ReduceScatter, T::DTYPE, rd(send), wr(recv), recv.len());
        Spec { rcounts: counts, op: Some(op), ..sp }
    };

    /// Reduce-scatter with equal blocks of `recv.len()` elements.
    reduce_scatter_block / ireduce_scatter_block (send: ref, recv: mut, op: (Op)) => {
        let sp = spec(Kind::ReduceScatterBlock, T::DTYPE, rd(send), wr(recv), recv.len());
        Spec { op: Some(op), ..sp }
    };

    /// Inclusive prefix reduction over ranks 0..=rank.
    scan / iscan (send: ref, recv: mut, op: (Op)) => {
        Spec { op: Some(op), ..spec(Kind::Scan, T::DTYPE, rd(send), wr(recv), send.len()) }
    };

    /// Exclusive prefix reduction over ranks 0..rank (rank 0's `recv` is left untouched).
    exscan / iexscan (send: ref, recv: mut, op: (Op)) => {
        Spec { op: Some(op), ..spec(Kind::Exscan, T::DTYPE, rd(send), wr(recv), send.len()) }
    };
}
