//! `fid_fabric`: the root object of a provider's resources.

use std::ptr;

use weft_fabric_sys as sys;

use crate::error::{ret_msg, FabricError};
use crate::info::InfoRef;

/// An open fabric. Domains hold an `Rc<Fabric>`, so it closes after them.
pub struct Fabric {
    raw: *mut sys::fid_fabric,
}

impl Fabric {
    /// `fi_fabric` for the fabric of `info`.
    pub fn open(info: InfoRef<'_>) -> Result<Fabric, FabricError> {
        let attr = info.raw().fabric_attr;
        if attr.is_null() {
            return Err(FabricError::Fabric { ret: -(sys::FI_EINVAL as i32), msg: "no fabric_attr".into() });
        }
        let mut raw = ptr::null_mut();
        // SAFETY: `attr` is the valid fabric attribute of a live fi_info; `raw` is a valid
        // out-pointer; no context is used.
        let ret = unsafe { sys::fi_fabric(attr, &mut raw, ptr::null_mut()) };
        if ret != 0 || raw.is_null() {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::Fabric { ret, msg });
        }
        Ok(Fabric { raw })
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::fid_fabric {
        self.raw
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        // SAFETY: `raw` is open and every child (domains hold an Rc to us) is already closed.
        unsafe { sys::fi_close(&mut (*self.raw).fid) };
    }
}
