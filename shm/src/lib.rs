//! `weft-shm`: the intra-node transport of weft.
//!
//! - **Eager messages** go through lock-free SPSC byte rings ([`ring`]) in shared memory.
//!   Each rank creates one anonymous inbound segment ([`segment`], a sealed `memfd`: no name,
//!   nothing to leak after a crash) holding one ring per other local peer; the peer imports it
//!   with `pidfd_open` + `pidfd_getfd` and maps the header pages and its own ring.
//! - **Large messages** (rendezvous) are read single-copy with `process_vm_readv` ([`cma`]).
//! - **Peer death** is seen in-band: each peer's pidfd ([`peer`]) becomes readable when the
//!   process exits; [`Transport::poll_failures`] polls them all at once.
//!
//! Construction has two phases around the runtime's modex: [`ShmTransport::create`] (make the
//! inbound segment), publish [`ShmTransport::card`], then [`ShmTransport::connect`] with every
//! other local peer's card.
//!
//! Hot paths: `try_send` = one dense-table lookup, one copy of header + payload into the ring,
//! the end marker after it, then its first word with a Release store; `poll` = per ring one
//! Acquire load of the word at the consumer's position (the message's own first word: one
//! cache line per small message), borrowed-slice delivery, one Release store of the consumer
//! index per batch. No allocation, no syscall, no lock.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod cma;
mod error;
pub mod peer;
pub mod ring;
pub mod segment;

use weft_engine::transport::{GetStatus, Header, RKey, Transport, TransportError};

use crate::peer::{OpenError, PidFd};
use crate::ring::{Consumer, Producer, MIN_RING_BYTES};
use crate::segment::{Inbound, Outbound};

/// Sizing of the shared-memory transport (the facade maps `WEFT_SHM_*` onto it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShmConfig {
    /// Bytes of inbound rings per rank, split among the other local peers (default 4 MiB).
    pub inbound_budget: usize,
    /// Smallest ring (default 16 KiB).
    pub ring_min: usize,
    /// Largest ring (default 512 KiB).
    pub ring_max: usize,
    /// Largest eager payload (default 16 KiB); also capped at a quarter of the smallest ring.
    pub eager_limit: usize,
    /// Smallest rendezvous message whose copy the receiver and the sender split between them
    /// (each copies half with cross-memory attach); `usize::MAX` never splits (default
    /// 256 KiB).
    pub split_limit: usize,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            inbound_budget: 4 << 20,
            ring_min: 16 << 10,
            ring_max: 512 << 10,
            eager_limit: 16 << 10,
            split_limit: 256 << 10,
        }
    }
}

impl ShmConfig {
    /// Data bytes of each inbound ring for `n_local` ranks on the node (me included):
    /// `clamp(inbound_budget / (n_local - 1), ring_min, ring_max)`, rounded down to a power
    /// of two (up if that falls below `ring_min`), never below one page.
    pub fn ring_bytes(&self, n_local: usize) -> usize {
        let per = self.inbound_budget / n_local.saturating_sub(1).max(1);
        let r = per.clamp(self.ring_min, self.ring_max.max(self.ring_min));
        let mut p =
            if r.is_power_of_two() { r } else { r.checked_next_power_of_two().unwrap_or(1 << 62) / 2 };
        if p < self.ring_min {
            p = self.ring_min.next_power_of_two();
        }
        p.clamp(MIN_RING_BYTES, 1 << 30)
    }

    /// Total inbound segment bytes one rank creates for `n_local` local ranks.
    pub fn segment_bytes(&self, n_local: usize) -> usize {
        let n = n_local.saturating_sub(1);
        segment::Layout::new(n, self.ring_bytes(n_local)).map_or(0, |l| l.seg_bytes)
    }
}

