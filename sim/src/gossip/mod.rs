//! Gossip-based failure detection and consensus for shrink, as sans-IO state machines beside
//! ERA: the three algorithms of "Epidemic failure detection and consensus for extreme
//! parallelism" (Katti, Di Fatta, Naughton and Engelmann, IJHPCA 2018). Only the simulator
//! runs them (the engine's shrink uses ERA); [`drive`] is their simulator driver.
//!
//! Every process runs in **gossip cycles** (the driver calls [`Gossip::tick`] once per cycle).
//! At each tick a process pings one process chosen uniformly at random among those it does not
//! know failed; the ping carries its state, and the target answers at once with a reply that
//! carries its own. **Stochastic pinging**: a ping left unanswered by the next tick (cycle ≫
//! round trip, so this is a timeout with no false suspicion) is a direct detection; failures
//! learned from a gossip message are indirect detections. The three algorithms differ in what
//! they gossip and how they *detect consensus*:
//!
//! | type | in the paper | state per process | consensus detected when |
//! |---|---|---|---|
//! | [`Fm`] | Algorithm 1, fault matrix | one N-bit column per known failure (who detected it): O(f·N) bits, the O(N²) matrix restricted to failed columns | for every known failure, every process not known failed has detected it |
//! | [`Hfl`] | Algorithm 2, heuristic fault list | the list of failed ranks: O(f) | after the initial propagation phase, the list did not change for a whole cycle and the last remote list equalled it |
//! | [`ThreePhase`] | Algorithm 3, three phases with gossip aggregation | the list plus push-sum masses: O(f) | push-sum ("Gossip-based computation of aggregate information", Kempe et al., FOCS 2003) estimates the fraction of live processes that detected each failure (phase 1 → 2: consensus) and that reached consensus on it (phase 2 → 3: commit), within a tolerance |
//!
//! All three decide no earlier than `min_cycles` (the paper's *initial propagation phase*): a
//! failure that occurred before the operation is found by stochastic pinging only after some
//! cycles (a dead process escapes all pings of a cycle with probability ≈ 1/e), so
//! deciding earlier could miss it.
//!
//! Randomness (ping targets) comes from a generator seeded per process at construction, so a
//! run is deterministic given the driver's schedule.

pub mod drive;

use weft_ft::RankSet;

/// What a gossip process asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action<P> {
    /// Send a ping (`reply == false`) or a reply to `to`, carrying `payload`.
    Send {
        /// Destination.
        to: u32,
        /// True for a reply.
        reply: bool,
        /// Gossiped state.
        payload: P,
    },
    /// The process detected consensus: the agreed failed ranks (sorted). Emitted once.
    Decided(Vec<u32>),
}

/// A gossip failure-detection-and-consensus process.
pub trait Gossip {
    /// What a message carries.
    type Payload: Clone;
    /// Start of a gossip cycle.
    fn tick(&mut self) -> Vec<Action<Self::Payload>>;
    /// A ping or reply from `from`.
    fn on_msg(&mut self, from: u32, reply: bool, p: Self::Payload) -> Vec<Action<Self::Payload>>;
    /// True if `r` is known failed here.
    fn is_failed(&self, r: u32) -> bool;
    /// The decision, if any.
    fn decision(&self) -> Option<&[u32]>;
    /// Cycles run so far.
    fn cycle(&self) -> u32;
    /// The current fault view: the ranks known failed here (sorted). Only grows.
    fn view(&self) -> &[u32];
    /// Size of a payload on the wire (bytes).
    fn payload_bytes(p: &Self::Payload) -> u64;
    /// Bytes of protocol state held by this process.
    fn mem_bytes(&self) -> usize;
}

/// What the three algorithms share: identity, cycle counter, random pinging, known failures.
#[derive(Clone, Debug)]
struct Base {
    n: u32,
    me: u32,
    rng: u64,
    cycle: u32,
    min_cycles: u32,
    known: RankSet,
    pending: Option<u32>,
    decided: Option<Vec<u32>>,
}

