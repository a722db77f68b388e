//! Communicators in the core: the world, rank, size and group of a communicator, duplicate,
//! split, create from a group, free; and creation from a context id that an upper layer
//! agreed on: what a front end needs to build communicators the engine's own collectives
//! cannot (intercommunicators, whose two groups share no communicator yet). The agreement
//! itself is the caller's: every member contributes [`OpsCore::next_ctx`], the maximum over
//! all members ([`OpsCore::max_u32`]) is unused at each of them; a leader's record reaches its
//! group with [`OpsCore::bcast_bytes`].

use weft_coll::{DType, Kind, Op, Spec};
use weft_engine::{CommId, Common, Communicators, Contexts};

use super::{EngineResult, OpsCore};

impl OpsCore {
    /// The communicator of every process of the job.
    pub fn world(&self) -> CommId {
        self.engine.borrow().world()
    }

    /// This process's rank in `c`.
    pub fn comm_rank(&self, c: CommId) -> EngineResult<u32> {
        self.eng()?.comm(c).map(|v| v.rank())
    }

    /// The world ranks of `c`'s members, in rank order.
    pub fn comm_group(&self, c: CommId) -> EngineResult<Vec<u32>> {
        Ok(self.eng()?.comm(c)?.members().to_vec())
    }

    /// Number of ranks of `c`.
    pub fn comm_size(&self, c: CommId) -> EngineResult<u32> {
        self.eng()?.comm(c).map(|v| v.size())
    }

    /// Duplicate `c` (collective over `c`).
    pub fn comm_dup(&self, c: CommId) -> EngineResult<CommId> {
        Communicators::of(&mut *self.eng()?).dup(c)
    }

    /// Split `c` by `color` (or `UNDEFINED`: no communicator), ranks ordered by `key`.
    pub fn comm_split(&self, c: CommId, color: i32, key: i32) -> EngineResult<Option<CommId>> {
        Communicators::of(&mut *self.eng()?).split(c, color, key)
    }

    /// A communicator of the ranks `members` of `c` (in that order), created by those members
    /// only; `tag` separates concurrent creations over overlapping groups.
    pub fn comm_create_group(&self, c: CommId, members: &[u32], tag: i32) -> EngineResult<CommId> {
        Communicators::of(&mut *self.eng()?).create_group(c, members, tag)
    }

    /// Free `c`; receives still posted on it complete with `InvalidComm`.
    pub fn comm_free(&self, c: CommId) -> EngineResult<()> {
        Communicators::of(&mut *self.eng()?).free(c)
    }

    /// This process's next free context id (its contribution to a context agreement).
    pub fn next_ctx(&self) -> EngineResult<u32> {
        Ok(Contexts::of_ref(&*self.eng()?).next())
    }

    /// Create a communicator of the world ranks `members` (in rank order) on context `ctx`,
    /// which every member computed alike and which is unused at each (the maximum of their
    /// [`OpsCore::next_ctx`]). This process must be a member.
    pub fn comm_create_agreed(&self, ctx: u32, members: Vec<u32>) -> EngineResult<CommId> {
        Contexts::of(&mut *self.eng()?).create_agreed(ctx, members)
    }

    /// Blocking `u32` maximum over `c` (a context agreement).
    pub fn max_u32(&self, c: CommId, v: u32) -> EngineResult<u32> {
        let (mine, mut out) = (v, 0u32);
        let mut spec = Spec::new(Kind::Allreduce, DType::U32);
        spec.send = (&mine as *const u32).cast();
        spec.recv = (&mut out as *mut u32).cast();
        spec.count = 1;
        spec.send_len = 4;
        spec.recv_len = 4;
        spec.op = Some(Op::Max);
        // SAFETY: both buffers are locals that outlive the blocking call.
        unsafe { self.run(c, &spec)? };
        Ok(out)
    }

    /// Blocking broadcast of `buf` from `root` over `c` (a leader's record).
    pub fn bcast_bytes(&self, c: CommId, buf: &mut [u8], root: u32) -> EngineResult<()> {
        let mut spec = Spec::new(Kind::Bcast, DType::Byte);
        spec.recv = buf.as_mut_ptr();
        spec.recv_len = buf.len();
        spec.count = buf.len();
        spec.root = root;
        // SAFETY: `buf` outlives the blocking call.
        unsafe { self.run(c, &spec) }
    }
}
