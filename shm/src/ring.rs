//! Lock-free single-producer / single-consumer byte ring of variable-length records.
//!
//! All the `unsafe` of the ring lives here. The ring memory (control block + data area) is
//! normally a slice of a shared `memfd` mapping written by two processes; the unit tests back
//! it with ordinary heap memory.
//!
//! # Layout
//!
//! Control block ([`RingCtrl`], 256 bytes): the producer index `head` alone in one 128-byte
//! block, the consumer index `tail` alone in the next (128 rather than 64 bytes so the adjacent-
//! line prefetcher of x86 does not pair them). Both are byte counts that increase monotonically
//! (u64: never wrap in practice) and are masked with `size - 1` to address the data area.
//!
//! Data area (`size` bytes, power of two, ≥ [`MIN_RING_BYTES`]) holds records, each starting
//! on a multiple of [`RECORD_ALIGN`] (64) bytes, one cache line when the data area is
//! line-aligned (it is page-aligned in shared memory):
//!
//! ```text
//! +0   u32 payload_len        (SKIP = u32::MAX: skip marker, the rest of the ring is unused)
//! +4   u32 !payload_len       (integrity check of the length word)
//! +8   Header (24 bytes)
//! +32  payload (payload_len bytes)
//!      pad to a multiple of 64
//! ```
//!
//! So a record of up to 32 payload bytes sits in one cache line: the consumer, polling the
//! prefix word, gets the whole message with the one line transfer that signals it.
//!
//! (The 4-byte check word doubles as the padding that 8-aligns header and payload.) The first
//! 8 bytes are the record's *prefix word*. The word that follows the last published record is
//! always 0, the *end marker* (0 is never a valid prefix: its check word does not match).
//!
//! A record that would cross the end of the data area is preceded by a skip marker at the
//! current position; the record then starts at offset 0. Records are at most `size / 2` bytes
//! so that an empty ring can always accept the largest record (with its skip marker and end
//! marker), wherever its indices stand.
//!
//! # Protocol
//!
//! The consumer polls the prefix word at its tail position, not the producer's index: the
//! message itself is the signal, so a small message costs the consumer one cache line
//! transfer (the line holding the record) instead of two (the head index, then the record).
//!
//! Producer: write the end marker (0) after the new record, the header and payload, then the
//! prefix word with a Release store (for a record placed at offset 0 behind a skip marker:
//! the whole record first, then the skip marker with a Release store). Before that it must know
//! the bytes — record, skip marker and end marker — are free: it keeps a private copy of
//! `tail` and reloads it (`Acquire`, pairs with the consumer's `Release` so the consumer's reads
//! of old bytes happen before the producer's overwrite) only when the ring looks full. It also
//! stores its index to `head` (Release); only a later producer that continues the ring reads it.
//!
//! Consumer: Acquire-loads the prefix word at its tail: 0 means empty (the end marker, ordered
//! before the previous record's prefix, so no stale word of an earlier lap can be seen); a
//! valid prefix means the record's bytes are visible. After delivering a batch it publishes
//! `tail.store(new_tail, Release)`.
//!
//! Cache lines, which decide the latency between cores: a small record and its end marker
//! take two lines, the record's (which the consumer is polling) and the next. After each
//! record the producer prefetches for write the line its *next* end marker will go to, so
//! that store does not wait for a transfer. A consumer whose caller waits for one message
//! stops after it ([`Consumer::drain_until`]) instead of reading the end marker's line, which
//! the producer holds.
//!
//! No operation stronger than Acquire/Release, no read-modify-write, no lock, no syscall.
//!
//! # Robustness
//!
//! The consumer never trusts the bytes it reads from shared memory: a prefix word whose check
//! does not match, a record that would extend past the data area, or a skip marker at offset 0
//! (which no producer writes: it would loop) make [`Consumer::drain`] return [`Corrupt`]
//! without reading out of bounds.

use weft_engine::transport::Header;

#[cfg(loom)]
use ::loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crossbeam_utils::CachePadded;

/// Bytes before the header in a record (length word + check word).
const PREFIX: usize = 8;
/// Bytes before the payload in a record.
pub const RECORD_OVERHEAD: usize = PREFIX + Header::SIZE;
/// Length word of a skip marker.
const SKIP: u32 = u32::MAX;
/// Smallest data area accepted (one page).
pub const MIN_RING_BYTES: usize = 4096;

/// Records start on multiples of this many bytes (a cache line).
pub const RECORD_ALIGN: usize = 64;

