//! Process topologies and neighborhood collectives through the exported MPI functions, on
//! every rank of a `weft-run` job (4 ranks or more). Every check panics on failure (non-zero
//! exit); rank 0 prints `comm_topo OK` at the end.

use std::ffi::c_int;
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::*;

fn ok(rc: c_int, what: &str) {
    assert_eq!(rc, MPI_SUCCESS, "{what} failed with {rc}");
}

fn main() {
    // SAFETY: the whole program calls the MPI ABI with valid pointers to locals.
    unsafe { run() }
}

unsafe fn run() {
    // SAFETY: every call follows the MPI standard's contract; pointers are to live locals.
    unsafe {
        ok(MPI_Init(null_mut(), null_mut()), "MPI_Init");
        ok(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "set_errhandler");
        ok(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN), "set_errhandler self");
        let (mut rank, mut size) = (0, 0);
        MPI_Comm_rank(MPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mut size);
        assert!(size >= 4 && size % 2 == 0, "needs an even number >= 4 of ranks");

        let mut dims = [0, 2];
        ok(MPI_Dims_create(size, 2, dims.as_mut_ptr()), "dims_create");
        assert_eq!(dims, [size / 2, 2]);
        let mut bad = [0, 3];
        if size % 3 != 0 {
            assert_eq!(MPI_Dims_create(size, 2, bad.as_mut_ptr()), MPI_ERR_DIMS);
        }
        // A (size/2) x 2 grid, periodic in dimension 1 only (size 2: both neighbors the same).
        let periods = [0, 1];
        let mut cart = 0;
        ok(MPI_Cart_create(MPI_COMM_WORLD, 2, dims.as_ptr(), periods.as_ptr(), 0, &mut cart), "cart_create");
        let mut t = 0;
        MPI_Topo_test(cart, &mut t);
        assert_eq!(t, MPI_CART);
        MPI_Topo_test(MPI_COMM_WORLD, &mut t);
        assert_eq!(t, MPI_UNDEFINED);
        let mut nd = 0;
        MPI_Cartdim_get(cart, &mut nd);
        assert_eq!(nd, 2);
        let mut coords = [0; 2];
        ok(MPI_Cart_coords(cart, rank, 2, coords.as_mut_ptr()), "coords");
        assert_eq!(coords, [rank / 2, rank % 2]);
        let mut back = -1;
        ok(MPI_Cart_rank(cart, coords.as_ptr(), &mut back), "cart_rank");
        assert_eq!(back, rank);
        let wrap = [0, 3];
        MPI_Cart_rank(cart, wrap.as_ptr(), &mut back);
        assert_eq!(back, 1, "periodic dimension wraps");
        let off = [-1, 0];
        assert_eq!(MPI_Cart_rank(cart, off.as_ptr(), &mut back), MPI_ERR_ARG);
        let (mut gd, mut gp, mut gc) = ([0; 2], [0; 2], [0; 2]);
        ok(MPI_Cart_get(cart, 2, gd.as_mut_ptr(), gp.as_mut_ptr(), gc.as_mut_ptr()), "cart_get");
        assert_eq!((gd, gp, gc), (dims, periods, coords));
        let (mut src, mut dst) = (0, 0);
        ok(MPI_Cart_shift(cart, 0, 1, &mut src, &mut dst), "shift");
        let up = if rank >= 2 { rank - 2 } else { MPI_PROC_NULL };
        let down = if rank + 2 < size { rank + 2 } else { MPI_PROC_NULL };
        assert_eq!((src, dst), (up, down));
        let partner = rank ^ 1;

        // Neighbor allgather on the grid: in-neighbors in order (up, down, partner, partner).
        let me: c_int = rank;
        let mut got = [-7; 4];
        ok(
            MPI_Neighbor_allgather(
                (&me as *const c_int).cast(),
                1,
                MPI_INT,
                got.as_mut_ptr().cast(),
                1,
                MPI_INT,
                cart,
            ),
            "nb allgather",
        );
        assert_eq!(got, [if up < 0 { -7 } else { up }, if down < 0 { -7 } else { down }, partner, partner]);
        // Neighbor alltoall: block j goes to out-neighbor j, tagged with the sender and j.
        let send: Vec<c_int> = (0..4).map(|j| rank * 10 + j).collect();
        let mut recv = [-1; 4];
        ok(
            MPI_Neighbor_alltoall(
                send.as_ptr().cast(),
                1,
                MPI_INT,
                recv.as_mut_ptr().cast(),
                1,
                MPI_INT,
                cart,
            ),
            "nb alltoall",
        );
        // From `up` (its out-block 1, "down"), from `down` (its block 0), from the partner in
        // the periodic dimension: its positive-direction block 3 and negative block 2.
        let expect = [
            if up < 0 { -1 } else { up * 10 + 1 },
            if down < 0 { -1 } else { down * 10 },
            partner * 10 + 3,
            partner * 10 + 2,
        ];
        assert_eq!(recv, expect, "alltoall blocks follow the directions");
        // The non-blocking form gives the same.
        let mut recv2 = [-1; 4];
        let mut req = 0;
        ok(
            MPI_Ineighbor_alltoall(
                send.as_ptr().cast(),
                1,
                MPI_INT,
                recv2.as_mut_ptr().cast(),
                1,
                MPI_INT,
                cart,
                &mut req,
            ),
            "inb",
        );
        ok(MPI_Wait(&mut req, null_mut()), "wait");
        assert_eq!(req, MPI_REQUEST_NULL);
        assert_eq!(recv2, expect);

        // Cart_sub: the rows (dimension 1 kept) are pairs.
        let keep = [0, 1];
        let mut row = 0;
        ok(MPI_Cart_sub(cart, keep.as_ptr(), &mut row), "cart_sub");
        let (mut rr, mut rs) = (0, 0);
        MPI_Comm_rank(row, &mut rr);
        MPI_Comm_size(row, &mut rs);
        assert_eq!((rr, rs), (rank % 2, 2));
        MPI_Cartdim_get(row, &mut nd);
        assert_eq!(nd, 1);
        MPI_Comm_free(&mut row);

        // A directed ring as a distributed graph: in from rank-1, out to rank+1 and rank+2.
        let ins = [(rank + size - 1) % size, (rank + size - 2) % size];
        let outs = [(rank + 1) % size, (rank + 2) % size];
        let w = [5, 6];
        let mut g = 0;
        ok(
            MPI_Dist_graph_create_adjacent(
                MPI_COMM_WORLD,
                2,
                ins.as_ptr(),
                w.as_ptr(),
                2,
                outs.as_ptr(),
                w.as_ptr(),
                MPI_INFO_NULL,
                0,
                &mut g,
            ),
            "dist_graph",
        );
        MPI_Topo_test(g, &mut t);
        assert_eq!(t, MPI_DIST_GRAPH);
        let (mut indeg, mut outdeg, mut weighted) = (0, 0, 0);
        ok(MPI_Dist_graph_neighbors_count(g, &mut indeg, &mut outdeg, &mut weighted), "count");
        assert_eq!((indeg, outdeg, weighted), (2, 2, 1));
        let (mut s, mut sw, mut d, mut dw) = ([0; 2], [0; 2], [0; 2], [0; 2]);
        ok(
            MPI_Dist_graph_neighbors(
                g,
                2,
                s.as_mut_ptr(),
                sw.as_mut_ptr(),
                2,
                d.as_mut_ptr(),
                dw.as_mut_ptr(),
            ),
            "neighbors",
        );
        assert_eq!((s, sw, d, dw), (ins, w, outs, w));
        assert_eq!(MPI_Cartdim_get(g, &mut nd), MPI_ERR_TOPOLOGY);
        // alltoallv with 2 ints to the first out-neighbor and 1 to the second.
        let sv = [rank, rank + 100, rank + 200];
        let (scounts, sdispls) = ([2, 1], [0, 2]);
        let mut rv = [-1; 4];
        // In-neighbor 0 (rank-1) sends us its 2-int block, in-neighbor 1 (rank-2) its 1-int
        // block; they land at elements 0 and 2.
        let (rcounts, rdispls) = ([2, 1], [0, 2]);
        ok(
            MPI_Neighbor_alltoallv(
                sv.as_ptr().cast(),
                scounts.as_ptr(),
                sdispls.as_ptr(),
                MPI_INT,
                rv.as_mut_ptr().cast(),
                rcounts.as_ptr(),
                rdispls.as_ptr(),
                MPI_INT,
                g,
            ),
            "alltoallv",
        );
        let (a, b) = (ins[0], ins[1]);
        assert_eq!(rv, [a, a + 100, b + 200, -1]);
        // alltoallw with byte displacements, non-blocking, then test until done.
        let mut rw = [-1; 2];
        let one = [1, 1];
        let sdw: [MPI_Aint; 2] = [0, 4];
        let rdw: [MPI_Aint; 2] = [4, 0];
        let types = [MPI_INT, MPI_INT];
        let sw2 = [rank * 3, rank * 3 + 1];
        let mut req = 0;
        ok(
            MPI_Ineighbor_alltoallw(
                sw2.as_ptr().cast(),
                one.as_ptr(),
                sdw.as_ptr(),
                types.as_ptr(),
                rw.as_mut_ptr().cast(),
                one.as_ptr(),
                rdw.as_ptr(),
                types.as_ptr(),
                g,
                &mut req,
            ),
            "ialltoallw",
        );
        let mut flag = 0;
        while flag == 0 {
            ok(MPI_Test(&mut req, &mut flag, null_mut()), "test");
        }
        assert_eq!(rw, [b * 3 + 1, a * 3], "block from in 0 at byte 4, from in 1 at byte 0");
        // allgatherv: one int from each in-neighbor, at element displacements 1 and 0.
        let mut ag = [-1; 2];
        let (c1, d1) = ([1, 1], [1, 0]);
        let mut req = 0;
        ok(
            MPI_Ineighbor_allgatherv(
                (&me as *const c_int).cast(),
                1,
                MPI_INT,
                ag.as_mut_ptr().cast(),
                c1.as_ptr(),
                d1.as_ptr(),
                MPI_INT,
                g,
                &mut req,
            ),
            "iallgatherv",
        );
        ok(MPI_Wait(&mut req, null_mut()), "wait");
        assert_eq!(ag, [b, a]);
        let mut ag2 = [-1; 2];
        ok(
            MPI_Neighbor_allgatherv(
                (&me as *const c_int).cast(),
                1,
                MPI_INT,
                ag2.as_mut_ptr().cast(),
                c1.as_ptr(),
                d1.as_ptr(),
                MPI_INT,
                g,
            ),
            "allgatherv",
        );
        assert_eq!(ag2, [b, a]);
        let mut ag3 = [-1; 2];
        ok(
            MPI_Ineighbor_allgather(
                (&me as *const c_int).cast(),
                1,
                MPI_INT,
                ag3.as_mut_ptr().cast(),
                1,
                MPI_INT,
                g,
                &mut req,
            ),
            "iallgather",
        );
        ok(MPI_Wait(&mut req, null_mut()), "wait");
        assert_eq!(ag3, [a, b]);
        let (mut x, mut y) = ([rank * 7; 2], [0; 2]);
        x[1] += 1;
        ok(
            MPI_Neighbor_alltoallw(
                x.as_ptr().cast(),
                one.as_ptr(),
                sdw.as_ptr(),
                types.as_ptr(),
                y.as_mut_ptr().cast(),
                one.as_ptr(),
                rdw.as_ptr(),
                types.as_ptr(),
                g,
            ),
            "alltoallw",
        );
        assert_eq!(y, [b * 7 + 1, a * 7]);
        // A dup keeps the topology; its neighbor traffic stays on its own hidden context.
        let mut gd2 = 0;
        ok(MPI_Comm_dup(g, &mut gd2), "dup topo");
        MPI_Topo_test(gd2, &mut t);
        assert_eq!(t, MPI_DIST_GRAPH);
        let mut ag4 = [-1; 2];
        ok(
            MPI_Neighbor_allgather(
                (&me as *const c_int).cast(),
                1,
                MPI_INT,
                ag4.as_mut_ptr().cast(),
                1,
                MPI_INT,
                gd2,
            ),
            "allgather dup",
        );
        assert_eq!(ag4, [a, b]);
        // Neighbor collectives need a topology.
        assert_eq!(
            MPI_Neighbor_allgather(
                (&me as *const c_int).cast(),
                1,
                MPI_INT,
                ag4.as_mut_ptr().cast(),
                1,
                MPI_INT,
                MPI_COMM_WORLD
            ),
            MPI_ERR_TOPOLOGY
        );
        ok(MPI_Comm_free(&mut gd2), "free");
        ok(MPI_Comm_free(&mut g), "free");
        ok(MPI_Comm_free(&mut cart), "free");
        if rank == 0 {
            println!("comm_topo OK");
        }
        ok(MPI_Finalize(), "finalize");
    }
}
