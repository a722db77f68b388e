//! Communicators: the MPI object around an operations-core communicator id (its error
//! handler, name, attributes, info hints and topology), the predefined `MPI_COMM_WORLD` and
//! `MPI_COMM_SELF`, and the communicator functions (creation from groups, splits by node,
//! duplication with attribute copying, freeing with attribute deletion).

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::rc::Rc;

use weft::ops::CommId;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{looks_like, Kind, Table};
use crate::obj::info::Info;
use crate::obj::request::{After, Req};
use crate::obj::topo::Topology;
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
    pub(crate) inter: Option<crate::obj::intercomm::Inter>,
    /// Info hints set by `MPI_Comm_set_info` / `MPI_Comm_dup_with_info`.
    pub(crate) info: Info,
    /// The process topology, for communicators made by the topology constructors.
    pub(crate) topo: Option<Rc<Topology>>,
    /// This process's rank in `id` and its size, asked of the core once (a communicator's
    /// members never change) by the first call that needs them.
    shape: Cell<Option<(u32, u32)>>,
}

/// What the data-moving calls need of a communicator handle, read in one table lookup: the
/// core id, this process's rank in it and its size (of the union of both groups for an
/// intercommunicator), and whether it is an intercommunicator.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CommRef {
    pub(crate) id: CommId,
    pub(crate) rank: u32,
    pub(crate) size: u32,
    pub(crate) inter: bool,
}

