//! A bounded registration cache with invalidation: memory registrations keyed by
//! `(address, length)`, reference counted while in use, least-recently-used idle entries
//! evicted beyond the capacity, and dropped once the memory under them is unmapped.
//!
//! Generic over the cached value so the policy is unit-tested without libfabric; the
//! transport stores [`crate::mr::Mr`]s. Invariants: at most `capacity` entries, except while
//! more than `capacity` are in use at once (an entry in use is never evicted); with capacity 0
//! nothing is kept once released.
//!
//! Invalidation. A registration stands for the physical pages behind its range when it was
//! made. Once those pages are unmapped, discarded or moved (`munmap`, `free` of an mmap'd
//! buffer, `madvise(MADV_DONTNEED)`, `mremap`), a new mapping at the same address is other
//! memory, and a pinning provider (verbs, efa, cxi) would still transfer the old pages:
//! wrong data, silently. A [`MemoryEvents`] source reports such ranges (the process-wide
//! userfaultfd monitor, `crate::monitor`); every lookup first applies what it reported, so
//! an entry overlapping an unmapped range is never served again. An invalidated entry still
//! in use (memory unmapped under a transfer, which the caller must not do) leaves the lookup
//! table at once and is dropped at its last release. The modes are [`Invalidation`]'s:
//! with a monitor, an entry whose range it cannot watch is not kept once released; without
//! one (userfaultfd not permitted) nothing is kept once released, so every use registers
//! afresh; `Off` keeps entries regardless of unmaps (the behaviour for tests, and safe only
//! where the provider reads through the virtual address at transfer time, as tcp and shm do).

use std::collections::HashMap;

/// A source of "this address range no longer has the pages it had" reports.
pub trait MemoryEvents {
    /// Start reporting changes to `addr..addr + len`. False if the range cannot be watched;
    /// the entry is then not kept once released.
    fn watch(&mut self, addr: usize, len: usize) -> bool;
    /// Stop watching a range passed to a successful [`MemoryEvents::watch`].
    fn unwatch(&mut self, addr: usize, len: usize);
    /// Pass every range `[start, end)` reported since the last call to `sink`. Returns false
    /// if reports may have been lost: then every entry must be treated as stale.
    fn drain(&mut self, sink: &mut dyn FnMut(usize, usize)) -> bool;
}

/// How the cache learns that memory was unmapped.
pub enum Invalidation {
    /// It does not: entries are kept regardless of unmaps.
    Off,
    /// Entries are kept idle only while this source watches them.
    Monitor(Box<dyn MemoryEvents + Send>),
    /// No source could be had: nothing is kept once released.
    Unavailable,
}

impl Invalidation {
    /// `off`, `monitor` or `unavailable`.
    pub fn name(&self) -> &'static str {
        match self {
            Invalidation::Off => "off",
            Invalidation::Monitor(_) => "monitor",
            Invalidation::Unavailable => "unavailable",
        }
    }
}

struct Entry<V> {
    val: V,
    addr: usize,
    len: usize,
    refs: u32,
    last_use: u64,
    /// Still reachable by lookup (false once invalidated).
    live: bool,
    /// Registered with the [`MemoryEvents`] source.
    watched: bool,
}

/// One registration handed out by [`RCache::acquire`], to pass back to [`RCache::release`].
/// Two handles for the same `(address, length)` differ if the memory was unmapped between
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegId(u64);

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RCacheStats {
    /// Acquisitions served by an existing entry.
    pub hits: u64,
    /// Acquisitions that registered.
    pub misses: u64,
    /// Entries dropped to respect the capacity.
    pub evictions: u64,
    /// Entries withdrawn because their memory was unmapped.
    pub invalidations: u64,
}

/// The cache.
pub struct RCache<V> {
    cap: usize,
    tick: u64,
    next_id: u64,
    /// Live entries by `(address, length)`.
    map: HashMap<(usize, usize), u64>,
    /// Every entry holding a registration: live ones and invalidated ones still in use.
    entries: HashMap<u64, Entry<V>>,
    inval: Invalidation,
    /// Ranges drained from the monitor, applied right after (kept to reuse its allocation).
    pending: Vec<(usize, usize)>,
    stats: RCacheStats,
}

impl<V> RCache<V> {
    /// An empty cache keeping at most `capacity` entries, without invalidation.
    pub fn new(capacity: usize) -> RCache<V> {
        RCache::with_invalidation(capacity, Invalidation::Off)
    }

