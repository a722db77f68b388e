//! [`Communicators`]: the user-level management of communicators beyond messaging —
//! duplication, splitting, creation from a group, freeing, and the per-communicator fault
//! settings (error scope, acknowledgement of failures). The collective creation calls run on
//! the parent's internal context; their algorithms and the rules of context ids are in
//! `create.rs`, acknowledgement in `failure.rs`.

use crate::comm::ErrScope;
use crate::error::Result;
use crate::{CommId, Engine};

/// Communicator management; a view of the [`Engine`].
#[repr(transparent)]
pub struct Communicators(Engine);

// SAFETY: `repr(transparent)` over `Engine`.
unsafe impl crate::engine::View for Communicators {}

impl Communicators {
    /// The communicators of `e`.
    #[inline(always)]
    pub fn of(e: &mut Engine) -> &mut Communicators {
        e.view()
    }

    /// Duplicate `c`: same group, new context. Collective over `c`.
    pub fn dup(&mut self, c: CommId) -> Result<CommId> {
        self.0.comm_dup(c)
    }

    /// Split `c` by `color` (≥ 0, or [`crate::UNDEFINED`] to get no communicator), ordering
    /// each new group by `key` then by rank in `c`. Collective over `c`.
    pub fn split(&mut self, c: CommId, color: i32, key: i32) -> Result<Option<CommId>> {
        self.0.comm_split(c, color, key)
    }

    /// A communicator of the members of `c` listed in `members` (ranks of `c`, distinct, in
    /// the new communicator's rank order), created by those members only
    /// (`MPI_Comm_create_group`); `tag` (0..2^28) separates concurrent creations over
    /// overlapping groups.
    pub fn create_group(&mut self, c: CommId, members: &[u32], tag: i32) -> Result<CommId> {
        self.0.comm_create_group(c, members, tag)
    }

    /// Free `c`. Receives still posted on it complete with `InvalidComm`; messages that arrive
    /// for it later are dropped. Freeing the world communicator is refused.
    pub fn free(&mut self, c: CommId) -> Result<()> {
        self.0.comm_free(c)
    }

    /// Set which failures raise errors on `c`.
    pub fn set_error_scope(&mut self, c: CommId, scope: ErrScope) -> Result<()> {
        self.0.core.comms.get_mut(c)?.scope = scope;
        Ok(())
    }

    /// Acknowledge every failure known now on `c`: wildcard receives on `c` stop reporting
    /// `ProcFailedPending` for them. Returns how many failed ranks of `c` are acknowledged.
    pub fn ack_failed(&mut self, c: CommId) -> Result<usize> {
        self.0.ack_failed(c)
    }
}
