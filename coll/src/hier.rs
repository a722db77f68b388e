//! Hierarchical trees: one tree between node leaders and one inside each node, composed into
//! a single tree over the communicator's ranks (bin/bin: binary and binary; bin/star: binary
//! between leaders, star inside nodes).
//!
//! A node's leader is its lowest rank, except on the root's node where it is the root. The
//! composed tree is then used by the ordinary tree schedules (`tree.rs`), as point-to-point
//! steps on the parent communicator: no node-local or leader sub-communicators (and no
//! extra context ids) are needed. A small allreduce over K nodes crosses node boundaries
//! exactly 2·(K−1) times: K−1 edges between leaders, once up and once down.

use crate::tree::{shape_idx, Shape, Tree};

/// The nodes of a communicator: for each node (in order of its lowest rank) its ranks in
/// ascending order.
pub fn groups(nodes: &[u32]) -> Vec<Vec<u32>> {
    let mut ids: Vec<u32> = Vec::new();
    let mut out: Vec<Vec<u32>> = Vec::new();
    for (r, &n) in nodes.iter().enumerate() {
        match ids.iter().position(|&x| x == n) {
            Some(i) => out[i].push(r as u32),
            None => {
                ids.push(n);
                out.push(vec![r as u32]);
            }
        }
    }
    out
}

/// Number of distinct nodes.
pub fn node_count(nodes: &[u32]) -> usize {
    groups(nodes).len()
}

/// The composed tree rooted at `root`, seen from `rank`.
pub fn tree(nodes: &[u32], rank: u32, root: u32, inter: Shape, intra: Shape) -> Tree {
    let gs = groups(nodes);
    let leader = |g: &Vec<u32>| if g.contains(&root) { root } else { g[0] };
    let leaders: Vec<u32> = gs.iter().map(leader).collect();
    let my_g = gs.iter().position(|g| g.contains(&rank)).expect("rank has a node");
    let root_g = gs.iter().position(|g| g.contains(&root)).expect("root has a node");
    let members = &gs[my_g];
    let me_i = members.iter().position(|&r| r == rank).expect("member");
    let lead_i = members.iter().position(|&r| r == leaders[my_g]).expect("leader");
    let (ip, ich) = shape_idx(intra, me_i, members.len(), lead_i);
    let mut t = Tree { parent: ip.map(|i| members[i]), children: Vec::new() };
    if rank == leaders[my_g] {
        let (lp, lch) = shape_idx(inter, my_g, gs.len(), root_g);
        t.parent = lp.map(|i| leaders[i]);
        // Intra children after inter ones in the list; bcast sends in reverse list order,
        // so... put inter children last so that they are served first.
        t.children.extend(ich.iter().map(|&i| members[i]));
        t.children.extend(lch.iter().map(|&i| leaders[i]));
    } else {
        t.children.extend(ich.iter().map(|&i| members[i]));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank reachable from the root exactly once, parent/child links consistent.
    fn check(nodes: &[u32], root: u32, inter: Shape, intra: Shape) -> usize {
        let n = nodes.len() as u32;
        let ts: Vec<Tree> = (0..n).map(|r| tree(nodes, r, root, inter, intra)).collect();
        let mut seen = vec![false; n as usize];
        let mut stack = vec![root];
        let mut cross = 0;
        assert_eq!(ts[root as usize].parent, None);
        while let Some(r) = stack.pop() {
            assert!(!seen[r as usize]);
            seen[r as usize] = true;
            for &c in &ts[r as usize].children {
                assert_eq!(ts[c as usize].parent, Some(r));
                if nodes[c as usize] != nodes[r as usize] {
                    cross += 1;
                }
                stack.push(c);
            }
        }
        assert!(seen.iter().all(|&s| s));
        cross
    }

    #[test]
    fn composed_trees_are_trees() {
        for nodes in [vec![0, 0, 0, 1], vec![0, 0, 1, 1, 2], vec![0, 1, 0, 1, 2, 2, 2], vec![0], vec![3, 3]] {
            let k = node_count(&nodes);
            for root in 0..nodes.len() as u32 {
                for (a, b) in [(Shape::Binary, Shape::Binary), (Shape::Binary, Shape::Star)] {
                    assert_eq!(check(&nodes, root, a, b), k - 1, "{nodes:?} root {root}");
                }
            }
        }
    }
}