/// Card format version.
const CARD_VERSION: u32 = 1;
const CARD_MAGIC: u32 = u32::from_le_bytes(*b"WSHC");
/// Card length: magic, version, pid, memfd, ring_bytes, n_rings (u32 each), seg_bytes (u64).
pub const CARD_LEN: usize = 32;

/// Decoded business card.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Card {
    pid: u32,
    memfd: i32,
    ring_bytes: u32,
    n_rings: u32,
    seg_bytes: u64,
}

impl Card {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(CARD_LEN);
        v.extend_from_slice(&CARD_MAGIC.to_le_bytes());
        v.extend_from_slice(&CARD_VERSION.to_le_bytes());
        v.extend_from_slice(&self.pid.to_le_bytes());
        v.extend_from_slice(&self.memfd.to_le_bytes());
        v.extend_from_slice(&self.ring_bytes.to_le_bytes());
        v.extend_from_slice(&self.n_rings.to_le_bytes());
        v.extend_from_slice(&self.seg_bytes.to_le_bytes());
        v
    }

    fn decode(b: &[u8]) -> Result<Card, String> {
        if b.len() != CARD_LEN {
            return Err(format!("card is {} bytes, expected {CARD_LEN}", b.len()));
        }
        let u = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        if u(0) != CARD_MAGIC {
            return Err("not a weft-shm card (bad magic)".into());
        }
        if u(4) != CARD_VERSION {
            return Err(format!("card version {} (this build speaks {CARD_VERSION})", u(4)));
        }
        let c = Card {
            pid: u(8),
            memfd: u(12) as i32,
            ring_bytes: u(16),
            n_rings: u(20),
            seg_bytes: u64::from_le_bytes(b[24..32].try_into().unwrap()),
        };
        if c.pid == 0 || c.pid > i32::MAX as u32 || c.memfd < 0 {
            return Err(format!("bad pid {} or memfd {} in card", c.pid, c.memfd));
        }
        Ok(c)
    }
}

/// Send side of one peer (hot).
struct OutPeer {
    /// Producer end of our ring in the peer's segment; `None` until connected.
    prod: Option<Producer>,
    /// Peer known dead (pidfd hang-up, failed read, broken ring).
    dead: bool,
}

/// Receive side of one peer (hot).
struct InRing {
    cons: Consumer,
    rank: u32,
    /// Corrupt data seen: never read again.
    broken: bool,
}

/// Slow-path state of one peer.
struct PeerInfo {
    rank: u32,
    pid: u32,
    pidfd: Option<PidFd>,
    /// Mapping of our ring in the peer's segment (after `OutPeer::prod` in drop order: the
    /// transport's fields drop in declaration order, `out` first).
    map: Option<Outbound>,
    /// Failure already reported by `poll_failures`.
    reported: bool,
}

/// Shared-memory transport to the other ranks of this node.
pub struct ShmTransport {
    // Hot fields first.
    out: Vec<OutPeer>,
    inq: Vec<InRing>,
    next_ring: usize,
    /// World rank → slot (`u16::MAX`: not a peer), offset by `rank_base`; empty if the local
    /// ranks span too wide a range, then `others` is binary-searched.
    dense: Vec<u16>,
    rank_base: u32,
    send_limit: usize,
    eager_limit: usize,
    // Slow-path state.
    my_rank: u32,
    cfg: ShmConfig,
    /// Local peers other than me, increasing; slot i ↔ others[i].
    others: Vec<u32>,
    info: Vec<PeerInfo>,
    /// One entry per slot; fd = -1 when not connected or already reported.
    pollfds: Vec<libc::pollfd>,
    /// Slots found failed (dead or broken ring) and not yet reported.
    pending: Vec<usize>,
    /// Declared last: dropped (unmapped) after the consumers that point into it.
    inbound: Inbound,
}

const DENSE_MAX_SPAN: usize = 1 << 21;

