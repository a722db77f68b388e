//! HyperQuickSort that reconfigures itself over the current view ("Running resilient MPI
//! applications on a Dynamic Group of Recommended Processes", Algorithms 2–4): the world's
//! ranks are the vertices (slots) of a virtual hypercube; each step runs on the members of a
//! view, a member doing the work of the slots whose process left (Algorithm 4), and each
//! step's lists are checkpointed in memory on a buddy so that a replacement can take over.
//! The output is verified: globally sorted and the same multiset as the input.
//!
//! `weft-run -n 8 hyperquicksort [--keys K|2^E] [--seed S] [--source crash|crash-finish]
//! [--kill W@R[.A]]…
//! [--no-checkpoint]` (the last one: no copies on buddies, a plain sort that stops with a lost
//! list at the first failure; the reference for the checkpoints' cost).
//!
//! DGRP: `--source dgrp [--interval-ms 200] [--factor 2.5] [--zeta 5] [--no-rejoin]`, with
//! slow-downs `--stop W@R:SECS` (SIGSTOP bursts) or `--busy W@R:SECS` (a competing busy
//! process) from step R on.
//!
//! Sources: `crash` (default) revokes the communicator on a failed transfer, the ULFM
//! pattern; `dgrp` takes each step's view from the diagnosis's round barrier (processes found
//! slow leave, and rejoin once tested good ζ times unless `--no-rejoin`; crashed ones leave for
//! good); `crash-finish` never revokes: a member that meets a failure still runs its step
//! to the end with empty lists in place of the lost ones, then the agreement fails the step
//! (the way a step must end when the view's communicator is the world and cannot be revoked).
//!
//! Every member of the final view prints `hyperquicksort: rank W OK …`; the lowest member
//! prints `hyperquicksort: SORTED …` with the timings. Exit status: 0 verified, 1 wrong output,
//! 2 bad arguments, 3 the sort cannot go on (lost list, no view).

mod faults;
mod hypercube;
mod keys;
mod placement;
mod steps;
mod transfer;
mod view;

use std::process::ExitCode;
use std::time::Instant;

use faults::{maybe_kill, maybe_slow, Kill, Slow};
use placement::{plan, wanted, Placement, Store};
use steps::{generate_step, sort_round, verify, Job, Verdict};
use view::{CrashSource, DgrpSource, OnFault, ViewSource};

/// Attempts of one step before the sort gives up.
const MAX_ATTEMPTS: u32 = 64;

struct Args {
    keys: u64,
    seed: u64,
    kills: Vec<Kill>,
    copies: bool,
    on_fault: OnFault,
    /// `Some` for the DGRP source.
    dgrp: Option<weft::DgrpOptions>,
    rejoin: bool,
    slows: Vec<Slow>,
}

fn parse_count(s: &str) -> Result<u64, String> {
    let bad = || format!("--keys {s:?}: expected a count or 2^E");
    match s.split_once('^') {
        Some(("2", e)) => {
            let e: u32 = e.parse().map_err(|_| bad())?;
            1u64.checked_shl(e).filter(|_| e < 64).ok_or_else(bad)
        }
        Some(_) => Err(bad()),
        None => s.parse().map_err(|_| bad()),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        keys: 1 << 20,
        seed: 1,
        kills: Vec::new(),
        copies: true,
        on_fault: OnFault::Revoke,
        dgrp: None,
        rejoin: true,
        slows: Vec::new(),
    };
    let mut opts =
        weft::DgrpOptions { interval: std::time::Duration::from_millis(200), ..Default::default() };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--keys" => a.keys = parse_count(&val()?)?,
            "--seed" => a.seed = val()?.parse().map_err(|_| "--seed: expected an integer".to_string())?,
            "--kill" => a.kills.push(val()?.parse()?),
            "--no-checkpoint" => a.copies = false,
            "--source" => match val()?.as_str() {
                "crash" => a.on_fault = OnFault::Revoke,
                "crash-finish" => a.on_fault = OnFault::Finish,
                "dgrp" => a.dgrp = Some(opts),
                s => return Err(format!("--source {s:?}: expected crash, crash-finish or dgrp")),
            },
            "--interval-ms" => {
                let ms: u64 =
                    val()?.parse().map_err(|_| "--interval-ms: expected milliseconds".to_string())?;
                opts.interval = std::time::Duration::from_millis(ms);
            }
            "--factor" => {
                opts.factor = val()?.parse().map_err(|_| "--factor: expected a number".to_string())?
            }
            "--zeta" => opts.zeta = val()?.parse().map_err(|_| "--zeta: expected a count".to_string())?,
            "--no-rejoin" => a.rejoin = false,
            "--stop" => a.slows.push(Slow::parse(&val()?, true)?),
            "--busy" => a.slows.push(Slow::parse(&val()?, false)?),
            _ => return Err(format!("unknown argument {k:?}")),
        }
    }
    if a.dgrp.is_some() {
        a.dgrp = Some(opts);
    }
    Ok(a)
}

enum Stop {
    Usage(String),
    CannotGoOn(String),
    Wrong(String),
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => return report(Stop::Usage(e)),
    };
    let w = match weft::init() {
        Ok(w) => w,
        Err(e) => return report(Stop::CannotGoOn(format!("init: {e}"))),
    };
    let r = run(&w, &args);
    let code = match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(stop) => report(stop),
    };
    let _ = w.finalize();
    code
}

fn report(stop: Stop) -> ExitCode {
    let (msg, code) = match stop {
        Stop::Usage(m) => (m, 2),
        Stop::Wrong(m) => (m, 1),
        Stop::CannotGoOn(m) => (m, 3),
    };
    println!("hyperquicksort: FAILED: {msg}");
    ExitCode::from(code)
}

