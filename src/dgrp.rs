//! The Dynamic Group of Recommended Processes in the safe API ("Running resilient MPI
//! applications on a Dynamic Group of Recommended Processes", Camargo and Duarte, 2018):
//! processes test each other, the slow ones leave the group that runs the application and
//! rejoin once they are good again. The operations are the core's (`ops/dgrp.rs`); this file
//! adapts them to [`Weft`] and to Rust types.
//!
//! The diagnosis runs inside the engine, with no thread: a process answers tests only while
//! it is inside a weft call (any call that progresses, such as [`Weft::progress`], a
//! send, receive or wait, or the round barrier). An application that computes for longer
//! than the recommendation threshold without calling weft looks slow.

use std::time::Duration;

use weft_ft::dgrp::Options;
pub use weft_ft::dgrp::Stats as DgrpStats;
pub use weft_ft::DgrpCounters;

use crate::{Result, Weft};

/// Settings of the diagnosis; every process must use the same.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DgrpOptions {
    /// Testing interval (default 100 ms). The recommendation threshold stays between one
    /// interval and four.
    pub interval: Duration,
    /// Tolerance factor on the TCP-like estimate `srtt + 4·rttvar` (default 2.5).
    pub factor: f64,
    /// Consecutive good tests before a non-member may rejoin (default 5).
    pub zeta: u32,
}

impl Default for DgrpOptions {
    fn default() -> DgrpOptions {
        DgrpOptions { interval: Duration::from_millis(100), factor: 2.5, zeta: 5 }
    }
}

impl DgrpOptions {
    pub(crate) fn to_ft(self) -> Options {
        let ns = u64::try_from(self.interval.as_nanos()).unwrap_or(u64::MAX);
        let mut o = Options::new(ns);
        // `Options::new` rounds a zero interval up; keep it, so that starting rejects it.
        o.interval = ns;
        o.factor = self.factor;
        o.zeta = self.zeta;
        o
    }
}

impl Weft {
    /// Start the diagnosis. Every live world process calls it with the same options, before
    /// any round barrier (it duplicates the world for its internal agreements). The test is
    /// the default task: the number of primes up to 1000.
    pub fn dgrp_start(&self, opts: DgrpOptions) -> Result<()> {
        Ok(self.core().dgrp_start(opts.to_ft())?)
    }

    /// [`Weft::dgrp_start`] with a pluggable test: the tested process computes `task(arg)`
    /// and the tester checks the reply against its own `task(arg)`, so `task` must be a pure
    /// function of its argument.
    pub fn dgrp_start_with_task(
        &self,
        opts: DgrpOptions,
        arg: u64,
        task: impl Fn(u64) -> u64 + 'static,
    ) -> Result<()> {
        let mut o = opts.to_ft();
        o.task_arg = arg;
        o.task = std::rc::Rc::new(task);
        Ok(self.core().dgrp_start(o)?)
    }

    /// Stop the diagnosis here (local: call it everywhere, after a last round barrier).
    pub fn dgrp_stop(&self) -> Result<()> {
        Ok(self.core().dgrp_stop()?)
    }

    /// True while the diagnosis runs here.
    pub fn dgrp_is_on(&self) -> bool {
        self.core().dgrp_is_on()
    }

    /// This process's current view: the recommended world ranks, sorted. Between round
    /// barriers it may differ from other processes' views.
    pub fn dgrp_view(&self) -> Result<Vec<u32>> {
        Ok(self.core().dgrp_view()?)
    }

    /// Round barrier: every live world process (members and non-members) calls it; it
    /// returns the view — sorted world ranks, never empty, no crashed process — that every
    /// caller gets alike, for assigning the next computing round. Non-members rejoin only
    /// here, by an agreement among the members.
    pub fn dgrp_round_barrier(&self) -> Result<Vec<u32>> {
        Ok(self.core().dgrp_round_barrier()?)
    }

    /// Counters of the diagnosis: the event counter of every world rank as known here and
    /// the test statistics ([`DgrpStats`]).
    pub fn dgrp_counters(&self) -> Result<DgrpCounters> {
        Ok(self.core().dgrp_counters()?)
    }
}
