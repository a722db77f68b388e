//! Error handling chapter: creating, setting, getting and calling error handlers.

use crate::abi::*;
use crate::error::{err, MpiErr};
use crate::obj::errhandler::*;
use crate::state::On;
use crate::{export, put};
use std::ffi::c_int;

export! {
    /// `MPI_Comm_create_errhandler`.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(function: Option<CommErrhandlerFn>, errhandler: *mut MPI_Errhandler) on On::NoObject;
    |m| {
        let f = function.ok_or_else(|| err!(MPI_ERR_ARG, "invalid argument: `function` is NULL"))?;
        if errhandler.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `errhandler` is NULL"));
        }
        let h = m.errhandlers().borrow_mut().create(f);
        // SAFETY: checked non-null.
        unsafe { put(errhandler, h, "errhandler") }
    }
}

export! {
    /// `MPI_Comm_set_errhandler`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) on On::Comm(comm);
    |m| {
        if m.errhandlers().borrow().get(errhandler).is_none() {
            return Err(err!(MPI_ERR_ARG, "invalid error handler {errhandler:#x}"));
        }
        let mut comms = m.comms().borrow_mut();
        comms.resolve_mut(comm)?.errhandler = errhandler;
        Ok(())
    }
}

export! {
    /// `MPI_Comm_get_errhandler`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) on On::Comm(comm);
    |m| {
        let h = m.comms().borrow().resolve(comm)?.errhandler;
        // SAFETY: output pointer from the caller.
        unsafe { put(errhandler, h, "errhandler") }
    }
}

export! {
    /// `MPI_Errhandler_free`: communicators that use the handler keep it.
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut MPI_Errhandler) on On::NoObject;
    |m| {
        if errhandler.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `errhandler` is NULL"));
        }
        // SAFETY: non-null in/out pointer.
        let h = unsafe { *errhandler };
        let predefined = matches!(h, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT | MPI_ERRORS_RETURN);
        if !predefined && !m.errhandlers().borrow_mut().free(h) {
            return Err(err!(MPI_ERR_ARG, "invalid error handler {h:#x}"));
        }
        // SAFETY: as above.
        unsafe { *errhandler = MPI_ERRHANDLER_NULL };
        Ok(())
    }
}

export! {
    /// `MPI_Comm_call_errhandler`: raise `errorcode` on `comm`'s handler.
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) on On::Comm(comm);
    |m| {
        m.comm(comm)?;
        Err(MpiErr::new(errorcode, format!("error {errorcode} raised by MPI_Comm_call_errhandler")))
    }
}
