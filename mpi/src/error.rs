//! MPI errors: the error of one call (class plus message), the MPI class of each of weft's
//! error classes (`weft::ErrorClass`, the one table from engine and facade errors), the ULFM
//! classes weft adds, and the text of every class.
//!
//! The ULFM classes are not in the standard ABI; weft gives them the values MPICH uses for its
//! `MPIX_` classes (its first implementation-specific class is 100), well inside the ABI's
//! class range (`MPI_ERR_LASTCODE` = 16383) and clear of every standard class:
//! `MPIX_ERR_PROC_FAILED` = 101, `MPIX_ERR_PROC_FAILED_PENDING` = 102, `MPIX_ERR_REVOKED` = 103.

use std::ffi::c_int;

use weft::{EngineError, Error, ErrorClass};

use crate::abi::*;

/// A process the operation involves has failed.
pub const MPIX_ERR_PROC_FAILED: c_int = 101;
/// A wildcard receive cannot complete while failures are unacknowledged; the request stays
/// pending.
pub const MPIX_ERR_PROC_FAILED_PENDING: c_int = 102;
/// The communicator was revoked.
pub const MPIX_ERR_REVOKED: c_int = 103;
/// First value of the classes and codes an application adds (`MPI_Add_error_class`).
pub(crate) const FIRST_USER_CLASS: c_int = 200;

/// The error of one MPI call: its class and what went wrong. Boxed, so that an
/// [`MpiResult`] is one pointer (null for success) that every call returns in a register; the
/// error path alone pays for the allocation.
#[derive(Debug, Clone)]
pub(crate) struct MpiErr(Box<ErrInfo>);

/// What an [`MpiErr`] holds.
#[derive(Debug, Clone)]
pub(crate) struct ErrInfo {
    pub(crate) class: c_int,
    pub(crate) msg: String,
    /// The communicator whose error handler applies, when it is not the one the call named
    /// (a request's communicator).
    pub(crate) comm: Option<MPI_Comm>,
}

pub(crate) type MpiResult<T = ()> = std::result::Result<T, MpiErr>;

impl MpiErr {
    #[cold]
    pub(crate) fn new(class: c_int, msg: impl Into<String>) -> MpiErr {
        MpiErr(Box::new(ErrInfo { class, msg: msg.into(), comm: None }))
    }

    /// Raise this error on communicator `c`'s handler.
    pub(crate) fn on(mut self, c: MPI_Comm) -> MpiErr {
        self.0.comm = Some(c);
        self
    }

    /// The same error under another class.
    pub(crate) fn with_class(mut self, class: c_int) -> MpiErr {
        self.0.class = class;
        self
    }
}

impl std::ops::Deref for MpiErr {
    type Target = ErrInfo;

    fn deref(&self) -> &ErrInfo {
        &self.0
    }
}

/// Shorthand for an error of `class` with a formatted message.
macro_rules! err {
    ($class:expr, $($fmt:tt)*) => {
        $crate::error::MpiErr::new($class, format!($($fmt)*))
    };
}
pub(crate) use err;

/// The MPI class of each weft error class (the table in the facade's `error_class.rs`).
pub(crate) fn mpi_class(class: ErrorClass) -> c_int {
    match class {
        ErrorClass::Rank => MPI_ERR_RANK,
        ErrorClass::Tag => MPI_ERR_TAG,
        ErrorClass::Truncate => MPI_ERR_TRUNCATE,
        ErrorClass::Comm => MPI_ERR_COMM,
        ErrorClass::Request => MPI_ERR_REQUEST,
        ErrorClass::Arg => MPI_ERR_ARG,
        ErrorClass::ProcFailed => MPIX_ERR_PROC_FAILED,
        ErrorClass::ProcFailedPending => MPIX_ERR_PROC_FAILED_PENDING,
        ErrorClass::Revoked => MPIX_ERR_REVOKED,
        ErrorClass::Malformed => MPI_ERR_INTERN,
        ErrorClass::Spawn => MPI_ERR_SPAWN,
        ErrorClass::Transport
        | ErrorClass::Runtime
        | ErrorClass::Config
        | ErrorClass::Topology
        | ErrorClass::AlreadyInitialized
        | ErrorClass::Rollback
        | ErrorClass::ReinitUsage
        | ErrorClass::ResilientMain => MPI_ERR_OTHER,
    }
}

