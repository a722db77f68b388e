//! The PMIx client's part of a growing universe: `PMIx_Spawn` of a new job, the universe base
//! of this job, and the other jobs this process learned — their keys read by namespace and
//! their terminations mapped to universe ranks by the event handler.

use std::ffi::{c_char, CString};
use std::time::Instant;

use super::{lock_events, pmix_err, sys, value, GetMode, PmixRuntime, KEY_PREFIX};
use crate::universe::{JobRef, SpawnRequest, KEY_UNIV_BASE};
use crate::RuntimeError;

/// `KEY_UNIV_BASE` of our job: 0 when the server registered none (a first job, or a server
/// other than weft-run).
pub(super) fn universe_base(rt: &PmixRuntime) -> Result<u32, RuntimeError> {
    let key = CString::new(KEY_UNIV_BASE).expect("no NUL");
    match rt.get_raw(sys::PMIX_RANK_WILDCARD, key.as_bytes_with_nul(), GetMode::LocalOnly) {
        Ok(v) => v.as_u32().ok_or_else(|| RuntimeError::Env(format!("{KEY_UNIV_BASE} is not an integer"))),
        Err(_) => Ok(0),
    }
}

/// Which PMIx server this process runs under, from the environment its launcher sets.
pub(super) fn server_name() -> &'static str {
    let set = |v: &str| std::env::var_os(v).is_some();
    if set("SLURM_JOB_ID") {
        "the PMIx server of Slurm (srun --mpi=pmix)"
    } else if set("PRTE_LAUNCHED")
        || set("OMPI_COMM_WORLD_SIZE")
        || set("PMIX_SERVER_URI41") && set("OMPI_MCA_prte_launch")
    {
        "the PMIx server of PRRTE (Open MPI's mpirun)"
    } else {
        "the PMIx server of this job (not weft-run)"
    }
}

/// NUL-terminated copy of `s` (a NUL inside is an error naming `what`).
fn c_string(s: &str, what: &str) -> Result<CString, RuntimeError> {
    CString::new(s).map_err(|_| RuntimeError::Spawn(format!("{what} {s:?} contains a NUL byte")))
}

/// `PMIx_Spawn` of one application of `req.maxprocs` copies, with `req.job_info` as string
/// job infos; then the new job's universe base, read from its job-level data.
pub(super) fn spawn(req: &SpawnRequest) -> Result<JobRef, RuntimeError> {
    if req.maxprocs == 0 || req.maxprocs > i32::MAX as u32 {
        return Err(RuntimeError::Spawn(format!("cannot start {} processes", req.maxprocs)));
    }
    let cmd = c_string(&req.command, "command")?;
    let args: Vec<CString> = std::iter::once(Ok(cmd.clone()))
        .chain(req.args.iter().map(|a| c_string(a, "argument")))
        .collect::<Result<_, _>>()?;
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let keys: Vec<Vec<u8>> = req.job_info.iter().map(|(k, _)| format!("{k}\0").into_bytes()).collect();
    let vals: Vec<CString> = req.job_info.iter().map(|(k, v)| c_string(v, k)).collect::<Result<_, _>>()?;
    let infos: Vec<sys::pmix_info_t> =
        keys.iter().zip(&vals).map(|(k, v)| value::info_borrowed_str(k, v)).collect();
    let app = sys::pmix_app_t {
        cmd: cmd.as_ptr().cast_mut(),
        argv: argv.as_mut_ptr(),
        env: std::ptr::null_mut(),
        cwd: std::ptr::null_mut(),
        maxprocs: req.maxprocs as i32,
        info: std::ptr::null_mut(),
        ninfo: 0,
    };
    let mut nspace: sys::pmix_nspace_t = [0; sys::PMIX_MAX_NSLEN as usize + 1];
    // SAFETY: `infos` borrow `keys`/`vals` (alive until the end of this function); `app`
    // points at `cmd` and the NULL-terminated `argv`, whose strings `args` keeps alive; PMIx
    // only reads them (it packs them into its request) and writes the new namespace into
    // `nspace`, which has room for PMIX_MAX_NSLEN + NUL. The call blocks until the server
    // answered.
    let rc = unsafe {
        sys::PMIx_Spawn(
            if infos.is_empty() { std::ptr::null() } else { infos.as_ptr() },
            infos.len(),
            &app,
            1,
            nspace.as_mut_ptr(),
        )
    };
    if rc != sys::PMIX_SUCCESS as sys::pmix_status_t {
        return Err(RuntimeError::Spawn(format!(
            "the PMIx server refused to start {} process(es) of {:?}: {}",
            req.maxprocs,
            req.command,
            value::error_string(rc)
        )));
    }
    let ns = value::nspace_str(&nspace);
    let key = CString::new(KEY_UNIV_BASE).expect("no NUL");
    let p = value::make_proc(&nspace, sys::PMIX_RANK_WILDCARD);
    let base = get_value(&p, key.as_bytes_with_nul(), GetMode::Server)
        .ok()
        .and_then(|v| v.as_u32())
        .ok_or_else(|| {
            RuntimeError::Spawn(format!(
                "the PMIx server started job {ns} but registered no {KEY_UNIV_BASE} for it: only \
             weft-run places spawned processes in the universe of the spawning job"
            ))
        })?;
    Ok(JobRef { nspace: ns, base, size: req.maxprocs })
}

