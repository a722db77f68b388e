//! The memory monitor: one process-wide userfaultfd that reports, for the page ranges the
//! registration caches watch, every change of the virtual-to-physical mapping — `munmap`
//! (and `brk` shrinking, `mmap(MAP_FIXED)` over them), `madvise(MADV_DONTNEED/FREE/REMOVE)`
//! and `mremap` — to every cache ([`Subscriber`]).
//!
//! Why userfaultfd. A registration is stale exactly when the pages behind its virtual range
//! change; the kernel reports those changes on ranges registered with a userfaultfd
//! (`UFFD_FEATURE_EVENT_UNMAP | EVENT_REMOVE | EVENT_REMAP`), whoever makes them: the
//! application, glibc's `free` of an mmap'd chunk, its heap trimming (`brk`, `MADV_DONTNEED`),
//! another allocator. Hooking `munmap`/`madvise`/`brk` by symbol interposition (as UCX does)
//! misses direct system calls and allocators linked statically; libfabric's own monitors only
//! serve providers that use its util MR cache. Ranges are registered in write-protect mode
//! and never write-protected, so the application never takes a userfaultfd page fault: only
//! the events above are delivered.
//!
//! Small heap buffers are covered by the same mechanism: `free` of a chunk that stays mapped
//! leaves its pages (and so any registration of them) valid, and any trimming that does
//! release those pages is one of the reported events.
//!
//! Ordering invariant: the kernel suspends the thread that unmaps a watched range until the
//! monitor thread has *read* the event. The monitor thread raises `busy` before each read and
//! lowers it only after the events read are published in the ring; [`Subscriber::drain`]
//! waits for `busy` to fall before reading the ring. So once `munmap` has returned, the next
//! drain on any thread sees its range: a cache that drains before every lookup never hands
//! out a registration of unmapped memory. The monitor thread never allocates after it starts
//! (an allocation could trim a watched heap range and wait on itself).
//!
//! Who may have one. Root always. An unprivileged user may open `/dev/userfaultfd` where it
//! exists (kernel 6.1+) only if granted access (it is root's by default), and may call
//! `userfaultfd(2)` with `UFFD_USER_MODE_ONLY` (kernel 5.11+, allowed whatever
//! `vm.unprivileged_userfaultfd` says), which is all this monitor needs: it handles no page
//! faults, let alone the kernel's. The `userfaultfd` crate tries the device first and does
//! not fall back to the system call when the device refuses, so this module makes that call
//! itself then: the one place with `unsafe` here. Where neither works (a seccomp filter such
//! as Docker's default profile, kernels before 5.11 with the sysctl at 0, no
//! `CONFIG_USERFAULTFD` or no write-protect support), [`subscribe`] fails and the caller does
//! not cache (see `crate::rcache`).
//!
//! A child made by `fork` has no monitor thread and its mappings are not watched: it must not
//! keep using its parent's transport (libfabric's registrations do not survive `fork` either);
//! a transport it opens itself caches nothing.

use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use userfaultfd::{Event, EventBuffer, FeatureFlags, RegisterMode, Uffd, UffdBuilder};

use crate::rcache::MemoryEvents;

/// Invalidated ranges kept for subscribers; one that falls further behind invalidates all.
const RING: u64 = 4096;
/// Events read per `read(2)`.
const BATCH: usize = 64;

struct Shared {
    uffd: Uffd,
    page: usize,
    /// The process that created the userfaultfd. A child made by `fork` inherits the
    /// descriptor, but it still names the parent's address space (and the child has no
    /// monitor thread): the child must not use it.
    pid: u32,
    /// True while the monitor thread reads events and publishes them.
    busy: AtomicBool,
    /// Set if reading the userfaultfd failed: events may have been lost, nothing is trusted.
    failed: AtomicBool,
    /// Number of ranges ever published; range `s` is in slot `s % RING`.
    head: AtomicU64,
    ring: Box<[(AtomicUsize, AtomicUsize)]>,
    /// Page ranges registered with the userfaultfd, one per watching cache entry (a multiset).
    watches: Mutex<Vec<(usize, usize)>>,
}

static MONITOR: OnceLock<Result<&'static Shared, String>> = OnceLock::new();

