//! `weft-run -n N [--timeout SECS] [--nodes K | --map C0,C1,…] [--kill-node NODE@SECS]…
//! [--netns [--partition NODE@SECS]…] [--bind-to none|core] [--universe-size U] [--no-tunables]
//! PROG ARGS…`:
//! the embedded single-host launcher of weft.
//!
//! Hosts the OpenPMIx server library (`weft_pmix::server`) and starts N copies of PROG as its
//! clients (the environment of `PMIx_server_setup_fork`, plus `WEFT_RUN_CTL` and
//! `WEFT_HOST_SLOT`, see `weft_pmix::launcher`): every rank bootstraps through the PMIx client
//! backend, exactly as under PRRTE or Slurm. When a rank dies (ranks are watched through
//! pidfds) the survivors get `PMIX_EVENT_PROC_TERMINATED` for it at once and keep running.
//!
//! Virtual nodes: `--nodes K` places the ranks on K nodes in contiguous blocks (5 on 2 → 3 + 2),
//! `--map 3,1,1` gives the counts explicitly. The PMIx server registers every rank's
//! `PMIX_NODEID` and `PMIX_HOSTNAME` (`<host>-vnK`) of its virtual node (so each node is its own
//! shared-memory domain). With more than one node, `WEFT_FI_DOMAIN=lo` is set unless the user set it (the
//! network transport between virtual nodes stays on loopback). `--netns` (root only) gives
//! each node its own network namespace joined by veth pairs to a bridge in a launcher-owned
//! namespace (see `weft_run/netns.rs`); `WEFT_FI_DOMAIN` is then the node's veth (`wnK`).
//!
//! MPI programs: when weft's MPI library (`libmpi_abi.so.1`) sits beside weft-run (or in
//! `../lib`), its directory goes first in the ranks' `LD_LIBRARY_PATH`, so a standard-ABI MPI
//! program runs on weft as it is; `--no-mpi-lib` or `WEFT_RUN_MPI_LIB=0` turns that off (see
//! `weft_run/mpi_lib.rs`).
//!
//! Oversubscription: when the universe may hold more processes than the CPUs weft-run may
//! use, the ranks start with glibc tunables that make their context switches cheaper (see
//! `weft_run/tunables.rs`; `--no-tunables` turns that off).
//!
//! Fault injection: `--kill-node NODE@SECS` SIGKILLs every rank of NODE at once SECS after
//! start; survivors get one `PMIX_EVENT_NODE_DOWN` naming all of them and the exit status counts
//! them as failed. Ranks (or any process) can do the same at a chosen point through the control
//! socket (`weft_pmix::launcher::LauncherControl`).
//! `--partition NODE@SECS` (with `--netns`) sets the node's veth link down.
//!
//! Dynamic processes: a rank's `PMIx_Spawn` (`MPI_Comm_spawn`) starts a new job of the
//! launcher's universe, whose processes take the universe ranks after every process started
//! before (see `weft_run/spawn.rs`); at most `--universe-size` processes (default N) live at
//! once. They are watched and judged like the first job's ranks.
//!
//! Exit status: 0 when every rank finalized and exited 0; 1 when some rank failed (one line per
//! failed rank on stderr); the abort code when a rank called `abort` (1 if that code is 0 mod
//! 256); 124 on `--timeout`; 128+signal on SIGINT/SIGTERM/SIGHUP; 2 on bad arguments.
//! Every exit path kills and reaps all ranks and removes the private directory and any
//! `/dev/shm/<jobid>*` entry. Ranks die with the launcher (`PR_SET_PDEATHSIG`), also when it
//! is SIGKILLed.

