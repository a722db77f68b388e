//! The reconfigurable HyperQuickSort (`examples/hyperquicksort/`) under `weft-run` with
//! crashes (SIGKILL at chosen steps): every survivor must report a verified output (sorted,
//! same multiset as the input), the final view must be the survivors, and the output checksums
//! must equal those of the failure-free run with the same seed. Every job has a hard timeout.

mod common;
use common::*;

const KEYS: &str = "200000";

/// Run the sort on `n` ranks with `extra` arguments; returns stdout after checking that every
/// rank of `survivors` verified its output and that the final view is exactly `survivors`.
fn sort(n: u32, extra: &[&str], survivors: &[u32]) -> String {
    let mut args = vec!["--keys", KEYS, "--seed", "42"];
    args.extend_from_slice(extra);
    let out = weft_job(n, &example("hyperquicksort"), &args, &[], 120);
    let (so, se) = text(&out);
    // weft-run reports a rank's non-zero exit on stderr; the SIGKILLed victims are expected.
    assert!(
        !so.contains("FAILED") && !se.contains("exited with status"),
        "{extra:?}: stdout:\n{so}\nstderr:\n{se}"
    );
    let members = format!("members={survivors:?}");
    for r in survivors {
        let line = so
            .lines()
            .find(|l| l.starts_with(&format!("hyperquicksort: rank {r} OK")))
            .unwrap_or_else(|| panic!("{extra:?}: rank {r} did not verify:\n{so}\n{se}"));
        assert!(line.contains(&members), "{extra:?}: rank {r} ended on another view: {line}");
        assert!(line.contains(&format!("keys={KEYS} ")), "{line}");
    }
    assert_eq!(so.matches("hyperquicksort: SORTED").count(), 1, "{so}");
    print!("{so}");
    so
}

/// The `checksum_*` fields of the SORTED line.
fn checksums(so: &str) -> Vec<String> {
    let line = so.lines().find(|l| l.starts_with("hyperquicksort: SORTED")).expect("SORTED line");
    line.split_whitespace().filter(|f| f.starts_with("checksum_")).map(String::from).collect()
}

#[test]
fn failure_free_one_crash_and_seven_sequential_crashes_on_8_ranks() {
    let all: Vec<u32> = (0..8).collect();
    let base = sort(8, &[], &all);
    assert!(base.contains("view_changes=0"), "{base}");
    let want = checksums(&base);
    assert_eq!(want.len(), 3);

    // One crash in the middle of the second sorting round.
    let so = sort(8, &["--kill", "5@2"], &[0, 1, 2, 3, 4, 6, 7]);
    assert_eq!(checksums(&so), want);

    // N-1 crashes one after the other, in every step (generation, the three rounds, the
    // verification), rank 0 among them: rank 3 alone finishes every slot's work.
    let kills = ["0@0", "7@1", "5@2", "6@3", "4@4", "1@4.1", "2@4.2"];
    let args: Vec<&str> = kills.iter().flat_map(|k| ["--kill", k]).collect();
    let so = sort(8, &args, &[3]);
    assert!(so.contains("view_changes=7"), "{so}");
    assert_eq!(checksums(&so), want);
}

#[test]
fn steps_that_run_to_their_end_instead_of_revoking_survive_one_and_seven_crashes() {
    // `crash-finish`: no revoke; a member meeting a failure finishes its step with empty lists
    // (every live peer still gets what it waits for), the agreement fails the step.
    let base = sort(8, &["--source", "crash-finish"], &(0..8).collect::<Vec<_>>());
    let want = checksums(&base);
    let so = sort(8, &["--source", "crash-finish", "--kill", "3@2"], &[0, 1, 2, 4, 5, 6, 7]);
    assert_eq!(checksums(&so), want);
    let kills = ["0@0", "7@1", "5@2", "6@3", "4@4", "1@4.1", "2@4.2"];
    let mut args: Vec<&str> = vec!["--source", "crash-finish"];
    args.extend(kills.iter().flat_map(|k| ["--kill", k]));
    let so = sort(8, &args, &[3]);
    assert_eq!(checksums(&so), want);
}

#[test]
fn sequential_crashes_in_one_round_on_4_ranks() {
    // Two crashes during the same sorting round (the second in the retried attempt), then one
    // in the verification.
    let so = sort(4, &["--kill", "1@1", "--kill", "0@1.1", "--kill", "2@3"], &[3]);
    assert!(so.contains("view_changes=3"), "{so}");
}

