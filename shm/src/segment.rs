//! Inbound segments: an anonymous `memfd` per rank, its layout, and mappings of it.
//!
//! # Segment layout
//!
//! ```text
//! 0            SegHeader (64 B): magic, version, owner rank/pid, ring count, ring bytes, sizes
//! 64           producer table: u32 world rank of the producer of ring i, i < n_rings
//! ctrl_off     RingCtrl of ring i at ctrl_off + 256 i   (ctrl_off = round_up(64 + 4 n, 256))
//! hdr_bytes    (= round_up(ctrl_off + 256 n, 4096)) data area of ring i at
//!              hdr_bytes + i * ring_bytes, ring_bytes bytes, page aligned
//! seg_bytes    = hdr_bytes + n * ring_bytes
//! ```
//!
//! Ring `i` belongs to the i-th local peer other than the owner (local peers in increasing
//! world-rank order). Control blocks are gathered in the header pages so that a producer maps
//! only the header pages and its own data area, not the whole segment: at 128 local ranks each
//! process maps ~12 MiB of peer segments instead of ~508 MiB.
//!
//! The memfd is sealed (`F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`) once sized, so no process
//! can truncate it under a peer's mapping (which would turn ring accesses into SIGBUS).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{errno_err, ShmError};
use crate::ring::{RingCtrl, CTRL_BYTES};

/// Magic number at the start of a segment ("WEFTSHM1").
pub const SEG_MAGIC: u64 = u64::from_le_bytes(*b"WEFTSHM1");
/// Layout version; bumped on any incompatible change of the segment or ring format.
pub const SEG_VERSION: u32 = 2;
const PAGE: usize = 4096;
const SEG_HEADER: usize = 64;

/// Segment header, at offset 0 of every segment.
#[repr(C)]
struct SegHeader {
    magic: u64,
    version: u32,
    owner_rank: u32,
    owner_pid: u32,
    n_rings: u32,
    ring_bytes: u32,
    hdr_bytes: u32,
    seg_bytes: u64,
    /// Set to 1 (Release) by the owner when the header and producer table are written.
    ready: AtomicU32,
}
const _: () = assert!(std::mem::size_of::<SegHeader>() <= SEG_HEADER);

/// Offsets of a segment with `n_rings` rings of `ring_bytes` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub n_rings: usize,
    pub ring_bytes: usize,
    pub ctrl_off: usize,
    pub hdr_bytes: usize,
    pub seg_bytes: usize,
}

impl Layout {
    /// Layout for `n_rings` rings of `ring_bytes` (a power of two ≥ one page).
    pub fn new(n_rings: usize, ring_bytes: usize) -> Option<Layout> {
        if !ring_bytes.is_power_of_two() || ring_bytes < PAGE || ring_bytes > u32::MAX as usize {
            return None;
        }
        let ctrl_off = round_up(SEG_HEADER.checked_add(n_rings.checked_mul(4)?)?, CTRL_BYTES);
        let hdr_bytes = round_up(ctrl_off.checked_add(n_rings.checked_mul(CTRL_BYTES)?)?, PAGE);
        let seg_bytes = hdr_bytes.checked_add(n_rings.checked_mul(ring_bytes)?)?;
        if hdr_bytes > u32::MAX as usize {
            return None;
        }
        Some(Layout { n_rings, ring_bytes, ctrl_off, hdr_bytes, seg_bytes })
    }

    /// Byte offset of ring `i`'s data area.
    pub fn data_off(&self, i: usize) -> usize {
        self.hdr_bytes + i * self.ring_bytes
    }
}

