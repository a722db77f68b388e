//! Scenarios: the production ERA, shrink, revoke and detector state machines under the
//! simulator, and their invariant checks.

use weft_ft::agree::{self, Era, Msg, Tree, Value};
use weft_ft::detector::{self, Detector};
use weft_ft::revoke::{self, Revoke};
use weft_ft::shrink::{Shrink, ShrinkAction, Shrunk};
use weft_ft::{bmg_degree, for_each_bmg_neighbor, RankSet};

use crate::{log2_ceil, mix, msg_stats, Config, Core, Delivered, Proto, Report, Violation};

/// Run `cfg` and check its invariants.
pub fn run(cfg: &Config) -> Result<Report, Box<Violation>> {
    match cfg.proto {
        Proto::Era | Proto::Shrink => run_agree(cfg),
        Proto::Revoke => run_revoke(cfg),
        Proto::Detector => run_detector(cfg),
        Proto::GossipFm | Proto::GossipHfl | Proto::Gossip3p => crate::gossip::drive::run_gossip(cfg),
    }
}

fn violation<M>(cfg: &Config, core: &Core<M>, what: String) -> Box<Violation> {
    Box::new(Violation { what, config: cfg.clone(), trace: core.trace })
}

/// Expected duration of a tree operation (ns): the scale on which `Fail::frac` is mapped.
fn tree_op_time(cfg: &Config) -> u64 {
    let lg = log2_ceil(cfg.n) as u64 + 1;
    let hop = cfg.net.lat_inter + cfg.net.overhead * 3 + cfg.net.jitter / 2 + 50;
    2 * lg * hop + cfg.skew
}

/// Does rank `r` know at the start of the operation that `v` (dead before) failed?
fn knows_before(seed: u64, r: u32, v: u32) -> bool {
    mix(seed ^ ((r as u64) << 32) ^ v as u64 ^ 0x1234) & 1 == 0
}

/// Kill the "before" victims at time 0, schedule the others, and start a notice wave for
/// every failure. Returns, per rank, the before-victims it knows at the start.
fn setup_failures<M>(cfg: &Config, core: &mut Core<M>, scale: u64, notices: bool) -> Vec<u32> {
    let mut before = Vec::new();
    for f in &cfg.fails {
        if f.frac < 0.0 {
            core.died[f.rank as usize] = 0;
            before.push(f.rank);
            if notices {
                core.notice_wave(f.rank, cfg.notice_delay, cfg.notice_spread);
            }
        } else {
            let at = (f.frac * scale as f64) as u64;
            core.push(at, crate::Ev::Kill { rank: f.rank });
        }
    }
    before
}

fn known_at_start(cfg: &Config, before: &[u32], r: u32) -> Vec<u32> {
    before.iter().copied().filter(|&v| knows_before(cfg.seed, r, v)).collect()
}

/// Contribution of rank `r`: victims (the first 48 in schedule order) clear a bit of their
/// own, eight survivors-to-be clear bits 48..56, everyone else contributes all ones — so a
/// lost or spurious contribution shows in the flag.
fn flags(cfg: &Config) -> impl Fn(u32) -> u64 + '_ {
    let n = cfg.n;
    move |r: u32| {
        let mut f = u64::MAX;
        if let Some(i) = cfg.fails.iter().position(|x| x.rank == r) {
            if i < 48 {
                f &= !(1u64 << i);
            }
        }
        for j in 0..8u64 {
            if mix(cfg.seed ^ 0xf1a9 ^ j) % n as u64 == r as u64 {
                f &= !(1u64 << (48 + j));
            }
        }
        f
    }
}

fn ctx_of(cfg: &Config, r: u32) -> u32 {
    100 + (mix(cfg.seed ^ 0xc7c7 ^ r as u64) % 1_000_000) as u32
}

enum Node {
    Era(Era),
    Shrink(Shrink),
}

enum Out {
    Send(u32, Msg),
    Era(Value),
    Shrunk(Shrunk),
}

impl Node {
    fn era(&self) -> &Era {
        match self {
            Node::Era(e) => e,
            Node::Shrink(s) => s.era(),
        }
    }
}

fn map_era(a: Vec<agree::Action>) -> Vec<Out> {
    a.into_iter()
        .map(|x| match x {
            agree::Action::Send { to, msg } => Out::Send(to, msg),
            agree::Action::Decided(v) => Out::Era(v),
        })
        .collect()
}

