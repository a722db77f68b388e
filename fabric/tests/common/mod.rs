//! Multi-process harness of the libfabric transport tests. The transport-independent part
//! (re-executed children, address files, deadlines, watchdog) is `weft-testkit`; this module
//! binds it to the `WEFT_FI_TEST_*` variables (`WEFT_FI_TEST_ROLE`, `WEFT_FI_TEST_RANK`,
//! `WEFT_FI_TEST_N`, `WEFT_FI_TEST_DIR`) with a 30 s deadline, and adds what needs
//! `OfiTransport`: the loopback configuration, bootstrap and a barrier that drives progress.
//!
//! Network rule: every transport here is opened on the loopback domain `lo` ([`lo_cfg`]);
//! nothing binds to another interface. The one exception is libfabric's `shm` provider, which
//! uses no network and has only its own domain. The provider is the one automatic selection picks there
//! (`tcp;ofi_rxm`), or each of those listed in `WEFT_FI_TEST_PROVIDER` (e.g. `net`, whose
//! dead-peer detection misses some kills: see the crate README) — [`test_providers`].
#![allow(dead_code)]

use std::time::Duration;

use weft_engine::transport::Transport;
use weft_fabric::{OfiConfig, OfiTransport};
use weft_testkit::Harness;
pub use weft_testkit::{mono_ns, put_file, wait_all, wait_files, ChildEnv, Signal};

/// The fabric tests' harness: `WEFT_FI_TEST_*` variables; every child-side wait gives up
/// after 30 s.
pub const H: Harness = Harness::new("WEFT_FI_TEST").with_deadline(Duration::from_secs(30));

// child_env, scratch_dir, spawn, get_file, barrier, send_blocking.
weft_testkit::harness_fns!(H);

/// The providers a test runs on: those listed in `WEFT_FI_TEST_PROVIDER` (comma-separated, e.g.
/// `net,tcp;ofi_rxm`) if set, else the one automatic selection picks on `lo`.
pub fn test_providers() -> Vec<String> {
    if let Some(v) = std::env::var("WEFT_FI_TEST_PROVIDER").ok().filter(|v| !v.is_empty()) {
        return v.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    }
    let info = weft_fabric::info::select(None, Some("lo")).unwrap();
    vec![info.first().expect("select returns one entry").provider()]
}

/// Tell the children started on `dir` which provider to open (read by [`lo_cfg`]).
pub fn set_provider(dir: &std::path::Path, provider: &str) {
    std::fs::write(dir.join("provider"), provider).unwrap();
}

/// The configuration every child uses: the provider its parent chose ([`set_provider`]) on
/// loopback (`shm`: on its own domain).
pub fn lo_cfg(c: &ChildEnv) -> OfiConfig {
    let p = String::from_utf8(H.get_file(&c.dir, "provider")).unwrap();
    let domain = (p != "shm").then(|| "lo".into());
    OfiConfig { provider: Some(p), domain, ..OfiConfig::default() }
}

/// Open the transport on loopback, publish the address, read everyone's, connect.
pub fn bootstrap(c: &ChildEnv, cfg: &OfiConfig) -> OfiTransport {
    let mut t = OfiTransport::open(c.rank, c.n, cfg).unwrap();
    assert!(t.domain() == "lo" || t.provider() == "shm", "tests must stay on loopback: {}", t.domain());
    t.connect(&H.exchange(c, "addr", &t.address())).unwrap();
    t
}

/// File barrier among ranks `0..m` — while waiting, keep driving the provider's progress
/// (`poll_gets` reads the CQ) without delivering messages: those of the next phase, sent by a
/// rank that left the barrier first, stay queued for the next `poll`.
pub fn barrier_polling(c: &ChildEnv, t: &mut OfiTransport, tag: &str, m: u32) {
    H.barrier_polling(c, tag, m, || {
        let mut d = Vec::new();
        t.poll_gets(&mut d);
    });
}
