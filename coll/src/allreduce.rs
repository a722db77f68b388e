//! Allreduce: recursive doubling, ring (reduce-scatter + allgather), Rabenseifner, or a tree
//! reduce to rank 0 followed by a broadcast along the same tree (binomial, k-nomial, flat
//! binary, star, bin/bin, bin/star).

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{rabenseifner, recdbl, ring, tree, BuildContext};

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let len = c.count * c.es;
    let data = Region::new(Buf::Recv, 0, len);
    let send = Region::new(Buf::Send, 0, len);
    if alg == Alg::RecDbl {
        // Sends `send` itself in its first exchange (no round of its own for the copy).
        recdbl::allreduce_from(&mut b, c.rank, c.n, send, data);
        return b.finish();
    }
    b.copy(send, data);
    b.next();
    match alg {
        Alg::Ring => {
            let blocks = ring::even_blocks(c.count, c.n, c.es);
            ring::reduce_scatter(&mut b, c.rank, c.n, Buf::Recv, &blocks);
            ring::allgather(&mut b, c.rank, c.n, Buf::Recv, &blocks);
        }
        Alg::Rabenseifner => rabenseifner::allreduce(&mut b, c.rank, c.n, data, c.count, c.es),
        a => {
            let t = c.tree(a, 0);
            tree::reduce(&mut b, &t, data);
            tree::bcast(&mut b, &t, data, len.max(1));
        }
    }
    b.finish()
}
