//! The OpenPMIx *server* that `weft-run` hosts: [`PmixServer`].
//!
//! `weft-run` starts its ranks as clients of the system OpenPMIx server library (libpmix ≥ 4.2,
//! the same library the client backend [`crate::client`] links): every rank takes the PMIx
//! client path, exactly as under PRRTE or Slurm. This module owns the server side:
//!
//! - [`PmixServer::start`]: `PMIx_server_init` with weft's server module, then
//!   `PMIx_server_register_nspace` (job size, and per rank `PMIX_NODEID`, `PMIX_HOSTNAME`,
//!   `PMIX_LOCAL_RANK`, `PMIX_NODE_RANK` of its *virtual* node) and
//!   `PMIx_server_register_client` for every rank;
//! - [`PmixServer::client_env`]: `PMIx_server_setup_fork`, the environment a rank needs to
//!   connect (`PMIX_NAMESPACE`, `PMIX_RANK`, `PMIX_SERVER_URI*`, …);
//! - [`PmixServer::notify_terminated`] / [`PmixServer::notify_node_down`]:
//!   `PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED | PMIX_EVENT_NODE_DOWN)` naming the affected
//!   procs (`PMIX_EVENT_AFFECTED_PROC(S)`), the codes the client backend registers for;
//! - [`PmixServer::drain`]: what the clients told the server (connected, finalized, abort),
//!   delivered to the launcher's event loop through a channel plus a wake-up pipe
//!   ([`PmixServer::wake_fd`], for `poll`).
//!
//! The server module (the host callbacks libpmix calls on its own progress thread):
//! `client_connected`, `client_finalized` and `abort` are forwarded to the launcher's loop;
//! `fence_nb` hands the collected data straight back (every proc of the job is a local client
//! of this one server, so libpmix has already gathered everything); `direct_modex` answers
//! NOT_FOUND (libpmix answers a local proc's data itself and there are no remote procs);
//! `notify_event` has nothing to relay beyond this server (libpmix delivers to its own
//! clients); `spawn` hands the request to the launcher's loop, which starts the new job of
//! the universe and answers (see `server/spawn.rs`). The callbacks touch only a `static` channel sender behind a mutex and a pipe, so
//! they are thread-safe and never wait for the launcher's loop.
//!
//! Out-of-band detection path: a rank dies → its pidfd wakes the launcher's loop →
//! `notify_terminated` → libpmix sends the event to every client → the client library's
//! progress thread runs weft's handler, which queues the rank and sets an atomic flag that the
//! engine's progress loop reads (no syscall per progress call).
//!
//! libpmix keeps one server per process: a second [`PmixServer`] is refused. The server's
//! storage component is forced to `hash` (`PMIX_MCA_gds=hash`, unless the user chose one), so
//! no shared-memory segment of the job store can outlive the launcher.

use std::ffi::{c_char, c_int, c_void, CStr, CString, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::client::sys;
use crate::client::value;
use crate::RuntimeError;

mod spawn;
pub use spawn::{Refusal, SpawnCall, SpawnReply};

/// What a client told the server (delivered by [`PmixServer::drain`]). Ranks are universe
/// ranks (a spawned job's processes come after the first job's).
#[derive(Debug)]
pub enum ServerEvent {
    /// A rank called `PMIx_Spawn`: the launcher starts the job and answers.
    Spawn(SpawnCall),
    /// The rank completed `PMIx_Init`.
    Connected(u32),
    /// The rank called `PMIx_Finalize`.
    Finalized(u32),
    /// The rank called `PMIx_Abort(code, msg)`.
    Abort { rank: u32, code: i32, msg: String },
}

/// The job a [`PmixServer`] serves.
pub struct JobSpec<'a> {
    /// Namespace (= weft job id), shorter than `PMIX_MAX_NSLEN`, no NUL.
    pub nspace: &'a str,
    /// Virtual node of every rank, indexed by rank; nodes are dense from 0.
    pub node_of: &'a [u32],
    /// Host name of every virtual node (`PMIX_HOSTNAME` of its ranks).
    pub hostnames: &'a [String],
    /// Directory for the server's rendezvous files (private to the launcher; it removes it).
    pub tmpdir: &'a Path,
}

/// The launcher's link to the callbacks: set while a [`PmixServer`] exists.
struct HostLink {
    nspace: sys::pmix_nspace_t,
    /// Spawned jobs: (namespace, universe base, size).
    spawned: Vec<(sys::pmix_nspace_t, u32, u32)>,
    tx: Sender<ServerEvent>,
    /// Write end of the wake-up pipe (non-blocking).
    wake: OwnedFd,
}

