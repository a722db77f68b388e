//! Communicators: the MPI object around an operations-core communicator id (its error
//! handler, name and attributes), the predefined `MPI_COMM_WORLD` and `MPI_COMM_SELF`, and
//! the communicator functions.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};

use weft::ops::CommId;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{looks_like, Kind, Table};
use crate::state::{call, Mpi, On};
use crate::{export, put};

/// One communicator as the application sees it.
pub(crate) struct CommObj {
    pub(crate) id: CommId,
    pub(crate) errhandler: MPI_Errhandler,
    pub(crate) name: String,
    /// Attribute values by keyval.
    pub(crate) attrs: HashMap<c_int, usize>,
    /// For an intercommunicator (`id` is then the union of both groups): the groups' places.
    pub(crate) inter: Option<crate::intercomm::Inter>,
}

impl CommObj {
    pub(crate) fn new(id: CommId, errhandler: MPI_Errhandler, name: impl Into<String>) -> CommObj {
        CommObj { id, errhandler, name: name.into(), attrs: HashMap::new(), inter: None }
    }
}

/// The predefined communicators and the created ones.
pub(crate) struct Comms {
    world: CommObj,
    self_: CommObj,
    table: Table<CommObj>,
}

impl Comms {
    pub(crate) fn new(world: CommObj, self_: CommObj) -> Comms {
        Comms { world, self_, table: Table::new(Kind::Comm) }
    }

    /// The communicator `h` names, if live.
    #[inline]
    pub(crate) fn get(&self, h: MPI_Comm) -> Option<&CommObj> {
        match h {
            MPI_COMM_WORLD => Some(&self.world),
            MPI_COMM_SELF => Some(&self.self_),
            _ => self.table.get(h),
        }
    }

    /// The communicator `h` names, mutably.
    pub(crate) fn get_mut(&mut self, h: MPI_Comm) -> Option<&mut CommObj> {
        match h {
            MPI_COMM_WORLD => Some(&mut self.world),
            MPI_COMM_SELF => Some(&mut self.self_),
            _ => self.table.get_mut(h),
        }
    }

    /// The core id of `h`, or `MPI_ERR_COMM` saying why not.
    #[inline]
    pub(crate) fn id(&self, h: MPI_Comm) -> MpiResult<CommId> {
        match self.get(h) {
            Some(c) => Ok(c.id),
            None => Err(invalid(h)),
        }
    }

    pub(crate) fn insert(&mut self, c: CommObj) -> MPI_Comm {
        self.table.insert(c)
    }

    pub(crate) fn remove(&mut self, h: MPI_Comm) -> Option<CommObj> {
        self.table.remove(h)
    }

    /// Every created communicator (finalize frees them).
    pub(crate) fn created(&self) -> Vec<MPI_Comm> {
        self.table.iter().map(|(h, _)| h).collect()
    }
}

/// The error for a handle that names no live communicator.
#[cold]
pub(crate) fn invalid(h: MPI_Comm) -> crate::error::MpiErr {
    if h == MPI_COMM_NULL {
        err!(MPI_ERR_COMM, "invalid communicator: MPI_COMM_NULL")
    } else if looks_like(Kind::Comm, h) {
        err!(MPI_ERR_COMM, "invalid communicator {h:#x}: already freed")
    } else {
        err!(MPI_ERR_COMM, "invalid communicator {h:#x}: not a communicator handle")
    }
}

impl Mpi {
    /// The core id of communicator handle `h`.
    #[inline]
    pub(crate) fn comm(&self, h: MPI_Comm) -> MpiResult<CommId> {
        self.comms.borrow().id(h)
    }

    /// Wrap a new core communicator made from `parent` (which it inherits the error handler
    /// of) in a handle.
    pub(crate) fn new_comm(&self, parent: MPI_Comm, id: CommId) -> MPI_Comm {
        let mut comms = self.comms.borrow_mut();
        let eh = comms.get(parent).map(|p| p.errhandler).unwrap_or(MPI_ERRORS_ARE_FATAL);
        comms.insert(CommObj::new(id, eh, ""))
    }
}

export! {
    /// `MPI_Comm_rank`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) {
        call("MPI_Comm_rank", On::Comm(comm), |m| {
            let mut r = m.core.comm_rank(m.comm(comm)?)?;
            if let Some(i) = m.inter_of(comm)? {
                r = i.local_rank(r);
            }
            // SAFETY: output pointer from the caller.
            unsafe { put(rank, r as c_int, "rank") }
        })
    }
}

