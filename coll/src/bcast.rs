//! Broadcast along a tree (binomial, k-nomial, binary, star, bin/bin, bin/star); messages
//! above 128 KiB are pipelined in 64 KiB segments.

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{tree, BuildContext};

const SEG: usize = 64 << 10;

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let len = c.count * c.es;
    let seg = if len > 2 * SEG { (SEG / c.es).max(1) * c.es } else { len };
    tree::bcast(&mut b, &c.tree(alg, c.root), Region::new(Buf::Recv, 0, len), seg);
    b.finish()
}