impl ShmTransport {
    /// Phase 1: create this rank's inbound segment for `local_peers` (world ranks on this node,
    /// me included, strictly increasing).
    pub fn create(
        my_rank: u32,
        local_peers: &[u32],
        cfg: &ShmConfig,
    ) -> Result<ShmTransport, TransportError> {
        if !local_peers.windows(2).all(|w| w[0] < w[1]) {
            return Err(TransportError::Invalid("local peers must be strictly increasing".into()));
        }
        if local_peers.binary_search(&my_rank).is_err() {
            return Err(TransportError::Invalid(format!("rank {my_rank} is not in its own local peer list")));
        }
        if local_peers.len() > u16::MAX as usize {
            return Err(TransportError::Invalid("too many local peers".into()));
        }
        if cfg.ring_min > cfg.ring_max || cfg.inbound_budget == 0 {
            return Err(TransportError::Invalid(format!("bad shm config {cfg:?}")));
        }
        let others: Vec<u32> = local_peers.iter().copied().filter(|r| *r != my_rank).collect();
        let n = others.len();
        let ring_bytes = cfg.ring_bytes(local_peers.len());
        peer::allow_ptrace_any();
        let inbound = Inbound::create(my_rank, &others, ring_bytes)?;
        let inq = (0..n)
            .map(|i| InRing {
                // SAFETY: ctrl(i)/data(i) point into `inbound`'s mapping, which lives as long as
                // the transport and is dropped after `inq` (field order); ring_bytes is a power
                // of two ≥ one page (Layout checked it); we are the only consumer of our rings.
                cons: unsafe { Consumer::new(inbound.ctrl(i), inbound.data(i), ring_bytes) },
                rank: others[i],
                broken: false,
            })
            .collect();
        let (rank_base, dense) = match (others.first(), others.last()) {
            (Some(&lo), Some(&hi)) if ((hi - lo) as usize) < DENSE_MAX_SPAN => {
                let mut d = vec![u16::MAX; (hi - lo) as usize + 1];
                for (i, r) in others.iter().enumerate() {
                    d[(r - lo) as usize] = i as u16;
                }
                (lo, d)
            }
            _ => (0, Vec::new()),
        };
        let eager_limit = cfg.eager_limit.min(ring_bytes / 4);
        Ok(ShmTransport {
            out: (0..n).map(|_| OutPeer { prod: None, dead: false }).collect(),
            inq,
            next_ring: 0,
            dense,
            rank_base,
            send_limit: eager_limit.max(64),
            eager_limit,
            my_rank,
            cfg: cfg.clone(),
            info: others
                .iter()
                .map(|&rank| PeerInfo { rank, pid: 0, pidfd: None, map: None, reported: false })
                .collect(),
            pollfds: vec![libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; n],
            pending: Vec::new(),
            others,
            inbound,
        })
    }

    /// This rank's business card, to publish in the modex (32 bytes, see [`CARD_LEN`]).
    pub fn card(&self) -> Vec<u8> {
        let l = &self.inbound.layout;
        Card {
            pid: std::process::id(),
            memfd: self.inbound.raw_fd(),
            ring_bytes: l.ring_bytes as u32,
            n_rings: l.n_rings as u32,
            seg_bytes: l.seg_bytes as u64,
        }
        .encode()
    }

