//! Topologies chapter: Cartesian and graph constructors, their queries and `MPI_Dims_create`.

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::obj::topo::*;
use crate::state::{Mpi, On};
use crate::{export, put};
use std::ffi::c_int;

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

export! {
    /// `MPI_Dims_create`: a balanced grid of `nnodes` in `ndims` dimensions (entries already
    /// positive are kept).
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) on On::NoObject;
    |_| {
        // SAFETY: `dims` holds `ndims` ints by the caller's contract.
        let mut d = unsafe { ints(dims, ndims, "dims")? };
        dims_create(nnodes, &mut d)?;
        // SAFETY: as above.
        unsafe { write_ints(dims, &d, "dims") }
    }
}

export! {
    /// `MPI_Cart_create` (collective): the first `prod(dims)` ranks of `comm` form the grid;
    /// the others get `MPI_COMM_NULL`.
    fn MPI_Cart_create / PMPI_Cart_create(comm: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, _reorder: c_int, comm_cart: *mut MPI_Comm) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Cartdim_get`.
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) on On::Comm(comm);
    |m| {
        let (d, _) = m.cart(comm)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(ndims, d.len() as c_int, "ndims") }
    }
}

export! {
    /// `MPI_Cart_get`: dimensions, periods and this process's coordinates.
    fn MPI_Cart_get / PMPI_Cart_get(comm: MPI_Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Cart_rank`: the rank at `coords` (periodic dimensions wrap).
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) on On::Comm(comm);
    |m| {
        let (d, p) = m.cart(comm)?;
        // SAFETY: `coords` holds ndims ints by the caller's contract.
        let c = unsafe { ints(coords, d.len() as c_int, "coords")? };
        let r = rank_at(&d, &p, &c)
            .ok_or_else(|| err!(MPI_ERR_ARG, "coordinates {c:?} outside the non-periodic grid {d:?}"))?;
        // SAFETY: output pointer from the caller.
        unsafe { put(rank, r, "rank") }
    }
}

export! {
    /// `MPI_Cart_coords`: the coordinates of `rank`.
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Cart_shift`: the source and destination at `disp` along `direction`.
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: MPI_Comm, direction: c_int, disp: c_int, source: *mut c_int, dest: *mut c_int) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Cart_sub` (collective): the sub-grids keeping the dimensions `remain_dims` marks.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Dist_graph_create_adjacent` (collective): each process names its own in and out
    /// neighbors.
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        comm: MPI_Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int,
        outdegree: c_int, destinations: *const c_int, destweights: *const c_int,
        info: MPI_Info, _reorder: c_int, comm_dist_graph: *mut MPI_Comm
    ) on On::Comm(comm);
    |m| {
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
    }
}

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
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) on On::Comm(comm);
    |m| {
        let (s, sw, d, _) = graph_of(m, comm)?;
        // SAFETY: output pointers from the caller.
        unsafe {
            put(indegree, s.len() as c_int, "indegree")?;
            put(outdegree, d.len() as c_int, "outdegree")?;
            put(weighted, sw.is_some() as c_int, "weighted")
        }
    }
}

export! {
    /// `MPI_Dist_graph_neighbors`: the first `maxindegree` / `maxoutdegree` neighbors (and
    /// weights, when the graph has them and the arrays are not `MPI_UNWEIGHTED`).
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        comm: MPI_Comm, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int,
        maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int
    ) on On::Comm(comm);
    |m| {
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
    }
}

export! {
    /// `MPI_Topo_test`: `MPI_CART`, `MPI_DIST_GRAPH` or `MPI_UNDEFINED`.
    fn MPI_Topo_test / PMPI_Topo_test(comm: MPI_Comm, status: *mut c_int) on On::Comm(comm);
    |m| {
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
    }
}
