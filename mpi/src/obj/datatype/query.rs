//! Questions about types and addresses: `MPI_Type_size` (`_x`, `_c`), `MPI_Type_get_extent`
//! and `MPI_Type_get_true_extent` (`_x`, `_c`), `MPI_Type_get_envelope`,
//! `MPI_Type_get_contents`, `MPI_Type_set_name` / `get_name`, `MPI_Type_match_size`, and the
//! address helper `MPI_Get_address` (the arithmetic on addresses is `address.rs`).

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
