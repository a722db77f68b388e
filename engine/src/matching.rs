//! Tag matching: posted receives and unexpected messages, per context id.
//!
//! MPI's rules: a message matches the *first* posted receive (in posting order) whose source
//! and tag accept it; a new receive matches the *first* unexpected message (in arrival order)
//! it accepts. Together with per-peer FIFO transports this gives non-overtaking order per
//! (source, communicator, tag). Queues are indexed by context id (dense small integers), so a
//! message that arrives before its communicator exists locally waits in its context's
//! unexpected queue until the communicator is created.

use std::collections::VecDeque;

use crate::request::ReqId;
use crate::transport::RKey;
use crate::{CommId, ANY_SOURCE, ANY_TAG};

/// Highest context id accepted off the wire; anything above is malformed.
pub(crate) const MAX_CTX: u32 = 1 << 22;

/// What an unexpected message carries.
#[derive(Debug)]
pub(crate) enum Arrived {
    /// Eager data, copied out of the transport.
    Eager(Vec<u8>),
    /// A rendezvous offer: the sender's request id and exposed memory.
    Rts { sreq: u64, key: RKey, len: u64 },
}

impl Arrived {
    pub(crate) fn len(&self) -> usize {
        match self {
            Arrived::Eager(v) => v.len(),
            Arrived::Rts { len, .. } => *len as usize,
        }
    }
}

/// A message that arrived before a matching receive was posted.
#[derive(Debug)]
pub(crate) struct Unexpected {
    pub(crate) src: u32,
    pub(crate) src_world: u32,
    pub(crate) tag: i32,
    pub(crate) data: Arrived,
}

/// A posted receive: what it accepts (source and tag packed in one word) and its request.
///
/// Two words, so it is passed to `VecDeque::push_back` (out of line) in two registers. As
/// three fields it went through the stack and was re-read 16 bytes at a time over narrower
/// stores: a store-forwarding stall, which waits for this core's earlier stores — when a
/// collective has just sent, its stores to the peer's ring lines — to reach the cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Posted {
    want: u64,
    pub(crate) req: ReqId,
}

impl Posted {
    #[inline(always)]
    pub(crate) fn new(src: i32, tag: i32, req: ReqId) -> Posted {
        Posted { want: (src as u32 as u64) | (tag as u32 as u64) << 32, req }
    }
    /// The source it accepts (a rank or `ANY_SOURCE`).
    #[inline(always)]
    pub(crate) fn src(&self) -> i32 {
        self.want as u32 as i32
    }
    /// The tag it accepts (a tag or `ANY_TAG`).
    #[inline(always)]
    pub(crate) fn tag(&self) -> i32 {
        (self.want >> 32) as u32 as i32
    }
}

#[derive(Default, Debug)]
pub(crate) struct CtxQueues {
    pub(crate) posted: VecDeque<Posted>,
    pub(crate) unexpected: VecDeque<Unexpected>,
    /// The communicator using this context, once created locally.
    pub(crate) comm: Option<CommId>,
    /// The communicator was freed: traffic on this context is dropped.
    pub(crate) retired: bool,
}

#[inline]
pub(crate) fn accepts(want_src: i32, want_tag: i32, src: u32, tag: i32) -> bool {
    (want_src == ANY_SOURCE || want_src as u32 == src) && (want_tag == ANY_TAG || want_tag == tag)
}

/// All context queues.
#[derive(Default)]
pub(crate) struct Matching {
    ctxs: Vec<CtxQueues>,
}

impl Matching {
    /// Queues of `ctx`, created on first use. `None` for a context id beyond [`MAX_CTX`].
    #[inline]
    pub(crate) fn ctx(&mut self, ctx: u32) -> Option<&mut CtxQueues> {
        if ctx >= MAX_CTX {
            return None;
        }
        let i = ctx as usize;
        if i >= self.ctxs.len() {
            self.ctxs.resize_with(i + 1, CtxQueues::default);
        }
        Some(&mut self.ctxs[i])
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &CtxQueues> {
        self.ctxs.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut CtxQueues> {
        self.ctxs.iter_mut()
    }
}

impl CtxQueues {
    /// Remove and return the first posted receive that accepts `(src, tag)`.
    #[inline]
    pub(crate) fn take_posted(&mut self, src: u32, tag: i32) -> Option<ReqId> {
        let i = self.posted.iter().position(|p| accepts(p.src(), p.tag(), src, tag))?;
        self.posted.remove(i).map(|p| p.req)
    }

    /// Remove and return the first unexpected message that `(want_src, want_tag)` accepts.
    pub(crate) fn take_unexpected(&mut self, want_src: i32, want_tag: i32) -> Option<Unexpected> {
        let i = self.unexpected.iter().position(|u| accepts(want_src, want_tag, u.src, u.tag))?;
        self.unexpected.remove(i)
    }

    /// The first unexpected message that `(want_src, want_tag)` accepts, left in place (probe).
    pub(crate) fn peek_unexpected(&self, want_src: i32, want_tag: i32) -> Option<&Unexpected> {
        self.unexpected.iter().find(|u| accepts(want_src, want_tag, u.src, u.tag))
    }
}
