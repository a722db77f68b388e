//! The keys: deterministic per-slot generation from a seed (any member can regenerate any
//! slot's input), the order-independent multiset checksum, and the list operations of a
//! sorting round (local sort, split at a pivot, merge of two sorted lists). The long loops call
//! `tick` every [`CHUNK`] keys: with the diagnosis on, a process answers its tests only while
//! it is inside weft, so long computations must give it a turn.

/// Keys handled between two calls of a `tick`: about a millisecond of work, so that the
/// process answers a test within a few ms of CPU time (at 2^20 keys a chunk was 10–25 ms of
/// CPU, which oversubscription stretched to 300–500 ms of wall time between two calls); a
/// progress call costs well under a microsecond.
pub const CHUNK: usize = 1 << 16;

/// SplitMix64's output function: a bijective 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Number of keys slot `slot` starts with when `total` keys are spread over `slots` slots.
pub fn slot_len(total: u64, slots: u32, slot: u32) -> usize {
    let (q, r) = (total / slots as u64, total % slots as u64);
    (q + u64::from((slot as u64) < r)) as usize
}

/// The input keys of `slot`: key k is mix(seed, slot, k), counter-based so that generation
/// needs no state carried between slots.
pub fn generate(seed: u64, total: u64, slots: u32, slot: u32, tick: &dyn Fn()) -> Vec<u64> {
    let base = mix(seed ^ mix(slot as u64 + 1));
    let n = slot_len(total, slots, slot);
    let mut v = Vec::with_capacity(n);
    for start in (0..n).step_by(CHUNK) {
        v.extend((start..n.min(start + CHUNK)).map(|k| mix(base.wrapping_add(k as u64))));
        tick();
    }
    v
}

/// Least-significant-digit radix sort (four passes of 16 bits), ticking every [`CHUNK`] keys.
pub fn radix_sort(v: &mut Vec<u64>, tick: &dyn Fn()) {
    let mut tmp = vec![0u64; v.len()];
    for pass in 0..4 {
        let shift = 16 * pass;
        let mut count = vec![0usize; 1 << 16];
        for c in v.chunks(CHUNK) {
            for &k in c {
                count[((k >> shift) & 0xffff) as usize] += 1;
            }
            tick();
        }
        let mut at = 0;
        for c in count.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for c in v.chunks(CHUNK) {
            for &k in c {
                let d = ((k >> shift) & 0xffff) as usize;
                tmp[count[d]] = k;
                count[d] += 1;
            }
            tick();
        }
        std::mem::swap(v, &mut tmp);
    }
}

/// Order-independent checksum of a multiset of keys: count, wrapping sum, xor and wrapping
/// sum of squares (all mod 2^64). Combining two checksums gives the checksum of the union.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checksum {
    pub count: u64,
    pub sum: u64,
    pub xor: u64,
    pub squares: u64,
}

impl Checksum {
    pub fn of(keys: &[u64], tick: &dyn Fn()) -> Checksum {
        let mut c = Checksum { count: keys.len() as u64, ..Checksum::default() };
        for chunk in keys.chunks(CHUNK) {
            for &k in chunk {
                c.sum = c.sum.wrapping_add(k);
                c.xor ^= k;
                c.squares = c.squares.wrapping_add(k.wrapping_mul(k));
            }
            tick();
        }
        c
    }

    pub fn add(&mut self, o: &Checksum) {
        self.count = self.count.wrapping_add(o.count);
        self.sum = self.sum.wrapping_add(o.sum);
        self.xor ^= o.xor;
        self.squares = self.squares.wrapping_add(o.squares);
    }
}

/// Split a sorted list at `pivot`: keys ≤ pivot, keys > pivot.
pub fn split(sorted: &[u64], pivot: u64) -> (&[u64], &[u64]) {
    sorted.split_at(sorted.partition_point(|&k| k <= pivot))
}

/// The pivot a cluster's root proposes: the median of its sorted list; `u64::MAX` (every key
/// goes to the lower half) for an empty list.
pub fn median(sorted: &[u64]) -> u64 {
    if sorted.is_empty() {
        u64::MAX
    } else {
        sorted[sorted.len() / 2]
    }
}

/// Merge two sorted lists into one sorted list.
pub fn merge(a: &[u64], b: &[u64], tick: &dyn Fn()) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
        if out.len() % CHUNK == 0 {
            tick();
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_slots_differ() {
        assert_eq!(generate(7, 100, 4, 2, &|| ()), generate(7, 100, 4, 2, &|| ()));
        assert_ne!(generate(7, 100, 4, 2, &|| ()), generate(7, 100, 4, 3, &|| ()));
        assert_ne!(generate(7, 100, 4, 2, &|| ()), generate(8, 100, 4, 2, &|| ()));
        let lens: Vec<usize> = (0..4).map(|s| generate(1, 10, 4, s, &|| ()).len()).collect();
        assert_eq!(lens, vec![3, 3, 2, 2]);
    }

    #[test]
    fn checksum_is_order_independent_and_sees_a_changed_key() {
        let a = generate(3, 1000, 1, 0, &|| ());
        let mut b = a.clone();
        b.reverse();
        assert_eq!(Checksum::of(&a, &|| ()), Checksum::of(&b, &|| ()));
        b[10] ^= 1;
        assert_ne!(Checksum::of(&a, &|| ()), Checksum::of(&b, &|| ()));
        let mut u = Checksum::of(&a[..400], &|| ());
        u.add(&Checksum::of(&a[400..], &|| ()));
        assert_eq!(u, Checksum::of(&a, &|| ()));
    }

    #[test]
    fn split_and_merge() {
        let a = vec![1, 3, 3, 5, 9];
        assert_eq!(split(&a, 3), (&a[..3], &a[3..]));
        assert_eq!(split(&a, 0), (&a[..0], &a[..]));
        assert_eq!(median(&a), 3);
        assert_eq!(median(&[]), u64::MAX);
        assert_eq!(merge(&[1, 4, 4, 8], &[0, 4, 9], &|| ()), vec![0, 1, 4, 4, 4, 8, 9]);
    }

    #[test]
    fn radix_sort_sorts_and_ticks() {
        let mut v = generate(5, 3 * CHUNK as u64 + 17, 1, 0, &|| ());
        v.extend_from_slice(&[0, u64::MAX, 0, 1 << 48]);
        let mut want = v.clone();
        want.sort_unstable();
        let ticks = std::cell::Cell::new(0);
        radix_sort(&mut v, &|| ticks.set(ticks.get() + 1));
        assert_eq!(v, want);
        assert_eq!(ticks.get(), 4 * 2 * 4);
    }
}
