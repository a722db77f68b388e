//! Ring algorithms: allgather(v) in n−1 steps, and the commutative reduce-scatter in n−1
//! steps that, followed by the ring allgather, is the bandwidth-optimal ring allreduce.

use crate::schedule::{Buf, Region, ScheduleBuilder};

fn left(rank: u32, n: u32) -> u32 {
    (rank + n - 1) % n
}
fn right(rank: u32, n: u32) -> u32 {
    (rank + 1) % n
}

/// Ring allgather over blocks `(offset, len)` of buffer `w`; this rank's block is in place.
pub fn allgather(b: &mut ScheduleBuilder, rank: u32, n: u32, w: Buf, blocks: &[(usize, usize)]) {
    let blk = |i: u32| Region::new(w, blocks[i as usize].0, blocks[i as usize].1);
    for s in 0..n.saturating_sub(1) {
        let sb = (rank + n - s) % n;
        let rb = (rank + 2 * n - s - 1) % n;
        b.send(right(rank, n), blk(sb));
        b.recv(left(rank, n), blk(rb));
        b.next();
    }
}

/// Ring reduce-scatter (commutative operations): `w` holds this rank's full contribution;
/// afterwards block `rank` of `w` holds the reduction of every rank's block `rank`.
pub fn reduce_scatter(b: &mut ScheduleBuilder, rank: u32, n: u32, w: Buf, blocks: &[(usize, usize)]) {
    if n < 2 {
        return;
    }
    let maxlen = blocks.iter().map(|x| x.1).max().unwrap_or(0);
    let tmp = b.tmp(maxlen);
    let blk = |i: u32| Region::new(w, blocks[i as usize].0, blocks[i as usize].1);
    b.next();
    for s in 0..n - 1 {
        let sb = (rank + 2 * n - s - 1) % n;
        let rb = (rank + 2 * n - s - 2) % n;
        let t = tmp.sub(0, blocks[rb as usize].1);
        b.send(right(rank, n), blk(sb));
        b.recv(left(rank, n), t);
        b.reduce(t, blk(rb), false);
        b.next();
    }
}

/// Split `count` elements of `es` bytes into `n` blocks (the first `count % n` one larger).
pub fn even_blocks(count: usize, n: u32, es: usize) -> Vec<(usize, usize)> {
    let n = n as usize;
    let (q, r) = (count / n, count % n);
    let mut off = 0;
    (0..n)
        .map(|i| {
            let len = (q + usize::from(i < r)) * es;
            let b = (off, len);
            off += len;
            b
        })
        .collect()
}
