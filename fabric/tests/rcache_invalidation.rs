//! The registration cache against the real kernel: the userfaultfd monitor
//! (`weft_fabric::monitor`) reports `munmap`, `mmap(MAP_FIXED)` over a range, `madvise`,
//! `mremap` and glibc's `free` of an mmap'd buffer, and the cache never serves an entry whose
//! memory changed. Values are plain numbers: what is checked is what the cache hands out.
//!
//! Needs userfaultfd (root, or read-write access to `/dev/userfaultfd`); where it is not
//! permitted each test says so on stderr and checks that the cache keeps nothing instead.

#[allow(unused_imports)]
mod common;

use std::num::NonZeroUsize;
use std::ptr::NonNull;

use common::{map_anon, unmap};
use nix::sys::mman::{madvise, mremap, MRemapFlags, MapFlags, MmapAdvise, ProtFlags};
use weft_fabric::monitor;
use weft_fabric::rcache::{Invalidation, RCache};

const LEN: usize = 1 << 20;

/// The tests of this file run one at a time: between a `munmap` and the `mmap` at the same
/// address, another test's `mmap` could take the hole.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A cache invalidated by the monitor, or `None` (with the reason printed) where userfaultfd
/// is not permitted.
fn cache() -> Option<RCache<u64>> {
    match monitor::subscribe() {
        Ok(s) => Some(RCache::with_invalidation(64, Invalidation::Monitor(Box::new(s)))),
        Err(e) => {
            eprintln!("userfaultfd not available ({e}): checking the no-cache fallback only");
            let mut c = RCache::with_invalidation(64, Invalidation::Unavailable);
            let (id, _) = c.acquire(0x1000, 8, || Ok::<_, ()>(1)).unwrap();
            c.release(id);
            assert!(c.is_empty());
            None
        }
    }
}

fn map(at: Option<usize>, len: usize, fill: u8) -> usize {
    map_anon(at, len, false, |_| fill)
}

/// Acquire and release `(a, len)`; the registration number `n` is the value on a miss.
/// Returns the value served.
fn use_once(c: &mut RCache<u64>, a: usize, len: usize, n: u64) -> u64 {
    let (id, v) = c.acquire(a, len, || Ok::<_, ()>(n)).unwrap();
    let v = *v;
    c.release(id);
    v
}

#[test]
fn unmapped_and_mapped_again_at_the_same_address_is_not_served() {
    let _g = serial();
    let Some(mut c) = cache() else { return };
    let a = map(None, LEN, 1);
    // The user buffer starts inside a page and ends inside another, as a malloc'd one does.
    let (buf, len) = (a + 16, LEN - 4096);
    assert_eq!(use_once(&mut c, buf, len, 1), 1);
    assert_eq!(use_once(&mut c, buf, len, 2), 1, "unchanged memory: served from the cache");
    unmap(a, LEN);
    map(Some(a), LEN, 2);
    assert_eq!(use_once(&mut c, buf, len, 3), 3, "a registration of the unmapped memory was served");
    assert_eq!(c.stats().invalidations, 1);
    unmap(a, LEN);
}

#[test]
fn madvise_dontneed_and_mremap_invalidate() {
    let _g = serial();
    let Some(mut c) = cache() else { return };
    let a = map(None, 4 * LEN, 1);
    let ranges = [(a, LEN), (a + LEN, LEN), (a + 2 * LEN, LEN), (a + 3 * LEN, LEN)];
    for (i, &(r, l)) in ranges.iter().enumerate() {
        use_once(&mut c, r, l, i as u64);
    }
    // Discard the pages of one page inside the second range: new zero pages on next touch.
    // SAFETY: the range is this test's private anonymous mapping.
    unsafe { madvise(NonNull::new((a + LEN + 8192) as *mut _).unwrap(), 4096, MmapAdvise::MADV_DONTNEED) }
        .unwrap();
    assert_eq!(use_once(&mut c, ranges[1].0, LEN, 10), 10, "DONTNEED range served stale");
    assert_eq!(use_once(&mut c, ranges[0].0, LEN, 11), 0, "an untouched neighbour stays cached");
    // Move the third range's pages elsewhere and map new memory in their place.
    let dest = map(None, LEN, 0);
    // SAFETY: both ranges are this test's mappings; MREMAP_FIXED replaces `dest`.
    let moved = unsafe {
        mremap(
            NonNull::new(ranges[2].0 as *mut _).unwrap(),
            LEN,
            LEN,
            MRemapFlags::MREMAP_MAYMOVE | MRemapFlags::MREMAP_FIXED,
            Some(NonNull::new(dest as *mut _).unwrap()),
        )
    }
    .unwrap();
    assert_eq!(moved.as_ptr() as usize, dest);
    map(Some(ranges[2].0), LEN, 3);
    assert_eq!(use_once(&mut c, ranges[2].0, LEN, 12), 12, "remapped range served stale");
    assert_eq!(use_once(&mut c, ranges[3].0, LEN, 13), 3, "an untouched neighbour stays cached");
    unmap(a, 4 * LEN);
    unmap(dest, LEN);
}

