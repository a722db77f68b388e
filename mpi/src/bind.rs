//! The binding floor: the exported functions, one file per chapter of the standard.

pub(crate) mod abi_query;
pub(crate) mod address;
pub(crate) mod bsend;
pub(crate) mod coll;
pub(crate) mod completion;
pub(crate) mod init;
pub(crate) mod message;
pub(crate) mod neighbor;
pub(crate) mod p2p;
pub(crate) mod persistent;
pub(crate) mod profiling;
pub(crate) mod spawn;
pub(crate) mod status;
pub(crate) mod ulfm;
pub(crate) mod unsupported;
