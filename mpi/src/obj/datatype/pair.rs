//! The predefined pair types of `MPI_MINLOC` / `MPI_MAXLOC` (`MPI_FLOAT_INT`, `MPI_DOUBLE_INT`,
//! `MPI_LONG_INT`, `MPI_2INT`, `MPI_SHORT_INT`, `MPI_LONG_DOUBLE_INT`, `MPI_2REAL`,
//! `MPI_2DOUBLE_PRECISION`, `MPI_2INTEGER`) and the two reductions on their packed data.
//!
//! A pair is the C struct `{ value; index; }`: its size is the bytes of its two members (12 for
//! `MPI_DOUBLE_INT`), its extent the struct's (16), so `MPI_SHORT_INT` has a hole between its
//! members and `MPI_DOUBLE_INT` padding after them. Packed data (what the collectives carry)
//! is the members back to back, `size` bytes per pair.

use std::cmp::Ordering;

use weft::ops::Op;

use crate::abi::*;

/// The number kinds pair members have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Num {
    I16,
    I32,
    I64,
    F32,
    F64,
    /// x86-64 `long double`: 80-bit extended precision stored in 16 bytes.
    LongDouble,
}

impl Num {
    /// Storage bytes.
    pub(crate) const fn size(self) -> usize {
        match self {
            Num::I16 => 2,
            Num::I32 | Num::F32 => 4,
            Num::I64 | Num::F64 => 8,
            Num::LongDouble => 16,
        }
    }

    /// Order of two numbers of this kind stored at the start of `a` and `b` (`None` for NaN).
    fn cmp(self, a: &[u8], b: &[u8]) -> Option<Ordering> {
        fn arr<const N: usize>(s: &[u8]) -> [u8; N] {
            s[..N].try_into().expect("member bytes")
        }
        match self {
            Num::I16 => Some(i16::from_ne_bytes(arr(a)).cmp(&i16::from_ne_bytes(arr(b)))),
            Num::I32 => Some(i32::from_ne_bytes(arr(a)).cmp(&i32::from_ne_bytes(arr(b)))),
            Num::I64 => Some(i64::from_ne_bytes(arr(a)).cmp(&i64::from_ne_bytes(arr(b)))),
            Num::F32 => f32::from_ne_bytes(arr(a)).partial_cmp(&f32::from_ne_bytes(arr(b))),
            Num::F64 => f64::from_ne_bytes(arr(a)).partial_cmp(&f64::from_ne_bytes(arr(b))),
            Num::LongDouble => extended_key(a)?.partial_cmp(&extended_key(b)?),
        }
    }
}

/// A key that orders x87 80-bit extended values (little-endian: 64-bit significand, then
/// sign and 15-bit exponent) as the numbers they are; `None` for NaN. Both zeros map to 0.
fn extended_key(b: &[u8]) -> Option<i128> {
    let mant = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes(b[8..10].try_into().expect("2 bytes"));
    let (neg, exp) = (se & 0x8000 != 0, u128::from(se & 0x7fff));
    if exp == 0x7fff && mant << 1 != 0 {
        return None;
    }
    let magnitude = ((exp << 64) | u128::from(mant)) as i128;
    Some(if neg { -magnitude } else { magnitude })
}

/// One predefined pair type.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pair {
    pub(crate) handle: MPI_Datatype,
    pub(crate) value: Num,
    pub(crate) index: Num,
    /// Offset of the index in the C struct.
    pub(crate) index_at: usize,
    /// The C struct's size (the type's extent).
    pub(crate) extent: usize,
}

/// Every predefined pair type.
pub(crate) const PAIRS: &[Pair] = &[
    Pair { handle: MPI_FLOAT_INT, value: Num::F32, index: Num::I32, index_at: 4, extent: 8 },
    Pair { handle: MPI_DOUBLE_INT, value: Num::F64, index: Num::I32, index_at: 8, extent: 16 },
    Pair { handle: MPI_LONG_INT, value: Num::I64, index: Num::I32, index_at: 8, extent: 16 },
    Pair { handle: MPI_2INT, value: Num::I32, index: Num::I32, index_at: 4, extent: 8 },
    Pair { handle: MPI_SHORT_INT, value: Num::I16, index: Num::I32, index_at: 4, extent: 8 },
    Pair { handle: MPI_LONG_DOUBLE_INT, value: Num::LongDouble, index: Num::I32, index_at: 16, extent: 32 },
    Pair { handle: MPI_2REAL, value: Num::F32, index: Num::F32, index_at: 4, extent: 8 },
    Pair { handle: MPI_2DOUBLE_PRECISION, value: Num::F64, index: Num::F64, index_at: 8, extent: 16 },
    Pair { handle: MPI_2INTEGER, value: Num::I32, index: Num::I32, index_at: 4, extent: 8 },
];

