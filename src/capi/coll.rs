//! C ABI of the collectives (`weft-coll`): every collective blocking and non-blocking, their
//! element types ([`weft_datatype`]) and reduction operations ([`weft_op`]: the predefined
//! `WEFT_OP_*` and user functions registered with [`weft_op_create`]). Same conventions as the
//! rest of the C ABI.
//!
//! Arguments follow MPI's, with one element type per call. `count` is the element count
//! (bcast, reduce, allreduce, scan, exscan) or the per-rank block (gather, scatter, allgather,
//! alltoall, reduce_scatter_block). Counts and displacements of the v-variants are `size_t`
//! arrays with one entry per rank of the communicator, in elements; they are read during the
//! call only, also by the non-blocking variants, and only where they are significant (e.g.
//! `recvcounts` of gatherv at the root). A buffer that holds no data at this rank (the receive
//! buffer of reduce or gather off the root, any buffer with a zero count) may be NULL. The
//! buffers of a non-blocking call must stay valid, and unused by the caller, until its request
//! completes (`weft_wait`, `weft_test`, `weft_waitall`, ...).
//!
//! Allreduce works in place when `send == recv`; the other collectives reject equal send and
//! receive buffers (`WEFT_ERR_ARG`). Otherwise send and receive buffers must not overlap.
//!
//! Errors: a bad root is `WEFT_ERR_RANK`; an unknown datatype value `WEFT_ERR_DATATYPE`; an
//! unknown or freed operation handle, `WEFT_OP_NULL` or an operation that does not apply to
//! the datatype `WEFT_ERR_OP`; a NULL buffer with a nonzero count, NULL count arrays, a count
//! mismatch found locally or between ranks `WEFT_ERR_ARG`. Errors in this rank's own
//! arguments are found before it sends anything (and do not advance the communicator's
//! collective sequence), so when every rank passes the same bad argument, every rank gets the
//! error and the communicator stays usable. Mismatches between ranks (count, root, element
//! size, operation, collective) are found while running, by the ranks that receive the
//! mismatched data or an abort from a rank that did; a rank that only sends (the root of a
//! bcast, say) may succeed.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use weft_coll::{DType, Kind, Op, Spec};

use super::weft_error::{WEFT_ERR_DATATYPE, WEFT_ERR_OP};
use super::{comm, guard, put, weft_comm, weft_request, with_state, CallResult, Fail};
use crate::ops::OpsCore;
use crate::EngineError;

// ------------------------------------------------------------------------------- datatypes

/// Element type of a collective buffer. Functions take it as `int`: a value that is not one of
/// these is `WEFT_ERR_DATATYPE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_datatype {
    /// `uint8_t`
    WEFT_UINT8 = 1,
    /// `int8_t`
    WEFT_INT8,
    /// `uint16_t`
    WEFT_UINT16,
    /// `int16_t`
    WEFT_INT16,
    /// `uint32_t`
    WEFT_UINT32,
    /// `int32_t`
    WEFT_INT32,
    /// `uint64_t`
    WEFT_UINT64,
    /// `int64_t`
    WEFT_INT64,
    /// `float`
    WEFT_FLOAT,
    /// `double`
    WEFT_DOUBLE,
    /// raw bytes: only the bitwise and user-defined operations apply
    WEFT_BYTE,
    /// `struct { int32_t value; int32_t index; }` (8 bytes), for MINLOC / MAXLOC
    WEFT_2INT,
    /// `struct { float value; int32_t index; }` (8 bytes), for MINLOC / MAXLOC
    WEFT_FLOAT_INT,
    /// `struct { double value; int32_t index; int32_t pad; }` (16 bytes; keep `pad` zero), for
    /// MINLOC / MAXLOC
    WEFT_DOUBLE_INT,
}

use weft_datatype::*;

/// The C datatypes and the engine's: same order, same codes (checked below).
const DTYPES: [(weft_datatype, DType); 14] = [
    (WEFT_UINT8, DType::U8),
    (WEFT_INT8, DType::I8),
    (WEFT_UINT16, DType::U16),
    (WEFT_INT16, DType::I16),
    (WEFT_UINT32, DType::U32),
    (WEFT_INT32, DType::I32),
    (WEFT_UINT64, DType::U64),
    (WEFT_INT64, DType::I64),
    (WEFT_FLOAT, DType::F32),
    (WEFT_DOUBLE, DType::F64),
    (WEFT_BYTE, DType::Byte),
    (WEFT_2INT, DType::I32I32),
    (WEFT_FLOAT_INT, DType::F32I32),
    (WEFT_DOUBLE_INT, DType::F64I32),
];

