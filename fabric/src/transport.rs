//! [`OfiTransport`]: the engine's [`Transport`] over a libfabric reliable-datagram endpoint.
//!
//! - **Eager messages**: libfabric is a FIFO byte pipe here (the engine matches tags in
//!   software). Each message is one tagged send of `[Header][payload]` whose 64-bit tag is
//!   the sender's world rank, so the receiver learns the source from the completion without
//!   `FI_SOURCE` or an address lookup. Up to `inject_size` bytes go by `fi_tinject` (no
//!   completion); larger ones — and small ones the provider refuses to inject — are copied
//!   into a buffer of a pre-registered send pool and sent with `fi_tsend`, the completion
//!   returns the buffer. `try_send` answers `Ok(false)` on
//!   `-FI_EAGAIN` or an empty pool (after reading the CQ once).
//! - **Receives**: a ring of `rx_buffers` pre-posted buffers of `eager_limit + 24` bytes, each
//!   matching any tag. Completions are delivered in the order the buffers were posted (the
//!   order in which messages matched them), so per-peer FIFO holds even if a provider reports
//!   a long message's completion after a later short one.
//! - **Rendezvous**: `expose` registers the user's buffer (through the [`RCache`]) for
//!   `FI_REMOTE_READ` and describes it in the RKey; `get` posts `fi_read`s straight into the
//!   destination (split at `max_msg_size` or `read_chunk`), reported by `poll_gets`.
//!   Nothing is staged: the user's buffer is the registered region.
//! - **Failures**: a CQ error entry on a send, or a connection-loss error on a read, marks the
//!   peer dead; its reads in flight complete at once with `PeerDead` through `poll_gets`, and
//!   `poll_failures` reports it once.
//! - **Wire-up**: providers that connect lazily under `FI_EP_RDM` (`ofi_rxm`, the RDM-native
//!   `tcp`/`net`) cannot report a peer that died before the first connection to it: every send
//!   starts a connection attempt, the attempt is refused, and the send returns `-FI_EAGAIN`, with
//!   no error completion, for as long as one retries (1.17 and 2.5.1 alike). So `connect` queues
//!   one zero-byte message (tag [`WIREUP_TAG`]) to every new peer, and `poll` sends them as the
//!   send pool allows, until the provider has accepted one per peer: from then on the connection
//!   exists and its loss is reported as an error completion. The receiver drops these messages.

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;

use weft_engine::transport::{GetStatus, Header, RKey, Transport, TransportError};
use weft_fabric_sys as sys;

use crate::attr::MrMode;
use crate::av::Av;
use crate::cq::Cq;
use crate::data::CqEntry;
use crate::domain::Domain;
use crate::ep::Endpoint;
use crate::error::{is_connection_loss, strerror, FabricError};
use crate::fabric::Fabric;
use crate::info::{self, Info};
use crate::mr::Mr;
use crate::rcache::{Invalidation, RCache, RCacheStats, RegId};

/// Transport settings (the facade fills them from `WEFT_*` variables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfiConfig {
    /// Provider name (`WEFT_FI_PROVIDER`, e.g. `tcp;ofi_rxm`); `None`: best available.
    pub provider: Option<String>,
    /// Domain name (`WEFT_FI_DOMAIN`, e.g. `lo`, `mlx5_0`); `None`: the provider's first.
    pub domain: Option<String>,
    /// Largest eager payload (default 16 KiB); receive buffers are this plus the 24-byte header.
    pub eager_limit: usize,
    /// Eager limit floor for providers that emulate RMA over sockets (`tcp`, `sockets`,
    /// `udp`, `net`), where a rendezvous read costs several round trips (default 64 KiB).
    pub eager_limit_emulated_rma: usize,
    /// Idle registrations kept by the registration cache (default 256; 0 disables caching).
    pub rcache_entries: usize,
    /// Registration-cache invalidation (`WEFT_RCACHE_MONITOR`): `on` (default) drops cached
    /// registrations whose memory is unmapped, learnt from a userfaultfd monitor, and caches
    /// nothing where userfaultfd is not permitted; `off` keeps them regardless (stale on
    /// pinning providers once memory is unmapped and mapped again: for tests).
    pub rcache_monitor: String,
    /// Pre-posted receive buffers (default 128; capped by the provider's rx queue size).
    pub rx_buffers: usize,
    /// Send-pool buffers for messages above `inject_size` (default 64; capped by tx size).
    pub tx_buffers: usize,
    /// Largest single `fi_read` (0: the provider's `max_msg_size`); larger gets are split.
    pub read_chunk: usize,
}

impl Default for OfiConfig {
    fn default() -> Self {
        OfiConfig {
            provider: None,
            domain: None,
            eager_limit: 16 << 10,
            eager_limit_emulated_rma: 64 << 10,
            rcache_entries: 256,
            rcache_monitor: "on".into(),
            rx_buffers: 128,
            tx_buffers: 64,
            read_chunk: 0,
        }
    }
}

impl OfiConfig {
    /// Defaults, with `provider`, `domain` and `rcache_monitor` from `WEFT_FI_PROVIDER`,
    /// `WEFT_FI_DOMAIN` and `WEFT_RCACHE_MONITOR`.
    pub fn from_env() -> OfiConfig {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let d = OfiConfig::default();
        OfiConfig {
            provider: var("WEFT_FI_PROVIDER"),
            domain: var("WEFT_FI_DOMAIN"),
            rcache_monitor: var("WEFT_RCACHE_MONITOR").unwrap_or(d.rcache_monitor.clone()),
            ..d
        }
    }

    /// The registration cache's invalidation for `rcache_monitor`. With `on` and no
    /// userfaultfd, the cache keeps nothing, and the first transport of the process says why
    /// on stderr.
    fn invalidation(&self) -> Result<Invalidation, FabricError> {
        match self.rcache_monitor.as_str() {
            "off" => Ok(Invalidation::Off),
            "on" => Ok(match crate::monitor::subscribe() {
                Ok(s) => Invalidation::Monitor(Box::new(s)),
                Err(e) => {
                    static WARNED: std::sync::Once = std::sync::Once::new();
                    WARNED.call_once(|| {
                        eprintln!(
                            "weft: registration cache disabled (every rendezvous registers afresh): {e}"
                        )
                    });
                    Invalidation::Unavailable
                }
            }),
            v => Err(FabricError::Config(format!("WEFT_RCACHE_MONITOR must be on or off, not {v:?}"))),
        }
    }
}

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

