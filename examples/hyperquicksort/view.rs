//! View sources: who runs the next step of the sort. A view is the sorted list of member
//! world ranks and a communicator holding them: either one of the members alone (rank k is
//! member k) or the world (rank = world rank). At the end of every step each
//! member reports its local outcome; the source answers, identically at every member, whether
//! the step is committed, and replaces the view when it is not.
//!
//! [`CrashSource`] recovers crashes only (ULFM): the members agree on the outcome of each step,
//! and after a failed one a shrink gives the next view.

use std::cell::RefCell;

use weft::{Comm, Weft};

/// What a failed transfer does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OnFault {
    /// Revoke the communicator (every member's pending operations end) and fail the step.
    Revoke,
    /// Keep the communicator: finish the step with empty lists in place of what did not arrive
    /// (every live member still sends and receives everything the step planned, so nobody
    /// waits for a peer that gave up), and fail it at its end.
    Finish,
}

/// The members of the current step and their communicator.
pub struct View {
    pub members: Vec<u32>,
    pub comm: Comm,
    /// True when `comm` is the world (rank = world rank), false when rank k is member k.
    pub world_ranks: bool,
    pub on_fault: OnFault,
    /// With [`OnFault::Finish`]: the first error of the step, reported at its end.
    pub fault: RefCell<Option<weft::Error>>,
}

impl View {
    /// The communicator rank of member `w`.
    pub fn rank_of(&self, w: u32) -> u32 {
        if self.world_ranks {
            w
        } else {
            self.members.binary_search(&w).expect("messages go only to members of the view") as u32
        }
    }

    /// A failed communication: revoke and fail, or remember the error and carry on.
    pub fn fault(&self, e: weft::Error) -> weft::Result<()> {
        match self.on_fault {
            OnFault::Revoke => {
                let _ = self.comm.revoke();
                Err(e)
            }
            OnFault::Finish => {
                self.fault.borrow_mut().get_or_insert(e);
                Ok(())
            }
        }
    }

    /// End of a step's work: its first remembered error, if any.
    pub fn outcome<T>(&self, r: weft::Result<T>) -> weft::Result<T> {
        match self.fault.borrow_mut().take() {
            Some(e) => Err(e),
            None => r,
        }
    }

    fn on_members(members: Vec<u32>, comm: Comm, on_fault: OnFault) -> View {
        View { members, comm, world_ranks: false, on_fault, fault: RefCell::new(None) }
    }
}