    /// An empty cache keeping at most `capacity` entries, invalidated as `inval` says.
    pub fn with_invalidation(capacity: usize, inval: Invalidation) -> RCache<V> {
        RCache {
            cap: capacity,
            tick: 0,
            next_id: 1,
            map: HashMap::new(),
            entries: HashMap::new(),
            inval,
            pending: Vec::new(),
            stats: RCacheStats::default(),
        }
    }

    /// Take a reference to the entry for `(addr, len)`, creating it with `reg` on a miss.
    /// Ranges the monitor reported unmapped are invalidated first.
    pub fn acquire<E>(
        &mut self,
        addr: usize,
        len: usize,
        reg: impl FnOnce() -> Result<V, E>,
    ) -> Result<(RegId, &V), E> {
        self.sync();
        self.tick += 1;
        let tick = self.tick;
        let id = if let Some(&id) = self.map.get(&(addr, len)) {
            let e = self.entries.get_mut(&id).expect("a mapped entry exists");
            e.refs += 1;
            e.last_use = tick;
            self.stats.hits += 1;
            id
        } else {
            // Watched before it is registered: no change between the two goes unreported.
            let watched = match &mut self.inval {
                Invalidation::Monitor(m) => m.watch(addr, len),
                _ => false,
            };
            let val = match reg() {
                Ok(v) => v,
                Err(e) => {
                    if let (true, Invalidation::Monitor(m)) = (watched, &mut self.inval) {
                        m.unwatch(addr, len);
                    }
                    return Err(e);
                }
            };
            self.stats.misses += 1;
            let id = self.next_id;
            self.next_id += 1;
            self.entries.insert(id, Entry { val, addr, len, refs: 1, last_use: tick, live: true, watched });
            self.map.insert((addr, len), id);
            self.trim();
            id
        };
        Ok((RegId(id), &self.entries[&id].val))
    }

    /// Drop a reference taken by [`RCache::acquire`]. Returns the remaining reference count,
    /// or `None` if there is no such entry (a double release is ignored).
    pub fn release(&mut self, id: RegId) -> Option<u32> {
        let keep_unwatched = matches!(self.inval, Invalidation::Off);
        let e = self.entries.get_mut(&id.0)?;
        if e.refs == 0 {
            return Some(0);
        }
        e.refs -= 1;
        let left = e.refs;
        if left == 0 {
            if !e.live || !(e.watched || keep_unwatched) {
                self.remove(id.0);
            } else {
                self.trim();
            }
        }
        Some(left)
    }

    /// Withdraw every entry overlapping `[start, end)`: idle ones are dropped, those in use
    /// are dropped at their last release. Returns how many were withdrawn.
    pub fn invalidate(&mut self, start: usize, end: usize) -> usize {
        let hit: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.live && e.addr < end && start < e.addr.saturating_add(e.len))
            .map(|(id, _)| *id)
            .collect();
        for &id in &hit {
            let e = self.entries.get_mut(&id).expect("listed");
            e.live = false;
            let (key, idle) = ((e.addr, e.len), e.refs == 0);
            self.map.remove(&key);
            self.stats.invalidations += 1;
            if idle {
                self.remove(id);
            }
        }
        hit.len()
    }

    /// The live entry for `(addr, len)`, if cached.
    pub fn get(&self, addr: usize, len: usize) -> Option<&V> {
        self.map.get(&(addr, len)).map(|id| &self.entries[id].val)
    }

    /// References held on the live entry for `(addr, len)` (0 if idle or absent).
    pub fn refs(&self, addr: usize, len: usize) -> u32 {
        self.map.get(&(addr, len)).map_or(0, |id| self.entries[id].refs)
    }

    /// Number of entries holding a registration (in use, idle, or invalidated but in use).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// How invalidation works for this cache.
    pub fn invalidation(&self) -> &Invalidation {
        &self.inval
    }

    /// Counters.
    pub fn stats(&self) -> RCacheStats {
        self.stats
    }

    /// Apply the ranges the monitor reported since the last call.
    fn sync(&mut self) {
        let Invalidation::Monitor(m) = &mut self.inval else { return };
        let pending = &mut self.pending;
        let complete = m.drain(&mut |a, b| pending.push((a, b)));
        let mut ranges = std::mem::take(&mut self.pending);
        if !complete {
            ranges.clear();
            ranges.push((0, usize::MAX));
        }
        for &(a, b) in &ranges {
            self.invalidate(a, b);
        }
        ranges.clear();
        self.pending = ranges;
    }

    /// Drop an entry's registration (and its watch).
    fn remove(&mut self, id: u64) {
        let Some(e) = self.entries.remove(&id) else { return };
        if self.map.get(&(e.addr, e.len)) == Some(&id) {
            self.map.remove(&(e.addr, e.len));
        }
        if let (true, Invalidation::Monitor(m)) = (e.watched, &mut self.inval) {
            m.unwatch(e.addr, e.len);
        }
    }

    /// Evict least-recently-used idle entries while over capacity. Eviction is a linear scan:
    /// it only runs on a registration miss or a last release, never on the message path.
    fn trim(&mut self) {
        while self.entries.len() > self.cap {
            let victim = self
                .entries
                .iter()
                .filter(|(_, e)| e.refs == 0)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(k, _)| *k);
            let Some(id) = victim else { return };
            self.remove(id);
            self.stats.evictions += 1;
        }
    }
}