/// Size of a record carrying `payload_len` bytes, padded to [`RECORD_ALIGN`].
#[inline(always)]
pub const fn record_size(payload_len: usize) -> usize {
    (RECORD_OVERHEAD + payload_len + RECORD_ALIGN - 1) & !(RECORD_ALIGN - 1)
}

/// Largest payload a ring of `size` data bytes carries (record ≤ size / 2).
pub const fn max_payload(size: usize) -> usize {
    size / 2 - RECORD_OVERHEAD
}

/// Shared control block of one ring: producer index and consumer index on separate cache
/// lines. All-zero bytes are a valid initial state (both indices 0), which is how a fresh
/// `memfd` page reads.
#[repr(C)]
pub struct RingCtrl {
    /// Producer index: bytes ever written. Written only by the producer.
    head: CachePadded<AtomicU64>,
    /// Consumer index: bytes ever consumed. Written only by the consumer.
    tail: CachePadded<AtomicU64>,
}

/// Size of [`RingCtrl`] in shared memory.
pub const CTRL_BYTES: usize = 256;
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RingCtrl>() <= CTRL_BYTES);

impl RingCtrl {
    /// A fresh control block (both indices 0), for rings in private memory (tests, loom).
    pub fn new() -> RingCtrl {
        RingCtrl { head: CachePadded::new(AtomicU64::new(0)), tail: CachePadded::new(AtomicU64::new(0)) }
    }
}

impl Default for RingCtrl {
    fn default() -> Self {
        Self::new()
    }
}

/// The consumer found bytes in the ring that no correct producer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// Prefix word of a record of `len` payload bytes (or of a skip marker, `len` = [`SKIP`]).
#[inline(always)]
const fn prefix_word(len: u32) -> u64 {
    (len as u64) | ((!len as u64) << 32)
}

/// Race-detector shadow for loom: one tracked cell per 8-byte word of the data area, so loom
/// checks that every byte the consumer reads was published to it by the ring protocol; and
/// one loom atomic per word, standing in for the prefix words and end markers (which the
/// real ring accesses atomically in place).
#[cfg(loom)]
#[derive(Clone)]
pub struct Shadow(std::sync::Arc<(Vec<::loom::cell::UnsafeCell<()>>, Vec<AtomicU64>)>);

#[cfg(loom)]
impl Shadow {
    /// A shadow for a data area of `size` bytes.
    // The cells are shared between the two ring ends on purpose: loom checks the accesses.
    #[allow(clippy::arc_with_non_send_sync)]
    pub fn new(size: usize) -> Shadow {
        Shadow(std::sync::Arc::new((
            (0..size / 8).map(|_| ::loom::cell::UnsafeCell::new(())).collect(),
            (0..size / 8).map(|_| AtomicU64::new(0)).collect(),
        )))
    }
    fn write(&self, pos: usize, len: usize) {
        for w in pos / 8..(pos + len).div_ceil(8) {
            self.0 .0[w].with_mut(|_| ());
        }
    }
    fn read(&self, pos: usize, len: usize) {
        for w in pos / 8..(pos + len).div_ceil(8) {
            self.0 .0[w].with(|_| ());
        }
    }
    fn word(&self, pos: usize) -> &AtomicU64 {
        &self.0 .1[pos / 8]
    }
}

/// Producer end of a ring (process-private state).
pub struct Producer {
    ctrl: *const RingCtrl,
    data: *mut u8,
    size: u64,
    mask: u64,
    /// Private copy of the head index (this side is its only writer).
    head: u64,
    /// Last tail index read from shared memory.
    cached_tail: u64,
    #[cfg(loom)]
    shadow: Shadow,
}

// SAFETY: a Producer only holds pointers into ring memory that the creator promised (see
// `Producer::new`) to keep valid; moving it to another thread moves the single producer role.
unsafe impl Send for Producer {}

impl Producer {
    /// Attach the producer end of a ring.
    ///
    /// # Safety
    /// - `ctrl` points to a `RingCtrl` and `data` to `size` bytes, both valid (mapped,
    ///   writable) for the lifetime of the returned value, `data` 8-byte aligned;
    /// - `size` is a power of two ≥ [`MIN_RING_BYTES`];
    /// - at most one `Producer` exists for this ring at any time, and the ring was either
    ///   fresh (both indices 0, data zeroed) or last used by a producer whose state this one
    ///   continues;
    /// - nothing but the ring protocol writes `ctrl.head` or the data bytes.
    pub unsafe fn new(ctrl: *const RingCtrl, data: *mut u8, size: usize) -> Producer {
        debug_assert!(size.is_power_of_two() && size >= MIN_RING_BYTES);
        debug_assert_eq!(data as usize % 8, 0);
        // SAFETY: ctrl is valid per the contract; the producer is the only writer of head, so
        // a Relaxed-equivalent read of its own index is enough (Acquire is harmless).
        let head = unsafe { (*ctrl).head.load(Acquire) };
        // SAFETY: as above; tail is read with Acquire as everywhere on the producer side.
        let cached_tail = unsafe { (*ctrl).tail.load(Acquire) };
        Producer {
            ctrl,
            data,
            size: size as u64,
            mask: size as u64 - 1,
            head,
            cached_tail,
            #[cfg(loom)]
            shadow: Shadow::new(size),
        }
    }