/// Decides, uniformly, whether a step is committed, and supplies the views.
pub trait ViewSource {
    fn view(&self) -> &View;
    /// End of a step with this member's outcome: `Ok(true)` = committed at every member;
    /// `Ok(false)` = retry on the (new) view; `Err` = the source itself cannot go on.
    fn end_step(&mut self, ok: bool) -> Result<bool, String>;
    /// How many times the view changed.
    fn changes(&self) -> u32;
    /// Processes every member agrees are alive, sorted (at least the view's members).
    fn alive(&self) -> Vec<u32> {
        self.view().members.clone()
    }
    /// After the last step.
    fn finish(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The member list of `comm`: every member's world rank, gathered.
fn members_of(comm: &Comm, me: u32) -> weft::Result<Vec<u32>> {
    let mut all = vec![0u32; comm.size() as usize];
    comm.allgather(&[me], &mut all)?;
    if !all.windows(2).all(|p| p[0] < p[1]) {
        return Err(
            weft::EngineError::InvalidArg(format!("communicator ranks not in world order: {all:?}")).into()
        );
    }
    Ok(all)
}

/// Crash-only recovery by agree + shrink, with failed steps either revoking the communicator
/// ([`OnFault::Revoke`], the ULFM pattern) or running to their end ([`OnFault::Finish`]).
pub struct CrashSource {
    me: u32,
    on_fault: OnFault,
    view: View,
    changes: u32,
}

/// Shrinks in a row before giving up (each one loses at least one more member).
const MAX_SHRINKS: u32 = 64;

impl CrashSource {
    pub fn new(w: &Weft, on_fault: OnFault) -> Result<CrashSource, String> {
        let me = w.world().rank();
        let comm = w.world().dup().map_err(|e| format!("dup: {e}"))?;
        let members = members_of(&comm, me).map_err(|e| format!("allgather: {e}"))?;
        Ok(CrashSource { me, on_fault, view: View::on_members(members, comm, on_fault), changes: 0 })
    }

    fn shrink(&mut self) -> Result<(), String> {
        for _ in 0..MAX_SHRINKS {
            if self.on_fault == OnFault::Revoke {
                let _ = self.view.comm.revoke();
            }
            let comm = self.view.comm.shrink().map_err(|e| format!("shrink: {e}"))?;
            match members_of(&comm, self.me) {
                Ok(members) => {
                    self.view = View::on_members(members, comm, self.on_fault);
                    self.changes += 1;
                    return Ok(());
                }
                // Another member failed while the new view was being learnt: shrink again.
                Err(_) => self.view.comm = comm,
            }
        }
        Err(format!("no stable view after {MAX_SHRINKS} shrinks"))
    }
}

impl ViewSource for CrashSource {
    fn view(&self) -> &View {
        &self.view
    }

    fn end_step(&mut self, ok: bool) -> Result<bool, String> {
        if !ok && self.on_fault == OnFault::Revoke {
            let _ = self.view.comm.revoke();
        }
        if let Ok(1) = self.view.comm.agree(u64::from(ok)) {
            return Ok(true);
        }
        self.shrink()?;
        Ok(false)
    }

    fn changes(&self) -> u32 {
        self.changes
    }
}

/// Views of recommended processes: the diagnosis (DGRP) runs in the engine; the round barrier
/// between two steps gives the view every process uses next. Steps run on the world
/// communicator and run to their end after a fault ([`OnFault::Finish`]); the outcome is agreed
/// over the world (members and non-members alike, so a process that left and comes back has
/// followed every commit). Without rejoin, a process that left once gets no more work.
pub struct DgrpSource<'w> {
    w: &'w Weft,
    view: View,
    rejoin: bool,
    /// Processes that left the view once (kept out when `rejoin` is off).
    left: std::collections::BTreeSet<u32>,
    /// Agreed alive processes (from the last successful outcome agreement).
    alive: Vec<u32>,
    changes: u32,
}

/// Worlds up to this size agree on who is alive along with each step's outcome (one bit per
/// rank beside the outcome bit of the agreement's word); larger ones take only members' lists.
const ALIVE_BITS: u32 = 63;

impl<'w> DgrpSource<'w> {
    pub fn new(w: &'w Weft, opts: weft::DgrpOptions, rejoin: bool) -> Result<DgrpSource<'w>, String> {
        w.dgrp_start(opts).map_err(|e| format!("dgrp_start: {e}"))?;
        let members = w.dgrp_round_barrier().map_err(|e| format!("round barrier: {e}"))?;
        let view = View {
            members,
            comm: w.world(),
            world_ranks: true,
            on_fault: OnFault::Finish,
            fault: RefCell::new(None),
        };
        let alive = view.members.clone();
        Ok(DgrpSource { w, view, rejoin, left: Default::default(), alive, changes: 0 })
    }
}

impl ViewSource for DgrpSource<'_> {
    fn view(&self) -> &View {
        &self.view
    }

    fn end_step(&mut self, ok: bool) -> Result<bool, String> {
        let world = &self.view.comm;
        // A crash known here must not fail the agreement itself; one not yet known everywhere
        // fails it uniformly (the step is then retried).
        let _ = world.ack_failed();
        // One agreement: bit 63 = every member succeeded, bit r = nobody knows rank r failed.
        let n = world.size();
        let failed = self.w.failed_world_ranks();
        let mut word = u64::from(ok) << 63;
        for r in (0..n.min(ALIVE_BITS)).filter(|r| !failed.contains(r)) {
            word |= 1 << r;
        }
        let agreed = world.agree(word);
        let committed = matches!(agreed, Ok(v) if v >> 63 == 1);
        if let Ok(v) = agreed {
            if n <= ALIVE_BITS {
                self.alive = (0..n).filter(|r| v & (1 << r) != 0).collect();
            }
        }
        let barrier = self.w.dgrp_round_barrier().map_err(|e| format!("round barrier: {e}"))?;
        for &m in &self.view.members {
            if !barrier.contains(&m) {
                self.left.insert(m);
            }
        }
        let mut members: Vec<u32> =
            barrier.iter().copied().filter(|m| self.rejoin || !self.left.contains(m)).collect();
        if members.is_empty() {
            // Every recommended process left once: the recommended ones work again.
            members = barrier;
        }
        if members != self.view.members {
            self.changes += 1;
            self.view.members = members;
        }
        if n > ALIVE_BITS {
            self.alive = self.view.members.clone();
        }
        Ok(committed)
    }

    fn changes(&self) -> u32 {
        self.changes
    }

    fn alive(&self) -> Vec<u32> {
        self.alive.clone()
    }

    /// Stop the diagnosis (the last step ended with a round barrier).
    fn finish(&self) -> Result<(), String> {
        self.w.dgrp_stop().map_err(|e| format!("dgrp_stop: {e}"))
    }
}
