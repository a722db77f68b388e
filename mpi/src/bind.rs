//! The binding floor: the exported functions, one file per chapter of the standard.

pub(crate) mod abi_query;
pub(crate) mod address;
pub(crate) mod attr;
pub(crate) mod bsend;
pub(crate) mod coll;
pub(crate) mod comm;
pub(crate) mod completion;
pub(crate) mod datatype;
pub(crate) mod errhandler;
pub(crate) mod group;
pub(crate) mod info;
pub(crate) mod init;
pub(crate) mod intercomm;
pub(crate) mod message;
pub(crate) mod neighbor;
pub(crate) mod op;
pub(crate) mod p2p;
pub(crate) mod persistent;
pub(crate) mod profiling;
pub(crate) mod request;
pub(crate) mod spawn;
pub(crate) mod status;
pub(crate) mod topo;
pub(crate) mod ulfm;
pub(crate) mod unsupported;

pub use self::{
    abi_query::*, address::*, attr::*, bsend::*, coll::*, comm::*, completion::*, datatype::*, errhandler::*,
    group::*, info::*, init::*, intercomm::*, message::*, neighbor::*, op::*, p2p::*, persistent::*,
    profiling::*, request::*, status::*, topo::*, ulfm::*,
};
