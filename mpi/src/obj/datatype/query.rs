//! The resolver of a datatype handle for the type queries: the description a handle names, or
//! the error saying why none. The query functions (`MPI_Type_size`, `MPI_Type_get_extent`,
//! envelopes, contents, names, ...) are in `bind/datatype/query.rs`.

use std::sync::Arc;

use super::TypeInfo;
use crate::abi::*;
use crate::error::MpiResult;
use crate::state::Mpi;

impl Mpi {
    /// The description of `h` (a clone of the shared reference: no borrow outlives the call).
    pub(crate) fn type_info(&self, h: MPI_Datatype) -> MpiResult<Arc<TypeInfo>> {
        Ok(self.types().borrow().get(h)?.clone())
    }
}