/// Wire format of the published address.
const ADDR_MAGIC: &[u8; 4] = b"WFA1";
const ADDR_HDR: usize = 4 + 4 + 2;

/// RKey layout: remote address or offset (8) | MR key (8) | length (8) | magic (2) |
/// version (1) | flags (1) | owner world rank (4).
const RKEY_MAGIC: u16 = 0x5746;
const RKEY_VERSION: u8 = 1;

/// Decoded rendezvous key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Address to read at: a virtual address (`FI_MR_VIRT_ADDR`) or an offset in the region.
    pub addr: u64,
    /// Registration key.
    pub key: u64,
    /// Length of the exposed range.
    pub len: u64,
    /// World rank that exposed it.
    pub owner: u32,
}

impl RemoteRegion {
    /// Encode into the engine's 32-byte key.
    pub fn encode(&self) -> RKey {
        let mut k = [0u8; 32];
        k[0..8].copy_from_slice(&self.addr.to_le_bytes());
        k[8..16].copy_from_slice(&self.key.to_le_bytes());
        k[16..24].copy_from_slice(&self.len.to_le_bytes());
        k[24..26].copy_from_slice(&RKEY_MAGIC.to_le_bytes());
        k[26] = RKEY_VERSION;
        k[28..32].copy_from_slice(&self.owner.to_le_bytes());
        k
    }

    /// Decode a key; `None` if it was not made by [`RemoteRegion::encode`].
    pub fn decode(k: &RKey) -> Option<RemoteRegion> {
        let u64_at = |o: usize| u64::from_le_bytes(k[o..o + 8].try_into().expect("8 bytes"));
        if u16::from_le_bytes([k[24], k[25]]) != RKEY_MAGIC || k[26] != RKEY_VERSION || k[27] != 0 {
            return None;
        }
        Some(RemoteRegion {
            addr: u64_at(0),
            key: u64_at(8),
            len: u64_at(16),
            owner: u32::from_le_bytes(k[28..32].try_into().expect("4 bytes")),
        })
    }
}

/// Encode the endpoint name for the modex.
fn encode_address(addr_format: u32, name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(ADDR_HDR + name.len());
    v.extend_from_slice(ADDR_MAGIC);
    v.extend_from_slice(&addr_format.to_le_bytes());
    v.extend_from_slice(&(name.len() as u16).to_le_bytes());
    v.extend_from_slice(name);
    v
}

/// Validate a peer's published address against ours (same format, same name length) and
/// return the raw endpoint name.
pub fn parse_address(b: &[u8], addr_format: u32, name_len: usize) -> Result<&[u8], String> {
    if b.len() < ADDR_HDR {
        return Err(format!("address is {} bytes, shorter than its {ADDR_HDR}-byte header", b.len()));
    }
    if &b[..4] != ADDR_MAGIC {
        return Err("not a weft-fabric address (bad magic)".into());
    }
    let fmt = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    if fmt != addr_format {
        return Err(format!("address format {fmt} differs from ours ({addr_format}): different provider?"));
    }
    let len = u16::from_le_bytes([b[8], b[9]]) as usize;
    if len != name_len || b.len() != ADDR_HDR + len {
        return Err(format!(
            "endpoint name of {} bytes (header says {len}), expected {name_len}",
            b.len() - ADDR_HDR
        ));
    }
    Ok(&b[ADDR_HDR..])
}

/// Tag bit of the wire-up messages (data messages carry the sender's rank, below 2^32).
pub const WIREUP_TAG: u64 = 1 << 63;

const KIND_RX: u32 = 1;
const KIND_TX: u32 = 2;
const KIND_RD: u32 = 3;

/// Per-operation context: the provider may use the `fi_context2` (FI_CONTEXT/FI_CONTEXT2
/// modes), so it comes first; our tag follows.
#[repr(C)]
struct OpCtx {
    fi: sys::fi_context2,
    kind: u32,
    idx: u32,
}

