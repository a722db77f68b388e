//! N engines in N threads over an in-memory transport (the idea of `engine/tests/inproc.rs`),
//! each with its own collectives state: drives schedules without processes.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use weft_coll::Coll;
use weft_engine::*;

pub use weft_testkit::inproc::{net, Net, EAGER};

fn engine(me: u32, n: u32, net: &Arc<Net>) -> Engine {
    let cfg = EngineConfig {
        slow_period: Duration::from_micros(50),
        progress: ProgressMode::Yield,
        ..Default::default()
    };
    weft_testkit::inproc::engine(me, n, net, cfg)
}

/// Run `f(rank, engine, coll, net)` in `n` threads (node of world rank r: `nodes[r]`, or 0),
/// with a watchdog: a hang fails the test.
pub fn run<F>(n: u32, nodes: &[u32], f: F)
where
    F: Fn(u32, &mut Engine, &mut Coll, &Arc<Net>) + Send + Sync + 'static,
{
    let net = net(n, 64);
    let f = Arc::new(f);
    let nodes: Vec<u32> = (0..n as usize).map(|r| nodes.get(r).copied().unwrap_or(0)).collect();
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let (net, f, nodes) = (net.clone(), f.clone(), nodes.clone());
            std::thread::spawn(move || {
                let mut e = engine(r, n, &net);
                let mut c = Coll::new(nodes, EAGER);
                f(r, &mut e, &mut c, &net);
                if !*net.dead[r as usize].lock().unwrap() {
                    Setup::of(&mut e).finalize();
                }
            })
        })
        .collect();
    let secs = std::env::var("HANG_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    weft_testkit::inproc::join_all(hs, Duration::from_secs(secs));
}
