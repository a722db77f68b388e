//! Communicator creation (behind [`crate::Communicators`] and [`crate::Contexts`]) and the
//! engine's internal collectives (barrier, small allgather)
//! that communicator creation needs. They run on the communicator's internal context
//! (`ctx + 1`) so they never match user messages.
//!
//! Context ids: every process keeps `next_ctx`, larger than any id it uses. A new
//! communicator takes the maximum `next_ctx` over the parent's members, so the id is unused at
//! every member; disjoint groups created by one split may share an id, which is harmless
//! because no message flows between them on it.

use crate::comm::CommState;
use crate::error::{Error, Result};
use crate::CommId;
use crate::Engine;

const TAG_BARRIER: i32 = 1;
const TAG_GATHER: i32 = 2;
const TAG_BCAST: i32 = 3;

/// Color that leaves a process out of every new communicator in [`crate::Communicators::split`].
pub const UNDEFINED: i32 = -1;

impl Engine {
    fn isend_internal(&mut self, c: CommId, buf: &[u8], dst: u32, tag: i32) -> Result<()> {
        // SAFETY: blocking: `buf` outlives the call and the request is waited for here.
        let id = unsafe { self.isend_ctx(c, 1, buf.as_ptr(), buf.len(), dst, tag, false)? };
        if let Some(id) = id {
            self.wait(id)?;
        }
        Ok(())
    }

    fn recv_internal(&mut self, c: CommId, buf: &mut [u8], src: u32, tag: i32) -> Result<usize> {
        // SAFETY: blocking: `buf` outlives the call and the request is waited for here.
        let id =
            unsafe { self.irecv_ctx(c, 1, buf.as_mut_ptr(), buf.len(), src as i32, tag, true)?.pending() };
        Ok(self.wait(id)?.count)
    }

    /// Block until every member of `c` has entered the barrier (dissemination algorithm:
    /// ⌈log₂ n⌉ rounds of one zero-byte message each way).
    pub fn barrier(&mut self, c: CommId) -> Result<()> {
        let (rank, size) = {
            let v = self.core.comm_view(c)?;
            (v.rank(), v.size())
        };
        let mut dist = 1;
        while dist < size {
            let to = (rank + dist) % size;
            let from = (rank + size - dist) % size;
            // SAFETY: zero-length buffers; the requests are waited for below.
            let s = unsafe { self.isend_ctx(c, 1, std::ptr::null(), 0, to, TAG_BARRIER, true)? }
                .expect("request forced");
            // SAFETY: as above.
            let r = unsafe {
                self.irecv_ctx(c, 1, std::ptr::null_mut(), 0, from as i32, TAG_BARRIER, true)?.pending()
            };
            let res = self.wait_all(&[s, r]);
            res?;
            dist *= 2;
        }
        Ok(())
    }

    /// Gather `mine` (same length everywhere) from every member of `c` to every member, in
    /// rank order (linear gather to rank 0, then broadcast; used only for communicator
    /// creation, which is not a hot path).
    pub(crate) fn allgather_small(&mut self, c: CommId, mine: &[u8]) -> Result<Vec<u8>> {
        let (rank, size) = {
            let v = self.core.comm_view(c)?;
            (v.rank(), v.size() as usize)
        };
        let n = mine.len();
        let mut all = vec![0u8; n * size];
        if rank == 0 {
            all[..n].copy_from_slice(mine);
            for r in 1..size {
                let got = self.recv_internal(c, &mut all[r * n..(r + 1) * n], r as u32, TAG_GATHER)?;
                if got != n {
                    return Err(Error::InvalidArg("communicator creation: member sent a bad record".into()));
                }
            }
            for r in 1..size {
                self.isend_internal(c, &all, r as u32, TAG_BCAST)?;
            }
        } else {
            self.isend_internal(c, mine, 0, TAG_GATHER)?;
            let got = self.recv_internal(c, &mut all, 0, TAG_BCAST)?;
            if got != all.len() {
                return Err(Error::InvalidArg("communicator creation: bad broadcast record".into()));
            }
        }
        Ok(all)
    }

    pub(crate) fn install_comm(&mut self, ctx: u32, rank: u32, world_of: Vec<u32>) -> Result<CommId> {
        let id = self.core.comms.insert(CommState::new(ctx, rank, world_of));
        self.core.next_ctx = self.core.next_ctx.max(ctx + 2);
        self.core.comms_installed += 1;
        for x in [ctx, ctx + 1] {
            let qs = self.core.q.ctx(x).ok_or_else(|| Error::InvalidArg("context ids exhausted".into()))?;
            qs.comm = Some(id);
            qs.retired = false;
            // Messages that arrived before the communicator existed were not checked yet.
            let comm = self.core.comms.get(id)?;
            let before = qs.unexpected.len();
            qs.unexpected.retain(|u| comm.world_of.get(u.src as usize) == Some(&u.src_world));
            self.core.stats.malformed += (before - qs.unexpected.len()) as u64;
        }
        Ok(id)
    }

