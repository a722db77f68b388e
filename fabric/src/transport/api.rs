//! `impl Transport for OfiTransport`: the engine's entry points. Each method hands over to
//! the one file that owns its concern (`eager.rs`, `rndv.rs`, `completion.rs`); the bodies
//! they call are `#[inline]`, so this adds no call on the data path.

use weft_engine::transport::{GetStatus, Header, RKey, Transport, TransportError};

use super::state::OfiTransport;

impl Transport for OfiTransport {
    fn name(&self) -> &'static str {
        "ofi"
    }

    fn eager_limit(&self) -> usize {
        self.eager
    }

    fn try_send(&mut self, peer: u32, hdr: &Header, payload: &[u8]) -> Result<bool, TransportError> {
        self.eager_send(peer, hdr, payload)
    }

    fn poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        self.eager_poll(budget, sink)
    }

    fn expose(&mut self, peer: u32, addr: *const u8, len: usize) -> Result<RKey, TransportError> {
        self.rndv_expose(peer, addr, len)
    }

    fn unexpose(&mut self, _peer: u32, key: &RKey) {
        self.rndv_unexpose(key)
    }

    unsafe fn get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError> {
        // SAFETY: the caller's contract (`Transport::get`) is `rndv_get`'s.
        unsafe { self.rndv_get(peer, key, dst, len) }
    }

    fn poll_gets(&mut self, done: &mut Vec<(u64, Result<(), TransportError>)>) {
        self.rndv_poll_gets(done)
    }

    fn poll_failures(&mut self, out: &mut Vec<u32>) {
        self.drain_cq();
        out.append(&mut self.newly_dead);
    }
}