fn map_shrink(a: Vec<ShrinkAction>) -> Vec<Out> {
    a.into_iter()
        .map(|x| match x {
            ShrinkAction::Send { to, msg } => Out::Send(to, msg),
            ShrinkAction::Done(s) => Out::Shrunk(s),
        })
        .collect()
}

fn msg_bytes(m: &Msg) -> u64 {
    let v = match m {
        Msg::Up(v) | Msg::Decide(v) | Msg::Fast { v, .. } => v,
        Msg::Abort => return 24 + 12,
    };
    // Wire: header + flag, ctx, two rank lists (see `wire`).
    24 + 8 + 4 + 8 + 4 * (v.failed.len() + v.acked.as_ref().map_or(0, |a| a.len())) as u64
}

#[derive(PartialEq)]
enum Decision {
    Era(Value),
    Shrunk(Shrunk),
}

fn run_agree(cfg: &Config) -> Result<Report, Box<Violation>> {
    let n = cfg.n;
    let shrink = cfg.proto == Proto::Shrink;
    let mut core: Core<Msg> = Core::new(n, cfg.net.clone(), cfg.seed);
    let scale = tree_op_time(cfg);
    let before = setup_failures(cfg, &mut core, scale, true);
    // Kill events for failures during: notices follow each death.
    let tree = if cfg.binbin && cfg.net.ranks_per_node > 1 {
        let rpn = cfg.net.ranks_per_node;
        let nodes: Vec<u32> = (0..n).map(|r| r / rpn).collect();
        Tree::bin_bin(&nodes)
    } else {
        Tree::binary(n)
    };
    let mut nodes: Vec<Node> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let known = known_at_start(cfg, &before, r);
        nodes.push(match (shrink, cfg.fast_path) {
            (true, false) => Node::Shrink(Shrink::new(tree.clone(), r, &known)),
            (true, true) => Node::Shrink(Shrink::new(tree.clone(), r, &known).with_fast_path()),
            (false, false) => Node::Era(Era::new(tree.clone(), r, &known)),
            (false, true) => Node::Era(Era::new(tree.clone(), r, &known).with_fast_path()),
        });
    }
    let flag = flags(cfg);
    for r in 0..n {
        if core.alive(r) {
            let at = if cfg.skew > 0 { core.rng.below(cfg.skew + 1) } else { 0 };
            core.timer(r, at, 0);
        }
    }
    let mut decided_at: Vec<u64> = vec![u64::MAX; n as usize];
    let mut dec_depth: Vec<u32> = vec![0; n as usize];
    let mut last_decide = 0;
    let mut outs: Vec<Out>;
    while let Some(ev) = core.next_event() {
        let (r, o) = match ev {
            Delivered::Timer { rank, .. } => {
                let known = known_at_start(cfg, &before, rank);
                outs = match &mut nodes[rank as usize] {
                    Node::Era(e) => map_era(e.start(Value::new(flag(rank), ctx_of(cfg, rank), &known, &[]))),
                    Node::Shrink(s) => map_shrink(s.start(ctx_of(cfg, rank), &known)),
                };
                (rank, outs)
            }
            Delivered::Msg { from, to, msg } => {
                if nodes[to as usize].era().is_failed(from) {
                    continue; // the glue drops messages from ranks known failed
                }
                outs = match &mut nodes[to as usize] {
                    Node::Era(e) => map_era(e.on_msg(from, msg)),
                    Node::Shrink(s) => map_shrink(s.on_msg(from, msg)),
                };
                (to, outs)
            }
            Delivered::Kill { rank } => {
                core.notice_wave(rank, core.now + cfg.notice_delay, cfg.notice_spread);
                continue;
            }
            Delivered::Notice { rank, failed } => {
                outs = match &mut nodes[rank as usize] {
                    Node::Era(e) => map_era(e.on_failure(failed)),
                    Node::Shrink(s) => map_shrink(s.on_failure(failed)),
                };
                (rank, outs)
            }
        };
        for a in o {
            let _decision = match a {
                Out::Send(to, msg) => {
                    let b = msg_bytes(&msg);
                    core.send(r, to, msg, b, true);
                    continue;
                }
                Out::Era(v) => Decision::Era(v),
                Out::Shrunk(s) => Decision::Shrunk(s),
            };
            if decided_at[r as usize] != u64::MAX {
                return Err(violation(cfg, &core, format!("rank {r} decided twice")));
            }
            decided_at[r as usize] = core.now;
            dec_depth[r as usize] = core.depth[r as usize];
            last_decide = core.now;
        }
    }
    // Termination.
    let survivors: Vec<u32> = core.survivors().collect();
    if let Some(&r) = survivors.iter().find(|&&r| decided_at[r as usize] == u64::MAX) {
        return Err(violation(cfg, &core, format!("termination: survivor {r} never decided")));
    }
    // Agreement among survivors (a rank that decided and died later may have decided
    // differently only if the algorithm allows it — ERA does not; report it as a violation too).
    let dead: RankSet = (0..n).filter(|&r| !core.alive(r)).collect();
    let mut ref_dec: Option<Decision> = None;
    for &r in &survivors {
        let d = final_decision(&nodes[r as usize], n);
        match &ref_dec {
            None => ref_dec = Some(d),
            Some(x) if *x != d => {
                return Err(violation(
                    cfg,
                    &core,
                    format!(
                        "agreement: survivor {r} decided {}, another survivor {}",
                        describe(&d),
                        describe(x)
                    ),
                ))
            }
            _ => {}
        }
    }
    // Early return makes ERA non-uniform for a rank that returns and then dies before its
    // decision reached anyone: an early-returning rank only knows that the value is fixed
    // "except if it fails itself". Count such ranks; they are not a violation.
    let mut dead_differ = 0;
    for r in 0..n {
        if decided_at[r as usize] != u64::MAX && !core.alive(r) {
            if let Some(x) = &ref_dec {
                if *x != final_decision(&nodes[r as usize], n) {
                    dead_differ += 1;
                }
            }
        }
    }
    let mut notes = Vec::new();
    if dead_differ > 0 {
        notes.push(format!(
            "{dead_differ} rank(s) decided differently and then died (non-uniform early return)"
        ));
    }
    // Validity.
    if let Some(d) = &ref_dec {
        let (failed, agreed_ctx, agreed_flag) = match d {
            Decision::Era(v) => (v.failed.clone(), v.ctx, Some(v.flag)),
            Decision::Shrunk(s) => (s.failed.clone(), s.ctx, None),
        };
        if let Some(&x) = failed.iter().find(|x| !dead.contains(x)) {
            return Err(violation(cfg, &core, format!("validity: agreed failed set holds live rank {x}")));
        }
        let in_set = |r: u32| failed.binary_search(&r).is_ok();
        let mut and_all = u64::MAX;
        let mut and_kept = u64::MAX;
        let (mut ctx_kept, mut ctx_all) = (0, 0);
        for r in 0..n {
            let (f, c) = (flag(r), ctx_of(cfg, r));
            if !before.contains(&r) {
                and_all &= f;
                ctx_all = ctx_all.max(c);
            }
            if !in_set(r) {
                and_kept &= f;
                ctx_kept = ctx_kept.max(c);
            }
        }
        if let Some(fl) = agreed_flag {
            if fl & !and_kept != 0 {
                let missing: Vec<u32> = (0..n).filter(|&r| !in_set(r) && fl & !flag(r) != 0).collect();
                return Err(violation(
                    cfg,
                    &core,
                    format!(
                        "validity: flag {fl:#x} misses the contribution of ranks {missing:?} that are not in the agreed failed set {failed:?}"
                    ),
                ));
            }
            if and_all & !fl != 0 {
                return Err(violation(
                    cfg,
                    &core,
                    format!("validity: flag {fl:#x} has bits no contributor cleared"),
                ));
            }
        }
        if agreed_ctx < ctx_kept || agreed_ctx > ctx_all {
            return Err(violation(
                cfg,
                &core,
                format!(
                    "validity: ctx {agreed_ctx} not the max of the contributions ({ctx_kept}..={ctx_all})"
                ),
            ));
        }
        if let Decision::Shrunk(s) = d {
            let want: Vec<u32> = (0..n).filter(|&r| !in_set(r)).collect();
            if s.survivors != want {
                return Err(violation(
                    cfg,
                    &core,
                    "shrink: membership is not the complement of the failed set".into(),
                ));
            }
        }
    }
    let (msgs_mean, msgs_max, bytes_mean) = msg_stats(&core);
    let mem: usize = nodes.iter().map(|x| x.era().approx_bytes()).sum();
    let rounds_mean = if survivors.is_empty() {
        0.0
    } else {
        survivors.iter().map(|&r| dec_depth[r as usize] as f64).sum::<f64>() / survivors.len() as f64
    };
    Ok(Report {
        proto: cfg.proto.name(),
        n,
        seed: cfg.seed,
        dead: dead.len() as u32,
        rounds: survivors.iter().map(|&r| dec_depth[r as usize]).max().unwrap_or(0) as f64,
        rounds_mean,
        vtime: last_decide,
        msgs_mean,
        msgs_max,
        bytes_mean,
        mem_per_proc: mem as f64 / n as f64,
        events: core.events,
        trace: core.trace,
        reached: None,
        reached_mean: None,
        notes,
    })
}

