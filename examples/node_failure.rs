//! Whole-node failure, run by `tests/failure.rs` under `weft-run --nodes 2 --kill-node 1@T`:
//! `node_failure V1,V2,...` names the ranks of the node that will be killed. Each survivor
//! blocks in a receive from one victim; the launcher kills the node; every survivor must get
//! `ProcFailed`, then learn that *all* victims failed, then keep communicating.

use std::time::{Duration, Instant};

fn fail(msg: String) -> ! {
    eprintln!("node_failure: FAILED: {msg}");
    std::process::exit(1);
}

fn main() {
    let victims: Vec<u32> = std::env::args()
        .nth(1)
        .unwrap_or_else(|| fail("usage: node_failure V1,V2,...".into()))
        .split(',')
        .map(|v| v.parse().unwrap_or_else(|_| fail(format!("bad rank {v}"))))
        .collect();
    let w = weft::init().unwrap_or_else(|e| fail(format!("init: {e}")));
    let c = w.world();
    let me = c.rank();
    c.barrier().unwrap_or_else(|e| fail(format!("barrier: {e}")));
    let mut b = [0u8; 8];
    if victims.contains(&me) {
        // Wait for a message that never comes; the launcher kills this node.
        let _ = c.recv(&mut b, weft::ANY_SOURCE, 77);
        fail("victim survived".into());
    }
    // `NODE_KILL=NODE@MS`: rank 0 has the launcher kill that node MS ms from now (after init,
    // however long init took), while the survivors are blocked in their receives.
    if let (0, Ok(spec)) = (me, std::env::var("NODE_KILL")) {
        let (node, ms) = spec.split_once('@').unwrap_or_else(|| fail(format!("bad NODE_KILL {spec}")));
        let node: u32 = node.parse().unwrap_or_else(|_| fail(format!("bad node in {spec}")));
        let ms: u64 = ms.parse().unwrap_or_else(|_| fail(format!("bad delay in {spec}")));
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            let mut ctl = weft_pmix::launcher::LauncherControl::connect()
                .unwrap_or_else(|e| fail(format!("launcher control: {e}")));
            ctl.kill_node(node).unwrap_or_else(|e| fail(format!("kill_node: {e}")));
        });
    }
    let survivors: Vec<u32> = (0..c.size()).filter(|r| !victims.contains(r)).collect();
    let idx = survivors.iter().position(|&r| r == me).unwrap();
    let target = victims[idx % victims.len()];
    match c.recv(&mut b, target as i32, 1) {
        Err(e) if e.is_proc_failed() => {
            println!("node_failure: rank {me} recv from {target} ended with: {e}")
        }
        other => fail(format!("rank {me}: recv from killed rank {target} returned {other:?}")),
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !victims.iter().all(|v| w.failed_world_ranks().contains(v)) {
        w.progress();
        if Instant::now() > deadline {
            fail(format!("rank {me}: knows only {:?} of {victims:?}", w.failed_world_ranks()));
        }
    }
    let mut failed = c.get_failed().unwrap();
    failed.sort();
    println!("node_failure: rank {me} knows failed {failed:?}");
    println!("node_failure: rank {me} sources {:?}", w.failures_by_source());
    // Survivors keep working: each sends its rank to the next survivor.
    let next = survivors[(idx + 1) % survivors.len()];
    let prev = survivors[(idx + survivors.len() - 1) % survivors.len()];
    let me8 = (me as u64).to_le_bytes();
    let st = w
        .scope(|s| {
            let r = c.irecv(s, &mut b, prev as i32, 2)?;
            let q = c.isend(s, &me8, next, 2)?;
            weft::wait_all(&mut [r, q])
        })
        .unwrap_or_else(|e| fail(format!("rank {me}: survivor ring: {e}")));
    if st[0].source != prev || u64::from_le_bytes(b) != prev as u64 {
        fail("survivor ring data".into());
    }
    println!("node_failure: rank {me} survivors OK");
    w.finalize().unwrap_or_else(|e| fail(format!("finalize: {e}")));
}
