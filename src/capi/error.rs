//! The C ABI's errors: the [`weft_error`] codes, the code of every error class (the facade's
//! one table from engine and facade errors to classes is `error_class.rs`),
//! the failure a call body returns ([`Fail`]) and the message it leaves for
//! [`weft_last_error`], and the text of every code ([`weft_error_string`]).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::catch_unwind;

use crate::{EngineError, Error, ErrorClass};

/// Error codes. Each error class (so each engine/facade error variant) has exactly one code;
/// `WEFT_ERR_ARG` also covers bad arguments caught by the C layer (NULL pointers);
/// `WEFT_ERR_NOT_INITIALIZED`, `WEFT_ERR_INTERNAL` (a caught panic), `WEFT_ERR_OP` and
/// `WEFT_ERR_DATATYPE` exist only in the C ABI. New codes are appended, so existing values
/// never change.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_error {
    WEFT_SUCCESS = 0,
    /// `InvalidRank`
    WEFT_ERR_RANK,
    /// `InvalidTag`
    WEFT_ERR_TAG,
    /// `Truncated` (the status holds the incoming size)
    WEFT_ERR_TRUNCATE,
    /// `InvalidComm`
    WEFT_ERR_COMM,
    /// `InvalidRequest`
    WEFT_ERR_REQUEST,
    /// `InvalidArg`, or a NULL pointer where one is not allowed
    WEFT_ERR_ARG,
    /// `ProcFailed`
    WEFT_ERR_PROC_FAILED,
    /// `ProcFailedPending` (the request stays pending)
    WEFT_ERR_PROC_FAILED_PENDING,
    /// `Revoked`
    WEFT_ERR_REVOKED,
    /// `Transport`
    WEFT_ERR_TRANSPORT,
    /// `Malformed`
    WEFT_ERR_MALFORMED,
    /// facade `Runtime` (bootstrap through weft-run / PMIx failed)
    WEFT_ERR_RUNTIME,
    /// facade `Config` (bad `WEFT_*` setting)
    WEFT_ERR_CONFIG,
    /// facade `Topology` (hwloc discovery or process binding failed)
    WEFT_ERR_TOPOLOGY,
    /// called before `weft_init` (or after `weft_finalize`), or from another thread
    WEFT_ERR_NOT_INITIALIZED,
    /// facade `AlreadyInitialized`
    WEFT_ERR_ALREADY_INITIALIZED,
    /// a bug in weft (a caught panic)
    WEFT_ERR_INTERNAL,
    /// invalid reduction operation: unknown or freed handle, `WEFT_OP_NULL`, or an operation
    /// that does not apply to the datatype (collectives)
    WEFT_ERR_OP,
    /// invalid datatype value (collectives)
    WEFT_ERR_DATATYPE,
    /// facade `Rollback`: global restart, the job rolled back to a new epoch; the resilient
    /// main must return (this code) to the restart point
    WEFT_ERR_REINIT,
    /// facade `Reinit`: global restart used wrongly (twice, after `weft_init`) or under a
    /// runtime that cannot respawn processes
    WEFT_ERR_REINIT_USAGE,
    /// facade `ResilientMain`: the resilient main returned an error code (not a rollback)
    WEFT_ERR_REINIT_MAIN,
    /// `Spawn` (starting processes failed; not offered by the C ABI's calls yet)
    WEFT_ERR_SPAWN,
}

use weft_error::*;

/// The code of each error class (the table in `error_class.rs`), one code per class.
pub fn class_code(class: ErrorClass) -> weft_error {
    match class {
        ErrorClass::Rank => WEFT_ERR_RANK,
        ErrorClass::Tag => WEFT_ERR_TAG,
        ErrorClass::Truncate => WEFT_ERR_TRUNCATE,
        ErrorClass::Comm => WEFT_ERR_COMM,
        ErrorClass::Request => WEFT_ERR_REQUEST,
        ErrorClass::Arg => WEFT_ERR_ARG,
        ErrorClass::ProcFailed => WEFT_ERR_PROC_FAILED,
        ErrorClass::ProcFailedPending => WEFT_ERR_PROC_FAILED_PENDING,
        ErrorClass::Revoked => WEFT_ERR_REVOKED,
        ErrorClass::Transport => WEFT_ERR_TRANSPORT,
        ErrorClass::Malformed => WEFT_ERR_MALFORMED,
        ErrorClass::Spawn => WEFT_ERR_SPAWN,
        ErrorClass::Runtime => WEFT_ERR_RUNTIME,
        ErrorClass::Config => WEFT_ERR_CONFIG,
        ErrorClass::Topology => WEFT_ERR_TOPOLOGY,
        ErrorClass::AlreadyInitialized => WEFT_ERR_ALREADY_INITIALIZED,
        ErrorClass::Rollback => WEFT_ERR_REINIT,
        ErrorClass::ReinitUsage => WEFT_ERR_REINIT_USAGE,
        ErrorClass::ResilientMain => WEFT_ERR_REINIT_MAIN,
    }
}

/// The code of a facade error.
pub fn error_code(e: &Error) -> weft_error {
    class_code(ErrorClass::of(e))
}

/// The code of an engine error (`WEFT_ERR_REINIT` for a failure of an abandoned global-restart
/// epoch).
pub fn engine_error_code(e: &EngineError) -> weft_error {
    class_code(ErrorClass::of_engine(e))
}

/// A failed call: its code and the message for `weft_last_error`.
pub(super) struct Fail {
    pub(super) code: weft_error,
    pub(super) msg: String,
}

impl Fail {
    pub(super) fn new(code: weft_error, msg: impl Into<String>) -> Fail {
        Fail { code, msg: msg.into() }
    }
    pub(super) fn null(what: &str) -> Fail {
        Fail::new(WEFT_ERR_ARG, format!("invalid argument: `{what}` is NULL"))
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::new(error_code(&e), e.to_string())
    }
}