static HOST: Mutex<Option<HostLink>> = Mutex::new(None);
/// True while a [`PmixServer`] exists (libpmix has one server per process).
static SERVER_LIVE: AtomicBool = AtomicBool::new(false);

fn lock_host() -> std::sync::MutexGuard<'static, Option<HostLink>> {
    // Only sends and a pipe write happen under the lock: a panic cannot leave it inconsistent.
    HOST.lock().unwrap_or_else(|e| e.into_inner())
}

fn pmix_err(call: &'static str, status: sys::pmix_status_t) -> RuntimeError {
    RuntimeError::Pmix { call, status, name: value::error_string(status) }
}

const OK: sys::pmix_status_t = sys::PMIX_SUCCESS as sys::pmix_status_t;

/// How long a blocking wrapper waits for libpmix's completion callback.
const COMPLETION_TIMEOUT: Duration = Duration::from_secs(30);

/// A one-shot completion for libpmix's `pmix_op_cbfunc_t` callbacks, waited on by the caller.
struct Completion {
    status: Mutex<Option<sys::pmix_status_t>>,
    cv: Condvar,
}

impl Completion {
    fn new() -> Completion {
        Completion { status: Mutex::new(None), cv: Condvar::new() }
    }

    fn cbdata(&self) -> *mut c_void {
        (self as *const Completion).cast_mut().cast()
    }

    /// Wait for the callback; `call`'s status if it came, TIMEOUT otherwise.
    fn wait(&self, call: &'static str) -> Result<(), RuntimeError> {
        let g = self.status.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self
            .cv
            .wait_timeout_while(g, COMPLETION_TIMEOUT, |s| s.is_none())
            .unwrap_or_else(|e| e.into_inner());
        match *g {
            Some(OK) => Ok(()),
            Some(rc) => Err(pmix_err(call, rc)),
            None => Err(pmix_err(call, sys::PMIX_ERR_TIMEOUT)),
        }
    }
}

/// `pmix_op_cbfunc_t` completing a [`Completion`].
unsafe extern "C" fn op_done(status: sys::pmix_status_t, cbdata: *mut c_void) {
    // SAFETY: `cbdata` is the address of a `Completion` that its owner keeps alive until
    // `wait` has seen the status (or timed out: then the owner leaks it, see `blocking`).
    let c = unsafe { &*(cbdata as *const Completion) };
    *c.status.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
    c.cv.notify_all();
}

/// Run a non-blocking PMIx call that reports through `op_done`, and wait for it. `start`
/// gets the callback and its cbdata and returns the call's immediate status: SUCCESS (the
/// callback will come), OPERATION_SUCCEEDED (done, no callback) or an error (no callback).
/// `keep` (the call's input data) stays alive until the callback; on a timeout both it and the
/// completion are leaked, since libpmix may still use them.
fn blocking<T>(
    call: &'static str,
    keep: T,
    start: impl FnOnce(&T, sys::pmix_op_cbfunc_t, *mut c_void) -> sys::pmix_status_t,
) -> Result<(), RuntimeError> {
    let done = Box::new(Completion::new());
    let rc = start(&keep, Some(op_done), done.cbdata());
    if rc == sys::PMIX_OPERATION_SUCCEEDED {
        return Ok(());
    }
    if rc != OK {
        return Err(pmix_err(call, rc));
    }
    let res = done.wait(call);
    if matches!(&res, Err(RuntimeError::Pmix { status, .. }) if *status == sys::PMIX_ERR_TIMEOUT) {
        std::mem::forget(done);
        std::mem::forget(keep);
    }
    res
}

/// An array of `pmix_info_t` together with the memory its values point to (strings, data
/// arrays). libpmix copies what it needs; we only ever free our own allocations, on drop.
#[derive(Default)]
struct Infos {
    list: Vec<sys::pmix_info_t>,
    strings: Vec<CString>,
    // Boxed so each array keeps its address while the Vec grows (infos point to them).
    #[allow(clippy::vec_box)]
    arrays: Vec<Box<sys::pmix_data_array_t>>,
    procs: Vec<Vec<sys::pmix_proc_t>>,
    nested: Vec<Infos>,
}

impl Infos {
    fn push(&mut self, key: &[u8], ty: u32, set: impl FnOnce(&mut sys::pmix_value_t)) {
        let mut i = sys::pmix_info_t::default();
        value::load_key(&mut i.key, key);
        i.value.type_ = ty as sys::pmix_data_type_t;
        set(&mut i.value);
        self.list.push(i);
    }

