//! What the C ABI reports of a finished receive, probe or request: [`weft_status`], how an
//! engine result becomes one (a truncated receive keeps its sender, tag and incoming size; an
//! error its code), and writing it through a nullable pointer.

use weft_engine::Status;

use super::error::engine_error_code;
use super::error::weft_error::WEFT_ERR_TRUNCATE;
use super::{WEFT_ANY_SOURCE, WEFT_ANY_TAG};
use crate::EngineError;

/// What a completed receive, probe or request reports.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct weft_status {
    /// Sender's rank (for sends: the destination); `WEFT_ANY_SOURCE` if unknown.
    pub source: i32,
    /// Tag of the message; `WEFT_ANY_TAG` if unknown.
    pub tag: i32,
    /// Bytes in the message (for a truncated receive: the incoming size).
    pub count: usize,
    /// The request's own error code (`weft_waitall` / `weft_testall` report per request).
    pub error: i32,
}

/// Write a status through an optional (nullable) pointer.
///
/// # Safety
/// `p` must be NULL or valid for a write of `weft_status`.
pub(super) unsafe fn put_status(p: *mut weft_status, st: weft_status) {
    if !p.is_null() {
        // SAFETY: non-NULL, and the caller guarantees it is valid for writes.
        unsafe { p.write(st) };
    }
}

pub(super) const EMPTY: weft_status =
    weft_status { source: WEFT_ANY_SOURCE, tag: WEFT_ANY_TAG, count: 0, error: 0 };

/// The status a finished operation reports (a truncated receive keeps its sender, tag and the
/// incoming size).
pub(super) fn status_of(r: &Result<Status, EngineError>) -> weft_status {
    match r {
        Ok(s) => weft_status { source: s.source as i32, tag: s.tag, count: s.count, error: 0 },
        Err(EngineError::Truncated { incoming, sender, tag, .. }) => weft_status {
            source: *sender as i32,
            tag: *tag,
            count: *incoming,
            error: WEFT_ERR_TRUNCATE as i32,
        },
        Err(e) => weft_status { error: engine_error_code(e) as i32, ..EMPTY },
    }
}
