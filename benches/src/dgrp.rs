//! `weft-bench dgrp`: the reconfigurable HyperQuickSort (`examples/hyperquicksort/`, run as
//! `weft-run -n N hyperquicksort …`) timed per fault scenario, every job verified (each
//! survivor reports a sorted output with the input's multiset, the final view is exactly the
//! survivors) and repeated `--reps` times, scenarios interleaved so that the machine's
//! background load spreads evenly; the median sort time is reported with ratios against the
//! failure-free run of the same session.
//!
//! Scenarios: `plain` (no checkpoint copies: the sort alone, with one agreement per step),
//! `crash-ff` (checkpoints on buddies, revoke + shrink recovery, no fault), `crash-1`,
//! `crash-half`, `crash-all-but-one` (1, N/2 and N−1 ranks SIGKILLed one after the other, spread
//! over the sorting rounds), `crash-slow-1` (one rank slowed by SIGSTOP bursts: revoke + shrink
//! cannot take its work away); the same on views of recommended processes: `dgrp-ff` (the
//! diagnosis on, no fault: its overhead against `crash-ff`), `dgrp-crash-*`, and `dgrp-slow-1`,
//! `dgrp-slow-half`, `dgrp-slow-all-but-one` (SIGSTOP bursts from the first sorting round for
//! `--slow-secs`) with rejoin and, suffixed `-norejoin`, without.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Parser;
use weft_testkit::job::{End, Supervisor};

use crate::job::load_avg;
use crate::report::median;

#[derive(Parser, Clone, Debug)]
#[command(
    name = "weft-bench dgrp",
    about = "HyperQuickSort over a reconfigurable virtual hypercube: failure-free and with 1, N/2 \
             and N-1 crashes recovered by revoke + shrink, each output verified"
)]
pub struct DgrpCli {
    /// Keys to sort (a count or 2^E).
    #[arg(long, default_value = "2^27")]
    pub keys: String,
    /// Ranks (a power of two).
    #[arg(short = 'n', long, default_value_t = 8)]
    pub ranks: u32,
    /// Jobs per scenario (median reported); scenarios are interleaved.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub reps: u32,
    /// Scenarios, comma-separated (default `all`; the table in benches/README.md).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub bench: Vec<String>,
    /// Length of the SIGSTOP bursts of the slow-down scenarios, in seconds.
    #[arg(long, default_value_t = 8.0)]
    pub slow_secs: f64,
    /// Testing interval of the diagnosis, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub interval_ms: u64,
    /// Seed of the keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hard timeout per job in seconds (its process group is killed).
    #[arg(long, default_value_t = 1200)]
    pub timeout: u64,
    /// Print CSV (`scenario,ranks,keys,faults,sort_s,verify_s,vs_crash_ff,vs_plain,view_changes`).
    #[arg(long)]
    pub csv: bool,
}

/// A scenario: its name, its view source and the ranks it kills or slows.
struct Scenario {
    name: String,
    checkpoint: bool,
    dgrp: bool,
    rejoin: bool,
    victims: Vec<u32>,
    /// Victims are slowed (SIGSTOP bursts) instead of killed.
    slow: bool,
}

fn scenarios(n: u32) -> Vec<Scenario> {
    let sets: [(&str, Vec<u32>); 3] = [
        ("1", vec![n - 1]),
        ("half", (0..n).filter(|r| r % 2 == 1).collect()),
        ("all-but-one", (1..n).collect()),
    ];
    let s = |name: String, checkpoint, dgrp, rejoin, victims: Vec<u32>, slow| Scenario {
        name,
        checkpoint,
        dgrp,
        rejoin,
        victims,
        slow,
    };
    let mut v = vec![
        s("plain".into(), false, false, true, vec![], false),
        s("crash-ff".into(), true, false, true, vec![], false),
    ];
    for (k, set) in &sets {
        v.push(s(format!("crash-{k}"), true, false, true, set.clone(), false));
    }
    v.push(s("crash-slow-1".into(), true, false, true, vec![n - 1], true));
    v.push(s("dgrp-ff".into(), true, true, true, vec![], false));
    for (k, set) in &sets {
        v.push(s(format!("dgrp-crash-{k}"), true, true, true, set.clone(), false));
    }
    for (k, set) in &sets {
        v.push(s(format!("dgrp-slow-{k}"), true, true, true, set.clone(), true));
        v.push(s(format!("dgrp-slow-{k}-norejoin"), true, true, false, set.clone(), true));
    }
    v
}

