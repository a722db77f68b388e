//! The transport trait: the only thing the engine knows about the wire.
//!
//! A transport moves opaque `(Header, payload)` messages to a peer (named by world rank) in
//! FIFO order per peer, and offers single-copy reads of a peer's exposed memory for the
//! rendezvous protocol. The engine never names a concrete transport: the facade builds them
//! (`weft-shm`, later libfabric) and hands them to [`crate::Engine`] with a route table.

/// Copy `n` bytes from `src` to `dst`; up to 32 bytes inline, without a call into `memcpy`
/// (the common small message is a few bytes). A leaf the engine and the transports share:
/// the engine's receive side copies into user buffers with it, the shared-memory ring copies
/// a send's payload into its record with it (inlined; it reads no engine state).
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`].
#[inline(always)]
pub unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: every access below is within the first `n` bytes of `src` / `dst` (the pairs
    // of loads and stores overlap in the middle instead of reading past the end), which the
    // caller guarantees are valid and do not overlap; unaligned accesses are used throughout.
    unsafe {
        if n >= 16 {
            if n > 32 {
                std::ptr::copy_nonoverlapping(src, dst, n);
                return;
            }
            let a = (src as *const u128).read_unaligned();
            let b = (src.add(n - 16) as *const u128).read_unaligned();
            (dst as *mut u128).write_unaligned(a);
            (dst.add(n - 16) as *mut u128).write_unaligned(b);
        } else if n >= 8 {
            let a = (src as *const u64).read_unaligned();
            let b = (src.add(n - 8) as *const u64).read_unaligned();
            (dst as *mut u64).write_unaligned(a);
            (dst.add(n - 8) as *mut u64).write_unaligned(b);
        } else if n >= 4 {
            let a = (src as *const u32).read_unaligned();
            let b = (src.add(n - 4) as *const u32).read_unaligned();
            (dst as *mut u32).write_unaligned(a);
            (dst.add(n - 4) as *mut u32).write_unaligned(b);
        } else if n > 0 {
            let (a, b, c) = (*src, *src.add(n / 2), *src.add(n - 1));
            *dst = a;
            *dst.add(n / 2) = b;
            *dst.add(n - 1) = c;
        }
    }
}

/// Wire class of a message; the engine dispatches on it.
pub mod class {
    /// Point-to-point eager message: payload is the user data.
    pub const EAGER: u8 = 1;
    /// Rendezvous request-to-send: payload is `[sender request id: u64][RKey]`, `len` is the
    /// full message length.
    pub const RTS: u8 = 2;
    /// Rendezvous finish: the receiver has read the data; `len` holds the sender request id.
    pub const FIN: u8 = 3;
    /// The sender finalized: its exit that follows is not a failure.
    pub const BYE: u8 = 4;
    /// Answer to a BYE: everything the BYE's sender sent before it has been received.
    pub const BYE_ACK: u8 = 5;
    /// Split rendezvous, receiver to sender: write the tail of the message into the
    /// receiver's buffer. `len` holds the sender request id, `src` the tail's offset in 4 KiB
    /// pages; payload is `[receiver request id: u64][RKey of the receiver's tail]`.
    pub const CTS: u8 = 6;
    /// Split rendezvous, sender to receiver: the tail write is over; `len` holds the receiver
    /// request id, `flags` is 0 if the tail was written, 1 if it was not.
    pub const PUT_DONE: u8 = 7;
    /// First class number free for upper layers (collectives, fault tolerance).
    pub const FIRST_FREE: u8 = 16;
}

/// Compact header carried by every message (24 bytes, plain old data).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// One of [`class`].
    pub class: u8,
    /// Class-specific flags.
    pub flags: u8,
    /// Reserved, zero.
    pub reserved: u16,
    /// Communicator context id.
    pub ctx: u32,
    /// Sender's rank in the communicator.
    pub src: u32,
    /// Message tag.
    pub tag: i32,
    /// Payload length (eager), full message length (RTS) or class-specific value.
    pub len: u64,
}

impl Header {
    /// Size of the header on the wire.
    pub const SIZE: usize = std::mem::size_of::<Header>();

    /// The header as bytes, for transports that copy it into a ring or a packet.
    pub fn as_bytes(&self) -> &[u8; Self::SIZE] {
        // SAFETY: Header is repr(C), 24 bytes, made only of integers with no padding
        // (1+1+2+4+4+4+8), so every byte is initialised and any alignment-1 view is valid.
        unsafe { &*(self as *const Header as *const [u8; Self::SIZE]) }
    }