impl OpCtx {
    fn new(kind: u32, idx: u32) -> OpCtx {
        OpCtx { fi: sys::fi_context2::default(), kind, idx }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RxState {
    /// Posted, no completion yet.
    Posted,
    /// Received `len` bytes with `tag`.
    Done { len: usize, tag: u64 },
    /// Completed with an error: drop and repost.
    Failed,
    /// Not posted (posting failed with EAGAIN): retried by `poll`.
    Unposted,
}

struct Peer {
    addr: Option<sys::fi_addr_t>,
    dead: bool,
}

/// A `get` in progress: possibly several reads.
struct Get {
    peer: u32,
    dst: *mut u8,
    len: usize,
    /// Bytes already posted.
    next: usize,
    remote: u64,
    key: u64,
    desc: *mut c_void,
    /// Local registration of `dst` (FI_MR_LOCAL), released at completion.
    local: Option<RegId>,
    outstanding: u32,
    err: Option<TransportError>,
}

/// The libfabric network transport.
///
/// Field order is teardown order: the endpoint goes first (closing it cancels everything
/// posted), registrations next (with `FI_MR_ENDPOINT` each holds the endpoint, which then
/// closes after the last of them), then AV, CQ, domain, fabric; the memory that posted
/// operations point into (buffers and contexts) is freed only after all of them.
pub struct OfiTransport {
    ep: Rc<Endpoint>,
    rcache: RCache<Mr>,
    tx_mr: Option<Mr>,
    rx_mr: Option<Mr>,
    _av: Rc<Av>,
    cq: Rc<Cq>,
    domain: Rc<Domain>,
    _fabric: Rc<Fabric>,
    _info: Info,
    // --- memory referenced by posted operations
    tx_buf: Box<[u8]>,
    rx_buf: Box<[u8]>,
    tx_ctx: Box<[OpCtx]>,
    rx_ctx: Box<[OpCtx]>,
    // Boxed: a read's context must keep its address while the Vec grows.
    #[allow(clippy::vec_box)]
    rd_ctx: Vec<Box<OpCtx>>,
    // --- state
    av_raw: Rc<Av>,
    me: u32,
    nprocs: u32,
    provider: String,
    domain_name: String,
    addr_format: u32,
    name: Vec<u8>,
    address: Vec<u8>,
    mode: MrMode,
    next_mr_key: u64,
    eager: usize,
    stride: usize,
    inject: usize,
    read_chunk: usize,
    peers: Vec<Peer>,
    tx_free: Vec<u32>,
    tx_peer: Vec<u32>,
    rx_state: Vec<RxState>,
    /// Receive slots in the order they were posted.
    rx_order: VecDeque<u32>,
    rx_unposted: Vec<u32>,
    /// Read slot → owning get token (`None`: free, or orphaned until the provider returns it).
    rd_owner: Vec<Option<u64>>,
    rd_free: Vec<u32>,
    gets: HashMap<u64, Get>,
    gets_done: Vec<(u64, Result<(), TransportError>)>,
    next_token: u64,
    /// MR key → cache entry of exposures not yet withdrawn.
    exposed: HashMap<u64, RegId>,
    newly_dead: Vec<u32>,
    /// The provider connects lazily: `connect` queues wire-up messages.
    lazy_connections: bool,
    /// Peers whose wire-up message the provider has not accepted yet.
    wireup: Vec<u32>,
    stats: OfiStats,
}

// SAFETY: the transport owns every handle to its libfabric objects (the Rcs never leave it)
// and the domain is opened with FI_THREAD_DOMAIN, under which any one thread at a time may use
// it. Moving the whole transport to another thread moves all of them together; it is not
// Sync, so two threads never use it at once.
unsafe impl Send for OfiTransport {}

/// Size of the on-stack buffer for `fi_tinject`.
const INJECT_BUF: usize = 256;
/// CQ entries read per `fi_cq_read`.
const CQ_BATCH: usize = 32;

fn round_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

impl OfiTransport {
    /// Select a provider ([`crate::info::select`]), open fabric, domain, CQ, AV and endpoint,
    /// register and post the buffers. Publish [`OfiTransport::address`] next, then
    /// [`OfiTransport::connect`].
    pub fn open(my_rank: u32, nprocs: u32, cfg: &OfiConfig) -> Result<OfiTransport, FabricError> {
        if my_rank >= nprocs {
            return Err(FabricError::Config(format!("rank {my_rank} out of range for {nprocs} processes")));
        }
        if cfg.rx_buffers == 0 || cfg.tx_buffers == 0 {
            return Err(FabricError::Config("rx_buffers and tx_buffers must be at least 1".into()));
        }
        if cfg.eager_limit > 1 << 30 {
            return Err(FabricError::Config(format!("eager_limit {} is too large", cfg.eager_limit)));
        }
        let inval = cfg.invalidation()?;
        let info = info::select(cfg.provider.as_deref(), cfg.domain.as_deref())?;
        let e = info.first().expect("select returns one entry");
        let mode = MrMode::from_bits(e.mr_mode(), e.mr_key_size())?;
        // Socket-based providers emulate RMA reads with extra messages, so a rendezvous costs
        // several round trips: send mid-size messages eagerly through them instead.
        let prov = e.provider();
        let emulated_rma = ["tcp", "sockets", "udp", "net"].iter().any(|p| prov.split(';').any(|x| x == *p));
        let lazy_connections = ["ofi_rxm", "tcp", "net"].iter().any(|p| prov.split(';').any(|x| x == *p));
        let mut cfg = cfg.clone();
        if emulated_rma {
            cfg.eager_limit = cfg.eager_limit.max(cfg.eager_limit_emulated_rma);
        }
        let cfg = &cfg;
        let msg = cfg.eager_limit + Header::SIZE;
        let max_msg = e.max_msg_size();
        if max_msg != 0 && msg > max_msg {
            return Err(FabricError::Config(format!(
                "eager_limit {} + header exceeds the provider's max_msg_size {max_msg}",
                cfg.eager_limit
            )));
        }
        let cap = |want: usize, prov: usize| if prov == 0 { want } else { want.min(prov) };
        let n_rx = cap(cfg.rx_buffers, e.rx_size());
        let n_tx = cap(cfg.tx_buffers, e.tx_size());
        let read_chunk = match (cfg.read_chunk, max_msg) {
            (0, 0) => 1 << 30,
            (0, m) => m,
            (c, 0) => c,
            (c, m) => c.min(m),
        };

        let fabric = Rc::new(Fabric::open(e)?);
        let domain = Rc::new(Domain::open(&fabric, e)?);
        let cq = Rc::new(Cq::open(&domain, (n_rx + n_tx) * 2 + 1024)?);
        let av = Rc::new(Av::open(&domain, nprocs as usize)?);
        let ep = Rc::new(Endpoint::open(&domain, e, &cq, &av)?);
        let name = ep.name()?;
        let addr_format = e.addr_format();
        let provider = e.provider();
        let domain_name = e.domain();
        let inject = e.inject_size().min(INJECT_BUF);

        let stride = round_up(msg, 64);
        let tx_buf = vec![0u8; stride * n_tx].into_boxed_slice();
        let rx_buf = vec![0u8; stride * n_rx].into_boxed_slice();
        let mut next_mr_key = 1u64;
        let (tx_mr, rx_mr) = if mode.local {
            let mut reg = |b: &[u8], access: u32| {
                next_mr_key += 1;
                // SAFETY: `b` is a live heap allocation owned by the transport, freed only
                // after the endpoint and this registration are closed (field order).
                unsafe { Mr::reg(&domain, Some(&ep), mode, b.as_ptr(), b.len(), access as u64, next_mr_key) }
            };
            (Some(reg(&tx_buf, sys::FI_SEND)?), Some(reg(&rx_buf, sys::FI_RECV)?))
        } else {
            (None, None)
        };
        let tx_ctx: Box<[OpCtx]> = (0..n_tx as u32).map(|i| OpCtx::new(KIND_TX, i)).collect();
        let rx_ctx: Box<[OpCtx]> = (0..n_rx as u32).map(|i| OpCtx::new(KIND_RX, i)).collect();
        let address = encode_address(addr_format, &name);

        let mut t = OfiTransport {
            ep,
            rcache: RCache::with_invalidation(cfg.rcache_entries, inval),
            tx_mr,
            rx_mr,
            _av: av.clone(),
            cq,
            domain,
            _fabric: fabric,
            _info: info,
            tx_buf,
            rx_buf,
            tx_ctx,
            rx_ctx,
            rd_ctx: Vec::new(),
            av_raw: av,
            me: my_rank,
            nprocs,
            provider,
            domain_name,
            addr_format,
            name,
            address,
            mode,
            next_mr_key,
            eager: cfg.eager_limit,
            stride,
            inject,
            read_chunk,
            peers: (0..nprocs).map(|_| Peer { addr: None, dead: false }).collect(),
            tx_free: (0..n_tx as u32).rev().collect(),
            tx_peer: vec![0; n_tx],
            rx_state: vec![RxState::Unposted; n_rx],
            rx_order: VecDeque::with_capacity(n_rx),
            rx_unposted: Vec::new(),
            rd_owner: Vec::new(),
            rd_free: Vec::new(),
            gets: HashMap::new(),
            gets_done: Vec::new(),
            next_token: 1,
            exposed: HashMap::new(),
            newly_dead: Vec::new(),
            lazy_connections,
            wireup: Vec::new(),
            stats: OfiStats::default(),
        };
        for slot in 0..n_rx as u32 {
            match t.post_recv(slot) {
                0 => {}
                r if r == -(sys::FI_EAGAIN as isize) => t.rx_unposted.push(slot),
                r => {
                    let (ret, msg) = crate::error::ret_msg(r);
                    return Err(FabricError::Recv { ret, msg });
                }
            }
        }
        Ok(t)
    }

    /// This endpoint's address, to publish in the modex.
    pub fn address(&self) -> Vec<u8> {
        self.address.clone()
    }

    /// Insert the peers' published addresses into the address vector. Entries for this rank
    /// and for peers already connected are skipped. A malformed address is a typed error
    /// ([`FabricError::BadAddress`]) and leaves the other peers usable. On providers that
    /// connect lazily, a wire-up message to each new peer is queued (module doc); `poll` sends
    /// them.
    pub fn connect(&mut self, peers: &[(u32, Vec<u8>)]) -> Result<(), FabricError> {
        for (rank, bytes) in peers {
            let rank = *rank;
            if rank >= self.nprocs {
                return Err(FabricError::BadAddress {
                    rank,
                    reason: format!("rank out of range ({} processes)", self.nprocs),
                });
            }
            if rank == self.me || self.peers[rank as usize].addr.is_some() {
                continue;
            }
            let name = parse_address(bytes, self.addr_format, self.name.len())
                .map_err(|reason| FabricError::BadAddress { rank, reason })?;
            let a = self.av_raw.insert(rank, name)?;
            self.peers[rank as usize].addr = Some(a);
            if self.lazy_connections {
                self.wireup.push(rank);
            }
        }
        Ok(())
    }

    /// True when the provider has accepted a wire-up message for every connected peer (always
    /// true on providers that do not connect lazily).
    pub fn wired_up(&self) -> bool {
        self.wireup.is_empty()
    }

    /// Send the queued wire-up messages the provider accepts now (pool sends: their completion
    /// returns the slot, an error completion marks the peer dead like any send's).
    fn wireup_step(&mut self) {
        let mut pending = std::mem::take(&mut self.wireup);
        pending.retain(|&peer| {
            let Ok(addr) = self.check_peer(peer) else { return false };
            let Some(slot) = self.tx_free.pop() else { return true };
            let i = slot as usize;
            self.tx_peer[i] = peer;
            let desc = self.tx_mr.as_ref().map_or(ptr::null_mut(), |m| m.desc());
            // SAFETY: pool slot `i` is ours until its completion (taken off the free list); a
            // zero-byte send reads nothing from it; the context lives until after the endpoint
            // is closed.
            let ret = unsafe {
                let buf = self.tx_buf.as_ptr().add(i * self.stride);
                let ctx = &mut self.tx_ctx[i] as *mut OpCtx as *mut c_void;
                self.ep.tsend(buf, 0, desc, addr, WIREUP_TAG | self.me as u64, ctx)
            };
            if ret == 0 {
                self.stats.wireup_sent += 1;
                return false;
            }
            self.tx_free.push(slot);
            if ret == -(sys::FI_EAGAIN as isize) {
                return true;
            }
            // A refused or failed wire-up is a failed send: a lost connection marks the peer
            // dead; any other error leaves it to the first data send to report.
            let _ = self.send_failed(peer, "fi_tsend", ret);
            false
        });
        self.wireup = pending;
    }

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

    // ------------------------------------------------------------------------- internals

    fn post_recv(&mut self, slot: u32) -> isize {
        let i = slot as usize;
        let desc = self.rx_mr.as_ref().map_or(ptr::null_mut(), |m| m.desc());
        // SAFETY: slot `i` lies inside rx_buf (stride bytes), which outlives the endpoint;
        // the slot is not posted elsewhere and is only read after its completion. Its context
        // lives in rx_ctx (boxed, never moved or freed before the endpoint is closed).
        let ret = unsafe {
            let buf = self.rx_buf.as_mut_ptr().add(i * self.stride);
            let ctx = &mut self.rx_ctx[i] as *mut OpCtx as *mut c_void;
            self.ep.trecv_any(buf, self.stride, desc, ctx)
        };
        if ret == 0 {
            self.rx_state[i] = RxState::Posted;
            self.rx_order.push_back(slot);
        } else {
            self.rx_state[i] = RxState::Unposted;
        }
        ret
    }

    /// Read every available completion (this also drives the provider's manual progress).
    fn drain_cq(&mut self) -> usize {
        let mut ents = [CqEntry::default(); CQ_BATCH];
        let mut n = 0;
        loop {
            let got = self.cq.read(&mut ents);
            if got > 0 {
                for e in &ents[..got as usize] {
                    self.on_completion(e.op_context, e.len, e.tag);
                }
                n += got as usize;
                if (got as usize) < CQ_BATCH {
                    break;
                }
            } else if got == -(sys::FI_EAVAIL as isize) {
                match self.cq.read_err() {
                    Some(err) => {
                        self.on_cq_error(&err);
                        n += 1;
                    }
                    None => break,
                }
            } else {
                if got != -(sys::FI_EAGAIN as isize) {
                    self.stats.cq_errors += 1;
                    self.stats.last_cq_error = Some(format!("fi_cq_read: {}", strerror(got)));
                }
                break;
            }
        }
        n
    }

    /// Kind and index of an operation context we posted.
    fn ctx_of(&self, ctx: *mut c_void) -> Option<(u32, usize)> {
        if ctx.is_null() {
            return None;
        }
        // SAFETY: every context handed to libfabric points to an OpCtx in tx_ctx, rx_ctx or
        // rd_ctx, all alive until after the endpoint is closed; the provider returns the
        // pointer unchanged. kind/idx are plain integers we wrote.
        let (kind, idx) = unsafe { ((*(ctx as *const OpCtx)).kind, (*(ctx as *const OpCtx)).idx as usize) };
        let ok = match kind {
            KIND_RX => idx < self.rx_ctx.len(),
            KIND_TX => idx < self.tx_ctx.len(),
            KIND_RD => idx < self.rd_ctx.len(),
            _ => false,
        };
        ok.then_some((kind, idx))
    }

    fn on_completion(&mut self, ctx: *mut c_void, len: usize, tag: u64) {
        match self.ctx_of(ctx) {
            Some((KIND_RX, i)) => self.rx_state[i] = RxState::Done { len, tag },
            Some((KIND_TX, i)) => self.tx_free.push(i as u32),
            Some((KIND_RD, i)) => self.read_done(i, Ok(())),
            _ => {}
        }
    }

    fn on_cq_error(&mut self, err: &crate::data::CqErrEntry) {
        let text = self.cq.strerror(err);
        self.stats.cq_errors += 1;
        self.stats.last_cq_error = Some(format!("{} (err {}, prov_errno {})", text, err.err, err.prov_errno));
        // We never cancel sends or reads (no fi_cancel; the CQ is not read after the endpoint
        // is closed), so FI_ECANCELED on them means the provider dropped the operation with its
        // connection: rxm reports a peer that went away as FI_ECANCELED, prov_errno ENOTCONN.
        let lost = is_connection_loss(err.err) || err.err == sys::FI_ECANCELED as i32;
        match self.ctx_of(err.op_context) {
            Some((KIND_RX, i)) => {
                self.rx_state[i] = RxState::Failed;
            }
            Some((KIND_TX, i)) => {
                self.tx_free.push(i as u32);
                // A reliable send that failed means the message is lost: the per-peer FIFO
                // contract is broken from here on, so the peer is treated as gone whatever
                // the error.
                self.mark_dead(self.tx_peer[i]);
            }
            Some((KIND_RD, i)) => {
                let peer = self.rd_owner[i].and_then(|t| self.gets.get(&t)).map(|g| g.peer);
                let res = match peer {
                    Some(p) if lost => {
                        self.mark_dead(p);
                        Err(TransportError::PeerDead(p))
                    }
                    _ => Err(TransportError::Call {
                        call: "fi_read",
                        msg: format!("{text} (err {}, prov_errno {})", err.err, err.prov_errno),
                    }),
                };
                self.read_done(i, res);
            }
            _ => {}
        }
    }

    fn read_done(&mut self, slot: usize, res: Result<(), TransportError>) {
        let owner = self.rd_owner[slot].take();
        self.rd_free.push(slot as u32);
        let Some(token) = owner else { return };
        let Some(g) = self.gets.get_mut(&token) else { return };
        g.outstanding -= 1;
        if let Err(e) = res {
            g.err.get_or_insert(e);
        }
        if g.outstanding == 0 && (g.next >= g.len || g.err.is_some()) {
            self.finish_get(token);
        }
    }

    fn finish_get(&mut self, token: u64) {
        let Some(g) = self.gets.remove(&token) else { return };
        if let Some(id) = g.local {
            self.rcache.release(id);
        }
        self.gets_done.push((token, g.err.map_or(Ok(()), Err)));
    }

    fn mark_dead(&mut self, peer: u32) {
        let Some(p) = self.peers.get_mut(peer as usize) else { return };
        if p.dead {
            return;
        }
        p.dead = true;
        self.newly_dead.push(peer);
        // Reads from the dead peer complete now; their slots stay reserved (orphaned) until
        // the provider returns them, so a late completion cannot be mistaken for a new read.
        let tokens: Vec<u64> = self.gets.iter().filter(|(_, g)| g.peer == peer).map(|(t, _)| *t).collect();
        for t in tokens {
            for o in self.rd_owner.iter_mut().filter(|o| **o == Some(t)) {
                *o = None;
            }
            if let Some(g) = self.gets.get_mut(&t) {
                g.err = Some(TransportError::PeerDead(peer));
            }
            self.finish_get(t);
        }
    }

    fn alloc_rd(&mut self) -> usize {
        if let Some(s) = self.rd_free.pop() {
            return s as usize;
        }
        let s = self.rd_ctx.len();
        self.rd_ctx.push(Box::new(OpCtx::new(KIND_RD, s as u32)));
        self.rd_owner.push(None);
        s
    }

    /// Post as many reads of get `token` as the provider accepts.
    fn post_reads(&mut self, token: u64) -> Result<(), TransportError> {
        loop {
            let Some(g) = self.gets.get(&token) else { return Ok(()) };
            if g.next >= g.len || g.err.is_some() {
                return Ok(());
            }
            let (peer, off, dst, desc, remote, key) = (g.peer, g.next, g.dst, g.desc, g.remote, g.key);
            let chunk = self.read_chunk.min(g.len - off);
            let Some(addr) = self.peers[peer as usize].addr else {
                return Err(TransportError::Invalid(format!("rank {peer} is not connected")));
            };
            let slot = self.alloc_rd();
            let ctx = &mut *self.rd_ctx[slot] as *mut OpCtx as *mut c_void;
            // SAFETY: the engine guarantees `dst` is writable for `len` bytes and untouched
            // until the get is reported; off + chunk <= len. The context is boxed in rd_ctx
            // (stable address, alive until after the endpoint closes) and reserved for this
            // read until its completion. `desc` is the registration of dst when needed.
            let ret = unsafe { self.ep.read(dst.add(off), chunk, desc, addr, remote + off as u64, key, ctx) };
            if ret == 0 {
                self.rd_owner[slot] = Some(token);
                self.stats.reads_posted += 1;
                let g = self.gets.get_mut(&token).expect("present above");
                g.outstanding += 1;
                g.next += chunk;
                continue;
            }
            self.rd_free.push(slot as u32);
            if ret == -(sys::FI_EAGAIN as isize) {
                return Ok(());
            }
            let e = if is_connection_loss(ret as i32) {
                self.mark_dead(peer);
                TransportError::PeerDead(peer)
            } else {
                TransportError::Call { call: "fi_read", msg: strerror(ret) }
            };
            return Err(e);
        }
    }

    fn check_peer(&self, peer: u32) -> Result<sys::fi_addr_t, TransportError> {
        let p = self.peers.get(peer as usize).ok_or_else(|| {
            TransportError::Invalid(format!("rank {peer} out of range ({} processes)", self.nprocs))
        })?;
        if p.dead {
            return Err(TransportError::PeerDead(peer));
        }
        p.addr.ok_or_else(|| TransportError::Invalid(format!("rank {peer} is not connected")))
    }

    fn send_failed(&mut self, peer: u32, call: &'static str, ret: isize) -> TransportError {
        if is_connection_loss(ret as i32) {
            self.mark_dead(peer);
            TransportError::PeerDead(peer)
        } else {
            TransportError::Call { call, msg: strerror(ret) }
        }
    }
}

impl Transport for OfiTransport {
    fn name(&self) -> &'static str {
        "ofi"
    }

    fn eager_limit(&self) -> usize {
        self.eager
    }

    fn try_send(&mut self, peer: u32, hdr: &Header, payload: &[u8]) -> Result<bool, TransportError> {
        let addr = self.check_peer(peer)?;
        let total = Header::SIZE + payload.len();
        if total > self.stride {
            return Err(TransportError::Invalid(format!(
                "payload of {} bytes exceeds the eager limit {}",
                payload.len(),
                self.eager
            )));
        }
        let eagain = -(sys::FI_EAGAIN as isize);
        let tag = self.me as u64;
        if total <= self.inject {
            let mut b = [0u8; INJECT_BUF];
            b[..Header::SIZE].copy_from_slice(hdr.as_bytes());
            b[Header::SIZE..total].copy_from_slice(payload);
            // SAFETY: `b` holds `total <= inject_size` initialised bytes; `addr` was inserted.
            let ret = unsafe { self.ep.tinject(b.as_ptr(), total, addr, tag) };
            match ret {
                0 => {
                    self.stats.injects += 1;
                    self.stats.bytes_copied += total as u64;
                    return Ok(true);
                }
                // Fall through to a pool send: with tcp;ofi_rxm, injects towards a dead peer
                // return -FI_EAGAIN forever and never report an error, while a send with a
                // completion fails with ECONNRESET — so a refused inject is retried as one.
                r if r == eagain => self.drain_cq(),
                r => return Err(self.send_failed(peer, "fi_tinject", r)),
            };
        }
        let slot = match self.tx_free.pop() {
            Some(s) => s,
            None => {
                self.drain_cq();
                match self.tx_free.pop() {
                    Some(s) => s,
                    None => {
                        self.stats.send_busy += 1;
                        return Ok(false);
                    }
                }
            }
        };
        let i = slot as usize;
        let base = i * self.stride;
        self.tx_buf[base..base + Header::SIZE].copy_from_slice(hdr.as_bytes());
        self.tx_buf[base + Header::SIZE..base + total].copy_from_slice(payload);
        self.tx_peer[i] = peer;
        let desc = self.tx_mr.as_ref().map_or(ptr::null_mut(), |m| m.desc());
        // SAFETY: pool slot `i` is ours until its completion (taken off the free list); the
        // buffer and the context live until after the endpoint is closed.
        let ret = unsafe {
            let buf = self.tx_buf.as_ptr().add(base);
            let ctx = &mut self.tx_ctx[i] as *mut OpCtx as *mut c_void;
            self.ep.tsend(buf, total, desc, addr, tag, ctx)
        };
        match ret {
            0 => {
                self.stats.pool_sends += 1;
                self.stats.bytes_copied += total as u64;
                Ok(true)
            }
            r if r == eagain => {
                self.tx_free.push(slot);
                self.stats.send_busy += 1;
                self.drain_cq();
                Ok(false)
            }
            r => {
                self.tx_free.push(slot);
                Err(self.send_failed(peer, "fi_tsend", r))
            }
        }
    }

    fn poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        self.drain_cq();
        if !self.wireup.is_empty() {
            self.wireup_step();
        }
        let mut n = 0;
        while n < budget {
            let Some(&slot) = self.rx_order.front() else { break };
            let i = slot as usize;
            match self.rx_state[i] {
                RxState::Posted => break,
                RxState::Done { len, tag } => {
                    let base = i * self.stride;
                    let known = tag < self.nprocs as u64 && self.peers[tag as usize].addr.is_some();
                    let hdr = if len <= self.stride {
                        Header::from_bytes(&self.rx_buf[base..base + len])
                    } else {
                        None
                    };
                    match hdr {
                        Some(h) if known => {
                            sink(tag as u32, &h, &self.rx_buf[base + Header::SIZE..base + len]);
                            self.stats.delivered += 1;
                            n += 1;
                        }
                        None if len == 0 && tag & WIREUP_TAG != 0 => self.stats.wireup_received += 1,
                        _ => self.stats.malformed += 1,
                    }
                }
                RxState::Failed | RxState::Unposted => self.stats.malformed += 1,
            }
            self.rx_order.pop_front();
            if self.post_recv(slot) != 0 {
                self.rx_unposted.push(slot);
            }
        }
        if !self.rx_unposted.is_empty() {
            for slot in std::mem::take(&mut self.rx_unposted) {
                if self.post_recv(slot) != 0 {
                    self.rx_unposted.push(slot);
                }
            }
        }
        n
    }

