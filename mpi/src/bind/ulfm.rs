//! The ULFM extensions (`mpi-ext.h`): revoke, agreement, shrink and failure acknowledgement
//! on MPI handles, over the operations core's fault-tolerance operations.
//!
//! The agreement works on an `int`: the core agrees on a 64-bit word, the int's 32 bits sit in
//! its low half (the high half is all ones, neutral for the AND). Failed processes are reported
//! as groups of world ranks, like every group in this library.

use std::ffi::c_int;

use weft::ops::CommId;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::obj::group::Group;
use crate::obj::request::{After, Req};
use crate::state::{Mpi, On};
use crate::{export, put};

/// An `int` flag as the core's agreement word.
fn word(flag: c_int) -> u64 {
    0xFFFF_FFFF_0000_0000 | flag as u32 as u64
}

/// The `int` an agreement word carries.
fn flag_of(w: u64) -> c_int {
    w as u32 as c_int
}

impl Mpi {
    /// A group of the world ranks of `ranks`, ranks of communicator `c`.
    fn group_of(&self, c: CommId, ranks: &[u32]) -> MpiResult<MPI_Group> {
        if ranks.is_empty() {
            return Ok(MPI_GROUP_EMPTY);
        }
        let members = self.core.comm_group(c)?;
        let world = ranks
            .iter()
            .map(|&r| members.get(r as usize).copied())
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| err!(MPI_ERR_INTERN, "failed rank outside its communicator"))?;
        Ok(self.groups().borrow_mut().insert(Group { ranks: world }))
    }
}

export! {
    /// `MPIX_Comm_revoke`: every pending and future operation on `comm` (at every member) fails
    /// with `MPIX_ERR_REVOKED`.
    fn MPIX_Comm_revoke / PMPIX_Comm_revoke(comm: MPI_Comm) on On::Comm(comm);
    |m| Ok(m.core.revoke(m.comm(comm)?)?)
}

export! {
    /// `MPIX_Comm_is_revoked`.
    fn MPIX_Comm_is_revoked / PMPIX_Comm_is_revoked(comm: MPI_Comm, flag: *mut c_int) on On::Comm(comm);
    |m| {
        let r = m.core.is_revoked(m.comm(comm)?)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(flag, r as c_int, "flag") }
    }
}

export! {
    /// `MPIX_Comm_agree`: `*flag` becomes the bitwise AND of the live members' flags; returns
    /// `MPIX_ERR_PROC_FAILED` (with the flag still agreed) when a member failed unacknowledged.
    fn MPIX_Comm_agree / PMPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int) on On::Comm(comm);
    |m| {
        if flag.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` is NULL"));
        }
        let c = m.comm(comm)?;
        // SAFETY: non-null in/out pointer from the caller.
        let mut w = word(unsafe { *flag });
        let r = m.core.agree(c, &mut w);
        // SAFETY: as above; the agreed value is delivered also with ProcFailed.
        unsafe { *flag = flag_of(w) };
        r.map_err(MpiErr::from)
    }
}

export! {
    /// `MPIX_Comm_iagree`: `*flag` holds the agreed value once the request completed.
    fn MPIX_Comm_iagree / PMPIX_Comm_iagree(comm: MPI_Comm, flag: *mut c_int, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        if flag.is_null() || request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `flag` or `request` is NULL"));
        }
        let c = m.comm(comm)?;
        let mut out = Box::new(0u64);
        // SAFETY: non-null pointer from the caller.
        let w = word(unsafe { *flag });
        let p: *mut u64 = &mut *out;
        // SAFETY: the box moves into the request's completion step and lives until then.
        let id = unsafe { m.core.iagree(c, w, p)? };
        let copy_out = move |_: &Mpi| -> MpiResult {
            // SAFETY: the application keeps `flag` valid until the request completes.
            unsafe { *flag = flag_of(*out) };
            Ok(())
        };
        let h = m.reqs().borrow_mut().insert(Req::Core { id, comm, after: After::Run(Box::new(copy_out)) });
        // SAFETY: checked non-null.
        unsafe { put(request, h, "request") }
    }
}

export! {
    /// `MPIX_Comm_shrink`: a new communicator of `comm`'s live members.
    fn MPIX_Comm_shrink / PMPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm) on On::Comm(comm);
    |m| {
        if newcomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
        }
        let id = m.core.shrink(m.comm(comm)?)?;
        let h = m.new_comm(comm, id);
        // SAFETY: checked non-null.
        unsafe { put(newcomm, h, "newcomm") }
    }
}

export! {
    /// `MPIX_Comm_ishrink`: `*newcomm` is set once the request completed.
    fn MPIX_Comm_ishrink / PMPIX_Comm_ishrink(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) on On::Comm(comm);
    |m| {
        if newcomm.is_null() || request.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` or `request` is NULL"));
        }
        let c = m.comm(comm)?;
        let mut out = Box::new(0u64);
        let p: *mut u64 = &mut *out;
        // SAFETY: the box moves into the request's completion step and lives until then.
        let id = unsafe { m.core.ishrink(c, p)? };
        let wrap = move |m: &Mpi| -> MpiResult {
            let h = m.new_comm(comm, CommId::from_raw(*out));
            // SAFETY: the application keeps `newcomm` valid until the request completes.
            unsafe { *newcomm = h };
            Ok(())
        };
        let h = m.reqs().borrow_mut().insert(Req::Core { id, comm, after: After::Run(Box::new(wrap)) });
        // SAFETY: checked non-null.
        unsafe { put(request, h, "request") }
    }
}

