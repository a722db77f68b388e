//! Reduce-scatter (per-rank counts) and reduce-scatter-block: ring, pairwise (commutative),
//! or `basic` — binomial reduce to rank 0 then linear scatter (keeps rank order).

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{pairwise, ring, tree, BuildContext};

/// `counts[i]` elements for rank i.
pub(crate) fn build(c: &BuildContext, alg: Alg, counts: &[usize]) -> Schedule {
    let es = c.es;
    let mut off = 0;
    let blocks: Vec<(usize, usize)> = counts
        .iter()
        .map(|&k| {
            let x = (off, k * es);
            off += k * es;
            x
        })
        .collect();
    let total = off;
    let me = c.rank as usize;
    let out = Region::new(Buf::Recv, 0, blocks[me].1);
    let mut b = ScheduleBuilder::new();
    match alg {
        Alg::Ring => {
            let w = b.tmp(total);
            b.copy(Region::new(Buf::Send, 0, total), w);
            let wb: Vec<(usize, usize)> = blocks.iter().map(|&(o, l)| (w.off + o, l)).collect();
            ring::reduce_scatter(&mut b, c.rank, c.n, Buf::Tmp, &wb);
            b.copy(Region::new(Buf::Tmp, wb[me].0, wb[me].1), out);
        }
        Alg::Pairwise => pairwise::reduce_scatter(&mut b, c.rank, c.n, &blocks, out),
        _ => {
            let acc = b.tmp(total);
            b.copy(Region::new(Buf::Send, 0, total), acc);
            tree::reduce(&mut b, &tree::flat(tree::Shape::Knomial(2), c.rank, c.n, 0), acc);
            if c.rank == 0 {
                for (i, &(o, l)) in blocks.iter().enumerate().skip(1) {
                    b.send(i as u32, acc.sub(o, l));
                }
                b.copy(acc.sub(blocks[0].0, blocks[0].1), out);
            } else {
                b.recv(0, out);
            }
        }
    }
    b.finish()
}