    // The pointer is never dereferenced here: it is registered, and the provider reads it only
    // while the engine keeps the buffer exposed (the trait's contract).
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn expose(&mut self, peer: u32, addr: *const u8, len: usize) -> Result<RKey, TransportError> {
        self.check_peer(peer)?;
        self.stats.exposes += 1;
        if len == 0 {
            return Ok(RemoteRegion { addr: 0, key: 0, len: 0, owner: self.me }.encode());
        }
        let (domain, ep, mode) = (&self.domain, &self.ep, self.mode);
        let next_key = &mut self.next_mr_key;
        let (id, mr) = self.rcache.acquire(addr as usize, len, || {
            *next_key += 1;
            let access = (sys::FI_REMOTE_READ | sys::FI_READ) as u64;
            // SAFETY: the engine keeps `addr..addr+len` alive until unexpose; the cached
            // registration may outlive it, but no transfer uses it after unexpose.
            unsafe { Mr::reg(domain, Some(ep), mode, addr, len, access, *next_key) }
        })?;
        let key = mr.key();
        let remote = if mode.virt_addr { addr as u64 } else { (addr as usize - mr.addr()) as u64 };
        self.stats.last_expose = (mr.addr(), mr.len());
        self.exposed.insert(key, id);
        Ok(RemoteRegion { addr: remote, key, len: len as u64, owner: self.me }.encode())
    }

