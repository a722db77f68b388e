//! `fid_mr`: registered memory, honouring the provider's `mr_mode` bits (decoded in
//! [`crate::attr`] as [`MrMode`]).

use std::ptr;
use std::rc::Rc;

use weft_fabric_sys as sys;

use crate::attr::MrMode;
use crate::domain::Domain;
use crate::ep::Endpoint;
use crate::error::{ret_msg, FabricError};

/// A registered region. Holds its domain (and, with `FI_MR_ENDPOINT`, its endpoint) so that
/// they close after it.
pub struct Mr {
    raw: *mut sys::fid_mr,
    addr: usize,
    len: usize,
    key: u64,
    desc: *mut std::ffi::c_void,
    _domain: Rc<Domain>,
    _ep: Option<Rc<Endpoint>>,
}

impl Mr {
    /// `fi_mr_reg` of `len` bytes at `addr` with `access` (`FI_SEND`, `FI_READ`,
    /// `FI_REMOTE_READ`, ...). `requested_key` is used unless the provider picks keys.
    /// With `FI_MR_ENDPOINT` the region is bound to `ep` and enabled.
    ///
    /// # Safety
    /// `addr..addr+len` must be allocated memory that stays valid (not unmapped) until the
    /// returned `Mr` is dropped, and that no data transfer using it outlives the `Mr`.
    pub unsafe fn reg(
        domain: &Rc<Domain>,
        ep: Option<&Rc<Endpoint>>,
        mode: MrMode,
        addr: *const u8,
        len: usize,
        access: u64,
        requested_key: u64,
    ) -> Result<Mr, FabricError> {
        let mut raw = ptr::null_mut();
        // FI_MR_ENDPOINT: the region is enabled explicitly after binding.
        // SAFETY: open domain; the caller guarantees the memory range; raw is an out-pointer.
        let ret = unsafe {
            sys::fi_mr_reg(
                domain.as_ptr(),
                addr.cast(),
                len,
                access,
                0,
                requested_key,
                0,
                &mut raw,
                ptr::null_mut(),
            )
        };
        if ret != 0 || raw.is_null() {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::Mr { len, ret, msg });
        }
        let mut mr = Mr {
            raw,
            addr: addr as usize,
            len,
            key: 0,
            desc: ptr::null_mut(),
            _domain: domain.clone(),
            _ep: None,
        };
        if mode.endpoint {
            let Some(ep) = ep else {
                return Err(FabricError::MrBind {
                    ret: -(sys::FI_EINVAL as i32),
                    msg: "FI_MR_ENDPOINT needs an endpoint".into(),
                });
            };
            // SAFETY: open MR and open endpoint of the same domain; the MR keeps the endpoint
            // alive through the Rc stored below.
            let ret = unsafe { sys::fi_mr_bind(mr.raw, ep.fid(), 0) };
            mr._ep = Some(ep.clone());
            // SAFETY: bound MR.
            let ret = if ret == 0 { unsafe { sys::fi_mr_enable(mr.raw) } } else { ret };
            if ret != 0 {
                let (ret, msg) = ret_msg(ret as isize);
                return Err(FabricError::MrBind { ret, msg });
            }
        }
        // SAFETY: registered (and enabled) MR: key and descriptor are readable.
        unsafe {
            mr.key = sys::fi_mr_key(mr.raw);
            mr.desc = sys::fi_mr_desc(mr.raw);
        }
        if mr.key == u64::MAX {
            return Err(FabricError::Mr {
                len,
                ret: -(sys::FI_EKEYREJECTED as i32),
                msg: "fi_mr_key returned FI_KEY_NOTAVAIL".into(),
            });
        }
        Ok(mr)
    }

    /// Remote access key.
    pub fn key(&self) -> u64 {
        self.key
    }
    /// Local descriptor for data transfers (may be NULL when `FI_MR_LOCAL` is off).
    pub fn desc(&self) -> *mut std::ffi::c_void {
        self.desc
    }
    /// Start address of the registered range.
    pub fn addr(&self) -> usize {
        self.addr
    }
    /// Length of the registered range.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for an empty range.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: open MR; the owner guarantees no transfer still uses it.
        unsafe { sys::fi_close(&mut (*self.raw).fid) };
    }
}
