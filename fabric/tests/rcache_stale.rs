//! End to end: two rendezvous transfers from one buffer address, with the buffer unmapped and
//! mapped again (new pages, new contents) between them; rank 1 checks every byte it receives
//! and rank 0 checks that the second transfer was not served by the registration of the
//! unmapped buffer. Two forms: `remap`, on the transport (rank 0 exposes its buffer, rank 1
//! reads it with `fi_read`), and `engine`, two blocking `Engine::send`s of 4 MiB (the engine's
//! rendezvous over the same transport).
//!
//! What it can and cannot prove. The providers that run here (`tcp;ofi_rxm`, libfabric's
//! `tcp`) read the source through its virtual address when the read is served, so the data
//! rank 1 receives is right even from a stale registration: the data check proves the path
//! works, not that staleness would show. No provider here pins pages (the kernel has no RDMA
//! support, so no Soft-RoCE `verbs`). Staleness is observed where it originates: the
//! registration the cache hands out for the second transfer. A pinning provider (verbs, efa,
//! cxi) sends the pages that were registered, so the old registration would send the old
//! pages; a registration made after the remap is the new memory.
//!
//! The cache's invalidation follows `WEFT_RCACHE_MONITOR` (default `on`), so
//! `WEFT_RCACHE_MONITOR=off cargo test -p weft-fabric --test rcache_stale` shows the test
//! failing without it; `stale_registration_is_served_without_the_monitor` checks that failure
//! in every run.

#[allow(unused_imports)]
mod common;

use std::time::{Duration, Instant};

use common::*;
use std::cell::Cell;
use std::rc::Rc;

use weft_engine::transport::{GetStatus, Header, RKey, Transport, TransportError};
use weft_engine::{Common, Engine, EngineConfig, Setup};
use weft_fabric::rcache::RCacheStats;
use weft_fabric::{OfiConfig, OfiTransport};

const CHILD_ARGS: &[&str] = &["child_main", "--exact", "--nocapture", "--test-threads=1"];
const WATCHDOG: Duration = Duration::from_secs(90);
/// Above every provider's eager limit (64 KiB on socket providers): a rendezvous size.
const LEN: usize = 4 << 20;

#[test]
fn child_main() {
    let Some(c) = child_env() else { return };
    let monitor = String::from_utf8(H.get_file(&c.dir, "monitor")).unwrap();
    let cfg = OfiConfig { rcache_monitor: monitor.clone(), ..lo_cfg(&c) };
    let mut t = bootstrap(&c, &cfg);
    match (c.role.as_str(), c.rank) {
        ("remap", 0) => sender(&c, &mut t, &monitor),
        ("remap", 1) => receiver(&c, &mut t),
        ("engine", _) => engine(&c, t, &monitor),
        (r, k) => panic!("unknown role {r} rank {k}"),
    }
}

fn pattern(round: u8, i: usize) -> u8 {
    (i.wrapping_mul(131) as u8) ^ round.wrapping_mul(0x5b)
}

fn map_at(at: Option<usize>, round: u8) -> usize {
    map_anon(at, LEN, false, |i| pattern(round, i))
}

fn sender(c: &ChildEnv, t: &mut OfiTransport, monitor: &str) {
    eprintln!(
        "rcache_stale: provider {} mr_mode {:?}, rcache invalidation {}",
        t.provider(),
        t.mr_mode(),
        t.rcache_invalidation()
    );
    let a = map_at(None, 1);
    let mut keys = Vec::new();
    for round in 1..=2u8 {
        if round == 2 {
            // free and reallocate at the same address: new pages, new contents.
            // The mapping is not exposed any more (unexposed after round 1).
            unmap(a, LEN);
            map_at(Some(a), 2);
        }
        let key = t.expose(1, a as *const u8, LEN).unwrap();
        keys.push(key);
        put_file(&c.dir, &format!("key{round}"), &key);
        barrier_polling(c, t, &format!("read{round}"), 2);
        t.unexpose(1, &key);
    }
    let (st, _) = t.rcache_stats();
    eprintln!("rcache_stale: monitor {monitor}: {st:?}");
    put_file(&c.dir, "stats", format!("{} {} {}", st.hits, st.misses, st.invalidations).as_bytes());
    if t.rcache_invalidation() == "monitor" {
        assert_eq!(
            (st.hits, st.misses),
            (0, 2),
            "the second rendezvous was served by the registration of the unmapped buffer"
        );
        assert!(st.invalidations >= 1, "{st:?}");
    } else {
        // `off` (the cache ignores unmaps) or `unavailable` (nothing is cached).
        assert_eq!(t.rcache_invalidation(), monitor.replace("on", "unavailable"));
        assert_eq!(
            (st.hits, st.misses) == (0, 2),
            monitor == "on",
            "{monitor}: {st:?}, keys {:?}",
            keys.iter().map(|k| &k[8..16]).collect::<Vec<_>>()
        );
    }
    barrier(c, "done");
}

fn receiver(c: &ChildEnv, t: &mut OfiTransport) {
    for round in 1..=2u8 {
        let key: RKey = H.get_file(&c.dir, &format!("key{round}")).try_into().expect("a 32-byte RKey");
        let mut dst = vec![0u8; LEN];
        // SAFETY: dst is live and untouched until the read is reported.
        let st = unsafe { t.get(0, &key, dst.as_mut_ptr(), LEN) }.unwrap();
        if let GetStatus::Pending(tok) = st {
            let mut done = Vec::new();
            let t0 = Instant::now();
            while done.is_empty() {
                t.poll_gets(&mut done);
                assert!(t0.elapsed() < Duration::from_secs(60), "read of round {round} did not complete");
            }
            assert_eq!(done, vec![(tok, Ok(()))]);
        }
        let bad = dst.iter().enumerate().filter(|&(i, &b)| b != pattern(round, i)).count();
        assert_eq!(bad, 0, "round {round}: {bad} bytes differ from what rank 0 wrote");
        barrier_polling(c, t, &format!("read{round}"), 2);
    }
    barrier(c, "done");
}

