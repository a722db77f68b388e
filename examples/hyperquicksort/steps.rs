//! The steps of the sort, each run by every member of a view on the slots it owns and each
//! ending with a checkpoint of its result on the owner's buddy: generation and local sort
//! (step 0), the sorting rounds of HyperQuickSort (steps 1..=dim, the cluster dimension going
//! from dim down to 1), and the final verification. A step never changes the committed store:
//! it returns the next one, installed only once the view source commits the step.

use std::collections::BTreeMap;
use std::rc::Rc;

use weft::Weft;

use crate::hypercube::{buddy, owners};
use crate::keys::{generate, median, merge, radix_sort, split, Checksum};
use crate::placement::{List, Store};
use crate::transfer::{tag, transfer, In, Out, CHECKPOINT, EXCHANGE, PIVOT, VERIFY};
use crate::view::View;

/// What every step needs to know.
pub struct Job<'a> {
    pub w: &'a Weft,
    pub me: u32,
    pub dim: u32,
    pub keys: u64,
    pub seed: u64,
    /// Checkpoint copies on buddies (off: a plain sort that cannot survive a failure).
    pub copies: bool,
    /// Called in the middle of a step (after its first communication): fault injection.
    pub mid: &'a dyn Fn(),
    /// Called every [`crate::keys::CHUNK`] keys of a long computation (progress for the
    /// diagnosis when it is on).
    pub tick: &'a dyn Fn(),
}

impl Job<'_> {
    fn slots(&self) -> u32 {
        1 << self.dim
    }
}

/// Send the new lists of this member's slots to its buddy and receive the lists of the slots
/// whose owner has this member as buddy: the checkpoint that makes the step's result survive
/// the loss of either copy.
fn checkpoint(job: &Job, view: &View, own: &[u32], primary: BTreeMap<u32, List>) -> weft::Result<Store> {
    let m = &view.members;
    if !job.copies {
        return Ok(Store { primary, backup: BTreeMap::new() });
    }
    let outs: Vec<Out> = match buddy(job.me, m) {
        Some(b) => primary.iter().map(|(&s, l)| Out { dst: b, tag: tag(CHECKPOINT, s), keys: l }).collect(),
        None => Vec::new(),
    };
    let from: Vec<u32> =
        (0..own.len() as u32).filter(|&s| buddy(own[s as usize], m) == Some(job.me)).collect();
    let ins: Vec<In> = from.iter().map(|&s| In { src: own[s as usize], tag: tag(CHECKPOINT, s) }).collect();
    let got = transfer(job.w, view, &outs, &ins)?;
    let backup = from.into_iter().zip(got).map(|(s, l)| (s, Rc::new(l))).collect();
    view.outcome(Ok(Store { primary, backup }))
}

/// Step 0: generate the input of every owned slot from the seed and sort it locally.
pub fn generate_step(job: &Job, view: &View) -> weft::Result<Store> {
    let own = owners(job.dim, &view.members).expect("non-empty view");
    let mut primary = BTreeMap::new();
    for s in (0..job.slots()).filter(|&s| own[s as usize] == job.me) {
        let mut l = generate(job.seed, job.keys, job.slots(), s, job.tick);
        radix_sort(&mut l, job.tick);
        primary.insert(s, Rc::new(l));
    }
    (job.mid)();
    checkpoint(job, view, &own, primary)
}

