//! Opening the transport and connecting it to its peers: provider selection and the
//! libfabric objects (`open`), the send pool and receive ring and their registrations, the
//! address published in the modex (`address`), inserting the peers' addresses (`connect`),
//! and, on providers that connect lazily, the wire-up messages that make a connection exist
//! before its first data message (`wireup_step`, `wired_up`).
//!
//! Calls `completion.rs` (posting the first receives) and `failure.rs`. Called by `eager.rs`
//! (`poll` sends the wire-up messages).

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;

use weft_engine::transport::Header;
use weft_fabric_sys as sys;

use super::config::OfiConfig;
use super::state::{OfiStats, OfiTransport, OpCtx, Peer, RxState, INJECT_BUF, KIND_RX, KIND_TX};
use super::wire::{encode_address, parse_address, WIREUP_TAG};
use crate::attr::MrMode;
use crate::av::Av;
use crate::cq::Cq;
use crate::domain::Domain;
use crate::ep::Endpoint;
use crate::error::FabricError;
use crate::fabric::Fabric;
use crate::info;
use crate::mr::Mr;
use crate::rcache::RCache;

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
    /// connect lazily, a wire-up message to each new peer is queued (Wire-up in
    /// [`crate::transport`]); `poll` sends them.
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
    pub(super) fn wireup_step(&mut self) {
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
}