impl From<EngineError> for MpiErr {
    #[cold]
    fn from(e: EngineError) -> MpiErr {
        MpiErr::new(mpi_class(ErrorClass::of_engine(&e)), e.to_string())
    }
}

impl From<Error> for MpiErr {
    #[cold]
    fn from(e: Error) -> MpiErr {
        MpiErr::new(mpi_class(ErrorClass::of(&e)), e.to_string())
    }
}

/// The text of an error class (`MPI_Error_string` of a class value).
pub(crate) fn class_text(class: c_int) -> Option<&'static str> {
    Some(match class {
        MPI_SUCCESS => "no error",
        MPI_ERR_BUFFER => "invalid buffer pointer",
        MPI_ERR_COUNT => "invalid count argument",
        MPI_ERR_TYPE => "invalid datatype",
        MPI_ERR_TAG => "invalid tag",
        MPI_ERR_COMM => "invalid communicator",
        MPI_ERR_RANK => "invalid rank",
        MPI_ERR_REQUEST => "invalid request",
        MPI_ERR_ROOT => "invalid root",
        MPI_ERR_GROUP => "invalid group",
        MPI_ERR_OP => "invalid reduce operation",
        MPI_ERR_TOPOLOGY => "invalid topology",
        MPI_ERR_DIMS => "invalid dimension argument",
        MPI_ERR_ARG => "invalid argument of some other kind",
        MPI_ERR_UNKNOWN => "unknown error",
        MPI_ERR_TRUNCATE => "message truncated",
        MPI_ERR_OTHER => "known error not in this list",
        MPI_ERR_INTERN => "internal MPI (implementation) error",
        MPI_ERR_IN_STATUS => "error code is in status",
        MPI_ERR_PENDING => "pending request",
        MPI_ERR_KEYVAL => "invalid keyval",
        MPI_ERR_NO_MEM => "out of memory",
        MPI_ERR_BASE => "invalid base passed to MPI_Free_mem",
        MPI_ERR_INFO_KEY => "key longer than MPI_MAX_INFO_KEY",
        MPI_ERR_INFO_VALUE => "value longer than MPI_MAX_INFO_VAL",
        MPI_ERR_INFO_NOKEY => "invalid key passed to MPI_Info_delete",
        MPI_ERR_SPAWN => "error in spawning processes",
        MPI_ERR_PORT => "invalid port name",
        MPI_ERR_SERVICE => "invalid service name",
        MPI_ERR_NAME => "invalid service name in MPI_Lookup_name",
        MPI_ERR_WIN => "invalid window",
        MPI_ERR_SIZE => "invalid size argument",
        MPI_ERR_DISP => "invalid displacement argument",
        MPI_ERR_INFO => "invalid info argument",
        MPI_ERR_LOCKTYPE => "invalid locktype argument",
        MPI_ERR_ASSERT => "invalid assert argument",
        MPI_ERR_RMA_CONFLICT => "conflicting accesses to window",
        MPI_ERR_RMA_SYNC => "wrong synchronization of RMA calls",
        MPI_ERR_RMA_RANGE => "target memory is not part of the window",
        MPI_ERR_RMA_ATTACH => "memory cannot be attached",
        MPI_ERR_RMA_SHARED => "memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "passed window has the wrong flavor",
        MPI_ERR_FILE => "invalid file handle",
        MPI_ERR_NOT_SAME => "collective argument not identical on all processes",
        MPI_ERR_AMODE => "error related to the amode passed to MPI_File_open",
        MPI_ERR_UNSUPPORTED_DATAREP => "unsupported datarep passed to MPI_File_set_view",
        MPI_ERR_UNSUPPORTED_OPERATION => "unsupported operation",
        MPI_ERR_NO_SUCH_FILE => "file does not exist",
        MPI_ERR_FILE_EXISTS => "file exists",
        MPI_ERR_BAD_FILE => "invalid file name",
        MPI_ERR_ACCESS => "permission denied",
        MPI_ERR_NO_SPACE => "not enough space",
        MPI_ERR_QUOTA => "quota exceeded",
        MPI_ERR_READ_ONLY => "read-only file or file system",
        MPI_ERR_FILE_IN_USE => "file operation could not be completed: file in use",
        MPI_ERR_DUP_DATAREP => "conversion functions already registered for this datarep",
        MPI_ERR_CONVERSION => "an error occurred in a user data conversion function",
        MPI_ERR_IO => "other I/O error",
        MPI_ERR_VALUE_TOO_LARGE => "value too large to store",
        MPI_ERR_ABI => "ABI mismatch",
        MPI_ERR_PROC_ABORTED => "operation failed because a peer process aborted",
        MPI_ERR_SESSION => "invalid session",
        MPI_ERR_ERRHANDLER => "invalid error handler",
        MPIX_ERR_PROC_FAILED => "process failure",
        MPIX_ERR_PROC_FAILED_PENDING => "operation pending because of an unacknowledged process failure",
        MPIX_ERR_REVOKED => "communicator revoked",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_error_has_its_class_and_text() {
        let cases = [
            (EngineError::InvalidRank { rank: 9, size: 2 }, MPI_ERR_RANK),
            (EngineError::InvalidTag(-5), MPI_ERR_TAG),
            (EngineError::Truncated { incoming: 8, capacity: 4, sender: 0, tag: 1 }, MPI_ERR_TRUNCATE),
            (EngineError::InvalidComm, MPI_ERR_COMM),
            (EngineError::InvalidRequest, MPI_ERR_REQUEST),
            (EngineError::InvalidArg("x".into()), MPI_ERR_ARG),
            (EngineError::ProcFailed { ranks: vec![1] }, MPIX_ERR_PROC_FAILED),
            (EngineError::ProcFailedPending, MPIX_ERR_PROC_FAILED_PENDING),
            (EngineError::Revoked, MPIX_ERR_REVOKED),
            (EngineError::Malformed { peer: 0, what: "x" }, MPI_ERR_INTERN),
            (EngineError::Spawn("x".into()), MPI_ERR_SPAWN),
        ];
        for (e, class) in cases {
            let m = MpiErr::from(e.clone());
            assert_eq!(m.class, class, "{e}");
            assert_eq!(MpiErr::from(Error::Engine(e.clone())).class, class, "{e}");
            assert!(!m.msg.is_empty());
            assert!(class_text(class).is_some());
        }
        assert_eq!(MpiErr::from(Error::AlreadyInitialized).class, MPI_ERR_OTHER);
        assert!(class_text(MPI_ERR_LASTCODE).is_none());
    }

    /// Every weft error class has the MPI class the facade's table (`src/error_class.rs`)
    /// documents for it.
    #[test]
    fn every_class_has_its_documented_mpi_class() {
        let doc = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../src/error_class.rs"));
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .filter(|l| l.starts_with("//! | `"))
            .map(|l| {
                l[4..].split('|').map(|c| c.trim().trim_matches('`')).filter(|c| !c.is_empty()).collect()
            })
            .collect();
        assert_eq!(rows.len(), ErrorClass::ALL.len());
        let value = |name: &str| match name {
            "MPI_ERR_RANK" => MPI_ERR_RANK,
            "MPI_ERR_TAG" => MPI_ERR_TAG,
            "MPI_ERR_TRUNCATE" => MPI_ERR_TRUNCATE,
            "MPI_ERR_COMM" => MPI_ERR_COMM,
            "MPI_ERR_REQUEST" => MPI_ERR_REQUEST,
            "MPI_ERR_ARG" => MPI_ERR_ARG,
            "MPI_ERR_SPAWN" => MPI_ERR_SPAWN,
            "MPI_ERR_INTERN" => MPI_ERR_INTERN,
            "MPI_ERR_OTHER" => MPI_ERR_OTHER,
            "MPIX_ERR_PROC_FAILED" => MPIX_ERR_PROC_FAILED,
            "MPIX_ERR_PROC_FAILED_PENDING" => MPIX_ERR_PROC_FAILED_PENDING,
            "MPIX_ERR_REVOKED" => MPIX_ERR_REVOKED,
            other => panic!("the table names an MPI class this test does not know: {other}"),
        };
        for (class, row) in ErrorClass::ALL.into_iter().zip(rows) {
            assert_eq!(format!("{class:?}"), row[0]);
            assert_eq!(mpi_class(class), value(row[3]), "{class:?}");
        }
    }
}