fn round_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// One `mmap`ed range, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a Mapping is an address range owned by this value; nothing in it is thread-bound.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Map `len` bytes of `fd` at `offset` (page aligned), shared, read-write, with the page
    /// tables filled in at once (`MAP_POPULATE`): otherwise the first lap of every ring takes a
    /// page fault per 4 KiB on each side, which shows as a slow start of every run.
    fn map(fd: &OwnedFd, offset: usize, len: usize) -> Result<Mapping, ShmError> {
        // SAFETY: a fresh mapping chosen by the kernel (addr NULL) aliases no Rust object;
        // fd is a valid open descriptor; failure is reported as MAP_FAILED and checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(errno_err("mmap"));
        }
        Ok(Mapping { ptr: p as *mut u8, len })
    }

    /// Start of the mapping.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len is exactly a range this value mapped and nobody else unmaps; the
        // owners of raw pointers into it (ring ends) are dropped before (field order).
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// This rank's own inbound segment: the memfd (kept open so peers can `pidfd_getfd` it) and
/// the full mapping.
pub struct Inbound {
    pub layout: Layout,
    map: Mapping,
    fd: OwnedFd,
}

impl Inbound {
    /// Create, size, seal, map and initialise a segment whose ring `i` is fed by
    /// `producers[i]`.
    pub fn create(owner_rank: u32, producers: &[u32], ring_bytes: usize) -> Result<Inbound, ShmError> {
        let layout = Layout::new(producers.len(), ring_bytes).ok_or_else(|| {
            ShmError::Invalid(format!("bad segment layout: {} rings of {ring_bytes} B", producers.len()))
        })?;
        // SAFETY: the name is a NUL-terminated literal; flags are valid; result checked.
        let raw =
            unsafe { libc::memfd_create(c"weft-shm".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if raw < 0 {
            return Err(errno_err("memfd_create"));
        }
        // SAFETY: raw is a fresh descriptor returned to us and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: fd is valid; plain syscall, result checked.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), layout.seg_bytes as libc::off_t) } != 0 {
            return Err(errno_err("ftruncate"));
        }
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        // SAFETY: fd is valid; plain fcntl, result checked.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(errno_err("fcntl(F_ADD_SEALS)"));
        }
        let map = Mapping::map(&fd, 0, layout.seg_bytes)?;
        let h = map.ptr() as *mut SegHeader;
        // SAFETY: the mapping is at least hdr_bytes long (≥ 64 + 4 n bytes), page aligned, and
        // private to us until the card is published; SegHeader is plain data + an atomic
        // whose all-zero bytes (fresh memfd page) are a valid value.
        unsafe {
            (*h).magic = SEG_MAGIC;
            (*h).version = SEG_VERSION;
            (*h).owner_rank = owner_rank;
            (*h).owner_pid = std::process::id();
            (*h).n_rings = layout.n_rings as u32;
            (*h).ring_bytes = layout.ring_bytes as u32;
            (*h).hdr_bytes = layout.hdr_bytes as u32;
            (*h).seg_bytes = layout.seg_bytes as u64;
            let table = map.ptr().add(SEG_HEADER) as *mut u32;
            for (i, r) in producers.iter().enumerate() {
                table.add(i).write(*r);
            }
            (*h).ready.store(1, Ordering::Release);
        }
        Ok(Inbound { layout, map, fd })
    }

    /// Descriptor number of the memfd in this process (goes in the card).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Control block of ring `i`.
    pub fn ctrl(&self, i: usize) -> *const RingCtrl {
        assert!(i < self.layout.n_rings);
        // SAFETY: ctrl_off + 256 (i + 1) <= hdr_bytes <= mapping length (Layout::new).
        unsafe { self.map.ptr().add(self.layout.ctrl_off + i * CTRL_BYTES) as *const RingCtrl }
    }

    /// Data area of ring `i`.
    pub fn data(&self, i: usize) -> *mut u8 {
        assert!(i < self.layout.n_rings);
        // SAFETY: data_off(i) + ring_bytes <= seg_bytes = mapping length.
        unsafe { self.map.ptr().add(self.layout.data_off(i)) }
    }
}

/// The part of a peer's segment this rank writes into: header pages + one ring's data area.
pub struct Outbound {
    hdr: Mapping,
    data: Mapping,
    ctrl_off: usize,
    pub ring_bytes: usize,
}

