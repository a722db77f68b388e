//! Datatypes: what a type is (its description, [`TypeInfo`]), the predefined types of the
//! standard ABI, the table of types the application builds, and the one rule every
//! constructor goes through ([`compose`]), and the process's type table. Constructors live in
//! `typecons`, packing in `pack`; the datatype functions in `bind/datatype/`.
//!
//! A type is its size (bytes of data per element), its bounds (`lb`, `extent`, and the true
//! ones, which ignore `MPI_Type_create_resized` markers) and its layout: the byte blocks of one
//! element relative to the element's start, in type-map order, with adjacent blocks merged.
//! Merging happens when the type is built, so a derived type whose data is in fact one run
//! from its start is [`Layout::Contig`] and travels without a copy. The transfer paths ask one
//! question, [`Types::span`]: for `count` elements of a type, how many bytes, and are they one
//! contiguous run?
//!
//! A type whose basic elements are all one predefined type keeps that type as `elem`, so the
//! predefined reductions apply to it (its packed data is a run of such elements).

pub(crate) mod pack;
pub(crate) mod pair;
#[cfg(test)]
mod proptests;
pub(crate) mod query;
pub(crate) mod typecons;

use std::ffi::c_int;
use std::sync::Arc;

use weft::ops::DType;

use std::cell::RefCell;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{Kind, Table};
use crate::state::{Mpi, Owned};

pub(crate) use pack::{pack, pack_to, unpack};
pub(crate) use typecons::array;

/// Layout of one element of a type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Layout {
    /// `size` bytes from the element's start.
    Contig,
    /// Byte blocks `(offset from the element's start, length)`, in type-map order; no two
    /// consecutive blocks are adjacent (they would have been merged), none is empty.
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
    /// type (the packed data of an element is a run of `size / elem.size()` of them).
    pub(crate) elem: Option<DType>,
    /// The predefined pair type (`MPI_DOUBLE_INT`, ...) every basic element of the type is,
    /// if any: `MPI_MINLOC`/`MPI_MAXLOC` apply to its packed data.
    pub(crate) pair: Option<&'static pair::Pair>,
    /// Usable in communication (predefined types always are).
    pub(crate) committed: bool,
    pub(crate) name: String,
    /// How the type was built (`MPI_Type_get_envelope`): combiner and arguments.
    pub(crate) envelope: Envelope,
    /// Alignment of the most aligned basic type inside (the C compiler's), used to pad the
    /// extent of a struct type.
    pub(crate) align: usize,
    /// The bounds were set explicitly (`MPI_Type_create_resized`, subarray) somewhere in the
    /// type: a struct containing it is not padded.
    pub(crate) explicit_bounds: bool,
}

/// The constructor call a type came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Envelope {
    pub(crate) combiner: c_int,
    pub(crate) ints: Vec<c_int>,
    pub(crate) addrs: Vec<MPI_Aint>,
    /// The type handles as the constructor got them.
    pub(crate) types: Vec<MPI_Datatype>,
    /// The same types, kept alive for `MPI_Type_get_contents` after the application freed
    /// them.
    pub(crate) children: Vec<Arc<TypeInfo>>,
}

impl TypeInfo {
    /// True if `n` elements are one run of `n * size` bytes from the buffer address, for every
    /// `n`.
    #[inline]
    pub(crate) fn dense(&self) -> bool {
        self.layout == Layout::Contig && self.extent == self.size as isize
    }
}

/// The predefined types: handle, size in bytes, reduction element type, name. The pair types'
/// layouts and extents come from `pair::PAIRS`; `MPI_FLOAT_INT`, `MPI_2INT` and `MPI_2INTEGER`
/// are dense (packed = in memory), so the collectives' own pair element types reduce them.
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
    (MPI_DOUBLE_INT, 12, None, "MPI_DOUBLE_INT"),
    (MPI_LONG_INT, 12, None, "MPI_LONG_INT"),
    (MPI_2INT, 8, Some(DType::I32I32), "MPI_2INT"),
    (MPI_SHORT_INT, 6, None, "MPI_SHORT_INT"),
    (MPI_LONG_DOUBLE_INT, 20, None, "MPI_LONG_DOUBLE_INT"),
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

/// The C alignment of a predefined type of `size` bytes named `name`.
fn predefined_align(name: &str, size: usize) -> usize {
    match name {
        "MPI_LONG_DOUBLE"
        | "MPI_LONG_DOUBLE_INT"
        | "MPI_C_LONG_DOUBLE_COMPLEX"
        | "MPI_CXX_LONG_DOUBLE_COMPLEX" => 16,
        "MPI_FLOAT_INT" | "MPI_2INT" | "MPI_2INTEGER" | "MPI_2REAL" | "MPI_SHORT_INT" => 4,
        "MPI_DOUBLE_INT" | "MPI_LONG_INT" | "MPI_2DOUBLE_PRECISION" => 8,
        n if n.contains("COMPLEX") => (size / 2).clamp(1, 16),
        _ => size.clamp(1, 8),
    }
}

