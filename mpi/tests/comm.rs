//! Communicators, groups, attributes, info, topologies and neighborhood collectives of the
//! MPI library, run as multi-rank jobs: the examples `comm_objects` and `comm_topo` call the
//! exported functions and check every result themselves (a failed check exits non-zero).
//! Each job runs under `weft-run` with its own timeout and a hard test-side deadline.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use weft_testkit::job::{End, Supervisor};

/// `target/<profile>` of the running test binary.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// Build `weft-run` and this crate's examples (no-ops when up to date), once.
fn build() {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        for args in [
            &["build", "-q", "-p", "weft-pmix", "--bin", "weft-run"][..],
            &["build", "-q", "-p", "weft-mpi", "--examples"],
        ] {
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(args);
            if target_dir().file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            assert!(cmd.status().expect("cargo build").success(), "cargo {args:?} failed");
        }
    });
}

/// Jobs of this test binary run one at a time (2 cores, every job oversubscribes them).
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run example `name` on `n` ranks with extra launcher options; its stdout. Fails the test on a
/// non-zero exit or when the deadline passes (the job's process group is killed).
fn job(n: u32, launcher: &[&str], name: &str, args: &[&str]) -> String {
    build();
    let _one = ONE_JOB.lock().unwrap_or_else(|p| p.into_inner());
    let secs = 60;
    let mut cmd = Command::new(target_dir().join("weft-run"));
    cmd.args(["-n", &n.to_string(), "--timeout", &secs.to_string()])
        .args(launcher)
        .arg(target_dir().join("examples").join(name))
        .args(args)
        .env("WEFT_PROGRESS", "yield");
    let done = Supervisor::new(Duration::from_secs(secs + 15)).run(cmd).unwrap_or_else(|e| panic!("{e}"));
    match done.end {
        End::Exited(st) => {
            assert!(
                st.success(),
                "{name} -n {n} {launcher:?} failed ({st}):\nstdout:\n{}\nstderr:\n{}",
                done.stdout,
                done.stderr
            )
        }
        End::TimedOut(_) => {
            panic!("{name} -n {n} did not finish:\nstdout:\n{}\nstderr:\n{}", done.stdout, done.stderr)
        }
    }
    done.stdout
}

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
