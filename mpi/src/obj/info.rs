//! Info objects: ordered (key, value) string pairs, the info functions, and the predefined
//! `MPI_INFO_ENV` (how this process was started). Keys are at most `MPI_MAX_INFO_KEY - 1`
//! bytes and values at most `MPI_MAX_INFO_VAL - 1` bytes; longer ones are
//! `MPI_ERR_INFO_KEY` / `MPI_ERR_INFO_VALUE`.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::bind::init::c_str;
use crate::error::{err, MpiErr, MpiResult};
use crate::handle::{looks_like, Kind};
use crate::state::{call, Mpi, On};
use crate::{export, put};

/// One info object: its pairs in insertion order (`MPI_Info_get_nthkey` numbers them so).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) pairs: Vec<(String, String)>,
}

impl Info {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Set `key` to `value` (replacing an earlier value in place).
    pub(crate) fn set(&mut self, key: String, value: String) {
        match self.pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(p) => p.1 = value,
            None => self.pairs.push((key, value)),
        }
    }
}

/// The name the standard gives a thread level (`thread_level` of `MPI_INFO_ENV`).
fn level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// `MPI_INFO_ENV`: `command` and `argv` (from the process's command line), `maxprocs` and
/// `soft` (the job's size: weft starts no processes later), `host`, `arch`, `wdir`,
/// `thread_level` and `mpi_initial_errhandler`. `file` is absent: weft reads no startup file.
fn env_info(m: &Mpi) -> Info {
    let mut i = Info::default();
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_else(|_| std::env::args().collect());
    if let Some(cmd) = args.first() {
        i.set("command".into(), cmd.clone());
    }
    if args.len() > 1 {
        i.set("argv".into(), args[1..].join(" "));
    }
    let n = m.core.job_size().to_string();
    i.set("maxprocs".into(), n.clone());
    i.set("soft".into(), n);
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its length.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        if let Ok(h) = std::ffi::CStr::from_bytes_until_nul(&buf) {
            i.set("host".into(), h.to_string_lossy().into_owned());
        }
    }
    i.set("arch".into(), std::env::consts::ARCH.into());
    if let Ok(d) = std::env::current_dir() {
        i.set("wdir".into(), d.to_string_lossy().into_owned());
    }
    i.set("thread_level".into(), level_name(m.level).into());
    let eh = match std::env::var("WEFT_MPI_INITIAL_ERRHANDLER").as_deref() {
        Ok("return") | Ok("MPI_ERRORS_RETURN") => "mpi_errors_return",
        _ => "mpi_errors_are_fatal",
    };
    i.set("mpi_initial_errhandler".into(), eh.into());
    i
}

/// The error for a handle that names no live info object.
#[cold]
fn invalid(h: MPI_Info) -> MpiErr {
    if h == MPI_INFO_NULL {
        err!(MPI_ERR_INFO, "invalid info: MPI_INFO_NULL")
    } else if looks_like(Kind::Info, h) {
        err!(MPI_ERR_INFO, "invalid info {h:#x}: already freed")
    } else {
        err!(MPI_ERR_INFO, "invalid info {h:#x}: not an info handle")
    }
}

impl Mpi {
    /// A copy of info object `h` (`MPI_INFO_ENV` or a created one).
    pub(crate) fn info(&self, h: MPI_Info) -> MpiResult<Info> {
        if h == MPI_INFO_ENV {
            return Ok(env_info(self));
        }
        self.infos.borrow().get(h).cloned().ok_or_else(|| invalid(h))
    }

    /// A copy of `h`, or an empty info for `MPI_INFO_NULL` (where the standard allows it).
    pub(crate) fn info_or_empty(&self, h: MPI_Info) -> MpiResult<Info> {
        if h == MPI_INFO_NULL {
            Ok(Info::default())
        } else {
            self.info(h)
        }
    }

    /// A new info handle holding `i`.
    pub(crate) fn new_info(&self, i: Info) -> MPI_Info {
        self.infos.borrow_mut().insert(i)
    }