impl Base {
    fn new(n: u32, me: u32, seed: u64, min_cycles: u32) -> Base {
        Base {
            n,
            me,
            rng: crate::mix(seed ^ (me as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            cycle: 0,
            min_cycles,
            known: RankSet::new(),
            pending: None,
            decided: None,
        }
    }

    fn rand(&mut self, m: u32) -> u32 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        ((crate::mix(self.rng) as u128 * m as u128) >> 64) as u32
    }

    /// New cycle: returns the rank whose ping went unanswered (a direct detection).
    fn begin_cycle(&mut self) -> Option<u32> {
        self.cycle += 1;
        self.pending.take()
    }

    /// A random target among the processes not known failed (None if there is none).
    fn target(&mut self) -> Option<u32> {
        if self.known.len() + 1 >= self.n as usize {
            return None;
        }
        for _ in 0..64 {
            let t = self.rand(self.n - 1);
            let t = if t >= self.me { t + 1 } else { t };
            if !self.known.contains(&t) {
                return Some(t);
            }
        }
        (0..self.n).find(|&t| t != self.me && !self.known.contains(&t))
    }

    fn got_reply(&mut self, from: u32) {
        if self.pending == Some(from) {
            self.pending = None;
        }
    }

    fn decide<P>(&mut self, out: &mut Vec<Action<P>>) {
        if self.decided.is_none() {
            let d = self.known.as_slice().to_vec();
            self.decided = Some(d.clone());
            out.push(Action::Decided(d));
        }
    }
}

/// Algorithm 1: consensus by global knowledge (fault matrix).
#[derive(Clone, Debug)]
pub struct Fm {
    b: Base,
    /// (failed rank k, bit i set ⇔ process i detected k), sorted by k.
    cols: Vec<(u32, Vec<u64>)>,
}

fn words(n: u32) -> usize {
    (n as usize).div_ceil(64)
}

impl Fm {
    /// Process `me` of `n`; `seed` seeds its ping targets.
    pub fn new(n: u32, me: u32, seed: u64, min_cycles: u32) -> Fm {
        Fm { b: Base::new(n, me, seed, min_cycles), cols: Vec::new() }
    }

    fn col(&mut self, k: u32) -> &mut Vec<u64> {
        let i = match self.cols.binary_search_by_key(&k, |c| c.0) {
            Ok(i) => i,
            Err(i) => {
                let mut bits = vec![0u64; words(self.b.n)];
                let me = self.b.me as usize;
                bits[me / 64] |= 1 << (me % 64);
                self.cols.insert(i, (k, bits));
                self.b.known.insert(k);
                i
            }
        };
        &mut self.cols[i].1
    }

    fn consensus(&self) -> bool {
        let n = self.b.n as usize;
        self.cols.iter().all(|(_, bits)| {
            let mut have: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
            for &j in self.b.known.iter() {
                if bits[j as usize / 64] & (1 << (j % 64)) == 0 {
                    have += 1;
                }
            }
            have >= n
        })
    }
}

impl Gossip for Fm {
    type Payload = Vec<(u32, Vec<u64>)>;

    fn tick(&mut self) -> Vec<Action<Self::Payload>> {
        let mut out = Vec::new();
        if let Some(t) = self.b.begin_cycle() {
            self.col(t);
        }
        if self.b.decided.is_none() && self.b.cycle >= self.b.min_cycles && self.consensus() {
            self.b.decide(&mut out);
        }
        if let Some(to) = self.b.target() {
            self.b.pending = Some(to);
            out.push(Action::Send { to, reply: false, payload: self.cols.clone() });
        }
        out
    }

    fn on_msg(&mut self, from: u32, reply: bool, p: Self::Payload) -> Vec<Action<Self::Payload>> {
        if reply {
            self.b.got_reply(from);
        }
        for (k, bits) in p {
            if k == self.b.me {
                continue;
            }
            let c = self.col(k);
            for (a, b) in c.iter_mut().zip(&bits) {
                *a |= b;
            }
        }
        if reply {
            Vec::new()
        } else {
            vec![Action::Send { to: from, reply: true, payload: self.cols.clone() }]
        }
    }

    fn is_failed(&self, r: u32) -> bool {
        self.b.known.contains(&r)
    }
    fn decision(&self) -> Option<&[u32]> {
        self.b.decided.as_deref()
    }
    fn cycle(&self) -> u32 {
        self.b.cycle
    }
    fn view(&self) -> &[u32] {
        self.b.known.as_slice()
    }
    fn payload_bytes(p: &Self::Payload) -> u64 {
        8 + p.iter().map(|(_, b)| 4 + 8 * b.len() as u64).sum::<u64>()
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Fm>()
            + self.b.known.heap_bytes()
            + self.cols.capacity() * std::mem::size_of::<(u32, Vec<u64>)>()
            + self.cols.iter().map(|c| c.1.capacity() * 8).sum::<usize>()
    }
}

/// Algorithm 2: heuristic consensus on a fault list.
#[derive(Clone, Debug)]
pub struct Hfl {
    b: Base,
    last_change: u32,
    remote_equal: bool,
}

impl Hfl {
    /// Process `me` of `n`; `seed` seeds its ping targets.
    pub fn new(n: u32, me: u32, seed: u64, min_cycles: u32) -> Hfl {
        Hfl { b: Base::new(n, me, seed, min_cycles), last_change: 0, remote_equal: false }
    }
}

impl Gossip for Hfl {
    type Payload = Vec<u32>;

