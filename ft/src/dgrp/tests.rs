//! Unit tests of the diagnosis state machine on a tiny in-memory network.

use super::*;

/// A small driver: messages take `lat` ns; a test reply from `p` is delayed by `slow(p, t)`.
struct Net {
    procs: Vec<Dgrp>,
    q: Vec<(u64, u32, u32, Msg)>,
    dead: Vec<bool>,
    now: u64,
    lat: u64,
}

const MS: u64 = 1_000_000;

impl Net {
    fn new(n: u32, opts: &Options) -> Net {
        Net {
            procs: (0..n).map(|r| Dgrp::new(n, r, opts.clone(), 0).unwrap()).collect(),
            q: Vec::new(),
            dead: vec![false; n as usize],
            now: 0,
            lat: 10_000,
        }
    }

    fn push(&mut self, from: u32, acts: Vec<Action>, extra: u64) {
        for Action::Send { to, msg } in acts {
            let d = if matches!(msg, Msg::TestReply { .. }) { extra } else { 0 };
            self.q.push((self.now + self.lat + d, from, to, msg));
        }
    }

    /// Run until `until`, ticking every process every ms.
    fn run(&mut self, until: u64, slow: &dyn Fn(u32, u64) -> u64) {
        while self.now < until {
            let step = self.now + MS / 10;
            while let Some(i) =
                (0..self.q.len()).filter(|&i| self.q[i].0 <= step).min_by_key(|&i| self.q[i].0)
            {
                let (t, from, to, msg) = self.q.remove(i);
                self.now = self.now.max(t);
                if self.dead[to as usize] {
                    continue;
                }
                let acts = self.procs[to as usize].on_msg(from, msg, self.now);
                let extra = slow(to, self.now);
                self.push(to, acts, extra);
            }
            self.now = step;
            for r in 0..self.procs.len() as u32 {
                if !self.dead[r as usize] {
                    let acts = self.procs[r as usize].tick(self.now);
                    self.push(r, acts, 0);
                }
            }
        }
    }

    fn crash(&mut self, r: u32) {
        self.dead[r as usize] = true;
        for (p, d) in self.procs.iter_mut().enumerate() {
            if !self.dead[p] {
                d.on_failure(r);
            }
        }
    }

    /// The round barrier: every live process contributes, all apply the merge.
    fn barrier(&mut self) -> Vec<Vec<u32>> {
        let mut v = Value::identity();
        for (p, d) in self.procs.iter().enumerate() {
            if !self.dead[p] {
                v.merge(&d.barrier_contribution());
            }
        }
        (0..self.procs.len()).filter(|&p| !self.dead[p]).map(|p| self.procs[p].apply_barrier(&v)).collect()
    }
}

fn opts() -> Options {
    let mut o = Options::new(MS);
    o.task = Rc::new(|a| a * 3 + 1);
    o.task_arg = 7;
    o
}

#[test]
fn failure_free_keeps_everyone() {
    let mut net = Net::new(5, &opts());
    net.run(100 * MS, &|_, _| 0);
    for d in &net.procs {
        assert_eq!(d.current_view(), vec![0, 1, 2, 3, 4]);
        assert_eq!(d.stats().late + d.stats().wrong, 0);
        assert!(d.stats().passed > 50);
    }
    for v in net.barrier() {
        assert_eq!(v, vec![0, 1, 2, 3, 4]);
    }
}

#[test]
fn slow_member_removed_everywhere_then_rejoins_only_by_barrier() {
    let o = opts();
    let mut net = Net::new(6, &o);
    net.run(50 * MS, &|_, _| 0);
    // 3 turns slow: replies take 50 ms, far above the 1 ms floor.
    net.run(80 * MS, &|p, _| if p == 3 { 50 * MS } else { 0 });
    for (p, d) in net.procs.iter().enumerate() {
        assert!(!d.is_member(3), "process {p} still holds 3 recommended");
        assert_eq!(d.counter(3), 1);
    }
    // Only its ring tester found it.
    let finders: Vec<usize> = (0..6).filter(|&p| net.procs[p].stats().removals > 0).collect();
    assert_eq!(finders, vec![2]);
    let views = net.barrier();
    assert!(views.iter().all(|v| v == &vec![0, 1, 2, 4, 5]));
    // Recovered: every member tests it good, but nobody readmits it alone.
    net.run(200 * MS, &|_, _| 0);
    for p in [0usize, 1, 2, 4, 5] {
        assert!(net.procs[p].streak(3) >= o.zeta, "streak at {p}: {}", net.procs[p].streak(3));
        assert!(!net.procs[p].is_member(3));
    }
    let views = net.barrier();
    assert!(views.iter().all(|v| v == &vec![0, 1, 2, 3, 4, 5]), "{views:?}");
    assert!(net.procs.iter().all(|d| d.counter(3) == 2 && d.is_member(3)));
}

