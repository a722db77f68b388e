//! DGRP operations of the core: start and stop the diagnosis (with its internal
//! communicator, a private duplicate of the world), the current view, the round barrier and
//! the counters. The protocol is `weft-ft`'s ([`weft_ft::dgrp`], driven by
//! [`weft_ft::DgrpGlue`]); the round barrier's agreement is the FT layer's.

use weft_engine::FtPort;
use weft_ft::dgrp::Options;
use weft_ft::DgrpCounters;

use super::{EngineResult, OpsCore};
use crate::EngineError;

impl OpsCore {
    /// Start the diagnosis (every live world process calls it with the same options).
    pub fn dgrp_start(&self, opts: Options) -> EngineResult<()> {
        if self.dgrp.is_on() {
            return Err(EngineError::InvalidArg("dgrp: the diagnosis is already started".into()));
        }
        opts.check().map_err(|m| EngineError::InvalidArg(format!("dgrp: {m}")))?;
        let comm = self.comm_dup(self.world())?;
        let started = self.dgrp.start(FtPort::of(&mut *self.eng()?), comm, opts);
        if started.is_err() {
            let _ = self.comm_free(comm);
        }
        started
    }

    /// Stop the diagnosis here and free its internal communicator.
    pub fn dgrp_stop(&self) -> EngineResult<()> {
        let comm = self.dgrp.stop()?;
        self.comm_free(comm)
    }

    /// True while the diagnosis runs here.
    pub fn dgrp_is_on(&self) -> bool {
        self.dgrp.is_on()
    }

    /// This process's current view (world ranks, sorted).
    pub fn dgrp_view(&self) -> EngineResult<Vec<u32>> {
        self.dgrp.view()
    }

    /// The round barrier: the view every live process returns from it.
    pub fn dgrp_round_barrier(&self) -> EngineResult<Vec<u32>> {
        self.dgrp.round_barrier(FtPort::of(&mut *self.eng()?), &self.ft)
    }

    /// Counters of the diagnosis.
    pub fn dgrp_counters(&self) -> EngineResult<DgrpCounters> {
        self.dgrp.counters()
    }
}
