//! Reduction operations: the predefined `MPI_Op`s, the ones an application creates with
//! `MPI_Op_create`, and how a (operation, datatype) pair becomes the collectives engine's
//! (operation, element type, element count); the process's table of created operations.

use std::ffi::c_int;

use weft::ops::{DType, Op};

use std::cell::RefCell;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{Kind, Table};
use crate::obj::datatype::TypeInfo;
use crate::state::{Mpi, Owned};

/// `MPI_User_function`.
pub(crate) type UserFunction = unsafe extern "C" fn(
    invec: *mut std::ffi::c_void,
    inoutvec: *mut std::ffi::c_void,
    len: *mut c_int,
    dt: *mut MPI_Datatype,
);

/// A created operation.
#[derive(Clone, Copy)]
pub(crate) struct UserOpDef {
    pub(crate) f: UserFunction,
    pub(crate) commute: bool,
}

/// Created operations.
pub(crate) struct UserOps {
    pub(crate) table: Table<UserOpDef>,
}

impl UserOps {
    pub(crate) fn new() -> UserOps {
        UserOps { table: Table::new(Kind::Op) }
    }
}

/// A reduction as the collectives engine runs it.
pub(crate) struct Reduction {
    pub(crate) op: Op,
    pub(crate) dtype: DType,
    /// Engine elements per MPI element.
    pub(crate) per_elem: usize,
}

/// The collectives' operation of a predefined arithmetic, bitwise or logical `MPI_Op` (those
/// the engine applies to an element type directly); `None` for every other handle.
#[inline]
fn arithmetic(op: MPI_Op) -> Option<Op> {
    Some(match op {
        MPI_SUM => Op::Sum,
        MPI_PROD => Op::Prod,
        MPI_MIN => Op::Min,
        MPI_MAX => Op::Max,
        MPI_BAND => Op::Band,
        MPI_BOR => Op::Bor,
        MPI_BXOR => Op::Bxor,
        MPI_LAND => Op::Land,
        MPI_LOR => Op::Lor,
        _ => return None,
    })
}

/// The reduction of `op` on a type of `size` bytes whose elements are all `elem`, when `op` is
/// an arithmetic, bitwise or logical predefined operation defined on `elem`: the common case,
/// decided without the type's description. `None` otherwise ([`Mpi::reduction`] then decides,
/// with the error that applies).
#[inline]
pub(crate) fn fast_reduction(op: MPI_Op, size: usize, elem: Option<DType>) -> Option<Reduction> {
    let (o, e) = (arithmetic(op)?, elem?);
    o.check(e).ok()?;
    Some(Reduction { op: o, dtype: e, per_elem: size / e.size() })
}