/// `--kill` arguments: victim j dies in sorting round 1 + j mod dim, on attempt j / dim of
/// that round, so that each crash is recovered before the next one.
fn kill_args(victims: &[u32], dim: u32) -> Vec<String> {
    victims
        .iter()
        .enumerate()
        .flat_map(|(j, v)| {
            let j = j as u32;
            ["--kill".to_string(), format!("{v}@{}.{}", 1 + j % dim, j / dim)]
        })
        .collect()
}

/// One verified job's figures.
struct Run {
    sort_s: f64,
    verify_s: f64,
    /// View changes the job went through (DGRP: removals and rejoins, false ones included).
    view_changes: u32,
    /// The machine's 1-minute load average when the job started.
    load: Option<f64>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
}

/// The final view of the SORTED line (empty without one).
fn final_view(stdout: &str) -> Vec<u32> {
    let line = stdout.lines().find(|l| l.starts_with("hyperquicksort: SORTED")).unwrap_or("");
    line.split("members=[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .map(|v| v.split(", ").filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

/// Check a job's output: every survivor verified, on the expected final view (`None`: every
/// member of whatever final view the job ended on).
fn check(stdout: &str, survivors: Option<&[u32]>) -> Result<Run, String> {
    let line = stdout.lines().find(|l| l.starts_with("hyperquicksort: SORTED")).ok_or("no SORTED line")?;
    let listed = final_view(stdout);
    let survivors = survivors.unwrap_or(&listed);
    let members = format!("members={survivors:?}");
    for r in survivors {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("hyperquicksort: rank {r} OK")))
            .ok_or_else(|| format!("rank {r} did not report a verified output"))?;
        if !line.contains(&members) {
            return Err(format!("rank {r} ended on another view: {line}"));
        }
    }
    let num = |k: &str| field(line, k).and_then(|v| v.parse::<f64>().ok()).ok_or(format!("no {k} in {line}"));
    Ok(Run {
        sort_s: num("sort_s")?,
        verify_s: num("verify_s")?,
        view_changes: num("view_changes")? as u32,
        load: None,
    })
}

/// The ranks that announced their planned crash (`hyperquicksort: rank R crashes …`).
fn crashed(stdout: &str) -> Vec<u32> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("hyperquicksort: rank ")?.split_once(" crashes ")?.0.parse().ok())
        .collect()
}

fn sibling(name: &str) -> Option<PathBuf> {
    let p = std::env::current_exe().ok()?.with_file_name(name);
    p.is_file().then_some(p)
}