export! {
    /// `MPI_Comm_size`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: MPI_Comm, size: *mut c_int) {
        call("MPI_Comm_size", On::Comm(comm), |m| {
            let mut n = m.core.comm_size(m.comm(comm)?)?;
            if let Some(i) = m.inter_of(comm)? {
                n = i.local_size;
            }
            // SAFETY: output pointer from the caller.
            unsafe { put(size, n as c_int, "size") }
        })
    }
}

export! {
    /// `MPI_Comm_dup`: a new communicator over the same group (collective).
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_dup", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let id = m.core.comm_dup(m.comm(comm)?)?;
            let h = m.new_comm(comm, id);
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

export! {
    /// `MPI_Comm_split`: one new communicator per color (`MPI_UNDEFINED`: `MPI_COMM_NULL`).
    fn MPI_Comm_split / PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_split", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            if color < 0 && color != MPI_UNDEFINED {
                return Err(err!(MPI_ERR_ARG, "invalid color {color}: colors are >= 0 or MPI_UNDEFINED"));
            }
            let c = if color == MPI_UNDEFINED { weft::UNDEFINED } else { color };
            let h = match m.core.comm_split(m.comm(comm)?, c, key)? {
                Some(id) => m.new_comm(comm, id),
                None => MPI_COMM_NULL,
            };
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

export! {
    /// `MPI_Comm_free`: frees the communicator and sets the handle to `MPI_COMM_NULL`.
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut MPI_Comm) {
        call("MPI_Comm_free", On::NoObject, |m| {
            if comm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `comm` is NULL"));
            }
            // SAFETY: non-null in/out pointer from the caller.
            let h = unsafe { *comm };
            if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
                return Err(err!(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed"));
            }
            let id = m.comm(h)?;
            m.core.comm_free(id)?;
            m.comms.borrow_mut().remove(h);
            // SAFETY: as above.
            unsafe { *comm = MPI_COMM_NULL };
            Ok(())
        })
    }
}

export! {
    /// `MPI_Comm_set_name`.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: MPI_Comm, name: *const c_char) {
        call("MPI_Comm_set_name", On::Comm(comm), |m| {
            // SAFETY: NUL-terminated string from the caller, checked for null.
            let s = unsafe { crate::init::c_str(name, "comm_name")? };
            let mut comms = m.comms.borrow_mut();
            let c = comms.get_mut(comm).ok_or_else(|| invalid(comm))?;
            c.name = s.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
            Ok(())
        })
    }
}

export! {
    /// `MPI_Comm_get_name`: the name set, or `MPI_COMM_WORLD` / `MPI_COMM_SELF` for those.
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: MPI_Comm, name: *mut c_char, len: *mut c_int) {
        call("MPI_Comm_get_name", On::Comm(comm), |m| {
            let comms = m.comms.borrow();
            let c = comms.get(comm).ok_or_else(|| invalid(comm))?;
            let s = match (comm, c.name.is_empty()) {
                (MPI_COMM_WORLD, true) => "MPI_COMM_WORLD",
                (MPI_COMM_SELF, true) => "MPI_COMM_SELF",
                _ => &c.name,
            };
            // SAFETY: the caller provides MPI_MAX_OBJECT_NAME bytes at `name`.
            unsafe { crate::init::write_str(name, len, s, MPI_MAX_OBJECT_NAME as usize) }
        })
    }
}

export! {
    /// `MPI_Comm_compare`: `MPI_IDENT` (same handle), `MPI_CONGRUENT` (same ranks in the same
    /// order), `MPI_SIMILAR` (same ranks), `MPI_UNEQUAL`.
    fn MPI_Comm_compare / PMPI_Comm_compare(a: MPI_Comm, b: MPI_Comm, result: *mut c_int) {
        call("MPI_Comm_compare", On::Comm(a), |m| {
            let (ia, ib) = (m.comm(a)?, m.comm(b)?);
            let r = if a == b {
                MPI_IDENT
            } else {
                let (ga, gb) = (m.core.comm_group(ia)?, m.core.comm_group(ib)?);
                if ga == gb {
                    MPI_CONGRUENT
                } else {
                    let (mut sa, mut sb) = (ga.clone(), gb.clone());
                    sa.sort_unstable();
                    sb.sort_unstable();
                    if sa == sb { MPI_SIMILAR } else { MPI_UNEQUAL }
                }
            };
            // SAFETY: output pointer from the caller.
            unsafe { put(result, r, "result") }
        })
    }
}

export! {
    /// `MPI_Comm_test_inter`.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) {
        call("MPI_Comm_test_inter", On::Comm(comm), |m| {
            let inter = m.inter_of(comm)?.is_some();
            // SAFETY: output pointer from the caller.
            unsafe { put(flag, inter as c_int, "flag") }
        })
    }
}