    /// Loom only: share a shadow with the consumer.
    #[cfg(loom)]
    pub fn set_shadow(&mut self, s: Shadow) {
        self.shadow = s;
    }

    /// Largest payload this ring accepts.
    #[inline]
    pub fn max_payload(&self) -> usize {
        max_payload(self.size as usize)
    }

    /// Data bytes of the ring.
    pub fn size(&self) -> usize {
        self.size as usize
    }

    /// Store the prefix word or end marker at data offset `pos` (Release for a prefix word,
    /// Relaxed for an end marker, which a later Release store publishes).
    ///
    /// # Safety
    /// `pos` < size, 8-aligned; the word is free (or is the end marker the consumer may be
    /// polling, for a prefix) and only this producer writes it.
    #[cfg(not(loom))]
    #[inline(always)]
    unsafe fn store_word(&self, pos: usize, w: u64, release: bool) {
        let ord = if release { Release } else { Relaxed };
        // SAFETY: per the function contract the word lies in the data area, 8-aligned (data is
        // 8-aligned); every access that may race with this one is atomic (the consumer's poll).
        unsafe { AtomicU64::from_ptr(self.data.add(pos) as *mut u64).store(w, ord) };
    }

    /// Loom: the word lives in the shadow's atomics.
    #[cfg(loom)]
    unsafe fn store_word(&self, pos: usize, w: u64, release: bool) {
        self.shadow.write(pos, PREFIX);
        self.shadow.word(pos).store(w, if release { Release } else { Relaxed });
    }

    /// Append one record. Returns `false` (nothing written) if the ring has no room now or if
    /// `payload` is larger than [`Producer::max_payload`] (the caller checks that first).
    #[inline]
    pub fn try_push(&mut self, hdr: &Header, payload: &[u8]) -> bool {
        let len = payload.len();
        if len > self.max_payload() {
            return false;
        }
        let rec = record_size(len) as u64;
        let pos = self.head & self.mask;
        let to_end = self.size - pos;
        // Bytes consumed from the ring: a skip of `to_end` bytes first if the record would
        // cross the end (`to_end` is a multiple of 64, so a skip marker always fits).
        let need = if rec <= to_end { rec } else { to_end + rec };
        // The record, then its end marker, must be free. wrapping_sub: a faulty consumer's
        // tail (ahead of head, or far behind) reads as "full", never as free space and never
        // as an overflow panic.
        if (self.head + need + PREFIX as u64).wrapping_sub(self.cached_tail) > self.size {
            // SAFETY: ctrl valid per `new`'s contract. Acquire pairs with the consumer's
            // Release store of tail: its reads of the bytes we are about to overwrite
            // happened before.
            self.cached_tail = unsafe { (*self.ctrl).tail.load(Acquire) };
            if (self.head + need + PREFIX as u64).wrapping_sub(self.cached_tail) > self.size {
                return false;
            }
        }
        let skip = rec > to_end;
        let at = if skip { 0 } else { pos as usize };
        let end = (at + rec as usize) & self.mask as usize;
        // SAFETY: record [at, at + rec) lies inside the data area (either rec <= to_end, or
        // at = 0 and rec <= size / 2), and the end marker word at `end` too (8-aligned, < size);
        // both, and the skip marker word at `pos`, are free (checked against the consumer index
        // above: they are the `need + 8` bytes from head; the consumer reads below head and
        // only polls the word at head, atomically), and only this producer writes them. The
        // prefix and marker words are stored atomically. The end marker is stored before the
        // Release store that publishes the record, the record bytes before its prefix, and a
        // record behind a skip marker before the marker. `payload` does not overlap ring
        // memory that is being written (it is either private memory or a consumed record).
        unsafe {
            self.store_word(end, 0, false);
            let p = self.data.add(at);
            std::ptr::copy_nonoverlapping(hdr.as_bytes().as_ptr(), p.add(PREFIX), Header::SIZE);
            weft_engine::transport::copy_bytes(payload.as_ptr(), p.add(RECORD_OVERHEAD), len);
            #[cfg(loom)]
            self.shadow.write(at + PREFIX, rec as usize - PREFIX);
            self.store_word(at, prefix_word(len as u32), true);
            if skip {
                self.store_word(pos as usize, prefix_word(SKIP), true);
            }
        }
        // The next record's end marker goes one line past this one's: ask for that line now,
        // so its store does not wait in the store buffer (ahead of the next record's own
        // stores) for a transfer from the core that last read it.
        prefetch_write(self.data.wrapping_add((end + RECORD_ALIGN) & self.mask as usize));
        self.head += need;
        // SAFETY: ctrl valid per contract. Only a producer that continues this ring reads it.
        unsafe { (*self.ctrl).head.store(self.head, Release) };
        true
    }
}