    fn tick(&mut self) -> Vec<Action<Self::Payload>> {
        let mut out = Vec::new();
        if let Some(t) = self.b.begin_cycle() {
            if self.b.known.insert(t) {
                self.last_change = self.b.cycle;
                self.remote_equal = false;
            }
        }
        // Alone in its view: there is no remote list to compare with.
        let alone = self.b.known.len() + 1 >= self.b.n as usize;
        if self.b.decided.is_none()
            && self.b.cycle >= self.b.min_cycles
            && self.b.cycle > self.last_change + 1
            && (self.remote_equal || alone)
        {
            self.b.decide(&mut out);
        }
        if let Some(to) = self.b.target() {
            self.b.pending = Some(to);
            out.push(Action::Send { to, reply: false, payload: self.b.known.as_slice().to_vec() });
        }
        out
    }

    fn on_msg(&mut self, from: u32, reply: bool, p: Self::Payload) -> Vec<Action<Self::Payload>> {
        if reply {
            self.b.got_reply(from);
        }
        self.remote_equal = p.as_slice() == self.b.known.as_slice();
        let before = self.b.known.len();
        self.b.known.extend(p.into_iter().filter(|&k| k != self.b.me));
        if self.b.known.len() != before {
            self.last_change = self.b.cycle;
        }
        if reply {
            Vec::new()
        } else {
            vec![Action::Send { to: from, reply: true, payload: self.b.known.as_slice().to_vec() }]
        }
    }

    fn is_failed(&self, r: u32) -> bool {
        self.b.known.contains(&r)
    }
    fn decision(&self) -> Option<&[u32]> {
        self.b.decided.as_deref()
    }
    fn cycle(&self) -> u32 {
        self.b.cycle
    }
    fn view(&self) -> &[u32] {
        self.b.known.as_slice()
    }
    fn payload_bytes(p: &Self::Payload) -> u64 {
        8 + 4 * p.len() as u64
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Hfl>() + self.b.known.heap_bytes()
    }
}

/// One failure's aggregation state in [`ThreePhase`].
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    k: u32,
    /// Push-sum mass of "detected k".
    s1: f64,
    /// Push-sum mass of "detected consensus on k".
    s2: f64,
    /// 1: detected; 2: consensus detected; 3: committed.
    phase: u8,
}

/// Gossiped state of [`ThreePhase`]: push-sum weight and, per failure, its two masses.
pub type TpPayload = (f64, Vec<(u32, f64, f64)>);

/// Algorithm 3: three-phase consensus with push-sum aggregation.
#[derive(Clone, Debug)]
pub struct ThreePhase {
    b: Base,
    tol: f64,
    w: f64,
    ent: Vec<Entry>,
    /// Mass handed to the pending ping's target (reclaimed if it never answers).
    lent: Option<TpPayload>,
}

impl ThreePhase {
    /// Process `me` of `n`; `seed` seeds its ping targets; `tol`: relative tolerance of the
    /// estimates (the paper uses 0.1 %).
    pub fn new(n: u32, me: u32, seed: u64, min_cycles: u32, tol: f64) -> ThreePhase {
        ThreePhase { b: Base::new(n, me, seed, min_cycles), tol, w: 1.0, ent: Vec::new(), lent: None }
    }

    fn entry(&mut self, k: u32) -> &mut Entry {
        let i = match self.ent.binary_search_by_key(&k, |e| e.k) {
            Ok(i) => i,
            Err(i) => {
                // Detecting k: inject our unit of "detected" mass.
                self.ent.insert(i, Entry { k, s1: 1.0, s2: 0.0, phase: 1 });
                self.b.known.insert(k);
                i
            }
        };
        &mut self.ent[i]
    }

    fn absorb(&mut self, p: &TpPayload) {
        self.w += p.0;
        for &(k, s1, s2) in &p.1 {
            if k == self.b.me {
                continue;
            }
            let e = self.entry(k);
            e.s1 += s1;
            e.s2 += s2;
        }
    }

