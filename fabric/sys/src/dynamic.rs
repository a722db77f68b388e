//! The functions libfabric.so.1 exports that weft calls, resolved when first called
//! (`dlopen` + `dlvsym`) instead of linked.
//!
//! A linked libfabric is loaded at every process start with the provider libraries it links
//! (psm, psm2, verbs, efa, ...), and the constructors of some of them calibrate the CPU clock:
//! ≈100 ms each for libpsm_infinipath and libpsm2, which made most of the time a spawned
//! process took to start. Loaded on demand, a process that never opens the network transport
//! (every rank on one host) never loads them.
//!
//! Each symbol is taken at the version a link against the build's libfabric would bind
//! (`build.rs` records them), so the `fi_info` layout is the one of the headers the bindings
//! came from, as with a link; a symbol with no recorded version is taken at its default one.
//! When the library cannot be loaded, the calls fail as libfabric calls fail: `fi_getinfo`
//! and `fi_fabric` return `-FI_ENOSYS`, `fi_dupinfo` NULL, `fi_version` 0, and `fi_strerror`
//! says why the library did not load.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use crate::{fi_fabric_attr, fi_info, fid_fabric, FI_ENOSYS};

/// File name the library is loaded by (its SONAME for 1.x and 2.x).
pub const LIBRARY: &CStr = c"libfabric.so.1";

type GetInfo =
    unsafe extern "C" fn(u32, *const c_char, *const c_char, u64, *const fi_info, *mut *mut fi_info) -> c_int;
type FreeInfo = unsafe extern "C" fn(*mut fi_info);
type DupInfo = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
type Fabric = unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type StrError = unsafe extern "C" fn(c_int) -> *const c_char;
type Version = unsafe extern "C" fn() -> u32;

/// The resolved functions.
struct Api {
    getinfo: GetInfo,
    freeinfo: FreeInfo,
    dupinfo: DupInfo,
    fabric: Fabric,
    strerror: StrError,
    version: Version,
}

/// The library's functions, or why it could not be loaded.
static API: OnceLock<Result<Api, CString>> = OnceLock::new();

fn api() -> Result<&'static Api, &'static CStr> {
    API.get_or_init(open).as_ref().map_err(CString::as_c_str)
}

/// Load libfabric now if it is not loaded yet; why it cannot be.
pub fn load() -> Result<(), String> {
    api().map(drop).map_err(|e| e.to_string_lossy().into_owned())
}

/// `fi_version` as loaded (its address tells which file the library came from), if loaded.
pub fn loaded_fi_version() -> Option<unsafe extern "C" fn() -> u32> {
    api().ok().map(|a| a.version)
}

