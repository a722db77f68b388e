//! Scatter: binomial (the root rotates its buffer into relative order, each subtree's blocks
//! travel as one message) or linear; scatterv: linear.

use crate::gather::{children, subtree};
use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::BuildContext;

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let (n, blk) = (c.n as usize, c.count * c.es);
    let root = c.root as usize;
    let me = c.rank as usize;
    let out = Region::new(Buf::Recv, 0, blk);
    match alg {
        Alg::Binomial => {
            let rel = (me + n - root) % n;
            let abs = |r: usize| ((r + root) % n) as u32;
            let size = subtree(rel, n);
            let src = if rel == 0 && root == 0 {
                Region::new(Buf::Send, 0, n * blk)
            } else {
                let t = b.tmp(size * blk);
                if rel == 0 {
                    let first = n - root;
                    b.copy(Region::new(Buf::Send, root * blk, first * blk), t.sub(0, first * blk));
                    b.copy(Region::new(Buf::Send, 0, root * blk), t.sub(first * blk, root * blk));
                } else {
                    b.recv(abs(rel & (rel - 1)), t);
                }
                b.next();
                t
            };
            for (ch, sz) in children(rel, n).into_iter().rev() {
                b.send(abs(ch), src.sub((ch - rel) * blk, sz * blk));
            }
            b.copy(src.sub(0, blk), out);
        }
        _ => {
            if me == root {
                for i in 0..n {
                    let r = Region::new(Buf::Send, i * blk, blk);
                    if i == root {
                        b.copy(r, out);
                    } else {
                        b.send(i as u32, r);
                    }
                }
            } else {
                b.recv(c.root, out);
            }
        }
    }
    b.finish()
}

pub(crate) fn build_v(c: &BuildContext) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let out = Region::new(Buf::Recv, 0, c.count * c.es);
    if c.rank == c.root {
        for i in 0..c.n as usize {
            let r = Region::new(Buf::Send, c.sdispls[i] * c.es, c.scounts[i] * c.es);
            if i as u32 == c.root {
                b.copy(r, out);
            } else {
                b.send(i as u32, r);
            }
        }
    } else {
        b.recv(c.root, out);
    }
    b.finish()
}
