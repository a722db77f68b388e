//! Barrier: dissemination (`bruck`) or fan-in/fan-out along any tree shape.

use crate::schedule::{Sb, Schedule};
use crate::select::Alg;
use crate::{bruck, tree, Ctx};

pub(crate) fn build(c: &Ctx, alg: Alg) -> Schedule {
    let mut b = Sb::new();
    match alg {
        Alg::Bruck => bruck::barrier(&mut b, c.rank, c.n),
        a => tree::fan_in_out(&mut b, &c.tree(a, 0)),
    }
    b.finish()
}