fn final_decision(node: &Node, n: u32) -> Decision {
    let v = node.era().decision().expect("decided").clone();
    match node {
        Node::Era(_) => Decision::Era(v),
        Node::Shrink(_) => Decision::Shrunk(weft_ft::shrink::shrunk_of(n, &v)),
    }
}

fn describe(d: &Decision) -> String {
    match d {
        Decision::Era(v) => format!("(flag {:#x}, ctx {}, failed {:?})", v.flag, v.ctx, v.failed),
        Decision::Shrunk(s) => format!("(ctx {}, failed {:?})", s.ctx, s.failed),
    }
}

fn run_revoke(cfg: &Config) -> Result<Report, Box<Violation>> {
    let n = cfg.n;
    let mut core: Core<()> = Core::new(n, cfg.net.clone(), cfg.seed);
    let scale = tree_op_time(cfg) / 2;
    let before = setup_failures(cfg, &mut core, scale, true);
    let mut rv: Vec<Revoke> = (0..n).map(|r| Revoke::new(n, r, &known_at_start(cfg, &before, r))).collect();
    // The initiator: a rank alive at the start.
    let mut init = (mix(cfg.seed ^ 0x1e1e) % n as u64) as u32;
    while !core.alive(init) {
        init = (init + 1) % n;
    }
    core.timer(init, 0, 0);
    let mut delivered_at = vec![u64::MAX; n as usize];
    let mut last = 0;
    while let Some(ev) = core.next_event() {
        let (r, acts) = match ev {
            Delivered::Timer { rank, .. } => (rank, rv[rank as usize].start()),
            Delivered::Msg { from, to, .. } => {
                if rv[to as usize].is_failed(from) {
                    continue;
                }
                (to, rv[to as usize].on_msg(from))
            }
            Delivered::Kill { rank } => {
                core.notice_wave(rank, core.now + cfg.notice_delay, cfg.notice_spread);
                continue;
            }
            Delivered::Notice { rank, failed } => (rank, rv[rank as usize].on_failure(failed)),
        };
        for a in acts {
            match a {
                revoke::Action::Send { to } => core.send(r, to, (), 32, true),
                revoke::Action::Deliver => {
                    delivered_at[r as usize] = core.now;
                    last = core.now;
                }
            }
        }
    }
    // Delivery: the survivors reachable from a delivering survivor through survivors must
    // all have delivered (reliable broadcast over the BMG); with fewer than `degree`
    // failures the survivors are connected, so every survivor delivers when the initiator
    // survives. The initiator's component delivers whenever it survives.
    let deg = bmg_degree(n);
    let dead_count = (0..n).filter(|&r| !core.alive(r)).count() as u32;
    if core.alive(init) && delivered_at[init as usize] == u64::MAX {
        return Err(violation(cfg, &core, format!("revoke: the initiator {init} did not deliver")));
    }
    let mut seen = vec![false; n as usize];
    for s in core.survivors().collect::<Vec<_>>() {
        if seen[s as usize] || delivered_at[s as usize] == u64::MAX {
            continue;
        }
        let mut st = vec![s];
        seen[s as usize] = true;
        while let Some(x) = st.pop() {
            if delivered_at[x as usize] == u64::MAX {
                return Err(violation(
                    cfg,
                    &core,
                    format!(
                        "revoke: survivor {x} did not deliver but is connected through survivors to {s}, which did ({dead_count} failed, degree {deg})"
                    ),
                ));
            }
            for_each_bmg_neighbor(n, x, |v| {
                if core.alive(v) && !seen[v as usize] {
                    seen[v as usize] = true;
                    st.push(v);
                }
            });
        }
    }
    if dead_count < deg && core.alive(init) {
        if let Some(x) = core.survivors().find(|&x| delivered_at[x as usize] == u64::MAX) {
            return Err(violation(
                cfg,
                &core,
                format!("revoke: survivor {x} did not deliver with {dead_count} < {deg} failures"),
            ));
        }
    }
    // Per-process messages ≤ degree ≤ 2·⌈log₂ N⌉.
    if let Some(r) = (0..n).find(|&r| core.sent[r as usize] > deg) {
        return Err(violation(
            cfg,
            &core,
            format!("revoke: rank {r} sent {} messages > degree {deg}", core.sent[r as usize]),
        ));
    }
    let surv: Vec<u32> = core.survivors().filter(|&r| delivered_at[r as usize] != u64::MAX).collect();
    let (msgs_mean, msgs_max, bytes_mean) = msg_stats(&core);
    Ok(Report {
        proto: cfg.proto.name(),
        n,
        seed: cfg.seed,
        dead: dead_count,
        rounds: surv.iter().map(|&r| core.depth[r as usize]).max().unwrap_or(0) as f64,
        rounds_mean: surv.iter().map(|&r| core.depth[r as usize] as f64).sum::<f64>()
            / surv.len().max(1) as f64,
        vtime: last,
        msgs_mean,
        msgs_max,
        bytes_mean,
        mem_per_proc: (std::mem::size_of::<Revoke>() + rv.iter().map(|_| 0).sum::<usize>()) as f64,
        events: core.events,
        trace: core.trace,
        reached: None,
        reached_mean: None,
        notes: Vec::new(),
    })
}

