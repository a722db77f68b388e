//! Info chapter: `MPI_Info_*`.

use crate::abi::*;
use crate::bind::init::c_str;
use crate::error::{err, MpiResult};
use crate::obj::info::*;
use crate::state::On;
use crate::{export, put};
use std::ffi::{c_char, c_int};

/// A key argument, checked for NULL, emptiness and length.
///
/// # Safety
/// A non-null `p` must point to a NUL-terminated string.
unsafe fn key_arg(p: *const c_char) -> MpiResult<String> {
    // SAFETY: by the caller's contract.
    let k = unsafe { c_str(p, "key")? };
    if k.is_empty() || k.len() >= MPI_MAX_INFO_KEY as usize {
        return Err(err!(
            MPI_ERR_INFO_KEY,
            "invalid info key of {} bytes: keys have 1 to {} bytes",
            k.len(),
            MPI_MAX_INFO_KEY - 1
        ));
    }
    Ok(k)
}

/// Copy `s` (cut to `cap - 1` bytes) and a NUL to `out`.
///
/// # Safety
/// `out` must be valid for `cap` (> 0) bytes of writes.
unsafe fn copy_out(out: *mut c_char, s: &str, cap: usize) {
    let n = s.len().min(cap - 1);
    // SAFETY: `out` holds `cap` bytes; `n < cap`.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), out.cast(), n);
        *out.add(n) = 0;
    }
}

export! {
    /// `MPI_Info_create`: a new empty info object.
    fn MPI_Info_create / PMPI_Info_create(info: *mut MPI_Info) on On::NoObject;
    |m| {
        if info.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `info` is NULL"));
        }
        let h = m.new_info(Info::default());
        // SAFETY: checked non-null.
        unsafe { put(info, h, "info") }
    }
}

export! {
    /// `MPI_Info_set`.
    fn MPI_Info_set / PMPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) on On::NoObject;
    |m| {
        // SAFETY: NUL-terminated strings from the caller.
        let (k, v) = unsafe { (key_arg(key)?, c_str(value, "value")?) };
        if v.len() >= MPI_MAX_INFO_VAL as usize {
            return Err(err!(MPI_ERR_INFO_VALUE, "info value of {} bytes: at most {}", v.len(), MPI_MAX_INFO_VAL - 1));
        }
        m.with_info(info, |i| {
            i.set(k, v);
            Ok(())
        })
    }
}

export! {
    /// `MPI_Info_get` (deprecated in MPI 4.0): up to `valuelen` characters of the value.
    fn MPI_Info_get / PMPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) on On::NoObject;
    |m| {
        let i = m.info(info)?;
        // SAFETY: NUL-terminated string from the caller.
        let k = unsafe { key_arg(key)? };
        if valuelen < 0 {
            return Err(err!(MPI_ERR_ARG, "invalid valuelen {valuelen}"));
        }
        if flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` is NULL"));
        }
        let found = i.get(&k);
        if let Some(v) = found {
            if value.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `value` is NULL"));
            }
            // SAFETY: the caller provides `valuelen + 1` bytes at `value`.
            unsafe { copy_out(value, v, valuelen as usize + 1) };
        }
        // SAFETY: checked non-null.
        unsafe { *flag = found.is_some() as c_int };
        Ok(())
    }
}

export! {
    /// `MPI_Info_get_string`: `*buflen` in: the buffer's size; out: the value's length plus 1.
    fn MPI_Info_get_string / PMPI_Info_get_string(info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) on On::NoObject;
    |m| {
        let i = m.info(info)?;
        // SAFETY: NUL-terminated string from the caller.
        let k = unsafe { key_arg(key)? };
        if flag.is_null() || buflen.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` or `buflen` is NULL"));
        }
        let found = i.get(&k);
        if let Some(v) = found {
            // SAFETY: checked non-null.
            let cap = unsafe { *buflen };
            if cap > 0 {
                if value.is_null() {
                    return Err(err!(MPI_ERR_ARG, "invalid argument: `value` is NULL"));
                }
                // SAFETY: the caller provides `*buflen` bytes at `value`.
                unsafe { copy_out(value, v, cap as usize) };
            }
            // SAFETY: checked non-null.
            unsafe { *buflen = v.len() as c_int + 1 };
        }
        // SAFETY: checked non-null.
        unsafe { *flag = found.is_some() as c_int };
        Ok(())
    }
}

export! {
    /// `MPI_Info_get_valuelen` (deprecated in MPI 4.0): the value's length without the NUL.
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) on On::NoObject;
    |m| {
        let i = m.info(info)?;
        // SAFETY: NUL-terminated string from the caller.
        let k = unsafe { key_arg(key)? };
        if flag.is_null() || valuelen.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` or `valuelen` is NULL"));
        }
        let found = i.get(&k);
        // SAFETY: checked non-null.
        unsafe {
            if let Some(v) = found {
                *valuelen = v.len() as c_int;
            }
            *flag = found.is_some() as c_int;
        }
        Ok(())
    }
}

export! {
    /// `MPI_Info_delete`: `MPI_ERR_INFO_NOKEY` if the key is not set.
    fn MPI_Info_delete / PMPI_Info_delete(info: MPI_Info, key: *const c_char) on On::NoObject;
    |m| {
        // SAFETY: NUL-terminated string from the caller.
        let k = unsafe { key_arg(key)? };
        m.with_info(info, |i| {
            let before = i.pairs.len();
            i.pairs.retain(|(x, _)| *x != k);
            if i.pairs.len() == before {
                return Err(err!(MPI_ERR_INFO_NOKEY, "info key `{k}` is not set"));
            }
            Ok(())
        })
    }
}

export! {
    /// `MPI_Info_dup`.
    fn MPI_Info_dup / PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) on On::NoObject;
    |m| {
        let i = m.info(info)?;
        if newinfo.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newinfo` is NULL"));
        }
        let h = m.new_info(i);
        // SAFETY: checked non-null.
        unsafe { put(newinfo, h, "newinfo") }
    }
}

export! {
    /// `MPI_Info_free`: sets the handle to `MPI_INFO_NULL`.
    fn MPI_Info_free / PMPI_Info_free(info: *mut MPI_Info) on On::NoObject;
    |m| {
        if info.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `info` is NULL"));
        }
        // SAFETY: non-null in/out pointer from the caller.
        let h = unsafe { *info };
        if h == MPI_INFO_ENV {
            return Err(err!(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed"));
        }
        m.infos().borrow_mut().remove(h).ok_or_else(|| invalid(h))?;
        // SAFETY: as above.
        unsafe { *info = MPI_INFO_NULL };
        Ok(())
    }
}

export! {
    /// `MPI_Info_get_nkeys`.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) on On::NoObject;
    |m| {
        let n = m.info(info)?.pairs.len();
        // SAFETY: output pointer from the caller.
        unsafe { put(nkeys, n as c_int, "nkeys") }
    }
}

export! {
    /// `MPI_Info_get_nthkey`: key number `n` (0-based, in the order the keys were set).
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) on On::NoObject;
    |m| {
        let i = m.info(info)?;
        if n < 0 || n as usize >= i.pairs.len() {
            return Err(err!(MPI_ERR_ARG, "invalid key number {n}: the info has {} keys", i.pairs.len()));
        }
        if key.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `key` is NULL"));
        }
        // SAFETY: the caller provides MPI_MAX_INFO_KEY bytes at `key`.
        unsafe { copy_out(key, &i.pairs[n as usize].0, MPI_MAX_INFO_KEY as usize) };
        Ok(())
    }
}
