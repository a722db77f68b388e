//! Datatypes: the predefined types of the standard ABI with their sizes and the element type
//! collectives reduce them as, and the table of types the application builds.
//!
//! A type is described by [`TypeInfo`]: its size (bytes of data per element), its bounds
//! (`lb`, `extent`, and the true ones), and its layout: contiguous, or a list of byte blocks
//! relative to the element's start. The transfer paths ask one question, [`Types::span`]: for
//! `count` elements of a type, how many bytes, and are they one contiguous run?

use std::ffi::c_int;
use std::sync::Arc;

use weft_coll::DType;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{Kind, Table};

/// Layout of one element of a type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Layout {
    /// `size` bytes from the element's start (lb 0, extent = size).
    Contig,
    /// Byte blocks `(offset from the element's start, length)`, in type-map order.
    Blocks(Vec<(isize, usize)>),
}

/// Everything the library knows about one datatype.
#[derive(Clone, Debug)]
pub(crate) struct TypeInfo {
    /// Bytes of data in one element.
    pub(crate) size: usize,
    pub(crate) lb: isize,
    pub(crate) extent: isize,
    pub(crate) true_lb: isize,
    pub(crate) true_extent: isize,
    pub(crate) layout: Layout,
    /// The element type a reduction works on, when every basic element of the type is that
    /// type (a contiguous run of `size / elem.size()` of them per element).
    pub(crate) elem: Option<DType>,
    /// Usable in communication (predefined types always are).
    pub(crate) committed: bool,
    pub(crate) name: String,
    /// How the type was built (`MPI_Type_get_envelope`): combiner and arguments.
    pub(crate) envelope: Envelope,
}

/// The constructor call a type came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Envelope {
    pub(crate) combiner: c_int,
    pub(crate) ints: Vec<c_int>,
    pub(crate) addrs: Vec<MPI_Aint>,
    pub(crate) types: Vec<MPI_Datatype>,
}

