//! Communicators: groups of processes with a private context id.
//!
//! Each communicator owns two context ids: `ctx` for user point-to-point traffic and `ctx + 1`
//! for the engine's own collective traffic (barrier, communicator creation), so internal
//! messages never match user receives. Context ids are allocated as the maximum of every
//! member's `next_ctx` (see `create.rs`), so a new id is unused at every member.

use crate::error::{Error, Result};

/// Handle to a communicator. Stale handles (freed communicators) are detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CommId {
    pub(crate) slot: u32,
    pub(crate) gen: u32,
}

impl CommId {
    /// Pack into one integer (for the C ABI).
    pub fn to_raw(self) -> u64 {
        ((self.gen as u64) << 32) | self.slot as u64
    }
    /// Unpack from [`CommId::to_raw`]; validity is checked on use.
    pub fn from_raw(raw: u64) -> CommId {
        CommId { slot: raw as u32, gen: (raw >> 32) as u32 }
    }
}

/// Per-communicator state.
#[derive(Debug)]
pub(crate) struct CommState {
    /// Context id of user point-to-point traffic; `ctx + 1` carries internal collectives.
    pub(crate) ctx: u32,
    /// This process's rank in the communicator.
    pub(crate) rank: u32,
    /// World rank of each communicator rank.
    pub(crate) world_of: Vec<u32>,
    /// How many entries of the engine's failure list this communicator has acknowledged.
    pub(crate) acked: usize,
    /// Revoked: every pending and future point-to-point operation fails with `Revoked`.
    pub(crate) revoked: bool,
    /// Which failures raise errors on this communicator.
    pub(crate) scope: ErrScope,
}

/// Which process failures raise errors on a communicator: only the operations that involve
/// the failed process, or every operation once a member (or any process) has failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ErrScope {
    /// Only operations that involve the failed process (ULFM default).
    #[default]
    Local,
    /// Any failure of a member raises errors on every operation until acknowledged.
    Group,
    /// Any failure in the job raises errors on every operation until acknowledged.
    Universe,
}

impl CommState {
    pub(crate) fn new(ctx: u32, rank: u32, world_of: Vec<u32>) -> CommState {
        CommState { ctx, rank, world_of, acked: 0, revoked: false, scope: ErrScope::Local }
    }

    pub(crate) fn size(&self) -> u32 {
        self.world_of.len() as u32
    }

    /// Communicator rank of a world rank, if it is a member (slow path: linear scan).
    pub(crate) fn rank_of_world(&self, w: u32) -> Option<u32> {
        self.world_of.iter().position(|&x| x == w).map(|p| p as u32)
    }

    /// Validate a destination rank and return its world rank.
    #[inline]
    pub(crate) fn world_dest(&self, dst: u32) -> Result<u32> {
        match self.world_of.get(dst as usize) {
            Some(&w) => Ok(w),
            None => Err(Error::InvalidRank { rank: dst as i64, size: self.size() }),
        }
    }
}

struct Slot {
    gen: u32,
    comm: Option<CommState>,
}

/// Table of live communicators, indexed by handle slot.
#[derive(Default)]
pub(crate) struct Comms {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Comms {
    pub(crate) fn insert(&mut self, c: CommState) -> CommId {
        if let Some(slot) = self.free.pop() {
            let s = &mut self.slots[slot as usize];
            s.comm = Some(c);
            CommId { slot, gen: s.gen }
        } else {
            self.slots.push(Slot { gen: 1, comm: Some(c) });
            CommId { slot: (self.slots.len() - 1) as u32, gen: 1 }
        }
    }

    #[inline]
    pub(crate) fn get(&self, id: CommId) -> Result<&CommState> {
        match self.slots.get(id.slot as usize) {
            Some(Slot { gen, comm: Some(c) }) if *gen == id.gen => Ok(c),
            _ => Err(Error::InvalidComm),
        }
    }

    pub(crate) fn get_mut(&mut self, id: CommId) -> Result<&mut CommState> {
        match self.slots.get_mut(id.slot as usize) {
            Some(Slot { gen, comm: Some(c) }) if *gen == id.gen => Ok(c),
            _ => Err(Error::InvalidComm),
        }
    }

    pub(crate) fn remove(&mut self, id: CommId) -> Result<CommState> {
        match self.slots.get_mut(id.slot as usize) {
            Some(s) if s.gen == id.gen && s.comm.is_some() => {
                s.gen = s.gen.wrapping_add(1).max(1);
                self.free.push(id.slot);
                Ok(s.comm.take().expect("checked above"))
            }
            _ => Err(Error::InvalidComm),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (CommId, &CommState)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.comm.as_ref().map(|c| (CommId { slot: i as u32, gen: s.gen }, c)))
    }
}
