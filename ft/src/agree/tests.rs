//! Tests of the agreement: a scripted simulator of n members (message order, kills, late
//! failure notices) checks termination, uniformity and validity of the tree protocol and the
//! fast path over random schedules, and the shape of the trees.

use std::collections::{HashSet, VecDeque};

use super::*;

/// A scripted run: `n` members; `dead` known failed from the start; `kills` = (after how
/// many delivered messages, victim); notices of a failure reach live members after
/// `notice_delay` further deliveries; `lifo` reverses delivery order. Returns each
/// member's decision (None for the dead).
struct Sim {
    m: Vec<Era>,
    alive: Vec<bool>,
    q: VecDeque<(u32, u32, Msg)>,
    decided: Vec<Option<Value>>,
    msgs: usize,
}

impl Sim {
    fn new(tree: Tree, dead: &[u32]) -> Sim {
        let n = tree.size();
        Sim {
            m: (0..n).map(|r| Era::new(tree.clone(), r, dead)).collect(),
            alive: (0..n).map(|r| !dead.contains(&r)).collect(),
            q: VecDeque::new(),
            decided: vec![None; n as usize],
            msgs: 0,
        }
    }
    fn apply(&mut self, r: u32, acts: Vec<Action>) {
        for a in acts {
            match a {
                Action::Send { to, msg } => self.q.push_back((r, to, msg)),
                Action::Decided(v) => {
                    assert!(self.decided[r as usize].is_none(), "decided twice");
                    self.decided[r as usize] = Some(v)
                }
            }
        }
    }
    fn fast(mut self) -> Sim {
        // Half the members built as the glue builds them (neighbours computed lazily).
        self.m = self
            .m
            .into_iter()
            .map(|e| {
                if e.me % 2 == 0 {
                    Era::new_fast(e.tree.clone(), e.me, e.failed.as_slice())
                } else {
                    e.with_fast_path()
                }
            })
            .collect();
        self
    }
    fn deliver_all(&mut self, mut skip: impl FnMut(u32, u32, &Msg) -> bool) -> usize {
        let mut held = VecDeque::new();
        while let Some((f, t, msg)) = self.q.pop_front() {
            if skip(f, t, &msg) {
                held.push_back((f, t, msg));
            } else if self.alive[t as usize] {
                let a = self.m[t as usize].on_msg(f, msg);
                self.apply(t, a);
            }
        }
        let n = held.len();
        self.q = held;
        n
    }
    fn kill(&mut self, v: u32) {
        self.alive[v as usize] = false;
        self.q.retain(|x| x.0 != v);
    }
    fn notify(&mut self, v: u32) {
        for r in 0..self.m.len() as u32 {
            if self.alive[r as usize] {
                let a = self.m[r as usize].on_failure(v);
                self.apply(r, a);
            }
        }
    }
    fn run(&mut self, flags: &[u64], kills: &[(usize, u32)], delay: usize, lifo: bool) {
        let n = self.m.len() as u32;
        let mut pending_notice: Vec<(usize, u32)> = Vec::new();
        for r in 0..n {
            if self.alive[r as usize] {
                let a = self.m[r as usize].start(Value::new(flags[r as usize], r, &[], &[]));
                self.apply(r, a);
            }
        }
        let mut step = 0;
        loop {
            for &(at, v) in kills {
                if step == at && self.alive[v as usize] {
                    self.kill(v);
                    pending_notice.push((step + delay, v));
                }
            }
            let due: Vec<u32> = pending_notice.iter().filter(|x| x.0 <= step).map(|x| x.1).collect();
            pending_notice.retain(|x| x.0 > step);
            for v in due {
                self.notify(v);
            }
            let next = if lifo { self.q.pop_back() } else { self.q.pop_front() };
            match next {
                Some((from, to, msg)) => {
                    self.msgs += 1;
                    if self.alive[to as usize] {
                        let a = self.m[to as usize].on_msg(from, msg);
                        self.apply(to, a);
                    }
                }
                None if pending_notice.is_empty() => break,
                None => {}
            }
            step += 1;
            assert!(step < 1_000_000, "no termination");
        }
    }
    fn check_uniform(&self) -> Value {
        let mut d: Option<&Value> = None;
        for (r, x) in self.decided.iter().enumerate() {
            if !self.alive[r] {
                continue;
            }
            let x = x.as_ref().unwrap_or_else(|| panic!("live member {r} did not decide"));
            match d {
                None => d = Some(x),
                Some(y) => assert_eq!(x, y, "member {r} decided differently"),
            }
        }
        d.unwrap().clone()
    }
}

