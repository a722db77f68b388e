//! Process topologies: Cartesian grids and distributed graphs attached to a communicator,
//! their constructors and queries (`MPI_Dims_create`, `MPI_Cart_*`, `MPI_Dist_graph_*`,
//! `MPI_Topo_test`), and each topology's neighbor lists for the neighborhood collectives.
//!
//! Every topology holds a hidden duplicate of its communicator, made when the topology is
//! created: the neighborhood collectives run on it, so their messages never match the
//! application's. Communicators are created without reordering (`reorder` is accepted and
//! ignored, as the standard allows).

use std::ffi::c_int;
use std::rc::Rc;

use weft::ops::CommId;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::state::{call, Mpi, On};
use crate::{export, put};

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
fn coords_of(dims: &[c_int], mut rank: c_int) -> Vec<c_int> {
    let mut c = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        c[i] = rank % dims[i];
        rank /= dims[i];
    }
    c
}

/// The rank at `coords` in a grid, wrapping periodic dimensions; `None` outside a
/// non-periodic one.
fn rank_at(dims: &[c_int], periods: &[bool], coords: &[c_int]) -> Option<c_int> {
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
fn shift(dims: &[c_int], periods: &[bool], rank: c_int, dim: usize, disp: c_int) -> (c_int, c_int) {
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

impl Mpi {
    /// The topology of `comm` (`MPI_ERR_TOPOLOGY` if it has none).
    pub(crate) fn topology(&self, comm: MPI_Comm) -> MpiResult<Rc<Topology>> {
        let comms = self.comms.borrow();
        let c = comms.get(comm).ok_or_else(|| crate::obj::comm::invalid(comm))?;
        c.topo.clone().ok_or_else(|| err!(MPI_ERR_TOPOLOGY, "communicator {comm:#x} has no topology"))
    }

    /// The Cartesian grid of `comm`.
    fn cart(&self, comm: MPI_Comm) -> MpiResult<(Vec<c_int>, Vec<bool>)> {
        match &self.topology(comm)?.shape {
            Shape::Cart { dims, periods } => Ok((dims.clone(), periods.clone())),
            Shape::Graph { .. } => Err(err!(MPI_ERR_TOPOLOGY, "communicator {comm:#x} is not Cartesian")),
        }
    }

    /// Give the new communicator `id` (made from `parent`) the topology `shape` and a hidden
    /// duplicate (collective over `id`).
    fn with_topology(&self, parent: MPI_Comm, id: CommId, shape: Shape) -> MpiResult<MPI_Comm> {
        let hidden = self.core.comm_dup(id)?;
        let h = self.new_comm(parent, id);
        let mut comms = self.comms.borrow_mut();
        comms.get_mut(h).expect("just inserted").topo = Some(Rc::new(Topology { shape, hidden }));
        Ok(h)
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

/// Copy `v` to the array `p` (of at least `v.len()` ints).
///
/// # Safety
/// A non-null `p` must be valid for `v.len()` int writes.
unsafe fn write_ints(p: *mut c_int, v: &[c_int], what: &str) -> MpiResult {
    if v.is_empty() {
        return Ok(());
    }
    if p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `{what}` is NULL"));
    }
    // SAFETY: by the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, v.len()) };
    Ok(())
}

/// Balanced factors for the free (zero) entries of `dims` so that their product with the
/// fixed entries is `nnodes`; free entries come out in non-increasing order.
fn dims_create(nnodes: c_int, dims: &mut [c_int]) -> MpiResult {
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

export! {
    /// `MPI_Dims_create`: a balanced grid of `nnodes` in `ndims` dimensions (entries already
    /// positive are kept).
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) {
        call("MPI_Dims_create", On::NoObject, |_| {
            // SAFETY: `dims` holds `ndims` ints by the caller's contract.
            let mut d = unsafe { ints(dims, ndims, "dims")? };
            dims_create(nnodes, &mut d)?;
            // SAFETY: as above.
            unsafe { write_ints(dims, &d, "dims") }
        })
    }
}

export! {
    /// `MPI_Cart_create` (collective): the first `prod(dims)` ranks of `comm` form the grid;
    /// the others get `MPI_COMM_NULL`.
    fn MPI_Cart_create / PMPI_Cart_create(comm: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, _reorder: c_int, comm_cart: *mut MPI_Comm) {
        call("MPI_Cart_create", On::Comm(comm), |m| {
            if comm_cart.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `comm_cart` is NULL"));
            }
            let id = m.comm(comm)?;
            // SAFETY: `dims` and `periods` hold `ndims` ints by the caller's contract.
            let (d, p) = unsafe { (ints(dims, ndims, "dims")?, ints(periods, ndims, "periods")?) };
            if let Some(x) = d.iter().find(|&&x| x <= 0) {
                return Err(err!(MPI_ERR_DIMS, "invalid dimension {x}: grid dimensions are > 0"));
            }
            let size = m.core.comm_size(id)? as i64;
            let n: i64 = d.iter().map(|&x| x as i64).product();
            if n > size {
                return Err(err!(MPI_ERR_DIMS, "a grid of {n} processes does not fit a communicator of {size}"));
            }
            let rank = m.core.comm_rank(id)? as i64;
            let color = if rank < n { 0 } else { weft::UNDEFINED };
            let h = match m.core.comm_split(id, color, rank as i32)? {
                Some(nid) => {
                    let shape = Shape::Cart { dims: d, periods: p.iter().map(|&x| x != 0).collect() };
                    m.with_topology(comm, nid, shape)?
                }
                None => MPI_COMM_NULL,
            };
            // SAFETY: checked non-null above.
            unsafe { put(comm_cart, h, "comm_cart") }
        })
    }
}

export! {
    /// `MPI_Cartdim_get`.
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) {
        call("MPI_Cartdim_get", On::Comm(comm), |m| {
            let (d, _) = m.cart(comm)?;
            // SAFETY: output pointer from the caller.
            unsafe { put(ndims, d.len() as c_int, "ndims") }
        })
    }
}

export! {
    /// `MPI_Cart_get`: dimensions, periods and this process's coordinates.
    fn MPI_Cart_get / PMPI_Cart_get(comm: MPI_Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) {
        call("MPI_Cart_get", On::Comm(comm), |m| {
            let (d, p) = m.cart(comm)?;
            if maxdims < d.len() as c_int {
                return Err(err!(MPI_ERR_ARG, "maxdims {maxdims} < {} dimensions", d.len()));
            }
            let me = m.core.comm_rank(m.comm(comm)?)? as c_int;
            let p: Vec<c_int> = p.iter().map(|&x| x as c_int).collect();
            // SAFETY: the arrays hold `maxdims` ints by the caller's contract.
            unsafe {
                write_ints(dims, &d, "dims")?;
                write_ints(periods, &p, "periods")?;
                write_ints(coords, &coords_of(&d, me), "coords")
            }
        })
    }
}

export! {
    /// `MPI_Cart_rank`: the rank at `coords` (periodic dimensions wrap).
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) {
        call("MPI_Cart_rank", On::Comm(comm), |m| {
            let (d, p) = m.cart(comm)?;
            // SAFETY: `coords` holds ndims ints by the caller's contract.
            let c = unsafe { ints(coords, d.len() as c_int, "coords")? };
            let r = rank_at(&d, &p, &c)
                .ok_or_else(|| err!(MPI_ERR_ARG, "coordinates {c:?} outside the non-periodic grid {d:?}"))?;
            // SAFETY: output pointer from the caller.
            unsafe { put(rank, r, "rank") }
        })
    }
}

