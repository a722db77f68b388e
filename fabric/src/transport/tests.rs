//! Tests of the whole transport on loopback: opening, bad addresses, the registration-cache
//! setting, and two endpoints in one process exchanging eager messages and a rendezvous get.
//! (The wire formats are tested in `wire.rs`.)

use weft_engine::transport::{GetStatus, Header, Transport, TransportError};

use super::config::OfiConfig;
use super::state::OfiTransport;
use super::wire::ADDR_MAGIC;
use crate::error::FabricError;
use crate::info;

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
