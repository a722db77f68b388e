//! Bootstrap probe for the PMIx client backend: run it under a PMIx server, e.g.
//! `mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 target/debug/examples/pmix_probe`.
//!
//! Every rank prints its place in the job, publishes rank-specific bytes, commits, fences, reads
//! every rank's value back and checks it, checks the error paths (missing key, bad rank), and
//! prints `rank R OK` and exits 0, or prints `rank R FAILED: …` and exits 1.

use weft_pmix::{Runtime, RuntimeError};

fn payload(rank: u32) -> Vec<u8> {
    // Rank-specific, variable length, includes NUL and high bytes.
    let mut v = format!("endpoint-of-rank-{rank}:").into_bytes();
    v.extend((0..(rank as usize % 7) * 13 + 3).map(|i| (i as u8).wrapping_mul(31) ^ rank as u8));
    v.push(0);
    v.push(0xff);
    v
}

fn run(rt: &mut dyn Runtime) -> Result<(), String> {
    let (rank, size) = (rt.rank(), rt.size());
    let nodes: Vec<u32> =
        (0..size).map(|r| rt.node_of(r)).collect::<Result<_, _>>().map_err(|e| format!("node_of: {e}"))?;
    println!(
        "rank {rank}/{size} backend={} job={} node={} local_peers={:?} nodes={:?}",
        rt.backend(),
        rt.job_id(),
        rt.node_id(),
        rt.local_peers(),
        nodes
    );
    if nodes[rank as usize] != rt.node_id() {
        return Err(format!("node_of(self)={} != node_id={}", nodes[rank as usize], rt.node_id()));
    }
    let expect_local: Vec<u32> = (0..size).filter(|&r| nodes[r as usize] == rt.node_id()).collect();
    if rt.local_peers() != expect_local.as_slice() {
        return Err(format!("local_peers {:?} != ranks on my node {expect_local:?}", rt.local_peers()));
    }
    rt.put("probe", &payload(rank)).map_err(|e| format!("put: {e}"))?;
    rt.put("empty", &[]).map_err(|e| format!("put empty: {e}"))?;
    rt.commit().map_err(|e| format!("commit: {e}"))?;
    rt.fence().map_err(|e| format!("fence: {e}"))?;
    for r in 0..size {
        let got = rt.get(r, "probe").map_err(|e| format!("get(rank {r}): {e}"))?;
        if got != payload(r) {
            return Err(format!("get(rank {r}) returned {got:?}, expected {:?}", payload(r)));
        }
        let empty = rt.get(r, "empty").map_err(|e| format!("get empty(rank {r}): {e}"))?;
        if !empty.is_empty() {
            return Err(format!("get empty(rank {r}) returned {empty:?}"));
        }
    }
    match rt.get((rank + 1) % size, "never-put") {
        Err(RuntimeError::NotFound { .. }) => {}
        other => return Err(format!("get of a missing key returned {other:?}, expected NotFound")),
    }
    match rt.get(size, "probe") {
        Err(RuntimeError::BadRank { .. }) => {}
        other => return Err(format!("get of rank {size} returned {other:?}, expected BadRank")),
    }
    if !matches!(rt.node_of(size), Err(RuntimeError::BadRank { .. })) {
        return Err("node_of(size) did not return BadRank".into());
    }
    let mut dead = Vec::new();
    rt.poll_terminated(&mut dead);
    if !dead.is_empty() {
        return Err(format!("poll_terminated reported {dead:?} in a healthy job"));
    }
    // Second fence: everyone is done reading before anyone finalizes.
    rt.fence().map_err(|e| format!("final fence: {e}"))?;
    rt.finalize().map_err(|e| format!("finalize: {e}"))?;
    Ok(())
}

fn main() {
    let mut rt = match weft_pmix::from_env() {
        Ok(rt) => rt,
        Err(e) => {
            println!("rank ? FAILED: init: {e}");
            std::process::exit(1);
        }
    };
    let rank = rt.rank();
    match run(rt.as_mut()) {
        Ok(()) => println!("rank {rank} OK"),
        Err(e) => {
            println!("rank {rank} FAILED: {e}");
            std::process::exit(1);
        }
    }
}
