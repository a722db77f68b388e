//! Communicators: the MPI object around an operations-core communicator id (its error
//! handler, name, attributes, info hints, intercommunicator layout and topology), the
//! predefined `MPI_COMM_WORLD` and `MPI_COMM_SELF`, the process's communicator table, the
//! resolvers every binding turns an `MPI_Comm` into the communicator with ([`Mpi::comm`],
//! [`Mpi::comm_ref`], [`Mpi::peer`], [`Mpi::source`]), the intercommunicator and topology
//! lookups, the parent handle made at init, and what creating, duplicating and freeing a
//! communicator does to the table (attribute copying and deletion included). The communicator
//! functions are in `bind/comm.rs`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_int;
use std::rc::Rc;

use weft::ops::{CommId, Spawned};

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{looks_like, Kind, Table};
use crate::obj::info::Info;
use crate::obj::intercomm::{remote_status, Inter};
use crate::obj::request::{After, Req};
use crate::obj::topo::{Shape, Topology};
use crate::state::{Mpi, Owned};

pub(crate) use crate::shortcut::CommRef;

/// One communicator as the application sees it.
pub(crate) struct CommObj {
    pub(crate) id: CommId,
    pub(crate) errhandler: MPI_Errhandler,
    pub(crate) name: String,
    /// Attribute values by keyval.
    pub(crate) attrs: HashMap<c_int, usize>,
    /// For an intercommunicator (`id` is then the union of both groups): the groups' places.
    pub(crate) inter: Option<Inter>,
    /// Info hints set by `MPI_Comm_set_info` / `MPI_Comm_dup_with_info`.
    pub(crate) info: Info,
    /// The process topology, for communicators made by the topology constructors.
    pub(crate) topo: Option<Rc<Topology>>,
    /// This process's rank in `id` and its size, asked of the core once (a communicator's
    /// members never change) by the first call that needs them.
    shape: Cell<Option<(u32, u32)>>,
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
    pub(crate) table: Table<CommObj>,
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

    /// The communicator `h` names, or `MPI_ERR_COMM` saying why not: the one resolver of a
    /// communicator handle, which every binding's lookup goes through (the direct paths'
    /// shortcuts aside: they hold what this resolved).
    #[inline]
    pub(crate) fn resolve(&self, h: MPI_Comm) -> MpiResult<&CommObj> {
        match self.get(h) {
            Some(c) => Ok(c),
            None => Err(invalid(h)),
        }
    }

    /// [`Comms::resolve`], mutably.
    #[inline]
    pub(crate) fn resolve_mut(&mut self, h: MPI_Comm) -> MpiResult<&mut CommObj> {
        match self.get_mut(h) {
            Some(c) => Ok(c),
            None => Err(invalid(h)),
        }
    }

    /// The core id of `h`, or `MPI_ERR_COMM` saying why not.
    #[inline]
    pub(crate) fn id(&self, h: MPI_Comm) -> MpiResult<CommId> {
        self.resolve(h).map(|c| c.id)
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
        self.comms().borrow().id(h)
    }

    /// The core id, rank, size and kind of communicator handle `h`: one lookup, and after the
    /// communicator's first use no call into the core.
    #[inline(always)]
    pub(crate) fn comm_ref(&self, h: MPI_Comm) -> MpiResult<CommRef> {
        let comms = self.comms().borrow();
        let c = comms.resolve(h)?;
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
        let mut comms = self.comms().borrow_mut();
        let eh = comms.get(parent).map(|p| p.errhandler).unwrap_or(MPI_ERRORS_ARE_FATAL);
        comms.insert(CommObj::new(id, eh, ""))
    }
}

/// What a duplicate takes from its communicator besides the core communicator: the
/// intercommunicator's groups, the topology's shape, the copied attributes and the hints.
struct DupParts {
    inter: Option<Inter>,
    shape: Option<Shape>,
    attrs: HashMap<c_int, usize>,
    info: Info,
}