export! {
    /// `MPI_Cart_coords`: the coordinates of `rank`.
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) {
        call("MPI_Cart_coords", On::Comm(comm), |m| {
            let (d, _) = m.cart(comm)?;
            let size = m.core.comm_size(m.comm(comm)?)? as c_int;
            if rank < 0 || rank >= size {
                return Err(err!(MPI_ERR_RANK, "invalid rank {rank} in a grid of {size}"));
            }
            if maxdims < d.len() as c_int {
                return Err(err!(MPI_ERR_ARG, "maxdims {maxdims} < {} dimensions", d.len()));
            }
            // SAFETY: `coords` holds `maxdims` ints by the caller's contract.
            unsafe { write_ints(coords, &coords_of(&d, rank), "coords") }
        })
    }
}

export! {
    /// `MPI_Cart_shift`: the source and destination at `disp` along `direction`.
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: MPI_Comm, direction: c_int, disp: c_int, source: *mut c_int, dest: *mut c_int) {
        call("MPI_Cart_shift", On::Comm(comm), |m| {
            let (d, p) = m.cart(comm)?;
            if direction < 0 || direction as usize >= d.len() {
                return Err(err!(MPI_ERR_DIMS, "invalid direction {direction} in {} dimensions", d.len()));
            }
            let me = m.core.comm_rank(m.comm(comm)?)? as c_int;
            let (s, t) = shift(&d, &p, me, direction as usize, disp);
            // SAFETY: output pointers from the caller.
            unsafe {
                put(source, s, "rank_source")?;
                put(dest, t, "rank_dest")
            }
        })
    }
}