impl Outbound {
    /// Map ring `slot` of the segment open as `fd`, after checking that the segment is the one
    /// described by the card: owner `rank`/`pid`, `n_rings`, `ring_bytes`, sealed, large
    /// enough, and that ring `slot` is fed by `me`.
    pub fn map(
        fd: &OwnedFd,
        rank: u32,
        pid: u32,
        n_rings: usize,
        ring_bytes: usize,
        slot: usize,
        me: u32,
    ) -> Result<Outbound, ShmError> {
        let bad = |what: &str| ShmError::Invalid(format!("segment of rank {rank}: {what}"));
        let layout = Layout::new(n_rings, ring_bytes).ok_or_else(|| bad("bad ring size in card"))?;
        if slot >= n_rings {
            return Err(bad("no ring for this rank"));
        }
        // SAFETY: zeroed stat is a valid out-parameter; fd valid; result checked.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(errno_err("fstat"));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || (st.st_size as u64) != layout.seg_bytes as u64 {
            return Err(bad("descriptor is not a segment of the expected size"));
        }
        // SAFETY: fd valid; plain fcntl.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(bad("segment is not sealed against shrinking"));
        }
        let hdr = Mapping::map(fd, 0, layout.hdr_bytes)?;
        let h = hdr.ptr() as *const SegHeader;
        // SAFETY: the mapping is hdr_bytes ≥ 64 + 4 n bytes long and the file is at least that
        // long (fstat); the fields are plain integers (any value valid) plus an atomic.
        let ok = unsafe {
            (*h).ready.load(Ordering::Acquire) == 1
                && (*h).magic == SEG_MAGIC
                && (*h).version == SEG_VERSION
                && (*h).owner_rank == rank
                && (*h).owner_pid == pid
                && (*h).n_rings as usize == n_rings
                && (*h).ring_bytes as usize == ring_bytes
                && (*h).hdr_bytes as usize == layout.hdr_bytes
                && (*h).seg_bytes == layout.seg_bytes as u64
                && (hdr.ptr().add(SEG_HEADER) as *const u32).add(slot).read() == me
        };
        if !ok {
            return Err(bad("header does not match the card"));
        }
        let data = Mapping::map(fd, layout.data_off(slot), ring_bytes)?;
        Ok(Outbound { hdr, data, ctrl_off: layout.ctrl_off + slot * CTRL_BYTES, ring_bytes })
    }

    /// Control block of our ring.
    pub fn ctrl(&self) -> *const RingCtrl {
        // SAFETY: ctrl_off + 256 <= hdr_bytes = header mapping length (checked in map).
        unsafe { self.hdr.ptr().add(self.ctrl_off) as *const RingCtrl }
    }

    /// Data area of our ring.
    pub fn data(&self) -> *mut u8 {
        self.data.ptr()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn layout_sizes() {
        let l = Layout::new(1, 512 << 10).unwrap();
        assert_eq!(l.hdr_bytes, 4096);
        assert_eq!(l.seg_bytes, 4096 + (512 << 10));
        let l = Layout::new(127, 32 << 10).unwrap();
        assert_eq!(l.ctrl_off, 768);
        assert_eq!(l.hdr_bytes, 36864);
        assert!(Layout::new(1, 3000).is_none());
        assert!(Layout::new(usize::MAX / 2, 4096).is_none());
    }

    #[test]
    fn create_and_map_self() {
        let seg = Inbound::create(3, &[1, 5], 16384).unwrap();
        let fd = seg.fd.try_clone().unwrap();
        let me = std::process::id();
        assert!(Outbound::map(&fd, 3, me, 2, 16384, 1, 5).is_ok());
        assert!(Outbound::map(&fd, 3, me, 2, 16384, 1, 1).is_err());
        assert!(Outbound::map(&fd, 4, me, 2, 16384, 1, 5).is_err());
        assert!(Outbound::map(&fd, 3, me, 2, 32768, 1, 5).is_err());
        assert!(Outbound::map(&fd, 3, me, 2, 16384, 2, 5).is_err());
        // Sealed: cannot shrink.
        // SAFETY: fd valid; checking that the kernel refuses.
        assert_ne!(unsafe { libc::ftruncate(fd.as_raw_fd(), 0) }, 0);
    }
}
