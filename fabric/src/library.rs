//! The libfabric library loaded at run time: its version (`fi_version`), the API version weft
//! asks `fi_getinfo` for, and the file it was loaded from.
//!
//! weft is built against the system headers (≥ 1.17) and runs against any libfabric from 1.17
//! to 2.x: libfabric's symbol versioning keeps the `fi_info` layout of the headers we were
//! built with, and the API version passed to `fi_getinfo` is the newest the loaded library
//! supports, so its providers apply their current semantics.

use std::ffi::CStr;
use std::path::PathBuf;

use weft_fabric_sys as sys;

/// Oldest libfabric weft runs on.
pub const MIN_VERSION: (u32, u32) = (1, 17);

/// Version of the libfabric library loaded at run time, `(major, minor)` (`fi_version`).
pub fn version() -> (u32, u32) {
    let v = raw_version();
    (sys::fi_major(v), sys::fi_minor(v))
}

fn raw_version() -> u32 {
    // SAFETY: fi_version takes no arguments and only returns a constant.
    unsafe { sys::fi_version() }
}

/// API version passed to `fi_getinfo`: the newest the loaded library supports (asking for
/// more than that fails with `-FI_ENOSYS`; asking for less would make a 2.x library apply
/// 1.x semantics).
pub fn api_version() -> u32 {
    raw_version()
}

/// [`api_version`] as `(major, minor)`.
pub fn api_version_pair() -> (u32, u32) {
    let v = api_version();
    (sys::fi_major(v), sys::fi_minor(v))
}

/// Load libfabric (`libfabric.so.1`, found as the dynamic loader finds libraries) unless it
/// is loaded already: weft does not link it, so a process that never opens the network
/// transport never loads it. The loader's error when it cannot be loaded.
pub fn load() -> Result<(), String> {
    sys::load()
}

/// Path of the libfabric shared object this process loaded (`dladdr` on `fi_version`),
/// resolved to the real file; `None` if it could not be loaded or the loader cannot tell.
pub fn path() -> Option<PathBuf> {
    let f = sys::loaded_fi_version()?;
    // SAFETY: `Dl_info` is plain data (pointers and addresses); all-zero is a valid value
    // that dladdr overwrites.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables for the address of a function of the
    // loaded libfabric and fills `info`; it returns 0 when the address is in no object.
    let found = unsafe { libc::dladdr(f as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is the NUL-terminated name of a loaded object, alive while the object
    // stays loaded (libfabric is never unloaded); we copy it at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    let p = PathBuf::from(name);
    Some(std::fs::canonicalize(&p).unwrap_or(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_at_least_the_minimum() {
        assert!(version() >= MIN_VERSION, "{:?}", version());
        assert!(api_version() >= sys::fi_version_num(MIN_VERSION.0, MIN_VERSION.1));
    }

    #[test]
    fn path_is_the_loaded_libfabric() {
        let p = path().expect("libfabric is a shared object");
        assert!(p.is_file(), "{}", p.display());
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("libfabric.so"), "{}", p.display());
        // The same file is mapped into this process.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(
            maps.lines().any(|l| l.ends_with(&*p.to_string_lossy())),
            "{} not in /proc/self/maps",
            p.display()
        );
    }
}