const _: () = {
    let mut i = 0;
    while i < DTYPES.len() {
        assert!(DTYPES[i].0 as u8 == DTYPES[i].1.code());
        i += 1;
    }
};

/// The datatype of a C value.
fn dtype(dt: c_int) -> CallResult<(weft_datatype, DType)> {
    DTYPES.iter().copied().find(|&(c, _)| c as c_int == dt).ok_or_else(|| {
        Fail::new(WEFT_ERR_DATATYPE, format!("invalid datatype {dt}: not a weft_datatype value"))
    })
}

/// `*size` = bytes of one element of `dtype`.
///
/// # Safety
/// `size` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_datatype_size(dtype: c_int, size: *mut usize) -> c_int {
    guard(|| {
        let (_, dt) = self::dtype(dtype)?;
        // SAFETY: the caller's contract.
        unsafe { put(size, dt.size(), "size") }
    })
}

// ------------------------------------------------------------------------------ operations

/// Reduction operation handle: a predefined `WEFT_OP_*` or one made by `weft_op_create`.
pub type weft_op = u64;

/// The null operation (never valid).
pub const WEFT_OP_NULL: weft_op = 0;
/// Sum (integers wrap).
pub const WEFT_OP_SUM: weft_op = 1;
/// Product (integers wrap).
pub const WEFT_OP_PROD: weft_op = 2;
/// Minimum.
pub const WEFT_OP_MIN: weft_op = 3;
/// Maximum.
pub const WEFT_OP_MAX: weft_op = 4;
/// Bitwise and (integers, `WEFT_BYTE`).
pub const WEFT_OP_BAND: weft_op = 5;
/// Bitwise or (integers, `WEFT_BYTE`).
pub const WEFT_OP_BOR: weft_op = 6;
/// Bitwise exclusive or (integers, `WEFT_BYTE`).
pub const WEFT_OP_BXOR: weft_op = 7;
/// Logical and (integers; nonzero is true, the result is 0 or 1).
pub const WEFT_OP_LAND: weft_op = 8;
/// Logical or (integers).
pub const WEFT_OP_LOR: weft_op = 9;
/// Minimum value and its index (`WEFT_2INT`, `WEFT_FLOAT_INT`, `WEFT_DOUBLE_INT`; ties keep
/// the smaller index).
pub const WEFT_OP_MINLOC: weft_op = 10;
/// Maximum value and its index (pair types; ties keep the smaller index).
pub const WEFT_OP_MAXLOC: weft_op = 11;

/// A user-defined reduction (`MPI_User_function`): for `i < count`,
/// `inout[i] = input[i] ∘ inout[i]` over elements of type `dtype`, where `input` holds the
/// contribution of the lower ranks (the left operand). The buffers may be weft's scratch
/// memory. It must not call weft functions (they fail with `WEFT_ERR_INTERNAL`).
pub type weft_user_function = Option<
    unsafe extern "C" fn(input: *const c_void, inout: *mut c_void, count: usize, dtype: weft_datatype),
>;

/// [`weft_user_function`], non-NULL (cbindgen needs the public alias spelled out).
type UserFn =
    unsafe extern "C" fn(input: *const c_void, inout: *mut c_void, count: usize, dtype: weft_datatype);

/// The first user operation handle; handles are never reused, so a freed one stays invalid.
const FIRST_USER_OP: u64 = 1 << 32;

/// One user operation, with its `Op` per datatype, made on first use.
struct UserOp {
    f: UserFn,
    commute: bool,
    typed: [Option<Op>; DTYPES.len() + 1],
}

/// The user operations of an instance.
#[derive(Default)]
pub(super) struct Ops {
    created: u64,
    user: HashMap<weft_op, UserOp>,
}

fn op_error(msg: String) -> Fail {
    Fail::new(WEFT_ERR_OP, msg)
}

impl Ops {
    fn create(&mut self, f: UserFn, commute: bool) -> weft_op {
        let h = FIRST_USER_OP + self.created;
        self.created += 1;
        self.user.insert(h, UserOp { f, commute, typed: Default::default() });
        h
    }

