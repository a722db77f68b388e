//! Global restart (Reinit) under `weft-run`: the iterative solver `examples/reinit_solver.rs`
//! with ranks SIGKILLed at chosen and random iterations, ten failures in a row, kills during
//! recovery, file checkpoints and a node kill with a spare node, at 4, 8 and 16 ranks (16 are
//! oversubscribed on a small machine); every run must end with the
//! failure-free answer (the solver compares bit for bit) in the expected epoch. Misuse
//! (`examples/reinit_misuse.rs`) gives typed errors. Every job has a hard timeout.

mod common;
use common::*;

/// Run the solver on `n` ranks with `args`; it must finish with the failure-free answer in
/// epoch `epochs` (one per failure), and weft-run must have respawned `epochs` processes.
fn solver(n: u32, launcher: &[&str], args: &[&str], epochs: u64) -> String {
    solver_respawns(n, launcher, args, epochs, epochs)
}

/// As [`solver`], with `respawns` processes respawned in all (a node kill respawns several
/// in one epoch).
fn solver_respawns(n: u32, launcher: &[&str], args: &[&str], epochs: u64, respawns: u64) -> String {
    let out = weft_job_on(n, launcher, &example("reinit_solver"), args, &[], 120);
    let (so, se) = text(&out);
    assert!(out.status.success(), "{args:?}: status {:?}\nstdout:\n{so}\nstderr:\n{se}", out.status);
    let want = format!("answer OK ({n} ranks,");
    assert!(so.contains(&want), "{args:?}: no correct answer:\n{so}\n{se}");
    assert!(so.contains(&format!("final epoch {epochs},")), "{args:?}: not in epoch {epochs}:\n{so}\n{se}");
    assert_eq!(se.matches(") for epoch ").count() as u64, respawns, "{args:?}: respawns:\n{se}");
    so
}

fn kills(list: &[(u64, u32, u64)]) -> Vec<String> {
    list.iter().flat_map(|(e, r, i)| ["--kill".to_string(), format!("{e}:{r}@{i}")]).collect()
}

fn run_kills(n: u32, iters: u64, list: &[(u64, u32, u64)]) {
    let mut args = vec!["--iters".to_string(), iters.to_string()];
    args.extend(kills(list));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    solver(n, &[], &args, list.len() as u64);
}

#[test]
fn failure_free_answer() {
    let so = solver(4, &[], &["--iters", "60"], 0);
    assert_eq!(so.matches("epoch 0 New resumes at iteration 0").count(), 4, "{so}");
}

#[test]
fn one_rank_killed_4_and_8_ranks() {
    for n in [4, 8] {
        let so = solver(n, &[], &["--iters", "80", "--kill", "0:2@37"], 1);
        // Survivors resume from their own checkpoint, the respawned rank from its buddy's.
        assert!(so.contains("rank 2 epoch 1 Restarted resumes at iteration 30"), "{so}");
        assert!(so.contains("rank 0 epoch 1 Reinited resumes at iteration 30"), "{so}");
    }
}

#[test]
fn ten_failures_in_a_row_4_8_and_16_ranks() {
    for n in [4u32, 8, 16] {
        let list: Vec<(u64, u32, u64)> =
            (0..10u64).map(|e| (e, (e as u32 * 3 + 1) % n, 12 + e * 5)).collect();
        run_kills(n, 120, &list);
    }
}

#[test]
fn kills_at_random_iterations() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64 ^ d.as_secs())
        .unwrap_or(1);
    println!("seed {seed}");
    // xorshift: reproducible from the printed seed.
    let mut x = seed | 1;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for n in [4u32, 8, 16] {
        // Three failures; each epoch's kill comes after its restart point (ckpt 10).
        let mut list = Vec::new();
        let mut at = 0;
        for e in 0..3u64 {
            at = (at / 10) * 10 + 1 + next(25);
            list.push((e, next(n as u64) as u32, at));
        }
        println!("n={n} kills {list:?} (seed {seed})");
        run_kills(n, 100, &list);
    }
}

#[test]
fn kill_during_recovery() {
    for n in [4, 8, 16] {
        // Rank 1 dies; in epoch 1, rank 3 dies before loading its checkpoint (the others are
        // reloading); in epoch 2 the respawned rank 3 dies at the same point.
        solver(
            n,
            &[],
            &["--iters", "60", "--kill", "0:1@12", "--kill-in-recovery", "1:3", "--kill-in-recovery", "2:3"],
            3,
        );
    }
}