impl<V> Drop for RCache<V> {
    /// Unwatch what is still watched: the monitor outlives the cache.
    fn drop(&mut self) {
        if let Invalidation::Monitor(m) = &mut self.inval {
            for e in self.entries.values().filter(|e| e.watched) {
                m.unwatch(e.addr, e.len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;
    use std::sync::{Arc, Mutex};

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

    fn id<V>(c: &mut RCache<V>, a: usize, l: usize, v: impl FnOnce() -> Result<V, ()>) -> RegId {
        c.acquire(a, l, v).unwrap().0
    }

    #[test]
    fn hit_and_miss() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(4);
        let x = id(&mut c, 0x1000, 10, ok(&d));
        assert_eq!(id(&mut c, 0x1000, 10, ok(&d)), x);
        let y = id(&mut c, 0x1000, 11, ok(&d));
        assert_ne!(x, y);
        assert_eq!(c.stats(), RCacheStats { hits: 1, misses: 2, evictions: 0, invalidations: 0 });
        assert_eq!(c.refs(0x1000, 10), 2);
        assert_eq!(c.release(x), Some(1));
        assert_eq!(c.release(x), Some(0));
        assert_eq!(c.release(x), Some(0), "double release ignored");
        assert_eq!(c.release(RegId(999)), None);
        assert_eq!(d.get(), 0, "idle entries within capacity are kept");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn lru_eviction_of_idle_entries_only() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(2);
        for a in [1usize, 2] {
            let i = id(&mut c, a, 8, ok(&d));
            c.release(i);
        }
        let i = id(&mut c, 1, 8, ok(&d)); // 1 is now more recent than 2, and in use
        c.release(i);
        id(&mut c, 3, 8, ok(&d)); // over capacity: evicts 2 (LRU idle)
        assert!(c.get(2, 8).is_none());
        assert!(c.get(1, 8).is_some() && c.get(3, 8).is_some());
        assert_eq!(c.stats().evictions, 1);
        assert_eq!(d.get(), 1);
    }

    #[test]
    fn entries_in_use_are_never_evicted() {
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(2);
        let ids: Vec<RegId> = (1..=5usize).map(|a| id(&mut c, a, 8, ok(&d))).collect();
        assert_eq!(c.len(), 5, "all in use: over capacity temporarily");
        assert_eq!(d.get(), 0);
        for i in ids {
            c.release(i);
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
        let i = id(&mut c, 7, 8, ok(&d));
        assert_eq!(c.len(), 1);
        c.release(i);
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
        let mut held: Vec<(usize, RegId)> = Vec::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = (x % 32) as usize;
            if x & (1 << 40) != 0 && !held.is_empty() {
                let i = (x >> 8) as usize % held.len();
                let (_, r) = held.swap_remove(i);
                c.release(r);
            } else if held.len() < 6 {
                let r = id(&mut c, a, 64, || Ok(a as u64));
                held.push((a, r));
            }
            let in_use = {
                let mut h: Vec<usize> = held.iter().map(|x| x.0).collect();
                h.sort();
                h.dedup();
                h.len()
            };
            assert!(c.len() <= c.capacity().max(in_use), "{} entries, {in_use} in use", c.len());
        }
    }

    /// A scripted event source: the test (or other threads) queue ranges; `watchable` says
    /// which addresses can be watched; watched ranges are recorded.
    #[derive(Clone, Default)]
    struct Script(Arc<Mutex<ScriptState>>);
    #[derive(Default)]
    struct ScriptState {
        queued: Vec<(usize, usize)>,
        lost: bool,
        unwatchable: Vec<usize>,
        watched: Vec<(usize, usize)>,
    }
    impl Script {
        fn event(&self, a: usize, b: usize) {
            self.0.lock().unwrap().queued.push((a, b));
        }
        fn watched(&self) -> Vec<(usize, usize)> {
            self.0.lock().unwrap().watched.clone()
        }
    }
    impl MemoryEvents for Script {
        fn watch(&mut self, addr: usize, len: usize) -> bool {
            let mut s = self.0.lock().unwrap();
            if s.unwatchable.contains(&addr) {
                return false;
            }
            s.watched.push((addr, len));
            true
        }
        fn unwatch(&mut self, addr: usize, len: usize) {
            let mut s = self.0.lock().unwrap();
            let i = s.watched.iter().position(|w| *w == (addr, len)).expect("unwatch of a watched range");
            s.watched.swap_remove(i);
        }
        fn drain(&mut self, sink: &mut dyn FnMut(usize, usize)) -> bool {
            let mut s = self.0.lock().unwrap();
            for (a, b) in s.queued.drain(..) {
                sink(a, b);
            }
            !std::mem::take(&mut s.lost)
        }
    }

    fn monitored<V>(cap: usize) -> (RCache<V>, Script) {
        let s = Script::default();
        (RCache::with_invalidation(cap, Invalidation::Monitor(Box::new(s.clone()))), s)
    }

    #[test]
    fn unmapped_then_mapped_again_is_not_served() {
        let d = Rc::new(Cell::new(0));
        let (mut c, s) = monitored(8);
        let first = id(&mut c, 0x10_0000, 1 << 20, ok(&d));
        c.release(first);
        assert_eq!(id(&mut c, 0x10_0000, 1 << 20, ok(&d)), first, "idle and unchanged: a hit");
        c.release(first);
        // munmap + mmap at the same address: the monitor reports the old range.
        s.event(0x10_0000, 0x20_0000);
        let second = id(&mut c, 0x10_0000, 1 << 20, ok(&d));
        assert_ne!(second, first, "a stale registration was served");
        assert_eq!(d.get(), 1, "the stale registration was closed");
        assert_eq!(c.stats(), RCacheStats { hits: 1, misses: 2, evictions: 0, invalidations: 1 });
        assert_eq!(c.release(first), None, "the old handle is gone");
        assert_eq!(c.release(second), Some(0));
        assert_eq!(s.watched(), vec![(0x10_0000, 1 << 20)], "only the live entry is watched");
    }

    #[test]
    fn without_invalidation_the_stale_entry_is_served() {
        // The failure mode the monitor prevents: Off ignores unmaps.
        let d = Rc::new(Cell::new(0));
        let mut c = RCache::new(8);
        let first = id(&mut c, 0x10_0000, 4096, ok(&d));
        c.release(first);
        assert_eq!(c.invalidation().name(), "off");
        assert_eq!(id(&mut c, 0x10_0000, 4096, ok(&d)), first);
    }

    #[test]
    fn overlapping_ranges() {
        let d = Rc::new(Cell::new(0));
        let (mut c, s) = monitored(16);
        // [0x1000, 0x3000), [0x2800, 0x2900), [0x3000, 0x4000), [0x0, 0x1000), [0x1800, +1)
        for (a, l) in [(0x1000, 0x2000), (0x2800, 0x100), (0x3000, 0x1000), (0x0, 0x1000), (0x1800, 1)] {
            let r = id(&mut c, a, l, ok(&d));
            c.release(r);
        }
        // Unmapping [0x2000, 0x3000) touches the first two only: ends are exclusive.
        s.event(0x2000, 0x3000);
        let r = id(&mut c, 0x5000, 8, ok(&d));
        c.release(r);
        assert!(c.get(0x1000, 0x2000).is_none() && c.get(0x2800, 0x100).is_none());
        assert!(c.get(0x3000, 0x1000).is_some() && c.get(0x0, 0x1000).is_some());
        assert!(c.get(0x1800, 1).is_some(), "inside the first range, outside the unmapped part");
        assert_eq!(c.stats().invalidations, 2);
        assert_eq!(d.get(), 2);
        // A one-byte event inside a range withdraws it.
        s.event(0x1800, 0x1801);
        let r = id(&mut c, 0x5000, 8, ok(&d));
        c.release(r);
        assert!(c.get(0x1800, 1).is_none());
        // Same address, different lengths: both go.
        for l in [8, 16] {
            let r = id(&mut c, 0x9000, l, ok(&d));
            c.release(r);
        }
        assert_eq!(c.invalidate(0x9000, 0x9001), 2);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn invalidated_in_use_entry_lives_until_released() {
        let d = Rc::new(Cell::new(0));
        let (mut c, s) = monitored(8);
        let old = id(&mut c, 0x4000, 100, ok(&d));
        s.event(0x4000, 0x5000);
        // The next lookup applies the event: a new registration beside the old one in use.
        let new = id(&mut c, 0x4000, 100, ok(&d));
        assert_ne!(old, new);
        assert_eq!(c.len(), 2);
        assert_eq!(d.get(), 0, "still in use: not closed under the transfer");
        assert_eq!(c.refs(0x4000, 100), 1, "lookups see only the new entry");
        assert_eq!(c.release(old), Some(0));
        assert_eq!(d.get(), 1, "closed at its last release");
        assert_eq!(c.len(), 1);
        assert_eq!(c.release(new), Some(0));
        assert_eq!(c.len(), 1, "the new one is kept idle");
    }

    #[test]
    fn lost_events_invalidate_everything() {
        let d = Rc::new(Cell::new(0));
        let (mut c, s) = monitored(8);
        for a in 1..=4usize {
            let r = id(&mut c, a << 12, 8, ok(&d));
            c.release(r);
        }
        s.0.lock().unwrap().lost = true;
        let r = id(&mut c, 1 << 12, 8, ok(&d));
        assert_eq!(c.stats().misses, 5, "nothing survives lost events");
        assert_eq!(d.get(), 4);
        c.release(r);
    }

    #[test]
    fn unwatchable_ranges_are_not_kept() {
        let d = Rc::new(Cell::new(0));
        let (mut c, s) = monitored(8);
        s.0.lock().unwrap().unwatchable.push(0x7000);
        let a = id(&mut c, 0x7000, 8, ok(&d));
        assert_eq!(id(&mut c, 0x7000, 8, ok(&d)), a, "shared while in use");
        c.release(a);
        c.release(a);
        assert!(c.is_empty(), "dropped at the last release");
        assert_eq!(d.get(), 1);
        // And without any monitor nothing is kept.
        let mut u = RCache::with_invalidation(8, Invalidation::Unavailable);
        let r = id(&mut u, 0x8000, 8, ok(&d));
        u.release(r);
        assert!(u.is_empty());
        assert_eq!(d.get(), 2);
    }

    #[test]
    fn eviction_and_failure_unwatch() {
        let (mut c, s) = monitored::<u32>(1);
        let a = id(&mut c, 0x1000, 8, || Ok(1));
        c.release(a);
        let b = id(&mut c, 0x2000, 8, || Ok(2));
        assert_eq!(s.watched(), vec![(0x2000, 8)], "the evicted entry was unwatched");
        assert!(c.acquire(0x3000, 8, || Err(())).is_err());
        assert_eq!(s.watched(), vec![(0x2000, 8)], "a failed registration was unwatched");
        c.release(b);
        drop(c);
        assert!(s.watched().is_empty(), "dropping the cache unwatches its entries");
    }

    #[test]
    fn concurrent_events() {
        // Four threads report unmaps of their own ranges while the owner acquires and
        // releases; afterwards every reported range is gone and the others are intact.
        let (mut c, s) = monitored::<u64>(1024);
        let base = |t: usize, k: usize| (t * 1000 + k + 1) << 12;
        for t in 0..8 {
            for k in 0..100 {
                let r = id(&mut c, base(t, k), 4096, || Ok(0));
                c.release(r);
            }
        }
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for k in 0..100 {
                        s.event(base(t, k), base(t, k) + 4096);
                    }
                })
            })
            .collect();
        let mut n = 0u64;
        while threads.iter().any(|h| !h.is_finished()) || n < 1000 {
            let (t, k) = (4 + (n as usize % 4), n as usize % 100);
            let r = id(&mut c, base(t, k), 4096, || Ok(n));
            c.release(r);
            n += 1;
        }
        for h in threads {
            h.join().unwrap();
        }
        let r = id(&mut c, 1, 1, || Ok(0));
        c.release(r);
        for t in 0..8 {
            for k in 0..100 {
                assert_eq!(c.get(base(t, k), 4096).is_some(), t >= 4, "thread {t} range {k}");
            }
        }
        assert_eq!(c.stats().invalidations, 400);
    }
}