/// Record `job` (unless known): its keys become readable and its terminations reported.
pub(super) fn add_job(rt: &mut PmixRuntime, job: JobRef) -> Result<(), RuntimeError> {
    if job.nspace == rt.nspace || rt.others.iter().any(|j| j.nspace == job.nspace) {
        return Ok(());
    }
    let ns = value::nspace_from(&job.nspace)?;
    {
        let mut ev = lock_events();
        ev.others.push((ns, job.base, job.size));
    }
    rt.others.push(job);
    Ok(())
}

/// `PMIx_Get(p, key)` with the qualifiers of `how` (as `PmixRuntime::get_raw`, for any proc).
fn get_value(p: &sys::pmix_proc_t, key: &[u8], how: GetMode) -> Result<value::OwnedValue, i32> {
    let info = match how {
        GetMode::Server => None,
        GetMode::LocalOnly => Some(value::info_bool(sys::PMIX_OPTIONAL, true)),
        GetMode::DirectModex => Some(value::info_int(sys::PMIX_TIMEOUT, 1)),
    };
    let (ip, ni) = match &info {
        Some(i) => (i as *const sys::pmix_info_t, 1),
        None => (std::ptr::null(), 0),
    };
    let mut out: *mut sys::pmix_value_t = std::ptr::null_mut();
    // SAFETY: `p` and `info` are valid for the call; `key` is NUL-terminated; on success PMIx
    // stores a malloc'ed value in `out`, which OwnedValue takes over and releases.
    let rc = unsafe { sys::PMIx_Get(p, key.as_ptr().cast(), ip, ni, &mut out) };
    if rc != sys::PMIX_SUCCESS as i32 {
        return Err(rc);
    }
    // SAFETY: PMIx_Get succeeded, `out` is a value allocated by libpmix for us.
    unsafe { value::OwnedValue::from_raw(out) }.ok_or(sys::PMIX_ERR_NOT_FOUND)
}

/// The value universe rank `u` of another known job put under `key`: asked of the server in
/// one-second tries until the runtime's timeout (the process may not have committed it yet:
/// a spawned process publishes its keys while its parents already wait for them).
pub(super) fn get_foreign(rt: &mut PmixRuntime, u: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
    rt.check_live("PMIx_Get")?;
    let job = rt
        .others
        .iter()
        .find(|j| j.job_rank(u).is_some())
        .cloned()
        .ok_or(RuntimeError::BadRank { rank: u, size: rt.base + rt.size })?;
    let ns = value::nspace_from(&job.nspace)?;
    let p = value::make_proc(&ns, u - job.base);
    let full = CString::new(format!("{KEY_PREFIX}{key}"))
        .map_err(|_| RuntimeError::Env(format!("modex key {key:?} contains NUL")))?;
    let deadline = Instant::now() + crate::runtime::server_timeout();
    loop {
        let got = match get_value(&p, full.as_bytes_with_nul(), GetMode::LocalOnly) {
            Err(rc) if rc == sys::PMIX_ERR_NOT_FOUND => {
                get_value(&p, full.as_bytes_with_nul(), GetMode::DirectModex)
            }
            other => other,
        };
        match got {
            Ok(v) => {
                return v.to_bytes().ok_or_else(|| {
                    RuntimeError::Env(format!("modex value {key:?} of universe rank {u} is not bytes"))
                })
            }
            Err(rc)
                if (rc == sys::PMIX_ERR_NOT_FOUND || rc == sys::PMIX_ERR_TIMEOUT)
                    && Instant::now() < deadline =>
            {
                if rt.known_terminated().contains(&u) {
                    return Err(RuntimeError::FenceFailed(vec![u]));
                }
            }
            Err(rc) if rc == sys::PMIX_ERR_NOT_FOUND || rc == sys::PMIX_ERR_TIMEOUT => {
                return Err(RuntimeError::NotFound { rank: u, key: key.to_string() })
            }
            Err(rc) => return Err(pmix_err("PMIx_Get", rc)),
        }
    }
}