/// Sorting round `round` (1..=dim): clusters of dimension s = dim - round + 1. The root slot
/// of each cluster (its lowest) proposes the median of its list as pivot; slot i and slot
/// i ⊕ 2^(s-1) split their lists at the pivot, the lower slot keeps the keys ≤ pivot, the
/// upper one the rest, and each merges what it kept with what it received.
pub fn sort_round(job: &Job, view: &View, store: &Store, round: u32) -> weft::Result<Store> {
    let s = job.dim - round + 1;
    let bit = 1u32 << (s - 1);
    let own = owners(job.dim, &view.members).expect("non-empty view");
    let mine: Vec<u32> = store.primary.keys().copied().collect();
    let root = |i: u32| (i >> s) << s;
    // Pivots: each root's owner sends to the other owners of its cluster.
    let mut pivots: BTreeMap<u32, u64> = BTreeMap::new();
    let mut pivot_vals: Vec<(u32, [u64; 1])> = Vec::new();
    for &r in mine.iter().filter(|&&i| root(i) == i) {
        let p = median(&store.primary[&r]);
        pivots.insert(r, p);
        pivot_vals.push((r, [p]));
    }
    let mut outs = Vec::new();
    for (r, p) in &pivot_vals {
        let mut dsts: Vec<u32> =
            (*r..*r + (1 << s)).map(|i| own[i as usize]).filter(|&o| o != job.me).collect();
        dsts.sort_unstable();
        dsts.dedup();
        outs.extend(dsts.into_iter().map(|d| Out { dst: d, tag: tag(PIVOT, *r), keys: p }));
    }
    let mut need: Vec<u32> = mine.iter().map(|&i| root(i)).filter(|r| own[*r as usize] != job.me).collect();
    need.dedup();
    let ins: Vec<In> = need.iter().map(|&r| In { src: own[r as usize], tag: tag(PIVOT, r) }).collect();
    let got = transfer(job.w, view, &outs, &ins);
    // The fault hook runs also after a failed pivot exchange, so planned crashes happen
    // whatever the others did.
    (job.mid)();
    for (r, v) in need.iter().zip(got?) {
        // Empty only when its sender failed (the step then fails at its end).
        pivots.insert(*r, v.first().copied().unwrap_or(u64::MAX));
    }
    // Exchange halves with the partner slots.
    let halves = |i: u32| -> (&[u64], &[u64]) {
        let (lo, hi) = split(&store.primary[&i], pivots[&root(i)]);
        if i & bit == 0 {
            (lo, hi)
        } else {
            (hi, lo)
        }
    };
    let mut outs = Vec::new();
    let mut ins = Vec::new();
    for &i in &mine {
        let j = i ^ bit;
        if own[j as usize] != job.me {
            outs.push(Out { dst: own[j as usize], tag: tag(EXCHANGE, j), keys: halves(i).1 });
            ins.push(In { src: own[j as usize], tag: tag(EXCHANGE, i) });
        }
    }
    let mut got = transfer(job.w, view, &outs, &ins)?.into_iter();
    let mut primary = BTreeMap::new();
    for &i in &mine {
        let j = i ^ bit;
        let (keep, _) = halves(i);
        let merged = if own[j as usize] == job.me {
            merge(keep, halves(j).1, job.tick)
        } else {
            merge(keep, &got.next().expect("one list per partner"), job.tick)
        };
        primary.insert(i, Rc::new(merged));
    }
    checkpoint(job, view, &own, primary)
}

/// The verdict of the final verification, the same at every member.
pub struct Verdict {
    /// Keys in the output.
    pub count: u64,
    pub input: Checksum,
    pub output: Checksum,
    /// Slots whose list is not sorted.
    pub unsorted: u64,
    /// Adjacent non-empty slots i < j with last(i) > first(j).
    pub inversions: u64,
    /// Largest and smallest output list.
    pub max_len: u64,
    pub min_len: u64,
}

impl Verdict {
    pub fn ok(&self, keys: u64) -> bool {
        self.unsorted == 0 && self.inversions == 0 && self.input == self.output && self.count == keys
    }
}

