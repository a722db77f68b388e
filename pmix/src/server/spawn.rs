//! `PMIx_Spawn` on weft-run's server: the server module's `spawn` upcall, the registration of
//! a spawned job, and the translation between universe ranks and (namespace, rank).
//!
//! The upcall runs on libpmix's progress thread: it only decodes the request (one application,
//! its command, arguments and process count, and the `weft.*` string job infos the spawning
//! job passes for its children) and hands it to the launcher's loop as
//! [`ServerEvent::Spawn`]. The loop decides (the universe may be full), registers the new
//! job with [`PmixServer::register_spawned`] (namespace `<job>.u<base>`, job-level
//! [`KEY_UNIV_BASE`], `PMIX_SPAWNED`, `PMIX_PARENT_ID`, the spawning job's infos), forks the
//! processes with [`PmixServer::client_env_of`], and answers through [`SpawnReply`] — the
//! spawning process's `PMIx_Spawn` returns then, with the new namespace.
//!
//! Universe ranks: the launcher's first job holds `0..N`; a spawned job the ranks after every
//! process started before it. libpmix's callbacks name procs by (namespace, rank); the host
//! link maps them to universe ranks for the launcher, and [`PmixServer::proc_of`] maps back
//! for termination events.

use std::ffi::{c_void, CStr};
use std::fmt;

use super::{blocking, lock_host, nspace_of, sys, value, Infos, PmixServer, ServerEvent, OK};
use crate::universe::KEY_UNIV_BASE;
use crate::RuntimeError;

/// A spawn request from a client, for the launcher's loop.
#[derive(Debug)]
pub struct SpawnCall {
    /// Universe rank of the process that called `PMIx_Spawn`.
    pub requester: u32,
    pub command: String,
    /// Arguments after the program name.
    pub args: Vec<String>,
    pub maxprocs: u32,
    /// `weft.*` job infos with string values (data for the new job).
    pub job_info: Vec<(String, String)>,
    pub reply: SpawnReply,
}

/// The answer libpmix waits for: called exactly once (a reply dropped unanswered refuses
/// the spawn).
pub struct SpawnReply {
    cbfunc: sys::pmix_spawn_cbfunc_t,
    cbdata: *mut c_void,
}

// SAFETY: libpmix's spawn callback may be called from any thread (it thread-shifts into its
// own progress thread before touching its state); `cbdata` is its opaque request pointer,
// which we only hand back.
unsafe impl Send for SpawnReply {}

impl fmt::Debug for SpawnReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpawnReply")
    }
}

/// Why a launcher refuses a spawn (the PMIx status the caller's `PMIx_Spawn` returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The launcher does not start processes (`PMIX_ERR_NOT_SUPPORTED`).
    NotSupported,
    /// Not enough room in the universe (`PMIX_ERR_OUT_OF_RESOURCE`).
    OutOfResource,
    /// The program was not found (`PMIX_ERR_NOT_FOUND`).
    NotFound,
    /// Starting the processes failed (`PMIX_ERR_NOT_AVAILABLE`).
    Failed,
}

impl Refusal {
    fn status(self) -> sys::pmix_status_t {
        match self {
            Refusal::NotSupported => sys::PMIX_ERR_NOT_SUPPORTED,
            Refusal::OutOfResource => sys::PMIX_ERR_OUT_OF_RESOURCE,
            Refusal::NotFound => sys::PMIX_ERR_NOT_FOUND,
            Refusal::Failed => sys::PMIX_ERR_NOT_AVAILABLE,
        }
    }
}

impl SpawnReply {
    /// Answer the spawn: the new namespace, or why it is refused.
    pub fn answer(mut self, res: Result<&str, Refusal>) {
        let cb = self.cbfunc.take();
        let Some(cb) = cb else { return };
        let (status, ns) = match res {
            Ok(ns) => match nspace_of(ns) {
                Ok(n) => (OK, n),
                Err(_) => (sys::PMIX_ERR_BAD_PARAM, [0; sys::PMIX_MAX_NSLEN as usize + 1]),
            },
            Err(why) => (why.status(), [0; sys::PMIX_MAX_NSLEN as usize + 1]),
        };
        let mut ns = ns;
        // SAFETY: the pair libpmix gave the spawn upcall, called once (taken above); libpmix
        // copies the namespace before returning.
        unsafe { cb(status, ns.as_mut_ptr(), self.cbdata) };
    }
}

impl Drop for SpawnReply {
    fn drop(&mut self) {
        if let Some(cb) = self.cbfunc.take() {
            let mut ns = [0; sys::PMIX_MAX_NSLEN as usize + 1];
            // SAFETY: as in `answer`; this is the one call.
            unsafe { cb(sys::PMIX_ERR_NOT_SUPPORTED, ns.as_mut_ptr(), self.cbdata) };
        }
    }
}

