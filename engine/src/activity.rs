//! What the layers above the engine plug in: [`Activity`], a state machine advanced by every
//! progress call (a non-blocking collective's schedule, a detector's timer, an agreement),
//! given the capability of its layer ([`crate::CollPort`] or [`crate::FtPort`]); and the tags
//! they may use on a communicator's internal context. Activities and message handlers run
//! outside the transport poll; they must not block (no `wait`), because a blocked activity
//! would stop the others.

/// What an activity reports after one advance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep advancing it on later progress calls.
    Continue,
    /// Finished: drop it.
    Done,
}

/// A state machine advanced by the progress engine through the capability `P` of its layer.
pub trait Activity<P: ?Sized> {
    /// Make whatever progress is possible now, without blocking.
    fn advance(&mut self, e: &mut P) -> Step;
}

/// First tag upper layers may use on a communicator's internal context: tags below
/// [`FIRST_EXT_TAG`] there are the engine's own (barrier, communicator creation), those from
/// [`FIRST_EXT_TAG`] to this one fixed tags of upper-layer protocols other than the
/// collectives, which use the tags from here on.
pub const FIRST_COLL_TAG: i32 = 16;

/// First of the fixed tags (below [`FIRST_COLL_TAG`]) an upper layer other than the
/// collectives may use on a communicator's internal context, one per protocol.
pub const FIRST_EXT_TAG: i32 = 8;
