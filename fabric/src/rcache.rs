//! A bounded registration cache: memory registrations keyed by `(address, length)`, reference
//! counted while in use, least-recently-used idle entries evicted beyond the capacity.
//!
//! Generic over the cached value so the policy is unit-tested without libfabric; the
//! transport stores [`crate::mr::Mr`]s. Invariant: at most `capacity` entries, except while
//! more than `capacity` are in use at once (an entry in use is never evicted); with capacity 0
//! nothing is kept once released.
//!
//! Limitation: there is no invalidation when the application unmaps memory. A buffer freed
//! and reallocated at the same address with the same length hits the old registration; that
//! is harmless for software providers (tcp) but stale for pinning hardware (verbs) — see the
//! crate README section "Registration cache".

use std::collections::HashMap;

struct Entry<V> {
    val: V,
    refs: u32,
    last_use: u64,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RCacheStats {
    /// Acquisitions served by an existing entry.
    pub hits: u64,
    /// Acquisitions that registered.
    pub misses: u64,
    /// Entries dropped to respect the capacity.
    pub evictions: u64,
}

/// The cache.
pub struct RCache<V> {
    cap: usize,
    tick: u64,
    map: HashMap<(usize, usize), Entry<V>>,
    stats: RCacheStats,
}

impl<V> RCache<V> {
    /// An empty cache keeping at most `capacity` entries.
    pub fn new(capacity: usize) -> RCache<V> {
        RCache { cap: capacity, tick: 0, map: HashMap::new(), stats: RCacheStats::default() }
    }

    /// Take a reference to the entry for `(addr, len)`, creating it with `reg` on a miss.
    pub fn acquire<E>(
        &mut self,
        addr: usize,
        len: usize,
        reg: impl FnOnce() -> Result<V, E>,
    ) -> Result<&V, E> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.map.get_mut(&(addr, len)) {
            e.refs += 1;
            e.last_use = tick;
            self.stats.hits += 1;
        } else {
            let val = reg()?;
            self.stats.misses += 1;
            self.map.insert((addr, len), Entry { val, refs: 1, last_use: tick });
            self.trim();
        }
        Ok(&self.map[&(addr, len)].val)
    }

    /// Drop a reference taken by [`RCache::acquire`]. Returns the remaining reference count,
    /// or `None` if there is no such entry (a double release is ignored).
    pub fn release(&mut self, addr: usize, len: usize) -> Option<u32> {
        let e = self.map.get_mut(&(addr, len))?;
        if e.refs == 0 {
            return Some(0);
        }
        e.refs -= 1;
        let left = e.refs;
        if left == 0 {
            self.trim();
        }
        Some(left)
    }

    /// The entry for `(addr, len)`, if cached.
    pub fn get(&self, addr: usize, len: usize) -> Option<&V> {
        self.map.get(&(addr, len)).map(|e| &e.val)
    }

    /// References held on `(addr, len)` (0 if idle or absent).
    pub fn refs(&self, addr: usize, len: usize) -> u32 {
        self.map.get(&(addr, len)).map_or(0, |e| e.refs)
    }

    /// Number of entries (in use or idle).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Counters.
    pub fn stats(&self) -> RCacheStats {
        self.stats
    }

    /// Evict least-recently-used idle entries while over capacity. Eviction is a linear scan:
    /// it only runs on a registration miss or a last release, never on the message path.
    fn trim(&mut self) {
        while self.map.len() > self.cap {
            let victim =
                self.map.iter().filter(|(_, e)| e.refs == 0).min_by_key(|(_, e)| e.last_use).map(|(k, _)| *k);
            let Some(k) = victim else { return };
            self.map.remove(&k);
            self.stats.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A value that counts its drops (stands for an MR being closed).
    struct Probe(Rc<Cell<u32>>);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    fn ok(d: &Rc<Cell<u32>>) -> impl FnOnce() -> Result<Probe, ()> + '_ {
        move || Ok(Probe(d.clone()))
    }

    #[test]
    fn hit_and_miss() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(4);
        c.acquire(0x1000, 10, ok(&d)).unwrap();
        c.acquire(0x1000, 10, ok(&d)).unwrap();
        c.acquire(0x1000, 11, ok(&d)).unwrap();
        assert_eq!(c.stats(), RCacheStats { hits: 1, misses: 2, evictions: 0 });
        assert_eq!(c.refs(0x1000, 10), 2);
        assert_eq!(c.release(0x1000, 10), Some(1));
        assert_eq!(c.release(0x1000, 10), Some(0));
        assert_eq!(c.release(0x1000, 10), Some(0), "double release ignored");
        assert_eq!(c.release(0x9999, 1), None);
        assert_eq!(d.get(), 0, "idle entries within capacity are kept");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn lru_eviction_of_idle_entries_only() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(2);
        for a in [1usize, 2] {
            c.acquire(a, 8, ok(&d)).unwrap();
            c.release(a, 8);
        }
        c.acquire(1, 8, ok(&d)).unwrap(); // 1 is now more recent than 2, and in use
        c.release(1, 8);
        c.acquire(3, 8, ok(&d)).unwrap(); // over capacity: evicts 2 (LRU idle)
        assert!(c.get(2, 8).is_none());
        assert!(c.get(1, 8).is_some() && c.get(3, 8).is_some());
        assert_eq!(c.stats().evictions, 1);
        assert_eq!(d.get(), 1);
    }

    #[test]
    fn entries_in_use_are_never_evicted() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(2);
        for a in 1..=5usize {
            c.acquire(a, 8, ok(&d)).unwrap();
        }
        assert_eq!(c.len(), 5, "all in use: over capacity temporarily");
        assert_eq!(d.get(), 0);
        for a in 1..=5usize {
            c.release(a, 8);
        }
        assert_eq!(c.len(), 2, "back within capacity once released");
        assert_eq!(d.get(), 3);
        // The two most recently used survive.
        assert!(c.get(4, 8).is_some() && c.get(5, 8).is_some());
    }

    #[test]
    fn zero_capacity_keeps_nothing_idle() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(0);
        c.acquire(7, 8, ok(&d)).unwrap();
        assert_eq!(c.len(), 1);
        c.release(7, 8);
        assert_eq!(c.len(), 0);
        assert_eq!(d.get(), 1);
    }

    #[test]
    fn failed_registration_is_not_cached() {
        let mut c: RCache<u32> = RCache::new(4);
        assert_eq!(c.acquire(1, 1, || Err("nope")).err(), Some("nope"));
        assert!(c.is_empty());
        assert_eq!(c.stats().misses, 0);
    }

    #[test]
    fn bounded_under_random_use() {
        // Deterministic pseudo-random acquire/release sequence: the bound holds throughout.
        let mut c: RCache<u64> = RCache::new(8);
        let mut held: Vec<usize> = Vec::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = (x % 32) as usize;
            if x & (1 << 40) != 0 && !held.is_empty() {
                let i = (x >> 8) as usize % held.len();
                let a = held.swap_remove(i);
                c.release(a, 64);
            } else if held.len() < 6 {
                c.acquire(a, 64, || Ok::<_, ()>(a as u64)).unwrap();
                held.push(a);
            }
            let in_use = {
                let mut h = held.clone();
                h.sort();
                h.dedup();
                h.len()
            };
            assert!(c.len() <= c.capacity().max(in_use), "{} entries, {in_use} in use", c.len());
        }
    }
}
