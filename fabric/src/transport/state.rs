//! The transport's data, below all of its behaviour: the [`OfiTransport`] struct (the
//! libfabric objects, the buffers and contexts posted operations point into, per-peer and
//! per-get state), the operation contexts and slot states, [`OfiStats`], and the read-only
//! accessors. Imports no other file of the transport; the behaviour files read and write the
//! fields (`pub(super)`: visible in `transport/` only).

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::rc::Rc;

use weft_engine::transport::TransportError;
use weft_fabric_sys as sys;

use crate::attr::MrMode;
use crate::av::Av;
use crate::cq::Cq;
use crate::domain::Domain;
use crate::ep::Endpoint;
use crate::fabric::Fabric;
use crate::info::Info;
use crate::mr::Mr;
use crate::rcache::{RCache, RCacheStats, RegId};

/// Counters, for tests and diagnostics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OfiStats {
    /// Messages sent with `fi_tinject`.
    pub injects: u64,
    /// Messages sent from the send pool with `fi_tsend`.
    pub pool_sends: u64,
    /// Bytes copied on the send side (header + payload into the inject or pool buffer).
    pub bytes_copied: u64,
    /// `try_send` calls answered `Ok(false)`.
    pub send_busy: u64,
    /// Messages delivered to the engine.
    pub delivered: u64,
    /// Received messages dropped as malformed (too short, unknown sender, receive error).
    pub malformed: u64,
    /// `fi_read` operations posted.
    pub reads_posted: u64,
    /// Bytes requested by `get`.
    pub read_bytes: u64,
    /// `expose` calls.
    pub exposes: u64,
    /// `(address, length)` of the region registered by the last `expose`.
    pub last_expose: (usize, usize),
    /// CQ error entries seen.
    pub cq_errors: u64,
    /// Text of the last CQ error entry.
    pub last_cq_error: Option<String>,
    /// Wire-up messages accepted by the provider.
    pub wireup_sent: u64,
    /// Wire-up messages received from peers (dropped).
    pub wireup_received: u64,
}

pub(super) const KIND_RX: u32 = 1;
pub(super) const KIND_TX: u32 = 2;
pub(super) const KIND_RD: u32 = 3;

/// Per-operation context: the provider may use the `fi_context2` (FI_CONTEXT/FI_CONTEXT2
/// modes), so it comes first; our tag follows.
#[repr(C)]
pub(super) struct OpCtx {
    pub(super) fi: sys::fi_context2,
    pub(super) kind: u32,
    pub(super) idx: u32,
}

