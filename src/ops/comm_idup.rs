//! Non-blocking communicator duplication (`MPI_Comm_idup`): the context-id agreement run as a
//! non-blocking collective on the parent, the new communicators installed when it completes.
//!
//! A blocking creation takes the maximum of the members' next free context ids, which is
//! unused at every member because none of them creates anything else meanwhile. A
//! non-blocking one cannot: while its agreement runs, a member may create other communicators,
//! and one of those could take the very id the agreement settles on. So at the start every
//! member reserves a window of ids from its next free one (its other creations take ids past
//! the window from then on) and contributes the window's bounds to an allreduce (maximum of
//! the starts, minimum of the ends), started on the parent like any non-blocking collective,
//! hence ordered with the parent's other collectives. Every id in the windows' intersection is
//! free at every member until the duplication installs its communicators there, at its first
//! ids. While a window is reserved, the engine keeps messages for its ids that arrive before
//! their communicator is installed (as it does for ids past the next free one): a faster
//! member may already use the duplicate. When the agreement is over, a member gives back the
//! rest of its window unless it created other communicators meanwhile; a duplication whose
//! agreement fails (a member died, the parent was revoked) leaves its window reserved, unused.
//!
//! The windows intersect unless some member's next free id lies a whole window ahead of
//! another's ([`WINDOW`] ids: that member was in that many more communicators); such a
//! duplication fails with `InvalidArg` at every member, saying so.

use weft_coll::{DType, Kind, Op, Spec};
use weft_engine::{CommId, Contexts, ReqId};

use super::{EngineResult, OpsCore};
use crate::EngineError;

/// Context ids each member reserves for one pending duplication (two per communicator).
pub const WINDOW: u32 = 1 << 14;

/// A duplication whose agreement is running: wait for [`PendingDup::request`], then install
/// the communicators with [`OpsCore::comm_idup_finish`]. It owns the agreement's buffers, so
/// it must live until the request completes.
pub struct PendingDup {
    req: ReqId,
    /// `[start, u32::MAX - end]` of this member's window, then the allreduce's result.
    bounds: Box<[u32; 4]>,
    members: Vec<u32>,
    comms: u32,
    end: u32,
}

impl PendingDup {
    /// The request of the agreement (waited for and tested like any core request).
    pub fn request(&self) -> ReqId {
        self.req
    }
}

impl OpsCore {
    /// Start duplicating `c` into `comms` communicators (the duplicate and any hidden ones it
    /// carries) without waiting for the other members: reserve this member's window of
    /// context ids and start the agreement on `c`.
    pub fn comm_idup_start(&self, c: CommId, comms: u32) -> EngineResult<PendingDup> {
        if comms == 0 || comms > WINDOW / 2 {
            return Err(EngineError::InvalidArg(format!("duplication into {comms} communicators")));
        }
        let members = self.comm_group(c)?;
        let (start, end) = Contexts::of(&mut *self.eng()?).reserve(WINDOW)?;
        let mut bounds = Box::new([start, u32::MAX - end, 0, 0]);
        let mut spec = Spec::new(Kind::Allreduce, DType::U32);
        spec.send = bounds.as_ptr().cast();
        // SAFETY: in bounds of the 4-element array.
        spec.recv = unsafe { bounds.as_mut_ptr().add(2) }.cast();
        spec.count = 2;
        spec.send_len = 8;
        spec.recv_len = 8;
        spec.op = Some(Op::Max);
        // SAFETY: both halves of `bounds` live on the heap in the returned `PendingDup`, which
        // its caller keeps until the request completes.
        match unsafe { self.start(c, &spec) } {
            Ok(req) => Ok(PendingDup { req, bounds, members, comms, end }),
            Err(e) => {
                Contexts::of(&mut *self.eng()?).release(end, start);
                Err(e)
            }
        }
    }

    /// Install the communicators of duplication `p`, whose request completed successfully:
    /// each has the parent's members in the parent's order, on the first ids the members'
    /// windows share.
    pub fn comm_idup_finish(&self, p: PendingDup) -> EngineResult<Vec<CommId>> {
        let first = p.bounds[2];
        let shared_end = u32::MAX - p.bounds[3];
        let mut e = self.eng()?;
        let ext = Contexts::of(&mut e);
        let Some(used) = first.checked_add(2 * p.comms).filter(|&u| u <= shared_end) else {
            ext.release(p.end, p.end);
            return Err(EngineError::InvalidArg(format!(
                "communicator duplication: the members' next free context ids lie more than {WINDOW} \
                 apart (some member is in that many more communicators than another)"
            )));
        };
        let made: EngineResult<Vec<CommId>> =
            (0..p.comms).map(|i| ext.create_agreed(first + 2 * i, p.members.clone())).collect();
        // Until now the window kept messages for these ids waiting; they are installed (or
        // failed to be), so the reservation ends.
        ext.release(p.end, used);
        made
    }
}
