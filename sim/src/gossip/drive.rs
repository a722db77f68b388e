//! The gossip protocols of [`crate::gossip`] under the simulator, on the same failure
//! schedules as ERA (failure times are fractions of the operation's expected duration).

use super::{Action, Fm, Gossip, Hfl, ThreePhase};

use crate::{log2_ceil, msg_stats, Config, Core, Delivered, Ev, Proto, Report, Violation};

/// Gossip cycle length (ns): well above a round trip, so an unanswered ping is a failure.
pub const CYCLE: u64 = 100_000;

/// The initial propagation phase used when the config does not set one.
pub fn default_min_cycles(n: u32) -> u32 {
    log2_ceil(n) + 8
}

/// Largest N for which the fault matrix is run by default: its per-process state is one N-bit
/// column per known failure and every message copies it (O(N) per process, O(N²) overall).
pub const FM_MAX_N: u32 = 1 << 17;

pub(crate) fn run_gossip(cfg: &Config) -> Result<Report, Box<Violation>> {
    let n = cfg.n;
    let mc = cfg.gossip_min_cycles.unwrap_or_else(|| default_min_cycles(n));
    match cfg.proto {
        Proto::GossipFm => drive(cfg, (0..n).map(|r| Fm::new(n, r, cfg.seed, mc)).collect()),
        Proto::GossipHfl => drive(cfg, (0..n).map(|r| Hfl::new(n, r, cfg.seed, mc)).collect()),
        _ => drive(cfg, (0..n).map(|r| ThreePhase::new(n, r, cfg.seed, mc, cfg.gossip_tol)).collect()),
    }
}

enum GMsg<P> {
    Ping(P),
    Reply(P),
}

