//! The crate's error: the engine's transport error, and the one constructor for a failed libc
//! call. Below every other module of the crate (the segment, the peer's pidfd and the
//! transport all raise it).

/// Errors of this crate are the engine's transport errors.
pub(crate) use weft_engine::transport::TransportError as ShmError;

/// `TransportError::Call` for the failed libc call `call`, with the current errno.
pub(crate) fn errno_err(call: &'static str) -> ShmError {
    ShmError::Call { call, msg: std::io::Error::last_os_error().to_string() }
}
