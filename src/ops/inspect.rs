//! What the core tells about itself and its job: the node and the job's size, the transport
//! that reaches a rank, the engine's counters (messages by transport, failures by source) and
//! a dump of its queues for diagnosing a hang.

use weft_engine::{CommId, Common, Diagnostics, Stats};

use super::{EngineResult, OpsCore};

impl OpsCore {
    /// The node this process runs on (the runtime's dense node id; `weft-run`'s virtual nodes
    /// count as nodes).
    pub fn node_id(&self) -> u32 {
        self.rt.borrow().node_id()
    }

    /// Number of processes in the job.
    pub fn job_size(&self) -> u32 {
        self.rt.borrow().size()
    }

    /// Name of the transport that reaches `rank` of `c` ("self", "shm", "ofi").
    pub fn transport_to(&self, c: CommId, rank: u32) -> EngineResult<&'static str> {
        let e = self.eng()?;
        let w = e.comm(c).and_then(|v| v.world_rank(rank))?;
        Ok(Diagnostics::of(&e).route_name(w))
    }

    /// Engine counters.
    pub fn stats(&self) -> Stats {
        Diagnostics::of(&self.engine.borrow()).stats().clone()
    }

    /// Messages handed to each transport so far, by transport name.
    pub fn messages_by_transport(&self) -> Vec<(&'static str, u64)> {
        let e = self.engine.borrow();
        let d = Diagnostics::of(&e);
        d.transport_names().into_iter().zip(d.stats().sent_by_transport.iter().copied()).collect()
    }

    /// How many failed ranks this process learned of first from each source: every transport
    /// by name (in-band: "shm" is its pidfd watch, "ofi" libfabric's errors), "runtime" (the
    /// launcher's PMIx events) and "upper" (the FT layer: heartbeat detector, peers' findings).
    pub fn failures_by_source(&self) -> Vec<(&'static str, u64)> {
        let e = self.engine.borrow();
        let l = &Diagnostics::of(&e).stats().learned;
        let mut v: Vec<(&'static str, u64)> =
            Diagnostics::of(&e).transport_names().into_iter().zip(l.transport.iter().copied()).collect();
        v.push(("runtime", l.runtime));
        v.push(("upper", l.upper));
        v
    }

    /// The engine's queues and pending requests, for diagnosing a hang.
    pub fn debug_state(&self) -> String {
        Diagnostics::of(&self.engine.borrow()).debug_state()
    }
}
