//! Reduction operations: the MPI predefined set plus user-defined operations (a Rust closure
//! or a C-style function pointer with a context pointer).
//!
//! Kernels work on byte slices with `from_ne_bytes`/`to_ne_bytes`, so that scratch buffers
//! need no particular alignment; the compiler turns the loops into plain loads and stores.

use std::ffi::c_void;
use std::rc::Rc;

use weft_engine::{Error, Result};

use crate::dtype::DType;

/// A user reduction: `f(input, inout, count)` computes `inout[i] = input[i] ∘ inout[i]`
/// element-wise over `count` elements (MPI's `MPI_User_function` convention: the input is the
/// left operand).
pub type UserFn = dyn Fn(&[u8], &mut [u8], usize);

/// C-friendly user reduction: `f(input, inout, count, ctx)` with the same meaning as
/// [`UserFn`].
pub type UserFnPtr =
    unsafe extern "C" fn(input: *const c_void, inout: *mut c_void, count: usize, ctx: *mut c_void);

/// A user-defined operation.
#[derive(Clone)]
pub struct UserOp {
    f: Rc<UserFn>,
    commutative: bool,
}

/// A reduction operation.
#[derive(Clone)]
pub enum Op {
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers, bytes).
    Band,
    /// Bitwise or (integers, bytes).
    Bor,
    /// Bitwise exclusive or (integers, bytes).
    Bxor,
    /// Logical and (integers: nonzero is true; result 0 or 1).
    Land,
    /// Logical or (integers).
    Lor,
    /// Minimum value with its index (pair types; ties keep the smaller index).
    MinLoc,
    /// Maximum value with its index (pair types; ties keep the smaller index).
    MaxLoc,
    /// User-defined.
    User(UserOp),
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::User(u) => write!(f, "User(commutative: {})", u.commutative),
            o => f.write_str(o.name()),
        }
    }
}

impl Op {
    /// The predefined operations.
    pub const BUILTIN: [Op; 11] = [
        Op::Sum,
        Op::Prod,
        Op::Min,
        Op::Max,
        Op::Band,
        Op::Bor,
        Op::Bxor,
        Op::Land,
        Op::Lor,
        Op::MinLoc,
        Op::MaxLoc,
    ];

    /// A user operation from a closure `f(input, inout, count)` (see [`UserFn`]).
    pub fn user(commutative: bool, f: impl Fn(&[u8], &mut [u8], usize) + 'static) -> Op {
        Op::User(UserOp { f: Rc::new(f), commutative })
    }

    /// A user operation from a C function pointer and a context pointer passed to every call.
    ///
    /// # Safety
    /// `f` must be safe to call with valid `input`/`inout` buffers of `count` elements and
    /// `ctx`, for as long as the operation (or a clone) is in use.
    pub unsafe fn from_fn(f: UserFnPtr, ctx: *mut c_void, commutative: bool) -> Op {
        let ctx = ctx as usize;
        Op::user(commutative, move |a: &[u8], b: &mut [u8], n: usize| {
            // SAFETY: the caller of `from_fn` promised that `f` accepts these buffers.
            unsafe { f(a.as_ptr() as *const c_void, b.as_mut_ptr() as *mut c_void, n, ctx as *mut c_void) }
        })
    }

    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Prod => "prod",
            Op::Min => "min",
            Op::Max => "max",
            Op::Band => "band",
            Op::Bor => "bor",
            Op::Bxor => "bxor",
            Op::Land => "land",
            Op::Lor => "lor",
            Op::MinLoc => "minloc",
            Op::MaxLoc => "maxloc",
            Op::User(_) => "user",
        }
    }

    /// Wire code (carried in collective headers; user operations share one code).
    pub fn code(&self) -> u8 {
        match self {
            Op::User(_) => 255,
            // Position in `BUILTIN` + 1 (a match: this is on every call's path).
            Op::Sum => 1,
            Op::Prod => 2,
            Op::Min => 3,
            Op::Max => 4,
            Op::Band => 5,
            Op::Bor => 6,
            Op::Bxor => 7,
            Op::Land => 8,
            Op::Lor => 9,
            Op::MinLoc => 10,
            Op::MaxLoc => 11,
        }
    }

    /// True if `a ∘ b = b ∘ a` (every predefined operation is).
    pub fn commutative(&self) -> bool {
        match self {
            Op::User(u) => u.commutative,
            _ => true,
        }
    }

    /// Check that the operation applies to `dt`.
    pub fn check(&self, dt: DType) -> Result<()> {
        let ok = match self {
            Op::User(_) => true,
            Op::Sum | Op::Prod | Op::Min | Op::Max => dt.is_int() || dt.is_float(),
            Op::Band | Op::Bor | Op::Bxor => dt.is_int() || dt == DType::Byte,
            Op::Land | Op::Lor => dt.is_int(),
            Op::MinLoc | Op::MaxLoc => dt.is_pair(),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidArg(format!("operation {} does not apply to element type {dt:?}", self.name())))
        }
    }

    /// `dst = src ∘ dst` (`src_left`) or `dst = dst ∘ src`, element-wise over equal-length
    /// byte slices of `dt` elements. The operation was checked against `dt` beforehand.
    pub fn apply(&self, dt: DType, src: &[u8], dst: &mut [u8], src_left: bool) {
        debug_assert_eq!(src.len(), dst.len());
        if let Op::User(u) = self {
            let n = src.len() / dt.size();
            if src_left || u.commutative {
                (u.f)(src, dst, n);
            } else {
                // dst ∘ src with f(input, inout) = input ∘ inout: input = old dst.
                let mut t = src.to_vec();
                (u.f)(dst, &mut t, n);
                dst.copy_from_slice(&t);
            }
            return;
        }
        apply_builtin(self, dt, src, dst);
    }
}

