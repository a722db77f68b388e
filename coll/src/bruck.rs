//! Bruck-style algorithms: the dissemination barrier (⌈log₂ n⌉ rounds, any n) and the Bruck
//! allgather (⌈log₂ n⌉ rounds for any n, then one local rotation).

use crate::schedule::{Buf, Region, ScheduleBuilder};

/// Dissemination barrier.
pub fn barrier(b: &mut ScheduleBuilder, rank: u32, n: u32) {
    let z = Region::new(Buf::Tmp, 0, 0);
    let mut dist = 1;
    while dist < n {
        b.send((rank + dist) % n, z);
        b.recv((rank + n - dist) % n, z);
        b.next();
        dist <<= 1;
    }
}

/// Bruck allgather of `blk`-byte blocks: `mine` is this rank's block, `out` receives all n
/// blocks in rank order.
pub fn allgather(b: &mut ScheduleBuilder, rank: u32, n: u32, mine: Region, out: Region, blk: usize) {
    let n_ = n as usize;
    let t = b.tmp(n_ * blk);
    b.copy(mine, t.sub(0, blk));
    b.next();
    let mut dist = 1usize;
    while dist < n_ {
        let cnt = dist.min(n_ - dist);
        b.send((rank + n - dist as u32) % n, t.sub(0, cnt * blk));
        b.recv((rank + dist as u32) % n, t.sub(dist * blk, cnt * blk));
        b.next();
        dist <<= 1;
    }
    // Block j of t is rank (rank + j) % n's.
    let r = rank as usize;
    let first = n_ - r; // blocks j < first land at ranks r..n
    b.copy(t.sub(0, first * blk), out.sub(r * blk, first * blk));
    if r > 0 {
        b.copy(t.sub(first * blk, r * blk), out.sub(0, r * blk));
    }
    b.next();
}
