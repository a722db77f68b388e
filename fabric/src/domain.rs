//! `fid_domain`: one NIC (or interface) of a fabric; parent of CQs, AVs, endpoints and MRs.

use std::ptr;
use std::rc::Rc;

use weft_fabric_sys as sys;

use crate::error::{ret_msg, FabricError};
use crate::fabric::Fabric;
use crate::info::InfoRef;

/// An open domain. Its children hold an `Rc<Domain>`, so it closes after them, and it holds
/// its fabric, which closes after it.
pub struct Domain {
    raw: *mut sys::fid_domain,
    _fabric: Rc<Fabric>,
}

impl Domain {
    /// `fi_domain` for the domain of `info` on `fabric`.
    pub fn open(fabric: &Rc<Fabric>, info: InfoRef<'_>) -> Result<Domain, FabricError> {
        let mut raw = ptr::null_mut();
        // SAFETY: the fabric is open (we keep it alive), `info` is a live fi_info of that
        // fabric, `raw` a valid out-pointer.
        let ret = unsafe { sys::fi_domain(fabric.as_ptr(), info.raw_mut(), &mut raw, ptr::null_mut()) };
        if ret != 0 || raw.is_null() {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::Domain { ret, msg });
        }
        Ok(Domain { raw, _fabric: fabric.clone() })
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::fid_domain {
        self.raw
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        // SAFETY: open, and every child holds an Rc<Domain>, so all are closed by now.
        unsafe { sys::fi_close(&mut (*self.raw).fid) };
    }
}