#[test]
fn failure_free_is_logarithmic_and_correct() {
    for n in 1..40u32 {
        let mut s = Sim::new(Tree::binary(n), &[]);
        let flags: Vec<u64> = (0..n).map(|r| !(1u64 << (r % 64))).collect();
        s.run(&flags, &[], 0, false);
        let d = s.check_uniform();
        let want = flags.iter().fold(u64::MAX, |a, b| a & b);
        assert_eq!(d.flag, want);
        assert_eq!(d.ctx, n - 1, "max of contributions");
        assert_eq!(s.msgs, 2 * (n as usize - 1), "n={n}: n−1 up and n−1 decide");
        assert_eq!(d.outcome(), Ok(want));
    }
}

#[test]
fn failures_before_are_reported_uniformly() {
    let mut s = Sim::new(Tree::binary(9), &[0, 4]);
    s.run(&[7; 9], &[], 0, false);
    let d = s.check_uniform();
    assert_eq!(d.failed, vec![0, 4]);
    assert_eq!(d.outcome(), Err((7, vec![0, 4])));
}

#[test]
fn acknowledged_failures_do_not_raise() {
    let tree = Tree::binary(5);
    let mut m: Vec<Era> = (0..5).map(|r| Era::new(tree.clone(), r, &[2])).collect();
    let mut q = VecDeque::new();
    let mut dec = vec![None; 5];
    for r in [0u32, 1, 3, 4] {
        for a in m[r as usize].start(Value::new(3, 0, &[2], &[2])) {
            match a {
                Action::Send { to, msg } => q.push_back((r, to, msg)),
                Action::Decided(v) => dec[r as usize] = Some(v),
            }
        }
    }
    while let Some((f, t, msg)) = q.pop_front() {
        for a in m[t as usize].on_msg(f, msg) {
            match a {
                Action::Send { to, msg } => q.push_back((t, to, msg)),
                Action::Decided(v) => dec[t as usize] = Some(v),
            }
        }
    }
    for r in [0, 1, 3, 4] {
        assert_eq!(dec[r].as_ref().unwrap().outcome(), Ok(3));
    }
}

#[test]
fn root_dies_during_agreement() {
    // The root dies at various points, with various notice delays and delivery orders.
    for n in [2u32, 3, 5, 8, 13] {
        for at in 0..(3 * n as usize) {
            for delay in [0, 3, 10] {
                for lifo in [false, true] {
                    let mut s = Sim::new(Tree::binary(n), &[]);
                    s.run(&vec![5; n as usize], &[(at, 0)], delay, lifo);
                    if n > 1 {
                        let d = s.check_uniform();
                        assert_eq!(d.flag, 5);
                    }
                }
            }
        }
    }
}

#[test]
fn root_dies_after_partial_decision_broadcast() {
    // Root decides and reaches only one child before dying: the other subtree must adopt
    // that same decision rather than make a new one.
    let n = 7;
    let tree = Tree::binary(n);
    let mut s = Sim::new(tree, &[]);
    let flags = vec![1u64; n as usize];
    for r in 0..n {
        let a = s.m[r as usize].start(Value::new(flags[r as usize], 0, &[], &[]));
        s.apply(r, a);
    }
    // Deliver everything except Decide messages from 0 to 2.
    let mut held = Vec::new();
    while let Some((f, t, msg)) = s.q.pop_front() {
        if f == 0 && t == 2 && matches!(msg, Msg::Decide(_)) {
            held.push(());
            continue;
        }
        let a = s.m[t as usize].on_msg(f, msg);
        s.apply(t, a);
    }
    assert_eq!(held.len(), 1);
    assert!(s.decided[1].is_some() && s.decided[2].is_none());
    let d1 = s.decided[1].clone().unwrap();
    s.kill(0);
    s.notify(0);
    while let Some((f, t, msg)) = s.q.pop_front() {
        if s.alive[t as usize] {
            let a = s.m[t as usize].on_msg(f, msg);
            s.apply(t, a);
        }
    }
    let d = s.check_uniform();
    assert_eq!(d, d1, "the new root must adopt the decision already returned");
}

