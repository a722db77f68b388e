//! The single-threaded event loop of `weft-run`: one `poll()` over the signalfd, the listening
//! socket, every rank connection and every rank's pidfd; plus the timed fault injections of
//! `--kill-node` / `--partition` and the KILL_RANK / KILL_NODE requests of ranks and control
//! connections.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Instant;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::sys::socket::{recv, send, MsgFlags};
use nix::unistd::Pid;

use weft_pmix::launcher::protocol::{encode_fence_done, FrameReader, ToLauncher, ToRank, MAX_FRAME, VERSION};

use crate::fence::{Fences, Outcome};
use crate::job::{kill_and_reap_all, Ended, Proc};
use crate::netns::NetNs;
use crate::nodes::NodePlan;

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
}

/// Per-rank state.
struct RankState {
    proc_: Proc,
    conn: Option<u64>,
    hello: bool,
    finalized: bool,
    /// Failure already handled (announced, counted).
    failed: bool,
    /// Why we killed it, if we did.
    kill_reason: Option<String>,
    /// Its end has been handled (as a clean exit or as a failure).
    judged: bool,
}

struct Conn {
    stream: UnixStream,
    rank: Option<u32>,
    /// A control connection (CONTROL instead of HELLO): may only send KILL_*.
    control: bool,
    rx: FrameReader,
    tx: Vec<u8>,
    tx_off: usize,
}

pub struct Server {
    listener: UnixListener,
    sigfd: SignalFd,
    ranks: Vec<RankState>,
    pgid: Option<Pid>,
    conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    fences: Fences,
    store: BTreeMap<u32, BTreeMap<String, Vec<u8>>>,
    store_bytes: usize,
    deadline: Option<Instant>,
    scratch: Vec<u8>,
    plan: NodePlan,
    /// Timed fault injections, sorted by time; `events[next_event..]` are still to come.
    events: Vec<(Instant, Action)>,
    next_event: usize,
    /// Dropped after the ranks are gone (`Drop for Server` runs before the fields drop).
    netns: Option<NetNs>,
    /// Lines describing failed ranks (also printed when they happen).
    pub failures: Vec<String>,
}

enum Ev {
    Signal,
    Accept,
    Conn(u64, PollFlags),
    Pid(usize),
}