    /// Change created info object `h` with `f` (`MPI_INFO_ENV` is read-only).
    fn with_info<R>(&self, h: MPI_Info, f: impl FnOnce(&mut Info) -> MpiResult<R>) -> MpiResult<R> {
        if h == MPI_INFO_ENV {
            return Err(err!(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed"));
        }
        let mut infos = self.infos.borrow_mut();
        f(infos.get_mut(h).ok_or_else(|| invalid(h))?)
    }
}

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
    fn MPI_Info_create / PMPI_Info_create(info: *mut MPI_Info) {
        call("MPI_Info_create", On::NoObject, |m| {
            if info.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `info` is NULL"));
            }
            let h = m.new_info(Info::default());
            // SAFETY: checked non-null.
            unsafe { put(info, h, "info") }
        })
    }
}

export! {
    /// `MPI_Info_set`.
    fn MPI_Info_set / PMPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) {
        call("MPI_Info_set", On::NoObject, |m| {
            // SAFETY: NUL-terminated strings from the caller.
            let (k, v) = unsafe { (key_arg(key)?, c_str(value, "value")?) };
            if v.len() >= MPI_MAX_INFO_VAL as usize {
                return Err(err!(MPI_ERR_INFO_VALUE, "info value of {} bytes: at most {}", v.len(), MPI_MAX_INFO_VAL - 1));
            }
            m.with_info(info, |i| {
                i.set(k, v);
                Ok(())
            })
        })
    }
}

export! {
    /// `MPI_Info_get` (deprecated in MPI 4.0): up to `valuelen` characters of the value.
    fn MPI_Info_get / PMPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) {
        call("MPI_Info_get", On::NoObject, |m| {
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
        })
    }
}

export! {
    /// `MPI_Info_get_string`: `*buflen` in: the buffer's size; out: the value's length plus 1.
    fn MPI_Info_get_string / PMPI_Info_get_string(info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) {
        call("MPI_Info_get_string", On::NoObject, |m| {
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
        })
    }
}

export! {
    /// `MPI_Info_get_valuelen` (deprecated in MPI 4.0): the value's length without the NUL.
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) {
        call("MPI_Info_get_valuelen", On::NoObject, |m| {
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
        })
    }
}

export! {
    /// `MPI_Info_delete`: `MPI_ERR_INFO_NOKEY` if the key is not set.
    fn MPI_Info_delete / PMPI_Info_delete(info: MPI_Info, key: *const c_char) {
        call("MPI_Info_delete", On::NoObject, |m| {
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
        })
    }
}

export! {
    /// `MPI_Info_dup`.
    fn MPI_Info_dup / PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) {
        call("MPI_Info_dup", On::NoObject, |m| {
            let i = m.info(info)?;
            if newinfo.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newinfo` is NULL"));
            }
            let h = m.new_info(i);
            // SAFETY: checked non-null.
            unsafe { put(newinfo, h, "newinfo") }
        })
    }
}

export! {
    /// `MPI_Info_free`: sets the handle to `MPI_INFO_NULL`.
    fn MPI_Info_free / PMPI_Info_free(info: *mut MPI_Info) {
        call("MPI_Info_free", On::NoObject, |m| {
            if info.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `info` is NULL"));
            }
            // SAFETY: non-null in/out pointer from the caller.
            let h = unsafe { *info };
            if h == MPI_INFO_ENV {
                return Err(err!(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed"));
            }
            m.infos.borrow_mut().remove(h).ok_or_else(|| invalid(h))?;
            // SAFETY: as above.
            unsafe { *info = MPI_INFO_NULL };
            Ok(())
        })
    }
}

export! {
    /// `MPI_Info_get_nkeys`.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) {
        call("MPI_Info_get_nkeys", On::NoObject, |m| {
            let n = m.info(info)?.pairs.len();
            // SAFETY: output pointer from the caller.
            unsafe { put(nkeys, n as c_int, "nkeys") }
        })
    }
}

export! {
    /// `MPI_Info_get_nthkey`: key number `n` (0-based, in the order the keys were set).
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) {
        call("MPI_Info_get_nthkey", On::NoObject, |m| {
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
        })
    }
}
