//! Safe-ish helpers around `pmix_value_t`, `pmix_info_t` and `pmix_proc_t`: the Rust versions
//! of the header macros that libpmix 4.2 does not export as functions (`PMIX_PROC_LOAD`,
//! `PMIX_INFO_LOAD` for the plain types we pass, `PMIX_VALUE_RELEASE`), plus typed readers.

use std::ffi::{c_char, CStr};
use std::ptr::NonNull;

use super::sys;

// The data-type and scope constants come out of bindgen as `u32`; the struct fields are u16/u8.
pub(crate) const T_BOOL: sys::pmix_data_type_t = sys::PMIX_BOOL as _;
pub(crate) const T_STRING: sys::pmix_data_type_t = sys::PMIX_STRING as _;
pub(crate) const T_INT: sys::pmix_data_type_t = sys::PMIX_INT as _;
pub(crate) const T_BYTE_OBJECT: sys::pmix_data_type_t = sys::PMIX_BYTE_OBJECT as _;
pub(crate) const T_PROC: sys::pmix_data_type_t = sys::PMIX_PROC as _;
pub(crate) const T_DATA_ARRAY: sys::pmix_data_type_t = sys::PMIX_DATA_ARRAY as _;
pub(crate) const SCOPE_GLOBAL: sys::pmix_scope_t = sys::PMIX_GLOBAL as _;

