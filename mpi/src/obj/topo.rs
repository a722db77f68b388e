//! Process topologies: Cartesian grids and distributed graphs attached to a communicator, the
//! arithmetic of their constructors and queries, and each topology's neighbor lists for the
//! neighborhood collectives. The topology functions are in `bind/topo.rs`; a communicator's
//! topology is looked up through `obj/comm.rs`.
//!
//! Every topology holds a hidden duplicate of its communicator, made when the topology is
//! created: the neighborhood collectives run on it, so their messages never match the
//! application's. Communicators are created without reordering (`reorder` is accepted and
//! ignored, as the standard allows).

use std::ffi::c_int;

use weft::ops::CommId;

use crate::abi::*;
use crate::error::{err, MpiResult};

/// The shape of a topology.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// A grid of `dims` (row-major rank order), periodic where `periods` says.
    Cart { dims: Vec<c_int>, periods: Vec<bool> },
    /// A distributed graph: this process's in and out neighbors and their weights (`None`:
    /// unweighted).
    Graph {
        sources: Vec<c_int>,
        sweights: Option<Vec<c_int>>,
        dests: Vec<c_int>,
        dweights: Option<Vec<c_int>>,
    },
}

/// A topology: its shape and the hidden communicator its neighborhood collectives use.
pub(crate) struct Topology {
    pub(crate) shape: Shape,
    pub(crate) hidden: CommId,
}

/// The coordinates of `rank` in a grid of `dims` (row-major).
pub(crate) fn coords_of(dims: &[c_int], mut rank: c_int) -> Vec<c_int> {
    let mut c = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        c[i] = rank % dims[i];
        rank /= dims[i];
    }
    c
}

/// The rank at `coords` in a grid, wrapping periodic dimensions; `None` outside a
/// non-periodic one.
pub(crate) fn rank_at(dims: &[c_int], periods: &[bool], coords: &[c_int]) -> Option<c_int> {
    let mut r = 0;
    for i in 0..dims.len() {
        let mut c = coords[i];
        if periods[i] {
            c = c.rem_euclid(dims[i]);
        } else if c < 0 || c >= dims[i] {
            return None;
        }
        r = r * dims[i] + c;
    }
    Some(r)
}

/// The neighbors of `rank` in direction `dim` at distance `disp`: (source, destination), each
/// `MPI_PROC_NULL` off a non-periodic edge.
pub(crate) fn shift(
    dims: &[c_int],
    periods: &[bool],
    rank: c_int,
    dim: usize,
    disp: c_int,
) -> (c_int, c_int) {
    let c = coords_of(dims, rank);
    let at = |d: c_int| {
        let mut x = c.clone();
        x[dim] += d;
        rank_at(dims, periods, &x).unwrap_or(MPI_PROC_NULL)
    };
    (at(-disp), at(disp))
}

/// One neighbor of a neighborhood collective: its rank (or `MPI_PROC_NULL`) and the tag of
/// the message on the hidden communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Peer {
    pub(crate) rank: c_int,
    pub(crate) tag: c_int,
}

impl Shape {
    /// In-neighbors (receive order) and out-neighbors (send order) of `rank`. Cartesian: per
    /// dimension the negative then the positive neighbor; a message sent in direction `j`
    /// carries tag `j` and is received from the opposite direction, so two neighbors that are
    /// the same process (a periodic dimension of size 2) are told apart. Graph: in list order,
    /// tag 0 (edges between the same pair match in order).
    pub(crate) fn neighbors(&self, rank: c_int) -> (Vec<Peer>, Vec<Peer>) {
        match self {
            Shape::Cart { dims, periods } => {
                let (mut ins, mut outs) = (Vec::new(), Vec::new());
                for d in 0..dims.len() {
                    let (src, dst) = shift(dims, periods, rank, d, 1);
                    // Negative neighbor `src`: it sent to us in its positive direction.
                    ins.push(Peer { rank: src, tag: 2 * d as c_int + 1 });
                    ins.push(Peer { rank: dst, tag: 2 * d as c_int });
                    outs.push(Peer { rank: src, tag: 2 * d as c_int });
                    outs.push(Peer { rank: dst, tag: 2 * d as c_int + 1 });
                }
                (ins, outs)
            }
            Shape::Graph { sources, dests, .. } => (
                sources.iter().map(|&rank| Peer { rank, tag: 0 }).collect(),
                dests.iter().map(|&rank| Peer { rank, tag: 0 }).collect(),
            ),
        }
    }
}