impl From<EngineError> for Fail {
    fn from(e: EngineError) -> Fail {
        Fail::new(engine_error_code(&e), e.to_string())
    }
}

/// Result of a C call's body: the value, or the failure to report as a code.
pub(super) type CallResult<T> = Result<T, Fail>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Keep `msg` for [`weft_last_error`].
pub(super) fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = c);
}

const ALL_CODES: [weft_error; 24] = [
    WEFT_SUCCESS,
    WEFT_ERR_RANK,
    WEFT_ERR_TAG,
    WEFT_ERR_TRUNCATE,
    WEFT_ERR_COMM,
    WEFT_ERR_REQUEST,
    WEFT_ERR_ARG,
    WEFT_ERR_PROC_FAILED,
    WEFT_ERR_PROC_FAILED_PENDING,
    WEFT_ERR_REVOKED,
    WEFT_ERR_TRANSPORT,
    WEFT_ERR_MALFORMED,
    WEFT_ERR_RUNTIME,
    WEFT_ERR_CONFIG,
    WEFT_ERR_TOPOLOGY,
    WEFT_ERR_NOT_INITIALIZED,
    WEFT_ERR_ALREADY_INITIALIZED,
    WEFT_ERR_INTERNAL,
    WEFT_ERR_OP,
    WEFT_ERR_DATATYPE,
    WEFT_ERR_REINIT,
    WEFT_ERR_REINIT_USAGE,
    WEFT_ERR_REINIT_MAIN,
    WEFT_ERR_SPAWN,
];

fn error_str(code: weft_error) -> &'static CStr {
    match code {
        WEFT_SUCCESS => c"success",
        WEFT_ERR_RANK => c"invalid rank",
        WEFT_ERR_TAG => c"invalid tag",
        WEFT_ERR_TRUNCATE => c"message truncated",
        WEFT_ERR_COMM => c"invalid communicator",
        WEFT_ERR_REQUEST => c"invalid request",
        WEFT_ERR_ARG => c"invalid argument",
        WEFT_ERR_PROC_FAILED => c"process failure",
        WEFT_ERR_PROC_FAILED_PENDING => c"wildcard receive pending on unacknowledged process failure",
        WEFT_ERR_REVOKED => c"communicator revoked",
        WEFT_ERR_TRANSPORT => c"transport error",
        WEFT_ERR_MALFORMED => c"malformed message",
        WEFT_ERR_RUNTIME => c"runtime (bootstrap) error",
        WEFT_ERR_CONFIG => c"configuration error",
        WEFT_ERR_TOPOLOGY => c"topology or binding error",
        WEFT_ERR_NOT_INITIALIZED => c"weft is not initialised",
        WEFT_ERR_ALREADY_INITIALIZED => c"weft is already initialised",
        WEFT_ERR_INTERNAL => c"internal error",
        WEFT_ERR_OP => c"invalid reduction operation",
        WEFT_ERR_DATATYPE => c"invalid datatype",
        WEFT_ERR_REINIT => c"global restart: rolled back to a new epoch, return to the restart point",
        WEFT_ERR_REINIT_USAGE => {
            c"global restart cannot run here (called twice, after weft_init, or the runtime cannot respawn)"
        }
        WEFT_ERR_REINIT_MAIN => c"global restart: the resilient main returned an error",
        WEFT_ERR_SPAWN => c"spawn failed",
    }
}

/// A static description of error code `code` ("unknown error code" for other values).
#[no_mangle]
pub extern "C" fn weft_error_string(code: c_int) -> *const c_char {
    catch_unwind(|| match ALL_CODES.iter().find(|&&c| c as c_int == code) {
        Some(&c) => error_str(c).as_ptr(),
        None => c"unknown error code".as_ptr(),
    })
    .unwrap_or(c"internal error".as_ptr())
}

/// The detailed message of the last failed call in this thread ("" if none). Valid until the
/// next failing weft call in this thread.
#[no_mangle]
pub extern "C" fn weft_last_error() -> *const c_char {
    catch_unwind(|| LAST_ERROR.try_with(|l| l.borrow().as_ptr()).unwrap_or(c"".as_ptr()))
        .unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_described() {
        for (i, &c) in ALL_CODES.iter().enumerate() {
            assert_eq!(c as usize, i);
            // SAFETY: `weft_error_string` returns a static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(weft_error_string(c as c_int)) };
            assert!(!s.to_bytes().is_empty());
        }
    }

    #[test]
    fn every_class_has_its_documented_code_of_its_own() {
        let doc = crate::error_class::tests::documented_table();
        assert_eq!(doc.len(), ErrorClass::ALL.len());
        let mut codes = Vec::new();
        for (class, row) in ErrorClass::ALL.into_iter().zip(doc) {
            assert_eq!(format!("{class:?}"), row[0]);
            assert_eq!(format!("{:?}", class_code(class)), row[2], "{class:?}");
            codes.push(class_code(class) as i32);
        }
        let n = codes.len();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), n, "two classes share a code");
        assert!(!codes.contains(&(WEFT_ERR_INTERNAL as i32)));
    }

    #[test]
    fn errors_report_their_class_code() {
        let e = EngineError::Truncated { incoming: 8, capacity: 4, sender: 1, tag: 2 };
        assert_eq!(engine_error_code(&e), WEFT_ERR_TRUNCATE);
        assert_eq!(error_code(&Error::Engine(EngineError::Revoked)), WEFT_ERR_REVOKED);
        assert_eq!(error_code(&Error::AlreadyInitialized), WEFT_ERR_ALREADY_INITIALIZED);
    }
}
