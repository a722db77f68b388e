//! The glibc tunables weft-run gives the ranks of an oversubscribed job (more processes than
//! the CPUs weft-run may use), so that the context switches between ranks that share a core
//! cost less.
//!
//! With more ranks than cores, every collective or agreement needs each core to switch between
//! its ranks (at 4 ranks on 2 cores, two switches per core per agreement: each rank must run
//! to enter it and again to leave it), so the cost of one switch is most of the operation's
//! latency. Two things glibc does by default add to every switch:
//! - `glibc.pthread.rseq`: glibc registers a restartable-sequence area for every thread, and
//!   the kernel then updates it on every return to a process that was switched out;
//! - `glibc.cpu.hwcaps`: on CPUs with AVX-512, glibc's string functions (`memcpy`, `memcmp`,
//!   ...) use the EVEX-encoded versions, which leave the upper AVX-512 registers in use, so
//!   every switch saves and restores that state as well. Without `AVX512VL` (and the other
//!   AVX-512 features) glibc takes the AVX2 versions, which end with `vzeroupper`.
//!
//! Neither is used by weft (glibc's rseq area serves `sched_getcpu`, which then makes a vDSO
//! call). A key the user sets in `GLIBC_TUNABLES` is kept as it is; `--no-tunables` leaves the
//! variable alone.

use std::ffi::{OsStr, OsString};

/// The variable glibc's dynamic loader reads at the start of every process.
pub const ENV: &str = "GLIBC_TUNABLES";

/// What an oversubscribed rank gets, unless the user set the key.
const OVERSUBSCRIBED: [(&str, &str); 2] =
    [("glibc.pthread.rseq", "0"), ("glibc.cpu.hwcaps", "-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD")];

/// The `GLIBC_TUNABLES` of every rank of a job of at most `procs` live processes on a host
/// where weft-run may use `cpus` CPUs, given the launcher's own value `current`: `None`
/// leaves the environment as it is (not oversubscribed, every key already set by the user,
/// or a value that is not UTF-8).
pub fn for_ranks(procs: u32, cpus: usize, current: Option<&OsStr>) -> Option<OsString> {
    if procs as usize <= cpus {
        return None;
    }
    let current = match current {
        Some(c) => c.to_str()?,
        None => "",
    };
    let set: Vec<&str> = current.split(':').filter_map(|kv| kv.split('=').next()).collect();
    let mut out = current.to_string();
    for (k, v) in OVERSUBSCRIBED {
        if !set.contains(&k) {
            if !out.is_empty() {
                out.push(':');
            }
            out.push_str(&format!("{k}={v}"));
        }
    }
    (out != current).then(|| out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_oversubscribed_jobs_get_them() {
        assert_eq!(for_ranks(2, 2, None), None);
        assert_eq!(for_ranks(1, 8, Some(OsStr::new("glibc.malloc.check=3"))), None);
        let v = for_ranks(4, 2, None).unwrap();
        assert_eq!(
            v,
            "glibc.pthread.rseq=0:glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"
        );
    }

    #[test]
    fn the_users_keys_win_and_others_are_kept() {
        let v = for_ranks(3, 2, Some(OsStr::new("glibc.malloc.check=3:glibc.pthread.rseq=1"))).unwrap();
        assert_eq!(
            v,
            "glibc.malloc.check=3:glibc.pthread.rseq=1:\
             glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"
        );
        let all = "glibc.cpu.hwcaps=-AVX2:glibc.pthread.rseq=1";
        assert_eq!(for_ranks(3, 2, Some(OsStr::new(all))), None);
    }

    #[test]
    fn a_value_that_is_not_utf8_is_left_alone() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(for_ranks(3, 2, Some(OsStr::from_bytes(b"glibc.x=\xff"))), None);
    }
}