    /// Read a header from the first [`Header::SIZE`] bytes of `b` (unaligned read).
    /// Returns `None` if `b` is too short.
    pub fn from_bytes(b: &[u8]) -> Option<Header> {
        if b.len() < Self::SIZE {
            return None;
        }
        // SAFETY: the length was checked; every bit pattern is a valid Header (integers only);
        // read_unaligned has no alignment requirement.
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const Header) })
    }
}

/// Transport-defined description of exposed memory, sent inside an RTS.
/// Shared memory stores `(address, length)`; a network transport adds its registration key.
pub type RKey = [u8; 32];

/// Outcome of [`Transport::get`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetStatus {
    /// The data is in the destination buffer.
    Done,
    /// The read is in flight; its token will be reported by [`Transport::poll_gets`].
    Pending(u64),
}

/// Errors a transport reports to the engine.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer is known to be dead (the transport observed it).
    #[error("peer {0} is dead")]
    PeerDead(u32),
    /// A system or library call failed.
    #[error("{call} failed: {msg}")]
    Call { call: &'static str, msg: String },
    /// The request cannot be served by this transport.
    #[error("invalid transport request: {0}")]
    Invalid(String),
}

/// A message transport to a set of peers.
///
/// Contract: messages accepted by `try_send` to one peer are delivered by that peer's `poll`
/// in the order they were accepted, each exactly once, unless one of the two processes dies.
pub trait Transport {
    /// Short name for diagnostics ("shm", "ofi").
    fn name(&self) -> &'static str;

    /// Largest payload sent eagerly to a peer; larger messages go by rendezvous.
    fn eager_limit(&self) -> usize;

    /// Queue `(hdr, payload)` for `peer` (a world rank). `Ok(true)`: accepted, `payload` may
    /// be reused at once. `Ok(false)`: no room now; the engine retries after progress.
    /// `payload.len()` never exceeds `max(eager_limit(), 64)`.
    fn try_send(&mut self, peer: u32, hdr: &Header, payload: &[u8]) -> Result<bool, TransportError>;

    /// Hand received messages to `sink(peer_world_rank, header, payload)`, at most `budget`
    /// of them, in per-peer FIFO order; return how many were delivered. `payload` is valid only
    /// during the call.
    fn poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize;

    /// As [`Transport::poll`], but stop after a message for which `sink` returns `true`,
    /// without looking at the next one (the engine's progress loop: a message that completed
    /// or advanced an operation, which its caller may be waiting for). A shared-memory ring
    /// that reads ahead pays a cache-line transfer from the sender's core between that
    /// completion and the caller. The default delivers as `poll` does and ignores the answer.
    fn poll_until(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8]) -> bool) -> usize {
        self.poll(budget, &mut |r, h, p| {
            sink(r, h, p);
        })
    }

    /// Expose `len` bytes at `addr` to `peer` for a later [`Transport::get`]; describe them
    /// in the returned key.
    fn expose(&mut self, peer: u32, addr: *const u8, len: usize) -> Result<RKey, TransportError>;

    /// Withdraw an exposure made by [`Transport::expose`] (rendezvous finished or failed).
    fn unexpose(&mut self, peer: u32, key: &RKey);

    /// Read `len` bytes described by `key` (exposed by `peer`) into `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes until the read is reported done, and
    /// must not be read or written by anyone else meanwhile.
    unsafe fn get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError>;

    /// Smallest rendezvous message both sides copy (a split rendezvous: the receiver reads
    /// the head while the sender writes the tail with [`Transport::put`]); `usize::MAX` (the
    /// default) never splits. A transport that splits completes [`Transport::get`] at once
    /// (never `Pending`).
    fn split_limit(&self) -> usize {
        usize::MAX
    }

    /// Write `len` bytes from `src` into the memory described by `key` (exposed by `peer`).
    /// Only transports with a [`Transport::split_limit`] implement it.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes during the call.
    unsafe fn put(
        &mut self,
        peer: u32,
        key: &RKey,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let _ = (peer, key, src, len);
        Err(TransportError::Invalid(format!("{} has no put", self.name())))
    }

    /// Append the tokens of reads that completed since the last call (asynchronous transports).
    fn poll_gets(&mut self, done: &mut Vec<(u64, Result<(), TransportError>)>) {
        let _ = done;
    }

    /// Slow path, called periodically by the engine (not per message): append peers this
    /// transport has seen die (connection loss, pidfd hang-up). Each peer reported once.
    fn poll_failures(&mut self, out: &mut Vec<u32>);
}