export! {
    /// `MPI_Cart_sub` (collective): the sub-grids keeping the dimensions `remain_dims` marks.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) {
        call("MPI_Cart_sub", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let (d, p) = m.cart(comm)?;
            // SAFETY: `remain_dims` holds ndims ints by the caller's contract.
            let keep = unsafe { ints(remain_dims, d.len() as c_int, "remain_dims")? };
            let id = m.comm(comm)?;
            let me = m.core.comm_rank(id)? as c_int;
            let c = coords_of(&d, me);
            // The color numbers the dropped coordinates; row-major rank order is kept.
            let color = (0..d.len()).filter(|&i| keep[i] == 0).fold(0, |acc, i| acc * d[i] + c[i]);
            let nid = m.core.comm_split(id, color, me)?.expect("a color >= 0 gives a communicator");
            let kept = |v: &[c_int]| (0..d.len()).filter(|&i| keep[i] != 0).map(|i| v[i]).collect::<Vec<_>>();
            let pi: Vec<c_int> = p.iter().map(|&x| x as c_int).collect();
            let shape = Shape::Cart { dims: kept(&d), periods: kept(&pi).iter().map(|&x| x != 0).collect() };
            let h = m.with_topology(comm, nid, shape)?;
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

/// Weights from a weights argument: `MPI_UNWEIGHTED` is `None`, `MPI_WEIGHTS_EMPTY` (or any
/// pointer with `n` = 0) is empty.
///
/// # Safety
/// Any other non-null `p` must hold `n` ints.
unsafe fn weights(p: *const c_int, n: c_int, what: &str) -> MpiResult<Option<Vec<c_int>>> {
    match p as usize {
        MPI_UNWEIGHTED => Ok(None),
        MPI_WEIGHTS_EMPTY => Ok(Some(Vec::new())),
        // SAFETY: by the caller's contract.
        _ => Ok(Some(unsafe { ints(p, n, what)? })),
    }
}

export! {
    /// `MPI_Dist_graph_create_adjacent` (collective): each process names its own in and out
    /// neighbors.
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        comm: MPI_Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int,
        outdegree: c_int, destinations: *const c_int, destweights: *const c_int,
        info: MPI_Info, _reorder: c_int, comm_dist_graph: *mut MPI_Comm
    ) {
        call("MPI_Dist_graph_create_adjacent", On::Comm(comm), |m| {
            if comm_dist_graph.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `comm_dist_graph` is NULL"));
            }
            let id = m.comm(comm)?;
            m.info_or_empty(info)?;
            // SAFETY: the arrays hold `indegree` / `outdegree` ints by the caller's contract.
            let (src, sw, dst, dw) = unsafe {
                (
                    ints(sources, indegree, "sources")?,
                    weights(sourceweights, indegree, "sourceweights")?,
                    ints(destinations, outdegree, "destinations")?,
                    weights(destweights, outdegree, "destweights")?,
                )
            };
            let size = m.core.comm_size(id)? as c_int;
            if let Some(r) = src.iter().chain(&dst).find(|&&r| r < 0 || r >= size) {
                return Err(err!(MPI_ERR_RANK, "invalid neighbor rank {r} in a communicator of {size}"));
            }
            if sw.is_some() != dw.is_some() {
                return Err(err!(MPI_ERR_ARG, "source and destination weights must both be given or both be MPI_UNWEIGHTED"));
            }
            let nid = m.core.comm_dup(id)?;
            let shape = Shape::Graph { sources: src, sweights: sw, dests: dst, dweights: dw };
            let h = m.with_topology(comm, nid, shape)?;
            // SAFETY: checked non-null above.
            unsafe { put(comm_dist_graph, h, "comm_dist_graph") }
        })
    }
}