/// The transport, passing everything through, with the cache counters after each `expose`
/// kept where the test can read them once the engine is done with it.
struct Recorded {
    t: OfiTransport,
    after_expose: Rc<Cell<RCacheStats>>,
}

impl Transport for Recorded {
    fn name(&self) -> &'static str {
        self.t.name()
    }
    fn eager_limit(&self) -> usize {
        self.t.eager_limit()
    }
    fn try_send(&mut self, peer: u32, hdr: &Header, payload: &[u8]) -> Result<bool, TransportError> {
        self.t.try_send(peer, hdr, payload)
    }
    fn poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        self.t.poll(budget, sink)
    }
    fn poll_until(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8]) -> bool) -> usize {
        self.t.poll_until(budget, sink)
    }
    fn expose(&mut self, peer: u32, addr: *const u8, len: usize) -> Result<RKey, TransportError> {
        let k = self.t.expose(peer, addr, len);
        self.after_expose.set(self.t.rcache_stats().0);
        k
    }
    fn unexpose(&mut self, peer: u32, key: &RKey) {
        self.t.unexpose(peer, key)
    }
    unsafe fn get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError> {
        // SAFETY: the caller's guarantee on `dst`, passed on unchanged.
        unsafe { self.t.get(peer, key, dst, len) }
    }
    fn poll_gets(&mut self, done: &mut Vec<(u64, Result<(), TransportError>)>) {
        self.t.poll_gets(done)
    }
    fn poll_failures(&mut self, out: &mut Vec<u32>) {
        self.t.poll_failures(out)
    }
}

/// Two blocking rendezvous sends by the engine from one address, the buffer unmapped and
/// mapped again between them.
fn engine(c: &ChildEnv, t: OfiTransport, monitor: &str) {
    let inval = t.rcache_invalidation();
    let after_expose = Rc::new(Cell::new(RCacheStats::default()));
    let mut e = Engine::new(c.rank, 2, EngineConfig::default());
    Setup::of(&mut e)
        .add_transport(Box::new(Recorded { t, after_expose: after_expose.clone() }), &[1 - c.rank]);
    let w = e.world();
    if c.rank == 0 {
        let a = map_at(None, 1);
        for round in 1..=2u8 {
            if round == 2 {
                // The first send returned: the engine no longer exposes the buffer.
                unmap(a, LEN);
                map_at(Some(a), 2);
            }
            // SAFETY: `a` is a live mapping of LEN bytes that nothing writes during the send.
            let buf = unsafe { std::slice::from_raw_parts(a as *const u8, LEN) };
            e.send(w, buf, 1, round as i32).unwrap();
        }
        let st = after_expose.get();
        eprintln!("rcache_stale engine: monitor {monitor} ({inval}): {st:?}");
        put_file(&c.dir, "stats", format!("{} {} {}", st.hits, st.misses, st.invalidations).as_bytes());
        if inval == "monitor" {
            assert_eq!((st.hits, st.misses), (0, 2), "the second send used the stale registration");
        }
    } else {
        for round in 1..=2u8 {
            let mut back = vec![0u8; LEN];
            let s = e.recv(w, &mut back, 0, round as i32).unwrap();
            assert_eq!(s.count, LEN);
            let bad = back.iter().enumerate().filter(|&(i, &b)| b != pattern(round, i)).count();
            assert_eq!(bad, 0, "engine round {round}: {bad} bytes differ from what rank 0 sent");
        }
    }
    Setup::of(&mut e).finalize();
    barrier(c, "done");
}

/// Run both forms with `monitor` on every test provider; returns rank 0's cache counters
/// `(hits, misses, invalidations)` per form and provider.
fn run(monitor: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in test_providers() {
        for role in ["remap", "engine"] {
            let dir = scratch_dir("rcache-stale");
            set_provider(&dir, &p);
            put_file(&dir, "monitor", monitor.as_bytes());
            let mut ch = spawn(role, 2, &dir, CHILD_ARGS, WATCHDOG);
            wait_all(&mut ch, &[]);
            let stats = String::from_utf8(std::fs::read(dir.join("stats")).unwrap()).unwrap();
            out.push((format!("{role} on {p}"), stats));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    out
}

/// The test: with invalidation (`WEFT_RCACHE_MONITOR`, default `on`), the data is right and
/// the second transfer used a registration of the new memory.
#[test]
fn rendezvous_from_a_buffer_unmapped_and_mapped_again() {
    if child_env().is_some() {
        return;
    }
    let monitor = std::env::var("WEFT_RCACHE_MONITOR").unwrap_or_else(|_| "on".into());
    for (p, stats) in run(&monitor) {
        println!("{p}, WEFT_RCACHE_MONITOR={monitor}: rank 0 cache hits misses invalidations = {stats}");
        let hits: u64 = stats.split(' ').next().unwrap().parse().unwrap();
        assert_eq!(hits, 0, "{p}: the second transfer was served by the stale registration");
    }
}

/// The failure the first test guards against, checked in every run: without invalidation the
/// second transfer is served by the registration of the unmapped buffer (rank 0 asserts it).
#[test]
fn stale_registration_is_served_without_the_monitor() {
    if child_env().is_some() {
        return;
    }
    for (p, stats) in run("off") {
        assert!(stats.starts_with("1 1 "), "{p}: {stats}");
    }
}