impl Mpi {
    /// The engine's form of reducing `count`-sized buffers of `ty` (handle `dt`) with `op`.
    pub(crate) fn reduction(&self, op: MPI_Op, dt: MPI_Datatype, ty: &TypeInfo) -> MpiResult<Reduction> {
        let predefined = |o: Op| -> MpiResult<Reduction> {
            // The collectives pack a non-contiguous type: its packed data is a run of `elem`.
            let Some(e) = ty.elem else {
                return Err(err!(
                    MPI_ERR_OP,
                    "predefined operation {op:#x} is not defined on datatype {} (use a user operation)",
                    ty.name
                ));
            };
            o.check(e).map_err(|x| err!(MPI_ERR_OP, "{x} (datatype {})", ty.name))?;
            Ok(Reduction { op: o, dtype: e, per_elem: ty.size / e.size() })
        };
        if let Some(o) = arithmetic(op) {
            return predefined(o);
        }
        match op {
            // Pairs the collectives have no element type for (their packed form differs from
            // memory: `MPI_DOUBLE_INT` is 12 bytes packed, 16 in memory) reduce here.
            MPI_MINLOC | MPI_MAXLOC if ty.elem.is_none() && ty.pair.is_some() => {
                let p = ty.pair.expect("checked");
                Ok(Reduction { op: p.loc_op(op == MPI_MINLOC), dtype: DType::Byte, per_elem: ty.size })
            }
            MPI_MINLOC => predefined(Op::MinLoc),
            MPI_MAXLOC => predefined(Op::MaxLoc),
            MPI_LXOR => {
                let r = predefined(Op::Land)?; // same domain: the integer types
                let w = r.dtype.size();
                let lxor = Op::user(true, move |src: &[u8], dst: &mut [u8], _n| {
                    for (s, d) in src.chunks_exact(w).zip(dst.chunks_exact_mut(w)) {
                        let t = (s.iter().any(|&b| b != 0)) != (d.iter().any(|&b| b != 0));
                        d.fill(0);
                        d[0] = t as u8; // little-endian 1 (weft targets little-endian only)
                    }
                });
                Ok(Reduction { op: lxor, ..r })
            }
            MPI_OP_NULL => Err(err!(MPI_ERR_OP, "invalid operation: MPI_OP_NULL")),
            MPI_REPLACE | MPI_NO_OP => {
                Err(err!(MPI_ERR_OP, "MPI_REPLACE and MPI_NO_OP apply to one-sided accumulates only"))
            }
            h => {
                let def =
                    *self.ops().borrow().table.get(h).ok_or_else(|| {
                        err!(MPI_ERR_OP, "invalid operation {h:#x}: freed or never created")
                    })?;
                let size = ty.size;
                // The engine reduces user operations on `MPI_BYTE` elements, and its
                // commutative algorithms (Rabenseifner, ring) split a buffer at any byte; an
                // application's function must see whole elements, so for elements of more than
                // one byte the engine is told the operation does not commute, which selects
                // the order-preserving algorithms that reduce whole buffers (correct for a
                // commutative operation too).
                let def = UserOpDef { commute: def.commute && size <= 1, ..def };
                let user = if ty.dense() {
                    Op::user(def.commute, move |src: &[u8], dst: &mut [u8], _n| {
                        let mut len = (dst.len() / size.max(1)) as c_int;
                        let mut d = dt;
                        // SAFETY: the application's MPI_User_function, called as the standard
                        // says: `len` elements of `dt` at each buffer; `src` is not written by it.
                        unsafe { (def.f)(src.as_ptr() as *mut _, dst.as_mut_ptr().cast(), &mut len, &mut d) };
                    })
                } else {
                    typed_user_op(def, dt, ty)?
                };
                Ok(Reduction { op: user, dtype: DType::Byte, per_elem: size })
            }
        }
    }
}

/// A user operation on a non-contiguous type: the engine hands it packed data, the
/// application's function reads the type's layout; so both operands are unpacked into typed
/// scratch buffers, the function runs there, and the result is packed back.
fn typed_user_op(def: UserOpDef, dt: MPI_Datatype, ty: &TypeInfo) -> MpiResult<Op> {
    if ty.extent <= 0 || ty.true_extent < 0 {
        return Err(err!(
            MPI_ERR_TYPE,
            "user reductions on a non-contiguous type need a positive extent (datatype {})",
            ty.display()
        ));
    }
    let ty = std::sync::Arc::new(ty.clone());
    Ok(Op::user(def.commute, move |src: &[u8], dst: &mut [u8], _n| {
        let n = dst.len() / ty.size.max(1);
        if n == 0 {
            return;
        }
        // Bytes the type map of `n` elements spans, from the true lower bound.
        let span = (n - 1) * ty.extent as usize + ty.true_extent as usize;
        let (mut a, mut b) = (vec![0u8; span], vec![0u8; span]);
        let origin = |v: &mut Vec<u8>| v.as_mut_ptr().wrapping_offset(-ty.true_lb);
        let (pa, pb) = (origin(&mut a), origin(&mut b));
        let mut len = n as c_int;
        let mut d = dt;
        // SAFETY: `a` and `b` hold the type map of `n` elements from `origin` (every block
        // lies in `[true_lb, true_lb + true_extent)` of its element); the packed operands hold
        // `n * size` bytes; the application's function gets `len` elements at each buffer.
        unsafe {
            let _ = crate::obj::datatype::unpack(src, pa, n, &ty);
            let _ = crate::obj::datatype::unpack(dst, pb, n, &ty);
            (def.f)(pa.cast(), pb.cast(), &mut len, &mut d);
            crate::obj::datatype::pack_to(pb, n, &ty, dst.as_mut_ptr());
        }
    }))
}

/// The process's table of user-defined operations (see [`Owned`]).
static OPS: Owned<RefCell<UserOps>> = Owned::new();

impl Mpi {
    /// The table of user-defined operations.
    #[inline(always)]
    pub(crate) fn ops(&self) -> &RefCell<UserOps> {
        OPS.get(self)
    }
}

/// Make the table of user-defined operations (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: UserOps) {
    OPS.make(RefCell::new(table));
}