/// A distributed graph's sources, their weights, destinations and their weights.
type Graph = (Vec<c_int>, Option<Vec<c_int>>, Vec<c_int>, Option<Vec<c_int>>);

/// The distributed graph of `comm`.
fn graph_of(m: &Mpi, comm: MPI_Comm) -> MpiResult<Graph> {
    match &m.topology(comm)?.shape {
        Shape::Graph { sources, sweights, dests, dweights } => {
            Ok((sources.clone(), sweights.clone(), dests.clone(), dweights.clone()))
        }
        Shape::Cart { .. } => {
            Err(err!(MPI_ERR_TOPOLOGY, "communicator {comm:#x} is Cartesian, not a distributed graph"))
        }
    }
}

export! {
    /// `MPI_Dist_graph_neighbors_count`.
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) {
        call("MPI_Dist_graph_neighbors_count", On::Comm(comm), |m| {
            let (s, sw, d, _) = graph_of(m, comm)?;
            // SAFETY: output pointers from the caller.
            unsafe {
                put(indegree, s.len() as c_int, "indegree")?;
                put(outdegree, d.len() as c_int, "outdegree")?;
                put(weighted, sw.is_some() as c_int, "weighted")
            }
        })
    }
}

export! {
    /// `MPI_Dist_graph_neighbors`: the first `maxindegree` / `maxoutdegree` neighbors (and
    /// weights, when the graph has them and the arrays are not `MPI_UNWEIGHTED`).
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        comm: MPI_Comm, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int,
        maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int
    ) {
        call("MPI_Dist_graph_neighbors", On::Comm(comm), |m| {
            let (s, sw, d, dw) = graph_of(m, comm)?;
            if maxindegree < 0 || maxoutdegree < 0 {
                return Err(err!(MPI_ERR_ARG, "invalid maxindegree {maxindegree} or maxoutdegree {maxoutdegree}"));
            }
            let cut = |v: &[c_int], n: c_int| v[..v.len().min(n as usize)].to_vec();
            let given = |p: *mut c_int| !matches!(p as usize, MPI_UNWEIGHTED | MPI_WEIGHTS_EMPTY);
            // SAFETY: the arrays hold `maxindegree` / `maxoutdegree` ints by the caller's contract.
            unsafe {
                write_ints(sources, &cut(&s, maxindegree), "sources")?;
                write_ints(destinations, &cut(&d, maxoutdegree), "destinations")?;
                if let (Some(w), true) = (sw, given(sourceweights)) {
                    write_ints(sourceweights, &cut(&w, maxindegree), "sourceweights")?;
                }
                if let (Some(w), true) = (dw, given(destweights)) {
                    write_ints(destweights, &cut(&w, maxoutdegree), "destweights")?;
                }
            }
            Ok(())
        })
    }
}

export! {
    /// `MPI_Topo_test`: `MPI_CART`, `MPI_DIST_GRAPH` or `MPI_UNDEFINED`.
    fn MPI_Topo_test / PMPI_Topo_test(comm: MPI_Comm, status: *mut c_int) {
        call("MPI_Topo_test", On::Comm(comm), |m| {
            let t = match m.topology(comm) {
                Ok(t) => match t.shape {
                    Shape::Cart { .. } => MPI_CART,
                    Shape::Graph { .. } => MPI_DIST_GRAPH,
                },
                Err(e) if e.class == MPI_ERR_TOPOLOGY => MPI_UNDEFINED,
                Err(e) => return Err(e),
            };
            // SAFETY: output pointer from the caller.
            unsafe { put(status, t, "status") }
        })
    }
}

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
