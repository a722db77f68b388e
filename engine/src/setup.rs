//! [`Setup`]: what the facade does to an engine besides messaging — plug transports and
//! out-of-band failure sources in, grow the set of peers when processes join (a spawn),
//! retire transports whose peers are all gone, choose how waits spend idle time, poll the
//! failure sources at once, and leave the job (finalize). None of it runs on the data path;
//! the work is in `universe.rs`, `progress.rs` and `finalize.rs`.

use std::sync::atomic::AtomicBool;

use crate::config::ProgressMode;
use crate::error::Result;
use crate::transport::Transport;
use crate::{Engine, FailureSource};

/// Setting an engine up and taking it down; a view of the [`Engine`].
#[repr(transparent)]
pub struct Setup(Engine);

// SAFETY: `repr(transparent)` over `Engine`.
unsafe impl crate::engine::View for Setup {}

impl Setup {
    /// The setup of `e`.
    #[inline(always)]
    pub fn of(e: &mut Engine) -> &mut Setup {
        e.view()
    }

    /// Add a transport that reaches the world ranks `peers`; returns its index.
    /// A later transport does not override an earlier one for the same peer.
    pub fn add_transport(&mut self, t: Box<dyn Transport>, peers: &[u32]) -> usize {
        self.0.add_transport(t, peers)
    }

    /// Add an out-of-band failure source (the runtime's termination events), polled on the
    /// slow path.
    pub fn add_failure_source(&mut self, f: FailureSource) {
        self.0.failure_sources.push(f);
    }

    /// Make the next progress call run the slow path (poll the failure sources) whenever
    /// `flag` is set, instead of waiting for the slow-path period: a failure source whose
    /// notices arrive on another thread (the PMIx client's event handler) sets it. Costs one
    /// relaxed atomic load per progress call; the source itself clears the flag when polled.
    pub fn wake_on(&mut self, flag: &'static AtomicBool) {
        self.0.failure_wakes.push(flag);
    }

    /// How waiting callers spend idle time from now on (a host that gained processes, e.g.
    /// by a spawn, may no longer give every spinning process a core).
    pub fn set_progress_mode(&mut self, mode: ProgressMode) {
        self.0.cfg.progress = mode;
    }

    /// Number of universe ranks the per-peer tables cover.
    pub fn universe_size(&self) -> u32 {
        self.0.core.route.len() as u32
    }

    /// Grow the per-peer tables to universe ranks `0..universe` (never shrinks).
    pub fn grow_universe(&mut self, universe: u32) {
        self.0.grow_universe(universe)
    }

    /// Add a transport that reaches the universe ranks `peers` (which the tables must cover,
    /// see [`Setup::grow_universe`]), in the slot of a retired transport if there is one.
    /// Fails when the route table has no room for another transport.
    pub fn add_peer_transport(&mut self, t: Box<dyn Transport>, peers: &[u32]) -> Result<usize> {
        self.0.add_peer_transport(t, peers)
    }

    /// Retire every transport whose peers have all failed or finalized: its slot holds a
    /// transport that reaches nobody (its memory and descriptors are released) until
    /// [`Setup::add_peer_transport`] reuses it. Returns how many were retired.
    pub fn retire_dead_transports(&mut self) -> usize {
        self.0.retire_dead_transports()
    }

    /// Poll failure sources now (normally done on the slow path every `slow_period`); returns
    /// how many ranks it newly found failed.
    pub fn slow_path(&mut self) -> usize {
        self.0.slow_path()
    }

    /// Leave the job cleanly: every peer reachable through a transport gets a goodbye behind
    /// our data, and this waits (at most 10 s) until each has confirmed it or is known failed.
    pub fn finalize(&mut self) {
        self.0.finalize()
    }
}
