//! [`Contexts`]: context ids for communicators whose id an upper layer agrees on — a shrink,
//! a non-blocking duplication, an intercommunicator of a spawn — rather than the engine's own
//! creation calls: this process's next free id (its contribution to the agreement), windows
//! of ids reserved while an agreement runs, whether messages for an id may still find their
//! communicator, and the creation of the agreed communicator.
//!
//! The facade holds it through [`Contexts::of`]; the fault-tolerance layer reads it through
//! [`crate::FtPort::contexts`]. The rules of the ids are in `create.rs`.

use crate::error::Result;
use crate::{CommId, Engine};

/// Context ids agreed on by an upper layer; a view of the [`Engine`].
#[repr(transparent)]
pub struct Contexts(Engine);

// SAFETY: `repr(transparent)` over `Engine`.
unsafe impl crate::engine::View for Contexts {}

impl Contexts {
    /// The context ids of `e`.
    #[inline(always)]
    pub fn of(e: &mut Engine) -> &mut Contexts {
        e.view()
    }

    /// Read-only [`Contexts::of`].
    #[inline(always)]
    pub fn of_ref(e: &Engine) -> &Contexts {
        e.view_ref()
    }

    /// This process's next free context id (what it contributes to a context agreement).
    pub fn next(&self) -> u32 {
        self.0.core.next_ctx
    }

    /// Reserve a window of up to `n` context ids for a creation whose agreement runs while
    /// this process may create other communicators: its first id and its end; this
    /// process's creations take ids past it from now on.
    pub fn reserve(&mut self, n: u32) -> Result<(u32, u32)> {
        self.0.reserve_ctx(n)
    }

    /// End the reservation of the window ending at `end`, its creation having installed its
    /// communicators below `used`: the ids `used..end` return unless a creation took ids past
    /// the window meanwhile.
    pub fn release(&mut self, end: u32, used: u32) {
        self.0.release_ctx(end, used)
    }

    /// True if `ctx` names no communicator here yet but may (a message for it can be held
    /// until it does): at or past [`Contexts::next`], or in a reserved window.
    pub fn may_come(&self, ctx: u32) -> bool {
        self.0.ctx_may_come(ctx)
    }

    /// Number of communicators installed so far: grows whenever one is created here.
    pub fn installed(&self) -> u64 {
        self.0.core.comms_installed
    }

    /// The communicator of this process whose context id is `ctx`, if any.
    pub fn comm_of(&self, ctx: u32) -> Option<CommId> {
        self.0.core.comms.iter().find(|(_, c)| c.ctx == ctx).map(|(id, _)| id)
    }

    /// Create a communicator from a context id and members agreed on by an upper layer.
    /// Context id `ctx` must be even and unused by every member (the caller's agreement
    /// guarantees it); this process must be a member.
    pub fn create_agreed(&mut self, ctx: u32, world_of: Vec<u32>) -> Result<CommId> {
        self.0.comm_create_agreed(ctx, world_of)
    }
}