impl CommObj {
    pub(crate) fn new(id: CommId, errhandler: MPI_Errhandler, name: impl Into<String>) -> CommObj {
        CommObj {
            id,
            errhandler,
            name: name.into(),
            attrs: HashMap::new(),
            info: Info::default(),
            topo: None,
            inter: None,
            shape: Cell::new(None),
        }
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

    /// The core id, rank, size and kind of communicator handle `h`: one lookup, and after the
    /// communicator's first use no call into the core.
    #[inline(always)]
    pub(crate) fn comm_ref(&self, h: MPI_Comm) -> MpiResult<CommRef> {
        let comms = self.comms.borrow();
        let c = comms.get(h).ok_or_else(|| invalid(h))?;
        let (rank, size) = match c.shape.get() {
            Some(s) => s,
            None => {
                let s = (self.core.comm_rank(c.id)?, self.core.comm_size(c.id)?);
                c.shape.set(Some(s));
                s
            }
        };
        Ok(CommRef { id: c.id, rank, size, inter: c.inter.is_some() })
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

/// What a duplicate takes from its communicator besides the core communicator: the
/// intercommunicator's groups, the topology's shape, the copied attributes and the hints.
struct DupParts {
    inter: Option<crate::obj::intercomm::Inter>,
    shape: Option<crate::obj::topo::Shape>,
    attrs: HashMap<c_int, usize>,
    info: Info,
}

impl Mpi {
    /// What a duplicate of `comm` with hints `info` takes from it (the attribute copy
    /// callbacks run here).
    fn dup_parts(&self, comm: MPI_Comm, info: Info) -> MpiResult<DupParts> {
        let (inter, shape) = {
            let comms = self.comms.borrow();
            let c = comms.get(comm).ok_or_else(|| invalid(comm))?;
            (c.inter, c.topo.as_ref().map(|t| t.shape.clone()))
        };
        let attrs = self.copy_comm_attrs(comm)?;
        Ok(DupParts { inter, shape, attrs, info })
    }

    /// The handle of a duplicate of `comm` on core communicator `id`, with the topology's
    /// hidden communicator `hidden` when `comm` has a topology.
    fn install_dup(
        &self,
        comm: MPI_Comm,
        id: CommId,
        hidden: Option<CommId>,
        parts: DupParts,
    ) -> MpiResult<MPI_Comm> {
        let h = self.new_comm(comm, id);
        let mut comms = self.comms.borrow_mut();
        let c = comms.get_mut(h).ok_or_else(|| invalid(h))?;
        c.attrs = parts.attrs;
        c.info = parts.info;
        c.inter = parts.inter;
        c.topo = parts.shape.zip(hidden).map(|(shape, hidden)| Rc::new(Topology { shape, hidden }));
        Ok(h)
    }

    /// Duplicate `comm` (collective): a new communicator with the same group (both groups of an
    /// intercommunicator), error handler, topology, copied attributes, and `info` as its hints.
    pub(crate) fn dup_comm(&self, comm: MPI_Comm, info: Info) -> MpiResult<MPI_Comm> {
        let id = self.core.comm_dup(self.comm(comm)?)?;
        let hidden = match self.comms.borrow().get(comm).and_then(|c| c.topo.clone()) {
            Some(t) => Some(self.core.comm_dup(t.hidden)?),
            None => None,
        };
        let parts = match self.dup_parts(comm, info) {
            Ok(p) => p,
            Err(e) => {
                for c in std::iter::once(id).chain(hidden) {
                    self.core.comm_free(c)?;
                }
                return Err(e);
            }
        };
        self.install_dup(comm, id, hidden, parts)
    }

    /// Start duplicating `comm` without waiting for its other members (`MPI_Comm_idup`): the
    /// attributes are copied now; the request's completion installs the duplicate and writes
    /// its handle to `newcomm`, which the application keeps valid until then.
    fn idup_comm(&self, comm: MPI_Comm, info: Info, newcomm: *mut MPI_Comm) -> MpiResult<MPI_Request> {
        let id = self.comm(comm)?;
        let parts = self.dup_parts(comm, info)?;
        let comms = if parts.shape.is_some() { 2 } else { 1 };
        // A start that fails drops the copied attribute values without delete callbacks: no
        // communicator ever held them.
        let pending = self.core.comm_idup_start(id, comms)?;
        let req = pending.request();
        let install = move |m: &Mpi| -> MpiResult {
            let ids = m.core.comm_idup_finish(pending)?;
            let h = m.install_dup(comm, ids[0], ids.get(1).copied(), parts)?;
            // SAFETY: the application keeps `newcomm` valid until the request completes (the
            // standard's rule for a non-blocking call's output arguments); checked non-null.
            unsafe { *newcomm = h };
            Ok(())
        };
        Ok(self.reqs.borrow_mut().insert(Req::Core { id: req, comm, after: After::Run(Box::new(install)) }))
    }

    /// Free created communicator `h`: its attributes (delete callbacks), its topology's
    /// hidden communicator, and its core communicator.
    pub(crate) fn drop_comm(&self, h: MPI_Comm) -> MpiResult {
        let deleted = self.delete_comm_attrs(h);
        let c = self.comms.borrow_mut().remove(h).ok_or_else(|| invalid(h))?;
        self.shortcuts.clear();
        if let Some(t) = &c.topo {
            self.core.comm_free(t.hidden)?;
        }
        self.core.comm_free(c.id)?;
        deleted
    }

    /// A handle for `id`, made from `parent`, or `MPI_COMM_NULL` for `None`.
    fn comm_or_null(&self, parent: MPI_Comm, id: Option<CommId>) -> MPI_Comm {
        id.map_or(MPI_COMM_NULL, |id| self.new_comm(parent, id))
    }
}

export! {
    /// `MPI_Comm_dup`: a new communicator over the same group (collective), with the
    /// attributes the copy callbacks give it and the same info hints.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_dup", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let info = m.comms.borrow().get(comm).map(|c| c.info.clone()).unwrap_or_default();
            let h = m.dup_comm(comm, info)?;
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

export! {
    /// `MPI_Comm_dup_with_info`: as `MPI_Comm_dup`, with `info` as the new hints.
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_dup_with_info", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let i = m.info_or_empty(info)?;
            let h = m.dup_comm(comm, i)?;
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

export! {
    /// `MPI_Comm_idup`: a non-blocking duplication; `*newcomm` is the new communicator once
    /// the request completed (the call returns before the other members have called it).
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Comm_idup", On::Comm(comm), |m| {
            if newcomm.is_null() || request.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` or `request` is NULL"));
            }
            let info = m.comms.borrow().get(comm).ok_or_else(|| invalid(comm))?.info.clone();
            let r = m.idup_comm(comm, info, newcomm)?;
            // SAFETY: checked non-null above.
            unsafe { put(request, r, "request") }
        })
    }
}

export! {
    /// `MPI_Comm_idup_with_info`: as `MPI_Comm_idup`, with `info` as the new hints.
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) {
        call("MPI_Comm_idup_with_info", On::Comm(comm), |m| {
            if newcomm.is_null() || request.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` or `request` is NULL"));
            }
            let i = m.info_or_empty(info)?;
            let r = m.idup_comm(comm, i, newcomm)?;
            // SAFETY: checked non-null above.
            unsafe { put(request, r, "request") }
        })
    }
}

export! {
    /// `MPI_Comm_set_info`: replace the communicator's hints.
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) {
        call("MPI_Comm_set_info", On::Comm(comm), |m| {
            let i = m.info(info)?;
            let mut comms = m.comms.borrow_mut();
            comms.get_mut(comm).ok_or_else(|| invalid(comm))?.info = i;
            Ok(())
        })
    }
}

export! {
    /// `MPI_Comm_get_info`: a new info object with the communicator's hints.
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: MPI_Comm, info: *mut MPI_Info) {
        call("MPI_Comm_get_info", On::Comm(comm), |m| {
            if info.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `info_used` is NULL"));
            }
            let i = m.comms.borrow().get(comm).ok_or_else(|| invalid(comm))?.info.clone();
            let h = m.new_info(i);
            // SAFETY: checked non-null above.
            unsafe { put(info, h, "info_used") }
        })
    }
}