/// The pair type `h` names, if it is one.
pub(crate) fn pair(h: MPI_Datatype) -> Option<&'static Pair> {
    PAIRS.iter().find(|p| p.handle == h)
}

impl Pair {
    /// Bytes of data (value and index).
    pub(crate) const fn size(&self) -> usize {
        self.value.size() + self.index.size()
    }

    /// The byte blocks of one pair: one run when the index follows the value directly.
    pub(crate) fn blocks(&self) -> Vec<(isize, usize)> {
        if self.index_at == self.value.size() {
            vec![(0, self.size())]
        } else {
            vec![(0, self.value.size()), (self.index_at as isize, self.index.size())]
        }
    }

    /// `MPI_MINLOC` (`min`) or `MPI_MAXLOC` on packed pairs, as the collectives apply it
    /// (`dst = src op dst`): the smaller (larger) value with its index; on equal values, the
    /// smaller index. Told the engine it does not commute, so that its algorithms hand it whole
    /// pairs (the commutative ones may split a buffer at any byte).
    pub(crate) fn loc_op(&'static self, min: bool) -> Op {
        let (vs, es) = (self.value.size(), self.size());
        Op::user(false, move |src: &[u8], dst: &mut [u8], _n| {
            for (s, d) in src.chunks_exact(es).zip(dst.chunks_exact_mut(es)) {
                let take_src = match self.value.cmp(s, d) {
                    Some(Ordering::Less) => min,
                    Some(Ordering::Greater) => !min,
                    Some(Ordering::Equal) => self.index.cmp(&s[vs..], &d[vs..]) == Some(Ordering::Less),
                    None => false,
                };
                if take_src {
                    d.copy_from_slice(s);
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(v: &[u8], i: i32) -> Vec<u8> {
        let mut b = v.to_vec();
        b.extend_from_slice(&i.to_ne_bytes());
        b
    }

    fn apply(op: &Op, src: &[u8], dst: &mut [u8]) {
        op.apply(weft::ops::DType::Byte, src, dst, true);
    }

    #[test]
    fn sizes_and_layouts_are_the_c_structs() {
        let p = pair(MPI_DOUBLE_INT).unwrap();
        assert_eq!((p.size(), p.extent, p.blocks()), (12, 16, vec![(0, 12)]));
        let p = pair(MPI_SHORT_INT).unwrap();
        assert_eq!((p.size(), p.extent, p.blocks()), (6, 8, vec![(0, 2), (4, 4)]));
        assert_eq!(pair(MPI_LONG_DOUBLE_INT).unwrap().size(), 20);
        assert!(pair(MPI_DOUBLE).is_none());
        for p in PAIRS {
            assert!(p.index_at >= p.value.size() && p.index_at + p.index.size() <= p.extent);
        }
    }

    #[test]
    fn minloc_and_maxloc_pick_value_then_smaller_index() {
        let p = pair(MPI_DOUBLE_INT).unwrap();
        let (min, max) = (p.loc_op(true), p.loc_op(false));
        let a = packed(&2.5f64.to_ne_bytes(), 7);
        let b = packed(&(-1.0f64).to_ne_bytes(), 9);
        let mut d = b.clone();
        apply(&min, &a, &mut d);
        assert_eq!(d, b);
        apply(&max, &a, &mut d);
        assert_eq!(d, a);
        let tie = packed(&2.5f64.to_ne_bytes(), 3);
        apply(&max, &tie, &mut d);
        assert_eq!(d, tie, "equal values: the smaller index");
        let p = pair(MPI_LONG_INT).unwrap();
        let big = packed(&(i64::MAX - 1).to_ne_bytes(), 1);
        let mut d = packed(&(i64::MAX - 2).to_ne_bytes(), 0);
        apply(&p.loc_op(false), &big, &mut d);
        assert_eq!(d, big, "64-bit values compare exactly");
    }

    #[test]
    fn extended_precision_orders_like_the_numbers() {
        // 1.0, 2.0, -3.0 as x87 extended: significand with explicit integer bit, bias 16383.
        let ext = |neg: bool, exp: u16, mant: u64| {
            let mut b = mant.to_le_bytes().to_vec();
            b.extend_from_slice(&((exp + 16383) | if neg { 0x8000 } else { 0 }).to_le_bytes());
            b.resize(16, 0);
            b
        };
        let one = ext(false, 0, 1 << 63);
        let two = ext(false, 1, 1 << 63);
        let minus3 = ext(true, 1, 3 << 62);
        let c = |a: &[u8], b: &[u8]| Num::LongDouble.cmp(a, b);
        assert_eq!(c(&one, &two), Some(Ordering::Less));
        assert_eq!(c(&minus3, &one), Some(Ordering::Less));
        assert_eq!(c(&two, &two), Some(Ordering::Equal));
        let nan = ext(false, 0x7fff - 16383, 3 << 62);
        assert_eq!(c(&nan, &one), None);
    }
}