/// End a step at the view source; print the new view when it changed.
fn end_step(src: &mut dyn ViewSource, ok: bool, me: u32, step: u32) -> Result<bool, Stop> {
    let before = src.changes();
    let committed = src.end_step(ok).map_err(Stop::CannotGoOn)?;
    if src.changes() != before {
        println!("hyperquicksort: rank {me} view after step {step}: {:?}", src.view().members);
    }
    Ok(committed)
}

fn run(w: &Weft, args: &Args) -> Result<(), Stop> {
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    if !n.is_power_of_two() || n > 1 << 16 {
        return Err(Stop::Usage(format!("{n} ranks: the hypercube needs a power of two up to 65536")));
    }
    let dim = n.trailing_zeros();
    let mut src: Box<dyn ViewSource + '_> = match args.dgrp {
        Some(opts) => Box::new(DgrpSource::new(w, opts, args.rejoin).map_err(Stop::CannotGoOn)?),
        None => Box::new(CrashSource::new(w, args.on_fault).map_err(Stop::CannotGoOn)?),
    };
    // With the diagnosis on, long computations give the engine a turn every CHUNK keys.
    let tick = || {
        w.progress();
    };
    let no_tick = || {};
    let tick: &dyn Fn() = if args.dgrp.is_some() { &tick } else { &no_tick };
    let t0 = Instant::now();
    let mut place = Placement::Initial;
    let mut store = Store::default();
    let mut attempts = 0u32;
    let mut sorted_at = t0;
    let mut verdict: Option<Verdict> = None;
    let mut final_view: Vec<u32> = Vec::new();
    for step in 0..=dim + 1 {
        let mut attempt = 0;
        loop {
            if attempt >= MAX_ATTEMPTS {
                return Err(Stop::CannotGoOn(format!("step {step}: {MAX_ATTEMPTS} attempts failed")));
            }
            attempts += 1;
            let view = src.view();
            // Move the committed lists to the placement this view wants.
            match plan(dim, &place, &view.members, &src.alive(), args.copies) {
                Err(lost) => return Err(Stop::CannotGoOn(lost.to_string())),
                Ok(None) => {}
                Ok(Some(mv)) => {
                    let r = mv.run(w, view, me, &store);
                    let ok = r.is_ok();
                    let planned_for = view.members.clone();
                    let committed = end_step(&mut *src, ok, me, step)?;
                    if !committed {
                        attempt += 1;
                        continue;
                    }
                    store = r.expect("committed steps succeeded everywhere");
                    place = mv.to;
                    // A committed step can still end on a new view (DGRP: a removal or a
                    // rejoin at its round barrier): the lists sit where the old view wanted
                    // them, so plan again before computing.
                    if src.view().members != planned_for {
                        attempt += 1;
                        continue;
                    }
                }
            }
            maybe_slow(&args.slows, me, step, attempt).map_err(Stop::CannotGoOn)?;
            let view = src.view();
            let mid = || maybe_kill(&args.kills, me, step, attempt);
            let job =
                Job { w, me, dim, keys: args.keys, seed: args.seed, copies: args.copies, mid: &mid, tick };
            let done = if step == 0 {
                generate_step(&job, view).map(Some)
            } else if step <= dim {
                sort_round(&job, view, &store, step).map(Some)
            } else {
                verify(&job, view, &store).map(|v| {
                    verdict = v;
                    None
                })
            };
            let ok = done.is_ok();
            if std::env::var_os("HQS_DEBUG").is_some() {
                eprintln!("hqs: rank {me} step {step} attempt {attempt}: {:?}", done.as_ref().err());
            }
            let members = view.members.clone();
            if end_step(&mut *src, ok, me, step)? {
                if let Some(next) = done.expect("committed steps succeeded everywhere") {
                    store = next;
                    place = wanted(dim, &members, args.copies);
                }
                // The verification's members are the final view, whatever the barrier after
                // it decided for a next step that does not come.
                final_view = members;
                break;
            }
            attempt += 1;
        }
        if step == dim {
            sorted_at = Instant::now();
        }
    }
    if args.dgrp.is_some() {
        // Counters before stopping (they are gone after).
        if let Ok(c) = w.dgrp_counters() {
            println!(
                "hyperquicksort: rank {me} diagnosis tests {} passed {} late {} removals {} answered {}",
                c.stats.tests, c.stats.passed, c.stats.late, c.stats.removals, c.stats.answered
            );
        }
    }
    src.finish().map_err(Stop::CannotGoOn)?;
    let Some(v) = verdict else {
        println!("hyperquicksort: rank {me} is not a member of the final view {final_view:?}");
        return Ok(());
    };
    let (sort_s, verify_s) = ((sorted_at - t0).as_secs_f64(), sorted_at.elapsed().as_secs_f64());
    let line = format!(
        "keys={} slots={n} members={:?} view_changes={} attempts={attempts} sort_s={sort_s:.3} verify_s={verify_s:.3} list_len_min={} list_len_max={} checksum_sum={:#x} checksum_xor={:#x} checksum_squares={:#x}",
        v.count,
        final_view,
        src.changes(),
        v.min_len,
        v.max_len,
        v.output.sum,
        v.output.xor,
        v.output.squares,
    );
    if !v.ok(args.keys) {
        return Err(Stop::Wrong(format!(
            "unsorted slots {} inversions {} input {:?} output {:?}; {line}",
            v.unsorted, v.inversions, v.input, v.output
        )));
    }
    println!("hyperquicksort: rank {me} OK {line}");
    if final_view.first() == Some(&me) {
        println!("hyperquicksort: SORTED {line}");
    }
    Ok(())
}

use weft::Weft;
