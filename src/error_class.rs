//! The one table from weft's errors to error classes, shared by every front end: each engine
//! error ([`EngineError`]) and each facade error ([`Error`]) has exactly one [`ErrorClass`];
//! the C ABI (`capi/error.rs`) and the MPI library (`weft-mpi`, `error.rs`) each turn a class
//! into their own code with one match. The matches here have no wildcard arm, so a new error
//! variant does not compile until it is classified.
//!
//! | class | engine / facade error | C ABI code | MPI class |
//! |---|---|---|---|
//! | `Rank` | `InvalidRank` | `WEFT_ERR_RANK` | `MPI_ERR_RANK` |
//! | `Tag` | `InvalidTag` | `WEFT_ERR_TAG` | `MPI_ERR_TAG` |
//! | `Truncate` | `Truncated` | `WEFT_ERR_TRUNCATE` | `MPI_ERR_TRUNCATE` |
//! | `Comm` | `InvalidComm` | `WEFT_ERR_COMM` | `MPI_ERR_COMM` |
//! | `Request` | `InvalidRequest` | `WEFT_ERR_REQUEST` | `MPI_ERR_REQUEST` |
//! | `Arg` | `InvalidArg` | `WEFT_ERR_ARG` | `MPI_ERR_ARG` |
//! | `ProcFailed` | `ProcFailed` | `WEFT_ERR_PROC_FAILED` | `MPIX_ERR_PROC_FAILED` |
//! | `ProcFailedPending` | `ProcFailedPending` | `WEFT_ERR_PROC_FAILED_PENDING` | `MPIX_ERR_PROC_FAILED_PENDING` |
//! | `Revoked` | `Revoked` | `WEFT_ERR_REVOKED` | `MPIX_ERR_REVOKED` |
//! | `Transport` | `Transport` | `WEFT_ERR_TRANSPORT` | `MPI_ERR_OTHER` |
//! | `Malformed` | `Malformed` | `WEFT_ERR_MALFORMED` | `MPI_ERR_INTERN` |
//! | `Spawn` | `Spawn` | `WEFT_ERR_SPAWN` | `MPI_ERR_SPAWN` |
//! | `Runtime` | facade `Runtime` | `WEFT_ERR_RUNTIME` | `MPI_ERR_OTHER` |
//! | `Config` | facade `Config` | `WEFT_ERR_CONFIG` | `MPI_ERR_OTHER` |
//! | `Topology` | facade `Topology` | `WEFT_ERR_TOPOLOGY` | `MPI_ERR_OTHER` |
//! | `AlreadyInitialized` | facade `AlreadyInitialized` | `WEFT_ERR_ALREADY_INITIALIZED` | `MPI_ERR_OTHER` |
//! | `Rollback` | facade `Rollback` | `WEFT_ERR_REINIT` | `MPI_ERR_OTHER` |
//! | `ReinitUsage` | facade `Reinit` | `WEFT_ERR_REINIT_USAGE` | `MPI_ERR_OTHER` |
//! | `ResilientMain` | facade `ResilientMain` | `WEFT_ERR_REINIT_MAIN` | `MPI_ERR_OTHER` |
//!
//! One rule sits above the table: a failure-class engine error (`ProcFailed`,
//! `ProcFailedPending`, `Revoked`, `Transport`) of an instance whose global-restart epoch the
//! job has left is `Rollback`, as [`Error::from`] makes it.
//!
//! MPI has no class for a transport failure or for a runtime, configuration or restart error:
//! those are `MPI_ERR_OTHER`; a malformed message off the wire is weft's own protocol broken,
//! `MPI_ERR_INTERN`. The C ABI's `WEFT_ERR_NOT_INITIALIZED`, `WEFT_ERR_INTERNAL`, `WEFT_ERR_OP`
//! and `WEFT_ERR_DATATYPE` are errors of the C layer itself, not of weft's calls: no class.

use crate::error::abandoned_epoch;
use crate::{EngineError, Error};

/// The class of an error weft reports; see the module's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    Rank,
    Tag,
    Truncate,
    Comm,
    Request,
    Arg,
    ProcFailed,
    ProcFailedPending,
    Revoked,
    Transport,
    Malformed,
    Spawn,
    Runtime,
    Config,
    Topology,
    AlreadyInitialized,
    Rollback,
    ReinitUsage,
    ResilientMain,
}

impl ErrorClass {
    /// Every class, in declaration order.
    pub const ALL: [ErrorClass; 19] = [
        ErrorClass::Rank,
        ErrorClass::Tag,
        ErrorClass::Truncate,
        ErrorClass::Comm,
        ErrorClass::Request,
        ErrorClass::Arg,
        ErrorClass::ProcFailed,
        ErrorClass::ProcFailedPending,
        ErrorClass::Revoked,
        ErrorClass::Transport,
        ErrorClass::Malformed,
        ErrorClass::Spawn,
        ErrorClass::Runtime,
        ErrorClass::Config,
        ErrorClass::Topology,
        ErrorClass::AlreadyInitialized,
        ErrorClass::Rollback,
        ErrorClass::ReinitUsage,
        ErrorClass::ResilientMain,
    ];

