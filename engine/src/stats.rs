//! Counters for tests and diagnostics: [`Stats`], and [`FailureOrigins`] (where each failed
//! rank was first learned of). Plain data, written by the protocols, read through
//! [`crate::Diagnostics`].

use crate::error::Error;

/// Counters for tests and diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Messages handed to each transport, by transport index (eager, RTS and FIN).
    pub sent_by_transport: Vec<u64>,
    /// Messages delivered to self without a transport.
    pub sent_self: u64,
    /// Rendezvous transfers completed as receiver.
    pub rndv_gets: u64,
    /// Of those, split ones (the sender wrote the tail).
    pub split_rndv: u64,
    /// Split rendezvous started only after the FINs polled at the decision showed that the
    /// peer had read every rendezvous this process sent it (traffic both ways).
    pub split_late: u64,
    /// CTS messages this process answered without writing (its send given up, or the write
    /// failed).
    pub split_put_refused: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected: u64,
    /// Malformed messages dropped.
    pub malformed: u64,
    /// Messages dropped because their sender had been declared failed.
    pub dropped_from_failed: u64,
    /// Last malformed message seen, if any.
    pub last_malformed: Option<Error>,
    /// Where this process first learned of each failed rank.
    pub learned: FailureOrigins,
}

/// Where the engine first learned of each failed rank: one count per failed rank, for the
/// source that told it first (later notices of the same rank are not counted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureOrigins {
    /// In-band, by transport index (as [`Stats::sent_by_transport`]): the shared-memory
    /// transport's pidfd watch, libfabric's errors, a failed send.
    pub transport: Vec<u64>,
    /// Out-of-band failure sources ([`crate::Setup::add_failure_source`]): the runtime's
    /// events (PMIx `PROC_TERMINATED` / `NODE_DOWN`).
    pub runtime: u64,
    /// Told by an upper layer through [`crate::FtPort::notify_failed`]: the FT layer's
    /// heartbeat detector, a peer's finding, an agreement's failed set.
    pub upper: u64,
}

/// Where a failure notice came from (see [`FailureOrigins`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    Transport(usize),
    Runtime,
    Upper,
}

impl FailureOrigins {
    pub(crate) fn count(&mut self, o: Origin) {
        match o {
            Origin::Transport(t) => {
                if let Some(c) = self.transport.get_mut(t) {
                    *c += 1;
                }
            }
            Origin::Runtime => self.runtime += 1,
            Origin::Upper => self.upper += 1,
        }
    }
}