/// Hint that this core will write the cache line at `p` soon (`prefetchw` on x86-64; no-op
/// elsewhere and under loom). Never faults, whatever `p` is.
#[inline(always)]
fn prefetch_write(p: *const u8) {
    // (Inline assembly: without the `prfchw` target feature, `_mm_prefetch::<_MM_HINT_ET0>`
    // compiles to a read prefetch. CPUs without PREFETCHW execute its encoding as a NOP.)
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: a prefetch is a hint: it does not fault and has no architectural effect, for
    // any address; it touches no register but its input, no flag and no stack.
    unsafe {
        std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly))
    };
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = p;
}

/// Consumer end of a ring (process-private state).
pub struct Consumer {
    ctrl: *const RingCtrl,
    data: *const u8,
    size: u64,
    mask: u64,
    /// Private copy of the tail index (this side is its only writer).
    tail: u64,
    /// Tail value last stored to shared memory.
    published: u64,
    #[cfg(loom)]
    shadow: Shadow,
}

// SAFETY: see `Producer`'s Send impl; same reasoning for the single consumer role.
unsafe impl Send for Consumer {}

impl Consumer {
    /// Attach the consumer end of a ring.
    ///
    /// # Safety
    /// - `ctrl` points to a `RingCtrl` and `data` to `size` bytes, both valid (mapped,
    ///   readable, `ctrl` writable) for the lifetime of the returned value, `data` 8-aligned;
    /// - `size` is a power of two ≥ [`MIN_RING_BYTES`];
    /// - at most one `Consumer` exists for this ring at any time;
    /// - nothing but the ring protocol writes `ctrl.tail`.
    ///
    /// The producer may be faulty: garbage in the data area makes `drain` return [`Corrupt`],
    /// never read outside `data[..size]`.
    pub unsafe fn new(ctrl: *const RingCtrl, data: *const u8, size: usize) -> Consumer {
        debug_assert!(size.is_power_of_two() && size >= MIN_RING_BYTES);
        debug_assert_eq!(data as usize % 8, 0);
        // SAFETY: ctrl valid per contract; this side is the only writer of tail.
        let tail = unsafe { (*ctrl).tail.load(Acquire) };
        Consumer {
            ctrl,
            data,
            size: size as u64,
            mask: size as u64 - 1,
            tail,
            published: tail,
            #[cfg(loom)]
            shadow: Shadow::new(size),
        }
    }

    /// Loom only: share a shadow with the producer.
    #[cfg(loom)]
    pub fn set_shadow(&mut self, s: Shadow) {
        self.shadow = s;
    }

    /// Acquire-load the word at data offset `pos` (the tail position): 0 (end marker: empty),
    /// a prefix word, or garbage.
    #[cfg(not(loom))]
    #[inline(always)]
    fn poll_word(&self, pos: usize) -> u64 {
        // SAFETY: `pos` = tail & mask is < size and 8-aligned (tail only advances by multiples
        // of 64, data is 8-aligned), so the word is inside the data area; the producer writes
        // it only atomically while we may read it. Acquire pairs with the producer's Release
        // store of a prefix: the record bytes it published are visible after this load.
        unsafe { AtomicU64::from_ptr(self.data.add(pos) as *mut u64).load(Acquire) }
    }

    /// Loom: the word lives in the shadow's atomics.
    #[cfg(loom)]
    fn poll_word(&self, pos: usize) -> u64 {
        self.shadow.word(pos).load(Acquire)
    }

    /// Whether a record (or skip marker) is ready: one Acquire load of the word at the tail.
    #[inline]
    pub fn has_data(&mut self) -> Result<bool, Corrupt> {
        let word = self.poll_word((self.tail & self.mask) as usize);
        if word == 0 {
            return Ok(false);
        }
        if (word >> 32) as u32 != !(word as u32) {
            return Err(Corrupt);
        }
        Ok(true)
    }