/// The predefined handles live in `0x200..0x300`.
const PREDEF_BASE: usize = 0x200;
const PREDEF_LEN: usize = 0x100;

/// Largest number of blocks one element's layout may have (16 bytes each): a type more
/// fragmented than this is refused with `MPI_ERR_NO_MEM` instead of exhausting memory.
pub(crate) const MAX_BLOCKS: usize = 1 << 24;

/// Predefined types by handle, and the created ones.
pub(crate) struct Types {
    predefined: Vec<Option<Arc<TypeInfo>>>,
    created: Table<Arc<TypeInfo>>,
}

/// How `count` elements of a type sit in memory.
#[derive(Clone, Debug)]
pub(crate) enum Span {
    /// One run of `len` bytes at the buffer address.
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
            let pair = pair::pair(h);
            let (extent, true_extent, layout) = match pair {
                Some(p) => {
                    let b = p.blocks();
                    let (off, len) = b[b.len() - 1];
                    let layout = if b.len() == 1 { Layout::Contig } else { Layout::Blocks(b) };
                    (p.extent, off as usize + len, layout)
                }
                None => (size, size, Layout::Contig),
            };
            debug_assert!(pair.is_none_or(|p| p.size() == size), "{name}");
            let t = TypeInfo {
                size,
                lb: 0,
                extent: extent as isize,
                true_lb: 0,
                true_extent: true_extent as isize,
                layout,
                elem,
                pair,
                committed: true,
                name: name.to_string(),
                envelope: Envelope { combiner: MPI_COMBINER_NAMED, ..Default::default() },
                align: predefined_align(name, size),
                explicit_bounds: false,
            };
            predefined[h - PREDEF_BASE] = Some(Arc::new(t));
        }
        Types { predefined, created: Table::new(Kind::Datatype) }
    }

    /// The type `h` names, or `MPI_ERR_TYPE`.
    #[inline]
    pub(crate) fn get(&self, h: MPI_Datatype) -> MpiResult<&Arc<TypeInfo>> {
        self.find(h).ok_or_else(|| invalid(h))
    }

    /// The type `h` names, if any.
    #[inline]
    fn find(&self, h: MPI_Datatype) -> Option<&Arc<TypeInfo>> {
        if Self::is_predefined(h) {
            self.predefined[h - PREDEF_BASE].as_ref()
        } else {
            self.created.get(h)
        }
    }

    /// The type `h` names, for changes (commit, name).
    pub(crate) fn get_mut(&mut self, h: MPI_Datatype) -> MpiResult<&mut Arc<TypeInfo>> {
        let t = if Self::is_predefined(h) {
            self.predefined[h - PREDEF_BASE].as_mut()
        } else {
            self.created.get_mut(h)
        };
        t.ok_or_else(|| invalid(h))
    }

    /// Size and reduction element type of `h` if it names a committed type whose elements are
    /// dense (`n` of them are one run of `n * size` bytes): what the data paths need, without
    /// cloning the description. `None` for anything else, whose full path then checks it.
    #[inline]
    pub(crate) fn dense(&self, h: MPI_Datatype) -> Option<(usize, Option<DType>)> {
        let t = self.find(h)?;
        (t.committed && t.dense()).then_some((t.size, t.elem))
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
            return Err(err!(MPI_ERR_TYPE, "datatype {} is not committed (MPI_Type_commit)", t.display()));
        }
        let n = count as usize;
        let bytes = t.size.checked_mul(n).ok_or_else(|| {
            err!(MPI_ERR_COUNT, "count {count} of {} overflows the address space", t.display())
        })?;
        match t.layout {
            Layout::Contig if t.extent == t.size as isize || n <= 1 => Ok(Span::Contig(bytes)),
            _ => Ok(Span::Strided(bytes, t.clone())),
        }
    }

    /// Store a created type; its handle.
    pub(crate) fn insert(&mut self, t: TypeInfo) -> MPI_Datatype {
        self.created.insert(Arc::new(t))
    }

    /// A new handle for an existing description (`MPI_Type_get_contents` of a derived type).
    pub(crate) fn insert_shared(&mut self, t: Arc<TypeInfo>) -> MPI_Datatype {
        self.created.insert(t)
    }

    /// Free a created type; `MPI_ERR_TYPE` for predefined or invalid handles. Types built from
    /// it keep their own copy of its description.
    pub(crate) fn free(&mut self, h: MPI_Datatype) -> MpiResult {
        if Self::is_predefined(h) {
            let name = self.get(h).map(|t| t.name.clone()).unwrap_or_else(|_| format!("{h:#x}"));
            return Err(err!(MPI_ERR_TYPE, "predefined datatype {name} cannot be freed"));
        }
        self.created.remove(h).map(drop).ok_or_else(|| invalid(h))
    }
}