fn drive<G: Gossip>(cfg: &Config, mut g: Vec<G>) -> Result<Report, Box<Violation>> {
    let n = cfg.n;
    let mut core: Core<GMsg<G::Payload>> = Core::new(n, cfg.net.clone(), cfg.seed);
    let mc = cfg.gossip_min_cycles.unwrap_or_else(|| default_min_cycles(n));
    // Failure times scale with the default margin, so a schedule does not depend on the margin.
    let scale = default_min_cycles(n) as u64 * CYCLE;
    // A margin below the default is a measurement setting: premature decisions are expected.
    let unsafe_margin = mc < default_min_cycles(n);
    let mut all_before = true;
    for f in &cfg.fails {
        if f.frac < 0.0 {
            core.died[f.rank as usize] = 0;
        } else {
            all_before = false;
            core.push((f.frac * scale as f64) as u64, Ev::Kill { rank: f.rank });
        }
    }
    // Each process ticks once per cycle, at its own phase within the first half of the cycle.
    let phase: Vec<u64> = (0..n).map(|_| core.rng.below(CYCLE / 2)).collect();
    for r in 0..n {
        if core.alive(r) {
            core.timer(r, phase[r as usize], 0);
        }
    }
    let max_cycles = 6 * mc.max(default_min_cycles(n)) + 40;
    let mut dec_cycle = vec![0u32; n as usize];
    let mut dec_sent = vec![0u32; n as usize];
    let mut dec_bytes = vec![0u64; n as usize];
    let mut last = 0;
    let mut undecided = (0..n).filter(|&r| core.alive(r)).count();
    let mut peak_mem = vec![0u32; n as usize];
    // Consensus *reached*: the cycle of each process's last fault-view change (views only
    // grow). Survivors whose view does not yet hold every dead rank: `unaware`.
    let mut view_cycle = vec![0u32; n as usize];
    let mut view_len = vec![0usize; n as usize];
    let mut ndead = (0..n).filter(|&r| !core.alive(r)).count();
    let mut unaware = if ndead > 0 { (0..n).filter(|&r| core.alive(r)).count() } else { 0 };
    while let Some(ev) = core.next_event() {
        let (r, acts) = match ev {
            Delivered::Timer { rank, .. } => {
                let x = &mut g[rank as usize];
                let acts = x.tick();
                // Decided processes keep gossiping (others may still need their pings and
                // their aggregation mass); the run ends when every survivor decided.
                if x.cycle() < max_cycles {
                    core.timer(rank, core.now + CYCLE, 0);
                }
                (rank, acts)
            }
            Delivered::Msg { from, to, msg } => {
                if g[to as usize].is_failed(from) {
                    continue;
                }
                let acts = match msg {
                    GMsg::Ping(p) => g[to as usize].on_msg(from, false, p),
                    GMsg::Reply(p) => g[to as usize].on_msg(from, true, p),
                };
                (to, acts)
            }
            Delivered::Kill { rank } => {
                if g[rank as usize].decision().is_none() {
                    undecided -= 1;
                }
                // Every other survivor must now learn one more failure.
                ndead += 1;
                unaware = (0..n).filter(|&r| core.alive(r) && view_len[r as usize] < ndead).count();
                continue;
            }
            Delivered::Notice { .. } => continue,
        };
        let vl = g[r as usize].view().len();
        if vl != view_len[r as usize] {
            if core.alive(r) && view_len[r as usize] < ndead && vl >= ndead {
                unaware -= 1;
            }
            view_len[r as usize] = vl;
            view_cycle[r as usize] = g[r as usize].cycle();
        }
        let m = g[r as usize].mem_bytes().min(u32::MAX as usize) as u32;
        peak_mem[r as usize] = peak_mem[r as usize].max(m);
        for a in acts {
            match a {
                Action::Send { to, reply, payload } => {
                    let b = G::payload_bytes(&payload);
                    let msg = if reply { GMsg::Reply(payload) } else { GMsg::Ping(payload) };
                    core.send(r, to, msg, b, true);
                }
                Action::Decided(_) => {
                    dec_cycle[r as usize] = g[r as usize].cycle();
                    dec_sent[r as usize] = core.sent[r as usize];
                    dec_bytes[r as usize] = core.bytes[r as usize];
                    last = core.now;
                    undecided -= 1;
                }
            }
        }
        // Stop once every survivor decided and knows every failure (with a margin below the
        // default, decisions may come before the views converge: keep gossiping until then).
        if undecided == 0 && unaware == 0 {
            break;
        }
    }
    let survivors: Vec<u32> = core.survivors().collect();
    let dead: Vec<u32> = (0..n).filter(|&r| !core.alive(r)).collect();
    let mut notes = Vec::new();
    let stuck = survivors.iter().filter(|&&r| g[r as usize].decision().is_none()).count();
    if stuck > 0 {
        let what =
            format!("termination: {stuck} survivor(s) did not detect consensus within {max_cycles} cycles");
        if all_before && !unsafe_margin {
            return Err(Box::new(Violation { what, config: cfg.clone(), trace: core.trace }));
        }
        // Push-sum loses the mass of processes that die during the run, so the three-phase
        // estimates may never reach the threshold again.
        let why = if all_before {
            "margin below the default"
        } else {
            "not guaranteed with failures during the run"
        };
        notes.push(format!("{why}: {what}"));
    }
    let mut groups: Vec<(&[u32], u32)> = Vec::new();
    for &r in &survivors {
        let Some(d) = g[r as usize].decision() else { continue };
        if let Some(&x) = d.iter().chain(g[r as usize].view()).find(|x| dead.binary_search(x).is_err()) {
            return Err(Box::new(Violation {
                what: format!("validity: survivor {r} holds live rank {x} as failed"),
                config: cfg.clone(),
                trace: core.trace,
            }));
        }
        match groups.iter_mut().find(|x| x.0 == d) {
            Some(x) => x.1 += 1,
            None => groups.push((d, 1)),
        }
    }
    if groups.len() > 1 || groups.first().is_some_and(|x| x.0.len() != dead.len()) {
        let what = format!(
            "agreement: survivors decided {} different failed sets (sizes {:?}, {} ranks died)",
            groups.len(),
            groups.iter().map(|x| (x.0.len(), x.1)).collect::<Vec<_>>(),
            dead.len()
        );
        if unsafe_margin {
            notes.push(format!("margin {mc} < default {}: {what}", default_min_cycles(n)));
        } else if all_before {
            // Seed 002: every algorithm reaches consensus on failures that occurred before it
            // ran (up to the probability that stochastic pinging misses one for the whole
            // initial propagation phase).
            return Err(Box::new(Violation { what, config: cfg.clone(), trace: core.trace }));
        } else {
            // Failures during the run: the gossip algorithms do not guarantee agreement on them.
            notes.push(format!("not guaranteed with failures during the run: {what}"));
        }
    }
    let s = survivors.len().max(1) as f64;
    // Reached only if every survivor ends with the same view (then it is the agreed one).
    let same_view = survivors.windows(2).all(|w| g[w[0] as usize].view() == g[w[1] as usize].view());
    let (reached, reached_mean) = if same_view {
        let mx = survivors.iter().map(|&r| view_cycle[r as usize]).max().unwrap_or(0) as f64;
        (Some(mx), Some(survivors.iter().map(|&r| view_cycle[r as usize] as f64).sum::<f64>() / s))
    } else {
        notes.push("survivors' final fault views differ: consensus not reached".into());
        (None, None)
    };
    let (_, _, _) = msg_stats(&core);
    let msgs_mean = survivors.iter().map(|&r| dec_sent[r as usize] as f64).sum::<f64>() / s;
    let bytes_mean = survivors.iter().map(|&r| dec_bytes[r as usize] as f64).sum::<f64>() / s;
    Ok(Report {
        proto: cfg.proto.name(),
        n,
        seed: cfg.seed,
        dead: dead.len() as u32,
        rounds: survivors.iter().map(|&r| dec_cycle[r as usize]).max().unwrap_or(0) as f64,
        rounds_mean: survivors.iter().map(|&r| dec_cycle[r as usize] as f64).sum::<f64>() / s,
        reached,
        reached_mean,
        vtime: last,
        msgs_mean,
        msgs_max: survivors.iter().map(|&r| dec_sent[r as usize]).max().unwrap_or(0),
        bytes_mean,
        mem_per_proc: peak_mem.iter().map(|&x| x as f64).sum::<f64>() / n.max(1) as f64,
        events: core.events,
        trace: core.trace,
        notes,
    })
}