#[derive(Clone, Copy, Debug)]
enum DetMsg {
    Heartbeat,
    Finding(u32),
}

/// Detector timing: heartbeat period and timeout (ns); the period is a third of the timeout,
/// the ratio ULFM's Open MPI detector recommends.
pub const DET_PERIOD: u64 = 100_000;
/// See [`DET_PERIOD`].
pub const DET_TIMEOUT: u64 = 300_000;

fn run_detector(cfg: &Config) -> Result<Report, Box<Violation>> {
    let n = cfg.n;
    let (period, timeout) = (DET_PERIOD, DET_TIMEOUT);
    let mut core: Core<DetMsg> = Core::new(n, cfg.net.clone(), cfg.seed);
    // Failures happen in steady state: after two timeouts, spread over one timeout.
    let warm = 2 * timeout;
    let mut fails_at: Vec<(u32, u64)> = Vec::new();
    for f in &cfg.fails {
        let at = if f.frac < 0.0 { 0 } else { warm + (f.frac * timeout as f64) as u64 };
        if at == 0 {
            core.died[f.rank as usize] = 0;
        } else {
            core.push(at, crate::Ev::Kill { rank: f.rank });
        }
        fails_at.push((f.rank, at));
    }
    let mut det: Vec<Detector> = (0..n).map(|r| Detector::new(n, r, period, timeout, 0)).collect();
    let mut outstanding: Vec<u64> = vec![u64::MAX; n as usize];
    for r in 0..n {
        if core.alive(r) {
            // Spread the ranks' phases over one period.
            let at = core.rng.below(period);
            outstanding[r as usize] = at;
            core.timer(r, at, at);
        }
    }
    // Bound per victim: the maximal run of dead ranks around it on the ring is detected one
    // timeout after another; the finding then crosses the BMG (diameter ≤ ⌈log₂ N⌉).
    let lg = log2_ceil(n) as u64;
    let deg = bmg_degree(n) as u64;
    let hop = cfg.net.max_delay(16, deg);
    let prop = (lg + 2) * hop;
    let victims: Vec<u32> = fails_at.iter().map(|x| x.0).collect();
    let vset: RankSet = victims.iter().copied().collect();
    let bound_of = |v: u32| -> u64 {
        let (mut lo, mut hi) = (v, v);
        let mut len = 1u64;
        while len < n as u64 && vset.contains(&((lo + n - 1) % n)) {
            lo = (lo + n - 1) % n;
            len += 1;
        }
        while len < n as u64 && vset.contains(&((hi + 1) % n)) {
            hi = (hi + 1) % n;
            len += 1;
        }
        let mut t_last = 0;
        let mut x = lo;
        for _ in 0..len {
            t_last = t_last.max(fails_at.iter().find(|f| f.0 == x).map_or(0, |f| f.1));
            x = (x + 1) % n;
        }
        t_last + len * (timeout + period + hop + 1) + prop
    };
    let bounds: Vec<u64> = victims.iter().map(|&v| bound_of(v)).collect();
    let end = bounds.iter().copied().max().unwrap_or(warm + timeout) + 2 * timeout;
    // Delays under the timeout: the worst heartbeat gap is a period plus a message delay.
    let quiet = period + cfg.net.max_delay(16, deg + 1) < timeout;
    let mut hb_sent = 0u64;
    let mut declared_max: Vec<u64> = vec![0; victims.len()];
    while core.peek_time().is_some_and(|t| t <= end) {
        let Some(ev) = core.next_event() else { break };
        let (r, acts) = match ev {
            Delivered::Timer { rank, tag } => {
                if tag != outstanding[rank as usize] {
                    continue; // superseded
                }
                outstanding[rank as usize] = u64::MAX;
                let d = &mut det[rank as usize];
                let acts = if core.now >= d.next_deadline() { d.tick(core.now) } else { Vec::new() };
                (rank, acts)
            }
            Delivered::Msg { from, to, msg } => {
                let d = &mut det[to as usize];
                if d.is_failed(from) {
                    continue;
                }
                let acts = match msg {
                    DetMsg::Heartbeat => d.on_heartbeat(from, core.now),
                    DetMsg::Finding(x) => d.on_finding(from, x, core.now),
                };
                (to, acts)
            }
            Delivered::Kill { .. } | Delivered::Notice { .. } => continue,
        };
        for a in acts {
            match a {
                detector::Action::Heartbeat { to } => {
                    hb_sent += 1;
                    core.send(r, to, DetMsg::Heartbeat, 24, false);
                }
                detector::Action::Forward { to, rank } => core.send(r, to, DetMsg::Finding(rank), 28, true),
                detector::Action::Declare { rank } => {
                    if core.alive(rank) && quiet {
                        return Err(violation(
                            cfg,
                            &core,
                            format!(
                                "detector: rank {r} falsely suspected live rank {rank} at {} ns",
                                core.now
                            ),
                        ));
                    }
                    if let Some(i) = victims.iter().position(|&v| v == rank) {
                        declared_max[i] = declared_max[i].max(core.now);
                    }
                }
            }
        }
        let d = det[r as usize].next_deadline().max(core.now);
        if d < outstanding[r as usize] {
            outstanding[r as usize] = d;
            core.timer(r, d, d);
        }
    }
    // Completeness within the bound.
    for (i, &v) in victims.iter().enumerate() {
        if let Some(s) = core.survivors().find(|&s| !det[s as usize].is_failed(v)) {
            return Err(violation(
                cfg,
                &core,
                format!("detector: survivor {s} never learned that {v} failed"),
            ));
        }
        if declared_max[i] > bounds[i] {
            return Err(violation(
                cfg,
                &core,
                format!(
                    "detector: failure of {v} known everywhere only at {} ns > bound {} ns",
                    declared_max[i], bounds[i]
                ),
            ));
        }
    }
    let n_f = n.max(1) as f64;
    let findings = core.msgs - hb_sent;
    let vtime = victims
        .iter()
        .enumerate()
        .map(|(i, _)| declared_max[i].saturating_sub(fails_at[i].1))
        .max()
        .unwrap_or(0);
    let surv: Vec<u32> = core.survivors().collect();
    Ok(Report {
        proto: cfg.proto.name(),
        n,
        seed: cfg.seed,
        dead: victims.len() as u32,
        rounds: surv.iter().map(|&r| core.depth[r as usize]).max().unwrap_or(0) as f64,
        rounds_mean: surv.iter().map(|&r| core.depth[r as usize] as f64).sum::<f64>()
            / surv.len().max(1) as f64,
        vtime,
        msgs_mean: findings as f64 / n_f,
        msgs_max: 0,
        bytes_mean: core.bytes.iter().sum::<u64>() as f64 / n_f,
        mem_per_proc: std::mem::size_of::<Detector>() as f64,
        events: core.events,
        trace: core.trace,
        reached: None,
        reached_mean: None,
        notes: vec![format!(
            "heartbeats {:.1}/proc; msgs/proc counts findings only; no-false-suspicion check {}",
            hb_sent as f64 / n_f,
            if quiet { "on" } else { "off (delays may exceed the timeout)" }
        )],
    })
}