const FEATURES: FeatureFlags =
    FeatureFlags::EVENT_UNMAP.union(FeatureFlags::EVENT_REMOVE).union(FeatureFlags::EVENT_REMAP);

/// A userfaultfd by `userfaultfd(2)` with `UFFD_USER_MODE_ONLY`, for a user who may not open
/// `/dev/userfaultfd`.
fn uffd_by_syscall() -> Result<Uffd, String> {
    let flags = libc::O_CLOEXEC | libc::O_NONBLOCK | userfaultfd_sys::UFFD_USER_MODE_ONLY as libc::c_int;
    // SAFETY: userfaultfd(2) reads nothing but its flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    if fd < 0 {
        return Err(format!("userfaultfd(2): {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just returned by the kernel and nothing else owns it; the Uffd closes
    // it when dropped, also on the error path below.
    let uffd = unsafe { Uffd::from_raw_fd(fd as libc::c_int) };
    let mut api =
        userfaultfd_sys::uffdio_api { api: userfaultfd_sys::UFFD_API, features: FEATURES.bits(), ioctls: 0 };
    // SAFETY: UFFDIO_API on a userfaultfd not yet set up, with a valid, initialised
    // `uffdio_api` that the kernel reads and writes and that outlives the call.
    let r = unsafe { libc::ioctl(uffd.as_raw_fd(), userfaultfd_sys::UFFDIO_API as _, &mut api) };
    if r != 0 {
        return Err(format!("UFFDIO_API: {}", std::io::Error::last_os_error()));
    }
    Ok(uffd)
}

fn start() -> Result<&'static Shared, String> {
    let uffd = match UffdBuilder::new()
        .close_on_exec(true)
        .non_blocking(true)
        .user_mode_only(true)
        .require_features(FEATURES)
        .create()
    {
        Ok(u) => u,
        Err(userfaultfd::Error::OpenDevUserfaultfd(dev)) => {
            uffd_by_syscall().map_err(|e| format!("/dev/userfaultfd: {dev}; {e}"))?
        }
        Err(e) => return Err(format!("userfaultfd: {e}")),
    };
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|p| usize::try_from(p).ok())
        .filter(|p| p.is_power_of_two())
        .ok_or("sysconf(PAGE_SIZE) failed")?;
    let ring = (0..RING).map(|_| (AtomicUsize::new(0), AtomicUsize::new(0))).collect();
    let shared: &'static Shared = Box::leak(Box::new(Shared {
        uffd,
        page,
        pid: std::process::id(),
        busy: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        head: AtomicU64::new(0),
        ring,
        watches: Mutex::new(Vec::new()),
    }));
    // Write-protect registration must work here, or every watch would fail later. The probe
    // page lies inside a live allocation, so nothing unmaps it before the monitor thread runs.
    let probe = vec![0u8; 2 * page];
    let at = (probe.as_ptr() as usize).next_multiple_of(page);
    shared
        .uffd
        .register_with_mode(at as *mut _, page, RegisterMode::WRITE_PROTECT)
        .map_err(|e| format!("userfaultfd write-protect registration: {e}"))?;
    let _ = shared.uffd.unregister(at as *mut _, page);
    drop(probe);
    std::thread::Builder::new()
        .name("weft-memmon".into())
        .spawn(move || run(shared))
        .map_err(|e| format!("monitor thread: {e}"))?;
    Ok(shared)
}

