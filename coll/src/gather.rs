//! Gather: binomial (subtrees are contiguous relative-rank ranges, gathered in a scratch
//! buffer and rotated into place at the root) or linear; gatherv: linear.

use crate::schedule::{Buf, Region, Schedule, ScheduleBuilder};
use crate::select::Alg;
use crate::BuildContext;

/// Size of the binomial subtree of relative rank `rel` in a tree of `n`.
pub(crate) fn subtree(rel: usize, n: usize) -> usize {
    if rel == 0 {
        n
    } else {
        (1usize << rel.trailing_zeros()).min(n - rel)
    }
}

/// Children of relative rank `rel` with their subtree sizes, ascending.
pub(crate) fn children(rel: usize, n: usize) -> Vec<(usize, usize)> {
    let lim = if rel == 0 { n.next_power_of_two() } else { 1 << rel.trailing_zeros() };
    let mut out = Vec::new();
    let mut m = 1;
    while m < lim {
        if rel + m < n {
            out.push((rel + m, subtree(rel + m, n)));
        }
        m <<= 1;
    }
    out
}

pub(crate) fn build(c: &BuildContext, alg: Alg) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let (n, blk) = (c.n as usize, c.count * c.es);
    let root = c.root as usize;
    let me = c.rank as usize;
    let mine = Region::new(Buf::Send, 0, blk);
    match alg {
        Alg::Binomial => {
            let rel = (me + n - root) % n;
            let abs = |r: usize| ((r + root) % n) as u32;
            let size = subtree(rel, n);
            let acc =
                if rel == 0 && root == 0 { Region::new(Buf::Recv, 0, n * blk) } else { b.tmp(size * blk) };
            b.copy(mine, acc.sub(0, blk));
            b.next();
            for (ch, sz) in children(rel, n) {
                b.recv(abs(ch), acc.sub((ch - rel) * blk, sz * blk));
            }
            b.next();
            if rel != 0 {
                let parent = rel & (rel - 1);
                b.send(abs(parent), acc.sub(0, size * blk));
            } else if root != 0 {
                let first = n - root;
                b.copy(acc.sub(0, first * blk), Region::new(Buf::Recv, root * blk, first * blk));
                b.copy(acc.sub(first * blk, root * blk), Region::new(Buf::Recv, 0, root * blk));
            }
        }
        _ => {
            if me == root {
                for i in 0..n {
                    if i != root {
                        b.recv(i as u32, Region::new(Buf::Recv, i * blk, blk));
                    }
                }
                b.copy(mine, Region::new(Buf::Recv, root * blk, blk));
            } else {
                b.send(c.root, mine);
            }
        }
    }
    b.finish()
}

pub(crate) fn build_v(c: &BuildContext) -> Schedule {
    let mut b = ScheduleBuilder::new();
    let mine = Region::new(Buf::Send, 0, c.count * c.es);
    if c.rank == c.root {
        for i in 0..c.n as usize {
            let r = Region::new(Buf::Recv, c.rdispls[i] * c.es, c.rcounts[i] * c.es);
            if i as u32 == c.root {
                b.copy(mine, r);
            } else {
                b.recv(i as u32, r);
            }
        }
    } else {
        b.send(c.root, mine);
    }
    b.finish()
}
