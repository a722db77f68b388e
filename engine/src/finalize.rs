//! Finalize: the goodbye handshake that lets a process leave without losing data a transport
//! still holds. Each peer gets a BYE behind our data; a peer that has not said goodbye itself
//! answers with BYE_ACK. A peer that said goodbye is marked departed, so its exit is not
//! taken for a failure.

use std::time::{Duration, Instant};

use crate::engine::Core;
use crate::pending::{Body, Outgoing, RTS_BODY};
use crate::transport::{class, Header};
use crate::Engine;

/// Longest `finalize` waits for its peers to confirm its goodbye.
const FINALIZE_WAIT: Duration = Duration::from_secs(10);

impl Engine {
    /// Leave the job cleanly. Every peer reachable through a transport gets a goodbye, queued
    /// behind our data (per-peer FIFO), and we wait until each has confirmed it — with an
    /// acknowledgement or a goodbye of its own — or is known failed. A transport may still
    /// hold data it has accepted (libfabric's manual progress), so without this wait a fast
    /// rank could exit before its last messages left. Bounded by `FINALIZE_WAIT` (10 s).
    pub(crate) fn finalize(&mut self) {
        let deadline = Instant::now() + FINALIZE_WAIT;
        let hdr = Header { class: class::BYE, ..Header::default() };
        let mut waiting = Vec::new();
        for w in 0..self.core.route.len() as u32 {
            let t = self.core.route[w as usize] as usize;
            if t >= self.transports.len() || self.core.failed.is_failed(w) || self.core.failed.departed(w) {
                continue;
            }
            self.core.bye_sent[w as usize] = true;
            self.send_or_queue(t, w, Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None });
            waiting.push(w);
        }
        let mut spins = 0u32;
        loop {
            let core = &self.core;
            waiting.retain(|&w| !core.confirmed[w as usize] && !core.failed.is_failed(w));
            if waiting.is_empty() {
                break;
            }
            self.progress();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::yield_now();
            }
        }
    }

    /// Acknowledge the goodbyes of peers we have not said goodbye to.
    pub(crate) fn send_bye_acks(&mut self) {
        let hdr = Header { class: class::BYE_ACK, ..Header::default() };
        for w in std::mem::take(&mut self.core.acks_to_send) {
            let t = self.core.route[w as usize] as usize;
            if t < self.transports.len() {
                self.send_or_queue(
                    t,
                    w,
                    Outgoing { hdr, body: Body::Inline([0; RTS_BODY], 0), complete: None },
                );
            }
        }
    }
}

impl Core {
    /// A peer said goodbye: it finalized (its exit is no failure) and has everything we sent.
    #[inline]
    pub(crate) fn on_bye(&mut self, peer: u32) {
        self.failed.depart(peer);
        self.confirmed[peer as usize] = true;
        // Our own goodbye already tells it we have everything it sent.
        if !self.bye_sent[peer as usize] {
            self.acks_to_send.push(peer);
            self.aux = true;
        }
    }
}
