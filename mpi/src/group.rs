//! Groups: ordered sets of processes, named by world rank.

/// One group: the world ranks of its members, in group-rank order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) ranks: Vec<u32>,
}