/// `eprintln!` that never panics (stderr may be a closed pipe).
macro_rules! note {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

#[path = "weft_run/binding.rs"]
mod binding;
#[path = "weft_run/epochs.rs"]
mod epochs;
#[path = "weft_run/job.rs"]
mod job;
#[path = "weft_run/mpi_lib.rs"]
mod mpi_lib;
#[path = "weft_run/netns.rs"]
mod netns;
#[path = "weft_run/nodes.rs"]
mod nodes;
#[path = "weft_run/relay.rs"]
mod relay;
#[path = "weft_run/server.rs"]
mod server;
#[path = "weft_run/tunables.rs"]
mod tunables;

use std::ffi::OsString;
use std::os::unix::net::UnixListener;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;

use job::{kill_and_reap_all, random_hex, resolve_program, spawn_rank, RunDir, SpawnSpec};
use netns::NetNs;
use nodes::{parse_node_at, NodeAt, NodePlan};
use server::{Action, Server, Teardown};
use weft_pmix::server::{JobSpec, PmixServer};

/// Run N copies of a program as one weft job on this host.
#[derive(Parser, Debug)]
#[command(
    name = "weft-run",
    version,
    about = "Run N copies of a program as one weft job on this host (embedded launcher)"
)]
struct Cli {
    /// Number of ranks to start (at least 1).
    #[arg(short = 'n', long = "np", value_parser = clap::value_parser!(u32).range(1..=65536))]
    n: u32,
    /// Kill the whole job after SECS seconds (fractions allowed) and exit with status 124.
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    timeout: Option<f64>,
    /// Place the ranks on K virtual nodes, in contiguous blocks as even as possible.
    #[arg(long, value_name = "K")]
    nodes: Option<u32>,
    /// Explicit placement: comma-separated rank counts per virtual node (sum = N), e.g. 3,1,1.
    #[arg(long, value_name = "C0,C1,...")]
    map: Option<String>,
    /// SIGKILL every rank of virtual node NODE at once, SECS seconds after start (repeatable).
    #[arg(long = "kill-node", value_name = "NODE@SECS", value_parser = parse_node_at)]
    kill_node: Vec<NodeAt>,
    /// Give each virtual node its own network namespace, joined by veth pairs to a private
    /// bridge (root only).
    #[arg(long)]
    netns: bool,
    /// With --netns: set virtual node NODE's veth link down SECS seconds after start
    /// (repeatable).
    #[arg(long, value_name = "NODE@SECS", value_parser = parse_node_at)]
    partition: Vec<NodeAt>,
    /// Global restart: K extra virtual nodes, empty at start; when a whole node is killed its
    /// ranks are respawned on the next spare one.
    #[arg(long = "spare-nodes", value_name = "K", default_value_t = 0)]
    spare_nodes: u32,
    /// Global restart: do not keep a standby process (the program started ahead of failures,
    /// which takes the first failed rank without waiting for an exec): every failed rank is
    /// respawned by fork/exec.
    #[arg(long = "no-standby")]
    no_standby: bool,
    /// Do not put the directory of weft's MPI library (libmpi_abi.so.1 beside weft-run, or in
    /// ../lib) first in the ranks' LD_LIBRARY_PATH (also: WEFT_RUN_MPI_LIB=0).
    #[arg(long = "no-mpi-lib")]
    no_mpi_lib: bool,
    /// Leave GLIBC_TUNABLES alone. By default, when the job may have more processes than the
    /// CPUs weft-run may use, the ranks start without glibc's rseq registration and without
    /// its AVX-512 string functions (cheaper context switches between ranks sharing a core);
    /// a key set in GLIBC_TUNABLES is kept.
    #[arg(long = "no-tunables")]
    no_tunables: bool,
    /// Bind each rank to one CPU (`core`: a node's local rank i on the i-th CPU weft-run may
    /// use) or not at all (`none`, the default), as `mpiexec -bind-to`.
    #[arg(long = "bind-to", value_enum, default_value_t = binding::BindTo::None, value_name = "WHAT")]
    bind_to: binding::BindTo,
    /// Most processes the job may have alive at once, spawned ones included (`MPI_Comm_spawn`
    /// beyond it fails with MPI_ERR_SPAWN); default: N.
    #[arg(long = "universe-size", value_name = "U", value_parser = clap::value_parser!(u32).range(1..=65536))]
    universe_size: Option<u32>,
    /// The program to run and its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROG ARGS")]
    command: Vec<OsString>,
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 1e9 {
        return Err(format!("{s:?} must be a positive number of seconds"));
    }
    Ok(v)
}

const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // --help / --version are not errors.
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    ExitCode::from(run(cli))
}