impl Server {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        listener: UnixListener,
        sigfd: SignalFd,
        procs: Vec<Proc>,
        pgid: Option<Pid>,
        deadline: Option<Instant>,
        plan: NodePlan,
        mut events: Vec<(Instant, Action)>,
        netns: Option<NetNs>,
    ) -> Server {
        events.sort_by_key(|e| e.0);
        let size = procs.len() as u32;
        Server {
            listener,
            sigfd,
            ranks: procs
                .into_iter()
                .map(|p| RankState {
                    proc_: p,
                    conn: None,
                    hello: false,
                    finalized: false,
                    failed: false,
                    kill_reason: None,
                    judged: false,
                })
                .collect(),
            pgid,
            conns: BTreeMap::new(),
            next_conn: 0,
            fences: Fences::new(size),
            store: BTreeMap::new(),
            store_bytes: 0,
            deadline,
            scratch: vec![0; 64 << 10],
            plan,
            events,
            next_event: 0,
            netns,
            failures: Vec::new(),
        }
    }

    /// Run until every rank has been reaped, or until a teardown (which kills and reaps all).
    pub fn run(&mut self) -> Option<Teardown> {
        loop {
            if self.ranks.iter().all(|r| r.proc_.ended.is_some()) {
                return None;
            }
            if let Some(d) = self.deadline {
                if Instant::now() >= d {
                    self.teardown();
                    return Some(Teardown::Timeout);
                }
            }
            if let Some(code) = self.fire_due_events() {
                self.teardown();
                return Some(Teardown::Abort(code));
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
            // Signals first, then sockets (a rank's last words come before its death), then
            // deaths.
            for ev in &events {
                if let Ev::Signal = ev {
                    if let Some(sig) = self.read_signal() {
                        self.teardown();
                        return Some(Teardown::Signal(sig));
                    }
                }
            }
            for ev in &events {
                match *ev {
                    Ev::Accept => self.accept_all(),
                    Ev::Conn(id, flags) => {
                        if flags.contains(PollFlags::POLLOUT) {
                            self.flush(id);
                        }
                        if flags.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
                            if let Some(code) = self.read_conn(id) {
                                self.teardown();
                                return Some(Teardown::Abort(code));
                            }
                        }
                    }
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
                if let Some(code) = self.check_deaths(&died) {
                    self.teardown();
                    return Some(Teardown::Abort(code));
                }
            }
        }
    }

    fn wait(&self, timeout: PollTimeout) -> Result<Vec<Ev>, Errno> {
        let mut tags = Vec::with_capacity(2 + self.conns.len() + self.ranks.len());
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(tags.capacity());
        let mut add = |fd: BorrowedFd<'_>, flags: PollFlags, tag: Ev, fds: &mut Vec<PollFd<'_>>| {
            // Reborrow lifetime: every fd is owned by `self`, which outlives `fds`.
            fds.push(PollFd::new(
                // SAFETY: the descriptor is owned by `self`, borrowed immutably for this whole
                // function, so it stays open while `fds` exists.
                unsafe { BorrowedFd::borrow_raw(fd.as_raw_fd()) },
                flags,
            ));
            tags.push(tag);
        };
        add(self.sigfd.as_fd(), PollFlags::POLLIN, Ev::Signal, &mut fds);
        add(self.listener.as_fd(), PollFlags::POLLIN, Ev::Accept, &mut fds);
        for (&id, c) in &self.conns {
            let mut fl = PollFlags::POLLIN;
            if c.tx_off < c.tx.len() {
                fl |= PollFlags::POLLOUT;
            }
            add(c.stream.as_fd(), fl, Ev::Conn(id, PollFlags::empty()), &mut fds);
        }
        for (i, r) in self.ranks.iter().enumerate() {
            if r.proc_.ended.is_none() {
                add(r.proc_.pidfd.as_fd(), PollFlags::POLLIN, Ev::Pid(i), &mut fds);
            }
        }
        loop {
            match poll(&mut fds, timeout) {
                Ok(_) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        let mut ready = Vec::new();
        for (pfd, tag) in fds.iter().zip(tags) {
            let Some(rev) = pfd.revents() else { continue };
            if rev.is_empty() {
                continue;
            }
            ready.push(match tag {
                Ev::Conn(id, _) => Ev::Conn(id, rev),
                t => t,
            });
        }
        Ok(ready)
    }

    fn read_signal(&mut self) -> Option<i32> {
        match self.sigfd.read_signal() {
            Ok(Some(info)) => Some(info.ssi_signo as i32),
            _ => None,
        }
    }

    /// Kill and reap every rank. Connections are dropped.
    fn teardown(&mut self) {
        let mut procs: Vec<&mut Proc> = self.ranks.iter_mut().map(|r| &mut r.proc_).collect();
        kill_and_reap_all(&mut procs, self.pgid);
        self.conns.clear();
    }

    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let id = self.next_conn;
                    self.next_conn += 1;
                    self.conns.insert(
                        id,
                        Conn {
                            stream,
                            rank: None,
                            control: false,
                            rx: FrameReader::new(),
                            tx: Vec::new(),
                            tx_off: 0,
                        },
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // ECONNABORTED, EMFILE, …: nothing to do for this one.
                    note!("weft-run: accept failed: {e}");
                    return;
                }
            }
        }
    }

    /// Read everything available on a connection and act on its frames.
    /// Returns `Some(code)` when a rank asked to abort the job.
    fn read_conn(&mut self, id: u64) -> Option<i32> {
        let mut eof = false;
        loop {
            let c = self.conns.get_mut(&id)?;
            match recv(c.stream.as_raw_fd(), &mut self.scratch, MsgFlags::MSG_DONTWAIT) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => c.rx.push(&self.scratch[..n]),
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => break,
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        loop {
            let c = self.conns.get_mut(&id)?;
            let rank = c.rank;
            let control = c.control;
            let msg = match c.rx.next_frame() {
                Ok(None) => break,
                Ok(Some(body)) => ToLauncher::decode(body),
                Err(e) => Err(e),
            };
            match msg {
                Ok(m) => {
                    let res = if control { self.handle_control(id, m) } else { self.handle(id, rank, m) };
                    if let Some(code) = res {
                        return Some(code);
                    }
                }
                Err(e) => {
                    self.protocol_error(id, rank, &format!("malformed frame: {e}"));
                    return None;
                }
            }
        }
        if eof {
            self.close_conn(id);
        }
        None
    }

    fn close_conn(&mut self, id: u64) {
        if let Some(c) = self.conns.remove(&id) {
            if let Some(r) = c.rank {
                self.ranks[r as usize].conn = None;
            }
        }
    }

    /// A connection broke the protocol: drop it and, if it is a known rank, kill that rank
    /// (its death is then handled like any other failure).
    fn protocol_error(&mut self, id: u64, rank: Option<u32>, why: &str) {
        self.close_conn(id);
        match rank {
            Some(r) => {
                let st = &mut self.ranks[r as usize];
                note!("weft-run: rank {r} (pid {}): protocol error: {why}; killing it", st.proc_.pid);
                st.kill_reason = Some(format!("protocol error: {why}"));
                st.proc_.kill();
            }
            None => note!("weft-run: dropping an unidentified connection: {why}"),
        }
    }

    fn handle(&mut self, id: u64, rank: Option<u32>, msg: ToLauncher) -> Option<i32> {
        let Some(r) = rank else {
            // First frame must be HELLO (a rank) or CONTROL (a control connection).
            match msg {
                ToLauncher::Hello { version, rank, pid } => self.hello(id, version, rank, pid),
                ToLauncher::Control { version } if version == VERSION => {
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.control = true;
                    }
                }
                other => self.protocol_error(id, None, &format!("expected HELLO or CONTROL, got {other:?}")),
            }
            return None;
        };
        match msg {
            ToLauncher::Hello { .. } | ToLauncher::Control { .. } => {
                self.protocol_error(id, rank, "second HELLO")
            }
            ToLauncher::KillRank { .. } | ToLauncher::KillNode { .. } => {
                return self.kill_request(id, Some(r), msg);
            }
            ToLauncher::Commit { kvs } => {
                if self.ranks[r as usize].finalized {
                    self.protocol_error(id, rank, "commit after finalize");
                    return None;
                }
                let entry = self.store.entry(r).or_default();
                for (k, v) in kvs {
                    let (klen, vlen) = (k.len(), v.len());
                    if let Some(old) = entry.insert(k, v) {
                        self.store_bytes -= 12 + klen + old.len();
                    }
                    self.store_bytes += 12 + klen + vlen;
                }
                if self.store_bytes + 16 > MAX_FRAME {
                    self.protocol_error(id, rank, "key-value store exceeds 256 MiB");
                }
            }
            ToLauncher::Fence { epoch } => match self.fences.enter(r, epoch) {
                Ok(outs) => self.dispatch(outs),
                Err(e) => self.protocol_error(id, rank, &e),
            },
            ToLauncher::Abort { code, msg } => {
                let st = &self.ranks[r as usize];
                note!("weft-run: rank {r} (pid {}) called abort({code}): {msg}", st.proc_.pid);
                return Some(code);
            }
            ToLauncher::Finalize => {
                if self.ranks[r as usize].finalized {
                    self.protocol_error(id, rank, "second FINALIZE");
                    return None;
                }
                self.ranks[r as usize].finalized = true;
                let outs = self.fences.on_finalized(r);
                self.dispatch(outs);
            }
        }
        None
    }

    /// A frame on a control connection: only KILL_RANK / KILL_NODE.
    fn handle_control(&mut self, id: u64, msg: ToLauncher) -> Option<i32> {
        match msg {
            ToLauncher::KillRank { .. } | ToLauncher::KillNode { .. } => self.kill_request(id, None, msg),
            other => {
                self.protocol_error(id, None, &format!("control connection sent {other:?}"));
                None
            }
        }
    }

    /// KILL_RANK / KILL_NODE from connection `id` (rank `from`, or a control connection):
    /// kill, announce, answer KILL_DONE.
    fn kill_request(&mut self, id: u64, from: Option<u32>, msg: ToLauncher) -> Option<i32> {
        let who = match from {
            Some(r) => format!("rank {r}"),
            None => "a control connection".to_string(),
        };
        let (victims, reason) = match msg {
            ToLauncher::KillNode { node } if node < self.plan.num_nodes() => {
                (self.plan.ranks[node as usize].clone(), format!("node {node} killed by {who} (KILL_NODE)"))
            }
            ToLauncher::KillRank { rank } if (rank as usize) < self.ranks.len() => {
                (vec![rank], format!("killed by {who} (KILL_RANK)"))
            }
            other => {
                self.protocol_error(id, from, &format!("{other:?}: no such rank or node"));
                return None;
            }
        };
        let (killed, code) = self.kill_ranks(&victims, &reason);
        if code.is_some() {
            return code;
        }
        self.send_conn(id, &ToRank::KillDone { ranks: killed }.encode());
        None
    }

    /// SIGKILL every still-running rank of `victims` at once, reap them all, then handle their
    /// deaths as one batch (TERMINATED for each to every survivor; one failed fence names them
    /// all). Returns the ranks killed, and an abort code if a victim's last frame was ABORT.
    fn kill_ranks(&mut self, victims: &[u32], reason: &str) -> (Vec<u32>, Option<i32>) {
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
        let code = self.check_deaths(&idx);
        (live, code)
    }

    /// Run the timed fault injections whose time has come.
    fn fire_due_events(&mut self) -> Option<i32> {
        let now = Instant::now();
        while let Some(&(at, action)) = self.events.get(self.next_event) {
            if at > now {
                break;
            }
            self.next_event += 1;
            match action {
                Action::KillNode(node) => {
                    let victims = self.plan.ranks[node as usize].clone();
                    note!("weft-run: --kill-node: killing node {node} (ranks {victims:?})");
                    let (_, code) = self.kill_ranks(&victims, &format!("node {node} killed by --kill-node"));
                    if code.is_some() {
                        return code;
                    }
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
        None
    }

    fn hello(&mut self, id: u64, version: u32, rank: u32, _pid: u32) {
        if version != VERSION {
            self.protocol_error(id, None, &format!("protocol version {version}, launcher speaks {VERSION}"));
            return;
        }
        let size = self.ranks.len() as u32;
        if rank >= size {
            self.protocol_error(id, None, &format!("HELLO from rank {rank}, job size {size}"));
            return;
        }
        let st = &self.ranks[rank as usize];
        if st.hello || st.proc_.ended.is_some() || st.failed {
            self.protocol_error(id, None, &format!("duplicate or late HELLO for rank {rank}"));
            return;
        }
        self.ranks[rank as usize].hello = true;
        self.ranks[rank as usize].conn = Some(id);
        if let Some(c) = self.conns.get_mut(&id) {
            c.rank = Some(rank);
        }
        let welcome = ToRank::Welcome { version: VERSION, size, nodes: self.plan.node_of.clone() };
        self.send_to(rank, &welcome.encode());
        let dead: Vec<u32> = (0..size).filter(|&i| i != rank && self.ranks[i as usize].failed).collect();
        for d in dead {
            self.send_to(rank, &ToRank::Terminated { rank: d }.encode());
        }
    }

    fn dispatch(&mut self, outs: Vec<Outcome>) {
        for o in outs {
            match o {
                Outcome::Done { epoch, notify } => {
                    if notify.is_empty() {
                        continue;
                    }
                    let n: usize = self.store.values().map(|m| m.len()).sum();
                    let it = self
                        .store
                        .iter()
                        .flat_map(|(&r, m)| m.iter().map(move |(k, v)| (r, k.as_str(), v.as_slice())));
                    let frame = encode_fence_done(epoch, ExactLen { it, n });
                    for r in notify {
                        self.send_to(r, &frame);
                    }
                }
                Outcome::Failed { epoch, failed, notify } => {
                    let frame = ToRank::FenceFailed { epoch, ranks: failed }.encode();
                    for r in notify {
                        self.send_to(r, &frame);
                    }
                }
            }
        }
    }

    /// Queue `frame` for `rank` and try to write it at once.
    fn send_to(&mut self, rank: u32, frame: &[u8]) {
        if let Some(id) = self.ranks.get(rank as usize).and_then(|r| r.conn) {
            self.send_conn(id, frame);
        }
    }

    /// Queue `frame` on connection `id` and try to write it at once.
    fn send_conn(&mut self, id: u64, frame: &[u8]) {
        if let Some(c) = self.conns.get_mut(&id) {
            if c.tx_off == c.tx.len() {
                c.tx.clear();
                c.tx_off = 0;
            }
            c.tx.extend_from_slice(frame);
        }
        self.flush(id);
    }

    fn flush(&mut self, id: u64) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        while c.tx_off < c.tx.len() {
            match send(
                c.stream.as_raw_fd(),
                &c.tx[c.tx_off..],
                MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(n) => c.tx_off += n,
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return,
                Err(_) => {
                    // The rank is gone or going; its pidfd will tell.
                    self.close_conn(id);
                    return;
                }
            }
        }
        c.tx.clear();
        c.tx_off = 0;
    }

    /// The ranks `idx` ended (pidfd readable, or killed and reaped by us): judge each one,
    /// then tell the fences about all the failures at once.
    fn check_deaths(&mut self, idx: &[usize]) -> Option<i32> {
        let mut failed = Vec::new();
        for &i in idx {
            match self.check_death(i) {
                Err(code) => return Some(code),
                Ok(true) => failed.push(i as u32),
                Ok(false) => {}
            }
        }
        if !failed.is_empty() {
            let outs = self.fences.on_dead_many(&failed);
            self.dispatch(outs);
        }
        None
    }

    /// Reap and judge rank `i`: `Ok(true)` if it failed (announced to every survivor; the
    /// caller informs the fences), `Ok(false)` if it is still running, was already judged or
    /// ended cleanly, `Err(code)` if its last frame was ABORT.
    fn check_death(&mut self, i: usize) -> Result<bool, i32> {
        if self.ranks[i].judged {
            return Ok(false);
        }
        let Some(ended) = self.ranks[i].proc_.try_reap() else {
            return Ok(false);
        };
        self.ranks[i].judged = true;
        // Read its last frames (FINALIZE, ABORT) before judging.
        if let Some(id) = self.ranks[i].conn {
            if let Some(code) = self.read_conn(id) {
                return Err(code);
            }
            self.close_conn(id);
        }
        let st = &self.ranks[i];
        let clean = ended == Ended::Exited(0) && (st.finalized || !st.hello) && st.kill_reason.is_none();
        let rank = i as u32;
        if clean {
            // A rank that never said HELLO and exited 0 was not a weft program: not a failure.
            let outs = self.fences.on_finalized(rank);
            self.dispatch(outs);
            return Ok(false);
        }
        let mut line = format!("weft-run: rank {rank} (pid {}) {}", st.proc_.pid, ended.describe());
        if ended == Ended::Exited(0) {
            line.push_str(" before finalize");
        }
        if let Some(why) = &st.kill_reason {
            line.push_str(&format!(" [{why}]"));
        }
        note!("{line}");
        self.failures.push(line);
        self.ranks[i].failed = true;
        let frame = ToRank::Terminated { rank }.encode();
        let others: Vec<u32> = (0..self.ranks.len() as u32)
            .filter(|&r| {
                let s = &self.ranks[r as usize];
                r != rank && s.conn.is_some() && !s.finalized && s.proc_.ended.is_none()
            })
            .collect();
        for r in others {
            self.send_to(r, &frame);
        }
        Ok(true)
    }
}

impl Drop for Server {
    /// Last line of defence (e.g. unwinding from a bug): no rank outlives the server.
    fn drop(&mut self) {
        if self.ranks.iter().any(|r| r.proc_.ended.is_none()) {
            self.teardown();
        }
    }
}

/// Wrap an iterator whose length is known.
struct ExactLen<I> {
    it: I,
    n: usize,
}

impl<I: Iterator> Iterator for ExactLen<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let x = self.it.next();
        if x.is_some() {
            self.n = self.n.saturating_sub(1);
        }
        x
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.n, Some(self.n))
    }
}

impl<I: Iterator> ExactSizeIterator for ExactLen<I> {}