/// Final verification: every list sorted, each slot's last key ≤ the next non-empty slot's
/// first, and the output the same multiset as the input (checksums of the output against
/// checksums of the input regenerated from the seed, combined over the view).
/// `None` at a process that is not a member of the view.
pub fn verify(job: &Job, view: &View, store: &Store) -> weft::Result<Option<Verdict>> {
    let n = job.slots() as usize;
    // Per slot: [present, unsorted, len, first, last]; each slot is owned by one member.
    let mut table = vec![0u64; 5 * n];
    let (mut out, mut inp) = (Checksum::default(), Checksum::default());
    for (&s, l) in &store.primary {
        let t = &mut table[5 * s as usize..5 * s as usize + 5];
        t[0] = 1;
        t[1] = u64::from(!l.windows(2).all(|p| p[0] <= p[1]));
        t[2] = l.len() as u64;
        t[3] = l.first().copied().unwrap_or(0);
        t[4] = l.last().copied().unwrap_or(0);
        out.add(&Checksum::of(l, job.tick));
        inp.add(&Checksum::of(&generate(job.seed, job.keys, job.slots(), s, job.tick), job.tick));
    }
    (job.mid)();
    let mut mine = table;
    mine.extend_from_slice(&[
        out.count,
        out.sum,
        out.squares,
        inp.count,
        inp.sum,
        inp.squares,
        out.xor,
        inp.xor,
    ]);
    let Some(all) = combine(job, view, mine)? else {
        return Ok(None);
    };
    let (s, x) = (&all[5 * n..5 * n + 6], &all[5 * n + 6..]);
    let mut v = Verdict {
        count: s[0],
        output: Checksum { count: s[0], sum: s[1], squares: s[2], xor: x[0] },
        input: Checksum { count: s[3], sum: s[4], squares: s[5], xor: x[1] },
        unsorted: 0,
        inversions: 0,
        max_len: 0,
        min_len: u64::MAX,
    };
    let mut last: Option<u64> = None;
    for t in all[..5 * n].chunks_exact(5) {
        // A slot missing from every member counts as unsorted (the table sum is 0 there).
        v.unsorted += t[1] + u64::from(t[0] != 1);
        v.max_len = v.max_len.max(t[2]);
        v.min_len = v.min_len.min(t[2]);
        if t[2] > 0 {
            if last.is_some_and(|l| l > t[3]) {
                v.inversions += 1;
            }
            last = Some(t[4]);
        }
    }
    Ok(Some(v))
}

/// Combine every member's verification vector at the lowest member (sums, except the last two
/// words: xor) and hand the result back: point-to-point only, so that it works whether the
/// view's communicator holds only the members or the whole world. `None` at a non-member.
fn combine(job: &Job, view: &View, mine: Vec<u64>) -> weft::Result<Option<Vec<u64>>> {
    let m = &view.members;
    let Some(&leader) = m.first() else { return Ok(None) };
    if !m.contains(&job.me) {
        return Ok(None);
    }
    let others: Vec<u32> = m[1..].to_vec();
    let all = if job.me == leader {
        let ins: Vec<In> = others.iter().map(|&o| In { src: o, tag: tag(VERIFY, 0) }).collect();
        let mut acc = mine;
        for v in transfer(job.w, view, &[], &ins)? {
            // A vector that did not arrive is empty (the step fails at its end).
            let k = acc.len();
            for (i, (a, b)) in acc.iter_mut().zip(v).enumerate() {
                *a = if i + 2 >= k { *a ^ b } else { a.wrapping_add(b) };
            }
        }
        let outs: Vec<Out> =
            others.iter().map(|&o| Out { dst: o, tag: tag(VERIFY, 1), keys: &acc }).collect();
        transfer(job.w, view, &outs, &[])?;
        acc
    } else {
        transfer(job.w, view, &[Out { dst: leader, tag: tag(VERIFY, 0), keys: &mine }], &[])?;
        let mut got = transfer(job.w, view, &[], &[In { src: leader, tag: tag(VERIFY, 1) }])?;
        got.pop().unwrap_or_default()
    };
    view.outcome(Ok(()))?;
    if all.len() != mine_len(job) {
        return Err(
            weft::EngineError::InvalidArg(format!("verification vector of {} words", all.len())).into()
        );
    }
    Ok(Some(all))
}

fn mine_len(job: &Job) -> usize {
    5 * job.slots() as usize + 8
}
