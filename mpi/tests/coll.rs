//! Every collective through the MPI library, on 1 to 4 ranks: `examples/coll_check.rs`
//! checks each result against values it computes from the fill formula (blocking and
//! non-blocking, in place, derived and differing types, error classes) and prints one verdict
//! line per rank; this test requires every rank's.

mod common;

#[test]
fn every_collective_on_one_to_four_ranks() {
    let prog = common::example("coll_check");
    for n in 1..=4u32 {
        let r = common::job(n, &prog, &[], &[], 60);
        let passed =
            r.stdout.lines().filter(|l| l.starts_with("coll_check: rank ") && l.contains(" passed ")).count();
        assert_eq!(
            (r.code, passed),
            (Some(0), n as usize),
            "{n} ranks: every rank passes\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
    }
}