/// The predefined types: handle, size in bytes, reduction element type, name.
const PREDEFINED: &[(MPI_Datatype, usize, Option<DType>, &str)] = &[
    (MPI_AINT, 8, Some(DType::I64), "MPI_AINT"),
    (MPI_COUNT, 8, Some(DType::I64), "MPI_COUNT"),
    (MPI_OFFSET, 8, Some(DType::I64), "MPI_OFFSET"),
    (MPI_PACKED, 1, Some(DType::Byte), "MPI_PACKED"),
    (MPI_SHORT, 2, Some(DType::I16), "MPI_SHORT"),
    (MPI_INT, 4, Some(DType::I32), "MPI_INT"),
    (MPI_LONG, 8, Some(DType::I64), "MPI_LONG"),
    (MPI_LONG_LONG, 8, Some(DType::I64), "MPI_LONG_LONG"),
    (MPI_UNSIGNED_SHORT, 2, Some(DType::U16), "MPI_UNSIGNED_SHORT"),
    (MPI_UNSIGNED, 4, Some(DType::U32), "MPI_UNSIGNED"),
    (MPI_UNSIGNED_LONG, 8, Some(DType::U64), "MPI_UNSIGNED_LONG"),
    (MPI_UNSIGNED_LONG_LONG, 8, Some(DType::U64), "MPI_UNSIGNED_LONG_LONG"),
    (MPI_FLOAT, 4, Some(DType::F32), "MPI_FLOAT"),
    (MPI_C_FLOAT_COMPLEX, 8, None, "MPI_C_FLOAT_COMPLEX"),
    (MPI_CXX_FLOAT_COMPLEX, 8, None, "MPI_CXX_FLOAT_COMPLEX"),
    (MPI_DOUBLE, 8, Some(DType::F64), "MPI_DOUBLE"),
    (MPI_C_DOUBLE_COMPLEX, 16, None, "MPI_C_DOUBLE_COMPLEX"),
    (MPI_CXX_DOUBLE_COMPLEX, 16, None, "MPI_CXX_DOUBLE_COMPLEX"),
    (MPI_LOGICAL, 4, Some(DType::I32), "MPI_LOGICAL"),
    (MPI_INTEGER, 4, Some(DType::I32), "MPI_INTEGER"),
    (MPI_REAL, 4, Some(DType::F32), "MPI_REAL"),
    (MPI_COMPLEX, 8, None, "MPI_COMPLEX"),
    (MPI_DOUBLE_PRECISION, 8, Some(DType::F64), "MPI_DOUBLE_PRECISION"),
    (MPI_DOUBLE_COMPLEX, 16, None, "MPI_DOUBLE_COMPLEX"),
    (MPI_CHARACTER, 1, Some(DType::I8), "MPI_CHARACTER"),
    (MPI_LONG_DOUBLE, 16, None, "MPI_LONG_DOUBLE"),
    (MPI_C_LONG_DOUBLE_COMPLEX, 32, None, "MPI_C_LONG_DOUBLE_COMPLEX"),
    (MPI_CXX_LONG_DOUBLE_COMPLEX, 32, None, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
    (MPI_FLOAT_INT, 8, Some(DType::F32I32), "MPI_FLOAT_INT"),
    (MPI_DOUBLE_INT, 16, Some(DType::F64I32), "MPI_DOUBLE_INT"),
    (MPI_LONG_INT, 16, None, "MPI_LONG_INT"),
    (MPI_2INT, 8, Some(DType::I32I32), "MPI_2INT"),
    (MPI_SHORT_INT, 8, None, "MPI_SHORT_INT"),
    (MPI_LONG_DOUBLE_INT, 32, None, "MPI_LONG_DOUBLE_INT"),
    (MPI_2REAL, 8, None, "MPI_2REAL"),
    (MPI_2DOUBLE_PRECISION, 16, None, "MPI_2DOUBLE_PRECISION"),
    (MPI_2INTEGER, 8, Some(DType::I32I32), "MPI_2INTEGER"),
    (MPI_C_BOOL, 1, Some(DType::U8), "MPI_C_BOOL"),
    (MPI_CXX_BOOL, 1, Some(DType::U8), "MPI_CXX_BOOL"),
    (MPI_WCHAR, 4, Some(DType::I32), "MPI_WCHAR"),
    (MPI_INT8_T, 1, Some(DType::I8), "MPI_INT8_T"),
    (MPI_UINT8_T, 1, Some(DType::U8), "MPI_UINT8_T"),
    (MPI_CHAR, 1, Some(DType::I8), "MPI_CHAR"),
    (MPI_SIGNED_CHAR, 1, Some(DType::I8), "MPI_SIGNED_CHAR"),
    (MPI_UNSIGNED_CHAR, 1, Some(DType::U8), "MPI_UNSIGNED_CHAR"),
    (MPI_BYTE, 1, Some(DType::Byte), "MPI_BYTE"),
    (MPI_INT16_T, 2, Some(DType::I16), "MPI_INT16_T"),
    (MPI_UINT16_T, 2, Some(DType::U16), "MPI_UINT16_T"),
    (MPI_INT32_T, 4, Some(DType::I32), "MPI_INT32_T"),
    (MPI_UINT32_T, 4, Some(DType::U32), "MPI_UINT32_T"),
    (MPI_INT64_T, 8, Some(DType::I64), "MPI_INT64_T"),
    (MPI_UINT64_T, 8, Some(DType::U64), "MPI_UINT64_T"),
    (MPI_LOGICAL1, 1, Some(DType::I8), "MPI_LOGICAL1"),
    (MPI_INTEGER1, 1, Some(DType::I8), "MPI_INTEGER1"),
    (MPI_LOGICAL2, 2, Some(DType::I16), "MPI_LOGICAL2"),
    (MPI_INTEGER2, 2, Some(DType::I16), "MPI_INTEGER2"),
    (MPI_REAL2, 2, None, "MPI_REAL2"),
    (MPI_LOGICAL4, 4, Some(DType::I32), "MPI_LOGICAL4"),
    (MPI_INTEGER4, 4, Some(DType::I32), "MPI_INTEGER4"),
    (MPI_REAL4, 4, Some(DType::F32), "MPI_REAL4"),
    (MPI_COMPLEX4, 4, None, "MPI_COMPLEX4"),
    (MPI_LOGICAL8, 8, Some(DType::I64), "MPI_LOGICAL8"),
    (MPI_INTEGER8, 8, Some(DType::I64), "MPI_INTEGER8"),
    (MPI_REAL8, 8, Some(DType::F64), "MPI_REAL8"),
    (MPI_COMPLEX8, 8, None, "MPI_COMPLEX8"),
    (MPI_LOGICAL16, 16, None, "MPI_LOGICAL16"),
    (MPI_INTEGER16, 16, None, "MPI_INTEGER16"),
    (MPI_REAL16, 16, None, "MPI_REAL16"),
    (MPI_COMPLEX16, 16, None, "MPI_COMPLEX16"),
    (MPI_COMPLEX32, 32, None, "MPI_COMPLEX32"),
];

/// The predefined handles live in `0x200..0x300`.
const PREDEF_BASE: usize = 0x200;
const PREDEF_LEN: usize = 0x100;

/// Predefined types by handle, and the created ones.
pub(crate) struct Types {
    predefined: Vec<Option<Arc<TypeInfo>>>,
    created: Table<Arc<TypeInfo>>,
}

/// How `count` elements of a type sit in memory.
#[derive(Clone, Debug)]
pub(crate) enum Span {
    /// One run of `len` bytes at the buffer address (plus the type's true lb, which is 0).
    Contig(usize),
    /// Scattered: pack or unpack through the type (total data bytes, the type).
    Strided(usize, Arc<TypeInfo>),
}

impl Span {
    /// Bytes of data.
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Span::Contig(n) | Span::Strided(n, _) => *n,
        }
    }
}