/// The server module's `spawn`: decode and forward to the launcher's loop.
///
/// # Safety
/// Called by libpmix with valid (or NULL with zero count) arrays, alive during the call.
pub(super) unsafe extern "C" fn spawn_upcall(
    proc_: *const sys::pmix_proc_t,
    job_info: *const sys::pmix_info_t,
    ninfo: usize,
    apps: *const sys::pmix_app_t,
    napps: usize,
    cbfunc: sys::pmix_spawn_cbfunc_t,
    cbdata: *mut c_void,
) -> sys::pmix_status_t {
    let decoded = std::panic::catch_unwind(|| {
        // SAFETY: by this function's contract.
        unsafe { decode(proc_, job_info, ninfo, apps, napps) }
    });
    let Ok(Some((requester, command, args, maxprocs, job_info))) = decoded else {
        return sys::PMIX_ERR_NOT_SUPPORTED;
    };
    let call =
        SpawnCall { requester, command, args, maxprocs, job_info, reply: SpawnReply { cbfunc, cbdata } };
    let guard = lock_host();
    let Some(link) = guard.as_ref() else {
        // No launcher: the reply's drop would answer, but libpmix takes an error return as
        // "no callback will come", so do not call it.
        std::mem::forget(call.reply);
        return sys::PMIX_ERR_NOT_SUPPORTED;
    };
    match link.tx.send(ServerEvent::Spawn(call)) {
        Ok(()) => {
            let _ = nix::unistd::write(&link.wake, &[1u8]);
            OK
        }
        Err(e) => {
            if let ServerEvent::Spawn(c) = e.0 {
                std::mem::forget(c.reply);
            }
            sys::PMIX_ERR_NOT_SUPPORTED
        }
    }
}

type Decoded = (u32, String, Vec<String>, u32, Vec<(String, String)>);

/// One application's command, arguments and count, and the `weft.*` string job infos.
///
/// # Safety
/// As [`spawn_upcall`].
unsafe fn decode(
    proc_: *const sys::pmix_proc_t,
    job_info: *const sys::pmix_info_t,
    ninfo: usize,
    apps: *const sys::pmix_app_t,
    napps: usize,
) -> Option<Decoded> {
    if napps != 1 || apps.is_null() {
        return None;
    }
    // SAFETY: by the contract, `proc_` is valid or NULL.
    let requester = universe_rank(unsafe { proc_.as_ref() }?)?;
    // SAFETY: one valid app (checked non-NULL, napps == 1).
    let app = unsafe { &*apps };
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: libpmix's strings are NUL-terminated and valid during the call.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let command = text(app.cmd)?;
    let mut args = Vec::new();
    if !app.argv.is_null() {
        // argv[0] is the program name; the rest are its arguments, NULL-terminated.
        let mut i = 1;
        // SAFETY: a NULL-terminated array of valid strings (argv[0] exists when argv does).
        while let Some(a) = text(unsafe { *app.argv.add(i) }) {
            args.push(a);
            i += 1;
        }
    }
    let maxprocs = u32::try_from(app.maxprocs).ok().filter(|&n| n > 0)?;
    let infos: &[sys::pmix_info_t] = if job_info.is_null() || ninfo == 0 {
        &[]
    } else {
        // SAFETY: by the contract, `ninfo` valid infos.
        unsafe { std::slice::from_raw_parts(job_info, ninfo) }
    };
    let mut pairs = Vec::new();
    for i in infos {
        // SAFETY: pmix keys are NUL-terminated within their array.
        let key = unsafe { CStr::from_ptr(i.key.as_ptr()) }.to_string_lossy().into_owned();
        if key.starts_with("weft.") && u32::from(i.value.type_) == sys::PMIX_STRING {
            // SAFETY: a PMIX_STRING value's active member is `string`.
            if let Some(v) = text(unsafe { i.value.data.string }) {
                pairs.push((key, v));
            }
        }
    }
    Some((requester, command, args, maxprocs, pairs))
}

/// Universe rank of a client proc (its job's base + its rank), if the job is ours.
pub(super) fn universe_rank(p: &sys::pmix_proc_t) -> Option<u32> {
    let guard = lock_host();
    let link = guard.as_ref()?;
    if value::nspace_eq(&p.nspace, &link.nspace) {
        return Some(p.rank);
    }
    link.spawned
        .iter()
        .find(|(ns, _, size)| value::nspace_eq(&p.nspace, ns) && p.rank < *size)
        .map(|(_, base, _)| base + p.rank)
}