    fn free(&mut self, h: weft_op) -> CallResult<()> {
        match h {
            WEFT_OP_NULL => Err(op_error("invalid operation: WEFT_OP_NULL cannot be freed".into())),
            WEFT_OP_SUM..=WEFT_OP_MAXLOC => {
                Err(op_error(format!("invalid operation: predefined operation {h} cannot be freed")))
            }
            _ => self.user.remove(&h).map(|_| ()).ok_or_else(|| unknown_op(h)),
        }
    }

    /// The operation `h` over `dt`, checked to apply to it.
    fn get(&mut self, h: weft_op, (cdt, dt): (weft_datatype, DType)) -> CallResult<Op> {
        let op = match h {
            WEFT_OP_NULL => return Err(op_error("invalid operation: WEFT_OP_NULL".into())),
            WEFT_OP_SUM..=WEFT_OP_MAXLOC => Op::BUILTIN[h as usize - 1].clone(),
            _ => {
                let u = self.user.get_mut(&h).ok_or_else(|| unknown_op(h))?;
                let (f, commute) = (u.f, u.commute);
                let slot = &mut u.typed[dt.code() as usize];
                slot.get_or_insert_with(|| {
                    Op::user(commute, move |input: &[u8], inout: &mut [u8], n: usize| {
                        // SAFETY: `weft_op_create`'s contract: `f` may be called with `n`
                        // elements of `cdt` in `input` (readable) and `inout` (writable); the
                        // schedule passes equal-length slices of `n` whole elements.
                        unsafe { f(input.as_ptr().cast(), inout.as_mut_ptr().cast(), n, cdt) }
                    })
                })
                .clone()
            }
        };
        op.check(dt).map_err(|e| op_error(e.to_string()))?;
        Ok(op)
    }
}

fn unknown_op(h: weft_op) -> Fail {
    op_error(format!(
        "invalid operation handle {h:#x}: not a WEFT_OP_* value nor a live weft_op_create handle"
    ))
}

/// Register a user-defined reduction: `*op` = its handle, usable by every reducing
/// collective with any datatype. `commute` ≠ 0 declares it commutative (weft may then combine
/// contributions in any order); otherwise ranks are combined in rank order. Operations are
/// assumed associative.
///
/// # Safety
/// `f` must be NULL or safe to call as [`weft_user_function`] describes, until `weft_finalize`;
/// `op` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_op_create(f: weft_user_function, commute: c_int, op: *mut weft_op) -> c_int {
    guard(|| {
        let Some(f) = f else { return Err(Fail::null("f")) };
        if op.is_null() {
            return Err(Fail::null("op"));
        }
        let h = with_state(|s| Ok(s.ops.create(f, commute != 0)))?;
        // SAFETY: the caller's contract.
        unsafe { put(op, h, "op") }
    })
}

/// Free the user operation `*op` and set `*op` = `WEFT_OP_NULL`. Collectives already started
/// with it complete normally. Predefined operations cannot be freed (`WEFT_ERR_OP`).
///
/// # Safety
/// `op` must be NULL or valid for reads and writes.
#[no_mangle]
pub unsafe extern "C" fn weft_op_free(op: *mut weft_op) -> c_int {
    guard(|| {
        if op.is_null() {
            return Err(Fail::null("op"));
        }
        // SAFETY: non-NULL and valid per the caller's contract.
        let h = unsafe { *op };
        with_state(|s| s.ops.free(h))?;
        // SAFETY: as above.
        unsafe { put(op, WEFT_OP_NULL, "op") }
    })
}

// ---------------------------------------------------------------------------- the plumbing

/// One collective call as C passed it.
struct Call {
    kind: Kind,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dt: c_int,
    op: Option<weft_op>,
    root: Option<c_int>,
    scounts: *const usize,
    sdispls: *const usize,
    rcounts: *const usize,
    rdispls: *const usize,
}

impl Call {
    fn new(kind: Kind, send: *const c_void, recv: *mut c_void, count: usize, dt: c_int) -> Call {
        let null = std::ptr::null();
        Call {
            kind,
            send,
            recv,
            count,
            dt,
            op: None,
            root: None,
            scounts: null,
            sdispls: null,
            rcounts: null,
            rdispls: null,
        }
    }
    fn op(self, op: weft_op) -> Call {
        Call { op: Some(op), ..self }
    }
    fn root(self, root: c_int) -> Call {
        Call { root: Some(root), ..self }
    }
    fn sv(self, counts: *const usize, displs: *const usize) -> Call {
        Call { scounts: counts, sdispls: displs, ..self }
    }
    fn rv(self, counts: *const usize, displs: *const usize) -> Call {
        Call { rcounts: counts, rdispls: displs, ..self }
    }
}

