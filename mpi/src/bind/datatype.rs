//! Datatypes chapter: constructors, queries, packing.

pub(crate) mod pack;
pub(crate) mod query;
pub(crate) mod typecons;

pub use self::{pack::*, query::*, typecons::*};
