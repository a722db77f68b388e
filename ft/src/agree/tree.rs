//! The static reduction trees ([`Tree`]: flat binary, or hierarchical bin/bin over nodes)
//! and a member's view of them: its live parent (nearest live static ancestor, or the root's
//! adoption of orphan tops) and its live children.

use std::collections::HashMap;
use std::sync::Arc;

use crate::FailedView;

/// A static reduction tree over ranks `0..n`.
#[derive(Clone, Debug)]
pub enum Tree {
    /// Binary heap order: parent of `i` is `(i−1)/2`; the order is the rank order.
    Binary { n: u32 },
    /// Any tree given explicitly (hierarchical bin/bin).
    Explicit(Arc<Explicit>),
}

/// An explicit tree: parents, children and an order in which ancestors precede descendants.
#[derive(Clone, Debug)]
pub struct Explicit {
    parent: Vec<u32>,
    children: Vec<Vec<u32>>,
    order: Vec<u32>,
}

const NONE: u32 = u32::MAX;

fn bin_positions(members: &[u32], parent: &mut [u32], children: &mut [Vec<u32>]) {
    for i in 1..members.len() {
        let p = members[(i - 1) / 2];
        parent[members[i] as usize] = p;
        children[p as usize].push(members[i]);
    }
}

impl Tree {
    /// Flat binary tree over `n` ranks.
    pub fn binary(n: u32) -> Tree {
        Tree::Binary { n }
    }

    /// Hierarchical bin/bin tree: `node_of[r]` is rank `r`'s node. The first rank of each
    /// node is its leader; leaders form a binary tree (in order of first appearance), and each
    /// node's ranks a binary tree under their leader. With one node (or one rank per node)
    /// this is a binary tree.
    pub fn bin_bin(node_of: &[u32]) -> Tree {
        let n = node_of.len();
        let mut nodes: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut index: HashMap<u32, usize> = HashMap::new();
        for (r, &nd) in node_of.iter().enumerate() {
            let i = *index.entry(nd).or_insert_with(|| {
                nodes.push((nd, Vec::new()));
                nodes.len() - 1
            });
            nodes[i].1.push(r as u32);
        }
        let mut parent = vec![NONE; n];
        let mut children = vec![Vec::new(); n];
        let leaders: Vec<u32> = nodes.iter().map(|x| x.1[0]).collect();
        bin_positions(&leaders, &mut parent, &mut children);
        for (_, members) in &nodes {
            bin_positions(members, &mut parent, &mut children);
        }
        // Breadth-first order from the root: ancestors before descendants.
        let mut order = Vec::with_capacity(n);
        if n > 0 {
            order.push(leaders[0]);
            let mut i = 0;
            while i < order.len() {
                let x = order[i] as usize;
                order.extend_from_slice(&children[x]);
                i += 1;
            }
        }
        Tree::Explicit(Arc::new(Explicit { parent, children, order }))
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        match self {
            Tree::Binary { n } => *n,
            Tree::Explicit(t) => t.parent.len() as u32,
        }
    }

    fn parent(&self, x: u32) -> Option<u32> {
        match self {
            Tree::Binary { .. } => (x > 0).then(|| (x - 1) / 2),
            Tree::Explicit(t) => Some(t.parent[x as usize]).filter(|&p| p != NONE),
        }
    }

    fn children(&self, x: u32, out: &mut Vec<u32>) {
        match self {
            Tree::Binary { n } => {
                for c in [2 * x as u64 + 1, 2 * x as u64 + 2] {
                    if c < *n as u64 {
                        out.push(c as u32);
                    }
                }
            }
            Tree::Explicit(t) => out.extend_from_slice(&t.children[x as usize]),
        }
    }

    fn static_root(&self) -> u32 {
        match self {
            Tree::Binary { .. } => 0,
            Tree::Explicit(t) => t.order.first().copied().unwrap_or(0),
        }
    }

    /// First rank in tree order not in `failed`.
    fn first_live<F: FailedView + ?Sized>(&self, failed: &F) -> Option<u32> {
        match self {
            Tree::Binary { n } => (0..*n).find(|&r| !failed.has(r)),
            Tree::Explicit(t) => t.order.iter().copied().find(|&r| !failed.has(r)),
        }
    }

    /// True if `x` is a strict descendant of `a` in the static tree.
    pub fn is_descendant(&self, x: u32, a: u32) -> bool {
        let mut p = self.parent(x);
        while let Some(q) = p {
            if q == a {
                return true;
            }
            p = self.parent(q);
        }
        false
    }

    /// Parent of `x` in the view `failed` (`None`: `x` is the root).
    pub fn live_parent<F: FailedView + ?Sized>(&self, x: u32, failed: &F) -> Option<u32> {
        let mut a = self.parent(x);
        while let Some(p) = a {
            if !failed.has(p) {
                return Some(p);
            }
            a = self.parent(p);
        }
        match self.first_live(failed) {
            Some(r) if r != x => Some(r),
            _ => None,
        }
    }

    fn expand<F: FailedView + ?Sized>(&self, x: u32, failed: &F, out: &mut Vec<u32>) {
        let mut st = Vec::new();
        self.children(x, &mut st);
        while let Some(c) = st.pop() {
            if failed.has(c) {
                self.children(c, &mut st);
            } else {
                out.push(c);
            }
        }
    }

    /// Children of `x` in the view `failed` (sorted).
    pub fn live_children<F: FailedView + ?Sized>(&self, x: u32, failed: &F) -> Vec<u32> {
        let mut out = Vec::new();
        self.expand(x, failed, &mut out);
        let root = self.static_root();
        if root != x && failed.has(root) && self.first_live(failed) == Some(x) {
            // The root adopts the other orphan tops.
            let mut tops = Vec::new();
            self.expand(root, failed, &mut tops);
            out.extend(tops.into_iter().filter(|&t| t != x));
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