    /// The class of an engine error (checked on the error path: the rollback rule reads the
    /// launcher's epoch).
    #[cold]
    pub fn of_engine(e: &EngineError) -> ErrorClass {
        if abandoned_epoch(e).is_some() {
            return ErrorClass::Rollback;
        }
        match e {
            EngineError::InvalidRank { .. } => ErrorClass::Rank,
            EngineError::InvalidTag(_) => ErrorClass::Tag,
            EngineError::Truncated { .. } => ErrorClass::Truncate,
            EngineError::InvalidComm => ErrorClass::Comm,
            EngineError::InvalidRequest => ErrorClass::Request,
            EngineError::InvalidArg(_) => ErrorClass::Arg,
            EngineError::ProcFailed { .. } => ErrorClass::ProcFailed,
            EngineError::ProcFailedPending => ErrorClass::ProcFailedPending,
            EngineError::Revoked => ErrorClass::Revoked,
            EngineError::Transport(_) => ErrorClass::Transport,
            EngineError::Malformed { .. } => ErrorClass::Malformed,
            EngineError::Spawn(_) => ErrorClass::Spawn,
        }
    }

    /// The class of a facade error.
    #[cold]
    pub fn of(e: &Error) -> ErrorClass {
        match e {
            Error::Engine(e) => ErrorClass::of_engine(e),
            Error::Runtime(_) => ErrorClass::Runtime,
            Error::Config { .. } => ErrorClass::Config,
            Error::Topology(_) => ErrorClass::Topology,
            Error::AlreadyInitialized => ErrorClass::AlreadyInitialized,
            Error::Rollback { .. } => ErrorClass::Rollback,
            Error::Reinit(_) => ErrorClass::ReinitUsage,
            Error::ResilientMain { .. } => ErrorClass::ResilientMain,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The module's table as (class, error, C ABI code, MPI class) names, read from this
    /// file: what is documented is what the front ends must map to.
    pub(crate) fn documented_table() -> Vec<[&'static str; 4]> {
        include_str!("error_class.rs")
            .lines()
            .filter(|l| l.starts_with("//! | `"))
            .map(|l| {
                let mut cells = l["//! ".len()..]
                    .split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(|c| c.strip_prefix("facade ").unwrap_or(c).trim_matches('`'));
                std::array::from_fn(|_| cells.next().unwrap_or(""))
            })
            .collect()
    }

    /// One error of every engine and facade variant (a new variant fails the exhaustive
    /// matches above; add it here too).
    fn one_of_each() -> Vec<(String, ErrorClass)> {
        let engine = [
            EngineError::InvalidRank { rank: 7, size: 4 },
            EngineError::InvalidTag(-5),
            EngineError::Truncated { incoming: 8, capacity: 4, sender: 1, tag: 2 },
            EngineError::InvalidComm,
            EngineError::InvalidRequest,
            EngineError::InvalidArg("x".into()),
            EngineError::ProcFailed { ranks: vec![1] },
            EngineError::ProcFailedPending,
            EngineError::Revoked,
            EngineError::Transport(weft_engine::TransportError::PeerDead(1)),
            EngineError::Malformed { peer: 0, what: "x" },
            EngineError::Spawn("x".into()),
        ];
        let facade = [
            Error::Runtime(weft_pmix::RuntimeError::Launcher("x".into())),
            Error::Config { key: "WEFT_X".into(), value: "y".into(), reason: "z".into() },
            Error::Topology("x".into()),
            Error::AlreadyInitialized,
            Error::Rollback { epoch: 2 },
            Error::Reinit("x".into()),
            Error::ResilientMain { code: 3 },
        ];
        let name = |debug: String| debug.split(|c: char| !c.is_alphanumeric()).next().unwrap().to_string();
        let mut out = Vec::new();
        for e in engine {
            let class = ErrorClass::of_engine(&e);
            // The facade error around an engine error has the engine error's class.
            assert_eq!(ErrorClass::of(&Error::Engine(e.clone())), class, "{e}");
            out.push((name(format!("{e:?}")), class));
        }
        for e in facade {
            out.push((name(format!("{e:?}")), ErrorClass::of(&e)));
        }
        out
    }

    #[test]
    fn every_error_has_one_class_of_its_own() {
        let got = one_of_each();
        assert_eq!(got.len(), ErrorClass::ALL.len());
        for class in ErrorClass::ALL {
            let n = got.iter().filter(|(_, c)| *c == class).count();
            assert_eq!(n, 1, "{class:?} is the class of {n} error variants");
        }
    }

    #[test]
    fn classes_are_the_documented_ones() {
        let doc = documented_table();
        assert_eq!(doc.len(), ErrorClass::ALL.len());
        for (i, (variant, class)) in one_of_each().into_iter().enumerate() {
            assert_eq!(ErrorClass::ALL[i], class, "ALL is in the order of the table");
            assert_eq!([doc[i][0], doc[i][1]], [format!("{class:?}").as_str(), variant.as_str()]);
        }
    }
}