    fn u32(&mut self, key: &[u8], n: u32) {
        self.push(key, sys::PMIX_UINT32, |v| v.data.uint32 = n);
    }

    fn u64(&mut self, key: &[u8], n: u64) {
        self.push(key, sys::PMIX_UINT64, |v| v.data.uint64 = n);
    }

    fn u16(&mut self, key: &[u8], n: u16) {
        self.push(key, sys::PMIX_UINT16, |v| v.data.uint16 = n);
    }

    fn rank(&mut self, key: &[u8], r: u32) {
        self.push(key, sys::PMIX_PROC_RANK, |v| v.data.rank = r);
    }

    fn string(&mut self, key: &[u8], s: &str) {
        let c = CString::new(s.replace('\0', " ")).unwrap_or_default();
        let p = c.as_ptr().cast_mut();
        self.strings.push(c);
        self.push(key, sys::PMIX_STRING, |v| v.data.string = p);
    }

    fn proc_(&mut self, key: &[u8], p: sys::pmix_proc_t) {
        self.procs.push(vec![p]);
        let ptr = self.procs.last_mut().expect("just pushed").as_mut_ptr();
        self.push(key, sys::PMIX_PROC, |v| v.data.proc_ = ptr);
    }

    fn array(&mut self, key: &[u8], ty: u32, ptr: *mut c_void, size: usize) {
        let mut da =
            Box::new(sys::pmix_data_array_t { type_: ty as sys::pmix_data_type_t, size, array: ptr });
        let dp: *mut sys::pmix_data_array_t = &mut *da;
        self.arrays.push(da);
        self.push(key, sys::PMIX_DATA_ARRAY, |v| v.data.darray = dp);
    }

    fn procs(&mut self, key: &[u8], ps: Vec<sys::pmix_proc_t>) {
        self.procs.push(ps);
        let v = self.procs.last_mut().expect("just pushed");
        let (ptr, n) = (v.as_mut_ptr().cast(), v.len());
        self.array(key, sys::PMIX_PROC, ptr, n);
    }

    fn infos(&mut self, key: &[u8], mut inner: Infos) {
        let (ptr, n) = (inner.list.as_mut_ptr().cast(), inner.list.len());
        // Moving `inner` moves the Vec header, not its heap buffer: `ptr` stays valid.
        self.nested.push(inner);
        self.array(key, sys::PMIX_INFO, ptr, n);
    }

    fn as_mut_ptr(&mut self) -> *mut sys::pmix_info_t {
        if self.list.is_empty() {
            std::ptr::null_mut()
        } else {
            self.list.as_mut_ptr()
        }
    }
}

// SAFETY: `Infos` owns every allocation its raw pointers point to; moving it to another
// thread (a leaked copy kept alive for libpmix's progress thread) moves that ownership along.
unsafe impl Send for Infos {}

fn nspace_of(s: &str) -> Result<sys::pmix_nspace_t, RuntimeError> {
    if s.is_empty() || s.len() >= sys::PMIX_MAX_NSLEN as usize || s.contains('\0') {
        return Err(RuntimeError::Env(format!("job id {s:?} is not a valid PMIx namespace")));
    }
    let mut ns: sys::pmix_nspace_t = [0; sys::PMIX_MAX_NSLEN as usize + 1];
    for (d, b) in ns.iter_mut().zip(s.bytes()) {
        *d = b as c_char;
    }
    Ok(ns)
}

/// The PMIx server of one `weft-run` job (see the module documentation).
pub struct PmixServer {
    nspace: sys::pmix_nspace_t,
    size: u32,
    rx: Receiver<ServerEvent>,
    /// Read end of the wake-up pipe (non-blocking).
    wake: OwnedFd,
    /// The node ids and host names, for node-down events.
    node_of: Vec<u32>,
    hostnames: Vec<String>,
    /// Spawned jobs: (namespace, universe base, size).
    spawned: Vec<(sys::pmix_nspace_t, u32, u32)>,
    /// Call `PMIx_server_finalize` on drop (see [`PmixServer::skip_finalize`]).
    finalize: bool,
}

