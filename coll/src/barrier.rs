//! Barrier: dissemination (`bruck`) or fan-in/fan-out along any tree shape.

use crate::schedule::{Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{bruck, tree, BuildContext};

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    match alg {
        Alg::Bruck => bruck::barrier(&mut b, c.rank, c.n),
        a => tree::fan_in_out(&mut b, &c.tree(a, 0)),
    }
    b.finish()
}
