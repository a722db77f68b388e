//! The set of peers growing at run time: processes that join a running job (spawned by it)
//! get *universe ranks* after the existing ones, and the engine's per-peer tables grow to
//! cover them.
//!
//! World ranks are universe ranks: the first job of a launcher holds ranks `0..N`, a job it
//! spawns later `N..N+k`, and so on. A process's world communicator is its own job (for a
//! spawned process, `base..base+k` — [`Engine::with_world`]); communicators that span jobs
//! (a spawn's intercommunicator and whatever is built from it) name universe ranks like any
//! other. Peers of another job are reached through transports added after init
//! ([`crate::Setup::add_peer_transport`]); a transport all of whose peers failed or said
//! goodbye is retired and its slot reused ([`crate::Setup::retire_dead_transports`]), so a job
//! that replaces failed processes again and again keeps a bounded set of transports.
//!
//! Nothing here runs on the data path: the tables grow only when a spawn connects new peers.

use std::collections::VecDeque;

use crate::engine::{ROUTE_NONE, ROUTE_SELF};
use crate::error::{Error, Result};
use crate::transport::{GetStatus, Header, RKey, Transport, TransportError};
use crate::{Engine, EngineConfig};

/// What a retired transport's slot holds until a new transport reuses it: it reaches no peer.
struct Retired;

impl Transport for Retired {
    fn name(&self) -> &'static str {
        "retired"
    }
    fn eager_limit(&self) -> usize {
        0
    }
    fn try_send(&mut self, peer: u32, _: &Header, _: &[u8]) -> std::result::Result<bool, TransportError> {
        Err(TransportError::Invalid(format!("no transport reaches world rank {peer}")))
    }
    fn poll(&mut self, _: usize, _: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        0
    }
    fn expose(&mut self, peer: u32, _: *const u8, _: usize) -> std::result::Result<RKey, TransportError> {
        Err(TransportError::Invalid(format!("no transport reaches world rank {peer}")))
    }
    fn unexpose(&mut self, _: u32, _: &RKey) {}
    /// Refuses every read.
    ///
    /// # Safety
    /// None beyond the trait's: nothing is written.
    unsafe fn get(
        &mut self,
        peer: u32,
        _: &RKey,
        _: *mut u8,
        _: usize,
    ) -> std::result::Result<GetStatus, TransportError> {
        Err(TransportError::Invalid(format!("no transport reaches world rank {peer}")))
    }
    fn poll_failures(&mut self, _: &mut Vec<u32>) {}
}

impl Engine {
    /// An engine for universe rank `me` whose world communicator is `world` (its job's
    /// universe ranks, in rank order, `me` among them), with per-peer tables for universe
    /// ranks `0..universe`.
    pub fn with_world(me: u32, world: Vec<u32>, universe: u32, cfg: EngineConfig) -> Result<Engine> {
        let rank = world
            .iter()
            .position(|&w| w == me)
            .ok_or_else(|| Error::InvalidArg(format!("universe rank {me} is not in its world {world:?}")))?;
        if let Some(&w) = world.iter().find(|&&w| w >= universe) {
            return Err(Error::InvalidArg(format!("world member {w} is outside the universe of {universe}")));
        }
        let mut e = Engine::new(me, universe, cfg);
        let c = e.core.comms.get_mut(e.core.world)?;
        c.world_of = world;
        c.rank = rank as u32;
        Ok(e)
    }

    /// Add a transport that reaches the world ranks `peers`; returns its index.
    /// A later transport does not override an earlier one for the same peer.
    pub(crate) fn add_transport(&mut self, t: Box<dyn Transport>, peers: &[u32]) -> usize {
        let idx = self.transports.len();
        assert!(idx < ROUTE_NONE as usize, "too many transports");
        for &p in peers {
            if let Some(r) = self.core.route.get_mut(p as usize) {
                if *r == ROUTE_NONE {
                    *r = idx as u8;
                }
            }
        }
        self.eager.push(t.eager_limit().min(self.cfg.eager_limit));
        self.transports.push(t);
        self.core.stats.sent_by_transport.push(0);
        self.core.stats.learned.transport.push(0);
        idx
    }

    /// Grow the per-peer tables to universe ranks `0..universe` (never shrinks).
    pub(crate) fn grow_universe(&mut self, universe: u32) {
        let n = universe as usize;
        let core = &mut self.core;
        if n <= core.route.len() {
            return;
        }
        core.route.resize(n, ROUTE_NONE);
        core.pending.resize_with(n, VecDeque::new);
        core.bye_sent.resize(n, false);
        core.confirmed.resize(n, false);
        core.failed.grow(universe);
    }

    /// Add a transport that reaches the universe ranks `peers` (which the tables must cover,
    /// see `grow_universe`), in the slot of a retired transport if there is one.
    /// Fails when the route table has no room for another transport.
    pub(crate) fn add_peer_transport(&mut self, t: Box<dyn Transport>, peers: &[u32]) -> Result<usize> {
        if let Some(&p) = peers.iter().find(|&&p| p as usize >= self.core.route.len() || p == self.core.me) {
            return Err(Error::InvalidArg(format!("peer {p} is this process or outside the universe")));
        }
        let reuse = (0..self.transports.len()).find(|&i| self.transports[i].name() == Retired.name());
        let idx = match reuse {
            Some(i) => {
                self.eager[i] = t.eager_limit().min(self.cfg.eager_limit);
                self.transports[i] = t;
                i
            }
            None if self.transports.len() < ROUTE_NONE as usize => {
                return Ok(self.add_transport(t, peers));
            }
            None => {
                return Err(Error::Transport(TransportError::Invalid(format!(
                    "no room for another transport ({} in use)",
                    self.transports.len()
                ))))
            }
        };
        for &p in peers {
            let r = &mut self.core.route[p as usize];
            if *r == ROUTE_NONE || *r as usize == idx {
                *r = idx as u8;
            }
        }
        Ok(idx)
    }

    /// Retire every transport whose peers have all failed or finalized: its slot holds a
    /// transport that reaches nobody (its memory and descriptors are released) until
    /// [`crate::Setup::add_peer_transport`] reuses it. Returns how many were retired.
    pub(crate) fn retire_dead_transports(&mut self) -> usize {
        let mut retired = 0;
        for t in 0..self.transports.len() {
            if self.transports[t].name() == Retired.name() {
                continue;
            }
            let peers: Vec<u32> = (0..self.core.route.len() as u32)
                .filter(|&w| {
                    self.core.route[w as usize] as usize == t && self.core.route[w as usize] != ROUTE_SELF
                })
                .collect();
            let core = &self.core;
            let dead = |w: &u32| core.failed.is_failed(*w) || core.failed.departed(*w);
            if peers.is_empty()
                || !peers.iter().all(dead)
                || peers.iter().any(|&w| !core.pending[w as usize].is_empty())
            {
                continue;
            }
            if self.core.gets.iter().any(|g| g.transport == t) {
                continue;
            }
            for &w in &peers {
                self.core.route[w as usize] = ROUTE_NONE;
            }
            self.transports[t] = Box::new(Retired);
            retired += 1;
        }
        retired
    }
}