    /// Phase 2: map every other local peer's segment from its card (`(world rank, card)`;
    /// this rank's own card may be included and is skipped). Peers already connected are
    /// skipped, so it may be called again with more cards.
    ///
    /// Malformed or mismatching cards give `Invalid`. Peers that died before they could be
    /// mapped are marked dead (and reported once by `poll_failures`); the others are still
    /// connected, and the call then returns `PeerDead` naming the first dead one.
    pub fn connect(&mut self, cards: &[(u32, Vec<u8>)]) -> Result<(), TransportError> {
        let mut first_dead = None;
        for (rank, bytes) in cards {
            let rank = *rank;
            if rank == self.my_rank {
                continue;
            }
            let slot = self
                .slot_of(rank)
                .ok_or_else(|| TransportError::Invalid(format!("card from rank {rank}, not a local peer")))?;
            if self.out[slot].prod.is_some() || self.out[slot].dead {
                continue;
            }
            let card = Card::decode(bytes)
                .map_err(|e| TransportError::Invalid(format!("card of rank {rank}: {e}")))?;
            if card.n_rings as usize != self.others.len() {
                return Err(TransportError::Invalid(format!(
                    "rank {rank} has {} rings, expected {}: local peer lists differ",
                    card.n_rings,
                    self.others.len()
                )));
            }
            // Our ring in the peer's segment: our index among its other local peers.
            let my_slot = self.others.iter().filter(|&&r| r < self.my_rank && r != rank).count();
            match self.connect_one(slot, rank, &card, my_slot) {
                Ok(()) => {}
                Err(OpenError::Gone) => {
                    self.mark_failed(slot);
                    first_dead.get_or_insert(rank);
                }
                Err(OpenError::Other(e)) => return Err(e),
            }
        }
        match first_dead {
            Some(r) => Err(TransportError::PeerDead(r)),
            None => Ok(()),
        }
    }

    fn connect_one(&mut self, slot: usize, rank: u32, card: &Card, my_slot: usize) -> Result<(), OpenError> {
        let pidfd = PidFd::open(card.pid)?;
        let fd = pidfd.get_fd(card.memfd)?;
        let map = Outbound::map(
            &fd,
            rank,
            card.pid,
            card.n_rings as usize,
            card.ring_bytes as usize,
            my_slot,
            self.my_rank,
        )
        .map_err(|e| {
            // A dead peer whose pid was reused shows up as a mismatching segment.
            if pidfd.has_exited() {
                OpenError::Gone
            } else {
                OpenError::Other(e)
            }
        })?;
        if (card.seg_bytes as usize)
            != segment::Layout::new(card.n_rings as usize, card.ring_bytes as usize)
                .map_or(0, |l| l.seg_bytes)
        {
            return Err(OpenError::Other(TransportError::Invalid(format!(
                "card of rank {rank}: inconsistent segment size"
            ))));
        }
        drop(fd); // the mapping keeps the memory alive
                  // SAFETY: ctrl/data point into `map`, which is stored in info[slot] and outlives the
                  // producer (out is dropped before info, and prod is never moved out of out[slot]);
                  // ring_bytes is a power of two ≥ one page (Layout validated it); the segment header
                  // names us as the producer of this ring, so we are its only producer.
        let prod = unsafe { Producer::new(map.ctrl(), map.data(), map.ring_bytes) };
        self.eager_limit = self.eager_limit.min(map.ring_bytes / 4);
        self.send_limit = self.eager_limit.max(64);
        self.pollfds[slot].fd = pidfd.raw();
        let info = &mut self.info[slot];
        info.pid = card.pid;
        info.pidfd = Some(pidfd);
        info.map = Some(map);
        self.out[slot].prod = Some(prod);
        Ok(())
    }

    /// Slot of a world rank (index into `others`).
    #[inline(always)]
    fn slot_of(&self, rank: u32) -> Option<usize> {
        if !self.dense.is_empty() {
            let s = *self.dense.get(rank.wrapping_sub(self.rank_base) as usize)?;
            (s != u16::MAX).then_some(s as usize)
        } else {
            self.others.binary_search(&rank).ok()
        }
    }

    /// Mark a peer failed: no more sends, report once.
    fn mark_failed(&mut self, slot: usize) {
        self.out[slot].dead = true;
        if !self.info[slot].reported {
            self.info[slot].reported = true;
            self.pollfds[slot].fd = -1;
            self.pending.push(slot);
        }
    }