impl PmixServer {
    /// Initialise the server library, register the job's namespace and every rank.
    pub fn start(spec: &JobSpec<'_>) -> Result<PmixServer, RuntimeError> {
        let size = u32::try_from(spec.node_of.len()).unwrap_or(u32::MAX);
        if size == 0 {
            return Err(RuntimeError::Env("a job needs at least one rank".into()));
        }
        let nnodes = spec.node_of.iter().max().map_or(0, |m| m + 1);
        if spec.hostnames.len() != nnodes as usize {
            return Err(RuntimeError::Env(format!("{} host names for {nnodes} nodes", spec.hostnames.len())));
        }
        let nspace = nspace_of(spec.nspace)?;
        if SERVER_LIVE.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(RuntimeError::Pmix {
                call: "PmixServer::start",
                status: sys::PMIX_ERR_INIT,
                name: "a PmixServer already exists in this process (libpmix has one server)".into(),
            });
        }
        let (tx, rx) = channel();
        let (wake_rx, wake_tx) =
            match nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC) {
                Ok(p) => p,
                Err(e) => {
                    SERVER_LIVE.store(false, Ordering::Release);
                    return Err(std::io::Error::from(e).into());
                }
            };
        *lock_host() = Some(HostLink { nspace, spawned: Vec::new(), tx, wake: wake_tx });
        // From here on, dropping `srv` finalizes the server library and clears the link.
        let srv = PmixServer {
            nspace,
            size,
            rx,
            wake: wake_rx,
            node_of: spec.node_of.to_vec(),
            hostnames: spec.hostnames.to_vec(),
            spawned: Vec::new(),
            finalize: true,
        };
        if std::env::var_os("PMIX_MCA_gds").is_none() {
            // Before PMIx_server_init, which reads its MCA parameters from the environment.
            std::env::set_var("PMIX_MCA_gds", "hash");
        }
        let mut info = Infos::default();
        info.string(sys::PMIX_SERVER_TMPDIR, &spec.tmpdir.to_string_lossy());
        info.string(sys::PMIX_SYSTEM_TMPDIR, &spec.tmpdir.to_string_lossy());
        // libpmix keeps the module pointer: it must live as long as the library (a static).
        static MODULE: sys::pmix_server_module_t = sys::pmix_server_module_t {
            client_connected: Some(client_connected),
            client_finalized: Some(client_finalized),
            abort: Some(abort),
            fence_nb: Some(fence_nb),
            direct_modex: Some(direct_modex),
            publish: None,
            lookup: None,
            unpublish: None,
            spawn: Some(spawn::spawn_upcall),
            connect: None,
            disconnect: None,
            register_events: Some(register_events),
            deregister_events: Some(deregister_events),
            listener: None,
            notify_event: Some(notify_event),
            query: None,
            tool_connected: None,
            log: None,
            allocate: None,
            job_control: None,
            monitor: None,
            get_credential: None,
            validate_credential: None,
            iof_pull: None,
            push_stdin: None,
            group: None,
            fabric: None,
            client_connected2: None,
        };
        // SAFETY: MODULE is a static with the pmix_server_module_t layout (libpmix only reads
        // it); `info` holds valid infos whose strings outlive the blocking call.
        let rc = unsafe {
            sys::PMIx_server_init(
                (&MODULE as *const sys::pmix_server_module_t).cast_mut(),
                info.as_mut_ptr(),
                info.list.len(),
            )
        };
        if rc != OK {
            // Nothing to finalize: forget the link and the flag (Drop would finalize).
            *lock_host() = None;
            SERVER_LIVE.store(false, Ordering::Release);
            std::mem::forget(srv);
            return Err(pmix_err("PMIx_server_init", rc));
        }
        srv.register_nspace()?;
        for rank in 0..size {
            srv.register_client(rank)?;
        }
        Ok(srv)
    }

    fn register_nspace(&self) -> Result<(), RuntimeError> {
        let mut info = Infos::default();
        let nnodes = self.hostnames.len() as u32;
        info.u32(sys::PMIX_UNIV_SIZE, self.size);
        info.u32(sys::PMIX_JOB_SIZE, self.size);
        info.u32(sys::PMIX_MAX_PROCS, self.size);
        info.u32(sys::PMIX_NUM_NODES, nnodes);
        info.u32(sys::PMIX_SPAWNED, 0);
        // weft's own job-level flag: this one server holds every rank's committed data, so a
        // direct-modex get of a key that exists is answered at once (see the client's
        // KEY_FENCE_COLLECTS_ALL).
        info.push(crate::client::KEY_FENCE_COLLECTS_ALL, sys::PMIX_BOOL, |v| v.data.flag = true);
        // The node map (host names in node-id order) and the ranks of every node: libpmix
        // derives each node's PMIX_LOCAL_PEERS / PMIX_LOCAL_SIZE from them. A client's own node
        // is the one named by its PMIX_HOSTNAME environment variable (see `client_env`), so a
        // rank on virtual node K reads K's peers.
        info.string(sys::PMIX_NODE_MAP, &self.hostnames.join(","));
        let per_node: Vec<String> = (0..nnodes)
            .map(|k| {
                let ranks: Vec<String> = (0..self.size)
                    .filter(|&r| self.node_of[r as usize] == k)
                    .map(|r| r.to_string())
                    .collect();
                ranks.join(",")
            })
            .collect();
        info.string(sys::PMIX_PROC_MAP, &per_node.join(";"));
        // Node-level data of every node, so that a client can read another rank's PMIX_NODEID
        // (libpmix turns that get into a node-info lookup by the rank's host name).
        for (k, peers) in per_node.iter().enumerate() {
            let mut n = Infos::default();
            n.string(sys::PMIX_HOSTNAME, &self.hostnames[k]);
            n.u32(sys::PMIX_NODEID, k as u32);
            n.string(sys::PMIX_LOCAL_PEERS, peers);
            n.u32(sys::PMIX_LOCAL_SIZE, peers.split(',').count() as u32);
            info.infos(sys::PMIX_NODE_INFO_ARRAY, n);
        }
        let mut next_local = vec![0u16; nnodes as usize];
        for (rank, &node) in self.node_of.iter().enumerate() {
            let local = next_local[node as usize];
            next_local[node as usize] = local.saturating_add(1);
            let mut p = Infos::default();
            // PMIX_RANK must come first in a PMIX_PROC_DATA array.
            p.rank(sys::PMIX_RANK, rank as u32);
            p.u32(sys::PMIX_NODEID, node);
            p.string(sys::PMIX_HOSTNAME, &self.hostnames[node as usize]);
            p.u16(sys::PMIX_LOCAL_RANK, local);
            p.u16(sys::PMIX_NODE_RANK, local);
            p.u32(sys::PMIX_APPNUM, 0);
            info.infos(sys::PMIX_PROC_DATA, p);
        }
        let ns = self.nspace;
        blocking("PMIx_server_register_nspace", info, |info, cb, cbdata| {
            let n = info.list.len();
            // SAFETY: `ns` is NUL-terminated; the infos (and everything they point to) stay
            // alive until the completion callback (`blocking` keeps them). libpmix only reads
            // them, so the const-to-mut cast is never written through.
            unsafe {
                sys::PMIx_server_register_nspace(
                    ns.as_ptr(),
                    self.size as c_int,
                    info.list.as_ptr().cast_mut(),
                    n,
                    cb,
                    cbdata,
                )
            }
        })
    }

    fn register_client(&self, rank: u32) -> Result<(), RuntimeError> {
        let p = value::make_proc(&self.nspace, rank);
        // SAFETY: geteuid/getegid only read the process credentials.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        blocking("PMIx_server_register_client", p, |p, cb, cbdata| {
            // SAFETY: `p` is a valid proc kept alive until the callback; no server object.
            unsafe { sys::PMIx_server_register_client(p, uid, gid, std::ptr::null_mut(), cb, cbdata) }
        })
    }

    /// Do not call `PMIx_server_finalize` on drop: for a process that exits right after
    /// (weft-run after a job that ended in `PMIx_Abort`). libpmix 4.2 crashed inside
    /// `PMIx_server_finalize` in a few percent of such runs under load, after its progress
    /// thread had stopped; nothing is lost by not finalizing at exit (the job store is the
    /// `hash` component, no shared memory; the rendezvous files are in the launcher's run
    /// directory, which it removes; the sockets close with the process).
    pub fn skip_finalize(&mut self) {
        self.finalize = false;
    }

    /// Number of ranks of the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The environment rank `rank` needs to connect (`PMIx_server_setup_fork`): only the
    /// variables libpmix sets, to be added to the launcher's own environment.
    pub fn client_env(&self, rank: u32) -> Result<Vec<(OsString, OsString)>, RuntimeError> {
        if rank >= self.size {
            return Err(RuntimeError::BadRank { rank, size: self.size });
        }
        let mut out = setup_fork(&value::make_proc(&self.nspace, rank))?;
        // The client library takes its host name from PMIX_HOSTNAME: the rank's virtual node.
        let node = self.node_of[rank as usize] as usize;
        out.push(("PMIX_HOSTNAME".into(), self.hostnames[node].clone().into()));
        Ok(out)
    }

    /// Descriptor that becomes readable when [`PmixServer::drain`] has something.
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Everything the clients told the server since the last call (empties the wake pipe).
    pub fn drain(&self) -> Vec<ServerEvent> {
        let mut buf = [0u8; 256];
        while matches!(nix::unistd::read(self.wake.as_raw_fd(), &mut buf), Ok(n) if n > 0) {}
        self.rx.try_iter().collect()
    }

    /// Turn Nagle's algorithm off on every TCP socket of this process, i.e. libpmix's
    /// connections to its clients (call after clients connected). libpmix 4.2 writes an event
    /// as a header and a body; with Nagle on, the body waits for the client's delayed ACK,
    /// which made every termination event arrive about 40 ms late. Sockets that already have
    /// it off, and sockets that are not TCP, are left as they are.
    pub fn tcp_nodelay_all(&self) {
        let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return };
        for ent in dir.flatten() {
            let Ok(fd) = ent.file_name().to_string_lossy().parse::<std::os::fd::RawFd>() else { continue };
            let is_socket =
                std::fs::read_link(ent.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:"));
            if !is_socket {
                continue;
            }
            // SAFETY: `fd` is open in this process (just listed); getsockopt/setsockopt only
            // read/write the small integers passed by pointer, and fail harmlessly on a
            // descriptor closed meanwhile or on a non-TCP socket.
            unsafe {
                let mut domain: c_int = 0;
                let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
                let ok = libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_DOMAIN,
                    (&mut domain as *mut c_int).cast(),
                    &mut len,
                ) == 0;
                if ok && (domain == libc::AF_INET || domain == libc::AF_INET6) {
                    let one: c_int = 1;
                    libc::setsockopt(
                        fd,
                        libc::IPPROTO_TCP,
                        libc::TCP_NODELAY,
                        (&one as *const c_int).cast(),
                        std::mem::size_of::<c_int>() as libc::socklen_t,
                    );
                }
            }
        }
    }

    /// Tell every client that `rank` terminated (`PMIX_EVENT_PROC_TERMINATED`,
    /// `PMIX_EVENT_AFFECTED_PROC` = the rank). `seen_ns`: when the launcher saw the death
    /// (`CLOCK_MONOTONIC`), sent as [`crate::client::EVENT_SEEN_NS_KEY`].
    pub fn notify_terminated(&self, rank: u32, seen_ns: u64) -> Result<(), RuntimeError> {
        let p = self.proc_of(rank).ok_or(RuntimeError::BadRank { rank, size: self.size })?;
        let mut info = Infos::default();
        info.proc_(sys::PMIX_EVENT_AFFECTED_PROC, p);
        info.u64(crate::client::EVENT_SEEN_NS_KEY, seen_ns);
        self.notify(sys::PMIX_EVENT_PROC_TERMINATED, info)
    }

    /// Tell every client that virtual node `node` went down with `ranks`
    /// (`PMIX_EVENT_NODE_DOWN`, `PMIX_EVENT_AFFECTED_PROCS` = all of them, `PMIX_NODEID`,
    /// `PMIX_HOSTNAME`), so survivors mark them failed at once. `seen_ns` as for
    /// [`PmixServer::notify_terminated`].
    pub fn notify_node_down(&self, node: u32, ranks: &[u32], seen_ns: u64) -> Result<(), RuntimeError> {
        let mut info = Infos::default();
        info.u64(crate::client::EVENT_SEEN_NS_KEY, seen_ns);
        info.procs(sys::PMIX_EVENT_AFFECTED_PROCS, ranks.iter().filter_map(|&r| self.proc_of(r)).collect());
        info.u32(sys::PMIX_NODEID, node);
        if let Some(h) = self.hostnames.get(node as usize) {
            info.string(sys::PMIX_HOSTNAME, h);
        }
        self.notify(sys::PMIX_EVENT_NODE_DOWN, info)
    }

    fn notify(&self, code: sys::pmix_status_t, info: Infos) -> Result<(), RuntimeError> {
        // Source NULL: the server itself. (A proc of the job as source would exclude that
        // proc, and a wildcard rank every rank, from delivery: libpmix never notifies the
        // source.)
        blocking("PMIx_Notify_event", info, |info, cb, cbdata| {
            let n = info.list.len();
            // SAFETY: the infos stay alive until the completion callback; libpmix only reads
            // them. Range GLOBAL: every client of this server (one job).
            unsafe {
                sys::PMIx_Notify_event(
                    code,
                    std::ptr::null(),
                    sys::PMIX_RANGE_GLOBAL as sys::pmix_data_range_t,
                    info.list.as_ptr().cast_mut(),
                    n,
                    cb,
                    cbdata,
                )
            }
        })
    }
}

