//! Inclusive and exclusive scan: recursive doubling or linear chain (both keep rank order).

use crate::schedule::{Buf, Reg, Sb, Schedule};
use crate::select::Alg;
use crate::{recdbl, Ctx};

pub(crate) fn build(c: &Ctx, alg: Alg, exclusive: bool) -> Schedule {
    let len = c.count * c.es;
    let (s, r) = (Reg::new(Buf::Send, 0, len), Reg::new(Buf::Recv, 0, len));
    let mut b = Sb::new();
    match alg {
        Alg::Linear => recdbl::scan_linear(&mut b, c.rank, c.n, s, r, exclusive),
        _ => recdbl::scan(&mut b, c.rank, c.n, s, r, exclusive),
    }
    b.finish()
}
