//! Virtual nodes of `weft-run`: how ranks are placed on nodes (`--nodes`, `--map`) and the
//! timed fault-injection arguments (`--kill-node NODE@SECS`, `--partition NODE@SECS`).

use std::time::Duration;

/// Placement of the job's ranks on virtual nodes: contiguous blocks, node `k` holding
/// `sizes[k]` ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    /// `node_of[r]`: node of rank `r`.
    pub node_of: Vec<u32>,
    /// Ranks of each node, increasing.
    pub ranks: Vec<Vec<u32>>,
}

impl NodePlan {
    /// `n` ranks, `nodes` (`--nodes`) and `map` (`--map`, comma-separated counts). Without
    /// either: one node. `--nodes K` alone: K blocks as even as possible, the first `n % K`
    /// nodes one rank larger (5 on 2 → 3 + 2). `--map` gives the counts explicitly (their sum
    /// must be `n`; K is inferred, and must equal `--nodes` if both are given).
    pub fn new(n: u32, nodes: Option<u32>, map: Option<&str>) -> Result<NodePlan, String> {
        let sizes: Vec<u32> = match (nodes, map) {
            (_, Some(m)) => {
                let mut sizes = Vec::new();
                for part in m.split(',') {
                    let c: u32 = part.trim().parse().map_err(|_| {
                        format!("--map {m:?}: {part:?} is not a rank count (expected e.g. --map 3,1,1)")
                    })?;
                    if c == 0 {
                        return Err(format!("--map {m:?}: every node needs at least one rank"));
                    }
                    sizes.push(c);
                }
                let sum: u64 = sizes.iter().map(|&c| u64::from(c)).sum();
                if sum != u64::from(n) {
                    return Err(format!("--map {m:?} places {sum} ranks, but -n is {n}"));
                }
                if let Some(k) = nodes {
                    if k as usize != sizes.len() {
                        return Err(format!(
                            "--nodes {k} disagrees with --map {m:?} ({} nodes)",
                            sizes.len()
                        ));
                    }
                }
                sizes
            }
            (Some(k), None) => {
                if k == 0 {
                    return Err("--nodes 0: a job needs at least one node".into());
                }
                if k > n {
                    return Err(format!(
                        "--nodes {k} is more than the {n} ranks (-n): a node would be empty"
                    ));
                }
                (0..k).map(|i| n / k + u32::from(i < n % k)).collect()
            }
            (None, None) => vec![n],
        };
        let mut node_of = Vec::with_capacity(n as usize);
        let mut ranks = Vec::with_capacity(sizes.len());
        let mut next = 0u32;
        for (k, &c) in sizes.iter().enumerate() {
            ranks.push((next..next + c).collect());
            node_of.resize(node_of.len() + c as usize, k as u32);
            next += c;
        }
        Ok(NodePlan { node_of, ranks })
    }

    pub fn num_nodes(&self) -> u32 {
        self.ranks.len() as u32
    }
}

/// A `NODE@SECS` argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeAt {
    pub node: u32,
    pub at: Duration,
}

/// Parse `NODE@SECS` (clap value parser; the node range is checked against the plan later).
pub fn parse_node_at(s: &str) -> Result<NodeAt, String> {
    let (n, t) = s.split_once('@').ok_or_else(|| format!("{s:?}: expected NODE@SECS, e.g. 1@0.5"))?;
    let node: u32 = n.trim().parse().map_err(|_| format!("{s:?}: {n:?} is not a node number"))?;
    let secs: f64 = t.trim().parse().map_err(|_| format!("{s:?}: {t:?} is not a number of seconds"))?;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("{s:?}: seconds must be between 0 and 1e9"));
    }
    Ok(NodeAt { node, at: Duration::from_secs_f64(secs) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_blocks() {
        let p = NodePlan::new(5, Some(2), None).unwrap();
        assert_eq!(p.node_of, vec![0, 0, 0, 1, 1]);
        assert_eq!(p.ranks, vec![vec![0, 1, 2], vec![3, 4]]);
        let p = NodePlan::new(4, Some(4), None).unwrap();
        assert_eq!(p.node_of, vec![0, 1, 2, 3]);
        let p = NodePlan::new(3, None, None).unwrap();
        assert_eq!(p.node_of, vec![0, 0, 0]);
        assert_eq!(p.num_nodes(), 1);
    }

    #[test]
    fn explicit_map() {
        let p = NodePlan::new(5, None, Some("3,1,1")).unwrap();
        assert_eq!(p.node_of, vec![0, 0, 0, 1, 2]);
        assert_eq!(p.num_nodes(), 3);
        let p = NodePlan::new(5, Some(3), Some("2,2,1")).unwrap();
        assert_eq!(p.node_of, vec![0, 0, 1, 1, 2]);
    }

    #[test]
    fn bad_plans() {
        for (n, k, m) in [
            (4, Some(0), None),
            (4, Some(5), None),
            (4, None, Some("3,2")),
            (4, None, Some("4,0")),
            (4, None, Some("2,x")),
            (4, None, Some("")),
            (4, None, Some("-1,5")),
            (4, Some(3), Some("2,2")),
        ] {
            assert!(NodePlan::new(n, k, m).is_err(), "{n} {k:?} {m:?}");
        }
    }

    #[test]
    fn node_at() {
        assert_eq!(parse_node_at("1@0.5").unwrap(), NodeAt { node: 1, at: Duration::from_millis(500) });
        assert_eq!(parse_node_at("0@0").unwrap().at, Duration::ZERO);
        for bad in ["1", "x@1", "1@x", "1@-1", "@1", "1@inf", "-1@1"] {
            assert!(parse_node_at(bad).is_err(), "{bad}");
        }
    }
}