#[test]
fn many_failures_during_with_random_schedules() {
    random_runs(false, 300, 0x9e37_79b9_7f4a_7c15);
}

fn random_runs(fast: bool, iters: usize, mut seed: u64) {
    let mut rnd = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    for _ in 0..iters {
        let n = 2 + rnd(30) as u32;
        let k = rnd(n as u64 / 2 + 1) as usize;
        let kills: Vec<(usize, u32)> =
            (0..k).map(|_| (rnd(4 * n as u64) as usize, rnd(n as u64) as u32)).collect();
        let before: Vec<u32> = if rnd(4) == 0 { vec![rnd(n as u64) as u32] } else { vec![] };
        let delay = rnd(8) as usize;
        let lifo = rnd(2) == 1;
        let hier = rnd(2) == 1;
        let tree = if hier {
            let nodes: Vec<u32> = (0..n).map(|r| r / 3).collect();
            Tree::bin_bin(&nodes)
        } else {
            Tree::binary(n)
        };
        let mut s = Sim::new(tree.clone(), &before);
        if fast {
            s = s.fast();
        }
        if rnd(2) == 0 {
            // Recycled instances (what the glue does): members that went through another
            // agreement, with failures, reset to start this one.
            let mut old = Sim::new(tree.clone(), &[]);
            if rnd(2) == 0 {
                old = old.fast();
            }
            let v = rnd(n as u64) as u32;
            old.run(&vec![1; n as usize], &[(rnd(2 * n as u64) as usize, v)], 1, rnd(2) == 1);
            for (r, mut e) in old.m.into_iter().enumerate() {
                e.reset(tree.clone(), r as u32, &before, fast);
                s.m[r] = e;
            }
        }
        let flags: Vec<u64> = (0..n).map(|_| rnd(4) | 0xf0).collect();
        s.run(&flags, &kills, delay, lifo);
        if s.alive.iter().any(|&a| a) {
            let d = s.check_uniform();
            // Validity: the AND over live members' flags is implied by the decision.
            for (f, _) in flags.iter().zip(&s.alive).filter(|x| *x.1) {
                assert_eq!(d.flag & f, d.flag);
            }
            // A contribution missing from the flag is named in the failed set.
            for (r, f) in flags.iter().enumerate() {
                if d.flag & f != d.flag {
                    assert!(
                        d.failed.contains(&(r as u32)),
                        "flag {:#x} lacks the contribution {f:#x} of {r}, not named failed",
                        d.flag
                    );
                }
            }
        }
    }
}

#[test]
fn fast_path_failure_free_is_recursive_doubling() {
    for n in 1..40u32 {
        let mut s = Sim::new(Tree::binary(n), &[]).fast();
        let flags: Vec<u64> = (0..n).map(|r| !(1u64 << (r % 64))).collect();
        s.run(&flags, &[], 0, n % 2 == 0);
        let d = s.check_uniform();
        assert_eq!(d.flag, flags.iter().fold(u64::MAX, |a, b| a & b));
        assert_eq!(d.ctx, n - 1, "max of contributions");
        let p = 1usize << (31 - n.leading_zeros());
        let rounds = p.trailing_zeros() as usize;
        let msgs = if n <= FAST_DIRECT_MAX {
            // Direct exchange: everyone to everyone.
            (n * n.saturating_sub(1)) as usize
        } else {
            2 * (n as usize - p) + p * rounds
        };
        assert_eq!(s.msgs, msgs, "n={n}");
        assert!(s.m.iter().all(|e| e.on_fast_path()), "no tree message when nothing fails");
    }
}

