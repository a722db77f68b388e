//! The object floor: one module per MPI object kind, each owning its handle table, its
//! resolver (handle to object, or the error saying why not) and its conversions.

pub(crate) mod attr;
pub(crate) mod comm;
pub(crate) mod datatype;
pub(crate) mod errhandler;
pub(crate) mod group;
pub(crate) mod info;
pub(crate) mod intercomm;
pub(crate) mod message;
pub(crate) mod op;
pub(crate) mod request;
pub(crate) mod topo;