/// `PMIx_Error_string(status)` as an owned string.
pub(crate) fn error_string(status: sys::pmix_status_t) -> String {
    // SAFETY: PMIx_Error_string only formats a status code; it returns a pointer to a static
    // string (or NULL, which we check), valid for the life of the library; we copy it at once.
    unsafe {
        let p = sys::PMIx_Error_string(status);
        if p.is_null() {
            format!("PMIx status {status}")
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// The namespace of a proc as a Rust string (up to the first NUL).
pub(crate) fn nspace_str(ns: &sys::pmix_nspace_t) -> String {
    let bytes: Vec<u8> = ns.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A namespace from a string: non-empty, shorter than `PMIX_MAX_NSLEN`, no NUL.
pub(crate) fn nspace_from(s: &str) -> Result<sys::pmix_nspace_t, crate::RuntimeError> {
    if s.is_empty() || s.len() >= sys::PMIX_MAX_NSLEN as usize || s.contains('\0') {
        return Err(crate::RuntimeError::Env(format!("{s:?} is not a valid PMIx namespace")));
    }
    let mut ns: sys::pmix_nspace_t = [0; sys::PMIX_MAX_NSLEN as usize + 1];
    for (d, b) in ns.iter_mut().zip(s.bytes()) {
        *d = b as c_char;
    }
    Ok(ns)
}

/// Whether two namespaces are equal (compared up to the first NUL, as `PMIX_CHECK_NSPACE`).
pub(crate) fn nspace_eq(a: &sys::pmix_nspace_t, b: &sys::pmix_nspace_t) -> bool {
    for (x, y) in a.iter().zip(b.iter()) {
        if x != y {
            return false;
        }
        if *x == 0 {
            return true;
        }
    }
    true
}

/// `PMIX_PROC_LOAD`: a proc of namespace `ns` (already a fixed-size, NUL-terminated array).
pub(crate) fn make_proc(ns: &sys::pmix_nspace_t, rank: u32) -> sys::pmix_proc_t {
    sys::pmix_proc_t { nspace: *ns, rank }
}

/// Copy a NUL-terminated key (a bindgen `&[u8; N]` constant or a `CStr`'s bytes with its NUL)
/// into a `pmix_key_t`, truncating at `PMIX_MAX_KEYLEN` like `pmix_strncpy`.
pub(crate) fn load_key(dst: &mut sys::pmix_key_t, key: &[u8]) {
    let n = key.iter().position(|&b| b == 0).unwrap_or(key.len()).min(sys::PMIX_MAX_KEYLEN as usize);
    for (d, &s) in dst.iter_mut().zip(&key[..n]) {
        *d = s as c_char;
    }
    dst[n] = 0;
}

/// `PMIX_INFO_LOAD(info, key, &flag, PMIX_BOOL)`. Holds no heap memory: needs no destruct.
pub(crate) fn info_bool(key: &[u8], flag: bool) -> sys::pmix_info_t {
    let mut info = sys::pmix_info_t::default();
    load_key(&mut info.key, key);
    info.value.type_ = T_BOOL;
    info.value.data.flag = flag;
    info
}

/// `PMIX_INFO_LOAD(info, key, &n, PMIX_INT)`. Holds no heap memory: needs no destruct.
#[allow(dead_code)]
pub(crate) fn info_int(key: &[u8], n: i32) -> sys::pmix_info_t {
    let mut info = sys::pmix_info_t::default();
    load_key(&mut info.key, key);
    info.value.type_ = T_INT;
    info.value.data.integer = n;
    info
}

/// An info whose string value *borrows* `s`: the caller keeps `s` alive for as long as the
/// info is used, and must not pass it to anything that frees it (PMIx copies what it keeps).
pub(crate) fn info_borrowed_str(key: &[u8], s: &CStr) -> sys::pmix_info_t {
    let mut info = sys::pmix_info_t::default();
    load_key(&mut info.key, key);
    info.value.type_ = T_STRING;
    info.value.data.string = s.as_ptr().cast_mut();
    info
}

/// Whether `info.key` equals the NUL-terminated `key`.
pub(crate) fn key_is(info: &sys::pmix_info_t, key: &[u8]) -> bool {
    let n = key.iter().position(|&b| b == 0).unwrap_or(key.len());
    info.key.len() > n && info.key[n] == 0 && info.key[..n].iter().zip(&key[..n]).all(|(&a, &b)| a as u8 == b)
}

/// A `pmix_value_t` allocated by libpmix (the result of `PMIx_Get`), released on drop with
/// `PMIX_VALUE_RELEASE` semantics: `PMIx_Value_destruct` then `free`.
pub(crate) struct OwnedValue(NonNull<sys::pmix_value_t>);

impl OwnedValue {
    /// Take ownership of a value returned by `PMIx_Get`.
    ///
    /// # Safety
    /// `p` must be NULL or a `pmix_value_t` that libpmix allocated with `malloc` and handed
    /// over to the caller, not owned by anything else.
    pub(crate) unsafe fn from_raw(p: *mut sys::pmix_value_t) -> Option<OwnedValue> {
        NonNull::new(p).map(OwnedValue)
    }

    fn get(&self) -> &sys::pmix_value_t {
        // SAFETY: the pointer is non-null, valid and exclusively ours until drop (from_raw).
        unsafe { self.0.as_ref() }
    }

    /// The value as an unsigned integer if it holds any integer type that fits.
    pub(crate) fn as_u32(&self) -> Option<u32> {
        value_as_u64(self.get()).and_then(|v| u32::try_from(v).ok())
    }

    /// The value as a flag, if it holds a `PMIX_BOOL`.
    pub(crate) fn as_bool(&self) -> Option<bool> {
        let v = self.get();
        if v.type_ != T_BOOL {
            return None;
        }
        // SAFETY: type PMIX_BOOL → `flag` is the active member.
        Some(unsafe { v.data.flag })
    }

    /// The value as a string, if it holds a `PMIX_STRING`.
    pub(crate) fn as_string(&self) -> Option<String> {
        let v = self.get();
        if v.type_ != T_STRING {
            return None;
        }
        // SAFETY: type is PMIX_STRING, so the `string` member is the active one; it is NULL or
        // a NUL-terminated string owned by this value, which outlives this borrow.
        unsafe {
            let p = v.data.string;
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    }

    /// The value's bytes, if it holds a `PMIX_BYTE_OBJECT` (or a string: its bytes, no NUL).
    pub(crate) fn to_bytes(&self) -> Option<Vec<u8>> {
        let v = self.get();
        if v.type_ == T_BYTE_OBJECT {
            // SAFETY: type is PMIX_BYTE_OBJECT, so `bo` is the active member; `bytes` points to
            // `size` bytes owned by this value (or is NULL with size 0).
            unsafe {
                let bo = v.data.bo;
                if bo.bytes.is_null() || bo.size == 0 {
                    return Some(Vec::new());
                }
                Some(std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size).to_vec())
            }
        } else {
            self.as_string().map(String::into_bytes)
        }
    }
}

impl Drop for OwnedValue {
    fn drop(&mut self) {
        // SAFETY: PMIX_VALUE_RELEASE: the value (and its payload) was malloc'ed by libpmix and
        // is exclusively ours; PMIx_Value_destruct frees the payload, `free` the struct (libpmix's
        // pmix_free is plain free()). The pointer is not used after this.
        unsafe {
            sys::PMIx_Value_destruct(self.0.as_ptr());
            libc::free(self.0.as_ptr().cast());
        }
    }
}

/// Any integer-typed value as u64 (negative values are rejected).
fn value_as_u64(v: &sys::pmix_value_t) -> Option<u64> {
    use sys::*;
    let t = u32::from(v.type_);
    // SAFETY: each arm reads exactly the union member that `type_` says is active; all are
    // plain integers.
    unsafe {
        let d = &v.data;
        match t {
            PMIX_UINT32 => Some(u64::from(d.uint32)),
            PMIX_PROC_RANK => Some(u64::from(d.rank)),
            PMIX_UINT => Some(u64::from(d.uint)),
            PMIX_UINT16 => Some(u64::from(d.uint16)),
            PMIX_UINT8 | PMIX_BYTE => Some(u64::from(d.uint8)),
            PMIX_UINT64 => Some(d.uint64),
            PMIX_SIZE => u64::try_from(d.size).ok(),
            PMIX_INT => u64::try_from(d.integer).ok(),
            PMIX_INT32 => u64::try_from(d.int32).ok(),
            PMIX_INT64 => u64::try_from(d.int64).ok(),
            PMIX_INT16 => u64::try_from(d.int16).ok(),
            PMIX_INT8 => u64::try_from(d.int8).ok(),
            _ => None,
        }
    }
}

/// Append to `out` the ranks of the procs an event info value names (`PMIX_PROC` or a
/// `PMIX_DATA_ARRAY` of `PMIX_PROC`), keeping only those of namespace `ns`.
///
/// # Safety
/// `v` must be a valid value as delivered by libpmix to an event handler (its pointers valid
/// for the duration of the call).
pub(crate) unsafe fn procs_in_value(v: &sys::pmix_value_t, ns: &sys::pmix_nspace_t, out: &mut Vec<u32>) {
    if v.type_ == T_PROC {
        // SAFETY: by the caller's contract, type PMIX_PROC → `proc_` is the active member, NULL or valid.
        let p = unsafe { v.data.proc_ };
        // SAFETY: by the caller's contract, non-null proc pointers delivered by libpmix are valid.
        if let Some(p) = unsafe { p.as_ref() } {
            if nspace_eq(&p.nspace, ns) {
                out.push(p.rank);
            }
        }
    } else if v.type_ == T_DATA_ARRAY {
        // SAFETY: by the caller's contract, type PMIX_DATA_ARRAY → `darray` is the active member, NULL or valid.
        let Some(da) = (unsafe { v.data.darray.as_ref() }) else {
            return;
        };
        if da.type_ != T_PROC || da.array.is_null() {
            return;
        }
        // SAFETY: by the caller's contract, a data array of type PMIX_PROC holds `size` contiguous pmix_proc_t.
        let procs = unsafe { std::slice::from_raw_parts(da.array.cast::<sys::pmix_proc_t>(), da.size) };
        out.extend(procs.iter().filter(|p| nspace_eq(&p.nspace, ns)).map(|p| p.rank));
    }
}