    fn unexpose(&mut self, _peer: u32, key: &RKey) {
        let Some(r) = RemoteRegion::decode(key) else { return };
        if r.len == 0 {
            return;
        }
        if let Some(&id) = self.exposed.get(&r.key) {
            if self.rcache.release(id) == Some(0) {
                self.exposed.remove(&r.key);
            }
        }
    }

    unsafe fn get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError> {
        self.check_peer(peer)?;
        let r = RemoteRegion::decode(key)
            .ok_or_else(|| TransportError::Invalid("not a weft-fabric RKey".into()))?;
        if r.owner != peer {
            return Err(TransportError::Invalid(format!("RKey of rank {} used for rank {peer}", r.owner)));
        }
        if len as u64 > r.len {
            return Err(TransportError::Invalid(format!(
                "read of {len} bytes from a {}-byte exposure",
                r.len
            )));
        }
        if len == 0 {
            return Ok(GetStatus::Done);
        }
        if dst.is_null() {
            return Err(TransportError::Invalid("null destination".into()));
        }
        let (mut desc, mut local) = (ptr::null_mut(), None);
        if self.mode.local {
            let (domain, ep, mode) = (&self.domain, &self.ep, self.mode);
            let next_key = &mut self.next_mr_key;
            let (id, mr) = self.rcache.acquire(dst as usize, len, || {
                *next_key += 1;
                let access = (sys::FI_REMOTE_READ | sys::FI_READ) as u64;
                // SAFETY: the caller keeps dst valid until the read is reported.
                unsafe { Mr::reg(domain, Some(ep), mode, dst, len, access, *next_key) }
            })?;
            desc = mr.desc();
            local = Some(id);
        }
        let token = self.next_token;
        self.next_token += 1;
        self.stats.read_bytes += len as u64;
        self.gets.insert(
            token,
            Get {
                peer,
                dst,
                len,
                next: 0,
                remote: r.addr,
                key: r.key,
                desc,
                local,
                outstanding: 0,
                err: None,
            },
        );
        if let Err(e) = self.post_reads(token) {
            match self.gets.get_mut(&token) {
                Some(g) if g.outstanding > 0 => g.err = Some(e),
                Some(_) => {
                    let g = self.gets.remove(&token).expect("present");
                    if let Some(id) = g.local {
                        self.rcache.release(id);
                    }
                    return Err(e);
                }
                // mark_dead already completed it with PeerDead.
                None => {
                    self.gets_done.retain(|(t, _)| *t != token);
                    return Err(e);
                }
            }
        }
        Ok(GetStatus::Pending(token))
    }