#[test]
fn fast_path_with_failures_before_falls_back_to_the_tree() {
    let mut s = Sim::new(Tree::binary(9), &[0, 4]).fast();
    s.run(&[7; 9], &[], 0, false);
    let d = s.check_uniform();
    assert_eq!(d.failed, vec![0, 4]);
    assert_eq!(d.outcome(), Err((7, vec![0, 4])));
    // Only some members know a failure: the others are released by the flood.
    let tree = Tree::binary(6);
    let mut m: Vec<Era> =
        (0..6).map(|r| Era::new(tree.clone(), r, if r == 2 { &[5] } else { &[] }).with_fast_path()).collect();
    let mut q = VecDeque::new();
    let mut dec = vec![None; 6];
    for r in 0..5u32 {
        let known: &[u32] = if r == 2 { &[5] } else { &[] };
        for a in m[r as usize].start(Value::new(1, 0, known, &[])) {
            match a {
                Action::Send { to, msg } => q.push_back((r, to, msg)),
                Action::Decided(v) => dec[r as usize] = Some(v),
            }
        }
    }
    while let Some((f, t, msg)) = q.pop_front() {
        if t == 5 {
            continue;
        }
        for a in m[t as usize].on_msg(f, msg) {
            match a {
                Action::Send { to, msg } => q.push_back((t, to, msg)),
                Action::Decided(v) => dec[t as usize] = Some(v),
            }
        }
        if q.is_empty() && dec[..5].iter().any(|d| d.is_none()) {
            // The others learn of 5's death late.
            for r in [0u32, 1, 3, 4] {
                for a in m[r as usize].on_failure(5) {
                    if let Action::Send { to, msg } = a {
                        q.push_back((r, to, msg));
                    }
                }
            }
        }
    }
    let d0 = dec[0].clone().expect("0 decided");
    for (r, d) in dec.iter().enumerate().take(5).skip(1) {
        assert_eq!(d.as_ref(), Some(&d0), "member {r}");
    }
    assert_eq!(d0.outcome(), Err((1, vec![5])));
}

#[test]
fn fast_decision_survives_fallback_of_others() {
    // 3 dies after its message to 2 but before its message to 1 leaves: n = 4 (direct
    // exchange), its only message to 1; n = 8 (recursive doubling), its step-2 message to
    // 1, after its step-1 exchange with 2. 0 and 2 decide on the fast path (3's
    // contribution included); 1 falls back and must reach the same value through the tree.
    for (n, step) in [(4u32, 1u8), (8, 2)] {
        fast_decision_survives_fallback(n, step);
    }
}

fn fast_decision_survives_fallback(n: u32, step: u8) {
    let mut s = Sim::new(Tree::binary(n), &[]).fast();
    let flags: Vec<u64> = (0..n).map(|r| 0xf00 | (1u64 << r)).collect();
    for r in 0..n {
        let a = s.m[r as usize].start(Value::new(flags[r as usize], r, &[], &[]));
        s.apply(r, a);
    }
    let held =
        s.deliver_all(|f, t, m| f == 3 && t == 1 && matches!(m, Msg::Fast { step: s, .. } if *s == step));
    assert_eq!(held, 1, "n={n}");
    assert!(s.decided[0].is_some() && s.decided[2].is_some() && s.decided[1].is_none(), "n={n}");
    let fast = s.decided[0].clone().unwrap();
    assert_eq!(fast.flag, 0xf00, "n={n}");
    s.kill(3);
    s.notify(3);
    s.deliver_all(|_, _, _| false);
    let d = s.check_uniform();
    assert_eq!(d, fast, "the tree must adopt the fast decision");
    assert!(!s.m[0].on_fast_path(), "0 joined the tree to answer 1");
}

/// The driver's data path (the blocking agreement's direct exchange on the collectives'
/// carrier): a member that decided there has no instance; a tree message rebuilds one,
/// with the failures known by then, by [`Era::restore_fast_decision`]. Its decision must
/// win as the live instance's would have: 0 and 2 decide with 3's contribution, 3 dies
/// before its message reaches 1, 0's instance is dropped and restored knowing 3 failed.
#[test]
fn restored_fast_decision_survives_fallback_of_others() {
    let n = 4;
    let mut s = Sim::new(Tree::binary(n), &[]).fast();
    let flags: Vec<u64> = (0..n).map(|r| 0xf00 | (1u64 << r)).collect();
    for r in 0..n {
        let a = s.m[r as usize].start(Value::new(flags[r as usize], 0, &[], &[]));
        s.apply(r, a);
    }
    s.deliver_all(|f, t, m| f == 3 && t == 1 && matches!(m, Msg::Fast { .. }));
    let fast = s.decided[0].clone().expect("0 decided on the fast path");
    assert_eq!(fast.flag, 0xf00);
    let mut restored = Era::new_fast(Tree::binary(n), 0, &[3]);
    restored.restore_fast_decision(fast.clone());
    s.m[0] = restored;
    s.kill(3);
    s.notify(3);
    s.deliver_all(|_, _, _| false);
    assert_eq!(s.check_uniform(), fast, "the tree must adopt the restored decision");
    // A restored member that sees only a late fast-path message stays decided, silent.
    let mut r = Era::new_fast(Tree::binary(n), 0, &[]);
    r.restore_fast_decision(fast.clone());
    assert!(r.on_msg(1, Msg::Fast { step: FAST_DIRECT, v: Value::new(1, 0, &[], &[]) }).is_empty());
    assert_eq!(r.decision(), Some(&fast));
    let up = r.on_msg(1, Msg::Up(Value::new(1, 0, &[], &[])));
    assert!(up.contains(&Action::Send { to: 1, msg: Msg::Decide(fast.clone()) }), "{up:?}");
}

