//! Intercommunicators through the MPI library (`examples/intercomm.rs` checks every result and
//! exits non-zero on the first wrong one): creation from two groups, point-to-point between
//! them, agreement over both, merge, and revoke.

mod common;

#[test]
fn intercommunicators_point_to_point_agree_merge_and_revoke() {
    for n in [2u32, 3, 4] {
        let out = common::ok(n, &[], "intercomm", &[]);
        assert_eq!(out.lines().filter(|l| l.starts_with("intercomm OK")).count(), n as usize, "{out}");
    }
}
