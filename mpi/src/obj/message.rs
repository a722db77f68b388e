//! Matched-probe messages: what an `MPI_Message` names (a message `MPI_Mprobe`/`MPI_Improbe`
//! took out of matching, with the communicator it was probed on), the process's message
//! table, and the resolver that hands a message over to its one receive. The matched-probe
//! functions are in `bind/message.rs`.

use std::cell::RefCell;

use weft::ops::Message;

use crate::abi::*;
use crate::error::{err, MpiResult};
use crate::handle::{Kind, Table};
use crate::state::{Mpi, Owned};

/// Messages taken out of matching, with their communicator, until their receive.
pub(crate) struct Messages {
    table: Table<(Message, MPI_Comm)>,
}

impl Messages {
    pub(crate) fn new() -> Messages {
        Messages { table: Table::new(Kind::Message) }
    }

    /// A handle for `msg`, probed on `comm`.
    pub(crate) fn insert(&mut self, msg: Message, comm: MPI_Comm) -> MPI_Message {
        self.table.insert((msg, comm))
    }

    /// The message `h` names, taken out (a message is received once), or `MPI_ERR_REQUEST`
    /// saying why not: the one resolver of a message handle.
    pub(crate) fn take(&mut self, h: MPI_Message) -> MpiResult<(Message, MPI_Comm)> {
        self.table.remove(h).ok_or_else(|| {
            err!(MPI_ERR_REQUEST, "invalid message {h:#x}: already received, or not a message handle")
        })
    }
}

/// The process's table of matched-probe messages (see [`Owned`]).
static MESSAGES: Owned<RefCell<Messages>> = Owned::new();

impl Mpi {
    /// The table of matched-probe messages.
    #[inline(always)]
    pub(crate) fn messages(&self) -> &RefCell<Messages> {
        MESSAGES.get(self)
    }
}

/// Make the table of matched-probe messages (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Messages) {
    MESSAGES.make(RefCell::new(table));
}