    fn poll_gets(&mut self, done: &mut Vec<(u64, Result<(), TransportError>)>) {
        self.drain_cq();
        let waiting: Vec<u64> =
            self.gets.iter().filter(|(_, g)| g.next < g.len && g.err.is_none()).map(|(t, _)| *t).collect();
        for t in waiting {
            if let Err(e) = self.post_reads(t) {
                if let Some(g) = self.gets.get_mut(&t) {
                    g.err = Some(e);
                    if g.outstanding == 0 {
                        self.finish_get(t);
                    }
                }
            }
        }
        done.append(&mut self.gets_done);
    }

    fn poll_failures(&mut self, out: &mut Vec<u32>) {
        self.drain_cq();
        out.append(&mut self.newly_dead);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rkey_roundtrip() {
        let r = RemoteRegion { addr: 0x7fff_1234_5678, key: 0xdead_beef_cafe, len: 64 << 20, owner: 3 };
        let k = r.encode();
        assert_eq!(RemoteRegion::decode(&k), Some(r));
        let mut bad = k;
        bad[24] ^= 1;
        assert_eq!(RemoteRegion::decode(&bad), None);
        assert_eq!(RemoteRegion::decode(&[0u8; 32]), None);
        let mut bad = k;
        bad[27] = 1;
        assert_eq!(RemoteRegion::decode(&bad), None, "unknown flags");
    }

    #[test]
    fn address_parsing_rejects_garbage() {
        let name = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
        let a = encode_address(1, &name);
        assert_eq!(parse_address(&a, 1, 16).unwrap(), &name);
        assert!(parse_address(&[], 1, 16).is_err());
        assert!(parse_address(b"garbage garbage garbage", 1, 16).is_err());
        assert!(parse_address(&a, 2, 16).unwrap_err().contains("format"));
        assert!(parse_address(&a[..a.len() - 1], 1, 16).is_err());
        let mut long = a.clone();
        long.push(0);
        assert!(parse_address(&long, 1, 16).is_err());
        assert!(parse_address(&encode_address(1, &name[..8]), 1, 16).is_err());
        // Pseudo-random garbage never panics.
        let mut x = 88172645463325252u64;
        for n in 0..2000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut v: Vec<u8> = (0..n % 40).map(|i| (x >> (i % 8 * 8)) as u8).collect();
            if n % 3 == 0 && v.len() >= 4 {
                v[..4].copy_from_slice(ADDR_MAGIC);
            }
            let _ = parse_address(&v, 1, 16);
        }
    }

