//! `fid_ep`: the reliable-datagram endpoint (setup; the data path is in [`crate::data`]).

use std::ptr;
use std::rc::Rc;

use weft_fabric_sys as sys;

use crate::av::Av;
use crate::cq::Cq;
use crate::domain::Domain;
use crate::error::{ret_msg, FabricError};
use crate::info::InfoRef;

/// An enabled endpoint bound to one CQ (send and receive completions) and one AV. It holds
/// Rcs to both and to its domain, so they close after it; memory regions bound to it
/// (`FI_MR_ENDPOINT`) hold an `Rc<Endpoint>`, so it closes after them.
pub struct Endpoint {
    pub(crate) raw: *mut sys::fid_ep,
    _cq: Rc<Cq>,
    _av: Rc<Av>,
    _domain: Rc<Domain>,
}

impl Endpoint {
    /// `fi_endpoint` + `fi_ep_bind` (CQ for transmit and receive, AV) + `fi_enable`.
    pub fn open(
        domain: &Rc<Domain>,
        info: InfoRef<'_>,
        cq: &Rc<Cq>,
        av: &Rc<Av>,
    ) -> Result<Endpoint, FabricError> {
        let mut raw = ptr::null_mut();
        // SAFETY: open domain, live fi_info, valid out-pointer.
        let ret = unsafe { sys::fi_endpoint(domain.as_ptr(), info.raw_mut(), &mut raw, ptr::null_mut()) };
        if ret != 0 || raw.is_null() {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::Ep { ret, msg });
        }
        // From here the Endpoint owns `raw`: an error below closes it through Drop.
        let ep = Endpoint { raw, _cq: cq.clone(), _av: av.clone(), _domain: domain.clone() };
        let flags = (sys::FI_TRANSMIT | sys::FI_RECV) as u64;
        for (fid, flags) in [(cq.fid(), flags), (av.fid(), 0)] {
            // SAFETY: the endpoint is open and not yet enabled; `fid` is an open CQ or AV of
            // the same domain, kept alive by the Rcs stored in `ep`.
            let ret = unsafe { sys::fi_ep_bind(ep.raw, fid, flags) };
            if ret != 0 {
                let (ret, msg) = ret_msg(ret as isize);
                return Err(FabricError::EpBind { ret, msg });
            }
        }
        // SAFETY: open, bound endpoint.
        let ret = unsafe { sys::fi_enable(ep.raw) };
        if ret != 0 {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::EpEnable { ret, msg });
        }
        Ok(ep)
    }

    /// `fi_getname`: this endpoint's address, as raw provider bytes.
    pub fn name(&self) -> Result<Vec<u8>, FabricError> {
        let mut buf = vec![0u8; 256];
        loop {
            let mut len = buf.len();
            // SAFETY: enabled endpoint; `buf` has `len` writable bytes; `len` is in/out.
            let ret = unsafe { sys::fi_getname(&mut (*self.raw).fid, buf.as_mut_ptr().cast(), &mut len) };
            if ret == -(sys::FI_ETOOSMALL as i32) && len > buf.len() && len <= 1 << 16 {
                buf.resize(len, 0);
                continue;
            }
            if ret != 0 {
                let (ret, msg) = ret_msg(ret as isize);
                return Err(FabricError::GetName { ret, msg });
            }
            buf.truncate(len);
            return Ok(buf);
        }
    }

    pub(crate) fn fid(&self) -> *mut sys::fid {
        // SAFETY: open endpoint; address of its embedded fid.
        unsafe { &mut (*self.raw).fid }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: open; MRs bound to it (FI_MR_ENDPOINT) hold an Rc<Endpoint> and are closed
        // first. Closing cancels operations still queued; the owner keeps their buffers alive
        // until after this returns (see `OfiTransport`'s field order).
        unsafe { sys::fi_close(&mut (*self.raw).fid) };
    }
}