/// `PMIx_server_setup_fork` for `p`: only the variables libpmix sets.
fn setup_fork(p: &sys::pmix_proc_t) -> Result<Vec<(OsString, OsString)>, RuntimeError> {
    let mut env: *mut *mut c_char = std::ptr::null_mut();
    // SAFETY: `p` is valid; `env` starts as an empty (NULL) argv-style array, which libpmix
    // grows with malloc'ed strings (pmix_setenv); we free it below.
    let rc = unsafe { sys::PMIx_server_setup_fork(p, &mut env) };
    let mut out = Vec::new();
    if !env.is_null() {
        let mut i = 0;
        loop {
            // SAFETY: `env` is a NULL-terminated array of malloc'ed C strings from libpmix.
            let s = unsafe { *env.add(i) };
            if s.is_null() {
                break;
            }
            // SAFETY: `s` is a valid NUL-terminated string (see above).
            let bytes = unsafe { CStr::from_ptr(s) }.to_bytes().to_vec();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                out.push((
                    OsString::from_vec(bytes[..eq].to_vec()),
                    OsString::from_vec(bytes[eq + 1..].to_vec()),
                ));
            }
            // SAFETY: each entry was malloc'ed by libpmix and is ours to free, once.
            unsafe { libc::free(s.cast()) };
            i += 1;
        }
        // SAFETY: the array itself was malloc'ed by libpmix.
        unsafe { libc::free(env.cast()) };
    }
    if rc != OK {
        return Err(pmix_err("PMIx_server_setup_fork", rc));
    }
    Ok(out)
}