    /// Deliver up to `max` records, oldest first, to `sink(header, payload)` (`payload`
    /// borrowed from the ring, valid during the call), then publish the new tail once.
    /// Returns how many were delivered, and [`Corrupt`] if a bad record stopped the batch:
    /// the records before it have been delivered, and the ring must not be read again.
    #[inline]
    pub fn drain<F: FnMut(&Header, &[u8])>(
        &mut self,
        max: usize,
        mut sink: F,
    ) -> (usize, Result<(), Corrupt>) {
        self.drain_until(max, |h, p| {
            sink(h, p);
            false
        })
    }

    /// As [`Consumer::drain`], but stop after a record for which `sink` returns `true`,
    /// without reading the word that follows it: when messages come one at a time that word
    /// is the end marker, in a line the producer wrote last, and reading it costs a transfer
    /// from the producer's core between the delivery and whoever waits for it.
    #[inline]
    pub fn drain_until<F: FnMut(&Header, &[u8]) -> bool>(
        &mut self,
        max: usize,
        mut sink: F,
    ) -> (usize, Result<(), Corrupt>) {
        let mut n = 0;
        let r = self.drain_inner(max, &mut n, &mut sink);
        self.publish();
        (n, r)
    }

    #[inline(always)]
    fn drain_inner<F: FnMut(&Header, &[u8]) -> bool>(
        &mut self,
        max: usize,
        n: &mut usize,
        sink: &mut F,
    ) -> Result<(), Corrupt> {
        while *n < max {
            let pos = (self.tail & self.mask) as usize;
            let to_end = self.size - pos as u64;
            let word = self.poll_word(pos);
            if word == 0 {
                return Ok(());
            }
            let len = word as u32;
            if (word >> 32) as u32 != !len {
                return Err(Corrupt);
            }
            #[cfg(loom)]
            self.shadow.read(pos, PREFIX);
            if len == SKIP {
                // A record always fits at offset 0: no producer skips from there.
                if pos == 0 {
                    return Err(Corrupt);
                }
                self.tail += to_end;
                continue;
            }
            let len = len as usize;
            let rec = record_size(len) as u64;
            if rec > to_end {
                return Err(Corrupt);
            }
            // SAFETY: [pos, pos + rec) is inside the data area (rec <= to_end). Its prefix was
            // Acquire-loaded above, so the producer's writes of the record are visible, and it
            // does not rewrite them until our tail moves past them, which happens after the
            // sink returns. Header is plain integers: any bytes are a valid value; pos + 8 is
            // 8-aligned.
            let (hdr, payload) = unsafe {
                let p = self.data.add(pos);
                let hdr = (p.add(PREFIX) as *const Header).read();
                (hdr, std::slice::from_raw_parts(p.add(RECORD_OVERHEAD), len))
            };
            #[cfg(loom)]
            self.shadow.read(pos + PREFIX, rec as usize - PREFIX);
            let stop = sink(&hdr, payload);
            self.tail += rec;
            *n += 1;
            if stop {
                break;
            }
        }
        Ok(())
    }

    /// Store the tail (Release) if it moved since the last store.
    #[inline(always)]
    fn publish(&mut self) {
        if self.tail != self.published {
            // SAFETY: ctrl valid per contract. Release orders our reads of the consumed
            // records before the producer may overwrite them (it loads tail with Acquire).
            unsafe { (*self.ctrl).tail.store(self.tail, Release) };
            self.published = self.tail;
        }
    }
}

/// A ring in private heap memory with both ends, for tests and benchmarks.
pub struct HeapRing {
    ctrl: Box<RingCtrl>,
    data: Vec<u64>,
}

impl HeapRing {
    /// A fresh ring with `size` data bytes (power of two ≥ [`MIN_RING_BYTES`]).
    ///
    /// # Panics
    /// If `size` is not a power of two or is below the minimum.
    pub fn new(size: usize) -> HeapRing {
        assert!(size.is_power_of_two() && size >= MIN_RING_BYTES);
        HeapRing { ctrl: Box::new(RingCtrl::new()), data: vec![0u64; size / 8] }
    }

