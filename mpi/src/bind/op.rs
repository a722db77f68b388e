//! Collectives chapter, reduction operations: `MPI_Op_create`, `MPI_Op_free`, `MPI_Op_commutative`, `MPI_Reduce_local`.

use crate::abi::*;
use crate::error::err;
use crate::obj::op::*;
use crate::state::On;
use crate::{export, put};
use std::ffi::c_int;

export! {
    /// `MPI_Op_create`.
    fn MPI_Op_create / PMPI_Op_create(user_fn: Option<UserFunction>, commute: c_int, op: *mut MPI_Op) on On::NoObject;
    |m| {
        let f = user_fn.ok_or_else(|| err!(MPI_ERR_ARG, "invalid argument: `user_fn` is NULL"))?;
        if op.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `op` is NULL"));
        }
        let h = m.ops().borrow_mut().table.insert(UserOpDef { f, commute: commute != 0 });
        // SAFETY: checked non-null.
        unsafe { put(op, h, "op") }
    }
}

export! {
    /// `MPI_Op_free`.
    fn MPI_Op_free / PMPI_Op_free(op: *mut MPI_Op) on On::NoObject;
    |m| {
        if op.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `op` is NULL"));
        }
        // SAFETY: non-null in/out pointer.
        let h = unsafe { *op };
        m.ops()
            .borrow_mut()
            .table
            .remove(h)
            .ok_or_else(|| err!(MPI_ERR_OP, "invalid operation {h:#x}: predefined, freed or never created"))?;
        // SAFETY: as above.
        unsafe { *op = MPI_OP_NULL };
        Ok(())
    }
}

export! {
    /// `MPI_Op_commutative`.
    fn MPI_Op_commutative / PMPI_Op_commutative(op: MPI_Op, commute: *mut c_int) on On::NoObject;
    |m| {
        let c = match op {
            MPI_SUM | MPI_PROD | MPI_MIN | MPI_MAX | MPI_BAND | MPI_BOR | MPI_BXOR | MPI_LAND | MPI_LOR
            | MPI_LXOR | MPI_MINLOC | MPI_MAXLOC | MPI_REPLACE | MPI_NO_OP => true,
            h => m.ops().borrow().table.get(h).ok_or_else(|| err!(MPI_ERR_OP, "invalid operation {h:#x}"))?.commute,
        };
        // SAFETY: output pointer from the caller.
        unsafe { put(commute, c as c_int, "commute") }
    }
}
