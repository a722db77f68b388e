//! User buffers held by pending requests.
//!
//! A non-blocking operation keeps a raw pointer to the caller's buffer until it completes. This
//! module is the only place in the engine that dereferences such pointers; the callers that
//! create a [`UserBuf`] (the `unsafe fn`s `isend`/`irecv`) carry the obligation that the memory
//! stays valid and unaliased until the request completes.

use crate::transport::copy_bytes;

/// A caller-owned buffer referenced by a pending request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UserBuf {
    ptr: *mut u8,
    len: usize,
}

impl UserBuf {
    pub(crate) const EMPTY: UserBuf = UserBuf { ptr: std::ptr::null_mut(), len: 0 };

    /// # Safety
    /// `ptr` must be valid for reads (and, for receive buffers, writes) of `len` bytes for as
    /// long as the request that holds this buffer is pending, or `len` must be 0.
    pub(crate) unsafe fn new(ptr: *mut u8, len: usize) -> UserBuf {
        if len == 0 {
            UserBuf::EMPTY
        } else {
            UserBuf { ptr, len }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Copy the first `min(len, src.len())` bytes of `src` into the buffer; return how many.
    #[inline]
    pub(crate) fn fill(&self, src: &[u8]) -> usize {
        let n = src.len().min(self.len);
        // SAFETY: `new`'s contract: ptr is valid for writes of len ≥ n bytes while the
        // owning request is pending (it is: we are completing it), and `src` is engine or
        // transport memory, which cannot overlap a user receive buffer.
        unsafe { copy_bytes(src.as_ptr(), self.ptr, n) };
        n
    }

    /// View the buffer as bytes (send side).
    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `new`'s contract: ptr is valid for reads of len bytes while the owning
        // request is pending; the returned borrow does not outlive the request's use of it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use crate::transport::copy_bytes;

    #[test]
    fn copy_bytes_every_small_length() {
        let src: Vec<u8> = (1..=80u8).collect();
        for n in 0..=70 {
            for off in 0..3 {
                let mut dst = [0u8; 80];
                // SAFETY: both ranges are in bounds (off + n <= 73 < 80) and belong to different buffers.
                unsafe { copy_bytes(src[off..].as_ptr(), dst[off..].as_mut_ptr(), n) };
                assert_eq!(&dst[off..off + n], &src[off..off + n], "n {n} off {off}");
                assert!(dst[..off].iter().chain(&dst[off + n..]).all(|&b| b == 0), "n {n} off {off}");
            }
        }
    }
}
