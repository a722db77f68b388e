//! The event loop of `weft-run`: one `poll()` over the signalfd, the PMIx server's wake-up pipe
//! (what clients told the hosted OpenPMIx server: connected, finalized, abort), the
//! fault-injection control socket and its connections, and every rank's pidfd; plus the timed
//! fault injections of `--kill-node` / `--partition`.
//!
//! A rank's death (its pidfd turns readable, the equivalent of SIGCHLD for that one child)
//! becomes `PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED, affected proc)`; killing a virtual
//! node becomes one `PMIX_EVENT_NODE_DOWN` naming all of its ranks. Bootstrap (fence, modex)
//! is entirely libpmix's, on its own progress thread; this loop only judges how ranks end.
//!
//! Global restart: once a rank joined the epoch service (`weft_run/epochs.rs`), a rank killed
//! by a signal is respawned at once with its old rank (on a spare node when its node was
//! killed and `--spare-nodes` has one left) and the job moves to the next epoch; a rank that
//! *exits* with a failure status is an application error and ends the job. A standby process
//! (the program started ahead of any failure, waiting in the epoch service) takes the first
//! failed rank, so the respawn does not wait for an exec; a new standby is started behind it.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::sys::socket::{recv, send, MsgFlags};
use nix::unistd::Pid;

use weft_pmix::board::BoardWriter;
use weft_pmix::epoch::{EpochRequest, MAX_REQUEST};
use weft_pmix::launcher::{killed_line, ControlRequest};
use weft_pmix::server::{PmixServer, ServerEvent};

use crate::epochs::{Epochs, Out};
use crate::job::{kill_and_reap_all, spawn_rank, spawn_standby, Ended, Proc, SpawnSpec};
use crate::netns::NetNs;
use crate::nodes::NodePlan;

#[path = "spawn.rs"]
mod spawn;
pub use spawn::SpawnTemplate;

/// A timed fault injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// SIGKILL every rank of the node (`--kill-node`).
    KillNode(u32),
    /// Set the node's veth link down (`--partition`, needs `--netns`).
    Partition(u32),
}

/// Why the job ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Teardown {
    Timeout,
    Signal(i32),
    Abort(i32),
    /// A rank failed before it connected to the PMIx server while other ranks did connect:
    /// libpmix counts every registered rank in the job's fences and drops only connected ones,
    /// so the others' bootstrap fence could never complete.
    NeverConnected(u32),
    /// In a global-restart job, a rank exited with a failure status (not respawned).
    ReinitFailed(u32),
}

/// How long a death's PMIx event waits for the ranks to read the failure board. A rank that
/// is computing does not read it; past the bound the event goes out anyway.
const BOARD_READ_BOUND: Duration = Duration::from_millis(5);

/// Per-process state (indexed by universe rank: spawned processes follow the first job).
struct RankState {
    proc_: Proc,
    /// Completed `PMIx_Init`.
    connected: bool,
    /// Called `PMIx_Finalize`.
    finalized: bool,
    /// Why we killed it, if we did.
    kill_reason: Option<String>,
    /// Its end has been handled (as a clean exit or as a failure).
    judged: bool,
}

/// A fault-injection control connection (line protocol of `weft_pmix::launcher`).
struct Ctl {
    stream: UnixStream,
    rx: Vec<u8>,
}

