//! Alltoall and alltoallv: pairwise exchange or linear (everything posted at once).

use crate::pairwise;
use crate::schedule::{Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::BuildContext;

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let blk = c.count * c.es;
    let blocks: Vec<(usize, usize)> = (0..c.n as usize).map(|i| (i * blk, blk)).collect();
    let mut b = ScheduleBuilder::new();
    pairwise::alltoall(&mut b, c.rank, c.n, &blocks, &blocks, alg == Alg::Linear);
    b.finish()
}

pub(crate) fn build_v(c: &BuildContext, alg: Alg) -> Schedule {
    let es = c.es;
    let sb: Vec<(usize, usize)> = (0..c.n as usize).map(|i| (c.sdispls[i] * es, c.scounts[i] * es)).collect();
    let rb: Vec<(usize, usize)> = (0..c.n as usize).map(|i| (c.rdispls[i] * es, c.rcounts[i] * es)).collect();
    let mut b = ScheduleBuilder::new();
    pairwise::alltoall(&mut b, c.rank, c.n, &sb, &rb, alg == Alg::Linear);
    b.finish()
}