impl Drop for PmixServer {
    fn drop(&mut self) {
        if self.finalize {
            // SAFETY: the server library was initialised by `start` and is finalized once here.
            unsafe { sys::PMIx_server_finalize() };
        }
        *lock_host() = None;
        SERVER_LIVE.store(false, Ordering::Release);
    }
}

/// Forward `ev` to the launcher's loop if `p` is a process of one of our jobs, with its
/// universe rank.
fn forward(p: *const sys::pmix_proc_t, ev: impl FnOnce(u32) -> ServerEvent) {
    // SAFETY: libpmix passes a valid proc (or NULL) for the duration of the callback.
    let Some(p) = (unsafe { p.as_ref() }) else { return };
    let Some(u) = spawn::universe_rank(p) else { return };
    let guard = lock_host();
    let Some(link) = guard.as_ref() else { return };
    if link.tx.send(ev(u)).is_ok() {
        // A full pipe already wakes the loop: EAGAIN is fine.
        let _ = nix::unistd::write(&link.wake, &[1u8]);
    }
}

/// Call an op callback with `status`, if there is one.
///
/// # Safety
/// `cbfunc`/`cbdata` must be the pair libpmix handed to the current host callback.
unsafe fn complete(cbfunc: sys::pmix_op_cbfunc_t, cbdata: *mut c_void, status: sys::pmix_status_t) {
    if let Some(cb) = cbfunc {
        // SAFETY: by the caller's contract.
        unsafe { cb(status, cbdata) };
    }
}