    /// Duplicate `c`: same group, new context. Collective over `c`.
    pub(crate) fn comm_dup(&mut self, c: CommId) -> Result<CommId> {
        let all = self.allgather_small(c, &self.core.next_ctx.to_le_bytes())?;
        let ctx =
            all.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4"))).max().unwrap_or(2);
        let comm = self.core.comms.get(c)?;
        let (rank, world_of) = (comm.rank, comm.world_of.clone());
        self.install_comm(ctx, rank, world_of)
    }

    /// Gather `mine` (same length at every member) from the members of `c` listed in
    /// `members` (ranks of `c`, in group order; this process among them) to all of them,
    /// in that order, exchanging messages only among them on `c`'s internal context with
    /// tags `tag` (gather) and `tag + 1` (broadcast).
    fn allgather_among(&mut self, c: CommId, members: &[u32], mine: &[u8], tag: i32) -> Result<Vec<u8>> {
        let me = self.core.comm_view(c)?.rank();
        let pos = members
            .iter()
            .position(|&r| r == me)
            .ok_or_else(|| Error::InvalidArg("this process is not a member of the group".into()))?;
        let n = mine.len();
        let mut all = vec![0u8; n * members.len()];
        if pos == 0 {
            all[..n].copy_from_slice(mine);
            for (i, &r) in members.iter().enumerate().skip(1) {
                let got = self.recv_internal(c, &mut all[i * n..(i + 1) * n], r, tag)?;
                if got != n {
                    return Err(Error::InvalidArg("group creation: member sent a bad record".into()));
                }
            }
            for &r in &members[1..] {
                self.isend_internal(c, &all, r, tag + 1)?;
            }
        } else {
            self.isend_internal(c, mine, members[0], tag)?;
            let got = self.recv_internal(c, &mut all, members[0], tag + 1)?;
            if got != all.len() {
                return Err(Error::InvalidArg("group creation: bad broadcast record".into()));
            }
        }
        Ok(all)
    }

    /// A communicator of the members of `c` listed in `members` (ranks of `c`, distinct, in
    /// the new communicator's rank order), created by those members only (`MPI_Comm_create_group`):
    /// they agree on a context id among themselves. `tag` (0..2^28) separates concurrent
    /// creations over overlapping groups; the messages use internal tags 4 + 2·tag and the one
    /// after, clear of the internal barrier and gather tags.
    pub(crate) fn comm_create_group(&mut self, c: CommId, members: &[u32], tag: i32) -> Result<CommId> {
        if !(0..1 << 28).contains(&tag) {
            return Err(Error::InvalidTag(tag));
        }
        let size = self.core.comm_view(c)?.size();
        if members.iter().any(|&r| r >= size) {
            return Err(Error::InvalidArg("group member outside the communicator".into()));
        }
        let all = self.allgather_among(c, members, &self.core.next_ctx.to_le_bytes(), 4 + 2 * tag)?;
        let ctx =
            all.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4"))).max().unwrap_or(2);
        let parent = self.core.comms.get(c)?;
        let me = parent.rank;
        let world_of: Vec<u32> = members.iter().map(|&r| parent.world_of[r as usize]).collect();
        let rank = members.iter().position(|&r| r == me).expect("checked by allgather_among") as u32;
        self.install_comm(ctx, rank, world_of)
    }

    /// Split `c` by `color` (≥ 0, or [`UNDEFINED`] to get no communicator), ordering each new
    /// group by `key` then by rank in `c`. Collective over `c`.
    pub(crate) fn comm_split(&mut self, c: CommId, color: i32, key: i32) -> Result<Option<CommId>> {
        if color < 0 && color != UNDEFINED {
            return Err(Error::InvalidArg(format!("split color {color}: must be ≥ 0 or UNDEFINED")));
        }
        let mut rec = [0u8; 12];
        rec[..4].copy_from_slice(&color.to_le_bytes());
        rec[4..8].copy_from_slice(&key.to_le_bytes());
        rec[8..].copy_from_slice(&self.core.next_ctx.to_le_bytes());
        let all = self.allgather_small(c, &rec)?;
        let field = |r: &[u8], i: usize| i32::from_le_bytes(r[i..i + 4].try_into().expect("4"));
        let ctx = all.chunks_exact(12).map(|r| field(r, 8) as u32).max().unwrap_or(2);
        // Every member moves past the new id, even those that get no communicator, so that
        // ids stay unique per process.
        self.core.next_ctx = self.core.next_ctx.max(ctx + 2);
        if color == UNDEFINED {
            return Ok(None);
        }
        let parent = self.core.comms.get(c)?;
        let mut members: Vec<(i32, u32, u32)> = all
            .chunks_exact(12)
            .enumerate()
            .filter(|(_, r)| field(r, 0) == color)
            .map(|(i, r)| (field(r, 4), i as u32, parent.world_of[i]))
            .collect();
        members.sort();
        let me = parent.rank;
        let rank = members.iter().position(|m| m.1 == me).expect("self is a member") as u32;
        let world_of = members.into_iter().map(|m| m.2).collect();
        self.install_comm(ctx, rank, world_of).map(Some)
    }