impl Types {
    pub(crate) fn new() -> Types {
        let mut predefined = vec![None; PREDEF_LEN];
        for &(h, size, elem, name) in PREDEFINED {
            let t = TypeInfo {
                size,
                lb: 0,
                extent: size as isize,
                true_lb: 0,
                true_extent: size as isize,
                layout: Layout::Contig,
                elem,
                committed: true,
                name: name.to_string(),
                envelope: Envelope { combiner: MPI_COMBINER_NAMED, ..Default::default() },
            };
            predefined[h - PREDEF_BASE] = Some(Arc::new(t));
        }
        Types { predefined, created: Table::new(Kind::Datatype) }
    }

    /// The type `h` names, or `MPI_ERR_TYPE`.
    #[inline]
    pub(crate) fn get(&self, h: MPI_Datatype) -> MpiResult<&Arc<TypeInfo>> {
        let t = if (PREDEF_BASE..PREDEF_BASE + PREDEF_LEN).contains(&h) {
            self.predefined[h - PREDEF_BASE].as_ref()
        } else {
            self.created.get(h)
        };
        t.ok_or_else(|| {
            if h == MPI_DATATYPE_NULL {
                err!(MPI_ERR_TYPE, "invalid datatype: MPI_DATATYPE_NULL")
            } else {
                err!(MPI_ERR_TYPE, "invalid datatype {h:#x}: freed or never created")
            }
        })
    }

    /// True if `h` is a predefined type.
    pub(crate) fn is_predefined(h: MPI_Datatype) -> bool {
        (PREDEF_BASE..PREDEF_BASE + PREDEF_LEN).contains(&h)
    }

    /// How `count` elements of `h` sit in memory; checks the count and that the type is
    /// committed.
    #[inline]
    pub(crate) fn span(&self, h: MPI_Datatype, count: i64) -> MpiResult<Span> {
        let t = self.get(h)?;
        if count < 0 {
            return Err(err!(MPI_ERR_COUNT, "invalid count {count}: counts are never negative"));
        }
        if !t.committed {
            return Err(err!(MPI_ERR_TYPE, "datatype {} is not committed (MPI_Type_commit)", t.name));
        }
        let n = count as usize;
        let bytes = t
            .size
            .checked_mul(n)
            .ok_or_else(|| err!(MPI_ERR_COUNT, "count {count} of {} overflows the address space", t.name))?;
        match t.layout {
            Layout::Contig if t.extent == t.size as isize || n <= 1 => Ok(Span::Contig(bytes)),
            _ => Ok(Span::Strided(bytes, t.clone())),
        }
    }

