//! Cross-memory attach: single-copy reads from and writes to a peer's address space
//! (`process_vm_readv`, `process_vm_writev`), and the RKey format for shared memory.

use weft_engine::transport::RKey;

/// Tag in byte 16..20 of a shared-memory RKey ("WSHK"), so a key from another transport is
/// rejected rather than misread.
const KEY_MAGIC: u32 = u32::from_le_bytes(*b"WSHK");

/// RKey for `len` bytes at `addr` in the exposing process:
/// `[addr: u64 LE][len: u64 LE][magic: u32 LE][0; 12]`.
pub fn make_key(addr: u64, len: u64) -> RKey {
    let mut k = [0u8; 32];
    k[0..8].copy_from_slice(&addr.to_le_bytes());
    k[8..16].copy_from_slice(&len.to_le_bytes());
    k[16..20].copy_from_slice(&KEY_MAGIC.to_le_bytes());
    k
}

/// Decode a key made by [`make_key`]: `(addr, len)`, or `None` if it is not one.
pub fn parse_key(k: &RKey) -> Option<(u64, u64)> {
    let u64_at = |o: usize| u64::from_le_bytes(k[o..o + 8].try_into().unwrap());
    if u32::from_le_bytes(k[16..20].try_into().unwrap()) != KEY_MAGIC {
        return None;
    }
    Some((u64_at(0), u64_at(8)))
}

/// Largest chunk per call: the kernel caps one transfer at MAX_RW_COUNT (INT_MAX & PAGE_MASK).
const CHUNK: usize = 1 << 30;

/// Read `len` bytes at `remote` in process `pid` into `dst`, looping over partial transfers.
/// Returns the errno of the first failing call (0 progress counts as EFAULT).
///
/// # Safety
/// `dst` is valid for writes of `len` bytes and not accessed by anyone else during the call.
pub unsafe fn read_remote(pid: u32, remote: u64, dst: *mut u8, len: usize) -> Result<(), i32> {
    // SAFETY: forwarded contract; process_vm_readv writes only the local iovecs.
    unsafe { transfer(pid, remote, dst, len, libc::process_vm_readv) }
}

/// Write `len` bytes from `src` to `remote` in process `pid`, as [`read_remote`] reads.
///
/// # Safety
/// `src` is valid for reads of `len` bytes during the call.
pub unsafe fn write_remote(pid: u32, remote: u64, src: *const u8, len: usize) -> Result<(), i32> {
    // SAFETY: forwarded contract; process_vm_writev only reads the local iovecs.
    unsafe { transfer(pid, remote, src as *mut u8, len, libc::process_vm_writev) }
}

type CmaCall = unsafe extern "C" fn(
    libc::pid_t,
    *const libc::iovec,
    libc::c_ulong,
    *const libc::iovec,
    libc::c_ulong,
    libc::c_ulong,
) -> libc::ssize_t;

/// `len` bytes between `local` here and `remote` in process `pid` through `call`
/// (`process_vm_readv` or `process_vm_writev`), looping over partial transfers.
///
/// # Safety
/// `local` is valid for `len` bytes in the direction `call` accesses it.
unsafe fn transfer(pid: u32, remote: u64, local: *mut u8, len: usize, call: CmaCall) -> Result<(), i32> {
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(CHUNK);
        // SAFETY: done < len, so the offset stays inside the caller's buffer.
        let base = unsafe { local.add(done) };
        let local = libc::iovec { iov_base: base as *mut libc::c_void, iov_len: n };
        let rem = libc::iovec { iov_base: (remote + done as u64) as usize as *mut libc::c_void, iov_len: n };
        // SAFETY: one local iovec inside the caller's buffer (contract); the remote iovec is
        // only interpreted by the kernel in the other process, which checks it.
        let r = unsafe { call(pid as libc::pid_t, &local, 1, &rem, 1, 0) };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(libc::EFAULT);
        }
        done += r as usize;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn key_roundtrip() {
        let k = make_key(0xdead_beef_0000, 12345);
        assert_eq!(parse_key(&k), Some((0xdead_beef_0000, 12345)));
        assert_eq!(parse_key(&[0; 32]), None);
    }

    #[test]
    fn read_own_memory() {
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        // SAFETY: dst is a live buffer of that length.
        unsafe { read_remote(std::process::id(), src.as_ptr() as u64, dst.as_mut_ptr(), dst.len()) }.unwrap();
        assert_eq!(src, dst);
        let mut back = vec![0u8; src.len()];
        // SAFETY: src is a live buffer of that length; back is the remote side, in this process.
        unsafe { write_remote(std::process::id(), back.as_mut_ptr() as u64, src.as_ptr(), src.len()) }
            .unwrap();
        assert_eq!(src, back);
        // SAFETY: as above.
        assert_eq!(unsafe { write_remote(std::process::id(), 8, src.as_ptr(), 16) }, Err(libc::EFAULT));
        // Unmapped remote address: an error, not a crash.
        // SAFETY: as above.
        let r = unsafe { read_remote(std::process::id(), 8, dst.as_mut_ptr(), 16) };
        assert_eq!(r, Err(libc::EFAULT));
    }
}