pub struct Server {
    pmix: PmixServer,
    ctl: UnixListener,
    sigfd: SignalFd,
    ranks: Vec<RankState>,
    pgid: Option<Pid>,
    conns: BTreeMap<u64, Ctl>,
    next_conn: u64,
    deadline: Option<Instant>,
    scratch: Vec<u8>,
    plan: NodePlan,
    /// Timed fault injections, sorted by time; `events[next_event..]` are still to come.
    events: Vec<(Instant, Action)>,
    next_event: usize,
    /// A rank's `PMIx_Abort` code, once one came.
    aborted: Option<i32>,
    /// The first rank that failed without ever connecting to the PMIx server.
    failed_unconnected: Option<u32>,
    /// Dropped after the ranks are gone (`Drop for Server` runs before the fields drop).
    netns: Option<NetNs>,
    /// Lines describing failed ranks (also printed when they happen).
    pub failures: Vec<String>,
    /// Global restart: how to start a rank again, and the epoch service.
    spec: SpawnSpec,
    epochs: Epochs,
    /// Spare virtual nodes not used yet (`--spare-nodes`), lowest first.
    spares: Vec<u32>,
    /// Processes respawned by global restart.
    pub respawned: u64,
    /// A rank of a global-restart job that failed without being respawned.
    reinit_failed: Option<u32>,
    /// Keep a standby process while a global-restart job runs.
    want_standby: bool,
    /// The standby process, and its control connection once it asked for a rank.
    standby: Option<(Proc, Option<u64>)>,
    /// The failure board the ranks map (`weft_pmix::board`), if it could be made.
    board: Option<BoardWriter>,
    /// How to start spawned processes (`None`: `PMIx_Spawn` is refused).
    spawn_template: Option<SpawnTemplate>,
}

impl RankState {
    fn new(proc_: Proc) -> RankState {
        RankState { proc_, connected: false, finalized: false, kill_reason: None, judged: false }
    }
}

enum Ev {
    Signal,
    Pmix,
    Accept,
    Conn(u64),
    Pid(usize),
    Standby,
}

