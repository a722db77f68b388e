//! Allgather: ring, recursive doubling (powers of two; Bruck otherwise), Bruck; allgatherv:
//! ring.

use crate::schedule::{Buf, Reg, Sb, Schedule};
use crate::select::Alg;
use crate::{bruck, recdbl, ring, Ctx};

pub(crate) fn build(c: &Ctx, alg: Alg) -> Schedule {
    let mut b = Sb::new();
    let (n, blk) = (c.n as usize, c.count * c.es);
    let mine = Reg::new(Buf::Send, 0, blk);
    let out = Reg::new(Buf::Recv, 0, n * blk);
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

pub(crate) fn build_v(c: &Ctx) -> Schedule {
    let mut b = Sb::new();
    let blocks: Vec<(usize, usize)> =
        (0..c.n as usize).map(|i| (c.rdispls[i] * c.es, c.rcounts[i] * c.es)).collect();
    let me = c.rank as usize;
    b.copy(Reg::new(Buf::Send, 0, blocks[me].1), Reg::new(Buf::Recv, blocks[me].0, blocks[me].1));
    b.next();
    ring::allgather(&mut b, c.rank, c.n, Buf::Recv, &blocks);
    b.finish()
}