#[test]
fn a_list_lost_with_its_holder_and_backup_stops_with_a_clear_error() {
    // Ranks 2 and 3 die together: slot 2's list was held by 2 with its copy on 3.
    let out = weft_job(
        8,
        &example("hyperquicksort"),
        &["--keys", KEYS, "--kill", "2@2", "--kill", "3@2"],
        &[],
        120,
    );
    let (so, se) = text(&out);
    assert!(se.contains("exited with status 3"), "stdout:\n{so}\nstderr:\n{se}");
    assert!(so.contains("slot 2's list is lost: its holder 2 and its backup Some(3)"), "{so}");
    // Without checkpoints the first crash loses a list.
    let out = weft_job(
        4,
        &example("hyperquicksort"),
        &["--keys", KEYS, "--no-checkpoint", "--kill", "1@2"],
        &[],
        120,
    );
    let (so, se) = text(&out);
    assert!(se.contains("exited with status 3"), "stdout:\n{so}\nstderr:\n{se}");
    assert!(so.contains("slot 1's list is lost: its holder 1 and its backup None"), "{so}");
}

#[test]
fn bad_arguments_are_refused() {
    let out = weft_job(2, &example("hyperquicksort"), &["--kill", "x"], &[], 60);
    let (so, se) = text(&out);
    assert!(
        se.contains("exited with status 2") && so.contains("--kill \"x\": expected RANK@STEP"),
        "{so}{se}"
    );
    let out = weft_job(3, &example("hyperquicksort"), &[], &[], 60);
    let (so, se) = text(&out);
    assert!(se.contains("exited with status 2"), "{so}{se}");
    assert!(so.contains("3 ranks: the hypercube needs a power of two"), "{so}");
}

/// The C version (`examples/c/hyperquicksort.c`): `KEYS SEED W@STEP.ATTEMPT…`.
fn sort_c(n: u32, kills: &[&str], survivors: &[u32]) -> String {
    let exe = compile_c("examples/c/hyperquicksort.c");
    let mut args = vec![KEYS, "42"];
    args.extend_from_slice(kills);
    let out = weft_job(n, &exe, &args, &[], 120);
    let (so, se) = text(&out);
    assert!(
        !so.contains("FAILED") && !se.contains("exited with status"),
        "{kills:?}: stdout:\n{so}\nstderr:\n{se}"
    );
    for r in survivors {
        let line = so
            .lines()
            .find(|l| l.starts_with(&format!("hyperquicksort.c: rank {r} OK")))
            .unwrap_or_else(|| panic!("{kills:?}: rank {r} did not verify:\n{so}\n{se}"));
        assert!(line.contains(&format!("members={} ", survivors.len())), "{line}");
        assert!(line.contains(&format!("keys={KEYS} unsorted=0 inversions=0")), "{line}");
    }
    print!("{so}");
    so
}

#[test]
fn c_version_sorts_the_same_keys_and_survives_seven_sequential_crashes() {
    let rust = sort(8, &[], &(0..8).collect::<Vec<_>>());
    let want = checksums(&rust);
    let c = sort_c(8, &[], &(0..8).collect::<Vec<_>>());
    for w in &want {
        assert!(c.contains(w.as_str()), "C output lacks {w}:\n{c}");
    }
    let so = sort_c(8, &["0@0.0", "7@1.0", "5@2.0", "6@3.0", "4@4.0", "1@4.1", "2@4.2"], &[3]);
    assert!(so.contains("view_changes=7"), "{so}");
    for w in &want {
        assert!(so.contains(w.as_str()), "C output after crashes lacks {w}:\n{so}");
    }
    let exe = compile_c("examples/c/hyperquicksort.c");
    let out = weft_job(8, &exe, &[KEYS, "42", "2@2.0", "3@2.0"], &[], 120);
    let (so, se) = text(&out);
    assert!(se.contains("exited with status 3"), "{so}{se}");
    assert!(so.contains("slot 2's list is lost: its holder 2 and its backup 3"), "{so}");
}

/// `(step, view)` of every view change rank `r` printed.
fn views_of(so: &str, r: u32) -> Vec<(u32, Vec<u32>)> {
    let prefix = format!("hyperquicksort: rank {r} view after step ");
    so.lines()
        .filter_map(|l| {
            let (step, v) = l.strip_prefix(&prefix)?.split_once(": ")?;
            let v = v.trim_start_matches('[').trim_end_matches(']');
            Some((
                step.parse().ok()?,
                v.split(", ").filter(|x| !x.is_empty()).map(|x| x.parse().unwrap()).collect(),
            ))
        })
        .collect()
}

/// Run the sort with the DGRP source; every member of the final view must verify, with the
/// output checksums of the failure-free crash-source run; returns stdout and the final view.
fn sort_dgrp(extra: &[&str], keys: &str) -> (String, Vec<u32>) {
    sort_dgrp_on(&[], extra, keys)
}