    /// Free `c`. Receives still posted on it complete with `InvalidComm`; messages that arrive
    /// for it later are dropped. Freeing the world communicator is refused.
    pub(crate) fn comm_free(&mut self, c: CommId) -> Result<()> {
        if c == self.core.world {
            return Err(Error::InvalidArg("the world communicator cannot be freed".into()));
        }
        let comm = self.core.comms.remove(c)?;
        for x in [comm.ctx, comm.ctx + 1] {
            if let Some(qs) = self.core.q.ctx(x) {
                qs.retired = true;
                qs.comm = None;
                qs.unexpected.clear();
                let posted: Vec<_> = qs.posted.drain(..).collect();
                for p in posted {
                    self.core.finish(p.req, Err(Error::InvalidComm));
                }
            }
        }
        Ok(())
    }

    /// Create a communicator from parts agreed on by an upper layer (shrink): context id
    /// `ctx` (even, unused by every member — the caller's agreement guarantees it) and the
    /// members' world ranks in rank order. This process must be a member.
    pub(crate) fn comm_create_agreed(&mut self, ctx: u32, world_of: Vec<u32>) -> Result<CommId> {
        if !ctx.is_multiple_of(2) || ctx + 1 >= crate::matching::MAX_CTX {
            return Err(Error::InvalidArg(format!("context id {ctx} must be even and in range")));
        }
        let me = self.core.me;
        let rank = world_of
            .iter()
            .position(|&w| w == me)
            .ok_or_else(|| Error::InvalidArg("this process is not a member".into()))?
            as u32;
        self.install_comm(ctx, rank, world_of)
    }

    /// Reserve a window of up to `n` context ids from this process's next free one, for a
    /// creation that agrees on its ids later (a non-blocking duplication): from now on this
    /// process's other creations contribute, and so take, ids past the window. The window
    /// `(start, end)`; ids in it stay free until that creation installs its communicators.
    pub(crate) fn reserve_ctx(&mut self, n: u32) -> Result<(u32, u32)> {
        let start = self.core.next_ctx;
        let end = start.saturating_add(n).min(crate::matching::MAX_CTX);
        if end.saturating_sub(start) < 2 {
            return Err(Error::InvalidArg("context ids exhausted".into()));
        }
        self.core.next_ctx = end;
        self.core.ctx_windows.push((start, end));
        Ok((start, end))
    }

    /// End the reservation of the window ending at `end` (`reserve_ctx`) once its
    /// creation installed its communicators on ids below `used`: the ids from `used` to `end`
    /// are given back if no creation took ids since the reservation (the next free id is
    /// still `end`); otherwise they stay unused.
    pub(crate) fn release_ctx(&mut self, end: u32, used: u32) {
        self.core.ctx_windows.retain(|w| w.1 != end);
        if self.core.next_ctx == end && used <= end {
            self.core.next_ctx = used;
        }
    }

    /// True if context `ctx` is not in use here but may become a communicator's: at or past
    /// the next free id, or in a window a pending creation reserved.
    pub(crate) fn ctx_may_come(&self, ctx: u32) -> bool {
        ctx >= self.core.next_ctx || self.core.ctx_windows.iter().any(|&(s, e)| (s..e).contains(&ctx))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Common, Communicators, Contexts, Engine, EngineConfig};

    /// A window reserved for a pending creation: other creations take ids past it, messages
    /// for its ids may still come, and ending it gives back what its creation did not use
    /// unless something was created past it meanwhile.
    #[test]
    fn reserved_windows_hold_their_ids_until_released() {
        let mut e = Engine::new(0, 1, EngineConfig::default());
        let next = Contexts::of_ref(&e).next();
        let (start, end) = Contexts::of(&mut e).reserve(64).unwrap();
        assert_eq!((start, end), (next, next + 64));
        assert_eq!(Contexts::of_ref(&e).next(), end, "later creations contribute ids past the window");
        assert!(Contexts::of_ref(&e).may_come(start + 2) && Contexts::of_ref(&e).may_come(end + 10));
        assert!(!Contexts::of_ref(&e).may_come(start - 2), "an id below the window is stale");
        let before = Contexts::of_ref(&e).installed();
        Contexts::of(&mut e).create_agreed(start, vec![0]).unwrap();
        assert_eq!(Contexts::of_ref(&e).installed(), before + 1);
        Contexts::of(&mut e).release(end, start + 2);
        assert_eq!(Contexts::of_ref(&e).next(), start + 2, "the unused rest comes back");
        assert!(!Contexts::of_ref(&e).may_come(start + 2 - 2));

        // A creation past a window keeps its rest reserved after the release.
        let (_, end2) = Contexts::of(&mut e).reserve(64).unwrap();
        let w = e.world();
        let dup = Communicators::of(&mut e).dup(w).unwrap();
        assert!(e.comm(dup).unwrap().ctx() >= end2);
        Contexts::of(&mut e).release(end2, end2 - 60);
        assert!(Contexts::of_ref(&e).next() > end2, "ids past the window stay taken");
        assert!(!Contexts::of_ref(&e).may_come(end2 - 30), "the window's rest is no longer expected");
    }
}
