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

/// A new private anonymous mapping of `len` bytes whose byte `i` is `fill(i)`. With `at`, it
/// is placed there: beside nothing (`MAP_FIXED_NOREPLACE`), or over the caller's own mapping
/// (`MAP_FIXED`, when `replace`: an unmap and a map in one call). Returns its address.
pub fn map_anon(at: Option<usize>, len: usize, replace: bool, fill: impl Fn(usize) -> u8) -> usize {
    use nix::sys::mman::{mmap_anonymous, MapFlags, ProtFlags};
    let fixed = match (at, replace) {
        (None, _) => MapFlags::empty(),
        (Some(_), false) => MapFlags::MAP_FIXED_NOREPLACE,
        (Some(_), true) => MapFlags::MAP_FIXED,
    };
    // SAFETY: an anonymous mapping; MAP_FIXED_NOREPLACE never replaces an existing one, and
    // callers pass `replace` only over a mapping of their own that nothing references.
    let p = unsafe {
        mmap_anonymous(
            at.and_then(std::num::NonZeroUsize::new),
            std::num::NonZeroUsize::new(len).expect("a non-empty mapping"),
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | fixed,
        )
    }
    .expect("mmap");
    let a = p.as_ptr() as usize;
    if let Some(want) = at {
        assert_eq!(a, want, "mapped at the address asked for");
    }
    // SAFETY: the mapping was just created, `len` bytes, writable, referenced by nothing else.
    let buf = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, len) };
    for (i, b) in buf.iter_mut().enumerate() {
        *b = fill(i);
    }
    a
}

/// Unmap `a..a + len`, a mapping made by [`map_anon`] that nothing references any more.
pub fn unmap(a: usize, len: usize) {
    let p = std::ptr::NonNull::new(a as *mut std::ffi::c_void).expect("a mapped address");
    // SAFETY: the caller's own mapping, with no reference into it left.
    unsafe { nix::sys::mman::munmap(p, len) }.expect("munmap");
}