#[test]
fn fast_path_many_failures_during_with_random_schedules() {
    random_runs(true, 1500, 0x2545_f491_4f6c_dd1d);
}

/// A xorshift generator: the returned closure gives a number below its argument.
fn rng(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |m| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    }
}

/// Each member's flag in the random-schedule tests: its own bit and bits all set.
fn member_flags(n: u32) -> Vec<u64> {
    (0..n).map(|r| 0xf00 | (1u64 << r)).collect()
}

/// What remains in a random-schedule run: the live members, those of them not started, and
/// the failure notices (member, dead member) not delivered (`knows(member, dead)`).
#[allow(clippy::type_complexity)]
fn to_do(
    alive: &[bool],
    started: &[bool],
    knows: impl Fn(u32, u32) -> bool,
) -> (Vec<u32>, Vec<u32>, Vec<(u32, u32)>) {
    let n = alive.len() as u32;
    let live: Vec<u32> = (0..n).filter(|&r| alive[r as usize]).collect();
    let unstarted = live.iter().copied().filter(|&r| !started[r as usize]).collect();
    let notices = live
        .iter()
        .flat_map(|&r| (0..n).filter(|&v| !alive[v as usize]).map(move |v| (r, v)))
        .filter(|&(r, v)| !knows(r, v))
        .collect();
    (live, unstarted, notices)
}

/// Every live member decided the same value; it holds every live contribution, and one it
/// lacks is named failed. Returns the decision.
fn uniform_and_valid(decided: &[Option<Value>], alive: &[bool], flags: &[u64]) -> Value {
    let live: Vec<usize> = (0..alive.len()).filter(|&r| alive[r]).collect();
    let d0 = decided[live[0]].clone().unwrap_or_else(|| panic!("{} did not decide", live[0]));
    for &r in &live {
        assert_eq!(decided[r].as_ref(), Some(&d0), "member {r} of {}", alive.len());
    }
    for (r, f) in flags.iter().enumerate() {
        let has = d0.flag & f == d0.flag;
        assert!(has || !alive[r], "live {r}'s contribution missing: {d0:?}");
        assert!(
            has || d0.failed.contains(&(r as u32)),
            "{r}'s contribution missing, not named failed: {d0:?}"
        );
    }
    d0
}

