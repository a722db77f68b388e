//! `fid_cq`: the completion queue (setup; the data-path reads are in [`crate::data`]).

use std::ptr;
use std::rc::Rc;

use weft_fabric_sys as sys;

use crate::domain::Domain;
use crate::error::{ret_msg, FabricError};

/// A completion queue in `FI_CQ_FORMAT_TAGGED`, without a wait object (polled).
pub struct Cq {
    pub(crate) raw: *mut sys::fid_cq,
    _domain: Rc<Domain>,
}

impl Cq {
    /// `fi_cq_open` with room for `size` entries.
    pub fn open(domain: &Rc<Domain>, size: usize) -> Result<Cq, FabricError> {
        let mut attr = sys::fi_cq_attr {
            size,
            format: sys::FI_CQ_FORMAT_TAGGED,
            wait_obj: sys::FI_WAIT_NONE,
            ..Default::default()
        };
        let mut raw = ptr::null_mut();
        // SAFETY: the domain is open (kept alive by the Rc we store), attr and raw are valid.
        let ret = unsafe { sys::fi_cq_open(domain.as_ptr(), &mut attr, &mut raw, ptr::null_mut()) };
        if ret != 0 || raw.is_null() {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::Cq { ret, msg });
        }
        Ok(Cq { raw, _domain: domain.clone() })
    }

    pub(crate) fn fid(&self) -> *mut sys::fid {
        // SAFETY: `raw` is an open CQ; taking the address of its embedded fid.
        unsafe { &mut (*self.raw).fid }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: open; endpoints bound to it hold an Rc<Cq> and are closed first.
        unsafe { sys::fi_close(&mut (*self.raw).fid) };
    }
}