impl OpCtx {
    pub(super) fn new(kind: u32, idx: u32) -> OpCtx {
        OpCtx { fi: sys::fi_context2::default(), kind, idx }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum RxState {
    /// Posted, no completion yet.
    Posted,
    /// Received `len` bytes with `tag`.
    Done { len: usize, tag: u64 },
    /// Completed with an error: drop and repost.
    Failed,
    /// Not posted (posting failed with EAGAIN): retried by `poll`.
    Unposted,
}

/// Per-peer data.
pub(super) struct Peer {
    pub(super) addr: Option<sys::fi_addr_t>,
    pub(super) dead: bool,
}

/// A `get` in progress: possibly several reads.
pub(super) struct Get {
    pub(super) peer: u32,
    pub(super) dst: *mut u8,
    pub(super) len: usize,
    /// Bytes already posted.
    pub(super) next: usize,
    pub(super) remote: u64,
    pub(super) key: u64,
    pub(super) desc: *mut c_void,
    /// Local registration of `dst` (FI_MR_LOCAL), released at completion.
    pub(super) local: Option<RegId>,
    pub(super) outstanding: u32,
    pub(super) err: Option<TransportError>,
}

/// The libfabric network transport.
///
/// Field order is teardown order: the endpoint goes first (closing it cancels everything
/// posted), registrations next (with `FI_MR_ENDPOINT` each holds the endpoint, which then
/// closes after the last of them), then AV, CQ, domain, fabric; the memory that posted
/// operations point into (buffers and contexts) is freed only after all of them.
pub struct OfiTransport {
    pub(super) ep: Rc<Endpoint>,
    pub(super) rcache: RCache<Mr>,
    pub(super) tx_mr: Option<Mr>,
    pub(super) rx_mr: Option<Mr>,
    pub(super) _av: Rc<Av>,
    pub(super) cq: Rc<Cq>,
    pub(super) domain: Rc<Domain>,
    pub(super) _fabric: Rc<Fabric>,
    pub(super) _info: Info,
    // --- memory referenced by posted operations
    pub(super) tx_buf: Box<[u8]>,
    pub(super) rx_buf: Box<[u8]>,
    pub(super) tx_ctx: Box<[OpCtx]>,
    pub(super) rx_ctx: Box<[OpCtx]>,
    // Boxed: a read's context must keep its address while the Vec grows.
    #[allow(clippy::vec_box)]
    pub(super) rd_ctx: Vec<Box<OpCtx>>,
    // --- state
    pub(super) av_raw: Rc<Av>,
    pub(super) me: u32,
    pub(super) nprocs: u32,
    pub(super) provider: String,
    pub(super) domain_name: String,
    pub(super) addr_format: u32,
    pub(super) name: Vec<u8>,
    pub(super) address: Vec<u8>,
    pub(super) mode: MrMode,
    pub(super) next_mr_key: u64,
    pub(super) eager: usize,
    pub(super) stride: usize,
    pub(super) inject: usize,
    pub(super) read_chunk: usize,
    pub(super) peers: Vec<Peer>,
    pub(super) tx_free: Vec<u32>,
    pub(super) tx_peer: Vec<u32>,
    pub(super) rx_state: Vec<RxState>,
    /// Receive slots in the order they were posted.
    pub(super) rx_order: VecDeque<u32>,
    pub(super) rx_unposted: Vec<u32>,
    /// Read slot → owning get token (`None`: free, or orphaned until the provider returns it).
    pub(super) rd_owner: Vec<Option<u64>>,
    pub(super) rd_free: Vec<u32>,
    pub(super) gets: HashMap<u64, Get>,
    pub(super) gets_done: Vec<(u64, Result<(), TransportError>)>,
    pub(super) next_token: u64,
    /// MR key → cache entry of exposures not yet withdrawn.
    pub(super) exposed: HashMap<u64, RegId>,
    pub(super) newly_dead: Vec<u32>,
    /// The provider connects lazily: `connect` queues wire-up messages.
    pub(super) lazy_connections: bool,
    /// Peers whose wire-up message the provider has not accepted yet.
    pub(super) wireup: Vec<u32>,
    pub(super) stats: OfiStats,
}

// SAFETY: the transport owns every handle to its libfabric objects (the Rcs never leave it)
// and the domain is opened with FI_THREAD_DOMAIN, under which any one thread at a time may use
// it. Moving the whole transport to another thread moves all of them together; it is not
// Sync, so two threads never use it at once.
unsafe impl Send for OfiTransport {}

/// Size of the on-stack buffer for `fi_tinject`.
pub(super) const INJECT_BUF: usize = 256;

impl OfiTransport {
    /// Name of the provider in use (e.g. `tcp;ofi_rxm`).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Name of the domain in use (e.g. `lo`).
    pub fn domain(&self) -> &str {
        &self.domain_name
    }

    /// Largest message sent with `fi_tinject`.
    pub fn inject_size(&self) -> usize {
        self.inject
    }

    /// Memory-registration mode in use.
    pub fn mr_mode(&self) -> MrMode {
        self.mode
    }

    /// Largest single read (`get`s above it are split).
    pub fn read_chunk(&self) -> usize {
        self.read_chunk
    }

    /// Counters.
    pub fn stats(&self) -> &OfiStats {
        &self.stats
    }

    /// Registration-cache counters and current size.
    pub fn rcache_stats(&self) -> (RCacheStats, usize) {
        (self.rcache.stats(), self.rcache.len())
    }

    /// How the registration cache learns of unmapped memory (`off`, `monitor`, `unavailable`).
    pub fn rcache_invalidation(&self) -> &'static str {
        self.rcache.invalidation().name()
    }

    /// True if `(addr, len)` is currently registered in the cache.
    pub fn is_registered(&self, addr: *const u8, len: usize) -> bool {
        self.rcache.get(addr as usize, len).is_some()
    }
}
