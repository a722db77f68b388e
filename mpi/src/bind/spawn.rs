//! Dynamic processes: `MPI_Comm_spawn` and `MPI_Comm_get_parent`.
//!
//! The operations core starts the children as a new job of the launcher's universe and
//! builds the *union* communicator of parents and children (parents first, in the spawning
//! communicator's order, then the children in rank order) on a context id both sides agreed
//! on; this module wraps it as an intercommunicator (see `intercomm.rs`): for the parents the
//! remote group is the children, for the children (`MPI_Comm_get_parent`, made at init) the
//! parents. `MPI_Intercomm_merge` then works as on any intercommunicator.
//!
//! Spawning needs weft-run (it places spawned processes in its universe); under a runtime
//! that cannot (a singleton, PMI-2, Slurm's PMIx) `MPI_Comm_spawn` fails with
//! `MPI_ERR_SPAWN` and a message naming the runtime. `info` keys are ignored (the standard
//! lets an implementation do so). `MPI_Comm_spawn_multiple` is not implemented.

use std::ffi::{c_char, c_int};

use weft::ops::SpawnRequest;

use crate::abi::*;
use crate::bind::init::c_str;
use crate::error::{err, MpiResult};
use crate::obj::intercomm::Inter;
use crate::state::{Mpi, On};
use crate::{export, put};

impl Mpi {
    /// The parent handle, or `MPI_COMM_NULL` once the application freed it.
    fn parent_handle(&self) -> MPI_Comm {
        let h = self.parent().0.get();
        if h != MPI_COMM_NULL && self.comms().borrow().get(h).is_none() {
            self.parent().0.set(MPI_COMM_NULL);
        }
        self.parent().0.get()
    }
}

/// The root's arguments of a spawn.
///
/// # Safety
/// `command` a valid C string; `argv` `MPI_ARGV_NULL` or a NULL-terminated array of C strings.
unsafe fn request(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
) -> MpiResult<SpawnRequest> {
    // SAFETY: by the caller's contract.
    let command = unsafe { c_str(command, "command") }?;
    if command.is_empty() {
        return Err(err!(MPI_ERR_SPAWN, "MPI_Comm_spawn: the command is empty"));
    }
    if maxprocs <= 0 {
        return Err(err!(MPI_ERR_SPAWN, "MPI_Comm_spawn: maxprocs must be positive, not {maxprocs}"));
    }
    let mut args = Vec::new();
    if argv as usize != MPI_ARGV_NULL {
        for i in 0.. {
            // SAFETY: a NULL-terminated array (the caller's contract): reads stop at the NULL.
            let a = unsafe { *argv.add(i) };
            if a.is_null() {
                break;
            }
            // SAFETY: each entry is a C string.
            args.push(unsafe { c_str(a, "argv[i]") }?);
        }
    }
    Ok(SpawnRequest { command, args, maxprocs: maxprocs as u32, job_info: Vec::new() })
}

export! {
    /// `MPI_Comm_spawn`: collective over `comm`; `command`, `argv` and `maxprocs` are read at
    /// `root` only. `array_of_errcodes` (unless `MPI_ERRCODES_IGNORE`) gets one code per
    /// child: `MPI_SUCCESS` each, or the error of the spawn at the root.
    fn MPI_Comm_spawn / PMPI_Comm_spawn(
        command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, _info: MPI_Info, root: c_int,
        comm: MPI_Comm, intercomm: *mut MPI_Comm, array_of_errcodes: *mut c_int
    ) on On::Comm(comm);
    |m| {
        if intercomm.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `intercomm` is NULL"));
        }
        let c = m.comm(comm)?;
        if m.inter_of(comm)?.is_some() {
            return Err(err!(MPI_ERR_COMM, "MPI_Comm_spawn: an intercommunicator cannot spawn"));
        }
        let (me, n) = (m.core.comm_rank(c)?, m.core.comm_size(c)?);
        if root < 0 || root as u32 >= n {
            return Err(err!(MPI_ERR_ROOT, "invalid root {root}: the communicator has {n} ranks"));
        }
        let errcodes = |k: usize, code: c_int| {
            if array_of_errcodes as usize != MPI_ERRCODES_IGNORE {
                for i in 0..k {
                    // SAFETY: an array of `maxprocs` ints (the caller's contract); `k` is
                    // the root's maxprocs or the number of children started.
                    unsafe { *array_of_errcodes.add(i) = code };
                }
            }
        };
        // The root's own argument errors still go through the collective, so that the
        // other members learn them instead of waiting.
        let req = if me == root as u32 {
            // SAFETY: the root's arguments, as the standard requires them.
            Some(unsafe { request(command, argv, maxprocs) })
        } else {
            None
        };
        let bad_args = match &req {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        };
        let outcome = m.core.comm_spawn(c, root as u32, req.as_ref().and_then(|r| r.as_ref().ok()));
        let sp = match outcome {
            Ok(sp) => sp,
            Err(e) => {
                let e = bad_args.unwrap_or_else(|| e.into());
                if me == root as u32 && maxprocs > 0 {
                    errcodes(maxprocs as usize, e.class);
                }
                return Err(e);
            }
        };
        errcodes(sp.children as usize, MPI_SUCCESS);
        let h = m.new_comm(comm, sp.union);
        if let Some(o) = m.comms().borrow_mut().get_mut(h) {
            o.inter = Some(Inter { local_off: 0, local_size: sp.parents, remote_off: sp.parents, remote_size: sp.children });
        }
        // SAFETY: checked non-null.
        unsafe { put(intercomm, h, "intercomm") }
    }
}

export! {
    /// `MPI_Comm_get_parent`: the intercommunicator to the processes that spawned this one,
    /// or `MPI_COMM_NULL` (not spawned, or the handle was freed).
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut MPI_Comm) on On::NoObject;
    // SAFETY: output pointer from the caller (`put` checks it for NULL).
    |m| unsafe { put(parent, m.parent_handle(), "parent") }
}