    /// Both ends of the ring. The returned values borrow the ring's memory through raw
    /// pointers: `self` must outlive them, and this is to be called once.
    ///
    /// # Safety
    /// `self` outlives both returned values and `split` is called at most once.
    pub unsafe fn split(&mut self) -> (Producer, Consumer) {
        let size = self.data.len() * 8;
        let ctrl: *const RingCtrl = &*self.ctrl;
        let data = self.data.as_mut_ptr() as *mut u8;
        // SAFETY: ctrl and data are valid while self lives (caller's promise), data is
        // 8-aligned (Vec<u64>), size is a power of two >= MIN (checked in new), and this is
        // the only producer/consumer pair (split called once).
        #[allow(unused_mut)]
        let (mut p, mut c) = unsafe { (Producer::new(ctrl, data, size), Consumer::new(ctrl, data, size)) };
        #[cfg(loom)]
        {
            let s = Shadow::new(size);
            p.set_shadow(s.clone());
            c.set_shadow(s);
        }
        (p, c)
    }

    /// Overwrite raw data bytes (tests of corruption handling).
    pub fn poke(&mut self, byte_off: usize, bytes: &[u8]) {
        // SAFETY: Vec<u64> storage viewed as bytes; the range is bounds-checked by the slice.
        let all =
            unsafe { std::slice::from_raw_parts_mut(self.data.as_mut_ptr() as *mut u8, self.data.len() * 8) };
        all[byte_off..byte_off + bytes.len()].copy_from_slice(bytes);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hdr(tag: i32, len: usize) -> Header {
        Header { class: 1, tag, len: len as u64, ..Header::default() }
    }

    fn pop_all(c: &mut Consumer) -> Vec<(Header, Vec<u8>)> {
        let mut v = Vec::new();
        c.drain(usize::MAX, |h, p| v.push((*h, p.to_vec()))).1.unwrap();
        v
    }

    #[test]
    fn empty_then_one() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        assert!(!c.has_data().unwrap());
        assert!(pop_all(&mut c).is_empty());
        assert!(p.try_push(&hdr(7, 3), b"abc"));
        assert!(c.has_data().unwrap());
        let v = pop_all(&mut c);
        assert_eq!(v, vec![(hdr(7, 3), b"abc".to_vec())]);
        assert!(!c.has_data().unwrap());
    }

