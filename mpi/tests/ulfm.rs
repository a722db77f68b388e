//! The ULFM extensions through the MPI library: a rank dies, the survivors revoke, agree,
//! shrink and compute on the shrunken communicator (`examples/ulfm_recover.rs` asserts each
//! step's result; this test checks every survivor got to the end).

mod common;

#[test]
fn survivors_revoke_agree_shrink_and_continue() {
    for n in [2u32, 4] {
        let prog = common::example("ulfm_recover");
        let r = common::job(n, &prog, &[], &[], 60);
        let done = r.stdout.lines().filter(|l| l.contains("recovered")).count();
        assert_eq!(
            done,
            n as usize - 1,
            "every survivor of {n} recovers\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
        let want = format!("{} survivors agree and sum {}", n - 1, n - 1);
        assert!(
            r.stdout.lines().filter(|l| l.contains("recovered")).all(|l| l.contains(&want)),
            "{}",
            r.stdout
        );
        assert!(r.stderr.contains("killed by signal 9"), "the victim died as planned: {}", r.stderr);
    }
}