/// The direct exchange over the live members ([`Era::start_view_into`]), at 2 to 4
/// members: members start with different views of the failures (each knows a random part
/// of them; some of the dead contributed before dying), more die during, starts, deliveries
/// and failure notices interleave at random. Every live member decides, uniformly; the
/// flag holds every live contribution, and one it lacks is named failed.
#[test]
fn fast_path_over_live_members_with_random_views() {
    let mut rnd = rng(0x51ed_270b_a7e1_3c4d);
    let mut fast_with_failures = 0;
    for _ in 0..4000 {
        let n = 2 + rnd(3) as u32;
        let tree = Tree::binary(n);
        let flags = member_flags(n);
        let mut dead: Vec<u32> = (0..n).filter(|_| rnd(3) == 0).collect();
        dead.truncate(n as usize - 1);
        let views: Vec<Vec<u32>> =
            (0..n).map(|_| dead.iter().copied().filter(|_| rnd(2) == 0).collect()).collect();
        let mut m: Vec<Era> = (0..n).map(|r| Era::new_fast(tree.clone(), r, &views[r as usize])).collect();
        let mut q: Vec<(u32, u32, Msg)> = Vec::new();
        let mut decided: Vec<Option<Value>> = vec![None; n as usize];
        let apply = |r: u32, acts: Vec<Action>, q: &mut Vec<(u32, u32, Msg)>, d: &mut Vec<Option<Value>>| {
            for a in acts {
                match a {
                    Action::Send { to, msg } => q.push((r, to, msg)),
                    Action::Decided(v) => {
                        assert!(d[r as usize].is_none(), "decided twice");
                        d[r as usize] = Some(v);
                    }
                }
            }
        };
        let start = |m: &mut Era, r: u32, all_dead: &[u32], rnd: &mut dyn FnMut(u64) -> u64| {
            // The contribution's failed set: the view, or (the engine knew more than the
            // instance was told) every failure.
            let known: Vec<u32> =
                if rnd(4) == 0 { all_dead.to_vec() } else { (0..n).filter(|&x| m.is_failed(x)).collect() };
            let mut out = Vec::new();
            m.start_view_into(Value::new(flags[r as usize], r, &known, &known), &mut out);
            out
        };
        let mut started = vec![false; n as usize];
        // Some of the dead contributed before dying.
        for &d in &dead {
            if rnd(2) == 0 {
                let a = start(&mut m[d as usize], d, &[], &mut rnd);
                started[d as usize] = true;
                apply(d, a, &mut q, &mut decided);
            }
        }
        let mut alive: Vec<bool> = (0..n).map(|r| !dead.contains(&r)).collect();
        let mut kills = rnd(2);
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 100_000, "no termination");
            let (live, unstarted, notices) = to_do(&alive, &started, |r, v| m[r as usize].is_failed(v));
            if unstarted.is_empty() && q.is_empty() && notices.is_empty() {
                break;
            }
            match rnd(8) {
                0 | 1 if !unstarted.is_empty() => {
                    let r = unstarted[rnd(unstarted.len() as u64) as usize];
                    let all_dead: Vec<u32> = (0..n).filter(|&v| !alive[v as usize]).collect();
                    let a = start(&mut m[r as usize], r, &all_dead, &mut rnd);
                    started[r as usize] = true;
                    apply(r, a, &mut q, &mut decided);
                }
                2 if !notices.is_empty() => {
                    let (r, v) = notices[rnd(notices.len() as u64) as usize];
                    let a = m[r as usize].on_failure(v);
                    apply(r, a, &mut q, &mut decided);
                }
                3 if kills > 0 && live.len() > 1 => {
                    kills -= 1;
                    let v = live[rnd(live.len() as u64) as usize];
                    alive[v as usize] = false;
                    dead.push(v);
                }
                _ if !q.is_empty() => {
                    let (f, t, msg) = q.swap_remove(rnd(q.len() as u64) as usize);
                    if alive[t as usize] {
                        let a = m[t as usize].on_msg(f, msg);
                        apply(t, a, &mut q, &mut decided);
                    }
                }
                _ => {}
            }
        }
        let live: Vec<u32> = (0..n).filter(|&r| alive[r as usize]).collect();
        let d0 = uniform_and_valid(&decided, &alive, &flags);
        if !d0.failed.is_empty() && live.iter().all(|&r| m[r as usize].on_fast_path()) {
            fast_with_failures += 1;
        }
    }
    // The point of the view: agreements with failures known decided without the tree.
    assert!(fast_with_failures > 100, "{fast_with_failures} fast decisions with failures");
}