    #[test]
    fn zero_length_payloads() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        let mut sent = 0;
        while p.try_push(&hdr(sent, 0), &[]) {
            sent += 1;
        }
        // The last 8 bytes stay free for the end marker.
        assert_eq!(sent as usize, 4096 / record_size(0) - 1);
        let v = pop_all(&mut c);
        assert_eq!(v.len(), sent as usize);
        for (i, (h, pl)) in v.iter().enumerate() {
            assert_eq!(h.tag, i as i32);
            assert!(pl.is_empty());
        }
    }

    #[test]
    fn drain_until_stops_without_reading_on() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        for i in 0..3 {
            assert!(p.try_push(&hdr(i, 4), b"abcd"));
        }
        let mut tags = Vec::new();
        let (n, res) = c.drain_until(10, |h, _| {
            tags.push(h.tag);
            h.tag == 1
        });
        assert_eq!((n, res, tags), (2, Ok(()), vec![0, 1]));
        let v = pop_all(&mut c);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0.tag, 2);
        // The word after a stop record is not read: garbage there (where the end marker
        // belongs) is not seen by a drain that stops before it, and is by one that does not.
        let at = 3 * record_size(4) + 2 * record_size(4);
        assert!(p.try_push(&hdr(3, 4), b"abcd"));
        assert!(p.try_push(&hdr(4, 4), b"abcd"));
        r.poke(at, &[0x5a; 8]);
        assert_eq!(c.drain_until(10, |h, _| h.tag == 4), (2, Ok(())));
        assert_eq!(c.drain(10, |_, _| {}), (0, Err(Corrupt)));
    }

    #[test]
    fn full_and_empty() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        let pl = [0xabu8; 96]; // record 128 bytes
                               // 31 records and the end marker: 3976 bytes; a 32nd would leave no room for the marker.
        for i in 0..31 {
            assert!(p.try_push(&hdr(i, 96), &pl), "push {i}");
        }
        assert!(!p.try_push(&hdr(99, 96), &pl), "full ring must refuse");
        // Consume one record: room for exactly one more 128-byte record.
        let mut got = 0;
        c.drain(1, |h, _| {
            assert_eq!(h.tag, 0);
            got += 1
        })
        .1
        .unwrap();
        assert_eq!(got, 1);
        assert!(p.try_push(&hdr(31, 96), &pl));
        assert!(!p.try_push(&hdr(99, 96), &pl));
        let v = pop_all(&mut c);
        assert_eq!(v.len(), 31);
        assert_eq!(v.last().unwrap().0.tag, 31);
        assert!(!c.has_data().unwrap());
    }

    #[test]
    fn max_size_records_and_too_large() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        let m = p.max_payload();
        assert_eq!(record_size(m), 2048);
        let big: Vec<u8> = (0..m).map(|i| i as u8).collect();
        assert!(!p.try_push(&hdr(0, m + 1), &vec![0; m + 1]));
        for round in 0..10 {
            assert!(p.try_push(&hdr(round, m), &big));
            // A second one would leave no room for the end marker.
            assert!(!p.try_push(&hdr(round, m), &big));
            let v = pop_all(&mut c);
            assert_eq!(v.len(), 1);
            assert!(v.iter().all(|(_, pl)| pl == &big));
        }
        // Offset the indices by 64 bytes: every other max-size record then needs a skip.
        assert!(p.try_push(&hdr(0, 0), &[]));
        pop_all(&mut c);
        for round in 0..10 {
            assert!(p.try_push(&hdr(round, m), &big), "round {round}");
            let v = pop_all(&mut c);
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].1, big);
        }
    }

    #[test]
    fn wrap_around_with_skip_marker() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        // 1000-byte payloads: 1088-byte records.
        let pl = vec![5u8; 1000];
        let rec = record_size(1000);
        assert_eq!(rec, 1088);
        for i in 0..3 {
            assert!(p.try_push(&hdr(i, 1000), &pl));
        }
        // 3264 used, 832 to the end: the next record needs a skip marker plus 1088 bytes at
        // the start, which are not free yet.
        assert!(!p.try_push(&hdr(3, 1000), &pl));
        let v = pop_all(&mut c);
        assert_eq!(v.len(), 3);
        assert!(p.try_push(&hdr(3, 1000), &pl));
        // The record went to offset 0 after a skip marker at 3264.
        assert_eq!(p.head as usize, 4096 + rec);
        let v = pop_all(&mut c);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0.tag, 3);
        assert_eq!(c.tail as usize, 4096 + rec);
    }

    #[test]
    fn corrupt_length_is_detected() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        assert!(p.try_push(&hdr(1, 8), &[1; 8]));
        assert!(p.try_push(&hdr(2, 8), &[2; 8]));
        // Second record at offset 64: claim a huge length with a matching check word.
        let bad = 100_000u32;
        let mut w = [0u8; 8];
        w[..4].copy_from_slice(&bad.to_ne_bytes());
        w[4..].copy_from_slice(&(!bad).to_ne_bytes());
        r.poke(64, &w);
        let mut got = Vec::new();
        assert_eq!(c.drain(10, |h, _| got.push(h.tag)), (1, Err(Corrupt)));
        assert_eq!(got, vec![1]);
    }

    #[test]
    fn corrupt_check_word_and_markers() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        assert!(p.try_push(&hdr(1, 8), &[1; 8]));
        r.poke(4, &[0, 0, 0, 0]);
        assert_eq!(c.drain(10, |_, _| {}).1, Err(Corrupt));

        // Garbage where the end marker should be.
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (_p, mut c) = unsafe { r.split() };
        r.poke(0, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(c.has_data(), Err(Corrupt));
        assert_eq!(c.drain(10, |_, _| {}).1, Err(Corrupt));

        // A skip marker at offset 0 (it would send the consumer round in circles).
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (_p, mut c) = unsafe { r.split() };
        r.poke(0, &prefix_word(SKIP).to_ne_bytes());
        assert_eq!(c.drain(10, |_, _| {}).1, Err(Corrupt));
    }

    #[test]
    fn no_stale_record_after_wrap() {
        let mut r = HeapRing::new(4096);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        // Many laps of odd-sized records: after each drain the ring must read empty, although
        // the bytes at the tail still hold records of an earlier lap.
        for i in 0..2000 {
            let len = (i * 37) % 300;
            assert!(p.try_push(&hdr(i as i32, len), &vec![i as u8; len]));
            let v = pop_all(&mut c);
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].0.tag, i as i32);
            assert!(!c.has_data().unwrap());
        }
    }

    #[test]
    fn two_thread_stress_sequence() {
        const N: u64 = 2_000_000;
        let mut r = HeapRing::new(16384);
        // SAFETY: r is declared first, so it outlives both ends; split is called once.
        let (mut p, mut c) = unsafe { r.split() };
        std::thread::scope(|s| {
            s.spawn(move || {
                let mut buf = [0u8; 300];
                for i in 0..N {
                    let len = (i.wrapping_mul(2654435761) % 300) as usize;
                    for (k, b) in buf[..len].iter_mut().enumerate() {
                        *b = (i as u8).wrapping_add(k as u8);
                    }
                    let h = Header { len: i, ..Header::default() };
                    while !p.try_push(&h, &buf[..len]) {
                        std::hint::spin_loop();
                    }
                }
            });
            let mut next = 0u64;
            while next < N {
                c.drain(64, |h, pl| {
                    assert_eq!(h.len, next);
                    let len = (next.wrapping_mul(2654435761) % 300) as usize;
                    assert_eq!(pl.len(), len);
                    for (k, b) in pl.iter().enumerate() {
                        assert_eq!(*b, (next as u8).wrapping_add(k as u8));
                    }
                    next += 1;
                })
                .1
                .unwrap();
            }
        });
    }

    proptest! {
        #[test]
        fn random_sizes_fifo(ops in proptest::collection::vec((0usize..2100, 0usize..4), 1..400)) {
            let mut r = HeapRing::new(4096);
            // SAFETY: r is declared first, so it outlives both ends; split is called once.
            let (mut p, mut c) = unsafe { r.split() };
            let mut model: std::collections::VecDeque<(i32, usize)> = Default::default();
            let mut used = 0usize; // upper bound check: bytes in flight never exceed size
            let mut seq = 0i32;
            for (len, pops) in ops {
                let len = len.min(p.max_payload());
                let pl: Vec<u8> = (0..len).map(|k| (seq as u8) ^ (k as u8)).collect();
                if p.try_push(&hdr(seq, len), &pl) {
                    model.push_back((seq, len));
                    used += record_size(len);
                    seq += 1;
                } else {
                    // Refusal is only allowed when the record cannot fit even contiguously.
                    prop_assert!(used + record_size(len) > 4096 / 2 || !model.is_empty());
                }
                let mut err = None;
                c.drain(pops, |h, pl| {
                    match model.pop_front() {
                        Some((s, l)) if s == h.tag && l == pl.len()
                            && pl.iter().enumerate().all(|(k, b)| *b == (s as u8) ^ (k as u8)) => {
                            used -= record_size(l);
                        }
                        other => err = Some(format!("got tag {} len {}, want {:?}", h.tag, pl.len(), other)),
                    }
                }).1.unwrap();
                prop_assert!(err.is_none(), "{:?}", err);
            }
            let mut rest = 0;
            c.drain(usize::MAX, |h, _| { assert_eq!(model.pop_front().unwrap().0, h.tag); rest += 1; }).1.unwrap();
            prop_assert!(model.is_empty());
            // An empty ring always takes a max-size record.
            prop_assert!(p.try_push(&hdr(0, p.max_payload()), &vec![0; p.max_payload()]));
        }
    }
}