    fn lo() -> OfiConfig {
        lo_on("tcp;ofi_rxm")
    }

    fn lo_on(provider: &str) -> OfiConfig {
        OfiConfig { domain: Some("lo".into()), provider: Some(provider.into()), ..OfiConfig::default() }
    }

    /// The socket providers installed here: `tcp;ofi_rxm` (chosen automatically) and `net`
    /// (only when named).
    fn socket_providers() -> Vec<&'static str> {
        let names = info::provider_names().unwrap();
        ["net", "tcp;ofi_rxm"].into_iter().filter(|p| names.iter().any(|n| n == p)).collect()
    }

    #[test]
    fn open_on_loopback_and_reject_bad_addresses() {
        let mut t = OfiTransport::open(0, 2, &lo()).unwrap();
        assert_eq!(t.provider(), "tcp;ofi_rxm");
        assert_eq!(t.domain(), "lo");
        assert_eq!(t.name(), "ofi");
        let a = t.address();
        assert!(a.starts_with(ADDR_MAGIC));
        for bad in [vec![], b"nonsense".to_vec(), vec![0xff; 200], a[..a.len() - 2].to_vec()] {
            match t.connect(&[(1, bad)]) {
                Err(FabricError::BadAddress { rank: 1, .. }) => {}
                other => panic!("expected BadAddress, got {other:?}"),
            }
        }
        assert!(matches!(t.connect(&[(7, a.clone())]), Err(FabricError::BadAddress { rank: 7, .. })));
        // Still unconnected: typed errors, no panic.
        assert!(matches!(t.try_send(1, &Header::default(), b""), Err(TransportError::Invalid(_))));
        assert!(matches!(t.try_send(9, &Header::default(), b""), Err(TransportError::Invalid(_))));
        let mut f = Vec::new();
        t.poll_failures(&mut f);
        assert!(f.is_empty());
        assert_eq!(t.poll(16, &mut |_, _, _| panic!("no traffic")), 0);
    }

    #[test]
    fn rcache_monitor_setting() {
        let bad = OfiConfig { rcache_monitor: "maybe".into(), ..lo() };
        assert!(matches!(OfiTransport::open(0, 2, &bad), Err(FabricError::Config(m)) if m.contains("maybe")));
        let off = OfiTransport::open(0, 2, &OfiConfig { rcache_monitor: "off".into(), ..lo() }).unwrap();
        assert_eq!(off.rcache_invalidation(), "off");
        // "monitor" where userfaultfd is permitted, "unavailable" (nothing cached) elsewhere.
        let on = OfiTransport::open(0, 2, &lo()).unwrap();
        assert_ne!(on.rcache_invalidation(), "off");
    }

    #[test]
    fn loopback_pair_in_one_process() {
        for p in socket_providers() {
            loopback_pair_on(p);
        }
    }

    fn loopback_pair_on(provider: &str) {
        // Two endpoints in one process talking over lo: eager sizes, FIFO, expose/get.
        let mut a = OfiTransport::open(0, 2, &lo_on(provider)).unwrap();
        let mut b = OfiTransport::open(1, 2, &lo_on(provider)).unwrap();
        assert_eq!(a.provider(), provider);
        assert_eq!(a.eager_limit(), 64 << 10, "{provider} emulates RMA over sockets");
        let peers = vec![(0, a.address()), (1, b.address())];
        a.connect(&peers).unwrap();
        b.connect(&peers).unwrap();
        let sizes = [0usize, 1, 40, 41, 100, 4096, 16384];
        let mut got = Vec::new();
        let payload: Vec<u8> = (0..16384u32).map(|i| i as u8).collect();
        for (k, &s) in sizes.iter().enumerate() {
            let h = Header { class: 1, tag: k as i32, len: s as u64, ..Header::default() };
            let t0 = std::time::Instant::now();
            while !a.try_send(1, &h, &payload[..s]).unwrap() {
                b.poll(16, &mut |_, _, _| {});
                assert!(t0.elapsed().as_secs() < 10);
            }
        }
        let t0 = std::time::Instant::now();
        while got.len() < sizes.len() {
            a.poll(16, &mut |_, _, _| {});
            b.poll(16, &mut |src, h, p| {
                assert_eq!(src, 0);
                assert_eq!(&payload[..p.len()], p);
                got.push((h.tag, p.len()));
            });
            assert!(t0.elapsed().as_secs() < 10, "got {got:?}");
        }
        let want: Vec<(i32, usize)> = sizes.iter().enumerate().map(|(k, &s)| (k as i32, s)).collect();
        assert_eq!(got, want);
        assert!(a.stats().injects >= 2 && a.stats().pool_sends >= 2, "{:?}", a.stats());

        let src: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7) as u8).collect();
        let key = a.expose(1, src.as_ptr(), src.len()).unwrap();
        assert_eq!(a.stats().last_expose, (src.as_ptr() as usize, src.len()));
        let mut dst = vec![0u8; src.len()];
        // SAFETY: a read past the exposed length is rejected before anything is posted.
        let bad = unsafe { b.get(0, &key, dst.as_mut_ptr(), src.len() + 1) };
        assert!(matches!(bad, Err(TransportError::Invalid(_))));
        // SAFETY: a key that `a` itself exposed is rejected before anything is posted.
        let wrong_peer = unsafe { a.get(1, &key, dst.as_mut_ptr(), 8) };
        assert!(matches!(wrong_peer, Err(TransportError::Invalid(_))), "{wrong_peer:?}");
        // SAFETY: dst is live and untouched until the read is reported.
        let st = unsafe { b.get(0, &key, dst.as_mut_ptr(), src.len()) }.unwrap();
        let GetStatus::Pending(tok) = st else { panic!("expected pending") };
        let mut done = Vec::new();
        let t0 = std::time::Instant::now();
        while done.is_empty() {
            a.poll(16, &mut |_, _, _| {});
            b.poll_gets(&mut done);
            assert!(t0.elapsed().as_secs() < 10);
        }
        assert_eq!(done, vec![(tok, Ok(()))]);
        assert!(dst == src);
        a.unexpose(1, &key);
        assert!(a.is_registered(src.as_ptr(), src.len()), "kept idle in the cache");
        assert_eq!(a.rcache_stats().0.misses, 1);
    }
}