/// `dst[i] = e(dst[i], src[i])` over the `$t` elements of two equal-length byte slices. An
/// indexed loop (the bounds are provably met, so the checks go and the loop vectorises):
/// the `zip` of two `chunks_exact` it replaces left `Zip::new` out of line in this large
/// function, a call per reduction.
macro_rules! each {
    ($t:ty, $src:expr, $dst:expr, |$a:ident, $b:ident| $e:expr) => {{
        const S: usize = std::mem::size_of::<$t>();
        let (src, dst): (&[u8], &mut [u8]) = ($src, $dst);
        let n = dst.len().min(src.len()) / S;
        let (src, dst) = (&src[..n * S], &mut dst[..n * S]);
        for i in 0..n {
            let o = i * S;
            let $a = <$t>::from_ne_bytes(dst[o..o + S].try_into().expect("chunk"));
            let $b = <$t>::from_ne_bytes(src[o..o + S].try_into().expect("chunk"));
            let r: $t = $e;
            dst[o..o + S].copy_from_slice(&r.to_ne_bytes());
        }
    }};
}

macro_rules! int_ops {
    ($t:ty, $op:expr, $src:expr, $dst:expr) => {
        match $op {
            Op::Sum => each!($t, $src, $dst, |a, b| a.wrapping_add(b)),
            Op::Prod => each!($t, $src, $dst, |a, b| a.wrapping_mul(b)),
            Op::Min => each!($t, $src, $dst, |a, b| a.min(b)),
            Op::Max => each!($t, $src, $dst, |a, b| a.max(b)),
            Op::Band => each!($t, $src, $dst, |a, b| a & b),
            Op::Bor => each!($t, $src, $dst, |a, b| a | b),
            Op::Bxor => each!($t, $src, $dst, |a, b| a ^ b),
            Op::Land => each!($t, $src, $dst, |a, b| (a != 0 && b != 0) as $t),
            Op::Lor => each!($t, $src, $dst, |a, b| (a != 0 || b != 0) as $t),
            _ => unreachable!("checked"),
        }
    };
}

macro_rules! float_ops {
    ($t:ty, $op:expr, $src:expr, $dst:expr) => {
        match $op {
            Op::Sum => each!($t, $src, $dst, |a, b| a + b),
            Op::Prod => each!($t, $src, $dst, |a, b| a * b),
            Op::Min => each!($t, $src, $dst, |a, b| if b < a { b } else { a }),
            Op::Max => each!($t, $src, $dst, |a, b| if b > a { b } else { a }),
            _ => unreachable!("checked"),
        }
    };
}

/// MINLOC / MAXLOC over (value, i32 index) pairs of `vs` value bytes, element stride `es`.
fn loc<V: PartialOrd + Copy>(
    src: &[u8],
    dst: &mut [u8],
    es: usize,
    min: bool,
    read: impl Fn(&[u8]) -> V,
    vs: usize,
) {
    for (d, s) in dst.chunks_exact_mut(es).zip(src.chunks_exact(es)) {
        let (va, vb) = (read(&d[..vs]), read(&s[..vs]));
        let ia = i32::from_ne_bytes(d[vs..vs + 4].try_into().expect("4"));
        let ib = i32::from_ne_bytes(s[vs..vs + 4].try_into().expect("4"));
        let take_b = if va == vb {
            ib < ia
        } else if min {
            vb < va
        } else {
            vb > va
        };
        if take_b {
            d[..vs + 4].copy_from_slice(&s[..vs + 4]);
        }
    }
}

fn apply_builtin(op: &Op, dt: DType, src: &[u8], dst: &mut [u8]) {
    match dt {
        DType::U8 => int_ops!(u8, op, src, dst),
        DType::I8 => int_ops!(i8, op, src, dst),
        DType::U16 => int_ops!(u16, op, src, dst),
        DType::I16 => int_ops!(i16, op, src, dst),
        DType::U32 => int_ops!(u32, op, src, dst),
        DType::I32 => int_ops!(i32, op, src, dst),
        DType::U64 => int_ops!(u64, op, src, dst),
        DType::I64 => int_ops!(i64, op, src, dst),
        DType::F32 => float_ops!(f32, op, src, dst),
        DType::F64 => float_ops!(f64, op, src, dst),
        DType::Byte => match op {
            Op::Band => each!(u8, src, dst, |a, b| a & b),
            Op::Bor => each!(u8, src, dst, |a, b| a | b),
            Op::Bxor => each!(u8, src, dst, |a, b| a ^ b),
            _ => unreachable!("checked"),
        },
        DType::I32I32 | DType::F32I32 | DType::F64I32 => {
            let min = matches!(op, Op::MinLoc);
            let es = dt.size();
            match dt {
                DType::I32I32 => loc(src, dst, es, min, |b| i32::from_ne_bytes(b.try_into().expect("4")), 4),
                DType::F32I32 => loc(src, dst, es, min, |b| f32::from_ne_bytes(b.try_into().expect("4")), 4),
                _ => loc(src, dst, es, min, |b| f64::from_ne_bytes(b.try_into().expect("8")), 8),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_positions_in_builtin() {
        for (i, o) in Op::BUILTIN.iter().enumerate() {
            assert_eq!(o.code() as usize, i + 1, "{}", o.name());
        }
        assert_eq!(Op::user(true, |_, _, _| {}).code(), 255);
    }
}
