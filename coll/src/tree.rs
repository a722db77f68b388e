//! Tree shapes (binomial, k-nomial, binary, star) and the tree-based schedules built on them:
//! broadcast (segmented for large messages), reduction to a root, fan-in/fan-out (barrier).
//!
//! A tree is seen from one rank: its parent and its children. Children are listed in the
//! order of their subtrees' ranks (for binomial and k-nomial trees rooted at rank 0 each
//! child's subtree is a contiguous rank range above this rank, so reducing children in list
//! order keeps the rank order that non-commutative operations need).

use crate::schedule::{Buf, Region, ScheduleBuilder};

/// This rank's view of a tree over communicator ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tree {
    /// Parent rank (`None` at the root).
    pub parent: Option<u32>,
    /// Children, in ascending relative order.
    pub children: Vec<u32>,
}

/// A single-level tree shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// k-nomial of radix k (k = 2: binomial).
    Knomial(u32),
    /// Binary tree in breadth-first numbering.
    Binary,
    /// Star: the root is everybody's parent.
    Star,
}

/// Parent and children of index `me` in a tree of `n` indices rooted at `root`.
pub fn shape_idx(shape: Shape, me: usize, n: usize, root: usize) -> (Option<usize>, Vec<usize>) {
    let rel = (me + n - root) % n;
    let abs = |r: usize| (r + root) % n;
    let (p, ch): (Option<usize>, Vec<usize>) = match shape {
        Shape::Knomial(k) => {
            let k = k.max(2) as usize;
            let mut mask = 1usize;
            let mut parent = None;
            while mask < n {
                if !rel.is_multiple_of(k * mask) {
                    parent = Some(rel - rel % (k * mask));
                    break;
                }
                mask *= k;
            }
            let mut ch = Vec::new();
            let mut m = 1usize;
            while m < mask.min(n) {
                for j in 1..k {
                    let c = rel + j * m;
                    if c < n {
                        ch.push(c);
                    }
                }
                m *= k;
            }
            (parent, ch)
        }
        Shape::Binary => {
            let parent = if rel == 0 { None } else { Some((rel - 1) / 2) };
            let ch = [2 * rel + 1, 2 * rel + 2].into_iter().filter(|&c| c < n).collect();
            (parent, ch)
        }
        Shape::Star => {
            if rel == 0 {
                (None, (1..n).collect())
            } else {
                (Some(0), Vec::new())
            }
        }
    };
    (p.map(abs), ch.into_iter().map(abs).collect())
}

/// The tree of `shape` over all `n` ranks, rooted at `root`, seen from `rank`.
pub fn flat(shape: Shape, rank: u32, n: u32, root: u32) -> Tree {
    let (p, ch) = shape_idx(shape, rank as usize, n as usize, root as usize);
    Tree { parent: p.map(|x| x as u32), children: ch.into_iter().map(|x| x as u32).collect() }
}

/// Broadcast `data` from the tree root. Messages larger than `seg` bytes are cut into
/// segments that flow down the tree in a pipeline (segment i goes to the children while
/// segment i+1 arrives from the parent).
pub fn bcast(b: &mut ScheduleBuilder, t: &Tree, data: Region, seg: usize) {
    let seg = seg.max(1);
    let nseg = data.len.div_ceil(seg).max(1);
    let part = |i: usize| {
        let off = i * seg;
        data.sub(off, seg.min(data.len - off.min(data.len)))
    };
    if t.parent.is_none() {
        for i in 0..nseg {
            for &c in t.children.iter().rev() {
                b.send(c, part(i));
            }
            if nseg > 1 {
                b.next();
            }
        }
        return;
    }
    let p = t.parent.expect("checked");
    for i in 0..=nseg {
        if i < nseg {
            b.recv(p, part(i));
        }
        if i > 0 {
            for &c in t.children.iter().rev() {
                b.send(c, part(i - 1));
            }
        }
        b.next();
    }
}

/// Reduce `acc` (this rank's contribution, already in place) up the tree: on return of the
/// schedule the tree root's `acc` holds `acc_0 ∘ acc_1 ∘ …` (children combined in list
/// order, as the right operand); every non-root sends its partial result to its parent.
pub fn reduce(b: &mut ScheduleBuilder, t: &Tree, acc: Region) {
    if !t.children.is_empty() {
        b.next();
        let tmps: Vec<Region> = t.children.iter().map(|_| b.tmp(acc.len)).collect();
        for (&c, &r) in t.children.iter().zip(&tmps) {
            b.recv(c, r);
        }
        for &r in &tmps {
            b.reduce(r, acc, false);
        }
    }
    if let Some(p) = t.parent {
        b.next();
        b.send(p, acc);
    }
    b.next();
}

/// Zero-byte fan-in to the root then fan-out from it (barrier).
pub fn fan_in_out(b: &mut ScheduleBuilder, t: &Tree) {
    let z = Region::new(Buf::Tmp, 0, 0);
    for &c in &t.children {
        b.recv(c, z);
    }
    b.next();
    if let Some(p) = t.parent {
        b.send(p, z);
        b.next();
        b.recv(p, z);
        b.next();
    }
    for &c in t.children.iter().rev() {
        b.send(c, z);
    }
    b.next();
}
