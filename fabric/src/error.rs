//! The crate's one error type: a variant per failing libfabric call, with `fi_strerror` text.

use std::ffi::CStr;

use weft_engine::transport::TransportError;
use weft_fabric_sys as sys;

/// What went wrong, named after the libfabric call that failed. `ret` is the call's (negative)
/// return value, `msg` its `fi_strerror` text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FabricError {
    /// `fi_getinfo` failed for a reason other than "no match".
    #[error("fi_getinfo failed: {msg} ({ret})")]
    GetInfo { ret: i32, msg: String },
    /// The provider asked for (by `OfiConfig::provider` / `WEFT_FI_PROVIDER`) is not installed.
    #[error("unknown libfabric provider {requested:?}; available providers: {}", available.join(", "))]
    UnknownProvider { requested: String, available: Vec<String> },
    /// No provider offers what the transport needs (reliable datagram endpoints, tagged
    /// messages, RMA read, send-after-send order) with the requested provider/domain.
    #[error("no usable libfabric provider ({why}); available providers: {}", available.join(", "))]
    NoProvider { why: String, available: Vec<String> },
    /// `fi_fabric` failed.
    #[error("fi_fabric failed: {msg} ({ret})")]
    Fabric { ret: i32, msg: String },
    /// `fi_domain` failed.
    #[error("fi_domain failed: {msg} ({ret})")]
    Domain { ret: i32, msg: String },
    /// `fi_av_open` failed.
    #[error("fi_av_open failed: {msg} ({ret})")]
    Av { ret: i32, msg: String },
    /// `fi_av_insert` failed for the address of `rank`.
    #[error("fi_av_insert failed for rank {rank}: {msg} ({ret})")]
    AvInsert { rank: u32, ret: i32, msg: String },
    /// `fi_cq_open` failed.
    #[error("fi_cq_open failed: {msg} ({ret})")]
    Cq { ret: i32, msg: String },
    /// `fi_endpoint` failed.
    #[error("fi_endpoint failed: {msg} ({ret})")]
    Ep { ret: i32, msg: String },
    /// `fi_ep_bind` failed.
    #[error("fi_ep_bind failed: {msg} ({ret})")]
    EpBind { ret: i32, msg: String },
    /// `fi_enable` failed.
    #[error("fi_enable failed: {msg} ({ret})")]
    EpEnable { ret: i32, msg: String },
    /// `fi_getname` failed.
    #[error("fi_getname failed: {msg} ({ret})")]
    GetName { ret: i32, msg: String },
    /// `fi_mr_reg` failed.
    #[error("fi_mr_reg failed for {len} bytes: {msg} ({ret})")]
    Mr { len: usize, ret: i32, msg: String },
    /// `fi_mr_bind` or `fi_mr_enable` failed (providers with `FI_MR_ENDPOINT`).
    #[error("fi_mr_bind/fi_mr_enable failed: {msg} ({ret})")]
    MrBind { ret: i32, msg: String },
    /// `fi_trecv` failed while posting the receive buffers.
    #[error("fi_trecv failed: {msg} ({ret})")]
    Recv { ret: i32, msg: String },
    /// The provider needs a memory-registration mode this transport does not implement.
    #[error("unsupported memory registration mode: {0}")]
    MrMode(String),
    /// A peer's published address cannot be used.
    #[error("bad address for rank {rank}: {reason}")]
    BadAddress { rank: u32, reason: String },
    /// Invalid configuration value.
    #[error("invalid libfabric transport configuration: {0}")]
    Config(String),
    /// libfabric itself could not be loaded (the loader's reason).
    #[error("{0}")]
    Library(String),
}

impl FabricError {
    /// Name of the libfabric call that failed (or a short label for non-call errors).
    pub fn call(&self) -> &'static str {
        match self {
            FabricError::GetInfo { .. }
            | FabricError::UnknownProvider { .. }
            | FabricError::NoProvider { .. } => "fi_getinfo",
            FabricError::Fabric { .. } => "fi_fabric",
            FabricError::Domain { .. } => "fi_domain",
            FabricError::Av { .. } => "fi_av_open",
            FabricError::AvInsert { .. } | FabricError::BadAddress { .. } => "fi_av_insert",
            FabricError::Cq { .. } => "fi_cq_open",
            FabricError::Ep { .. } => "fi_endpoint",
            FabricError::EpBind { .. } => "fi_ep_bind",
            FabricError::EpEnable { .. } => "fi_enable",
            FabricError::GetName { .. } => "fi_getname",
            FabricError::Mr { .. } | FabricError::MrMode(_) => "fi_mr_reg",
            FabricError::MrBind { .. } => "fi_mr_bind",
            FabricError::Recv { .. } => "fi_trecv",
            FabricError::Config(_) => "config",
            FabricError::Library(_) => "dlopen",
        }
    }
}

impl From<FabricError> for TransportError {
    fn from(e: FabricError) -> TransportError {
        TransportError::Call { call: e.call(), msg: e.to_string() }
    }
}

/// `fi_strerror` text for a libfabric return value (negative or positive errno).
pub fn strerror(ret: isize) -> String {
    let code = ret.unsigned_abs().min(i32::MAX as usize) as i32;
    // SAFETY: fi_strerror accepts any positive error number and returns a pointer to a static
    // NUL-terminated string (libfabric's table or strerror's); it is never freed.
    let p = unsafe { sys::fi_strerror(code) };
    if p.is_null() {
        return format!("error {code}");
    }
    // SAFETY: non-null, NUL-terminated static string (see above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// `(ret, strerror)` pair for building error variants.
pub(crate) fn ret_msg(ret: isize) -> (i32, String) {
    (ret.clamp(i32::MIN as isize, i32::MAX as isize) as i32, strerror(ret))
}

/// True for the `fi_errno` values that mean "the peer (or the path to it) is gone".
pub fn is_connection_loss(errno: i32) -> bool {
    let e = errno.unsigned_abs();
    [
        sys::FI_ECONNREFUSED,
        sys::FI_ECONNRESET,
        sys::FI_ECONNABORTED,
        sys::FI_EIO,
        sys::FI_ENOTCONN,
        sys::FI_EHOSTUNREACH,
        sys::FI_ENETUNREACH,
        sys::FI_ENETDOWN,
        sys::FI_ESHUTDOWN,
        sys::FI_ETIMEDOUT,
        sys::FI_EHOSTDOWN,
        libc::EPIPE as u32,
        sys::FI_EREMOTEIO,
    ]
    .contains(&e)
}