impl TypeInfo {
    /// The name for messages: the type's name, or what it was built by.
    pub(crate) fn display(&self) -> String {
        if self.name.is_empty() {
            format!("(derived, combiner {})", self.envelope.combiner)
        } else {
            self.name.clone()
        }
    }
}

/// The error for a handle that names no type.
#[cold]
pub(crate) fn invalid(h: MPI_Datatype) -> crate::error::MpiErr {
    if h == MPI_DATATYPE_NULL {
        err!(MPI_ERR_TYPE, "invalid datatype: MPI_DATATYPE_NULL")
    } else {
        err!(MPI_ERR_TYPE, "invalid datatype {h:#x}: freed or never created")
    }
}

/// The byte blocks of one element of `ty`, relative to the element's start.
pub(crate) fn blocks(ty: &TypeInfo) -> std::borrow::Cow<'_, [(isize, usize)]> {
    match &ty.layout {
        Layout::Contig if ty.size == 0 => std::borrow::Cow::Owned(Vec::new()),
        Layout::Contig => std::borrow::Cow::Owned(vec![(0, ty.size)]),
        Layout::Blocks(b) => std::borrow::Cow::Borrowed(b),
    }
}

/// One piece of a type being built: `count` elements of `ty`, the first at byte `disp` from
/// the new element's start, the next ones `ty.extent` apart.
pub(crate) struct Part<'a> {
    pub(crate) disp: isize,
    pub(crate) count: usize,
    pub(crate) ty: &'a TypeInfo,
}

/// The overflow error of type construction.
#[cold]
fn overflow() -> crate::error::MpiErr {
    err!(MPI_ERR_ARG, "datatype construction: displacements or sizes overflow the address space")
}

/// Build the description of a type made of `parts` (in type-map order): its blocks (merged),
/// size, bounds (the standard's: lb/ub are the least/greatest bounds of the parts, whose own
/// lb/ub markers count), homogeneous element type and alignment. A struct (`pad_struct`)
/// without explicit bounds inside has its extent rounded up to its alignment, as the C
/// compiler pads the struct (MPICH's and Open MPI's rule). The new type is uncommitted and
/// unnamed.
pub(crate) fn compose<'a>(
    parts: impl IntoIterator<Item = Part<'a>>,
    pad_struct: bool,
    envelope: Envelope,
) -> MpiResult<TypeInfo> {
    let mut out: Vec<(isize, usize)> = Vec::new();
    let mut size = 0usize;
    let mut bounds: Option<(isize, isize)> = None;
    let mut true_bounds: Option<(isize, isize)> = None;
    // None: no data yet; Some(None): mixed or not reducible.
    let mut elem: Option<Option<DType>> = None;
    let mut pair: Option<Option<&'static pair::Pair>> = None;
    let (mut align, mut explicit) = (1usize, false);
    let widen = |b: &mut Option<(isize, isize)>, lo: isize, hi: isize| {
        *b = Some(b.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))));
    };
    for Part { disp, count, ty } in parts {
        if count == 0 {
            continue;
        }
        align = align.max(ty.align);
        explicit |= ty.explicit_bounds;
        let last = isize::try_from(count - 1)
            .ok()
            .and_then(|c| c.checked_mul(ty.extent))
            .and_then(|o| o.checked_add(disp))
            .ok_or_else(overflow)?;
        let (lo, hi) = (disp.min(last), disp.max(last));
        let ub = hi.checked_add(ty.lb).and_then(|x| x.checked_add(ty.extent)).ok_or_else(overflow)?;
        widen(&mut bounds, lo.checked_add(ty.lb).ok_or_else(overflow)?, ub);
        if ty.size > 0 {
            let tub = hi
                .checked_add(ty.true_lb)
                .and_then(|x| x.checked_add(ty.true_extent))
                .ok_or_else(overflow)?;
            widen(&mut true_bounds, lo.checked_add(ty.true_lb).ok_or_else(overflow)?, tub);
            elem = Some(match elem {
                None => ty.elem,
                Some(e) if e == ty.elem => e,
                Some(_) => None,
            });
            pair = Some(match pair {
                None => ty.pair,
                Some(p) if p == ty.pair => p,
                Some(_) => None,
            });
        }
        size = ty.size.checked_mul(count).and_then(|s| s.checked_add(size)).ok_or_else(overflow)?;
        if ty.dense() {
            push_block(&mut out, disp, ty.size * count);
            continue;
        }
        let b = blocks(ty);
        for i in 0..count {
            let base = disp + i as isize * ty.extent; // in range: checked for the last one above
            for &(off, len) in b.iter() {
                push_block(&mut out, base + off, len);
            }
            if out.len() > MAX_BLOCKS {
                return Err(err!(
                    MPI_ERR_NO_MEM,
                    "datatype construction: more than {MAX_BLOCKS} separate blocks per element"
                ));
            }
        }
    }
    let (lb, ub) = bounds.unwrap_or((0, 0));
    let mut extent = ub.checked_sub(lb).ok_or_else(overflow)?;
    if pad_struct && !explicit && extent % align as isize != 0 {
        extent += align as isize - extent.rem_euclid(align as isize);
    }
    let (true_lb, true_ub) = true_bounds.unwrap_or((0, 0));
    let layout = match out.as_slice() {
        [] | [(0, _)] => Layout::Contig,
        _ => Layout::Blocks(out),
    };
    Ok(TypeInfo {
        size,
        lb,
        extent,
        true_lb,
        true_extent: true_ub - true_lb,
        layout,
        elem: elem.flatten(),
        pair: pair.flatten(),
        committed: false,
        name: String::new(),
        envelope,
        align,
        explicit_bounds: explicit,
    })
}

