//! Communicator creation from a context id that an upper layer agreed on: what a front end
//! needs to build communicators the engine's own collectives cannot (intercommunicators, whose
//! two groups share no communicator yet). The agreement itself is the caller's: every member
//! contributes [`OpsCore::next_ctx`], the maximum over all members is unused at each of them.

use weft_engine::CommId;

use super::{EngineResult, OpsCore};

impl OpsCore {
    /// This process's next free context id (its contribution to a context agreement).
    pub fn next_ctx(&self) -> EngineResult<u32> {
        Ok(self.eng()?.ext_ref().next_ctx())
    }

    /// Create a communicator of the world ranks `members` (in rank order) on context `ctx`,
    /// which every member computed alike and which is unused at each (the maximum of their
    /// [`OpsCore::next_ctx`]). This process must be a member.
    pub fn comm_create_agreed(&self, ctx: u32, members: Vec<u32>) -> EngineResult<CommId> {
        self.eng()?.ext().comm_create_agreed(ctx, members)
    }
}
