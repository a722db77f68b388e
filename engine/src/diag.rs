//! [`Diagnostics`]: read-only counters and descriptions for tests, `weft-info` and hang
//! reports — the transport of each route, transport names, [`Stats`], live requests, queued
//! sends, and a dump of the matching queues and requests.

use std::fmt::Write;

use crate::engine::ROUTE_SELF;
use crate::matching::Arrived;
use crate::stats::Stats;
use crate::Engine;

/// The engine's diagnostics; a read-only view of the [`Engine`].
#[repr(transparent)]
pub struct Diagnostics(Engine);

// SAFETY: `repr(transparent)` over `Engine`.
unsafe impl crate::engine::View for Diagnostics {}

impl Diagnostics {
    /// The diagnostics of `e`.
    #[inline(always)]
    pub fn of(e: &Engine) -> &Diagnostics {
        e.view_ref()
    }

    /// Name of the transport that carries traffic to world rank `peer` ("self", "none", ...).
    pub fn route_name(&self, peer: u32) -> &'static str {
        let e = &self.0;
        match e.core.route.get(peer as usize) {
            Some(&ROUTE_SELF) => "self",
            Some(&r) if (r as usize) < e.transports.len() => e.transports[r as usize].name(),
            _ => "none",
        }
    }

    /// Name of each transport, by index (the index used in [`Stats::sent_by_transport`]).
    pub fn transport_names(&self) -> Vec<&'static str> {
        self.0.transports.iter().map(|t| t.name()).collect()
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.0.core.stats
    }

    /// Number of requests not yet completed by test/wait.
    pub fn live_requests(&self) -> usize {
        self.0.core.reqs.live()
    }

    /// Messages waiting in per-destination queues for transport space.
    pub fn pending_sends(&self) -> usize {
        self.0.core.n_pending
    }

    /// A human-readable dump of queues and requests, for diagnosing hangs.
    pub fn debug_state(&self) -> String {
        let core = &self.0.core;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "rank {}: {} live requests, {} queued sends",
            core.me,
            core.reqs.live(),
            core.n_pending
        );
        for (ctx, qs) in core.q.iter().enumerate() {
            if qs.posted.is_empty() && qs.unexpected.is_empty() {
                continue;
            }
            let posted: Vec<_> = qs.posted.iter().map(|p| (p.src(), p.tag())).collect();
            let unexp: Vec<_> = qs
                .unexpected
                .iter()
                .map(|u| (u.src, u.tag, u.data.len(), matches!(u.data, Arrived::Rts { .. })))
                .collect();
            let _ = writeln!(
                out,
                "  ctx {ctx}: posted (src,tag) {posted:?}; unexpected (src,tag,len,rts) {unexp:?}"
            );
        }
        core.reqs.for_each(|id, r| {
            let _ = writeln!(
                out,
                "  req {id:?}: send={} peer={} tag={} phase={:?}",
                r.is_send, r.peer, r.tag, r.phase
            );
        });
        out
    }
}
