//! The launcher's failure board: a shared-memory page through which `weft-run` tells every
//! rank of a death directly, before its PMIx termination event.
//!
//! The PMIx event travels launcher → PMIx server thread → one socket per client → each
//! client's PMIx progress thread → the event handler, a wake-up per survivor; with more ranks
//! than cores those wake-ups queue behind busy ranks. The board skips them: `weft-run`
//! writes the death into a page every rank maps, and each rank's progress engine checks its
//! own flag in the page at every progress call (one relaxed load, as for the PMIx event flag).
//! The PMIx event still follows (spawned processes and other PMIx clients have no board), but
//! only once the ranks have read the board or a bound has passed: sent at once, its wake-ups
//! (the server thread, then every client's thread, tens of µs each) take the cores the
//! survivors need to reach their next progress call, which at 16 ranks on 2 cores was most
//! of the detection time.
//!
//! Layout (a memfd of `n` ranks, inherited by the ranks; its descriptor number is in
//! `WEFT_RUN_BOARD`): a header (`MAGIC`, `n`, the count of ranks yet to read the last
//! deaths, a futex word), then per rank the launcher's observation time of its last death
//! (`u64`, CLOCK_MONOTONIC ns), its death count (`u32`) and its wake flag (`bool`). The
//! launcher writes the times, then the counts (release), then the number of readers it
//! waits for, then sets the flag of every rank not among the dead (release); a rank clears
//! its flag, then compares the counts (acquire) with those it has seen: a death is reported
//! once, and one written while it scans raises the flag again. A rank that cleared its flag
//! takes one off the readers count and the last one wakes the launcher (`FUTEX_WAKE` without
//! the private flag: the page is shared between processes); a syscall on the failure path
//! only, once per rank and death. All the deaths of one call are written before any flag, so
//! a node's ranks are reported together.
//! A rank takes the counts it finds at start as its baseline, so a rank respawned with the
//! same number (global restart) is not taken for dead by a new epoch.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::mman::{mmap, MapFlags, ProtFlags};

use crate::RuntimeError;

/// The environment variable that names the board's inherited descriptor.
pub const ENV_BOARD: &str = "WEFT_RUN_BOARD";

const MAGIC: u64 = u64::from_le_bytes(*b"WEFTBRD1");
const HEADER: usize = 64;

/// A mapped board of `n` ranks.
struct Mapping {
    base: NonNull<u8>,
    n: usize,
}

// SAFETY: the mapping is only accessed through atomics (and the immutable header written
// before any rank maps it); it is never unmapped while a `Mapping` exists.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

const fn board_len(n: usize) -> usize {
    HEADER + n * (8 + 4 + 1)
}

impl Mapping {
    /// Map `len` bytes of `fd` shared, read-write.
    fn map(fd: &OwnedFd, n: usize) -> std::io::Result<Mapping> {
        let len = std::num::NonZeroUsize::new(board_len(n)).expect("non-zero");
        // SAFETY: a fresh shared mapping of a memfd at least `len` long (checked or set by
        // the caller); nothing else in this process aliases it as non-atomic memory.
        let p = unsafe {
            mmap(None, len, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, MapFlags::MAP_SHARED, fd, 0)
        }?;
        Ok(Mapping { base: p.cast(), n })
    }

    fn at<T>(&self, off: usize) -> &T {
        debug_assert!(off + std::mem::size_of::<T>() <= board_len(self.n));
        debug_assert_eq!(off % std::mem::align_of::<T>(), 0);
        // SAFETY: `off` lies inside the mapping (layout above) and is aligned for `T`, an
        // atomic or the header word; the mapping lives as long as `self`.
        unsafe { &*(self.base.as_ptr().add(off) as *const T) }
    }
    fn magic(&self) -> &AtomicU64 {
        self.at(0)
    }
    fn ranks(&self) -> &AtomicU64 {
        self.at(8)
    }
    /// Ranks that have yet to read the last deaths (the launcher's futex word).
    fn unread(&self) -> &AtomicU32 {
        self.at(16)
    }
    fn seen_ns(&self, r: usize) -> &AtomicU64 {
        self.at(HEADER + 8 * r)
    }
    fn deaths(&self, r: usize) -> &AtomicU32 {
        self.at(HEADER + 8 * self.n + 4 * r)
    }
    fn flag(&self, r: usize) -> &AtomicBool {
        self.at(HEADER + 12 * self.n + r)
    }
}

/// The launcher's side: creates the board and writes deaths into it.
pub struct BoardWriter {
    map: Mapping,
    fd: OwnedFd,
}

impl BoardWriter {
    /// A zeroed board for `n` ranks, in a memfd the ranks inherit (no close-on-exec).
    pub fn create(n: u32) -> std::io::Result<BoardWriter> {
        let fd = nix::sys::memfd::memfd_create(c"weft-run-board", nix::sys::memfd::MemFdCreateFlag::empty())?;
        nix::unistd::ftruncate(&fd, board_len(n as usize) as i64)?;
        let map = Mapping::map(&fd, n as usize)?;
        map.ranks().store(u64::from(n), Ordering::Relaxed);
        map.magic().store(MAGIC, Ordering::Release);
        Ok(BoardWriter { map, fd })
    }