#[cfg(all(test, loom))]
mod loom {
    use super::*;

    /// Model check of the index protocol. The indices start 64 bytes before the end of a
    /// 4096-byte ring, so the run covers a skip marker, a record ending exactly at the end of
    /// the data area, and a producer that must wait for the consumer's tail. The shadow cells
    /// make loom flag any read of ring bytes that is not ordered after their write, and any
    /// overwrite not ordered after the read. No preemption bound: every interleaving is
    /// explored (about 3 s in release). Weakening either Release store to Relaxed makes this
    /// test fail with a causality violation (checked by hand).
    #[test]
    fn index_protocol() {
        let b = ::loom::model::Builder::new();
        b.check(|| {
            let mut r = HeapRing::new(4096);
            r.ctrl.head.store(4096 - 64, Release);
            r.ctrl.tail.store(4096 - 64, Release);
            // SAFETY: r outlives both ends (the producer thread is joined before r drops), and
            // split is called once.
            let (mut p, mut c) = unsafe { r.split() };
            const LENS: [usize; 3] = [1000, 2000, 1000];
            let t = ::loom::thread::spawn(move || {
                for (i, len) in LENS.iter().enumerate() {
                    let pl = vec![i as u8 + 1; *len];
                    let h = Header { tag: i as i32 + 1, ..Header::default() };
                    while !p.try_push(&h, &pl) {
                        ::loom::thread::yield_now();
                    }
                }
            });
            let mut next = 1;
            while next <= 3 {
                let (n, res) = c.drain(usize::MAX, |h, pl| {
                    assert_eq!(h.tag, next);
                    assert_eq!(pl.len(), LENS[next as usize - 1]);
                    assert!(pl.iter().all(|b| *b == next as u8));
                    next += 1;
                });
                res.unwrap();
                if n == 0 {
                    ::loom::thread::yield_now();
                }
            }
            t.join().unwrap();
            drop(r);
        });
    }
}