/// Append a block, merging it with the previous one when they are adjacent.
#[inline]
fn push_block(out: &mut Vec<(isize, usize)>, off: isize, len: usize) {
    if len == 0 {
        return;
    }
    match out.last_mut() {
        Some((o, l)) if *o + *l as isize == off => *l += len,
        _ => out.push((off, len)),
    }
}

/// The process's table of datatypes (see [`Owned`]).
static TYPES: Owned<RefCell<Types>> = Owned::new();

impl Mpi {
    /// The table of datatypes.
    #[inline(always)]
    pub(crate) fn types(&self) -> &RefCell<Types> {
        TYPES.get(self)
    }
}

/// Make the table of datatypes (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Types) {
    TYPES.make(RefCell::new(table));
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
        assert_eq!(size(MPI_DOUBLE_INT), 12, "MPI size: value and index, not the struct's padding");
        assert_eq!(t.get(MPI_DOUBLE_INT).unwrap().extent, 16);
        assert_eq!(t.get(MPI_SHORT_INT).unwrap().true_extent, 8);
        for &(h, size, elem, _) in PREDEFINED {
            if let Some(e) = elem {
                assert_eq!(size % e.size(), 0, "{h:#x}");
            }
        }
        assert!(t.get(MPI_DATATYPE_NULL).is_err());
        assert!(t.span(MPI_INT, -1).is_err());
        assert_eq!(t.span(MPI_INT, 3).unwrap().bytes(), 12);
    }

    #[test]
    fn adjacent_parts_merge_into_one_contiguous_type() {
        let t = Types::new();
        let int = t.get(MPI_INT).unwrap();
        let parts = (0..4).map(|i| Part { disp: i * 8, count: 2, ty: int });
        let v = compose(parts, false, Envelope::default()).unwrap();
        assert_eq!(v.layout, Layout::Contig);
        assert!(v.dense());
        assert_eq!((v.size, v.extent, v.elem), (32, 32, Some(DType::I32)));
        let gap = compose(
            [Part { disp: 0, count: 1, ty: int }, Part { disp: 8, count: 1, ty: int }],
            false,
            Envelope::default(),
        )
        .unwrap();
        assert_eq!(gap.layout, Layout::Blocks(vec![(0, 4), (8, 4)]));
        assert_eq!((gap.size, gap.extent, gap.true_extent), (8, 12, 12));
    }

    #[test]
    fn structs_pad_to_their_alignment_and_mixed_types_do_not_reduce() {
        let t = Types::new();
        let (d, c) = (t.get(MPI_DOUBLE).unwrap(), t.get(MPI_CHAR).unwrap());
        // struct { double d; char c; }: size 9, extent 16 (padded to 8).
        let s = compose(
            [Part { disp: 0, count: 1, ty: d }, Part { disp: 8, count: 1, ty: c }],
            true,
            Envelope::default(),
        )
        .unwrap();
        assert_eq!((s.size, s.lb, s.extent, s.true_extent, s.elem), (9, 0, 16, 9, None));
        // The same parts as an hindexed type are not padded.
        let h = compose(
            [Part { disp: 0, count: 1, ty: d }, Part { disp: 8, count: 1, ty: c }],
            false,
            Envelope::default(),
        )
        .unwrap();
        assert_eq!(h.extent, 9);
    }
}