/// Entry point of `weft-bench dgrp …` (`args` without the program name and `dgrp`).
pub fn main(args: Vec<String>) -> ExitCode {
    let cli = DgrpCli::parse_from(std::iter::once("weft-bench dgrp".to_string()).chain(args));
    if !cli.ranks.is_power_of_two() || cli.ranks < 2 {
        eprintln!("weft-bench dgrp: --ranks must be a power of two, at least 2");
        return ExitCode::from(2);
    }
    let run = std::env::var_os("WEFT_RUN").map(PathBuf::from).or_else(|| sibling("weft-run"));
    let sort = sibling("examples/hyperquicksort");
    let (Some(run), Some(sort)) = (run, sort) else {
        eprintln!(
            "weft-bench dgrp: needs weft-run and examples/hyperquicksort next to this executable: \
             cargo build --release -p weft-bench -p weft-pmix --bin weft-run -p weft --example hyperquicksort"
        );
        return ExitCode::FAILURE;
    };
    let dim = cli.ranks.trailing_zeros();
    let all = scenarios(cli.ranks);
    let every = cli.bench.iter().any(|b| b == "all");
    let chosen: Vec<&Scenario> = all.iter().filter(|s| every || cli.bench.contains(&s.name)).collect();
    if !every && chosen.len() != cli.bench.len() {
        eprintln!("weft-bench dgrp: unknown scenario in {:?}", cli.bench);
        return ExitCode::from(2);
    }
    let mut runs: Vec<Vec<Run>> = chosen.iter().map(|_| Vec::new()).collect();
    let mut failed = false;
    for rep in 0..cli.reps {
        for (k, s) in chosen.iter().enumerate() {
            let mut cmd = Command::new(&run);
            cmd.args(["-n", &cli.ranks.to_string(), "--timeout", &cli.timeout.to_string()]);
            cmd.arg(&sort).args(["--keys", &cli.keys, "--seed", &cli.seed.to_string()]);
            if !s.checkpoint {
                cmd.arg("--no-checkpoint");
            }
            if s.dgrp {
                cmd.args(["--source", "dgrp", "--interval-ms", &cli.interval_ms.to_string()]);
                if !s.rejoin {
                    cmd.arg("--no-rejoin");
                }
            }
            if s.slow {
                for v in &s.victims {
                    cmd.args(["--stop".to_string(), format!("{v}@1:{}", cli.slow_secs)]);
                }
            } else {
                cmd.args(kill_args(&s.victims, dim));
            }
            let survivors: Vec<u32> = (0..cli.ranks).filter(|r| !s.victims.contains(r)).collect();
            // With DGRP (and slowed ranks) processes may leave and come back, also falsely on
            // an oversubscribed machine: any final view without a killed rank, every member
            // verified; revoke + shrink must end on exactly the survivors.
            let expect = (!s.slow && !s.dgrp).then_some(&survivors[..]);
            let load = load_avg();
            let done = match Supervisor::new(Duration::from_secs(cli.timeout + 15)).run(cmd) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("weft-bench dgrp: {}: {e}", s.name);
                    return ExitCode::FAILURE;
                }
            };
            let r = match done.end {
                End::Exited(_) => check(&done.stdout, expect).and_then(|r| {
                    // A planned kill fires only if its victim works in that step: with DGRP a
                    // victim found slow beforehand (falsely, under load) is out of the view
                    // then and lives on. The ranks that did crash must stay out.
                    let dead = crashed(&done.stdout);
                    match final_view(&done.stdout).iter().find(|m| dead.contains(m)) {
                        Some(m) => Err(format!("killed rank {m} in the final view")),
                        None => Ok(r),
                    }
                }),
                End::TimedOut(_) => Err(format!("timed out after {} s", cli.timeout)),
            };
            match r {
                Ok(mut r) => {
                    r.load = load;
                    eprintln!(
                        "[dgrp] {} rep {rep}: sort {:.3} s, verify {:.3} s, view changes {}, load {}",
                        s.name,
                        r.sort_s,
                        r.verify_s,
                        r.view_changes,
                        load.map_or("-".into(), |l| format!("{l:.1}"))
                    );
                    runs[k].push(r);
                }
                Err(e) => {
                    failed = true;
                    eprintln!(
                        "weft-bench dgrp: {} rep {rep} FAILED: {e}\n{}{}",
                        s.name, done.stdout, done.stderr
                    );
                }
            }
        }
    }
    report(&cli, &chosen, &runs);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn report(cli: &DgrpCli, chosen: &[&Scenario], runs: &[Vec<Run>]) {
    let med =
        |rs: &Vec<Run>, f: fn(&Run) -> f64| (!rs.is_empty()).then(|| median(rs.iter().map(f).collect()));
    let sort_of =
        |name: &str| chosen.iter().position(|s| s.name == name).and_then(|k| med(&runs[k], |r| r.sort_s));
    let (ff, plain, dgrp_ff) = (sort_of("crash-ff"), sort_of("plain"), sort_of("dgrp-ff"));
    let ratio = |x: Option<f64>, base: Option<f64>| match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => format!("{:.3}", x / b),
        _ => "-".into(),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cli.csv {
        println!("scenario,ranks,keys,faults,sort_s,verify_s,vs_crash_ff,vs_plain,view_changes");
    } else {
        println!(
            "# HyperQuickSort, {} keys, {} ranks on {cores} cores{}; median of {} job(s) per scenario, scenarios interleaved",
            cli.keys,
            cli.ranks,
            if cli.ranks as usize > cores { " (oversubscribed)" } else { "" },
            cli.reps
        );
        println!(
            "{:<26} {:>6} {:>10} {:>10} {:>12} {:>9} {:>9}",
            "scenario", "faults", "sort_s", "verify_s", "vs_crash_ff", "vs_plain", "view_chg"
        );
    }
    for (s, rs) in chosen.iter().zip(runs) {
        let (so, vo) = (med(rs, |r| r.sort_s), med(rs, |r| r.verify_s));
        let vc = med(rs, |r| r.view_changes as f64).map_or("-".into(), |v| format!("{v}"));
        let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}"));
        if cli.csv {
            println!(
                "{},{},{},{},{},{},{},{},{vc}",
                s.name,
                cli.ranks,
                cli.keys,
                s.victims.len(),
                f(so),
                f(vo),
                ratio(so, ff),
                ratio(so, plain)
            );
        } else {
            println!(
                "{:<26} {:>6} {:>10} {:>10} {:>12} {:>9} {vc:>9}",
                s.name,
                s.victims.len(),
                f(so),
                f(vo),
                ratio(so, ff),
                ratio(so, plain)
            );
        }
    }
    if !cli.csv {
        if let (Some(d), Some(f)) = (dgrp_ff, ff) {
            println!(
                "# diagnosis overhead, failure-free: dgrp-ff / crash-ff = {:.3} ({:+.1}% of the sort)",
                d / f,
                (d / f - 1.0) * 100.0
            );
            let job = |name: &str| chosen.iter().position(|s| s.name == name).map(|k| &runs[k]);
            if let (Some(d), Some(f)) = (job("dgrp-ff"), job("crash-ff")) {
                // Jobs of one repetition ran one after the other: their ratio shares the load.
                let paired: Vec<String> =
                    d.iter().zip(f).map(|(d, f)| format!("{:.3}", d.sort_s / f.sort_s)).collect();
                let changes: Vec<String> = d.iter().map(|r| r.view_changes.to_string()).collect();
                println!(
                    "# dgrp-ff / crash-ff per repetition: {} (dgrp-ff view changes: {})",
                    paired.join(" "),
                    changes.join(" ")
                );
            }
        }
        let loads: Vec<f64> = runs.iter().flatten().filter_map(|r| r.load).collect();
        if !loads.is_empty() {
            let (lo, hi) = loads.iter().fold((f64::MAX, f64::MIN), |(a, b), &l| (a.min(l), b.max(l)));
            println!("# load average at job starts: {lo:.1}-{hi:.1}");
        }
        println!("# slow-down scenarios: victims SIGSTOPped 1 s in every 1.05 s for {} s from the first sorting round; faults column = victims", cli.slow_secs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_are_spread_over_the_rounds_one_attempt_apart() {
        assert_eq!(kill_args(&[7], 3), vec!["--kill", "7@1.0"]);
        assert_eq!(
            kill_args(&[1, 2, 3, 4], 3),
            vec!["--kill", "1@1.0", "--kill", "2@2.0", "--kill", "3@3.0", "--kill", "4@1.1"]
        );
    }

    #[test]
    fn a_job_is_accepted_only_with_every_survivor_verified_on_the_right_view() {
        let ok = "hyperquicksort: rank 0 OK keys=8 members=[0, 2] sort_s=1.5 verify_s=0.5\n\
                  hyperquicksort: rank 2 OK keys=8 members=[0, 2] sort_s=1.5 verify_s=0.5\n\
                  hyperquicksort: SORTED keys=8 members=[0, 2] view_changes=3 sort_s=1.5 verify_s=0.5\n";
        let r = check(ok, Some(&[0, 2])).unwrap();
        assert_eq!((r.sort_s, r.verify_s, r.view_changes), (1.5, 0.5, 3));
        assert!(check(ok, None).is_ok());
        assert!(check(ok, Some(&[0, 1, 2])).is_err());
        assert!(check(&ok.replace("rank 2 OK", "rank 2 FAILED"), Some(&[0, 2])).is_err());
        assert!(check(&ok.replace("rank 2 OK", "rank 2 FAILED"), None).is_err());
        assert!(check(&ok.replace("SORTED", "x"), Some(&[0, 2])).is_err());
        let so = "hyperquicksort: rank 3 crashes in step 1 attempt 0\nhyperquicksort: rank 12 crashes in step 2 attempt 1\n";
        assert_eq!(crashed(so), vec![3, 12]);
    }
}