    /// Whether the peer's pidfd says it exited.
    /// Check a cross-memory access of `len` bytes to `peer`'s exposure `key`: the peer's
    /// slot, pid and the exposure's address.
    fn cma_target(&self, peer: u32, key: &RKey, len: usize) -> Result<(usize, u32, u64), TransportError> {
        let slot = self
            .slot_of(peer)
            .ok_or_else(|| TransportError::Invalid(format!("rank {peer} is not a local peer")))?;
        if self.out[slot].dead {
            return Err(TransportError::PeerDead(peer));
        }
        let (addr, klen) =
            cma::parse_key(key).ok_or_else(|| TransportError::Invalid("not a shm rkey".into()))?;
        if len as u64 > klen {
            return Err(TransportError::Invalid(format!("access of {len} bytes to an exposure of {klen}")));
        }
        let pid = self.info[slot].pid;
        if pid == 0 {
            return Err(TransportError::Invalid(format!("rank {peer} is not connected")));
        }
        Ok((slot, pid, addr))
    }

    /// The outcome of a cross-memory access to `peer` (`call` failed with errno `r`). The pid
    /// names the peer only while it has not exited: if its pidfd is readable now, the pid may
    /// have been reused during the access, so the data is not trusted.
    fn cma_result(
        &mut self,
        peer: u32,
        slot: usize,
        r: Result<(), i32>,
        call: &'static str,
    ) -> Result<(), TransportError> {
        if self.peer_exited(slot) {
            self.mark_failed(slot);
            return Err(TransportError::PeerDead(peer));
        }
        r.map_err(|e| TransportError::Call { call, msg: std::io::Error::from_raw_os_error(e).to_string() })
    }

    fn peer_exited(&self, slot: usize) -> bool {
        self.info[slot].pidfd.as_ref().is_some_and(|p| p.has_exited())
    }

    /// World ranks of the other local peers.
    pub fn local_peers(&self) -> &[u32] {
        &self.others
    }

    /// Data bytes of each of this rank's inbound rings.
    pub fn ring_bytes(&self) -> usize {
        self.inbound.layout.ring_bytes
    }

    /// Bytes of this rank's inbound segment.
    pub fn segment_bytes(&self) -> usize {
        self.inbound.layout.seg_bytes
    }

    /// Whether `peer` has been connected.
    pub fn is_connected(&self, peer: u32) -> bool {
        self.slot_of(peer).is_some_and(|s| self.out[s].prod.is_some())
    }

    /// The configuration this transport was created with.
    pub fn config(&self) -> &ShmConfig {
        &self.cfg
    }
}

impl Transport for ShmTransport {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn eager_limit(&self) -> usize {
        self.eager_limit
    }

    fn split_limit(&self) -> usize {
        self.cfg.split_limit
    }

    #[inline]
    fn try_send(&mut self, peer: u32, hdr: &Header, payload: &[u8]) -> Result<bool, TransportError> {
        let Some(slot) = self.slot_of(peer) else {
            return Err(TransportError::Invalid(format!(
                "rank {peer} is not a local peer of rank {}",
                self.my_rank
            )));
        };
        if payload.len() > self.send_limit {
            return Err(TransportError::Invalid(format!(
                "payload of {} bytes exceeds the shm eager limit {}",
                payload.len(),
                self.eager_limit
            )));
        }
        let o = &mut self.out[slot];
        if o.dead {
            return Err(TransportError::PeerDead(peer));
        }
        match &mut o.prod {
            Some(p) => Ok(p.try_push(hdr, payload)),
            None => Err(TransportError::Invalid(format!("rank {peer} is not connected"))),
        }
    }

