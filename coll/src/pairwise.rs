//! Pairwise exchange: alltoall(v) in n−1 steps (XOR partners for powers of two, shifted
//! partners otherwise), the linear variant that posts every exchange at once, and the
//! pairwise reduce-scatter (commutative operations).

use crate::schedule::{Buf, Region, ScheduleBuilder};

/// Partner of step `s` (1 ≤ s < n): `(send_to, recv_from)`.
fn partners(rank: u32, n: u32, s: u32) -> (u32, u32) {
    if n.is_power_of_two() {
        (rank ^ s, rank ^ s)
    } else {
        ((rank + s) % n, (rank + n - s) % n)
    }
}

/// Alltoall(v): `sb[i]` / `rb[i]` are the byte blocks `(offset, len)` for rank i in the send
/// and receive buffers. `linear` posts every exchange in one round.
pub fn alltoall(
    b: &mut ScheduleBuilder,
    rank: u32,
    n: u32,
    sb: &[(usize, usize)],
    rb: &[(usize, usize)],
    linear: bool,
) {
    let s = |i: u32| Region::new(Buf::Send, sb[i as usize].0, sb[i as usize].1);
    let r = |i: u32| Region::new(Buf::Recv, rb[i as usize].0, rb[i as usize].1);
    for step in 1..n {
        let (to, from) = partners(rank, n, step);
        b.send(to, s(to));
        b.recv(from, r(from));
        if !linear {
            b.next();
        }
    }
    b.copy(s(rank), r(rank));
    b.next();
}

/// Pairwise reduce-scatter: `rb[i]` are the byte blocks of rank i in the send buffer; the
/// reduction of block `rank` lands in `out`.
pub fn reduce_scatter(b: &mut ScheduleBuilder, rank: u32, n: u32, blocks: &[(usize, usize)], out: Region) {
    let s = |i: u32| Region::new(Buf::Send, blocks[i as usize].0, blocks[i as usize].1);
    b.copy(s(rank), out);
    b.next();
    let t = b.tmp(out.len);
    for step in 1..n {
        let (to, from) = ((rank + step) % n, (rank + n - step) % n);
        b.send(to, s(to));
        b.recv(from, t);
        b.reduce(t, out, false);
        b.next();
    }
}