/// `n` counts or displacements from C.
///
/// # Safety
/// `p` must be NULL or valid for reads of `n` elements for the call.
unsafe fn counts<'a>(p: *const usize, n: usize, what: &str) -> CallResult<&'a [usize]> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-NULL, and the caller guarantees `n` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Convert `call` on communicator `c` into a spec and run it (`req` is `None`: blocking) or
/// start it (`*req` = the request's handle). Arguments are checked in the order
/// communicator, datatype, operation, root, count arrays, buffers; the buffer sizes follow
/// from the counts in the operations core, as for every front end.
///
/// # Safety
/// The buffers and count arrays of `call` must be valid as the calling function documents;
/// `req`, if given, NULL or valid for writes.
unsafe fn collective(c: weft_comm, call: Call, req: Option<*mut weft_request>) -> CallResult<()> {
    if req.is_some_and(|r| r.is_null()) {
        return Err(Fail::null("req"));
    }
    with_state(|s| {
        let core = s.weft.core();
        let id = comm(c);
        let (rank, size) = (core.comm_rank(id)?, core.comm_size(id)?);
        let (cdt, dt) = dtype(call.dt)?;
        let mut sp = Spec::new(call.kind, dt);
        if let Some(h) = call.op {
            sp.op = Some(s.ops.get(h, (cdt, dt))?);
        }
        sp.root = match call.root {
            None => 0,
            Some(r) if r >= 0 && (r as u32) < size => r as u32,
            Some(r) => return Err(EngineError::InvalidRank { rank: r.into(), size }.into()),
        };
        let reads = weft_coll::needs::arrays(call.kind, call.root.is_some() && rank == sp.root);
        let n = size as usize;
        let dis = if call.kind == Kind::Alltoallv { ["sdispls", "rdispls"] } else { ["displs"; 2] };
        // SAFETY: only the arrays this collective reads at this rank, which the caller
        // guarantees NULL or valid for one entry per rank during the call.
        unsafe {
            if reads.scounts {
                sp.scounts = counts(call.scounts, n, "sendcounts")?;
            }
            if reads.sdispls {
                sp.sdispls = counts(call.sdispls, n, dis[0])?;
            }
            if reads.rcounts {
                sp.rcounts = counts(call.rcounts, n, "recvcounts")?;
            }
            if reads.rdispls {
                sp.rdispls = counts(call.rdispls, n, dis[1])?;
            }
        }
        // The element count: v-variants pass this rank's own count; reduce_scatter's is its
        // block of recvcounts.
        sp.count = match call.kind {
            Kind::ReduceScatter => sp.rcounts[rank as usize],
            _ => call.count,
        };
        (sp.send, sp.recv) = (call.send.cast(), call.recv.cast());
        OpsCore::size_spec(rank, size, &mut sp)?;
        match req {
            // SAFETY: the caller guarantees the buffers for the call, sized from the counts.
            None => unsafe { Ok(core.run(id, &sp)?) },
            Some(req) => {
                // SAFETY: as above, and the caller keeps the buffers valid and unused until
                // the request completes; the count arrays are only read during this call.
                let rid = unsafe { core.start(id, &sp)? };
                // SAFETY: the caller's contract.
                unsafe { put(req, rid.to_raw(), "req") }
            }
        }
    })
}

// ------------------------------------------------------------------------------ collectives

/// Non-blocking barrier: `*req` completes once every member of `c` has entered it.
///
/// # Safety
/// `req` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn weft_ibarrier(c: weft_comm, req: *mut weft_request) -> c_int {
    let call = Call::new(Kind::Barrier, std::ptr::null(), std::ptr::null_mut(), 0, WEFT_UINT8 as c_int);
    // SAFETY: no buffers; `req` per the caller's contract.
    guard(|| unsafe { collective(c, call, Some(req)) })
}