#[test]
fn rejoin_needs_every_members_vote() {
    let mut net = Net::new(4, &opts());
    net.run(30 * MS, &|p, _| if p == 1 { 50 * MS } else { 0 });
    net.barrier();
    net.run(60 * MS, &|_, _| 0);
    // Member 0 forgets its record (as if it had just seen 1 fail): no unanimous vote.
    net.procs[0].peers.get_mut(&1).unwrap().streak = 0;
    let views = net.barrier();
    assert!(views.iter().all(|v| v == &vec![0, 2, 3]), "{views:?}");
}

#[test]
fn crashed_process_never_rejoins() {
    let mut net = Net::new(4, &opts());
    net.run(20 * MS, &|_, _| 0);
    net.crash(2);
    net.run(100 * MS, &|_, _| 0);
    for _ in 0..3 {
        let views = net.barrier();
        assert!(views.iter().all(|v| v == &vec![0, 1, 3]));
        net.run(net.now + 20 * MS, &|_, _| 0);
    }
    // Nobody tests a crashed process.
    assert!(net.procs.iter().enumerate().all(|(p, d)| p == 2 || d.streak(2) == 0));
}

#[test]
fn late_reply_to_an_older_test_is_ignored() {
    let o = opts();
    let mut a = Dgrp::new(2, 0, o.clone(), 0).unwrap();
    let acts = a.tick(0);
    let Action::Send { msg: Msg::TestReq { seq, .. }, .. } = acts[0].clone() else { panic!("{acts:?}") };
    let good = (o.task)(o.task_arg);
    a.on_msg(1, Msg::TestReply { seq, result: good }, 10);
    // A duplicate of that reply, long after, and a reply to a test never sent: ignored.
    a.on_msg(1, Msg::TestReply { seq, result: good }, 50 * MS);
    a.on_msg(1, Msg::TestReply { seq: seq + 7, result: good }, 50 * MS);
    assert!(a.is_member(1));
    assert_eq!(a.stats().stale, 2);
    assert_eq!(a.stats().passed, 1);
}

#[test]
fn wrong_result_and_timeout_fail_the_test() {
    let o = opts();
    let mut a = Dgrp::new(3, 0, o.clone(), 0).unwrap();
    let acts = a.tick(0);
    let Action::Send { to: 1, msg: Msg::TestReq { seq, .. } } = acts[0].clone() else { panic!("{acts:?}") };
    let acts = a.on_msg(1, Msg::TestReply { seq, result: 0 }, 100);
    assert!(!a.is_member(1));
    assert_eq!(a.stats().wrong, 1);
    // The finding is broadcast to the neighbours (1 and 2 in a world of 3).
    let dests: Vec<u32> = acts.iter().map(|Action::Send { to, .. }| *to).collect();
    assert_eq!(dests, vec![1, 2]);
    // Now 0 tests 2 (next member) and 1 (non-member); 2 never answers: timeout.
    let th = a.threshold(2);
    // Ticking often enough that no gap looks like a stall of this process.
    let mut t = MS;
    while t <= 2 * MS + th {
        a.tick(t);
        t += MS / 10;
    }
    assert!(!a.is_member(2));
    // Non-member 1 did not answer its test either.
    assert_eq!(a.stats().late, 2);
}

#[test]
fn own_stall_blames_nobody() {
    let o = opts();
    let mut a = Dgrp::new(2, 0, o.clone(), 0).unwrap();
    let acts = a.tick(0);
    let Action::Send { msg: Msg::TestReq { seq, .. }, .. } = acts[0].clone() else { panic!("{acts:?}") };
    // This process did not run for a long time; the reply it finds on waking is not held
    // against the tested process, nor is the expired deadline.
    let late = 100 * o.initial_threshold;
    a.on_msg(1, Msg::TestReply { seq, result: (o.task)(o.task_arg) }, late);
    a.tick(late + 1);
    assert!(a.is_member(1));
    assert_eq!(a.stats().own_stalls, 1);
}

#[test]
fn events_merge_by_max_and_forward_once() {
    let mut d = Dgrp::new(8, 0, opts(), 0).unwrap();
    let acts = d.on_msg(1, Msg::Events(vec![(5, 1), (99, 7)]), 0);
    assert!(!d.is_member(5));
    // Forwarded to every binomial-graph neighbour but the sender.
    assert_eq!(acts.len(), crate::bmg_neighbors(8, 0).len() - 1);
    assert!(d.on_msg(2, Msg::Events(vec![(5, 1)]), 0).is_empty());
    // A barrier readmits 5 (even counter 2); an old removal of 5 arriving late changes nothing.
    let v = barrier::contribution(8, &[], &[], &[], Some(&[]));
    d.apply_barrier(&v);
    assert!(d.is_member(5));
    assert!(d.on_msg(3, Msg::Events(vec![(5, 1)]), 0).is_empty());
    assert!(d.is_member(5));
}

