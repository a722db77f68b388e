//! [`Common`]: the few calls every holder of the engine shares — the [`Engine`] itself
//! (the facade) and the capabilities of the collectives ([`CollPort`]) and fault-tolerance
//! ([`FtPort`]) layers: the world communicator, the communicator and failure-table views,
//! one progress step, waiting for a request, withdrawing one. Declared once here, so none of
//! the three types repeats them; every call is static (the trait is only ever used on the
//! concrete types).

use crate::error::Result;
use crate::request::ReqId;
use crate::view::{CommView, FailureView};
use crate::{CollPort, CommId, Engine, FtPort, Status};

/// What the engine and the capabilities of the layers above it share.
pub trait Common {
    /// The world communicator (this process's job).
    fn world(&self) -> CommId;

    /// Communicator `c` as it stands here: rank, size, members, context, revocation, error
    /// scope, and its failed and acknowledged members ([`crate::Error::InvalidComm`] if `c`
    /// names no live communicator).
    fn comm(&self, c: CommId) -> Result<CommView<'_>>;

    /// The failure table: the world ranks known to have failed, in order of detection.
    fn failures(&self) -> FailureView<'_>;

    /// Make progress on every transport once; returns how many events happened (messages,
    /// and failures learned: a wait loop that just learned of one looks at its request before
    /// it yields the core).
    fn progress(&mut self) -> usize;

    /// Wait for `id` to complete. While it waits, the message that completes `id` ends the
    /// poll it arrives in. Not from an activity or a message handler.
    fn wait(&mut self, id: ReqId) -> Result<Status>;

    /// Withdraw a request that has not started moving data: a posted receive that has not
    /// matched, or an eager send still queued for transport space. Returns true if it was
    /// cancelled (and freed); false if it is already under way or done (wait for it).
    fn cancel(&mut self, id: ReqId) -> Result<bool>;
}

impl Common for Engine {
    #[inline]
    fn world(&self) -> CommId {
        self.core.world
    }

    #[inline]
    fn comm(&self, c: CommId) -> Result<CommView<'_>> {
        self.core.comm_view(c)
    }

    #[inline]
    fn failures(&self) -> FailureView<'_> {
        FailureView::new(&self.core.failed)
    }

    #[inline]
    fn progress(&mut self) -> usize {
        Engine::progress(self)
    }

    #[inline]
    fn wait(&mut self, id: ReqId) -> Result<Status> {
        Engine::wait(self, id)
    }

    #[inline]
    fn cancel(&mut self, id: ReqId) -> Result<bool> {
        Engine::cancel(self, id)
    }
}

/// The two capabilities are the engine under another type (`repr(transparent)`).
macro_rules! common_through_engine {
    ($t:ty) => {
        impl Common for $t {
            #[inline]
            fn world(&self) -> CommId {
                self.0.core.world
            }

            #[inline]
            fn comm(&self, c: CommId) -> Result<CommView<'_>> {
                self.0.core.comm_view(c)
            }

            #[inline]
            fn failures(&self) -> FailureView<'_> {
                FailureView::new(&self.0.core.failed)
            }

            #[inline]
            fn progress(&mut self) -> usize {
                self.0.progress()
            }

            #[inline]
            fn wait(&mut self, id: ReqId) -> Result<Status> {
                self.0.wait(id)
            }

            #[inline]
            fn cancel(&mut self, id: ReqId) -> Result<bool> {
                self.0.cancel(id)
            }
        }
    };
}

common_through_engine!(CollPort);
common_through_engine!(FtPort);