/// As [`sort_dgrp`], with launcher options.
fn sort_dgrp_on(launcher: &[&str], extra: &[&str], keys: &str) -> (String, Vec<u32>) {
    let mut args = vec!["--keys", keys, "--seed", "42", "--source", "dgrp", "--interval-ms", "100"];
    args.extend_from_slice(extra);
    let out = weft_job_on(8, launcher, &example("hyperquicksort"), &args, &[], 300);
    let (so, se) = text(&out);
    let ctx = format!("{extra:?}: stdout:\n{so}\nstderr:\n{se}");
    assert!(!so.contains("FAILED") && !se.contains("exited with status"), "{ctx}");
    let sorted =
        so.lines().find(|l| l.starts_with("hyperquicksort: SORTED")).unwrap_or_else(|| panic!("{ctx}"));
    let v = sorted.split("members=[").nth(1).and_then(|r| r.split(']').next()).unwrap();
    let members: Vec<u32> = v.split(", ").map(|x| x.parse().unwrap()).collect();
    for r in &members {
        assert!(so.contains(&format!("hyperquicksort: rank {r} OK")), "rank {r} did not verify: {ctx}");
        // Every member saw the same sequence of views.
        assert_eq!(views_of(&so, *r), views_of(&so, members[0]), "{ctx}");
    }
    print!("{so}");
    (so, members)
}

#[test]
fn dgrp_views_survive_one_and_seven_crashes() {
    let (so, m) = sort_dgrp(&["--kill", "3@2"], KEYS);
    assert!(!m.contains(&3), "{m:?}");
    let want = checksums(&so);
    let kills = ["0@0", "7@1", "5@2", "6@3", "4@4", "1@4.1", "2@4.2"];
    let args: Vec<&str> = kills.iter().flat_map(|k| ["--kill", k]).collect();
    let (so, m) = sort_dgrp(&args, KEYS);
    assert_eq!(m, vec![3]);
    assert_eq!(checksums(&so), want);
}

/// The ranks that left the view at some point, checking that none of them came back; the
/// views are those every member printed (`views_of`).
fn left_for_good(seen: &[(u32, Vec<u32>)], so: &str) -> Vec<u32> {
    let mut left: Vec<u32> = Vec::new();
    let mut prev: Vec<u32> = (0..8).collect();
    for (step, v) in seen {
        left.extend(prev.iter().filter(|r| !v.contains(r)));
        assert!(left.iter().all(|r| !v.contains(r)), "a rank that left came back after step {step}: {so}");
        prev = v.clone();
    }
    left
}

#[test]
fn dgrp_removes_a_sigstopped_rank_keeps_a_crashed_one_out_and_survives_a_busy_competitor() {
    // Rank 2 is SIGSTOPped 1 s in every 1.05 s for 3 s from the first sorting round on. At a
    // 100 ms interval the highest threshold is 0.4 s, so each stop outlasts any threshold and
    // the tests sent in its first 0.6 s time out whatever the machine's load: the rank must
    // leave the view. Rank 5 is SIGKILLed in round 3 and must never be in a view again, rejoin
    // on or off. Every member of the final view verifies the output, and all saw the same
    // views (`sort_dgrp`).
    let keys = "16777216";
    let removed_after_stop =
        |seen: &[(u32, Vec<u32>)]| seen.iter().any(|(step, v)| *step >= 1 && !v.contains(&2));
    let (so, m) = sort_dgrp(&["--stop", "2@1:3", "--kill", "5@3"], keys);
    let seen = views_of(&so, m[0]);
    assert!(removed_after_stop(&seen), "the SIGSTOPped rank 2 was never removed: {so}");
    let out_at =
        seen.iter().position(|(_, v)| !v.contains(&5)).unwrap_or_else(|| panic!("5 never left: {so}"));
    assert!(seen[out_at..].iter().all(|(_, v)| !v.contains(&5)), "the crashed rank 5 came back: {so}");
    assert!(!m.contains(&5), "{m:?}");
    let want = checksums(&so);

    // Without rejoin, a rank that left never gets work again.
    let (so, m) = sort_dgrp(&["--stop", "2@1:3", "--no-rejoin"], keys);
    let seen = views_of(&so, m[0]);
    assert!(removed_after_stop(&seen), "the SIGSTOPped rank 2 was never removed: {so}");
    let left = left_for_good(&seen, &so);
    for r in &left {
        assert!(so.contains(&format!("hyperquicksort: rank {r} is not a member of the final view")), "{so}");
    }
    assert_eq!(checksums(&so), want);

    // A busy process on rank 2's core (ranks bound to cores): the sort verifies, with the same
    // views everywhere. Whether rank 2 is removed depends on the load: on 2 cores shared by 8
    // ranks the competitor takes a fifth of the core, and each call into weft answers tests.
    let (so, _) = sort_dgrp_on(&["--bind-to", "core"], &["--busy", "2@1:3"], keys);
    assert!(so.contains("hyperquicksort: rank 2 slowed (busy competitor) for 3 s from step 1"), "{so}");
    assert_eq!(checksums(&so), want);
}
