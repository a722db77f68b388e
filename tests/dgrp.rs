//! DGRP under real faults: `examples/dgrp_faults.rs` on 4 ranks under `weft-run` (hard
//! timeout): a rank slowed by SIGSTOP bursts is removed and, once resumed and tested good ζ
//! times, rejoins; every rank returns the same view from each round barrier; a SIGKILLed rank
//! never rejoins. No timing is asserted: only the sequence of views.

mod common;
use common::*;

const STOP_ROUND: u32 = 4;
const KILL_ROUND: u32 = 10;
const ROUNDS: u32 = 24;

/// `(rank, round, view)` of every `dgrp_faults: rank R round K view [..]` line.
fn views(so: &str) -> Vec<(u32, u32, Vec<u32>)> {
    so.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("dgrp_faults: rank ")?;
            let (r, rest) = rest.split_once(" round ")?;
            let (k, v) = rest.split_once(" view ")?;
            let v = v.trim_start_matches('[').trim_end_matches(']');
            let view = v.split(", ").filter(|x| !x.is_empty()).map(|x| x.parse().unwrap()).collect();
            Some((r.parse().unwrap(), k.parse().unwrap(), view))
        })
        .collect()
}

#[test]
fn slowed_rank_leaves_and_rejoins_killed_rank_never_returns_views_agree() {
    let out = weft_job(4, &example("dgrp_faults"), &[&ROUNDS.to_string()], &[], 120);
    let (so, se) = text(&out);
    let ctx = format!("stdout:\n{so}\nstderr:\n{se}");
    assert!(!so.contains("FAILED"), "{ctx}");
    for r in [0, 1, 2] {
        assert!(so.contains(&format!("dgrp_faults: rank {r} OK")), "rank {r} did not finish: {ctx}");
    }
    let all = views(&so);
    let mut per_round: Vec<Vec<u32>> = Vec::new();
    for k in 0..ROUNDS {
        let at: Vec<&(u32, u32, Vec<u32>)> = all.iter().filter(|x| x.1 == k).collect();
        let expect = if k < KILL_ROUND { 4 } else { 3 };
        assert_eq!(at.len(), expect, "round {k}: {} ranks reported: {ctx}", at.len());
        // Every rank returned the same view from this barrier.
        for x in &at {
            assert_eq!(x.2, at[0].2, "round {k}: rank {} and rank {} disagree: {ctx}", x.0, at[0].0);
        }
        per_round.push(at[0].2.clone());
    }
    // The SIGKILLed rank is out from its death on, for good.
    for (k, v) in per_round.iter().enumerate().skip(KILL_ROUND as usize) {
        assert!(!v.contains(&3), "round {k}: the killed rank is in the view {v:?}: {ctx}");
    }
    // The slowed rank was removed after its SIGSTOP bursts began, then rejoined.
    let out_at = (STOP_ROUND as usize..per_round.len()).find(|&k| !per_round[k].contains(&2));
    let Some(out_at) = out_at else { panic!("the SIGSTOPped rank was never removed: {ctx}") };
    let back_at = (out_at..per_round.len()).find(|&k| per_round[k].contains(&2));
    assert!(back_at.is_some(), "the SIGSTOPped rank never rejoined (out from round {out_at}): {ctx}");
    print!("{so}");
}