/// `n` ints at `p` (`n` ≥ 0; `p` may be null only when `n` is 0).
///
/// # Safety
/// A non-null `p` must hold `n` ints.
pub(crate) unsafe fn ints(p: *const c_int, n: c_int, what: &str) -> MpiResult<Vec<c_int>> {
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "invalid length {n} of `{what}`"));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `{what}` is NULL"));
    }
    // SAFETY: `p` holds `n` ints by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) }.to_vec())
}

/// Balanced factors for the free (zero) entries of `dims` so that their product with the
/// fixed entries is `nnodes`; free entries come out in non-increasing order.
pub(crate) fn dims_create(nnodes: c_int, dims: &mut [c_int]) -> MpiResult {
    if nnodes <= 0 {
        return Err(err!(MPI_ERR_ARG, "invalid number of nodes {nnodes}"));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(err!(MPI_ERR_DIMS, "invalid dimension {d}: entries are >= 0"));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    if nnodes as i64 % fixed != 0 {
        return Err(err!(MPI_ERR_DIMS, "{nnodes} nodes do not fill the fixed dimensions (product {fixed})"));
    }
    let mut rest = nnodes as i64 / fixed;
    let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
    if free.is_empty() {
        return if rest == 1 {
            Ok(())
        } else {
            Err(err!(MPI_ERR_DIMS, "the dimensions' product {fixed} is not {nnodes}"))
        };
    }
    let mut primes = Vec::new();
    let mut p = 2;
    while p * p <= rest {
        while rest % p == 0 {
            primes.push(p);
            rest /= p;
        }
        p += 1;
    }
    if rest > 1 {
        primes.push(rest);
    }
    let mut f = vec![1i64; free.len()];
    for &q in primes.iter().rev() {
        let i = (0..f.len()).min_by_key(|&i| f[i]).expect("non-empty");
        f[i] *= q;
    }
    f.sort_unstable_by(|a, b| b.cmp(a));
    for (k, &i) in free.iter().enumerate() {
        dims[i] = f[k] as c_int;
    }
    Ok(())
}

/// Weights from a weights argument: `MPI_UNWEIGHTED` is `None`, `MPI_WEIGHTS_EMPTY` (or any
/// pointer with `n` = 0) is empty.
///
/// # Safety
/// Any other non-null `p` must hold `n` ints.
pub(crate) unsafe fn weights(p: *const c_int, n: c_int, what: &str) -> MpiResult<Option<Vec<c_int>>> {
    match p as usize {
        MPI_UNWEIGHTED => Ok(None),
        MPI_WEIGHTS_EMPTY => Ok(Some(Vec::new())),
        // SAFETY: by the caller's contract.
        _ => Ok(Some(unsafe { ints(p, n, what)? })),
    }
}

/// A distributed graph's sources, their weights, destinations and their weights.
pub(crate) type Graph = (Vec<c_int>, Option<Vec<c_int>>, Vec<c_int>, Option<Vec<c_int>>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced_and_non_increasing() {
        let run = |n, mut d: Vec<c_int>| dims_create(n, &mut d).map(|_| d);
        assert_eq!(run(12, vec![0, 0]).unwrap(), [4, 3]);
        assert_eq!(run(16, vec![0, 0, 0]).unwrap(), [4, 2, 2]);
        assert_eq!(run(7, vec![0, 0]).unwrap(), [7, 1]);
        assert_eq!(run(12, vec![0, 3, 0]).unwrap(), [2, 3, 2]);
        assert_eq!(run(10, vec![3, 0]).unwrap_err().class, MPI_ERR_DIMS);
        assert_eq!(run(6, vec![2, 3]).unwrap(), [2, 3]);
        assert_eq!(run(6, vec![-1]).unwrap_err().class, MPI_ERR_DIMS);
    }

    #[test]
    fn cartesian_shifts_wrap_only_where_periodic() {
        let (d, p) = (vec![2, 3], vec![false, true]);
        assert_eq!(coords_of(&d, 5), [1, 2]);
        assert_eq!(rank_at(&d, &p, &[1, 3]), Some(3));
        assert_eq!(rank_at(&d, &p, &[2, 0]), None);
        assert_eq!(shift(&d, &p, 0, 0, 1), (MPI_PROC_NULL, 3));
        assert_eq!(shift(&d, &p, 0, 1, 1), (2, 1));
        let (ins, outs) = Shape::Cart { dims: vec![2], periods: vec![true] }.neighbors(0);
        // Both neighbors are rank 1; the tags tell the directions apart.
        assert_eq!(ins, [Peer { rank: 1, tag: 1 }, Peer { rank: 1, tag: 0 }]);
        assert_eq!(outs, [Peer { rank: 1, tag: 0 }, Peer { rank: 1, tag: 1 }]);
    }
}