    /// How many ranks the board holds (the job started on the command line).
    pub fn ranks(&self) -> u32 {
        self.map.n as u32
    }

    /// The descriptor number the ranks find in [`ENV_BOARD`].
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The ranks `dead` died; the launcher saw it at `seen_ns`. Wakes every other rank, and
    /// expects `readers` of them to read the board (see [`BoardWriter::wait_read`]). Ranks out
    /// of range are ignored; false if that left none (nothing written, nobody to wait for).
    pub fn mark_dead(&self, dead: &[u32], seen_ns: u64, readers: u32) -> bool {
        let n = self.map.n;
        let dead: Vec<usize> = dead.iter().map(|&r| r as usize).filter(|&r| r < n).collect();
        if dead.is_empty() {
            return false;
        }
        for &r in &dead {
            self.map.seen_ns(r).store(seen_ns, Ordering::Relaxed);
            self.map.deaths(r).fetch_add(1, Ordering::Release);
        }
        self.map.unread().store(readers, Ordering::Release);
        for s in (0..n).filter(|s| !dead.contains(s)) {
            self.map.flag(s).store(true, Ordering::Release);
        }
        true
    }

    /// Wait until the readers announced by the last [`BoardWriter::mark_dead`] have read it,
    /// or `bound` has passed; true if they all did. Sleeps on the futex word (no spinning).
    pub fn wait_read(&self, bound: Duration) -> bool {
        let end = Instant::now() + bound;
        loop {
            let left = self.map.unread().load(Ordering::Acquire);
            if left == 0 {
                return true;
            }
            let Some(rest) = end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                return false;
            };
            let ts =
                libc::timespec { tv_sec: rest.as_secs() as libc::time_t, tv_nsec: rest.subsec_nanos() as _ };
            // SAFETY: FUTEX_WAIT on a 4-byte aligned word inside our live shared mapping, with
            // a valid relative timeout; it only reads the word. EAGAIN (changed), EINTR and
            // ETIMEDOUT all lead back to the check above.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.map.unread().as_ptr(),
                    libc::FUTEX_WAIT,
                    left,
                    &ts as *const libc::timespec,
                    std::ptr::null::<u32>(),
                    0u32,
                )
            };
        }
    }
}

impl Drop for BoardWriter {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `create`, unmapped once; no reference into it outlives
        // the writer (its methods borrow `self`).
        let _ = unsafe { nix::sys::mman::munmap(self.map.base.cast(), board_len(self.map.n)) };
    }
}

/// The mapping of this process, made once (a global restart builds several engines in one
/// process; they share it, each with its own baseline).
static MAPPED: OnceLock<Mapping> = OnceLock::new();

/// A rank's side: reports the deaths the launcher wrote since it started.
pub struct Board {
    map: &'static Mapping,
    me: usize,
    /// Death counts already reported (or found at start).
    known: Vec<u32>,
}

