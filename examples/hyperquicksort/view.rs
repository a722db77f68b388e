//! View sources: who runs the next step of the sort. A view is the sorted list of member
//! world ranks and a communicator whose rank k is member k. At the end of every step each
//! member reports its local outcome; the source answers, identically at every member, whether
//! the step is committed, and replaces the view when it is not.
//!
//! [`CrashSource`] recovers crashes only (ULFM): a failed step revokes the communicator, the
//! members agree on the outcome, and a shrink gives the next view.

use weft::{Comm, Weft};

/// The members of the current step and their communicator.
pub struct View {
    pub members: Vec<u32>,
    pub comm: Comm,
}

/// Decides, uniformly, whether a step is committed, and supplies the views.
pub trait ViewSource {
    fn view(&self) -> &View;
    /// End of a step with this member's outcome: `Ok(true)` = committed at every member;
    /// `Ok(false)` = retry on the (new) view; `Err` = the source itself cannot go on.
    fn end_step(&mut self, ok: bool) -> Result<bool, String>;
    /// How many times the view changed.
    fn changes(&self) -> u32;
}

/// The member list of `comm`: every member's world rank, gathered.
fn members_of(comm: &Comm, me: u32) -> weft::Result<Vec<u32>> {
    let mut all = vec![0u32; comm.size() as usize];
    comm.allgather(&[me], &mut all)?;
    Ok(all)
}

/// Crash-only recovery by revoke + agree + shrink.
pub struct CrashSource {
    me: u32,
    view: View,
    changes: u32,
}

/// Shrinks in a row before giving up (each one loses at least one more member).
const MAX_SHRINKS: u32 = 64;

impl CrashSource {
    pub fn new(w: &Weft) -> Result<CrashSource, String> {
        let me = w.world().rank();
        let comm = w.world().dup().map_err(|e| format!("dup: {e}"))?;
        let members = members_of(&comm, me).map_err(|e| format!("allgather: {e}"))?;
        Ok(CrashSource { me, view: View { members, comm }, changes: 0 })
    }

    fn shrink(&mut self) -> Result<(), String> {
        for _ in 0..MAX_SHRINKS {
            let _ = self.view.comm.revoke();
            let comm = self.view.comm.shrink().map_err(|e| format!("shrink: {e}"))?;
            match members_of(&comm, self.me) {
                Ok(members) => {
                    self.view = View { members, comm };
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
        if !ok {
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
