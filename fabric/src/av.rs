//! `fid_av`: the address vector, mapping peers' endpoint names to `fi_addr_t`.

use std::ptr;
use std::rc::Rc;

use weft_fabric_sys as sys;

use crate::domain::Domain;
use crate::error::{ret_msg, FabricError};

/// An address vector (type chosen by the provider).
pub struct Av {
    raw: *mut sys::fid_av,
    _domain: Rc<Domain>,
}

impl Av {
    /// `fi_av_open` sized for `count` peers.
    pub fn open(domain: &Rc<Domain>, count: usize) -> Result<Av, FabricError> {
        let mut attr = sys::fi_av_attr { type_: sys::FI_AV_UNSPEC, count, ..Default::default() };
        let mut raw = ptr::null_mut();
        // SAFETY: open domain (kept alive by our Rc), valid attr and out-pointer.
        let ret = unsafe { sys::fi_av_open(domain.as_ptr(), &mut attr, &mut raw, ptr::null_mut()) };
        if ret != 0 || raw.is_null() {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::Av { ret, msg });
        }
        Ok(Av { raw, _domain: domain.clone() })
    }

    /// `fi_av_insert` of one raw endpoint name of exactly `addrlen` bytes (the caller
    /// validates the length: libfabric reads as many bytes as its address format implies).
    pub fn insert(&self, rank: u32, name: &[u8]) -> Result<sys::fi_addr_t, FabricError> {
        let mut out: sys::fi_addr_t = sys::FI_ADDR_UNSPEC;
        // SAFETY: the AV is open; `name` points to `name.len()` readable bytes, which the
        // caller checked equal the provider's address length; `out` receives one fi_addr.
        let ret =
            unsafe { sys::fi_av_insert(self.raw, name.as_ptr().cast(), 1, &mut out, 0, ptr::null_mut()) };
        if ret != 1 || out == sys::FI_ADDR_UNSPEC {
            let (ret, msg) = if ret < 0 {
                ret_msg(ret as isize)
            } else {
                (ret, "address rejected by the provider".to_string())
            };
            return Err(FabricError::AvInsert { rank, ret, msg });
        }
        Ok(out)
    }

    pub(crate) fn fid(&self) -> *mut sys::fid {
        // SAFETY: open AV; address of its embedded fid.
        unsafe { &mut (*self.raw).fid }
    }
}

impl Drop for Av {
    fn drop(&mut self) {
        // SAFETY: open; endpoints bound to it hold an Rc<Av> and are closed first.
        unsafe { sys::fi_close(&mut (*self.raw).fid) };
    }
}
