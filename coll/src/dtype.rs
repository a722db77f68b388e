//! Element types of collectives: every fixed-size integer and floating type, raw bytes, and
//! the (value, index) pair types of MINLOC/MAXLOC (MPI's `2INT`, `FLOAT_INT`, `DOUBLE_INT`).

/// Element type of a collective buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    /// `u8`.
    U8 = 1,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// Raw bytes (`MPI_BYTE`): only bitwise and user-defined operations apply.
    Byte,
    /// [`IntInt`] (`MPI_2INT`).
    I32I32,
    /// [`FloatInt`] (`MPI_FLOAT_INT`).
    F32I32,
    /// [`DoubleInt`] (`MPI_DOUBLE_INT`, 16 bytes with explicit padding).
    F64I32,
}

impl DType {
    /// Every type, for tests and tables.
    pub const ALL: [DType; 14] = [
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F32,
        DType::F64,
        DType::Byte,
        DType::I32I32,
        DType::F32I32,
        DType::F64I32,
    ];

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::Byte => 1,
            DType::U16 | DType::I16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 | DType::I32I32 | DType::F32I32 => 8,
            DType::F64I32 => 16,
        }
    }

    /// True for the integer types (arithmetic, bitwise and logical operations apply).
    pub const fn is_int(self) -> bool {
        matches!(
            self,
            DType::U8
                | DType::I8
                | DType::U16
                | DType::I16
                | DType::U32
                | DType::I32
                | DType::U64
                | DType::I64
        )
    }

    /// True for `f32` / `f64`.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// True for the (value, index) pair types.
    pub const fn is_pair(self) -> bool {
        matches!(self, DType::I32I32 | DType::F32I32 | DType::F64I32)
    }

    /// Wire code (carried in collective headers).
    pub const fn code(self) -> u8 {
        self as u8
    }
}

/// A type that collectives can move and reduce element-wise.
///
/// # Safety
/// `Self` must be plain old data of exactly `DTYPE.size()` bytes with no uninitialised
/// (padding) bytes, laid out as [`DType`] describes.
pub unsafe trait Datatype: Copy + 'static {
    /// The element type.
    const DTYPE: DType;
}

macro_rules! prim {
    ($($t:ty => $d:ident),*) => {$(
        // SAFETY: primitive numeric type of the stated size, no padding.
        unsafe impl Datatype for $t { const DTYPE: DType = DType::$d; }
    )*};
}
prim!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64);

/// `(i32 value, i32 index)` for MINLOC/MAXLOC (`MPI_2INT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntInt {
    /// The value compared.
    pub value: i32,
    /// The index carried along (ties: the smaller index wins).
    pub index: i32,
}

/// `(f32 value, i32 index)` for MINLOC/MAXLOC (`MPI_FLOAT_INT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FloatInt {
    /// The value compared.
    pub value: f32,
    /// The index carried along.
    pub index: i32,
}

/// `(f64 value, i32 index)` for MINLOC/MAXLOC (`MPI_DOUBLE_INT`); the padding is explicit so
/// that every byte is initialised.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DoubleInt {
    /// The value compared.
    pub value: f64,
    /// The index carried along.
    pub index: i32,
    /// Padding (ignored; keep it zero).
    pub pad: i32,
}

impl IntInt {
    /// A pair.
    pub fn new(value: i32, index: i32) -> Self {
        IntInt { value, index }
    }
}
impl FloatInt {
    /// A pair.
    pub fn new(value: f32, index: i32) -> Self {
        FloatInt { value, index }
    }
}
impl DoubleInt {
    /// A pair.
    pub fn new(value: f64, index: i32) -> Self {
        DoubleInt { value, index, pad: 0 }
    }
}

// SAFETY: repr(C) structs of 4-byte fields (8 bytes) and f64 + i32 + i32 (16 bytes), no
// implicit padding.
unsafe impl Datatype for IntInt {
    const DTYPE: DType = DType::I32I32;
}
// SAFETY: as above.
unsafe impl Datatype for FloatInt {
    const DTYPE: DType = DType::F32I32;
}
// SAFETY: as above.
unsafe impl Datatype for DoubleInt {
    const DTYPE: DType = DType::F64I32;
}

/// View a typed slice as bytes.
pub fn as_bytes<T: Datatype>(s: &[T]) -> &[u8] {
    // SAFETY: Datatype guarantees plain old data without padding.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}