impl Board {
    /// The board of the launcher that started this process, if it has one ([`ENV_BOARD`]):
    /// `me` of `n` ranks. An unusable board is an error naming why.
    pub fn from_env(me: u32, n: u32) -> Result<Option<Board>, RuntimeError> {
        let map = match MAPPED.get() {
            Some(m) => m,
            None => {
                let Some(v) = std::env::var_os(ENV_BOARD) else { return Ok(None) };
                let bad = |why: String| RuntimeError::Env(format!("{ENV_BOARD}={v:?}: {why}"));
                let fd: RawFd =
                    v.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| bad("not a descriptor".into()))?;
                let st = nix::sys::stat::fstat(fd).map_err(|e| bad(format!("fstat: {e}")))?;
                if (st.st_size as usize) < board_len(n as usize) {
                    return Err(bad(format!(
                        "{} bytes, a board of {n} ranks has {}",
                        st.st_size,
                        board_len(n as usize)
                    )));
                }
                // SAFETY: the launcher passed this descriptor for us to own; it is closed
                // (here, once mapped) and not used elsewhere.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                let m = Mapping::map(&owned, n as usize).map_err(|e| bad(format!("mmap: {e}")))?;
                drop(owned);
                let found = (m.magic().load(Ordering::Acquire), m.ranks().load(Ordering::Relaxed));
                if found != (MAGIC, u64::from(n)) {
                    return Err(bad(format!(
                        "not a board of {n} ranks (magic {:#x}, ranks {})",
                        found.0, found.1
                    )));
                }
                MAPPED.get_or_init(|| m)
            }
        };
        if map.n != n as usize || me >= n {
            return Err(RuntimeError::Env(format!(
                "{ENV_BOARD}: rank {me} of {n} on a board of {} ranks",
                map.n
            )));
        }
        let known = (0..map.n).map(|r| map.deaths(r).load(Ordering::Acquire)).collect();
        Ok(Some(Board { map, me: me as usize, known }))
    }

    /// This rank's wake flag: set when a death was written.
    pub fn flag(&self) -> &'static AtomicBool {
        self.map.flag(self.me)
    }

    /// Append the ranks that died since the last call (never this rank).
    pub fn poll(&mut self, out: &mut Vec<u32>) {
        if !self.map.flag(self.me).swap(false, Ordering::AcqRel) {
            return;
        }
        // One reader fewer; the last one wakes the launcher. A flag raised again before this
        // rank read the first one is read once: the count then never reaches 0 and the
        // launcher's wait ends by its bound.
        let unread = self.map.unread();
        if unread.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| u.checked_sub(1)) == Ok(1) {
            // SAFETY: FUTEX_WAKE of the launcher on a 4-byte aligned word of the live shared
            // mapping; the kernel only uses its address.
            unsafe { libc::syscall(libc::SYS_futex, unread.as_ptr(), libc::FUTEX_WAKE, 1i32) };
        }
        for r in (0..self.map.n).filter(|&r| r != self.me) {
            let d = self.map.deaths(r).load(Ordering::Acquire);
            if d != self.known[r] {
                self.known[r] = d;
                crate::client::note_launcher_seen(self.map.seen_ns(r).load(Ordering::Relaxed));
                out.push(r as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by every test that polls: a poll records the launcher's observation time in a
    /// process-wide value (`client::launcher_seen_ns`), which one test checks.
    static POLLS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn polls() -> std::sync::MutexGuard<'static, ()> {
        POLLS.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn deaths_reach_the_other_ranks_once_and_respawns_start_clean() {
        let _polls = polls();
        let w = BoardWriter::create(4).unwrap();
        let reader = |me: usize| Board {
            map: Box::leak(Box::new(Mapping::map(&w.fd.try_clone().unwrap(), 4).unwrap())),
            me,
            known: vec![0; 4],
        };
        let (mut r0, r2) = (reader(0), reader(2));
        let mut out = vec![];
        r0.poll(&mut out);
        assert!(out.is_empty() && !r0.flag().load(Ordering::Relaxed));
        assert!(w.mark_dead(&[2], 1234, 3));
        assert!(r0.flag().load(Ordering::Relaxed) && !r2.flag().load(Ordering::Relaxed));
        r0.poll(&mut out);
        assert_eq!(out, [2]);
        r0.poll(&mut out);
        assert_eq!(out, [2], "reported once");
        assert_eq!(crate::client::launcher_seen_ns(), Some(1234));
        // Rank 2 respawned: its new board starts from the counts it finds.
        let mut again =
            Board { known: (0..4).map(|r| w.map.deaths(r).load(Ordering::Acquire)).collect(), ..reader(2) };
        w.mark_dead(&[1], 99, 2);
        again.poll(&mut out);
        assert_eq!(out, [2, 1]);
        assert!(!r2.flag().load(Ordering::Relaxed), "one flag per rank: its new incarnation took it");
        assert!(!w.mark_dead(&[9], 0, 3), "out of range: ignored");
    }

    fn reader_of(w: &BoardWriter, me: usize) -> Board {
        let map = Box::leak(Box::new(Mapping::map(&w.fd.try_clone().unwrap(), w.map.n).unwrap()));
        Board { map, me, known: vec![0; w.map.n] }
    }

    #[test]
    fn a_node_is_reported_in_one_poll() {
        let _polls = polls();
        let w = BoardWriter::create(6).unwrap();
        let mut r0 = reader_of(&w, 0);
        let mut r4 = reader_of(&w, 4);
        assert!(w.mark_dead(&[4, 5, 77], 5, 4));
        assert!(!r4.flag().load(Ordering::Relaxed), "a dead rank's flag is not raised");
        let mut out = vec![];
        r0.poll(&mut out);
        assert_eq!(out, [4, 5]);
        r4.poll(&mut out);
        assert_eq!(out, [4, 5], "nothing for the dead rank's own mapping");
    }

    #[test]
    fn the_last_reader_wakes_the_launcher_through_another_mapping() {
        let _polls = polls();
        let w = BoardWriter::create(3).unwrap();
        let readers: Vec<Board> = (0..2).map(|me| reader_of(&w, me)).collect();
        w.mark_dead(&[2], 7, 2);
        // Nobody read it: the wait ends by its bound.
        assert!(!w.wait_read(Duration::from_millis(1)));
        // The readers (their own mappings of the memfd, as in another process) read it
        // while the launcher sleeps; the last one wakes it.
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let mut out = vec![];
            for mut r in readers {
                r.poll(&mut out);
                r.poll(&mut out); // a second poll takes nothing more off
            }
            out
        });
        assert!(w.wait_read(Duration::from_secs(120)), "woken by the last reader");
        assert_eq!(t.join().unwrap(), [2, 2]);
        assert_eq!(w.map.unread().load(Ordering::Relaxed), 0);
    }
}