#[test]
fn file_checkpoints() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("reinit-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    solver(4, &[], &["--iters", "60", "--dir", &d, "--kill", "0:0@23", "--kill", "1:3@41"], 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sixteen_ranks_oversubscribed() {
    run_kills(16, 50, &[(0, 5, 14), (1, 12, 27)]);
}

#[test]
fn misuse_gives_typed_errors() {
    let prog = example("reinit_misuse");
    for mode in ["twice", "after_init", "main_error"] {
        // One rank: a rank leaving with an error ends the job (weft-run kills the others).
        let out = weft_job(1, &prog, &[mode], &[], 60);
        let (so, se) = text(&out);
        assert!(so.contains(&format!("reinit_misuse: {mode} -> OK")), "{mode}:\n{so}\n{se}");
    }
    // Outside weft-run: the error names the runtime.
    let mut cmd = std::process::Command::new(&prog);
    cmd.arg("no_launcher");
    for v in ["WEFT_RUN_CTL", "PMIX_RANK", "PMIX_NAMESPACE", "PMI_FD"] {
        cmd.env_remove(v);
    }
    let out = run_with_timeout(cmd, std::time::Duration::from_secs(60));
    let (so, se) = text(&out);
    assert!(out.status.success() && so.contains("no_launcher -> OK"), "{so}\n{se}");
}

/// The C twin of the solver (file checkpoints, `weft_reinit`): two failures, the failure-free
/// answer.
#[test]
fn c_solver_two_failures() {
    let exe = compile_c("examples/c/reinit_solver.c");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("reinit-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for n in [4, 8] {
        let out = weft_job(n, &exe, &[&dir.to_string_lossy(), "60", "0:2@17", "1:0@33"], &[], 120);
        let (so, se) = text(&out);
        assert!(out.status.success(), "status {:?}\n{so}\n{se}", out.status);
        assert!(so.contains(&format!("answer OK ({n} ranks, 60 iterations, final epoch 2)")), "{so}\n{se}");
        for f in std::fs::read_dir(&dir).unwrap().flatten() {
            let _ = std::fs::remove_file(f.path());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Misuse through the C ABI: typed codes.
#[test]
fn c_misuse_gives_typed_codes() {
    let exe = compile_c("tests/c/reinit_misuse.c");
    for mode in ["twice", "after_init", "main_error", "null", "init_inside"] {
        let out = weft_job(1, &exe, &[mode], &[], 60);
        let (so, se) = text(&out);
        assert!(so.contains(&format!("reinit_misuse.c: {mode} ok")), "{mode}:\n{so}\n{se}");
    }
}

/// A whole virtual node killed: its ranks are respawned on the spare node.
#[test]
fn node_killed_ranks_respawn_on_spare_node() {
    for n in [8u32, 16] {
        let half = n / 2;
        let so = solver_respawns(
            n,
            &["--nodes", "2", "--spare-nodes", "1"],
            &["--iters", "60", "--kill-node", "0:1@23"],
            1,
            u64::from(half),
        );
        for r in half..n {
            assert!(
                so.contains(&format!("rank {r} epoch 1 Restarted resumes at iteration 20 on node 2")),
                "{so}"
            );
        }
        for r in 0..half {
            assert!(
                so.contains(&format!("rank {r} epoch 1 Reinited resumes at iteration 20 on node 0")),
                "{so}"
            );
        }
    }
}

/// A rank frozen with SIGSTOP is declared failed by the heartbeat detector; weft-run kills it
/// (it must never resume: a helper sends SIGCONT 2 s later) and the job rolls back.
#[test]
fn frozen_rank_is_declared_killed_and_replaced() {
    let out = weft_job(
        4,
        &example("reinit_solver"),
        &["--iters", "60", "--stop", "0:2@23"],
        &[("WEFT_FT_HB_PERIOD", "50"), ("WEFT_FT_HB_TIMEOUT", "500")],
        120,
    );
    let (so, se) = text(&out);
    assert!(out.status.success(), "status {:?}\n{so}\n{se}", out.status);
    assert!(so.contains("answer OK (4 ranks,"), "{so}\n{se}");
    assert!(!so.contains("resumed (FAILED"), "the frozen rank came back:\n{so}\n{se}");
    assert!(se.contains("rank 2 (pid") && se.contains("[declared failed by a failure detector]"), "{se}");
}