export! {
    /// `MPIX_Comm_failure_ack`: acknowledge the failures known now (wildcard receives and
    /// agreements stop reporting them).
    fn MPIX_Comm_failure_ack / PMPIX_Comm_failure_ack(comm: MPI_Comm) on On::Comm(comm);
    |m| {
        m.core.ack_failed(m.comm(comm)?)?;
        Ok(())
    }
}

export! {
    /// `MPIX_Comm_failure_get_acked`: the group of acknowledged failed processes.
    fn MPIX_Comm_failure_get_acked / PMPIX_Comm_failure_get_acked(comm: MPI_Comm, failedgrp: *mut MPI_Group) on On::Comm(comm);
    |m| {
        let c = m.comm(comm)?;
        let g = m.group_of(c, &m.core.get_acked(c)?)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(failedgrp, g, "failedgrp") }
    }
}

export! {
    /// `MPIX_Comm_get_failed`: the group of processes of `comm` known to have failed.
    fn MPIX_Comm_get_failed / PMPIX_Comm_get_failed(comm: MPI_Comm, failedgrp: *mut MPI_Group) on On::Comm(comm);
    |m| {
        let c = m.comm(comm)?;
        let g = m.group_of(c, &m.core.get_failed(c)?)?;
        // SAFETY: output pointer from the caller.
        unsafe { put(failedgrp, g, "failedgrp") }
    }
}

export! {
    /// `MPIX_Comm_ack_failed`: acknowledge the failures known now; `*num_acked` is how many are
    /// acknowledged. weft acknowledges every known failure at once, so `num_to_ack` only has to
    /// be at least 0 (asking for fewer than are known acknowledges them all too).
    fn MPIX_Comm_ack_failed / PMPIX_Comm_ack_failed(comm: MPI_Comm, num_to_ack: c_int, num_acked: *mut c_int) on On::Comm(comm);
    |m| {
        if num_to_ack < 0 {
            return Err(err!(MPI_ERR_ARG, "invalid num_to_ack {num_to_ack}"));
        }
        let c = m.comm(comm)?;
        let n = if num_to_ack == 0 { m.core.get_acked(c)?.len() } else { m.core.ack_failed(c)? };
        // SAFETY: output pointer from the caller.
        unsafe { put(num_acked, n as c_int, "num_acked") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_word_carries_the_int_and_is_neutral_above_it() {
        for f in [0, 1, -1, 0x5a5a, c_int::MIN, c_int::MAX] {
            assert_eq!(flag_of(word(f)), f);
            assert_eq!(flag_of(word(f) & word(-1)), f, "AND with all-ones keeps the flag");
        }
        assert_eq!(flag_of(word(0b1100) & word(0b1010)), 0b1000);
    }
}