    fn halve(&mut self) -> TpPayload {
        self.w /= 2.0;
        let ent = self
            .ent
            .iter_mut()
            .map(|e| {
                e.s1 /= 2.0;
                e.s2 /= 2.0;
                (e.k, e.s1, e.s2)
            })
            .collect();
        (self.w, ent)
    }
}

impl Gossip for ThreePhase {
    type Payload = TpPayload;

    fn tick(&mut self) -> Vec<Action<Self::Payload>> {
        let mut out = Vec::new();
        if let Some(t) = self.b.begin_cycle() {
            if let Some(l) = self.lent.take() {
                self.absorb(&l);
            }
            self.entry(t);
        }
        self.lent = None;
        let thr = 1.0 - self.tol;
        for e in &mut self.ent {
            if e.phase == 1 && e.s1 / self.w >= thr {
                e.phase = 2;
                e.s2 += 1.0;
            }
            if e.phase == 2 && e.s2 / self.w >= thr {
                e.phase = 3;
            }
        }
        if self.b.decided.is_none()
            && self.b.cycle >= self.b.min_cycles
            && self.ent.iter().all(|e| e.phase == 3)
        {
            self.b.decide(&mut out);
        }
        if let Some(to) = self.b.target() {
            self.b.pending = Some(to);
            let p = self.halve();
            self.lent = Some(p.clone());
            out.push(Action::Send { to, reply: false, payload: p });
        }
        out
    }

    fn on_msg(&mut self, from: u32, reply: bool, p: Self::Payload) -> Vec<Action<Self::Payload>> {
        if reply {
            if self.b.pending == Some(from) {
                self.lent = None;
            }
            self.b.got_reply(from);
            self.absorb(&p);
            Vec::new()
        } else {
            self.absorb(&p);
            let h = self.halve();
            vec![Action::Send { to: from, reply: true, payload: h }]
        }
    }

    fn is_failed(&self, r: u32) -> bool {
        self.b.known.contains(&r)
    }
    fn decision(&self) -> Option<&[u32]> {
        self.b.decided.as_deref()
    }
    fn cycle(&self) -> u32 {
        self.b.cycle
    }
    fn view(&self) -> &[u32] {
        self.b.known.as_slice()
    }
    fn payload_bytes(p: &Self::Payload) -> u64 {
        16 + 20 * p.1.len() as u64
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<ThreePhase>()
            + self.b.known.heap_bytes()
            + self.ent.capacity() * std::mem::size_of::<Entry>()
            + self.lent.as_ref().map_or(0, |l| l.1.capacity() * 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lock-step rounds: every live process ticks, then every ping and reply is delivered.
    fn lockstep<G: Gossip>(mut g: Vec<G>, dead: &[u32], max: u32) -> Vec<Option<Vec<u32>>> {
        for _ in 0..max {
            let mut q = Vec::new();
            for (r, x) in g.iter_mut().enumerate() {
                if !dead.contains(&(r as u32)) {
                    for a in x.tick() {
                        if let Action::Send { to, reply, payload } = a {
                            q.push((r as u32, to, reply, payload));
                        }
                    }
                }
            }
            while let Some((f, t, reply, p)) = q.pop() {
                if dead.contains(&t) {
                    continue;
                }
                for a in g[t as usize].on_msg(f, reply, p) {
                    if let Action::Send { to, reply, payload } = a {
                        q.push((t, to, reply, payload));
                    }
                }
            }
        }
        g.iter().map(|x| x.decision().map(|d| d.to_vec())).collect()
    }

    #[test]
    fn all_three_agree_on_failures_before() {
        let n = 64;
        let dead = [5u32, 17, 40];
        let check = |d: Vec<Option<Vec<u32>>>| {
            for (r, x) in d.iter().enumerate() {
                if !dead.contains(&(r as u32)) {
                    assert_eq!(x.as_deref(), Some(&dead[..]), "rank {r}");
                }
            }
        };
        check(lockstep((0..n).map(|r| Fm::new(n, r, 1, 14)).collect(), &dead, 60));
        check(lockstep((0..n).map(|r| Hfl::new(n, r, 1, 14)).collect(), &dead, 60));
        check(lockstep((0..n).map(|r| ThreePhase::new(n, r, 1, 14, 1e-3)).collect(), &dead, 80));
    }
}
