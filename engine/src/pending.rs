//! The engine's pending work between polls, as plain data: messages queued per destination
//! for transport space ([`Outgoing`]), matched rendezvous offers to read ([`RndvTodo`]),
//! asynchronous reads in flight ([`GetInFlight`]) and the split rendezvous' work
//! ([`SplitTodo`]). The protocols that fill and run them are `send.rs`, `rndv.rs` and
//! `split.rs`; nothing here names them.

use crate::buffer::UserBuf;
use crate::error::Error;
use crate::request::ReqId;
use crate::transport::{Header, RKey};
use crate::Status;

/// A message waiting for transport space, in per-destination FIFO order.
pub(crate) struct Outgoing {
    pub(crate) hdr: Header,
    pub(crate) body: Body,
    /// Eager sends complete when handed to the transport.
    pub(crate) complete: Option<ReqId>,
}

pub(crate) enum Body {
    User(UserBuf),
    Inline([u8; RTS_BODY], u8),
    Owned(Vec<u8>),
}

impl Body {
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Body::User(b) => b.as_slice(),
            Body::Inline(a, n) => &a[..*n as usize],
            Body::Owned(v) => v,
        }
    }
}

/// RTS payload: sender request id (8 bytes) + remote key.
pub(crate) const RTS_BODY: usize = 8 + std::mem::size_of::<RKey>();

/// A matched RTS whose data must be read.
pub(crate) struct RndvTodo {
    pub(crate) req: ReqId,
    pub(crate) peer_world: u32,
    pub(crate) sreq: u64,
    pub(crate) ctx: u32,
    pub(crate) key: RKey,
    pub(crate) len: usize,
    pub(crate) status: Status,
}

/// An asynchronous read in flight.
pub(crate) struct GetInFlight {
    pub(crate) token: u64,
    pub(crate) transport: usize,
    pub(crate) req: ReqId,
    pub(crate) peer_world: u32,
    pub(crate) sreq: u64,
    pub(crate) ctx: u32,
}

/// A CTS the sender must serve after the poll.
pub(crate) struct CtsTodo {
    pub(crate) peer: u32,
    pub(crate) ctx: u32,
    pub(crate) sreq: u64,
    pub(crate) rreq: u64,
    pub(crate) key: RKey,
    pub(crate) offset: usize,
}

/// A split receive waiting for its PUT_DONE (its request is in `Phase::RecvAwaitPut`).
pub(crate) struct Awaiting {
    pub(crate) req: ReqId,
    pub(crate) status: Status,
    /// The exposure of the tail, which the sender writes.
    pub(crate) key: RKey,
    /// Outcome of the head's read.
    pub(crate) head: Result<(), Error>,
    /// The sender's request id and the context of its FIN.
    pub(crate) sreq: u64,
    pub(crate) ctx: u32,
}

/// The split rendezvous' work after a poll (both sides), and its receives in progress.
#[derive(Default)]
pub(crate) struct SplitTodo {
    pub(crate) cts: Vec<CtsTodo>,
    /// `(peer, ctx, sender request)` of split receives completed by a PUT_DONE.
    pub(crate) fins: Vec<(u32, u32, u64)>,
    /// Split receives waiting for their PUT_DONE (a few at a time: a window of messages of at
    /// least the split limit).
    pub(crate) awaiting: Vec<Awaiting>,
}

impl SplitTodo {
    pub(crate) fn is_empty(&self) -> bool {
        self.cts.is_empty() && self.fins.is_empty()
    }
}