/// The glue's data path, at random: 2 to 4 members start with no failure known (its
/// condition); members die during; deliveries and failure notices interleave at random. A
/// member that decides on the fast path may drop its instance (decided on the data path:
/// no instance, failure notices not seen); any later message for it rebuilds one as the
/// glue does, with the failures it knows by then, by [`Era::restore_fast_decision`], and
/// sends its contribution to the others. Every live member decides, uniformly, and a
/// restored decision is the one its member returned.
#[test]
fn restored_fast_decisions_with_random_schedules() {
    let mut rnd = rng(0x9e37_79b9_7f4a_7c15);
    let mut restored = 0;
    for _ in 0..4000 {
        let n = 2 + rnd(3) as u32;
        let tree = Tree::binary(n);
        let flags = member_flags(n);
        let mut m: Vec<Era> = (0..n).map(|r| Era::new_fast(tree.clone(), r, &[])).collect();
        let mut q: Vec<(u32, u32, Msg)> = Vec::new();
        let mut decided: Vec<Option<Value>> = vec![None; n as usize];
        let mut dropped = vec![false; n as usize];
        let mut known: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
        let mut alive = vec![true; n as usize];
        let mut started = vec![false; n as usize];
        let mut kills = 1 + rnd(2);
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 100_000, "no termination");
            let (live, unstarted, notices) = to_do(&alive, &started, |r, v| known[r as usize].contains(&v));
            if unstarted.is_empty() && q.is_empty() && notices.is_empty() {
                break;
            }
            let (r, acts) = match rnd(8) {
                0 | 1 if !unstarted.is_empty() => {
                    let r = unstarted[rnd(unstarted.len() as u64) as usize];
                    started[r as usize] = true;
                    (r, m[r as usize].start(Value::new(flags[r as usize], 0, &[], &[])))
                }
                2 if !notices.is_empty() => {
                    let (r, v) = notices[rnd(notices.len() as u64) as usize];
                    known[r as usize].push(v);
                    // A member without an instance sees no failure notice.
                    (r, if dropped[r as usize] { Vec::new() } else { m[r as usize].on_failure(v) })
                }
                3 if kills > 0 && live.len() > 1 => {
                    kills -= 1;
                    let v = live[rnd(live.len() as u64) as usize];
                    alive[v as usize] = false;
                    q.retain(|x| x.0 != v);
                    continue;
                }
                _ if !q.is_empty() => {
                    let (f, t, msg) = q.swap_remove(rnd(q.len() as u64) as usize);
                    if !alive[t as usize] {
                        continue;
                    }
                    let mut acts = Vec::new();
                    if dropped[t as usize] {
                        // Rebuilt from the log, as `glue/data_path.rs` does.
                        dropped[t as usize] = false;
                        restored += 1;
                        let d = decided[t as usize].clone().expect("dropped after deciding");
                        let mut e = Era::new_fast(tree.clone(), t, &known[t as usize]);
                        e.restore_fast_decision(d);
                        for to in (0..n).filter(|&x| x != t && !e.is_failed(x)) {
                            let v = Value::new(flags[t as usize], 0, &[], &[]);
                            acts.push(Action::Send { to, msg: Msg::Fast { step: FAST_DIRECT, v } });
                        }
                        m[t as usize] = e;
                    }
                    acts.extend(m[t as usize].on_msg(f, msg));
                    (t, acts)
                }
                _ => continue,
            };
            for a in acts {
                match a {
                    Action::Send { to, msg } => q.push((r, to, msg)),
                    Action::Decided(v) => {
                        assert!(decided[r as usize].is_none(), "{r} decided twice");
                        if m[r as usize].on_fast_path() && rnd(2) == 0 {
                            dropped[r as usize] = true;
                        }
                        decided[r as usize] = Some(v);
                    }
                }
            }
        }
        uniform_and_valid(&decided, &alive, &flags);
    }
    assert!(restored > 100, "only {restored} instances rebuilt");
}

#[test]
fn bin_bin_tree_is_a_tree() {
    let nodes = [0, 0, 0, 1, 1, 2, 2, 2, 2, 0];
    let t = Tree::bin_bin(&nodes);
    let none = HashSet::new();
    let mut count = 0;
    for r in 0..nodes.len() as u32 {
        for c in t.live_children(r, &none) {
            assert_eq!(t.live_parent(c, &none), Some(r));
            count += 1;
            // Intra-node edges, except between leaders.
            if nodes[c as usize] != nodes[r as usize] {
                assert!([0u32, 3, 5].contains(&c) && [0u32, 3, 5].contains(&r));
            }
        }
    }
    assert_eq!(count, nodes.len() - 1);
    assert_eq!(t.live_parent(0, &none), None);
    // Parents and children stay inverse in a view with failures (root included).
    let failed: HashSet<u32> = [0, 3, 7].into_iter().collect();
    for r in 0..nodes.len() as u32 {
        if failed.contains(&r) {
            continue;
        }
        for c in t.live_children(r, &failed) {
            assert_eq!(t.live_parent(c, &failed), Some(r), "{c} under {r}");
        }
        if let Some(p) = t.live_parent(r, &failed) {
            assert!(t.live_children(p, &failed).contains(&r));
        }
    }
}