export! {
    /// `MPI_Comm_create` (collective over `comm`): a communicator of `group`'s members, in
    /// group order; processes outside the group get `MPI_COMM_NULL`. Disjoint groups given by
    /// different processes make one communicator each.
    fn MPI_Comm_create / PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_create", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let id = m.comm(comm)?;
            let g = m.group(group)?;
            let members = m.core.comm_group(id)?;
            if let Some(w) = g.ranks.iter().find(|w| !members.contains(w)) {
                return Err(err!(MPI_ERR_GROUP, "group member (world rank {w}) is not in the communicator"));
            }
            let me = m.core.comm_rank(m.core.world())?;
            // Each group is one color: its lowest world rank; the key orders it by group rank.
            let (color, key) = match g.rank_of(me) {
                Some(r) => (*g.ranks.iter().min().expect("non-empty") as i32, r as i32),
                None => (weft::UNDEFINED, 0),
            };
            let h = m.comm_or_null(comm, m.core.comm_split(id, color, key)?);
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

export! {
    /// `MPI_Comm_create_group` (collective over `group`'s members only): they agree on a
    /// context among themselves; a process outside the group gets `MPI_COMM_NULL`. Tags that
    /// differ by a multiple of 2^28 are not told apart between concurrent creations.
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_create_group", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let tag = crate::bind::p2p::send_tag(tag)?;
            let id = m.comm(comm)?;
            let g = m.group(group)?;
            let members = m.core.comm_group(id)?;
            let ranks = g
                .ranks
                .iter()
                .map(|w| {
                    members.iter().position(|x| x == w).map(|r| r as u32).ok_or_else(|| {
                        err!(MPI_ERR_GROUP, "group member (world rank {w}) is not in the communicator")
                    })
                })
                .collect::<MpiResult<Vec<u32>>>()?;
            let me = m.core.comm_rank(id)?;
            let h = if ranks.contains(&me) {
                let nid = m.core.comm_create_group(id, &ranks, tag & ((1 << 28) - 1))?;
                m.new_comm(comm, nid)
            } else {
                MPI_COMM_NULL
            };
            // SAFETY: checked non-null above.
            unsafe { put(newcomm, h, "newcomm") }
        })
    }
}

export! {
    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the processes on one node (the
    /// runtime's node ids; `weft-run --nodes` virtual nodes count as nodes). The hardware
    /// types know one level, the node: `MPI_COMM_TYPE_HW_GUIDED` and
    /// `MPI_COMM_TYPE_RESOURCE_GUIDED` with info `mpi_hw_resource_type=mpi_shared_memory` split
    /// by node, other values give `MPI_COMM_NULL`; `MPI_COMM_TYPE_HW_UNGUIDED` gives the node's
    /// communicator if it is smaller than `comm`, else `MPI_COMM_NULL`.
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm) {
        call("MPI_Comm_split_type", On::Comm(comm), |m| {
            if newcomm.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `newcomm` is NULL"));
            }
            let id = m.comm(comm)?;
            let hints = m.info_or_empty(info)?;
            let node = m.core.node_id() as i32;
            let color = match split_type {
                MPI_UNDEFINED => weft::UNDEFINED,
                MPI_COMM_TYPE_SHARED | MPI_COMM_TYPE_HW_UNGUIDED => node,
                MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => {
                    match hints.get("mpi_hw_resource_type") {
                        Some("mpi_shared_memory") => node,
                        _ => weft::UNDEFINED,
                    }
                }
                other => return Err(err!(MPI_ERR_ARG, "invalid split type {other}")),
            };
            let mut h = m.comm_or_null(comm, m.core.comm_split(id, color, key)?);
            if split_type == MPI_COMM_TYPE_HW_UNGUIDED && h != MPI_COMM_NULL {
                let size = m.core.comm_size(m.comm(h)?)?;
                if size == m.core.comm_size(id)? {
                    m.drop_comm(h)?;
                    h = MPI_COMM_NULL;
                }
            }
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
            let h = m.comm_or_null(comm, m.core.comm_split(m.comm(comm)?, c, key)?);
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
            m.comm(h)?;
            let r = m.drop_comm(h);
            // SAFETY: as above.
            unsafe { *comm = MPI_COMM_NULL };
            r
        })
    }
}

export! {
    /// `MPI_Comm_set_name`.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: MPI_Comm, name: *const c_char) {
        call("MPI_Comm_set_name", On::Comm(comm), |m| {
            // SAFETY: NUL-terminated string from the caller, checked for null.
            let s = unsafe { crate::bind::init::c_str(name, "comm_name")? };
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
            unsafe { crate::bind::init::write_str(name, len, s, MPI_MAX_OBJECT_NAME as usize) }
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
