//! Buddy checkpointing with ishrink: every rank keeps its own data block and a copy of its
//! left neighbour's block. A rank dies; the survivors start `ishrink` and, while it is in
//! flight, the dead rank's buddy reloads the lost block from its copy (overlapping work).
//! On the shrunk communicator the data set is complete again: the survivors check the global
//! checksum with an agreement-based reduction over the new communicator.

use std::time::{Duration, Instant};

fn fail(msg: String) -> ! {
    println!("ft_buddy: FAILED: {msg}");
    std::process::exit(1);
}

fn ok<T>(what: &str, r: weft::Result<T>) -> T {
    r.unwrap_or_else(|e| fail(format!("{what}: {e}")))
}

const WORDS: usize = 256;

fn block(owner: u32) -> Vec<u64> {
    (0..WORDS as u64).map(|i| (owner as u64 + 1) * 1_000_003 + i * 7).collect()
}

fn main() {
    let w = ok("init", weft::init());
    let c = w.world();
    let (me, n) = (c.rank(), c.size());
    let victim = n / 2;
    // Each rank's data, and a checkpoint of its left neighbour's data (exchanged for real).
    let mine = block(me);
    let mut buddy_copy = vec![0u8; WORDS * 8];
    let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_le_bytes()).collect();
    ok(
        "checkpoint",
        w.scope(|s| {
            let r = c.irecv(s, &mut buddy_copy, ((me + n - 1) % n) as i32, 1)?;
            let q = c.isend(s, &bytes, (me + 1) % n, 1)?;
            weft::wait_all(&mut [r, q])
        }),
    );
    ok("barrier", c.barrier());
    if me == victim {
        // SAFETY: kill(2) of this very process.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    // Survivors: notice the failure (a receive from the victim fails), then shrink.
    let mut b = [0u8; 1];
    let t = Instant::now();
    if me == (victim + 1) % n {
        let r = c.recv(&mut b, victim as i32, 2);
        if !matches!(&r, Err(e) if e.is_proc_failed()) {
            fail(format!("recv from victim: {r:?}"));
        }
    } else {
        while !w.failed_world_ranks().contains(&victim) {
            w.progress();
            if t.elapsed() > Duration::from_secs(10) {
                fail("failure not seen".into());
            }
        }
    }
    let mut req = ok("ishrink", c.ishrink());
    // While the shrink is in flight: the buddy reloads the lost block.
    let mut held: Vec<(u32, Vec<u64>)> = vec![(me, mine)];
    let mut overlapped = false;
    if me == (victim + 1) % n {
        let lost: Vec<u64> =
            buddy_copy.chunks_exact(8).map(|x| u64::from_le_bytes(x.try_into().unwrap())).collect();
        if lost != block(victim) {
            fail("buddy copy corrupt".into());
        }
        held.push((victim, lost));
        overlapped = ok("test", req.test()).is_none();
    }
    let s = ok("wait shrink", req.wait());
    let dt = t.elapsed();
    if s.size() != n - 1 {
        fail(format!("shrunk size {}", s.size()));
    }
    // Global check on the new communicator: every block 0..n is held by exactly one survivor
    // (agree on the AND of "block i missing" bits, and a checksum ring).
    let mut have = 0u64;
    for (o, _) in &held {
        have |= 1 << o;
    }
    let missing = ok("agree", s.agree(!have));
    if missing & ((1u64 << n) - 1) != 0 {
        fail(format!("blocks missing after recovery: {missing:#x}"));
    }
    let sum: u64 = held.iter().flat_map(|(_, v)| v.iter()).fold(0u64, |a, x| a.wrapping_add(*x));
    let mut total = sum;
    let (r, m) = (s.rank(), s.size());
    // Ring reduction of the checksum over the shrunk communicator.
    let mut buf = [0u8; 8];
    for step in 1..m {
        let to = (r + step) % m;
        let from = (r + m - step) % m;
        let sb = sum.to_le_bytes();
        ok(
            "ring",
            w.scope(|sc| {
                let rr = s.irecv(sc, &mut buf, from as i32, 3)?;
                let q = s.isend(sc, &sb, to, 3)?;
                weft::wait_all(&mut [rr, q])
            }),
        );
        total = total.wrapping_add(u64::from_le_bytes(buf));
    }
    let want: u64 = (0..n).flat_map(block).fold(0u64, |a, x| a.wrapping_add(x));
    if total != want {
        fail(format!("checksum {total} want {want}"));
    }
    println!(
        "ft_buddy: rank {me} OK (shrink {:.2} ms{})",
        dt.as_secs_f64() * 1e3,
        if overlapped { ", reload overlapped the ishrink" } else { "" }
    );
    let _ = w.finalize();
}