impl Mpi {
    /// What a duplicate of `comm` with hints `info` takes from it (the attribute copy
    /// callbacks run here).
    fn dup_parts(&self, comm: MPI_Comm, info: Info) -> MpiResult<DupParts> {
        let (inter, shape) = {
            let comms = self.comms().borrow();
            let c = comms.resolve(comm)?;
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
        let mut comms = self.comms().borrow_mut();
        let c = comms.resolve_mut(h)?;
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
        let hidden = match self.comms().borrow().get(comm).and_then(|c| c.topo.clone()) {
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
    pub(crate) fn idup_comm(
        &self,
        comm: MPI_Comm,
        info: Info,
        newcomm: *mut MPI_Comm,
    ) -> MpiResult<MPI_Request> {
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
        Ok(self.reqs().borrow_mut().insert(Req::Core { id: req, comm, after: After::Run(Box::new(install)) }))
    }

    /// Free created communicator `h`: its attributes (delete callbacks), its topology's
    /// hidden communicator, and its core communicator.
    pub(crate) fn drop_comm(&self, h: MPI_Comm) -> MpiResult {
        let deleted = self.delete_comm_attrs(h);
        let c = self.comms().borrow_mut().remove(h).ok_or_else(|| invalid(h))?;
        self.shortcuts.clear();
        if let Some(t) = &c.topo {
            self.core.comm_free(t.hidden)?;
        }
        self.core.comm_free(c.id)?;
        deleted
    }

    /// A handle for `id`, made from `parent`, or `MPI_COMM_NULL` for `None`.
    pub(crate) fn comm_or_null(&self, parent: MPI_Comm, id: Option<CommId>) -> MPI_Comm {
        id.map_or(MPI_COMM_NULL, |id| self.new_comm(parent, id))
    }
}

/// The process's table of communicators (predefined and created) (see [`Owned`]).
static COMMS: Owned<RefCell<Comms>> = Owned::new();

impl Mpi {
    /// The table of communicators (predefined and created).
    #[inline(always)]
    pub(crate) fn comms(&self) -> &RefCell<Comms> {
        COMMS.get(self)
    }
}

/// Make the table of communicators (predefined and created) (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Comms) {
    COMMS.make(RefCell::new(table));
}

impl Mpi {
    /// The core communicator of `h` and `rank` (a destination or receive source) in its terms:
    /// on an intercommunicator a rank names a process of the remote group. Negative values
    /// (`MPI_ANY_SOURCE`, `MPI_PROC_NULL`, bad ranks) pass unchanged.
    #[inline]
    pub(crate) fn peer(&self, h: MPI_Comm, rank: c_int) -> MpiResult<(CommId, c_int)> {
        self.source(h, rank).map(|(c, r, _)| (c, r))
    }

    /// As [`Mpi::peer`], for a receive: also the layout that [`remote_status`] needs to put the
    /// statuses of this communicator in the application's terms (one lookup for both).
    #[inline]
    pub(crate) fn source(&self, h: MPI_Comm, rank: c_int) -> MpiResult<(CommId, c_int, Option<Inter>)> {
        let comms = self.comms().borrow();
        let c = comms.resolve(h)?;
        match c.inter {
            Some(i) if rank >= 0 => Ok((c.id, i.union_rank(rank)?, c.inter)),
            _ => Ok((c.id, rank, c.inter)),
        }
    }

    /// Put a status of communicator `h` in the application's terms (on an intercommunicator the
    /// source is a rank of the remote group).
    #[inline]
    pub(crate) fn own_status(&self, h: MPI_Comm, st: &mut MPI_Status) {
        if st.MPI_SOURCE >= 0 {
            remote_status(self.comms().borrow().get(h).and_then(|c| c.inter), st);
        }
    }

    /// The intercommunicator layout of `h`, if it is one.
    pub(crate) fn inter_of(&self, h: MPI_Comm) -> MpiResult<Option<Inter>> {
        Ok(self.comms().borrow().resolve(h)?.inter)
    }
}

/// The handle `MPI_Comm_get_parent` returns (`MPI_COMM_NULL` if this process was not spawned).
#[derive(Default)]
pub(crate) struct Parent(pub(crate) Cell<MPI_Comm>);

impl Parent {
    /// The parent intercommunicator of a spawned process, made at init (its error handler is
    /// `MPI_ERRORS_ARE_FATAL`, like `MPI_COMM_WORLD`'s).
    pub(crate) fn at_init(comms: &mut Comms, sp: Option<Spawned>) -> Parent {
        let h = match sp {
            None => MPI_COMM_NULL,
            Some(sp) => {
                let h = comms.insert(CommObj::new(sp.union, MPI_ERRORS_ARE_FATAL, ""));
                if let Some(c) = comms.get_mut(h) {
                    c.inter = Some(Inter {
                        local_off: sp.parents,
                        local_size: sp.children,
                        remote_off: 0,
                        remote_size: sp.parents,
                    });
                }
                h
            }
        };
        Parent(Cell::new(h))
    }
}

/// The process's parent intercommunicator handle (see [`Owned`]).
static PARENT: Owned<Parent> = Owned::new();

impl Mpi {
    /// The handle `MPI_Comm_get_parent` returns.
    #[inline]
    pub(crate) fn parent(&self) -> &Parent {
        PARENT.get(self)
    }
}

/// Make the parent handle (`MPI_Init`, before the instance is installed).
pub(crate) fn make_parent(parent: Parent) {
    PARENT.make(parent);
}

impl Mpi {
    /// The topology of `comm` (`MPI_ERR_TOPOLOGY` if it has none).
    pub(crate) fn topology(&self, comm: MPI_Comm) -> MpiResult<Rc<Topology>> {
        let comms = self.comms().borrow();
        let c = comms.resolve(comm)?;
        c.topo.clone().ok_or_else(|| err!(MPI_ERR_TOPOLOGY, "communicator {comm:#x} has no topology"))
    }

    /// The Cartesian grid of `comm`.
    pub(crate) fn cart(&self, comm: MPI_Comm) -> MpiResult<(Vec<c_int>, Vec<bool>)> {
        match &self.topology(comm)?.shape {
            Shape::Cart { dims, periods } => Ok((dims.clone(), periods.clone())),
            Shape::Graph { .. } => Err(err!(MPI_ERR_TOPOLOGY, "communicator {comm:#x} is not Cartesian")),
        }
    }

    /// Give the new communicator `id` (made from `parent`) the topology `shape` and a hidden
    /// duplicate (collective over `id`).
    pub(crate) fn with_topology(&self, parent: MPI_Comm, id: CommId, shape: Shape) -> MpiResult<MPI_Comm> {
        let hidden = self.core.comm_dup(id)?;
        let h = self.new_comm(parent, id);
        let mut comms = self.comms().borrow_mut();
        comms.get_mut(h).expect("just inserted").topo = Some(Rc::new(Topology { shape, hidden }));
        Ok(h)
    }
}