unsafe extern "C" fn client_connected(
    proc_: *const sys::pmix_proc_t,
    _server_object: *mut c_void,
    cbfunc: sys::pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> sys::pmix_status_t {
    let _ = std::panic::catch_unwind(|| forward(proc_, ServerEvent::Connected));
    // SAFETY: the pair libpmix gave this callback.
    unsafe { complete(cbfunc, cbdata, OK) };
    OK
}

unsafe extern "C" fn client_finalized(
    proc_: *const sys::pmix_proc_t,
    _server_object: *mut c_void,
    cbfunc: sys::pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> sys::pmix_status_t {
    let _ = std::panic::catch_unwind(|| forward(proc_, ServerEvent::Finalized));
    // SAFETY: the pair libpmix gave this callback; the client stays blocked until it runs.
    unsafe { complete(cbfunc, cbdata, OK) };
    OK
}

unsafe extern "C" fn abort(
    proc_: *const sys::pmix_proc_t,
    _server_object: *mut c_void,
    status: c_int,
    msg: *const c_char,
    _procs: *mut sys::pmix_proc_t,
    _nprocs: usize,
    cbfunc: sys::pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> sys::pmix_status_t {
    let _ = std::panic::catch_unwind(|| {
        let text = if msg.is_null() {
            String::new()
        } else {
            // SAFETY: a non-NULL message from libpmix is a NUL-terminated string valid for
            // the duration of the callback; we copy it.
            unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
        };
        // Any abort ends the whole job (weft-run kills every rank), whatever `procs` says.
        forward(proc_, |rank| ServerEvent::Abort { rank, code: status, msg: text });
    });
    // SAFETY: the pair libpmix gave this callback; releasing the caller lets it exit with its
    // code while the launcher tears the job down.
    unsafe { complete(cbfunc, cbdata, OK) };
    OK
}

unsafe extern "C" fn fence_nb(
    _procs: *const sys::pmix_proc_t,
    _nprocs: usize,
    _info: *const sys::pmix_info_t,
    _ninfo: usize,
    data: *mut c_char,
    ndata: usize,
    cbfunc: sys::pmix_modex_cbfunc_t,
    cbdata: *mut c_void,
) -> sys::pmix_status_t {
    // Every participant is a local client of this server: libpmix has collected all of their
    // contributions in `data`, which is the complete result.
    if let Some(cb) = cbfunc {
        // SAFETY: the pair libpmix gave this callback; `data`/`ndata` are its own buffer, valid
        // during this call, which libpmix copies when the callback runs (no release function).
        unsafe { cb(OK, data, ndata, cbdata, None, std::ptr::null_mut()) };
    }
    OK
}

unsafe extern "C" fn direct_modex(
    _proc: *const sys::pmix_proc_t,
    _info: *const sys::pmix_info_t,
    _ninfo: usize,
    _cbfunc: sys::pmix_modex_cbfunc_t,
    _cbdata: *mut c_void,
) -> sys::pmix_status_t {
    // Only called for procs that are not local clients; every proc of the job is local.
    sys::PMIX_ERR_NOT_FOUND
}

unsafe extern "C" fn notify_event(
    _code: sys::pmix_status_t,
    _source: *const sys::pmix_proc_t,
    _range: sys::pmix_data_range_t,
    _info: *mut sys::pmix_info_t,
    _ninfo: usize,
    _cbfunc: sys::pmix_op_cbfunc_t,
    _cbdata: *mut c_void,
) -> sys::pmix_status_t {
    // A client's event: libpmix has delivered it to the clients of this server, which are the
    // whole job. There is no other server to relay it to.
    sys::PMIX_OPERATION_SUCCEEDED
}

unsafe extern "C" fn register_events(
    _codes: *mut sys::pmix_status_t,
    _ncodes: usize,
    _info: *const sys::pmix_info_t,
    _ninfo: usize,
    _cbfunc: sys::pmix_op_cbfunc_t,
    _cbdata: *mut c_void,
) -> sys::pmix_status_t {
    // A client registered for events: every event of the job is generated by this launcher
    // and delivered by libpmix, so there is no one else to ask for them.
    sys::PMIX_OPERATION_SUCCEEDED
}

unsafe extern "C" fn deregister_events(
    _codes: *mut sys::pmix_status_t,
    _ncodes: usize,
    _cbfunc: sys::pmix_op_cbfunc_t,
    _cbdata: *mut c_void,
) -> sys::pmix_status_t {
    sys::PMIX_OPERATION_SUCCEEDED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_limits() {
        assert!(nspace_of("weft-1-ab").is_ok());
        assert!(nspace_of("").is_err());
        assert!(nspace_of("a\0b").is_err());
        assert!(nspace_of(&"n".repeat(300)).is_err());
    }

    #[test]
    fn infos_keep_their_data_alive() {
        let mut outer = Infos::default();
        let mut inner = Infos::default();
        inner.rank(sys::PMIX_RANK, 3);
        inner.string(sys::PMIX_HOSTNAME, "vn1");
        outer.infos(sys::PMIX_PROC_DATA, inner);
        outer.u32(sys::PMIX_JOB_SIZE, 4);
        assert_eq!(outer.list.len(), 2);
        let da = outer.list[0].value.data;
        // SAFETY: the first info is the data array just built, alive in `outer`.
        let da = unsafe { &*da.darray };
        assert_eq!(da.size, 2);
        // SAFETY: an array of two infos owned by `outer`.
        let inner = unsafe { std::slice::from_raw_parts(da.array.cast::<sys::pmix_info_t>(), 2) };
        assert!(value::key_is(&inner[0], sys::PMIX_RANK));
        // SAFETY: the string value points into a CString owned by `outer`.
        let host = unsafe { CStr::from_ptr(inner[1].value.data.string) };
        assert_eq!(host.to_str().unwrap(), "vn1");
    }
}