/// Generate a blocking collective and its non-blocking twin (one more parameter, `req`) from
/// one description: `name / iname (parameters) => (communicator, call)`, where `call` is the
/// [`Call`] as C passed it. The header generator (`tests/capi.rs`) reads the same table.
macro_rules! c_collectives {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident / $iname:ident ($($p:ident: $t:ty),*) => ($c:ident, $call:expr);
    )*) => { $(
        $(#[doc = $doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> c_int {
            let call = $call;
            // SAFETY: the caller's contract (this function's `# Safety`).
            guard(|| unsafe { collective($c, call, None) })
        }

        #[doc = concat!(" Non-blocking [`", stringify!($name), "`]: `*req` = its request, completed")]
        #[doc = " (`weft_wait`, `weft_test`, ...) when the collective is over."]
        #[doc = ""]
        #[doc = " # Safety"]
        #[doc = concat!(" As `", stringify!($name), "`, with the buffers valid and unused until the request")]
        #[doc = " completes (count and displacement arrays are read during this call only); `req` NULL"]
        #[doc = " or valid for writes."]
        #[no_mangle]
        pub unsafe extern "C" fn $iname($($p: $t,)* req: *mut weft_request) -> c_int {
            let call = $call;
            // SAFETY: the caller's contract (`# Safety` above).
            guard(|| unsafe { collective($c, call, Some(req)) })
        }
    )* };
}

