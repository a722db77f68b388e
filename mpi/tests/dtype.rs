//! Datatypes through the MPI library, on 1 to 3 ranks: `examples/dtype_check.rs` checks
//! constructors, bounds, names, envelopes and contents, packing, addresses, derived types in
//! point-to-point and from `MPI_BOTTOM`, and error classes, printing one verdict line per
//! rank; this test requires every rank's.

mod common;

#[test]
fn datatypes_on_one_to_three_ranks() {
    let prog = common::example("dtype_check");
    for n in 1..=3u32 {
        let r = common::job(n, &prog, &[], &[], 60);
        let passed = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("dtype_check: rank ") && l.ends_with(" passed"))
            .count();
        assert_eq!(
            (r.code, passed),
            (Some(0), n as usize),
            "{n} ranks: every rank passes\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
    }
}
