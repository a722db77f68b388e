//! Error handlers: the predefined ones (`MPI_ERRORS_ARE_FATAL`, the default;
//! `MPI_ERRORS_ABORT`; `MPI_ERRORS_RETURN`), the ones an application creates with
//! `MPI_Comm_create_errhandler`, and the dispatch that hands a failed call's error to the
//! handler of the object it concerns (registered with the instance at init). The error
//! handler functions are in `bind/errhandler.rs`.

use std::ffi::c_int;

use std::cell::RefCell;

use crate::abi::*;
use crate::error::MpiErr;
use crate::handle::{Kind, Table};
use crate::state::{self, Mpi, On, Owned};

/// `MPI_Comm_errhandler_function`: called with the communicator and the error code (variadic in
/// the standard's prototype; implementations pass nothing after them).
pub(crate) type CommErrhandlerFn = unsafe extern "C" fn(comm: *mut MPI_Comm, code: *mut c_int, ...);

/// What an error handler does.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// Print the error and end the job.
    Fatal,
    /// Print the error and end the job (weft cannot end only the processes of one
    /// communicator, so this is `Fatal` with another name).
    Abort,
    /// Return the code to the caller.
    Return,
    /// Call the application's function, then return the code.
    User(CommErrhandlerFn),
}

/// Created error handlers.
pub(crate) struct Errhandlers {
    pub(crate) table: Table<Handler>,
}

impl Errhandlers {
    pub(crate) fn new() -> Errhandlers {
        Errhandlers { table: Table::new(Kind::Errhandler) }
    }

    /// The handler `h` names (predefined or created).
    pub(crate) fn get(&self, h: MPI_Errhandler) -> Option<Handler> {
        match h {
            MPI_ERRORS_ARE_FATAL => Some(Handler::Fatal),
            MPI_ERRORS_ABORT => Some(Handler::Abort),
            MPI_ERRORS_RETURN => Some(Handler::Return),
            _ => self.table.get(h).copied(),
        }
    }

    pub(crate) fn create(&mut self, f: CommErrhandlerFn) -> MPI_Errhandler {
        self.table.insert(Handler::User(f))
    }

    /// Free a created handler (communicators using it keep their copy of it).
    pub(crate) fn free(&mut self, h: MPI_Errhandler) -> bool {
        self.table.remove(h).is_some()
    }
}

/// Hand `e`, the error of `name`, to the handler of the object `on` names; the code the call
/// returns (if the handler returns at all).
pub(crate) fn raise(mpi: &Mpi, name: &str, on: On, e: MpiErr) -> c_int {
    let on = e.comm.map(On::Comm).unwrap_or(on);
    let (comm, handler) = {
        let comms = mpi.comms().borrow();
        let comm = match on {
            On::Comm(c) if comms.get(c).is_some() => c,
            // An invalid communicator has no handler: the world's applies.
            On::Comm(_) => MPI_COMM_WORLD,
            On::NoObject => MPI_COMM_SELF,
        };
        let eh = comms.get(comm).map(|o| o.errhandler).unwrap_or(MPI_ERRORS_ARE_FATAL);
        (comm, mpi.errhandlers().borrow().get(eh).unwrap_or(Handler::Fatal))
    };
    let code = e.class;
    *mpi.last_error.borrow_mut() = Some(e.clone());
    match handler {
        Handler::Return => code,
        Handler::Fatal | Handler::Abort => state::fatal(Some(mpi), name, &e),
        Handler::User(f) => {
            let mut c = comm;
            let mut k = code;
            // SAFETY: `f` was registered by the application as an `MPI_Comm_errhandler_function`;
            // it gets pointers to locals that live across the call.
            unsafe { f(&mut c, &mut k) };
            code
        }
    }
}

/// The process's table of error handlers (see [`Owned`]).
static ERRHANDLERS: Owned<RefCell<Errhandlers>> = Owned::new();

impl Mpi {
    /// The table of error handlers.
    #[inline(always)]
    pub(crate) fn errhandlers(&self) -> &RefCell<Errhandlers> {
        ERRHANDLERS.get(self)
    }
}

/// Make the table of error handlers (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Errhandlers) {
    ERRHANDLERS.make(RefCell::new(table));
}