c_collectives! {
    /// Broadcast `count` elements of `buf` from `root` to every rank of `c`.
    ///
    /// # Safety
    /// `buf` must be valid for reads (at the root) or writes (elsewhere) of `count` elements.
    weft_bcast / weft_ibcast (buf: *mut c_void, count: usize, dtype: c_int, root: c_int, c: weft_comm)
        => (c, Call::new(Kind::Bcast, std::ptr::null(), buf, count, dtype).root(root));

    /// Reduce `count` elements of `send` from every rank with `op` into `recv` at `root` (`recv`
    /// is not used elsewhere and may be NULL there).
    ///
    /// # Safety
    /// `send` must be valid for reads of `count` elements; `recv` (at the root) for writes of
    /// `count` elements.
    weft_reduce / weft_ireduce (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, op: weft_op, root: c_int, c: weft_comm)
        => (c, Call::new(Kind::Reduce, send, recv, count, dtype).op(op).root(root));

    /// Reduce `count` elements of `send` from every rank with `op` into `recv` at every rank.
    /// `send == recv` works in place (the buffer holds the contribution, then the result).
    ///
    /// # Safety
    /// `send` must be valid for reads and `recv` for writes of `count` elements.
    weft_allreduce / weft_iallreduce (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, op: weft_op, c: weft_comm)
        => (c, Call::new(Kind::Allreduce, send, recv, count, dtype).op(op));

    /// Gather `count` elements of `send` from every rank into `recv` at `root`, rank `i`'s at
    /// element `i * count` (`recv` holds size × `count` elements; unused off the root).
    ///
    /// # Safety
    /// `send` must be valid for reads of `count` elements; `recv` (at the root) for writes of
    /// size × `count` elements.
    weft_gather / weft_igather (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, root: c_int, c: weft_comm)
        => (c, Call::new(Kind::Gather, send, recv, count, dtype).root(root));

    /// Gather with per-rank counts: rank `i` sends `sendcount` elements, which land at
    /// `recv + displs[i]` (elements) at the root, where `recvcounts[i]` must equal rank `i`'s
    /// `sendcount`. `recvcounts`, `displs` and `recv` are read at the root only.
    ///
    /// # Safety
    /// `send` must be valid for reads of `sendcount` elements; at the root, `recvcounts` and
    /// `displs` for reads of size entries and `recv` for writes of every block.
    weft_gatherv / weft_igatherv (send: *const c_void, sendcount: usize, recv: *mut c_void, recvcounts: *const usize, displs: *const usize, dtype: c_int, root: c_int, c: weft_comm)
        => (c, Call::new(Kind::Gatherv, send, recv, sendcount, dtype).root(root).rv(recvcounts, displs));

    /// Scatter: rank `i` receives `count` elements from `send + i * count` at `root` (`send`
    /// holds size × `count` elements; unused off the root).
    ///
    /// # Safety
    /// `send` (at the root) must be valid for reads of size × `count` elements; `recv` for writes
    /// of `count` elements.
    weft_scatter / weft_iscatter (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, root: c_int, c: weft_comm)
        => (c, Call::new(Kind::Scatter, send, recv, count, dtype).root(root));

    /// Scatter with per-rank counts: rank `i` receives `sendcounts[i]` elements from
    /// `send + displs[i]` at the root into `recv` (`recvcount` elements, which must match).
    /// `send`, `sendcounts` and `displs` are read at the root only.
    ///
    /// # Safety
    /// At the root, `sendcounts` and `displs` must be valid for reads of size entries and `send`
    /// for reads of every block; `recv` for writes of `recvcount` elements.
    weft_scatterv / weft_iscatterv (send: *const c_void, sendcounts: *const usize, displs: *const usize, recv: *mut c_void, recvcount: usize, dtype: c_int, root: c_int, c: weft_comm)
        => (c, Call::new(Kind::Scatterv, send, recv, recvcount, dtype).root(root).sv(sendcounts, displs));

    /// Allgather: every rank receives rank `i`'s `count` elements at `recv + i * count`.
    ///
    /// # Safety
    /// `send` must be valid for reads of `count` elements, `recv` for writes of size × `count`.
    weft_allgather / weft_iallgather (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, c: weft_comm)
        => (c, Call::new(Kind::Allgather, send, recv, count, dtype));

    /// Allgather with per-rank counts: rank `i`'s `recvcounts[i]` elements land at
    /// `recv + displs[i]` at every rank; `sendcount` must equal `recvcounts[rank]`.
    ///
    /// # Safety
    /// `send` must be valid for reads of `sendcount` elements, `recvcounts` and `displs` for
    /// reads of size entries, `recv` for writes of every block.
    weft_allgatherv / weft_iallgatherv (send: *const c_void, sendcount: usize, recv: *mut c_void, recvcounts: *const usize, displs: *const usize, dtype: c_int, c: weft_comm)
        => (c, Call::new(Kind::Allgatherv, send, recv, sendcount, dtype).rv(recvcounts, displs));

    /// All-to-all: block `i` of `send` (`count` elements at `i * count`) goes to rank `i`; block
    /// `j` of `recv` comes from rank `j`.
    ///
    /// # Safety
    /// `send` must be valid for reads and `recv` for writes of size × `count` elements.
    weft_alltoall / weft_ialltoall (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, c: weft_comm)
        => (c, Call::new(Kind::Alltoall, send, recv, count, dtype));

    /// All-to-all with per-rank counts: `sendcounts[i]` elements at `send + sdispls[i]` go to rank
    /// `i`; `recvcounts[j]` elements from rank `j` land at `recv + rdispls[j]` (elements).
    ///
    /// # Safety
    /// The four arrays must be valid for reads of size entries; `send` for reads and `recv` for
    /// writes of every block.
    weft_alltoallv / weft_ialltoallv (send: *const c_void, sendcounts: *const usize, sdispls: *const usize, recv: *mut c_void, recvcounts: *const usize, rdispls: *const usize, dtype: c_int, c: weft_comm)
        => (c, Call::new(Kind::Alltoallv, send, recv, 0, dtype).sv(sendcounts, sdispls).rv(recvcounts, rdispls));

    /// Reduce-scatter: `send` holds Σ `recvcounts` elements; rank `i` receives in `recv` the
    /// reduction with `op` of block `i` (`recvcounts[i]` elements, blocks in rank order).
    ///
    /// # Safety
    /// `recvcounts` must be valid for reads of size entries, `send` for reads of their sum and
    /// `recv` for writes of `recvcounts[rank]` elements.
    weft_reduce_scatter / weft_ireduce_scatter (send: *const c_void, recv: *mut c_void, recvcounts: *const usize, dtype: c_int, op: weft_op, c: weft_comm)
        => (c, Call::new(Kind::ReduceScatter, send, recv, 0, dtype).op(op).rv(recvcounts, std::ptr::null()));

    /// Reduce-scatter with equal blocks: `send` holds size × `count` elements; rank `i` receives
    /// the reduction of block `i` (`count` elements) in `recv`.
    ///
    /// # Safety
    /// `send` must be valid for reads of size × `count` elements, `recv` for writes of `count`.
    weft_reduce_scatter_block / weft_ireduce_scatter_block (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, op: weft_op, c: weft_comm)
        => (c, Call::new(Kind::ReduceScatterBlock, send, recv, count, dtype).op(op));

    /// Inclusive prefix reduction: rank `r` receives the reduction of ranks 0..=r's `send`, in
    /// rank order.
    ///
    /// # Safety
    /// `send` must be valid for reads and `recv` for writes of `count` elements.
    weft_scan / weft_iscan (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, op: weft_op, c: weft_comm)
        => (c, Call::new(Kind::Scan, send, recv, count, dtype).op(op));

    /// Exclusive prefix reduction: rank `r` > 0 receives the reduction of ranks 0..r's `send`;
    /// rank 0's `recv` is left untouched (but must be valid).
    ///
    /// # Safety
    /// `send` must be valid for reads and `recv` for writes of `count` elements.
    weft_exscan / weft_iexscan (send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, op: weft_op, c: weft_comm)
        => (c, Call::new(Kind::Exscan, send, recv, count, dtype).op(op));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_constants_are_the_wire_codes() {
        let c = [
            WEFT_OP_SUM,
            WEFT_OP_PROD,
            WEFT_OP_MIN,
            WEFT_OP_MAX,
            WEFT_OP_BAND,
            WEFT_OP_BOR,
            WEFT_OP_BXOR,
            WEFT_OP_LAND,
            WEFT_OP_LOR,
            WEFT_OP_MINLOC,
            WEFT_OP_MAXLOC,
        ];
        assert_eq!(c.len(), Op::BUILTIN.len());
        for (h, op) in c.iter().zip(&Op::BUILTIN) {
            assert_eq!(*h, op.code() as u64, "{}", op.name());
        }
    }

    #[test]
    fn datatypes_map_every_dtype() {
        assert_eq!(DTYPES.len(), DType::ALL.len());
        for (i, &(c, d)) in DTYPES.iter().enumerate() {
            assert_eq!(d, DType::ALL[i]);
            assert_eq!(dtype(c as c_int).map(|x| x.1).ok(), Some(d));
        }
        for bad in [0, -1, 15, 99] {
            assert_eq!(dtype(bad).err().map(|f| f.code), Some(WEFT_ERR_DATATYPE));
        }
    }

    unsafe extern "C" fn noop(_: *const c_void, _: *mut c_void, _: usize, _: weft_datatype) {}

    #[test]
    fn user_op_handles() {
        let mut ops = Ops::default();
        let h = ops.create(noop, false);
        assert!(h >= FIRST_USER_OP);
        let op = ops.get(h, (WEFT_DOUBLE, DType::F64)).ok().expect("live handle");
        assert!(!op.commutative());
        assert_eq!(ops.get(WEFT_OP_BAND, (WEFT_DOUBLE, DType::F64)).err().map(|f| f.code), Some(WEFT_ERR_OP));
        assert_eq!(ops.get(WEFT_OP_NULL, (WEFT_INT32, DType::I32)).err().map(|f| f.code), Some(WEFT_ERR_OP));
        assert!(ops.free(h).is_ok());
        assert_eq!(ops.get(h, (WEFT_DOUBLE, DType::F64)).err().map(|f| f.code), Some(WEFT_ERR_OP));
        assert_eq!(ops.free(h).err().map(|f| f.code), Some(WEFT_ERR_OP));
        assert_eq!(ops.free(WEFT_OP_SUM).err().map(|f| f.code), Some(WEFT_ERR_OP));
        assert_ne!(ops.create(noop, true), h, "handles are not reused");
    }

    #[test]
    fn collectives_before_init_fail_cleanly() {
        let x = 1i32;
        let mut y = 0i32;
        // SAFETY: valid one-element buffers.
        let rc = unsafe {
            weft_allreduce(
                (&x as *const i32).cast(),
                (&mut y as *mut i32).cast(),
                1,
                WEFT_INT32 as c_int,
                WEFT_OP_SUM,
                1,
            )
        };
        assert_eq!(rc, super::super::weft_error::WEFT_ERR_NOT_INITIALIZED as c_int);
        let mut op = WEFT_OP_NULL;
        // SAFETY: `op` is valid; a NULL function is reported, not called.
        let rc = unsafe { weft_op_create(None, 1, &mut op) };
        assert_eq!(rc, super::super::weft_error::WEFT_ERR_ARG as c_int);
        let mut sz = 0usize;
        // SAFETY: `sz` is valid.
        assert_eq!(unsafe { weft_datatype_size(WEFT_DOUBLE_INT as c_int, &mut sz) }, 0);
        assert_eq!(sz, 16);
    }
}