#[test]
fn bad_options_are_rejected() {
    let mut o = opts();
    o.factor = f64::NAN;
    assert!(Dgrp::new(4, 0, o, 0).is_err());
    let mut o = opts();
    o.zeta = 0;
    assert!(Dgrp::new(4, 0, o, 0).is_err());
    assert!(Dgrp::new(4, 4, opts(), 0).is_err());
    assert_eq!(count_primes(1000), 168);
}

#[test]
fn the_tested_process_runs_the_task_for_every_request() {
    let calls = Rc::new(std::cell::Cell::new(0u32));
    let mut o = opts();
    let c = calls.clone();
    o.task = Rc::new(move |a| {
        c.set(c.get() + 1);
        a + 1
    });
    let mut d = Dgrp::new(2, 1, o, 0).unwrap();
    assert_eq!(calls.get(), 1, "the tester's own expected result");
    for seq in 0..3 {
        let acts = d.on_msg(0, Msg::TestReq { seq, arg: 7 }, 0);
        assert_eq!(acts, vec![Action::Send { to: 0, msg: Msg::TestReply { seq, result: 8 } }]);
    }
    assert_eq!(calls.get(), 4);
}

#[test]
fn a_crash_learned_after_the_decision_keeps_the_counter_odd() {
    let mut d = Dgrp::new(4, 0, opts(), 0).unwrap();
    // The barrier decided before anyone knew of 3's crash; this process learned it meanwhile.
    let decided = d.barrier_contribution();
    d.on_failure(3);
    assert_eq!(d.apply_barrier(&decided), vec![0, 1, 2, 3]);
    assert_eq!(d.counter(3), 1);
    assert!(!d.is_member(3));
    // The next barrier names the crash: nothing changes.
    let next = d.barrier_contribution();
    assert_eq!(d.apply_barrier(&next), vec![0, 1, 2]);
    assert_eq!(d.counter(3), 1);
}

/// A tester that runs every `period` ns tests process 1, which answers within 10 µs for 20
/// testing intervals and then once after `last_rtt`: is 1 still recommended after that test?
fn member_after_one_slow_reply(period: u64, last_rtt: u64) -> (bool, u64) {
    let o = opts();
    let good = (o.task)(o.task_arg);
    let mut a = Dgrp::new(2, 0, o, 0).unwrap();
    let mut t = 0;
    let mut tests = 0;
    let mut due: Option<(u64, u32)> = None;
    while tests <= 20 || due.is_some() {
        for Action::Send { msg, .. } in a.tick(t) {
            if let Msg::TestReq { seq, .. } = msg {
                tests += 1;
                // Tests after the slow one go unanswered (the loop ends with its reply).
                if tests <= 21 {
                    due = Some((t + if tests > 20 { last_rtt } else { 10_000 }, seq));
                }
            }
        }
        if let Some((at, seq)) = due.filter(|d| d.0 < t + period) {
            // The reply arrives while this process runs (the driver's message handler).
            a.on_msg(1, Msg::TestReply { seq, result: good }, at);
            due = None;
        }
        t += period;
    }
    (a.is_member(1), a.gap_allowance())
}

#[test]
fn own_gaps_raise_the_threshold_for_everyone() {
    // Running every 0.1 ms, this tester's threshold for 1 is down to the 1 ms floor: a reply
    // after 1.1 ms fails.
    let (member, allowance) = member_after_one_slow_reply(MS / 10, 11 * MS / 10);
    assert!(!member);
    assert_eq!(allowance, 250_000);
    // Running every 0.45 ms (not a stall: under half the floor), it would itself have taken
    // up to 0.45 ms to answer: its threshold for everyone is at least 2.5 × 0.45 ms =
    // 1.125 ms, and the same reply passes.
    let (member, allowance) = member_after_one_slow_reply(9 * MS / 20, 11 * MS / 10);
    assert!(member);
    assert_eq!(allowance, 1_125_000);
    // Not beyond the allowance…
    assert!(!member_after_one_slow_reply(9 * MS / 20, 6 * MS / 5).0);
    // …and never above the highest threshold (4 ms): a process stopped for a long time is
    // still removed by a tester with gaps of up to half the floor.
    assert!(!member_after_one_slow_reply(49 * MS / 100, 5 * MS).0);
}