impl Server {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pmix: PmixServer,
        ctl: UnixListener,
        sigfd: SignalFd,
        procs: Vec<Proc>,
        pgid: Option<Pid>,
        deadline: Option<Instant>,
        plan: NodePlan,
        mut events: Vec<(Instant, Action)>,
        netns: Option<NetNs>,
        spec: SpawnSpec,
        spares: Vec<u32>,
        job_id: &str,
        want_standby: bool,
        board: Option<BoardWriter>,
    ) -> Server {
        let n = procs.len() as u32;
        events.sort_by_key(|e| e.0);
        Server {
            pmix,
            ctl,
            sigfd,
            ranks: procs.into_iter().map(RankState::new).collect(),
            pgid,
            conns: BTreeMap::new(),
            next_conn: 0,
            deadline,
            scratch: vec![0; 4096],
            plan,
            events,
            next_event: 0,
            aborted: None,
            failed_unconnected: None,
            netns,
            failures: Vec::new(),
            spec,
            epochs: Epochs::new(n, job_id),
            spares,
            respawned: 0,
            reinit_failed: None,
            want_standby,
            standby: None,
            board,
            spawn_template: None,
        }
    }

    /// Accept `PMIx_Spawn` requests, starting processes as `tpl` says.
    pub fn enable_spawn(&mut self, tpl: SpawnTemplate) {
        self.spawn_template = Some(tpl);
    }

    /// Run until every rank has been reaped, or until a teardown (which kills and reaps all).
    pub fn run(&mut self) -> Option<Teardown> {
        loop {
            if self.ranks.iter().all(|r| r.proc_.ended.is_some()) {
                self.drop_standby();
                return None;
            }
            if let Some(d) = self.deadline {
                if Instant::now() >= d {
                    self.teardown();
                    return Some(Teardown::Timeout);
                }
            }
            self.fire_due_events();
            if let Some(code) = self.aborted {
                self.teardown();
                return Some(Teardown::Abort(code));
            }
            if let Some(rank) = self.reinit_failed {
                self.teardown();
                return Some(Teardown::ReinitFailed(rank));
            }
            if let Some(rank) = self.failed_unconnected {
                // Only a PMIx job hangs: programs that never connect (plain `false`) do not.
                if self.ranks.iter().any(|r| r.connected && r.proc_.ended.is_none()) {
                    self.teardown();
                    return Some(Teardown::NeverConnected(rank));
                }
            }
            let wake =
                [self.deadline, self.events.get(self.next_event).map(|e| e.0)].into_iter().flatten().min();
            let timeout = match wake {
                None => PollTimeout::NONE,
                Some(d) => {
                    let ms = d
                        .saturating_duration_since(Instant::now())
                        .as_micros()
                        .div_ceil(1000)
                        .min(i32::MAX as u128) as i32;
                    PollTimeout::try_from(ms).unwrap_or(PollTimeout::NONE)
                }
            };
            let events = match self.wait(timeout) {
                Ok(ev) => ev,
                Err(e) => {
                    note!("weft-run: poll failed: {e}");
                    self.teardown();
                    return Some(Teardown::Signal(Signal::SIGTERM as i32));
                }
            };
            // Signals first, then what the clients said (a rank's finalize or abort comes
            // before its death), then control requests, then deaths.
            for ev in &events {
                if let Ev::Signal = ev {
                    if let Some(sig) = self.read_signal() {
                        self.teardown();
                        return Some(Teardown::Signal(sig));
                    }
                }
            }
            self.take_pmix_events();
            for ev in &events {
                match *ev {
                    Ev::Accept => self.accept_all(),
                    Ev::Conn(id) => self.read_conn(id),
                    Ev::Standby => self.standby_died(),
                    _ => {}
                }
            }
            let died: Vec<usize> = events
                .iter()
                .filter_map(|ev| match *ev {
                    Ev::Pid(i) => Some(i),
                    _ => None,
                })
                .collect();
            if !died.is_empty() {
                self.check_deaths(&died, None);
            }
        }
    }

    fn wait(&self, timeout: PollTimeout) -> Result<Vec<Ev>, Errno> {
        let mut tags = Vec::with_capacity(3 + self.conns.len() + self.ranks.len());
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(tags.capacity());
        let mut add = |fd: BorrowedFd<'_>, tag: Ev, fds: &mut Vec<PollFd<'_>>| {
            fds.push(PollFd::new(
                // SAFETY: the descriptor is owned by `self`, borrowed immutably for this whole
                // function, so it stays open while `fds` exists.
                unsafe { BorrowedFd::borrow_raw(fd.as_raw_fd()) },
                PollFlags::POLLIN,
            ));
            tags.push(tag);
        };
        add(self.sigfd.as_fd(), Ev::Signal, &mut fds);
        add(self.pmix.wake_fd(), Ev::Pmix, &mut fds);
        add(self.ctl.as_fd(), Ev::Accept, &mut fds);
        for (&id, c) in &self.conns {
            add(c.stream.as_fd(), Ev::Conn(id), &mut fds);
        }
        for (i, r) in self.ranks.iter().enumerate() {
            if r.proc_.ended.is_none() {
                add(r.proc_.pidfd.as_fd(), Ev::Pid(i), &mut fds);
            }
        }
        if let Some((p, _)) = &self.standby {
            add(p.pidfd.as_fd(), Ev::Standby, &mut fds);
        }
        loop {
            match poll(&mut fds, timeout) {
                Ok(_) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(fds
            .iter()
            .zip(tags)
            .filter(|(pfd, _)| pfd.revents().is_some_and(|r| !r.is_empty()))
            .map(|(_, tag)| tag)
            .collect())
    }

    fn read_signal(&mut self) -> Option<i32> {
        match self.sigfd.read_signal() {
            Ok(Some(info)) => Some(info.ssi_signo as i32),
            _ => None,
        }
    }

    /// See `PmixServer::skip_finalize` (weft-run exits right after the server is dropped).
    pub fn skip_pmix_finalize(&mut self) {
        self.pmix.skip_finalize();
    }

    /// Kill and reap every rank. Control connections are dropped.
    fn teardown(&mut self) {
        self.drop_standby();
        let mut procs: Vec<&mut Proc> = self.ranks.iter_mut().map(|r| &mut r.proc_).collect();
        kill_and_reap_all(&mut procs, self.pgid);
        self.conns.clear();
    }

    /// Record what the clients told the PMIx server.
    fn take_pmix_events(&mut self) {
        let mut connected = false;
        for ev in self.pmix.drain() {
            match ev {
                ServerEvent::Spawn(call) => self.spawn_job(call),
                ServerEvent::Connected(r) => {
                    if let Some(st) = self.ranks.get_mut(r as usize) {
                        st.connected = true;
                    }
                    connected = true;
                }
                ServerEvent::Finalized(r) => {
                    if let Some(st) = self.ranks.get_mut(r as usize) {
                        st.finalized = true;
                    }
                }
                ServerEvent::Abort { rank, code, msg } => {
                    if let Some(st) = self.ranks.get(rank as usize) {
                        note!("weft-run: rank {rank} (pid {}) called abort({code}): {msg}", st.proc_.pid);
                    }
                    self.aborted.get_or_insert(code);
                }
            }
        }
        if connected {
            // New client connections: events to them must not wait for delayed ACKs.
            self.pmix.tcp_nodelay_all();
        }
    }

    fn accept_all(&mut self) {
        loop {
            match self.ctl.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let id = self.next_conn;
                    self.next_conn += 1;
                    self.conns.insert(id, Ctl { stream, rx: Vec::new() });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    note!("weft-run: accept failed: {e}");
                    return;
                }
            }
        }
    }

    /// Read a control connection and carry out every complete request line.
    fn read_conn(&mut self, id: u64) {
        let mut eof = false;
        loop {
            let Some(c) = self.conns.get_mut(&id) else { return };
            match recv(c.stream.as_raw_fd(), &mut self.scratch, MsgFlags::MSG_DONTWAIT) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => c.rx.extend_from_slice(&self.scratch[..n]),
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => break,
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        loop {
            let Some(c) = self.conns.get_mut(&id) else { return };
            let Some(nl) = c.rx.iter().position(|&b| b == b'\n') else {
                if c.rx.len() > MAX_REQUEST {
                    self.answer(id, "error request line too long\n");
                    self.conns.remove(&id);
                }
                break;
            };
            let line: Vec<u8> = c.rx.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line[..nl]).into_owned();
            let answer = match EpochRequest::parse(&line) {
                Some(Ok(EpochRequest::Failed { epoch, ranks })) => {
                    self.declared_failed(epoch, &ranks);
                    continue;
                }
                Some(Ok(EpochRequest::Standby)) => match &mut self.standby {
                    Some((_, conn)) if conn.is_none() => {
                        *conn = Some(id);
                        continue;
                    }
                    _ => "error reinit-standby: weft-run started no standby that waits\n".to_string(),
                },
                Some(Ok(req)) => {
                    let out = self.epochs.request(id, req, &self.spec.node_of);
                    self.write_all(out);
                    if self.epochs.done {
                        self.drop_standby();
                    } else if self.epochs.active() {
                        self.ensure_standby();
                    }
                    continue;
                }
                Some(Err(why)) => format!("error {why}\n"),
                None => match ControlRequest::parse(&line) {
                    Ok(req) => self.kill_request(req),
                    Err(why) => format!("error {why}\n"),
                },
            };
            self.answer(id, &answer);
        }
        if eof {
            self.conns.remove(&id);
            self.epochs.closed(id);
        }
    }

    fn write_all(&mut self, out: Out) {
        for (conn, line) in out {
            self.answer(conn, &line);
        }
    }

    /// Write a whole answer line (blocking briefly if the socket is full: answers are short).
    fn answer(&mut self, id: u64, line: &str) {
        let Some(c) = self.conns.get(&id) else { return };
        let mut off = 0;
        let bytes = line.as_bytes();
        while off < bytes.len() {
            match send(c.stream.as_raw_fd(), &bytes[off..], MsgFlags::MSG_NOSIGNAL) {
                Ok(n) => off += n,
                Err(Errno::EINTR | Errno::EAGAIN) => std::thread::yield_now(),
                Err(_) => {
                    // The requester is gone (maybe it was a victim).
                    self.conns.remove(&id);
                    self.epochs.closed(id);
                    return;
                }
            }
        }
    }

    /// A control request: kill, announce, and return the answer line.
    fn kill_request(&mut self, req: ControlRequest) -> String {
        match req {
            ControlRequest::KillNode(node) if node < self.num_nodes() => {
                let victims = self.ranks_on(node);
                let killed = self.kill_ranks(
                    &victims,
                    &format!("node {node} killed by a control request"),
                    Some(node),
                );
                killed_line(&killed)
            }
            ControlRequest::KillRank(rank) if (rank as usize) < self.ranks.len() => {
                let killed = self.kill_ranks(&[rank], "killed by a control request", None);
                killed_line(&killed)
            }
            ControlRequest::KillNode(node) => {
                format!("error no node {node}: the job has {} node(s)\n", self.num_nodes())
            }
            ControlRequest::KillRank(rank) => {
                format!("error no rank {rank}: the job has {} rank(s)\n", self.ranks.len())
            }
        }
    }

    /// Virtual nodes, spare ones (`--spare-nodes`) included.
    fn num_nodes(&self) -> u32 {
        self.plan.num_nodes().max(self.spec.fi_domains.len() as u32)
    }

    /// The ranks on virtual node `node` now (global restart may have moved some to a spare).
    fn ranks_on(&self, node: u32) -> Vec<u32> {
        (0..self.spec.node_of.len() as u32).filter(|&r| self.spec.node_of[r as usize] == node).collect()
    }

    /// SIGKILL every still-running rank of `victims` at once, reap them all, then announce
    /// their deaths as one batch (one NODE_DOWN naming them all when `node` is given). Returns
    /// the ranks killed.
    fn kill_ranks(&mut self, victims: &[u32], reason: &str, node: Option<u32>) -> Vec<u32> {
        let live: Vec<u32> = victims
            .iter()
            .copied()
            .filter(|&r| {
                let st = &self.ranks[r as usize];
                !st.judged && st.proc_.ended.is_none()
            })
            .collect();
        for &r in &live {
            let st = &mut self.ranks[r as usize];
            st.kill_reason = Some(reason.to_owned());
            st.proc_.kill();
        }
        for &r in &live {
            self.ranks[r as usize].proc_.reap();
        }
        let idx: Vec<usize> = live.iter().map(|&r| r as usize).collect();
        self.check_deaths(&idx, node);
        live
    }

    /// Run the timed fault injections whose time has come.
    fn fire_due_events(&mut self) {
        let now = Instant::now();
        while let Some(&(at, action)) = self.events.get(self.next_event) {
            if at > now {
                break;
            }
            self.next_event += 1;
            match action {
                Action::KillNode(node) => {
                    let victims = self.ranks_on(node);
                    note!("weft-run: --kill-node: killing node {node} (ranks {victims:?})");
                    self.kill_ranks(&victims, &format!("node {node} killed by --kill-node"), Some(node));
                }
                Action::Partition(node) => {
                    if let Some(ns) = &self.netns {
                        match ns.partition(node) {
                            Ok(()) => note!("weft-run: --partition: node {node} ({}) cut off", ns.name(node)),
                            Err(e) => note!("weft-run: --partition {node}: {e}"),
                        }
                    }
                }
            }
        }
    }

    /// The ranks `idx` ended (pidfd readable, or killed and reaped by us): judge each one and
    /// tell the survivors about the failures through the PMIx server: one
    /// `PMIX_EVENT_NODE_DOWN` naming all of them when a whole `node` was killed, else one
    /// `PMIX_EVENT_PROC_TERMINATED` per failed rank.
    fn check_deaths(&mut self, idx: &[usize], node: Option<u32>) {
        let seen_ns = mono_ns();
        // A rank's last words (finalize, abort) reached the PMIx server before it died.
        self.take_pmix_events();
        let failures_before = self.failures.len();
        let failed: Vec<u32> = idx.iter().filter(|&&i| self.judge(i)).map(|&i| i as u32).collect();
        if failed.is_empty() {
            return;
        }
        if self.epochs.active() && !self.epochs.done {
            for line in &self.failures[failures_before..] {
                note!("{line}");
            }
            // Global restart: the survivors roll back (told by the epoch service), so the
            // death is not announced as a failure to work around.
            self.respawn(&failed, node, seen_ns);
            return;
        }
        if let Some(b) = &self.board {
            // The ranks that will read the board: running weft programs, not yet finalized.
            let readers = self
                .ranks
                .iter()
                .take(b.ranks() as usize)
                .filter(|st| st.connected && !st.finalized && st.proc_.ended.is_none());
            // The PMIx event's wake-ups would compete with the survivors for the cores (see
            // `weft_pmix::board`): it waits until they have read the board, within a bound.
            // Spawned processes are not on the board: their deaths go by the event alone.
            if b.mark_dead(&failed, seen_ns, readers.count() as u32) {
                b.wait_read(BOARD_READ_BOUND);
            }
        }
        let res = match node {
            Some(n) => self.pmix.notify_node_down(n, &failed, seen_ns),
            None => failed.iter().try_for_each(|&r| self.pmix.notify_terminated(r, seen_ns)),
        };
        if let Err(e) = res {
            note!("weft-run: could not notify the survivors of {failed:?}: {e}");
        }
        // Printed after the survivors were told: a write to a slow terminal or pipe is not
        // on the detection path.
        for line in &self.failures[failures_before..] {
            note!("{line}");
        }
    }

    /// Global restart: a rank's failure detector declared `ranks` failed in `epoch`. If that is
    /// still the current epoch, SIGKILL them (a frozen process is killed too, so it can never
    /// resume into a later epoch); their deaths start the next epoch as any other.
    fn declared_failed(&mut self, epoch: u64, ranks: &[u32]) {
        if epoch != self.epochs.epoch || self.epochs.done {
            return;
        }
        // Ranks that are dead already (seen in-band by the reporter before their pidfd woke us)
        // are judged as any death.
        let mut gone = Vec::new();
        let mut alive = Vec::new();
        let n = self.ranks.len();
        for &r in ranks.iter().filter(|&&r| (r as usize) < n) {
            match self.ranks[r as usize].proc_.try_reap() {
                Some(_) => gone.push(r as usize),
                None => alive.push(r),
            }
        }
        if !gone.is_empty() {
            self.check_deaths(&gone, None);
        }
        if !alive.is_empty() && epoch == self.epochs.epoch {
            note!("weft-run: global restart: ranks {alive:?} declared failed in epoch {epoch}: killing them");
            self.kill_ranks(&alive, "declared failed by a failure detector", None);
        }
    }

    /// Global restart: start every rank of `failed` again (on a spare node if `node` was
    /// killed and a spare is left) and move the job to the next epoch. A rank that exited
    /// with a status instead of being killed is an application failure: the job ends.
    fn respawn(&mut self, failed: &[u32], node: Option<u32>, seen_ns: u64) {
        let exited = |r: &&u32| matches!(self.ranks[**r as usize].proc_.ended, Some(Ended::Exited(_)));
        if let Some(&r) = failed.iter().find(exited) {
            self.reinit_failed.get_or_insert(r);
            return;
        }
        if node.is_some() && !self.spares.is_empty() {
            let spare = self.spares.remove(0);
            for &r in failed {
                self.spec.node_of[r as usize] = spare;
            }
            note!("weft-run: ranks {failed:?} move to spare node {spare}");
        }
        let epoch = self.epochs.epoch + 1;
        for &r in failed {
            // The standby takes the first failed rank, if it is waiting (and on a single
            // node's network configuration: it was started with node 0's).
            let same_domain = self.spec.fi_domains.get(self.spec.node_of[r as usize] as usize)
                == self.spec.fi_domains.first();
            if let Some((p, Some(conn))) =
                self.standby.take_if(|(p, c)| c.is_some() && p.ended.is_none() && same_domain)
            {
                note!(
                    "weft-run: global restart: rank {r} taken over by the standby (pid {}) for epoch {epoch}",
                    p.pid
                );
                self.replace_rank(r, p);
                self.answer(conn, &format!("assigned {r} {epoch}\n"));
                continue;
            }
            let mut res = spawn_rank(&self.spec, r, &[], self.pgid, Some(epoch));
            if res.is_err() && self.pgid.is_some() {
                res = spawn_rank(&self.spec, r, &[], None, Some(epoch));
            }
            match res {
                Ok(p) => {
                    note!("weft-run: global restart: rank {r} respawned (pid {}) for epoch {epoch}", p.pid);
                    self.replace_rank(r, p);
                }
                Err(e) => {
                    note!("weft-run: global restart: cannot respawn rank {r}: {e}");
                    self.reinit_failed.get_or_insert(r);
                    return;
                }
            }
        }
        let out = self.epochs.rollback(failed, seen_ns, mono_ns(), &self.spec.node_of);
        self.write_all(out);
        self.ensure_standby();
    }

    /// Process `p` is rank `r` from now on. The failure of the old one is recovered: it does
    /// not count as a failure of the job.
    fn replace_rank(&mut self, r: u32, p: Proc) {
        self.failures.pop();
        self.ranks[r as usize] =
            RankState { proc_: p, connected: false, finalized: false, kill_reason: None, judged: false };
        self.respawned += 1;
    }

    /// Start a standby process if the job uses global restart and none is there.
    fn ensure_standby(&mut self) {
        if !self.want_standby || self.standby.is_some() || self.epochs.done || !self.epochs.active() {
            return;
        }
        let mut res = spawn_standby(&self.spec, self.pgid);
        if res.is_err() && self.pgid.is_some() {
            res = spawn_standby(&self.spec, None);
        }
        match res {
            Ok(p) => self.standby = Some((p, None)),
            Err(e) => {
                note!("weft-run: global restart: cannot start a standby process: {e}");
                self.want_standby = false;
            }
        }
    }

    /// The standby process ended (it is not a rank: not a failure of the job); start another.
    fn standby_died(&mut self) {
        if let Some((mut p, _)) = self.standby.take() {
            if p.try_reap().is_none() {
                self.standby = Some((p, None));
                return;
            }
        }
        self.ensure_standby();
    }

    /// Kill and reap the standby process (the job is done or torn down).
    fn drop_standby(&mut self) {
        self.want_standby = false;
        if let Some((mut p, _)) = self.standby.take() {
            p.kill();
            p.reap();
        }
    }

    /// Reap and judge rank `i`: true if it failed (and it had not been judged before).
    fn judge(&mut self, i: usize) -> bool {
        if self.ranks[i].judged {
            return false;
        }
        let Some(ended) = self.ranks[i].proc_.try_reap() else {
            return false;
        };
        // In a global-restart job, leaving before every rank completed the epoch is a failure.
        let reinit_running = self.epochs.active() && !self.epochs.done;
        let st = &mut self.ranks[i];
        st.judged = true;
        // A rank that never connected and exited 0 was not a weft program: not a failure.
        let clean = ended == Ended::Exited(0)
            && (st.finalized || !st.connected)
            && st.kill_reason.is_none()
            && !reinit_running;
        if clean {
            return false;
        }
        let mut line = format!("weft-run: rank {i} (pid {}) {}", st.proc_.pid, ended.describe());
        if ended == Ended::Exited(0) {
            line.push_str(" before finalize");
        }
        if let Some(why) = &st.kill_reason {
            line.push_str(&format!(" [{why}]"));
        }
        // Printed by the caller, once the survivors were told.
        self.failures.push(line);
        if !st.connected {
            self.failed_unconnected.get_or_insert(i as u32);
        }
        true
    }
}

/// `CLOCK_MONOTONIC` now, in ns (the clock the ranks' latency measurements use).
fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid pointer we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Drop for Server {
    /// Last line of defence (e.g. unwinding from a bug): no rank outlives the server.
    fn drop(&mut self) {
        if self.ranks.iter().any(|r| r.proc_.ended.is_none()) {
            self.teardown();
        }
    }
}