fn run(cli: Cli) -> u8 {
    let plan = match NodePlan::new(cli.n, cli.nodes, cli.map.as_deref()) {
        Ok(p) => p,
        Err(msg) => {
            note!("weft-run: {msg}");
            return EXIT_USAGE;
        }
    };
    let k = plan.num_nodes();
    for (opt, list) in [("--kill-node", &cli.kill_node), ("--partition", &cli.partition)] {
        if let Some(bad) = list.iter().find(|a| a.node >= k) {
            note!("weft-run: {opt} {}@…: the job has {k} node(s), 0..{}", bad.node, k - 1);
            return EXIT_USAGE;
        }
    }
    if !cli.partition.is_empty() && !cli.netns {
        note!("weft-run: --partition needs --netns (a node can only be cut off in its own namespace)");
        return EXIT_USAGE;
    }
    if cli.netns && cli.spare_nodes > 0 {
        note!("weft-run: --spare-nodes with --netns is not supported (spare nodes have no namespace)");
        return EXIT_USAGE;
    }
    if cli.netns && !netns::is_root() {
        note!("weft-run: --netns needs root (it creates network namespaces, veth pairs and a bridge)");
        return EXIT_USAGE;
    }
    let prog_arg = &cli.command[0];
    let prog = match resolve_program(prog_arg) {
        Ok(p) => p,
        Err(msg) => {
            note!("weft-run: {msg}");
            return EXIT_USAGE;
        }
    };
    let job_id = format!("weft-{}-{}", std::process::id(), random_hex());
    let run_dir = match RunDir::create(&job_id) {
        Ok(d) => d,
        Err(e) => {
            note!("weft-run: cannot create the private directory: {e}");
            return 1;
        }
    };
    let listener = match UnixListener::bind(&run_dir.sock).and_then(|l| {
        l.set_nonblocking(true)?;
        Ok(l)
    }) {
        Ok(l) => l,
        Err(e) => {
            note!("weft-run: cannot listen on {}: {e}", run_dir.sock.display());
            return 1;
        }
    };
    // Block the terminating signals and read them from a signalfd in the event loop; children
    // get an empty mask back before exec.
    let mut mask = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        mask.add(s);
    }
    if let Err(e) = mask.thread_block() {
        note!("weft-run: cannot block signals: {e}");
        return 1;
    }
    let sigfd = match SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
        Ok(f) => f,
        Err(e) => {
            note!("weft-run: signalfd: {e}");
            return 1;
        }
    };

    // Namespaces are created after the signal mask is set (so Ctrl-C during setup is seen by
    // the event loop, after which `NetNs`'s drop removes them).
    let netns = if cli.netns {
        match NetNs::create(&job_id, k) {
            Ok(ns) => Some(ns),
            Err(msg) => {
                note!("weft-run: --netns: {msg}");
                return 1;
            }
        }
    } else {
        None
    };
    let user_domain = std::env::var_os("WEFT_FI_DOMAIN").is_some();
    // Spare nodes (--spare-nodes) are virtual nodes too: the network between nodes is loopback.
    let all_nodes = k + cli.spare_nodes;
    let fi_domains: Vec<Option<String>> = (0..all_nodes)
        .map(|i| match &netns {
            Some(_) => Some(netns::veth_name(i)),
            None if all_nodes > 1 && !user_domain => Some("lo".to_string()),
            None => None,
        })
        .collect();
    if netns.is_some() && user_domain {
        note!("weft-run: --netns: WEFT_FI_DOMAIN is replaced by each node's veth (wnK)");
    }
    let netns_fds: Vec<std::os::fd::RawFd> = match &netns {
        Some(ns) => (0..k).map(|i| ns.fd(i)).collect(),
        None => Vec::new(),
    };
    let ld_library_path = (!cli.no_mpi_lib && mpi_lib::enabled_by_env())
        .then(|| std::env::current_exe().ok().and_then(|exe| mpi_lib::library_dir(&exe)))
        .flatten()
        .map(|dir| mpi_lib::library_path(&dir, std::env::var_os("LD_LIBRARY_PATH")));
    let universe_size = cli.universe_size.unwrap_or(cli.n).max(cli.n);
    let cpus_usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    let glibc_tunables = if cli.no_tunables {
        None
    } else {
        tunables::for_ranks(universe_size, cpus_usable, std::env::var_os(tunables::ENV).as_deref())
    };
    // After the signal mask: libpmix's progress thread inherits it, so the terminating
    // signals keep arriving on the signalfd only.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let hostnames: Vec<String> =
        (0..k).map(|i| if k == 1 { host.clone() } else { format!("{host}-vn{i}") }).collect();
    let pmix = match PmixServer::start(&JobSpec {
        nspace: &job_id,
        node_of: &plan.node_of,
        hostnames: &hostnames,
        tmpdir: &run_dir.dir,
    }) {
        Ok(s) => s,
        Err(e) => {
            note!("weft-run: cannot start the PMIx server: {e}");
            return 1;
        }
    };
    if !netns_fds.is_empty() {
        // Ranks in node namespaces reach the server through relays (see weft_run/relay.rs).
        let addr = pmix.client_env(0).ok().and_then(|env| {
            env.iter()
                .filter(|(k, _)| k.to_string_lossy().starts_with("PMIX_SERVER_URI"))
                .find_map(|(_, v)| relay::server_addr(&v.to_string_lossy()))
        });
        let res = match addr {
            Some(a) => relay::start(a, &netns_fds),
            None => Err(std::io::Error::other("no TCP address in the PMIx server's URIs")),
        };
        if let Err(e) = res {
            note!("weft-run: --netns: {e}");
            return 1;
        }
    }
    let cpus = match binding::cpu_sets(cli.bind_to, &plan.node_of) {
        Ok(c) => c,
        Err(e) => {
            note!("weft-run: {e}");
            return 1;
        }
    };
    // The failure board: deaths reach the ranks through shared memory as well as PMIx.
    let board = match weft_pmix::board::BoardWriter::create(cli.n) {
        Ok(b) => Some(b),
        Err(e) => {
            note!("weft-run: no failure board ({e}); deaths reach the ranks by PMIx events only");
            None
        }
    };
    let board_fd = board.as_ref().map(|b| b.fd());
    let spec = SpawnSpec {
        prog: prog.clone(),
        ld_library_path: ld_library_path.clone(),
        glibc_tunables: glibc_tunables.clone(),
        argv0: prog_arg.clone(),
        args: cli.command[1..].to_vec(),
        ctl: run_dir.sock.clone(),
        node_of: plan.node_of.clone(),
        fi_domains: fi_domains.clone(),
        netns_fds,
        cpus,
        board_fd,
    };
    let start = Instant::now();
    let mut procs = Vec::with_capacity(cli.n as usize);
    let mut pgid: Option<Pid> = None;
    for rank in 0..cli.n {
        let env = match pmix.client_env(rank) {
            Ok(e) => e,
            Err(e) => {
                note!("weft-run: PMIx_server_setup_fork for rank {rank}: {e}");
                let mut refs: Vec<&mut job::Proc> = procs.iter_mut().collect();
                kill_and_reap_all(&mut refs, pgid);
                return 1;
            }
        };
        let mut res = spawn_rank(&spec, rank, &env, pgid, None);
        if res.is_err() && pgid.is_some() {
            // The group may have emptied already (every earlier rank exited): start a new one.
            res = spawn_rank(&spec, rank, &env, None, None);
        }
        match res {
            Ok(p) => {
                if pgid.is_none() {
                    pgid = Some(p.pid);
                }
                procs.push(p);
            }
            Err(e) => {
                note!("weft-run: cannot start rank {rank} ({}): {e}", prog.display());
                let mut refs: Vec<&mut job::Proc> = procs.iter_mut().collect();
                kill_and_reap_all(&mut refs, pgid);
                return EXIT_USAGE;
            }
        }
    }

    let deadline = cli.timeout.map(|t| start + Duration::from_secs_f64(t));
    let events: Vec<(Instant, Action)> = cli
        .kill_node
        .iter()
        .map(|a| (start + a.at, Action::KillNode(a.node)))
        .chain(cli.partition.iter().map(|a| (start + a.at, Action::Partition(a.node))))
        .collect();
    let spares: Vec<u32> = (k..k + cli.spare_nodes).collect();
    let mut server = Server::new(
        pmix,
        listener,
        sigfd,
        procs,
        pgid,
        deadline,
        plan,
        events,
        netns,
        spec,
        spares,
        &job_id,
        !cli.no_standby && !cli.netns,
        board,
    );
    server.enable_spawn(server::SpawnTemplate {
        ld_library_path: ld_library_path.clone(),
        glibc_tunables,
        ctl: run_dir.sock.clone(),
        fi_domain: fi_domains.first().cloned().flatten(),
        universe_size,
        broken: false,
    });
    let code = match server.run() {
        None => {
            if server.failures.is_empty() {
                0
            } else {
                1
            }
        }
        Some(Teardown::Timeout) => {
            note!("weft-run: timeout after {} s", cli.timeout.unwrap_or(0.0));
            124
        }
        Some(Teardown::Signal(sig)) => {
            let name = Signal::try_from(sig).map(|s| s.as_str()).unwrap_or("signal");
            note!("weft-run: received {name}, job killed");
            (128 + sig).clamp(0, 255) as u8
        }
        Some(Teardown::NeverConnected(rank)) => {
            note!(
                "weft-run: rank {rank} failed before connecting to the PMIx server; the other \
                 ranks' bootstrap fence cannot complete without it: job killed"
            );
            1
        }
        Some(Teardown::ReinitFailed(rank)) => {
            note!("weft-run: rank {rank} of a global-restart job failed without being respawned: job killed");
            1
        }
        Some(Teardown::Abort(code)) => {
            server.skip_pmix_finalize();
            match (code & 0xff) as u8 {
                0 => 1,
                c => c,
            }
        }
    };
    drop(server);
    drop(run_dir);
    code
}
