//! Process descriptors (`pidfd`) of local peers: segment import and death detection.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::{errno_err, ShmError};

/// A pidfd: a descriptor that names one process (no pid-reuse race) and becomes readable when
/// that process exits.
pub struct PidFd {
    fd: OwnedFd,
}

/// Outcome of opening a peer's descriptors.
#[derive(Debug)]
pub enum OpenError {
    /// The process does not exist (any more).
    Gone,
    /// Another failure.
    Other(ShmError),
}

impl PidFd {
    /// `pidfd_open(pid)`.
    pub fn open(pid: u32) -> Result<PidFd, OpenError> {
        if pid == 0 || pid > i32::MAX as u32 {
            return Err(OpenError::Other(ShmError::Invalid(format!("bad pid {pid}"))));
        }
        // SAFETY: plain syscall with integer arguments; result checked.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if r < 0 {
            return Err(match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ESRCH) => OpenError::Gone,
                _ => OpenError::Other(errno_err("pidfd_open")),
            });
        }
        // SAFETY: r is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(r as i32) };
        Ok(PidFd { fd })
    }

    /// `pidfd_getfd`: duplicate descriptor `target_fd` of the process into this one.
    pub fn get_fd(&self, target_fd: i32) -> Result<OwnedFd, OpenError> {
        // SAFETY: plain syscall with integer arguments; result checked.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.fd.as_raw_fd(), target_fd, 0) };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::ESRCH) || self.has_exited() {
                return Err(OpenError::Gone);
            }
            return Err(OpenError::Other(errno_err("pidfd_getfd")));
        }
        // SAFETY: r is a fresh descriptor (CLOEXEC set by the kernel) owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(r as i32) })
    }

    /// Whether the process has exited (pidfd readable), without blocking.
    pub fn has_exited(&self) -> bool {
        let mut p = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, zero timeout.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r > 0 && p.revents != 0
    }

    /// The raw descriptor, for batched `poll`.
    pub fn raw(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

/// Make this process readable by any same-uid process under Yama ptrace restrictions
/// (needed by peers' `pidfd_getfd` and `process_vm_readv`). Harmless without Yama.
pub fn allow_ptrace_any() {
    // SAFETY: prctl with integer arguments; failure (no Yama: EINVAL) is fine to ignore.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
    }
}

/// One `poll()` with zero timeout over `fds`; returns the indices that became readable or
/// errored (process exited).
pub fn poll_exited(fds: &mut [libc::pollfd], out: &mut Vec<usize>) {
    if fds.is_empty() {
        return;
    }
    for f in fds.iter_mut() {
        f.revents = 0;
    }
    // SAFETY: fds is a valid slice of pollfd; entries with fd < 0 are ignored by the kernel.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if r <= 0 {
        return;
    }
    for (i, f) in fds.iter().enumerate() {
        if f.fd >= 0 && f.revents != 0 {
            out.push(i);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn self_pidfd_is_alive_and_child_death_seen() {
        let me = PidFd::open(std::process::id()).unwrap();
        assert!(!me.has_exited());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pf = PidFd::open(child.id()).unwrap();
        let t0 = std::time::Instant::now();
        while !pf.has_exited() {
            assert!(t0.elapsed().as_secs() < 10);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        child.wait().unwrap();
        assert!(matches!(PidFd::open(child.id()), Err(OpenError::Gone) | Ok(_)));
        assert!(matches!(PidFd::open(0), Err(OpenError::Other(_))));
    }
}
