//! The engine's state below its protocols: [`Core`] (everything a transport's poll may touch:
//! routes, communicators, matching queues, requests, per-destination queues, the failure
//! table, the pending work between polls, counters, the finalize handshake's per-peer flags),
//! the route table's special entries, and the small helpers every protocol shares. Imports
//! only data modules.

use std::collections::VecDeque;

use crate::comm::Comms;
use crate::error::{Error, Result};
use crate::fail_table::Failures;
use crate::matching::Matching;
use crate::pending::{GetInFlight, Outgoing, RndvTodo, SplitTodo};
use crate::request::{Phase, ReqId, Requests};
use crate::stats::Stats;
use crate::transport::{Header, RKey, TransportError};
use crate::{CommId, Status, ANY_TAG, MAX_TAG};

/// Route-table entry of this process itself (delivered without a transport).
pub(crate) const ROUTE_SELF: u8 = u8::MAX;
/// Route-table entry of a peer no transport reaches.
pub(crate) const ROUTE_NONE: u8 = u8::MAX - 1;

/// Everything except the transports, so that a transport's `poll` can borrow the transport
/// while the sink borrows the rest.
pub(crate) struct Core {
    pub(crate) me: u32,
    pub(crate) route: Vec<u8>,
    pub(crate) comms: Comms,
    pub(crate) world: CommId,
    pub(crate) q: Matching,
    pub(crate) reqs: Requests,
    pub(crate) pending: Vec<VecDeque<Outgoing>>,
    pub(crate) n_pending: usize,
    pub(crate) rndv_todo: Vec<RndvTodo>,
    /// Exposures whose FIN arrived; withdrawn after the poll that saw it.
    pub(crate) unexpose_todo: Vec<(u32, RKey)>,
    pub(crate) gets: Vec<GetInFlight>,
    /// Split rendezvous work after the poll: tail writes asked for (sender side) and FINs
    /// owed for completed split receives (receiver side).
    pub(crate) split: SplitTodo,
    pub(crate) failed: Failures,
    pub(crate) next_ctx: u32,
    /// Context-id windows reserved by creations still agreeing on their ids (below
    /// `next_ctx`, yet possibly the id of a communicator this process will install).
    pub(crate) ctx_windows: Vec<(u32, u32)>,
    /// Communicators installed so far (a layer holding messages for a communicator not yet
    /// installed retries them when this grows).
    pub(crate) comms_installed: u64,
    pub(crate) stats: Stats,
    /// Messages of upper-layer classes, dispatched to their handlers after the poll.
    pub(crate) ctrl_inbox: Vec<(u32, Header, Vec<u8>)>,
    /// Emptied payload buffers, reused for new arrivals the engine must hold: unexpected
    /// eager messages (until a receive matches them) and control messages (until dispatch).
    /// A sender that runs ahead of its receiver (a pipelined broadcast) would otherwise cost
    /// one allocation and one free per message.
    pub(crate) buf_pool: Vec<Vec<u8>>,
    /// Finalize handshake: goodbyes sent, peers that confirmed ours, acknowledgements owed.
    pub(crate) bye_sent: Vec<bool>,
    pub(crate) confirmed: Vec<bool>,
    pub(crate) acks_to_send: Vec<u32>,
    /// Set whenever work other than polling the transports may be waiting — a matched RTS,
    /// an exposure to withdraw, queued sends, reads in flight, upper-layer messages,
    /// goodbye acknowledgements, activities, a new failure for the slow activities — and
    /// recomputed once that work has run: a progress call of failure-free point-to-point
    /// traffic reads this one word after the poll.
    pub(crate) aux: bool,
    /// The request a blocking [`crate::Engine::wait`] is waiting for (`None` otherwise): a message
    /// that completes it ends the transports' poll at once ([`Core::on_message`]), unless
    /// messages are streaming in.
    pub(crate) awaited: Option<ReqId>,
    /// The last receive posted found its message already arrived (unexpected): messages are
    /// coming in faster than they are received, so a poll that completes the awaited request
    /// goes on reading — the next messages are likely there, and taking them in one batch
    /// saves their receives a request each.
    pub(crate) streaming: bool,
    /// Awaited completions since the last one that went on reading anyway (to notice that
    /// messages started streaming; see [`crate::recv::PROBE_EVERY`]).
    pub(crate) probe: u8,
}

pub(crate) fn user_status(source: u32, tag: i32, count: usize) -> Status {
    Status { source, tag, count }
}

pub(crate) fn check_tag(tag: i32, wildcard_ok: bool) -> Result<()> {
    if (0..=MAX_TAG).contains(&tag) || (wildcard_ok && tag == ANY_TAG) {
        Ok(())
    } else {
        Err(Error::InvalidTag(tag))
    }
}

impl Core {
    pub(crate) fn finish(&mut self, id: ReqId, res: Result<Status>) {
        if let Some(r) = self.reqs.get_mut(id) {
            r.phase = Phase::Done(res);
        }
    }

    /// Turn a transport error on the path to communicator rank `rank` into the user error.
    pub(crate) fn tx_err(&self, e: TransportError, rank: u32) -> Error {
        match e {
            TransportError::PeerDead(_) => Error::ProcFailed { ranks: vec![rank] },
            e => Error::Transport(e),
        }
    }

    pub(crate) fn malformed(&mut self, peer: u32, what: &'static str) {
        self.stats.malformed += 1;
        self.stats.last_malformed = Some(Error::Malformed { peer, what });
    }
}
