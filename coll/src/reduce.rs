//! Reduce to a root along a tree. Non-commutative operations reduce along the binomial or
//! k-nomial tree rooted at rank 0 (which keeps rank order) and rank 0 forwards the result.

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::{tree, BuildContext};

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let len = c.count * c.es;
    let troot = if c.commute { c.root } else { 0 };
    let t = c.tree(alg, troot);
    let acc = if c.rank == troot && c.rank == c.root { Region::new(Buf::Recv, 0, len) } else { b.tmp(len) };
    b.copy(Region::new(Buf::Send, 0, len), acc);
    tree::reduce(&mut b, &t, acc);
    if troot != c.root {
        if c.rank == troot {
            b.send(c.root, acc);
        } else if c.rank == c.root {
            b.recv(troot, Region::new(Buf::Recv, 0, len));
        }
    }
    b.finish()
}
