//! Start and end: `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize`, `MPI_Abort`, and the
//! environment queries (initialized, finalized, thread level, time, processor name, version,
//! error classes and strings). Also the small C string helpers the other modules use.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_double, c_int, CStr};

use weft::ops::OpsCore;

use crate::abi::*;
use crate::error::{class_text, err, MpiErr, MpiResult, FIRST_USER_CLASS};
use crate::handle::{Kind, Table};
use crate::obj::attr::{self, Keyvals};
use crate::obj::comm::{self, CommObj, Comms};
use crate::obj::comm::{make_parent, Parent};
use crate::obj::datatype::{self, Types};
use crate::obj::errhandler::{self, Errhandlers};
use crate::obj::message::{self, Messages};
use crate::obj::op::{self, UserOps};
use crate::obj::request::{self, Requests};
use crate::obj::{group, info};
use crate::shortcut::Shortcuts;
use crate::state::{self, call, call_anytime, phase, Mpi, On, Phase};
use crate::{export, put};

/// The library's version string (`MPI_Get_library_version`).
const LIBRARY_VERSION: &str = concat!("weft ", env!("CARGO_PKG_VERSION"), " (MPI 5.0 standard ABI 1.0)");

/// Start weft and build the instance at thread level `level`.
fn init(level: c_int) -> MpiResult {
    if phase() != Phase::Before {
        return Err(err!(MPI_ERR_OTHER, "MPI is already initialised (MPI_Init may run once per process)"));
    }
    let cfg = weft::Config::from_env().map_err(MpiErr::from)?;
    let core = OpsCore::new(cfg).map_err(MpiErr::from)?;
    let world = core.world();
    let rank = core.comm_rank(world)? as c_int;
    let self_id = core
        .comm_split(world, rank, 0)?
        .ok_or_else(|| err!(MPI_ERR_INTERN, "MPI_COMM_SELF: split gave no communicator"))?;
    let mut comms = Comms::new(
        CommObj::new(world, MPI_ERRORS_ARE_FATAL, ""),
        CommObj::new(self_id, MPI_ERRORS_ARE_FATAL, ""),
    );
    let parent = Parent::at_init(&mut comms, core.parent());
    comm::make_table(comms);
    make_parent(parent);
    request::make_table(Requests::new());
    message::make_table(Messages::new());
    datatype::make_table(Types::new());
    op::make_table(UserOps::new());
    group::make_table(Table::new(Kind::Group));
    errhandler::make_table(Errhandlers::new());
    info::make_table(Table::new(Kind::Info));
    attr::make_table(Keyvals::new());
    state::install(Mpi {
        core,
        level,
        main_thread: std::thread::current().id(),
        finalized: Cell::new(false),
        last_error: RefCell::new(None),
        shortcuts: Shortcuts::new(world),
        raise: errhandler::raise,
    });
    Ok(())
}

/// Report an init failure: there is no communicator yet, so the initial handler applies.
fn init_result(name: &str, r: MpiResult) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => crate::state::raise_initial(name, e),
    }
}

export! {
    /// `MPI_Init`: start weft (through `weft-run`, a PMIx server, or as a singleton).
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
        init_result("MPI_Init", init(MPI_THREAD_SINGLE))
    }
}

export! {
    /// `MPI_Init_thread`: every level up to `MPI_THREAD_MULTIPLE` is provided.
    fn MPI_Init_thread / PMPI_Init_thread(_argc: *mut c_int, _argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) {
        let level = match required {
            MPI_THREAD_SINGLE | MPI_THREAD_FUNNELED | MPI_THREAD_SERIALIZED | MPI_THREAD_MULTIPLE => required,
            other => return init_result("MPI_Init_thread", Err(err!(MPI_ERR_ARG, "invalid thread level {other}"))),
        };
        if provided.is_null() {
            return init_result("MPI_Init_thread", Err(err!(MPI_ERR_ARG, "invalid argument: `provided` is NULL")));
        }
        let r = init(level);
        if r.is_ok() {
            // SAFETY: checked non-null.
            unsafe { *provided = level };
        }
        init_result("MPI_Init_thread", r)
    }
}

export! {
    /// `MPI_Finalize`: complete queued sends, leave the job.
    fn MPI_Finalize / PMPI_Finalize() {
        let code = call("MPI_Finalize", On::NoObject, |m| {
            m.finalized.set(true);
            m.core.finalize().map_err(MpiErr::from)
        });
        state::set_finalized();
        code
    }
}

export! {
    /// `MPI_Initialized`.
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) {
        // SAFETY: output pointer from the caller.
        call_anytime(|| unsafe { put(flag, (phase() != Phase::Before) as c_int, "flag") })
    }
}

export! {
    /// `MPI_Finalized`.
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) {
        // SAFETY: output pointer from the caller.
        call_anytime(|| unsafe { put(flag, (phase() == Phase::After) as c_int, "flag") })
    }
}

