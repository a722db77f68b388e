//! Request completion in the core: wait and test one request, all or any of several, cancel,
//! complete a Rust scope's requests before its buffers go, and one explicit progress step.

use weft_engine::{Common, ReqId, Status};

use super::{EngineResult, OpsCore};
use crate::EngineError;

impl OpsCore {
    /// Block until `id` completes.
    #[inline]
    pub fn wait(&self, id: ReqId) -> EngineResult<Status> {
        self.eng()?.wait(id)
    }

    /// `Some(status)` once `id` completed, `None` while pending.
    #[inline]
    pub fn test(&self, id: ReqId) -> EngineResult<Option<Status>> {
        self.eng()?.test(id)
    }

    /// Withdraw a receive that has not matched (or a send not yet handed to a transport).
    pub fn cancel(&self, id: ReqId) -> EngineResult<bool> {
        self.eng()?.cancel(id)
    }

    /// Wait for every request; on error all have still completed and the first error is
    /// returned.
    pub fn wait_all(&self, ids: &[ReqId]) -> EngineResult<Vec<Status>> {
        self.eng()?.wait_all(ids)
    }

    /// Wait until one request completes: its index and status.
    pub fn wait_any(&self, ids: &[ReqId]) -> EngineResult<(usize, Status)> {
        self.eng()?.wait_any(ids)
    }

    /// If every request is complete, their statuses.
    pub fn test_all(&self, ids: &[ReqId]) -> EngineResult<Option<Vec<Status>>> {
        self.eng()?.test_all(ids)
    }

    /// Complete every request of `ids` before their buffers are released (the end of a Rust
    /// scope). A wildcard receive that cannot complete because of an unacknowledged failure is
    /// withdrawn instead.
    pub fn complete_all(&self, ids: &[ReqId]) {
        // A panic here is better than releasing buffers the engine may still write.
        let mut e = self.engine.borrow_mut();
        for &id in ids {
            while e.is_pending(id) {
                match e.wait(id) {
                    Err(EngineError::ProcFailedPending) => {
                        let _ = e.cancel(id);
                    }
                    _ => break,
                }
            }
        }
    }

    /// Keep only the ids of `ids` that are still pending.
    pub fn retain_pending(&self, ids: &mut Vec<ReqId>) {
        let e = self.engine.borrow();
        ids.retain(|&r| e.is_pending(r));
    }

    /// Run the progress engine once; how many events it handled.
    pub fn progress(&self) -> usize {
        self.engine.borrow_mut().progress()
    }
}
