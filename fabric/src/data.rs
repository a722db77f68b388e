//! The data path: posting transfers on an [`Endpoint`] and reading its [`Cq`].
//!
//! Thin `#[inline]` wrappers, one libfabric call each, returning the raw `ssize_t` (`0` or a
//! count on success, `-FI_EAGAIN` when the queue is full, another negative `fi_errno`
//! otherwise). Kept apart from the setup modules so the hot path reads in one place.

use std::ffi::c_void;

use weft_fabric_sys as sys;

use crate::cq::Cq;
use crate::ep::Endpoint;

/// A CQ entry in `FI_CQ_FORMAT_TAGGED`.
pub type CqEntry = sys::fi_cq_tagged_entry;
/// A CQ error entry.
pub type CqErrEntry = sys::fi_cq_err_entry;

impl Endpoint {
    /// `fi_tinject`: send `len` bytes at `buf` with `tag` to `dest`; the buffer may be reused
    /// at once and no completion is generated.
    ///
    /// # Safety
    /// `buf` must be readable for `len` bytes, `len <= inject_size`, `dest` an inserted address.
    #[inline]
    pub unsafe fn tinject(&self, buf: *const u8, len: usize, dest: sys::fi_addr_t, tag: u64) -> isize {
        // SAFETY: forwarded contract; the endpoint is open and enabled.
        unsafe { sys::fi_tinject(self.raw, buf.cast(), len, dest, tag) }
    }

    /// `fi_tsend`: send `len` bytes at `buf` (described by `desc`) with `tag` to `dest`;
    /// completion (or error) reported on the CQ with `ctx`.
    ///
    /// # Safety
    /// `buf` must stay readable for `len` bytes and `ctx` valid (a `fi_context2` at its start,
    /// unmoved) until the completion is read; `desc` must be the descriptor of a registration
    /// covering `buf` when the provider uses `FI_MR_LOCAL`.
    #[inline]
    pub unsafe fn tsend(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: sys::fi_addr_t,
        tag: u64,
        ctx: *mut c_void,
    ) -> isize {
        // SAFETY: forwarded contract.
        unsafe { sys::fi_tsend(self.raw, buf.cast(), len, desc, dest, tag, ctx) }
    }

    /// `fi_trecv`: post a receive of up to `len` bytes into `buf`, from any source, matching
    /// any tag (`ignore` = all bits).
    ///
    /// # Safety
    /// `buf` must stay writable for `len` bytes and unaliased, and `ctx` valid and unmoved,
    /// until the completion is read (or the endpoint is closed).
    #[inline]
    pub unsafe fn trecv_any(&self, buf: *mut u8, len: usize, desc: *mut c_void, ctx: *mut c_void) -> isize {
        // SAFETY: forwarded contract.
        unsafe { sys::fi_trecv(self.raw, buf.cast(), len, desc, sys::FI_ADDR_UNSPEC, 0, u64::MAX, ctx) }
    }

    /// `fi_read`: read `len` bytes of the peer's region (`key`, at remote address/offset
    /// `addr`) into `buf`.
    ///
    /// # Safety
    /// `buf` must stay writable for `len` bytes and unaliased, and `ctx` valid and unmoved,
    /// until the completion is read; `desc` as in [`Endpoint::tsend`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn read(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        src: sys::fi_addr_t,
        addr: u64,
        key: u64,
        ctx: *mut c_void,
    ) -> isize {
        // SAFETY: forwarded contract.
        unsafe { sys::fi_read(self.raw, buf.cast(), len, desc, src, addr, key, ctx) }
    }
}

impl Cq {
    /// `fi_cq_read` into `out`: the number of entries read, `-FI_EAGAIN` when empty,
    /// `-FI_EAVAIL` when an error entry is at the head. Drives manual progress.
    #[inline]
    pub fn read(&self, out: &mut [CqEntry]) -> isize {
        // SAFETY: open CQ in FI_CQ_FORMAT_TAGGED; `out` has room for `out.len()` entries.
        unsafe { sys::fi_cq_read(self.raw, out.as_mut_ptr().cast(), out.len()) }
    }

    /// `fi_cq_readerr`: the error entry at the head, if any.
    pub fn read_err(&self) -> Option<CqErrEntry> {
        let mut e = CqErrEntry::default();
        // SAFETY: open CQ; `e` is a zeroed error entry (err_data NULL / err_data_size 0, so
        // the provider uses its own buffer for provider data).
        let ret = unsafe { sys::fi_cq_readerr(self.raw, &mut e, 0) };
        (ret == 1).then_some(e)
    }

    /// `fi_cq_strerror` text of a provider-specific error of `e`.
    pub fn strerror(&self, e: &CqErrEntry) -> String {
        let mut buf = [0 as std::os::raw::c_char; 256];
        // SAFETY: open CQ; `e` came from fi_cq_readerr on this CQ; `buf` has 256 bytes.
        let p =
            unsafe { sys::fi_cq_strerror(self.raw, e.prov_errno, e.err_data, buf.as_mut_ptr(), buf.len()) };
        if p.is_null() {
            return crate::error::strerror(e.err as isize);
        }
        // SAFETY: fi_cq_strerror returns a NUL-terminated string (in `buf` or static).
        unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
