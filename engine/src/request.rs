//! The request table: every pending non-blocking operation is one slot here.
//!
//! Handles carry a generation so that a completed (freed) or forged handle is reported as
//! `InvalidRequest` instead of aliasing a newer request.

use crate::buffer::UserBuf;
use crate::error::Error;
use crate::transport::RKey;
use crate::{CommId, Status};

/// Handle to a pending operation, returned by `isend` / `irecv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReqId(u64);

// One u64 (generation << 32 | slot), not two u32 fields: a handle returned through memory
// (inside a `Result`) is then written and read as one 8-byte word. With two fields the
// caller's 8-byte load of the two 4-byte stores could not be store-forwarded, a stall on
// every send and receive a collective posts.
impl ReqId {
    #[inline]
    fn new(slot: u32, gen: u32) -> ReqId {
        ReqId(((gen as u64) << 32) | slot as u64)
    }
    #[inline]
    fn slot(self) -> usize {
        self.0 as u32 as usize
    }
    #[inline]
    fn gen(self) -> u32 {
        (self.0 >> 32) as u32
    }
    /// Pack into one integer (for the C ABI).
    pub fn to_raw(self) -> u64 {
        self.0
    }
    /// Unpack from [`ReqId::to_raw`]; validity is checked on use.
    pub fn from_raw(raw: u64) -> ReqId {
        ReqId(raw)
    }
}

/// How a receive started by [`crate::CollPort::irecv_coll_opt`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvStart {
    /// Matched at once by a message that was already here: complete, no request.
    Done(Status),
    /// Pending: wait for this request.
    Pending(ReqId),
}

impl RecvStart {
    /// The request of a receive posted with a request wanted (`want_req`), which is always
    /// `Pending`.
    pub(crate) fn pending(self) -> ReqId {
        match self {
            RecvStart::Pending(id) => id,
            RecvStart::Done(_) => unreachable!("a receive that wants a request always gets one"),
        }
    }
}

#[derive(Debug)]
pub(crate) enum Phase {
    /// Send waiting in the per-destination queue for ring space (eager or RTS not yet sent).
    SendQueued,
    /// Rendezvous send: RTS sent, waiting for the receiver's FIN.
    SendAwaitFin { key: RKey },
    /// Receive posted, not matched yet.
    RecvPosted,
    /// Rendezvous receive matched; the transport read is in flight (asynchronous transports).
    RecvGetting { status: Status },
    /// Split rendezvous receive: the head is read, the sender writes the tail; completed by
    /// its PUT_DONE, or by the failure of `peer` (its world rank). The rest of its state is
    /// in the split's table (`SplitTodo::awaiting`): a phase that holds no heap data and no
    /// larger than the others keeps requests small and their drop trivial on the path of
    /// every small message (a slab insert by `memcpy` and an out-of-line drop of the old
    /// phase otherwise).
    RecvAwaitPut { peer: u32 },
    /// An operation of an upper layer (a non-blocking collective, an agreement): completed by
    /// [`crate::CollPort::complete_request`] / [`crate::FtPort::complete_request`].
    Generic,
    /// Finished; the result waits for test/wait.
    Done(Result<Status, Error>),
}

// Every small message inserts a request and overwrites its phase: no phase may be larger
// than the completed one's result.
const _: () = assert!(std::mem::size_of::<Phase>() <= std::mem::size_of::<Result<Status, Error>>());

#[derive(Debug)]
pub(crate) struct Req {
    pub(crate) comm: CommId,
    /// World rank of the peer for sends and specific-source receives; `u32::MAX` for ANY_SOURCE.
    pub(crate) peer_world: u32,
    /// Communicator rank of the peer, or `ANY_SOURCE` (-1) for wildcard receives.
    pub(crate) peer: i32,
    pub(crate) tag: i32,
    pub(crate) buf: UserBuf,
    pub(crate) is_send: bool,
    pub(crate) phase: Phase,
}

struct Slot {
    gen: u32,
    req: Option<Req>,
}

/// Slab of requests with generation-checked handles.
#[derive(Default)]
pub(crate) struct Requests {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
}

impl Requests {
    #[inline(always)]
    pub(crate) fn insert(&mut self, req: Req) -> ReqId {
        self.live += 1;
        if let Some(slot) = self.free.pop() {
            let s = &mut self.slots[slot as usize];
            s.req = Some(req);
            ReqId::new(slot, s.gen)
        } else {
            self.slots.push(Slot { gen: 1, req: Some(req) });
            ReqId::new((self.slots.len() - 1) as u32, 1)
        }
    }

    pub(crate) fn get(&self, id: ReqId) -> Option<&Req> {
        let s = self.slots.get(id.slot())?;
        if s.gen != id.gen() {
            return None;
        }
        s.req.as_ref()
    }

    pub(crate) fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        let s = self.slots.get_mut(id.slot())?;
        if s.gen != id.gen() {
            return None;
        }
        s.req.as_mut()
    }

    pub(crate) fn remove(&mut self, id: ReqId) -> Option<Req> {
        let s = self.slots.get_mut(id.slot())?;
        if s.gen != id.gen() || s.req.is_none() {
            return None;
        }
        s.gen = s.gen.wrapping_add(1).max(1);
        self.free.push(id.slot() as u32);
        self.live -= 1;
        s.req.take()
    }

    /// Number of requests not yet freed.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Whether some live request satisfies `f` (a scan of the slab: not for small messages).
    pub(crate) fn any(&self, mut f: impl FnMut(&Req) -> bool) -> bool {
        self.slots.iter().any(|s| s.req.as_ref().is_some_and(&mut f))
    }

    /// Visit every live request, read-only (diagnostics).
    pub(crate) fn for_each(&self, mut f: impl FnMut(ReqId, &Req)) {
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(r) = s.req.as_ref() {
                f(ReqId::new(i as u32, s.gen), r);
            }
        }
    }

    /// Visit every live request (slow path: failure sweeps).
    pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(ReqId, &mut Req)) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Some(r) = s.req.as_mut() {
                f(ReqId::new(i as u32, s.gen), r);
            }
        }
    }
}