    #[inline]
    fn poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        self.poll_until(budget, &mut |r, h, p| {
            sink(r, h, p);
            false
        })
    }

    fn poll_until(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8]) -> bool) -> usize {
        let n = self.inq.len();
        if n == 0 || budget == 0 {
            return 0;
        }
        let mut done = 0;
        let mut i = self.next_ring;
        for _ in 0..n {
            let r = &mut self.inq[i];
            if !r.broken {
                let rank = r.rank;
                let mut stop = false;
                let (k, res) = r.cons.drain_until(budget - done, |h, p| {
                    stop = sink(rank, h, p);
                    stop
                });
                if k > 0 {
                    done += k;
                    self.next_ring = if i + 1 == n { 0 } else { i + 1 };
                }
                if res.is_err() {
                    r.broken = true;
                    self.mark_failed(i);
                }
                if done >= budget || stop {
                    break;
                }
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        done
    }

    fn expose(&mut self, peer: u32, addr: *const u8, len: usize) -> Result<RKey, TransportError> {
        if self.slot_of(peer).is_none() {
            return Err(TransportError::Invalid(format!("rank {peer} is not a local peer")));
        }
        Ok(cma::make_key(addr as u64, len as u64))
    }

    fn unexpose(&mut self, _peer: u32, _key: &RKey) {}

    unsafe fn get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError> {
        let (slot, pid, addr) = self.cma_target(peer, key, len)?;
        // SAFETY: dst is valid for len bytes and exclusively ours until we return (the
        // caller's contract of Transport::get).
        let r = unsafe { cma::read_remote(pid, addr, dst, len) };
        self.cma_result(peer, slot, r, "process_vm_readv").map(|()| GetStatus::Done)
    }

    unsafe fn put(
        &mut self,
        peer: u32,
        key: &RKey,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let (slot, pid, addr) = self.cma_target(peer, key, len)?;
        // SAFETY: src is valid for reads of len bytes during the call (the caller's contract
        // of Transport::put).
        let r = unsafe { cma::write_remote(pid, addr, src, len) };
        self.cma_result(peer, slot, r, "process_vm_writev")
    }

    fn poll_failures(&mut self, out: &mut Vec<u32>) {
        let mut hit = Vec::new();
        peer::poll_exited(&mut self.pollfds, &mut hit);
        for slot in hit {
            self.mark_failed(slot);
        }
        for slot in self.pending.drain(..) {
            out.push(self.info[slot].rank);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn ring_sizing() {
        let c = ShmConfig::default();
        assert_eq!(c.ring_bytes(2), 512 << 10);
        assert_eq!(c.ring_bytes(16), 256 << 10);
        assert_eq!(c.ring_bytes(128), 32 << 10);
        assert_eq!(c.ring_bytes(1024), 16 << 10);
        assert!(c.segment_bytes(128) <= (4 << 20) + (64 << 10));
        assert_eq!(c.segment_bytes(1), 4096);
    }

    #[test]
    fn card_roundtrip_and_malformed() {
        let t = ShmTransport::create(0, &[0, 1], &ShmConfig::default()).unwrap();
        let c = Card::decode(&t.card()).unwrap();
        assert_eq!(c.pid, std::process::id());
        assert_eq!(c.ring_bytes, 512 << 10);
        assert!(Card::decode(&[]).is_err());
        assert!(Card::decode(&[0; 32]).is_err());
        let mut bad = t.card();
        bad[4] = 9;
        assert!(Card::decode(&bad).is_err());
    }

    #[test]
    fn bad_construction_input() {
        let c = ShmConfig::default();
        assert!(ShmTransport::create(0, &[1, 0], &c).is_err());
        assert!(ShmTransport::create(5, &[0, 1], &c).is_err());
        let t = ShmTransport::create(0, &[0], &c).unwrap();
        assert_eq!(t.local_peers(), &[] as &[u32]);
    }

    /// Two transports in one process (ranks 0 and 1) talk through each other's segments.
    #[test]
    fn in_process_pair() {
        let cfg = ShmConfig::default();
        let mut a = ShmTransport::create(0, &[0, 1], &cfg).unwrap();
        let mut b = ShmTransport::create(1, &[0, 1], &cfg).unwrap();
        let cards = vec![(0, a.card()), (1, b.card())];
        a.connect(&cards).unwrap();
        b.connect(&cards).unwrap();
        assert_eq!(a.eager_limit(), 16 << 10);
        let h = Header { class: 1, tag: 42, len: 5, ..Header::default() };
        assert_eq!(a.try_send(1, &h, b"hello"), Ok(true));
        let mut got = Vec::new();
        let n = b.poll(16, &mut |src, h, p| got.push((src, *h, p.to_vec())));
        assert_eq!(n, 1);
        assert_eq!(got, vec![(0, h, b"hello".to_vec())]);
        assert!(matches!(a.try_send(1, &h, &vec![0; (16 << 10) + 1]), Err(TransportError::Invalid(_))));
        assert!(matches!(a.try_send(7, &h, b""), Err(TransportError::Invalid(_))));
        assert!(matches!(a.try_send(0, &h, b""), Err(TransportError::Invalid(_))));
        // Bad cards: typed errors.
        let mut c = ShmTransport::create(0, &[0, 1], &cfg).unwrap();
        assert!(matches!(c.connect(&[(1, vec![1, 2, 3])]), Err(TransportError::Invalid(_))));
        assert!(matches!(c.connect(&[(9, b.card())]), Err(TransportError::Invalid(_))));
        // CMA get of own memory through the peer's pid (same process here).
        let src: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
        let key = b.expose(0, src.as_ptr(), src.len()).unwrap();
        let mut dst = vec![0u8; src.len()];
        // SAFETY: dst is a live exclusive buffer of that length.
        let st = unsafe { a.get(1, &key, dst.as_mut_ptr(), dst.len()) };
        assert_eq!(st, Ok(GetStatus::Done));
        assert_eq!(src, dst);
        // SAFETY: as above.
        let too_long = unsafe { a.get(1, &key, dst.as_mut_ptr(), dst.len() + 1) };
        assert!(matches!(too_long, Err(TransportError::Invalid(_))));
        let mut f = Vec::new();
        a.poll_failures(&mut f);
        assert!(f.is_empty());
    }

    #[test]
    fn transport_is_send() {
        fn is_send<T: Send>() {}
        is_send::<ShmTransport>();
    }

    /// A corrupt record length in a ring: no out-of-bounds read, no panic; the producer is
    /// reported failed once and the ring is not read again.
    #[test]
    fn corrupt_ring_reports_producer() {
        let cfg = ShmConfig::default();
        let mut a = ShmTransport::create(0, &[0, 1], &cfg).unwrap();
        let mut b = ShmTransport::create(1, &[0, 1], &cfg).unwrap();
        let cards = vec![(0, a.card()), (1, b.card())];
        a.connect(&cards).unwrap();
        b.connect(&cards).unwrap();
        let h = Header::default();
        assert_eq!(a.try_send(1, &h, &[1; 16]), Ok(true));
        assert_eq!(a.try_send(1, &h, &[2; 16]), Ok(true));
        // Second record starts at 64: claim 1 GiB with a valid check word.
        let bad: u32 = 1 << 30;
        let word = (bad as u64) | ((!bad as u64) << 32);
        // SAFETY: offset 64 is inside ring 0's data area of b's own mapping, 8-aligned; the
        // producer (a) is idle, so nothing writes it concurrently.
        unsafe { (b.inbound.data(0).add(64) as *mut u64).write(word) };
        let mut n = 0;
        assert_eq!(
            b.poll(16, &mut |_, _, p| {
                assert_eq!(p, &[1; 16]);
                n += 1
            }),
            1
        );
        assert_eq!(n, 1);
        let mut f = Vec::new();
        b.poll_failures(&mut f);
        assert_eq!(f, vec![0]);
        assert_eq!(b.poll(16, &mut |_, _, _| panic!("broken ring read again")), 0);
        f.clear();
        b.poll_failures(&mut f);
        assert!(f.is_empty());
        assert_eq!(b.try_send(0, &h, b""), Err(TransportError::PeerDead(0)));
    }
}
