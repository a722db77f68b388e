//! Read-only views of the engine's state that every caller may hold: [`CommView`] (one
//! communicator: rank, size, members, context, revocation, error scope, failed and
//! acknowledged members) and [`FailureView`] (the failure table). The engine, the
//! collectives' and the fault-tolerance layer's capabilities hand out the same views, so
//! these queries are written once.

use crate::comm::{CommState, ErrScope};
use crate::engine::Core;
use crate::error::Result;
use crate::fail_table::Failures;
use crate::CommId;

/// One communicator as it stands here (from [`crate::Common::comm`], on the engine or a
/// layer's capability).
#[derive(Clone, Copy)]
pub struct CommView<'a> {
    comm: &'a CommState,
    failed: &'a Failures,
}

/// The failure table (from [`crate::Common::failures`]).
#[derive(Clone, Copy)]
pub struct FailureView<'a> {
    failed: &'a Failures,
}

impl Core {
    /// The view of communicator `c`.
    #[inline]
    pub(crate) fn comm_view(&self, c: CommId) -> Result<CommView<'_>> {
        Ok(CommView { comm: self.comms.get(c)?, failed: &self.failed })
    }
}

impl<'a> CommView<'a> {
    /// Rank of this process in the communicator.
    #[inline]
    pub fn rank(&self) -> u32 {
        self.comm.rank
    }

    /// Number of members.
    #[inline]
    pub fn size(&self) -> u32 {
        self.comm.size()
    }

    /// World ranks of the members, in communicator rank order.
    #[inline]
    pub fn members(&self) -> &'a [u32] {
        &self.comm.world_of
    }

    /// World rank of member `r` ([`crate::Error::InvalidRank`] if there is none).
    #[inline]
    pub fn world_rank(&self, r: u32) -> Result<u32> {
        self.comm.world_dest(r)
    }

    /// Context id (its internal context is `ctx + 1`).
    #[inline]
    pub fn ctx(&self) -> u32 {
        self.comm.ctx
    }

    /// True once the communicator was revoked.
    #[inline]
    pub fn is_revoked(&self) -> bool {
        self.comm.revoked
    }

    /// Which failures raise errors on the communicator.
    #[inline]
    pub fn error_scope(&self) -> ErrScope {
        self.comm.scope
    }

    /// Ranks of the members known to have failed, in order of detection.
    pub fn failed(&self) -> Vec<u32> {
        self.failed.list.iter().filter_map(|&w| self.comm.rank_of_world(w)).collect()
    }

    /// Ranks of the members whose failure the communicator has acknowledged (ULFM's older
    /// `get_acked`).
    pub fn acked(&self) -> Vec<u32> {
        let n = self.comm.acked.min(self.failed.list.len());
        self.failed.list[..n].iter().filter_map(|&w| self.comm.rank_of_world(w)).collect()
    }

    /// True if members are known failed whose failure the communicator has not acknowledged.
    #[inline]
    pub fn has_unacked_failure(&self) -> bool {
        self.failed.list[self.comm.acked.min(self.failed.list.len())..]
            .iter()
            .any(|&w| self.comm.rank_of_world(w).is_some())
    }
}

impl<'a> FailureView<'a> {
    pub(crate) fn new(failed: &'a Failures) -> FailureView<'a> {
        FailureView { failed }
    }

    /// Number of failures known so far (grows by one per newly failed process): activities
    /// compare it with the value they saw last to notice new failures cheaply.
    #[inline]
    pub fn count(&self) -> usize {
        self.failed.list.len()
    }

    /// World ranks known to have failed, in order of detection.
    #[inline]
    pub fn world_ranks(&self) -> &'a [u32] {
        &self.failed.list
    }

    /// True if world rank `w` is known to have failed.
    #[inline]
    pub fn contains(&self, w: u32) -> bool {
        self.failed.is_failed(w)
    }
}