#[test]
fn free_of_a_large_buffer_invalidates() {
    let _g = serial();
    let Some(mut c) = cache() else { return };
    // 40 MiB: above glibc's mmap threshold even after it has grown to its 32 MiB maximum, so
    // the allocation is a mapping of its own and `free` unmaps it.
    let v = vec![7u8; 40 << 20];
    let (a, l) = (v.as_ptr() as usize, v.len());
    use_once(&mut c, a, l, 1);
    drop(v);
    // glibc may place the next buffer elsewhere (its mmap threshold grows after such a free);
    // wherever it is, nothing of the freed one may be served, and the free was seen.
    let w = vec![8u8; 40 << 20];
    let served = use_once(&mut c, w.as_ptr() as usize, w.len(), 2);
    assert_eq!(served, 2, "a registration of the freed buffer was served");
    assert!(c.stats().invalidations >= 1);
}

#[test]
fn file_backed_mappings_are_not_kept() {
    // userfaultfd cannot watch a private mapping of a regular file: used, never kept.
    let _g = serial();
    let Some(mut c) = cache() else { return };
    let f = std::fs::File::open(std::env::current_exe().unwrap()).unwrap();
    // SAFETY: a read-only private mapping of our own executable.
    let p = unsafe {
        nix::sys::mman::mmap(
            None,
            NonZeroUsize::new(8192).unwrap(),
            ProtFlags::PROT_READ,
            MapFlags::MAP_PRIVATE,
            &f,
            0,
        )
    }
    .unwrap();
    let a = p.as_ptr() as usize;
    use_once(&mut c, a, 8192, 1);
    assert!(c.is_empty(), "an unwatchable range was kept");
    unmap(a, 8192);
}

#[test]
fn concurrent_unmaps_from_other_threads() {
    // Four threads unmap and map again their own ranges while this thread keeps using a fifth
    // range; when they are done, none of their old registrations is served, and the fifth
    // was served from the cache throughout.
    let _g = serial();
    let Some(mut c) = cache() else { return };
    let regions: Vec<usize> = (0..5).map(|i| map(None, LEN, i as u8)).collect();
    for (i, &r) in regions.iter().enumerate() {
        use_once(&mut c, r, LEN, i as u64);
    }
    let threads: Vec<_> = regions[..4]
        .iter()
        .map(|&r| {
            std::thread::spawn(move || {
                // MAP_FIXED over the old mapping (an unmap and a map in one call): with a
                // munmap first, another thread's mmap could take the hole.
                for k in 0..50u8 {
                    map_anon(Some(r), LEN, true, |_| k);
                }
            })
        })
        .collect();
    let mut uses = 0u64;
    while threads.iter().any(|h| !h.is_finished()) || uses < 100 {
        assert_eq!(use_once(&mut c, regions[4], LEN, 99), 4);
        uses += 1;
    }
    for h in threads {
        h.join().unwrap();
    }
    for (i, &r) in regions[..4].iter().enumerate() {
        assert_eq!(use_once(&mut c, r, LEN, 100 + i as u64), 100 + i as u64, "region {i} served stale");
    }
    for r in regions {
        unmap(r, LEN);
    }
}

/// True if the mapping containing `addr` is registered with a userfaultfd in write-protect
/// mode (`uw` among its `VmFlags` in `/proc/self/smaps`).
fn watched_by_uffd(addr: usize) -> bool {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.split_whitespace().any(|f| f == "uw");
            }
        }
    }
    panic!("{addr:#x} is not mapped")
}

#[test]
fn watches_end_with_their_entries() {
    // A cached entry's pages are registered with the userfaultfd; evicting it or dropping the
    // cache unregisters them (a page shared with a live entry stays registered).
    let _g = serial();
    let Some(mut c) = cache() else { return };
    let a = map(None, 3 * 4096, 0);
    assert!(!watched_by_uffd(a));
    use_once(&mut c, a + 100, 3000, 1); // page 0
    use_once(&mut c, a + 4096 + 5, 4096, 2); // pages 1 and 2
    assert!(watched_by_uffd(a) && watched_by_uffd(a + 4096) && watched_by_uffd(a + 8192));
    assert_eq!(c.invalidate(a + 5000, a + 5001), 1);
    assert!(watched_by_uffd(a), "page 0 still has its entry");
    assert!(!watched_by_uffd(a + 8192), "pages 1 and 2 were unregistered with their entry");
    drop(c);
    assert!(!watched_by_uffd(a), "dropping the cache unregisters");
    unmap(a, 3 * 4096);
}