/// The monitor thread: wait for events, publish the ranges they name. Allocation-free.
fn run(s: &'static Shared) {
    let mut buf = EventBuffer::new(BATCH);
    loop {
        let mut fds = [PollFd::new(s.uffd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => {
                s.failed.store(true, Ordering::SeqCst);
                return;
            }
        }
        s.busy.store(true, Ordering::SeqCst);
        match s.uffd.read_events(&mut buf) {
            Ok(events) => {
                for ev in events {
                    match ev {
                        Ok(Event::Unmap { start, end }) | Ok(Event::Remove { start, end }) => {
                            publish(s, start as usize, end as usize)
                        }
                        Ok(Event::Remap { from, len, .. }) => publish(s, from as usize, from as usize + len),
                        // Not expected (nothing is write-protected): let the thread go on.
                        Ok(Event::Pagefault { addr, .. }) => {
                            let p = addr as usize & !(s.page - 1);
                            let _ = s.uffd.wake(p as *mut _, s.page);
                        }
                        Ok(Event::Fork { .. }) => {}
                        Err(_) => publish(s, 0, usize::MAX),
                    }
                }
            }
            Err(_) => s.failed.store(true, Ordering::SeqCst),
        }
        s.busy.store(false, Ordering::SeqCst);
        if s.failed.load(Ordering::SeqCst) {
            return;
        }
    }
}

fn publish(s: &Shared, start: usize, end: usize) {
    let h = s.head.load(Ordering::Relaxed);
    let slot = &s.ring[(h % RING) as usize];
    slot.0.store(start, Ordering::Relaxed);
    slot.1.store(end, Ordering::Relaxed);
    s.head.store(h + 1, Ordering::SeqCst);
}

/// One cache's view of the monitor: the ranges published since it last drained.
pub struct Subscriber {
    s: &'static Shared,
    seen: u64,
}

/// Start the process-wide monitor (once) and subscribe to it. The error says why the
/// userfaultfd is not available; it is the same on every call.
pub fn subscribe() -> Result<Subscriber, String> {
    let s = MONITOR.get_or_init(start).clone()?;
    if s.pid != std::process::id() {
        return Err("the userfaultfd monitor belongs to the parent of this forked process".into());
    }
    Ok(Subscriber { s, seen: s.head.load(Ordering::SeqCst) })
}

impl Subscriber {
    fn pages(&self, addr: usize, len: usize) -> (usize, usize) {
        let p = self.s.page;
        (addr & !(p - 1), addr.saturating_add(len).next_multiple_of(p))
    }
}

impl MemoryEvents for Subscriber {
    fn watch(&mut self, addr: usize, len: usize) -> bool {
        if self.s.failed.load(Ordering::SeqCst) || self.s.pid != std::process::id() {
            return false;
        }
        let (a, b) = self.pages(addr, len);
        let mut w = self.s.watches.lock().unwrap_or_else(|e| e.into_inner());
        // Fails for mappings userfaultfd cannot watch (file-backed other than shmem, hugetlb
        // at a smaller alignment, holes) and for ranges another userfaultfd already holds.
        if self.s.uffd.register_with_mode(a as *mut _, b - a, RegisterMode::WRITE_PROTECT).is_err() {
            return false;
        }
        w.push((a, b));
        true
    }

    fn unwatch(&mut self, addr: usize, len: usize) {
        let r = self.pages(addr, len);
        let mut w = self.s.watches.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = w.iter().position(|x| *x == r) else { return };
        w.swap_remove(i);
        // Another watch sharing a page keeps the whole range registered.
        if w.iter().all(|&(a, b)| b <= r.0 || r.1 <= a) {
            // Fails harmlessly if the range was unmapped meanwhile.
            let _ = self.s.uffd.unregister(r.0 as *mut _, r.1 - r.0);
        }
    }

    fn drain(&mut self, sink: &mut dyn FnMut(usize, usize)) -> bool {
        let s = self.s;
        let mut spins = 0u32;
        while s.busy.load(Ordering::SeqCst) {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else if s.pid != std::process::id() {
                // Forked while the monitor was busy: no thread will ever clear it here.
                return false;
            } else {
                std::thread::yield_now();
            }
        }
        if s.failed.load(Ordering::SeqCst) {
            return false;
        }
        let h = s.head.load(Ordering::SeqCst);
        if h == self.seen {
            return true;
        }
        let from = self.seen;
        self.seen = h;
        if h - from >= RING {
            return false;
        }
        let mut got = [(0usize, 0usize); 64];
        let mut n = 0;
        for k in from..h {
            let slot = &s.ring[(k % RING) as usize];
            got[n] = (slot.0.load(Ordering::Relaxed), slot.1.load(Ordering::Relaxed));
            n += 1;
            if n == got.len() || k + 1 == h {
                // Slots read may have been overwritten if the writer lapped them meanwhile.
                if s.head.load(Ordering::SeqCst) - from >= RING {
                    return false;
                }
                for &(a, b) in &got[..n] {
                    sink(a, b);
                }
                n = 0;
            }
        }
        true
    }
}