/// The text of the loader's last error, prefixed with `what`.
fn dl_error(what: &str) -> CString {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by the loader, valid until
    // the next dl* call on this thread; it is copied at once.
    let why = unsafe {
        let p = libc::dlerror();
        if p.is_null() {
            "unknown error".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    CString::new(format!("{what}: {why}").replace('\0', " ")).unwrap_or_default()
}

fn open() -> Result<Api, CString> {
    // SAFETY: LIBRARY is NUL-terminated; loading libfabric runs its initializers, which is what
    // linking it did at process start. RTLD_GLOBAL: libfabric's provider plugins resolve the
    // core's symbols against it. The handle is never closed (the functions stay valid).
    let h = unsafe { libc::dlopen(LIBRARY.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if h.is_null() {
        return Err(dl_error("libfabric.so.1 could not be loaded"));
    }
    // SAFETY (every `sym` below): the types are the C prototypes of these functions in the
    // headers `build.rs` generated the bindings from, at the versions it recorded.
    unsafe {
        Ok(Api {
            getinfo: sym(h, c"fi_getinfo", option_env!("WEFT_FI_SYMVER_fi_getinfo"))?,
            freeinfo: sym(h, c"fi_freeinfo", option_env!("WEFT_FI_SYMVER_fi_freeinfo"))?,
            dupinfo: sym(h, c"fi_dupinfo", option_env!("WEFT_FI_SYMVER_fi_dupinfo"))?,
            fabric: sym(h, c"fi_fabric", option_env!("WEFT_FI_SYMVER_fi_fabric"))?,
            strerror: sym(h, c"fi_strerror", option_env!("WEFT_FI_SYMVER_fi_strerror"))?,
            version: sym(h, c"fi_version", option_env!("WEFT_FI_SYMVER_fi_version"))?,
        })
    }
}

/// Function `name` of library handle `h`, at symbol version `version` if given.
///
/// # Safety
/// `F` must be the function pointer type of `name`'s C prototype (at that version); `h` a live
/// handle from `dlopen`.
unsafe fn sym<F: Copy>(h: *mut c_void, name: &CStr, version: Option<&str>) -> Result<F, CString> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    let p = match version.map(CString::new) {
        // SAFETY: `h` is live, `name` and `v` NUL-terminated.
        Some(Ok(v)) => unsafe { libc::dlvsym(h, name.as_ptr(), v.as_ptr()) },
        // SAFETY: as above.
        _ => unsafe { libc::dlsym(h, name.as_ptr()) },
    };
    if p.is_null() {
        let at = version.map(|v| format!("@{v}")).unwrap_or_default();
        return Err(dl_error(&format!("libfabric.so.1 has no {}{at}", name.to_string_lossy())));
    }
    // SAFETY: `p` is the non-null address of that function, `F` its pointer type (caller's
    // contract), of the same size as a data pointer (checked above).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// `fi_getinfo(3)`; `-FI_ENOSYS` when libfabric cannot be loaded.
///
/// # Safety
/// libfabric's contract for `fi_getinfo`.
pub unsafe fn fi_getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    info: *mut *mut fi_info,
) -> c_int {
    match api() {
        // SAFETY: forwarded contract.
        Ok(a) => unsafe { (a.getinfo)(version, node, service, flags, hints, info) },
        Err(_) => -(FI_ENOSYS as c_int),
    }
}

/// `fi_freeinfo(3)`; nothing when libfabric cannot be loaded (nothing was allocated by it).
///
/// # Safety
/// libfabric's contract for `fi_freeinfo`.
pub unsafe fn fi_freeinfo(info: *mut fi_info) {
    if let Ok(a) = api() {
        // SAFETY: forwarded contract.
        unsafe { (a.freeinfo)(info) }
    }
}

/// `fi_dupinfo(3)`; NULL when libfabric cannot be loaded.
///
/// # Safety
/// libfabric's contract for `fi_dupinfo`.
pub unsafe fn fi_dupinfo(info: *const fi_info) -> *mut fi_info {
    match api() {
        // SAFETY: forwarded contract.
        Ok(a) => unsafe { (a.dupinfo)(info) },
        Err(_) => std::ptr::null_mut(),
    }
}

/// `fi_fabric(3)`; `-FI_ENOSYS` when libfabric cannot be loaded.
///
/// # Safety
/// libfabric's contract for `fi_fabric`.
pub unsafe fn fi_fabric(
    attr: *mut fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    match api() {
        // SAFETY: forwarded contract.
        Ok(a) => unsafe { (a.fabric)(attr, fabric, context) },
        Err(_) => -(FI_ENOSYS as c_int),
    }
}

/// `fi_strerror(3)`; when libfabric cannot be loaded, why (a string that lives as long as the
/// process).
///
/// # Safety
/// libfabric's contract for `fi_strerror`.
pub unsafe fn fi_strerror(errnum: c_int) -> *const c_char {
    match api() {
        // SAFETY: forwarded contract.
        Ok(a) => unsafe { (a.strerror)(errnum) },
        Err(why) => why.as_ptr(),
    }
}

/// `fi_version(3)`; 0 when libfabric cannot be loaded.
///
/// # Safety
/// None beyond libfabric's (it takes no arguments); `unsafe` as the linked declaration was.
pub unsafe fn fi_version() -> u32 {
    match api() {
        // SAFETY: fi_version takes no arguments and returns a constant.
        Ok(a) => unsafe { (a.version)() },
        Err(_) => 0,
    }
}
