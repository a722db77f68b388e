//! The revoke's reliable broadcast at this member: the first sight of a revocation, started
//! here or by a peer's message, forwards it to this member's children in the binomial graph
//! and then revokes the communicator in the engine. Works on the engine's member list, not on
//! the cached [`CommInfo`]: a revoke is often the first FT operation on its communicator.

use weft_engine::{CommId, Common, FtPort, Result};

use crate::class;
use crate::revoke::{self, Revoke};
use crate::wire::Wire;

use super::events::send_wire;
use super::*;

impl Glue {
    /// Revoke communicator `c` (context `ctx`, epoch `epoch`) here: this member's first
    /// sight of the revocation, started locally (`from` = `None`) or by a message from member
    /// `from`. The forwards leave first, then the local delivery. Works on the engine's member
    /// list, not on [`CommInfo`]: a revoke is often the first FT operation on its
    /// communicator, and building the cached state would delay the message.
    pub(super) fn revoke_here(
        &mut self,
        e: &mut FtPort,
        c: CommId,
        ctx: u32,
        epoch: u32,
        from: Option<u32>,
    ) -> Result<()> {
        let v = e.comm(c)?;
        let (members, me) = (v.members(), v.rank());
        let failed: Vec<u32> = if e.failures().count() == 0 {
            Vec::new()
        } else {
            e.failures().world_ranks().iter().filter_map(|&w| rank_in(members, w)).collect()
        };
        let mut rv = Revoke::new(members.len() as u32, me, &failed);
        let acts = match from {
            None => rv.start(),
            Some(f) => rv.on_msg(f),
        };
        for a in acts {
            match a {
                revoke::Action::Send { to } => {
                    let w = e.comm(c)?.members()[to as usize];
                    send_wire(e, &mut self.buf, w, ctx, &Wire::Revoke { ctx, epoch });
                }
                revoke::Action::Deliver => {
                    if e.revoke_local(c).unwrap_or(false) {
                        self.stats.revokes += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// A revoke message from world rank `peer` for `(ctx, epoch)`.
    pub(super) fn on_revoke(&mut self, e: &mut FtPort, peer: u32, ctx: u32, epoch: u32, p: &[u8]) {
        let Some((c, ep)) = self.live_comm(e, ctx) else {
            if e.contexts().may_come(ctx) {
                // For a communicator this process will create soon.
                self.park(peer, class::REVOKE, p);
            } else {
                self.stats.stale += 1;
            }
            return;
        };
        if ep != epoch {
            self.stats.stale += 1;
            return;
        }
        if e.comm(c).map(|v| v.is_revoked()).unwrap_or(true) {
            return;
        }
        let Some(from) = e.comm(c).map(|v| v.members()).ok().and_then(|m| rank_in(m, peer)) else {
            self.stats.malformed += 1;
            return;
        };
        // `c` is live (looked up just now), so this cannot fail.
        let _ = self.revoke_here(e, c, ctx, epoch, Some(from));
    }
}
