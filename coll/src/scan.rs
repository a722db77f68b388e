//! Inclusive and exclusive scan: recursive doubling or linear chain (both keep rank order).

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{recdbl, BuildContext};

pub(crate) fn build(c: &BuildContext, alg: Alg, exclusive: bool) -> Schedule {
    let len = c.count * c.es;
    let (s, r) = (Region::new(Buf::Send, 0, len), Region::new(Buf::Recv, 0, len));
    let mut b = ScheduleBuilder::new();
    match alg {
        Alg::Linear => recdbl::scan_linear(&mut b, c.rank, c.n, s, r, exclusive),
        _ => recdbl::scan(&mut b, c.rank, c.n, s, r, exclusive),
    }
    b.finish()
}
