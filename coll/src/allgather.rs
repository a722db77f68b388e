//! Allgather: ring, recursive doubling (powers of two; Bruck otherwise), Bruck; allgatherv:
//! ring.

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{bruck, recdbl, ring, BuildContext};

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let (n, blk) = (c.n as usize, c.count * c.es);
    let mine = Region::new(Buf::Send, 0, blk);
    let out = Region::new(Buf::Recv, 0, n * blk);
    let me = c.rank as usize;
    match alg {
        Alg::RecDbl if c.n.is_power_of_two() => {
            b.copy(mine, out.sub(me * blk, blk));
            b.next();
            recdbl::allgather(&mut b, c.rank, c.n, out, blk);
        }
        Alg::Ring => {
            b.copy(mine, out.sub(me * blk, blk));
            b.next();
            let blocks: Vec<(usize, usize)> = (0..n).map(|i| (i * blk, blk)).collect();
            ring::allgather(&mut b, c.rank, c.n, Buf::Recv, &blocks);
        }
        _ => bruck::allgather(&mut b, c.rank, c.n, mine, out, blk),
    }
    b.finish()
}

pub(crate) fn build_v(c: &BuildContext) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let blocks: Vec<(usize, usize)> =
        (0..c.n as usize).map(|i| (c.rdispls[i] * c.es, c.rcounts[i] * c.es)).collect();
    let me = c.rank as usize;
    b.copy(Region::new(Buf::Send, 0, blocks[me].1), Region::new(Buf::Recv, blocks[me].0, blocks[me].1));
    b.next();
    ring::allgather(&mut b, c.rank, c.n, Buf::Recv, &blocks);
    b.finish()
}