impl PmixServer {
    /// Register a spawned job of `size` processes whose rank 0 is universe rank `base`, started
    /// by universe rank `parent`, with `job_info` as job-level string data; returns its
    /// namespace. Its processes run on the first node.
    pub fn register_spawned(
        &mut self,
        base: u32,
        size: u32,
        parent: u32,
        job_info: &[(String, String)],
    ) -> Result<String, RuntimeError> {
        let name = format!("{}.u{base}", value::nspace_str(&self.nspace));
        let ns = nspace_of(&name)?;
        let host = self.hostnames.first().cloned().unwrap_or_default();
        let peers: Vec<String> = (0..size).map(|r| r.to_string()).collect();
        let mut info = Infos::default();
        info.u32(sys::PMIX_UNIV_SIZE, base + size);
        info.u32(sys::PMIX_JOB_SIZE, size);
        info.u32(sys::PMIX_MAX_PROCS, size);
        info.u32(sys::PMIX_NUM_NODES, 1);
        info.u32(sys::PMIX_SPAWNED, 1);
        info.push(crate::client::KEY_FENCE_COLLECTS_ALL, sys::PMIX_BOOL, |v| v.data.flag = true);
        let key = |k: &str| format!("{k}\0").into_bytes();
        info.u32(&key(KEY_UNIV_BASE), base);
        for (k, v) in job_info {
            info.string(&key(k), v);
        }
        if let Some(p) = self.proc_of(parent) {
            info.proc_(sys::PMIX_PARENT_ID, p);
        }
        info.string(sys::PMIX_NODE_MAP, &host);
        info.string(sys::PMIX_PROC_MAP, &peers.join(","));
        let mut n = Infos::default();
        n.string(sys::PMIX_HOSTNAME, &host);
        n.u32(sys::PMIX_NODEID, 0);
        n.string(sys::PMIX_LOCAL_PEERS, &peers.join(","));
        n.u32(sys::PMIX_LOCAL_SIZE, size);
        info.infos(sys::PMIX_NODE_INFO_ARRAY, n);
        for rank in 0..size {
            let mut p = Infos::default();
            // PMIX_RANK must come first in a PMIX_PROC_DATA array.
            p.rank(sys::PMIX_RANK, rank);
            p.u32(sys::PMIX_NODEID, 0);
            p.string(sys::PMIX_HOSTNAME, &host);
            p.u16(sys::PMIX_LOCAL_RANK, rank as u16);
            p.u16(sys::PMIX_NODE_RANK, rank as u16);
            p.u32(sys::PMIX_APPNUM, 0);
            info.infos(sys::PMIX_PROC_DATA, p);
        }
        blocking("PMIx_server_register_nspace", info, |info, cb, cbdata| {
            let n = info.list.len();
            // SAFETY: `ns` is NUL-terminated; the infos stay alive until the completion
            // callback (`blocking` keeps them); libpmix only reads them.
            unsafe {
                sys::PMIx_server_register_nspace(
                    ns.as_ptr(),
                    size as i32,
                    info.list.as_ptr().cast_mut(),
                    n,
                    cb,
                    cbdata,
                )
            }
        })?;
        // SAFETY: geteuid/getegid only read the process credentials.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        for rank in 0..size {
            let p = value::make_proc(&ns, rank);
            blocking("PMIx_server_register_client", p, |p, cb, cbdata| {
                // SAFETY: `p` is a valid proc kept alive until the callback; no server object.
                unsafe { sys::PMIx_server_register_client(p, uid, gid, std::ptr::null_mut(), cb, cbdata) }
            })?;
        }
        self.spawned.push((ns, base, size));
        if let Some(link) = lock_host().as_mut() {
            link.spawned.push((ns, base, size));
        }
        Ok(name)
    }

    /// The (namespace, rank) proc of universe rank `u`, if it belongs to a registered job.
    pub(super) fn proc_of(&self, u: u32) -> Option<sys::pmix_proc_t> {
        if u < self.size {
            return Some(value::make_proc(&self.nspace, u));
        }
        self.spawned
            .iter()
            .find(|(_, base, size)| u >= *base && u - base < *size)
            .map(|(ns, base, _)| value::make_proc(ns, u - base))
    }

    /// The environment universe rank `u` needs to connect (`PMIx_server_setup_fork`), as
    /// [`PmixServer::client_env`] for a rank of any registered job.
    pub fn client_env_of(
        &self,
        u: u32,
    ) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>, RuntimeError> {
        if u < self.size {
            return self.client_env(u);
        }
        let p = self.proc_of(u).ok_or(RuntimeError::BadRank { rank: u, size: self.size })?;
        let mut out = super::setup_fork(&p)?;
        if let Some(h) = self.hostnames.first() {
            out.push(("PMIX_HOSTNAME".into(), h.clone().into()));
        }
        Ok(out)
    }
}
