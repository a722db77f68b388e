//! Communicators, groups, attributes, info, topologies and neighborhood collectives of the
//! MPI library, run as multi-rank jobs: the examples `comm_objects` and `comm_topo` call the
//! exported functions and check every result themselves (a failed check exits non-zero).
//! Each job runs under `weft-run` with its own timeout and a hard test-side deadline.

mod common;

use common::ok as job;

#[test]
fn groups_communicators_attributes_and_info_on_one_node() {
    let out = job(4, &[], "comm_objects", &["1"]);
    assert!(out.contains("comm_objects OK"), "{out}");
}

#[test]
fn split_type_shared_follows_virtual_nodes() {
    // 5 ranks on 2 virtual nodes: blocks of 3 and 2.
    let out = job(5, &["--nodes", "2"], "comm_objects", &["2"]);
    assert!(out.contains("comm_objects OK"), "{out}");
}

#[test]
fn cartesian_and_graph_topologies_with_neighbor_collectives() {
    let out = job(4, &[], "comm_topo", &[]);
    assert!(out.contains("comm_topo OK"), "{out}");
    let out = job(6, &[], "comm_topo", &[]);
    assert!(out.contains("comm_topo OK"), "{out}");
}