    /// Store a created type; its handle.
    pub(crate) fn insert(&mut self, t: TypeInfo) -> MPI_Datatype {
        self.created.insert(Arc::new(t))
    }

    /// The created type `h` names, for changes (commit, name).
    pub(crate) fn get_created_mut(&mut self, h: MPI_Datatype) -> Option<&mut Arc<TypeInfo>> {
        self.created.get_mut(h)
    }

    /// Free a created type; `MPI_ERR_TYPE` for predefined or invalid handles.
    pub(crate) fn free(&mut self, h: MPI_Datatype) -> MpiResult {
        if Self::is_predefined(h) {
            return Err(err!(MPI_ERR_TYPE, "predefined datatype {h:#x} cannot be freed"));
        }
        self.created
            .remove(h)
            .map(drop)
            .ok_or_else(|| err!(MPI_ERR_TYPE, "invalid datatype {h:#x}: freed or never created"))
    }
}

/// The byte blocks of one element of `ty`, relative to the element's start.
fn blocks(ty: &TypeInfo) -> std::borrow::Cow<'_, [(isize, usize)]> {
    match &ty.layout {
        Layout::Contig => std::borrow::Cow::Owned(vec![(0, ty.size)]),
        Layout::Blocks(b) => std::borrow::Cow::Borrowed(b),
    }
}

/// Append the data of `count` elements of `ty` at `src` to `out`, in type-map order.
///
/// # Safety
/// `src` must be valid for reads of every byte the type map of `count` elements touches.
pub(crate) unsafe fn pack(src: *const u8, count: usize, ty: &TypeInfo, out: &mut Vec<u8>) {
    let b = blocks(ty);
    out.reserve(ty.size * count);
    for i in 0..count {
        let base = i as isize * ty.extent;
        for &(off, len) in b.iter() {
            // SAFETY: inside the type map, valid by the caller's contract.
            let s = unsafe { std::slice::from_raw_parts(src.offset(base + off), len) };
            out.extend_from_slice(s);
        }
    }
}

/// Scatter `packed` (the data of up to `count` elements of `ty`, in type-map order) into
/// `dst`; stops where `packed` ends (a shorter message).
///
/// # Safety
/// `dst` must be valid for writes of every byte the type map of `count` elements touches.
pub(crate) unsafe fn unpack(packed: &[u8], dst: *mut u8, count: usize, ty: &TypeInfo) -> MpiResult {
    let b = blocks(ty);
    let mut at = 0;
    for i in 0..count {
        let base = i as isize * ty.extent;
        for &(off, len) in b.iter() {
            if at >= packed.len() {
                return Ok(());
            }
            let n = len.min(packed.len() - at);
            // SAFETY: inside the type map, valid by the caller's contract; `packed` is a
            // separate allocation.
            unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr().add(at), dst.offset(base + off), n) };
            at += n;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_sizes_match_the_c_types() {
        let t = Types::new();
        let size = |h| t.get(h).unwrap().size;
        assert_eq!(size(MPI_INT), std::mem::size_of::<c_int>());
        assert_eq!(size(MPI_LONG), std::mem::size_of::<std::ffi::c_long>());
        assert_eq!(size(MPI_DOUBLE), 8);
        assert_eq!(size(MPI_AINT), std::mem::size_of::<MPI_Aint>());
        assert_eq!(size(MPI_DOUBLE_INT), 16);
        for &(h, size, elem, _) in PREDEFINED {
            if let Some(e) = elem {
                assert_eq!(size % e.size(), 0, "{h:#x}");
            }
        }
        assert!(t.get(MPI_DATATYPE_NULL).is_err());
        assert!(t.span(MPI_INT, -1).is_err());
        assert_eq!(t.span(MPI_INT, 3).unwrap().bytes(), 12);
    }
}