export! {
    /// `MPI_Query_thread`.
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) on On::NoObject;
    // SAFETY: output pointer from the caller.
    |m| unsafe { put(provided, m.level, "provided") }
}

export! {
    /// `MPI_Is_thread_main`.
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) on On::NoObject;
    |m| {
        let main = std::thread::current().id() == m.main_thread;
        // SAFETY: output pointer from the caller.
        unsafe { put(flag, main as c_int, "flag") }
    }
}

export! {
    /// `MPI_Abort`: end every process of the job with `errorcode` (weft cannot end only a
    /// communicator's processes).
    fn MPI_Abort / PMPI_Abort(comm: MPI_Comm, errorcode: c_int) on On::Comm(comm);
    |m| {
        let r = m.core.comm_rank(m.core.world()).unwrap_or(0);
        let msg = format!("MPI_Abort(errorcode {errorcode}) called by rank {r}");
        eprintln!("weft MPI: {msg}");
        m.core.abort(errorcode, &msg)
    }
}

export! {
    /// `MPI_Get_processor_name`: the host name.
    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) on On::NoObject;
    |_| {
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for its length.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        let host = if rc == 0 {
            CStr::from_bytes_until_nul(&buf).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            "localhost".to_string()
        };
        // SAFETY: the caller provides MPI_MAX_PROCESSOR_NAME bytes at `name`.
        unsafe { write_str(name, resultlen, &host, MPI_MAX_PROCESSOR_NAME as usize) }
    }
}

export! {
    /// `MPI_Get_version`: 5.0.
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) {
        // SAFETY: output pointers from the caller.
        call_anytime(|| unsafe {
            put(version, MPI_VERSION, "version")?;
            put(subversion, MPI_SUBVERSION, "subversion")
        })
    }
}

export! {
    /// `MPI_Get_library_version`.
    fn MPI_Get_library_version / PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) {
        // SAFETY: the caller provides MPI_MAX_LIBRARY_VERSION_STRING bytes at `version`.
        call_anytime(|| unsafe { write_str(version, resultlen, LIBRARY_VERSION, MPI_MAX_LIBRARY_VERSION_STRING as usize) })
    }
}

export! {
    /// `MPI_Error_class`: error codes are classes, except codes an application added.
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        call_anytime(|| {
            if errorcode < 0 || (class_text(errorcode).is_none() && errorcode < FIRST_USER_CLASS) {
                return Err(err!(MPI_ERR_ARG, "invalid error code {errorcode}"));
            }
            // SAFETY: output pointer from the caller.
            unsafe { put(errorclass, errorcode, "errorclass") }
        })
    }
}

export! {
    /// `MPI_Error_string`: the class's text, and the details of the last error this process
    /// raised when it had this code.
    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) {
        call_anytime(|| {
            let base = class_text(errorcode).ok_or_else(|| err!(MPI_ERR_ARG, "invalid error code {errorcode}"))?;
            let detail = state::try_instance()
                .and_then(|m| m.last_error.try_borrow().ok().and_then(|e| e.clone()))
                .filter(|e| e.class == errorcode)
                .map(|e| format!(": {}", e.msg))
                .unwrap_or_default();
            let s = format!("{base}{detail}");
            // SAFETY: the caller provides MPI_MAX_ERROR_STRING bytes at `string`.
            unsafe { write_str(string, resultlen, &s, MPI_MAX_ERROR_STRING as usize) }
        })
    }
}

/// Seconds since an arbitrary fixed point (the monotonic clock).
#[inline]
fn now() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// `MPI_Wtime`: seconds on the monotonic clock (not synchronised between hosts).
#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> c_double {
    now()
}

crate::weak_alias!(MPI_Wtime / PMPI_Wtime);

/// `MPI_Wtick`: the monotonic clock's resolution.
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> c_double {
    1e-9
}

crate::weak_alias!(MPI_Wtick / PMPI_Wtick);

/// A NUL-terminated C string argument as UTF-8 (lossy), or `MPI_ERR_ARG` if null.
///
/// # Safety
/// A non-null `p` must point to a NUL-terminated string.
pub(crate) unsafe fn c_str(p: *const c_char, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `{what}` is NULL"));
    }
    // SAFETY: by the caller's contract.
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Copy `s` (cut to `cap - 1` bytes) with a NUL into `out`, its length into `len`.
///
/// # Safety
/// `out` must be valid for `cap` bytes of writes, `len` for an int (both non-null checked).
pub(crate) unsafe fn write_str(out: *mut c_char, len: *mut c_int, s: &str, cap: usize) -> MpiResult {
    if out.is_null() || len.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: string output or length pointer is NULL"));
    }
    let b = &s.as_bytes()[..s.len().min(cap - 1)];
    // SAFETY: `out` holds `cap` bytes by the caller's contract; `b.len() < cap`.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), out.cast(), b.len());
        *out.add(b.len()) = 0;
        *len = b.len() as c_int;
    }
    Ok(())
}
