//! The one child-process supervisor of the tests and benchmarks: start a job with a hard time
//! limit, read its output line by line while it runs, and end it as a typed [`End`].
//!
//! A job started by [`Supervisor::spawn`] runs in its own process group and dies with the
//! thread that started it (`PR_SET_PDEATHSIG`), so a test or driver killed from outside does
//! not leave it running. When the limit passes, the whole group gets SIGTERM, then SIGKILL
//! after [`TERM_GRACE`]; once the job's leader exits, whatever is left of its group is
//! killed the same way; dropping a [`Job`] that has not ended kills its group with SIGKILL.
//!
//! Output streams are [`Io::Capture`]d (each line becomes an [`Event::Line`]), inherited or
//! discarded. [`Job::next_event`] drives everything: it returns the lines as they come, then
//! exactly one terminal event ([`Event::Exited`] or [`Event::TimedOut`]) once the leader has
//! exited and its pipes are drained (or quiet for [`DRAIN_QUIET`]: a leftover grandchild may
//! hold them open). [`Supervisor::run`] does that to the end and returns everything.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use weft_testkit::job::{End, Supervisor};
//!
//! let mut cmd = Command::new("echo");
//! cmd.arg("hi");
//! let done = Supervisor::new(Duration::from_secs(5)).run(cmd).expect("spawn");
//! assert!(matches!(done.end, End::Exited(st) if st.success()));
//! assert_eq!(done.stdout, "hi\n");
//! ```

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// Between the SIGTERM and the SIGKILL of a job's process group.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// After the leader exited (or was killed), its pipes are read until they close or stay quiet
/// this long.
pub const DRAIN_QUIET: Duration = Duration::from_millis(200);
/// Upper bound of that drain.
pub const DRAIN_MAX: Duration = Duration::from_secs(5);
/// How often a running job's exit status and deadline are checked.
const POLL: Duration = Duration::from_millis(20);

/// What becomes of one output stream of the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// Piped; every line is delivered as an [`Event::Line`].
    Capture,
    /// The supervisor's own stream.
    Inherit,
    /// `/dev/null`.
    Null,
}

impl Io {
    fn stdio(self) -> Stdio {
        match self {
            Io::Capture => Stdio::piped(),
            Io::Inherit => Stdio::inherit(),
            Io::Null => Stdio::null(),
        }
    }
}

/// Which stream a captured line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// One line of captured output, without its newline (invalid UTF-8 replaced).
#[derive(Clone, Debug)]
pub struct Line {
    pub stream: Stream,
    pub text: String,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The leader exited (or was killed by a signal) on its own.
    Exited(ExitStatus),
    /// Still running at its deadline: its process group was killed. Carries the time it had.
    TimedOut(Duration),
}

impl End {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        matches!(self, End::Exited(st) if st.success())
    }
}

/// What [`Job::next_event`] returns.
#[derive(Clone, Debug)]
pub enum Event {
    Line(Line),
    /// Terminal: the leader exited and its output was drained.
    Exited(ExitStatus),
    /// Terminal: the deadline passed and the process group was killed; its output was drained.
    TimedOut(Duration),
}

/// A job that could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start {prog:?}: {source}")]
pub struct SpawnError {
    pub prog: String,
    #[source]
    pub source: std::io::Error,
}

/// Everything a job printed, and how it ended ([`Supervisor::run`], [`Job::finish`]).
#[derive(Clone, Debug)]
pub struct Finished {
    pub end: End,
    /// Captured stdout, one `\n` after every line.
    pub stdout: String,
    /// Captured stderr, one `\n` after every line.
    pub stderr: String,
    /// From spawn to the leader's exit (or to the kill).
    pub elapsed: Duration,
}

/// How to start jobs: the hard time limit and what becomes of stdout and stderr (both
/// [`Io::Capture`] unless changed). Stdin is always `/dev/null`.
#[derive(Clone, Copy, Debug)]
pub struct Supervisor {
    limit: Duration,
    stdout: Io,
    stderr: Io,
}

impl Supervisor {
    /// Jobs killed when still running `limit` after their start.
    pub const fn new(limit: Duration) -> Self {
        Self { limit, stdout: Io::Capture, stderr: Io::Capture }
    }

    /// The same, with `io` for stdout.
    pub const fn stdout(self, io: Io) -> Self {
        Self { stdout: io, ..self }
    }

    /// The same, with `io` for stderr.
    pub const fn stderr(self, io: Io) -> Self {
        Self { stderr: io, ..self }
    }

    /// The time limit.
    pub const fn limit(&self) -> Duration {
        self.limit
    }

    /// Start `cmd` as a supervised job (its stdio, process group and parent-death signal are
    /// set here; whatever the caller set for them is replaced).
    pub fn spawn(&self, mut cmd: Command) -> Result<Job, SpawnError> {
        let prog = cmd.get_program().to_string_lossy().into_owned();
        cmd.stdin(Stdio::null()).stdout(self.stdout.stdio()).stderr(self.stderr.stdio()).process_group(0);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| SpawnError { prog: prog.clone(), source })?;
        let started = Instant::now();
        let (tx, rx) = mpsc::channel();
        let mut readers = 0;
        if let Some(out) = child.stdout.take() {
            spawn_reader(out, Stream::Out, tx.clone());
            readers += 1;
        }
        if let Some(err) = child.stderr.take() {
            spawn_reader(err, Stream::Err, tx);
            readers += 1;
        }
        Ok(Job {
            pgid: Pid::from_raw(child.id() as i32),
            child,
            prog,
            limit: self.limit,
            started,
            deadline: started + self.limit,
            lines: (readers > 0).then_some(rx),
            state: State::Running,
        })
    }

    /// Start `cmd`, wait for its end and return all it printed. Only a failure to start is an
    /// error; a timeout is [`End::TimedOut`] (with the output up to the kill).
    pub fn run(&self, cmd: Command) -> Result<Finished, SpawnError> {
        Ok(self.spawn(cmd)?.finish())
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    Running,
    /// The leader is gone (exited, or killed at the deadline); reading what is left in the
    /// pipes until `until`.
    Draining {
        end: End,
        at: Instant,
        until: Instant,
    },
    Ended {
        end: End,
        at: Instant,
    },
}

/// A running (or ended) supervised job; see the [module documentation](self).
#[derive(Debug)]
pub struct Job {
    child: Child,
    pgid: Pid,
    prog: String,
    limit: Duration,
    started: Instant,
    deadline: Instant,
    lines: Option<Receiver<Line>>,
    state: State,
}

impl Job {
    /// The leader's process id (also the id of the job's process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The program, for messages.
    pub fn program(&self) -> &str {
        &self.prog
    }

    /// When the job will be killed if still running.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Give the job at most `within` from now (a job that announced it is done gets only a
    /// grace period to exit); never extends the deadline.
    pub fn cut_deadline(&mut self, within: Duration) {
        self.deadline = self.deadline.min(Instant::now() + within);
    }

    /// When the leader exited, or was killed at its deadline (`None` while it runs).
    pub fn ended_at(&self) -> Option<Instant> {
        match self.state {
            State::Running => None,
            State::Draining { at, .. } | State::Ended { at, .. } => Some(at),
        }
    }

    /// Send `sig` to the leader only (not to the rest of its group).
    pub fn signal(&self, sig: Signal) -> nix::Result<()> {
        if self.ended_at().is_some() {
            return Err(nix::errno::Errno::ESRCH);
        }
        kill(self.pgid, sig)
    }

    /// Without blocking: the leader's exit status once it has exited (output not drained).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.check_exit();
        match self.state {
            State::Draining { end: End::Exited(st), .. } | State::Ended { end: End::Exited(st), .. } => {
                Some(st)
            }
            _ => None,
        }
    }

    /// Without blocking and without reading output: how the job ended, once it has (a job past
    /// its deadline is killed here). For jobs whose output is not captured.
    pub fn try_end(&mut self) -> Option<End> {
        self.check_exit();
        match self.state {
            State::Running => None,
            State::Draining { end, at, .. } => {
                self.finish_group();
                self.state = State::Ended { end, at };
                Some(end)
            }
            State::Ended { end, .. } => Some(end),
        }
    }

    /// The next line of output, or the terminal event; see the [module documentation](self).
    /// Blocks at most until the deadline (plus the kill and the drain). After the terminal
    /// event it returns that event again.
    pub fn next_event(&mut self) -> Event {
        loop {
            match self.state {
                State::Ended { end, .. } => {
                    return match end {
                        End::Exited(st) => Event::Exited(st),
                        End::TimedOut(d) => Event::TimedOut(d),
                    }
                }
                State::Running => {
                    let wait = POLL.min(self.deadline.saturating_duration_since(Instant::now()));
                    if let Some(l) = self.recv(wait) {
                        return Event::Line(l);
                    }
                    self.check_exit();
                }
                State::Draining { end, at, until } => {
                    let wait = DRAIN_QUIET.min(until.saturating_duration_since(Instant::now()));
                    match self.recv(wait) {
                        Some(l) => return Event::Line(l),
                        None => {
                            // Quiet, closed or out of time: leftovers of the group must not
                            // outlive the job.
                            self.finish_group();
                            self.state = State::Ended { end, at };
                        }
                    }
                }
            }
        }
    }

    /// Run to the end, collecting the captured output.
    pub fn finish(&mut self) -> Finished {
        let (mut stdout, mut stderr) = (String::new(), String::new());
        let end = loop {
            match self.next_event() {
                Event::Line(Line { stream, text }) => {
                    let s = if stream == Stream::Out { &mut stdout } else { &mut stderr };
                    s.push_str(&text);
                    s.push('\n');
                }
                Event::Exited(st) => break End::Exited(st),
                Event::TimedOut(d) => break End::TimedOut(d),
            }
        };
        let elapsed = self.ended_at().map_or(self.limit, |at| at.duration_since(self.started));
        Finished { end, stdout, stderr, elapsed }
    }

    /// A line if one comes within `wait`; `None` on silence or when no pipe is left (then
    /// after sleeping `wait`, so that callers polling in a loop do not spin).
    fn recv(&mut self, wait: Duration) -> Option<Line> {
        let Some(rx) = &self.lines else {
            std::thread::sleep(wait);
            return None;
        };
        match rx.recv_timeout(wait) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.lines = None;
                std::thread::sleep(wait);
                None
            }
        }
    }

    /// Running → Draining when the leader has exited or the deadline has passed (then the
    /// group is killed and the leader reaped first).
    fn check_exit(&mut self) {
        if !matches!(self.state, State::Running) {
            return;
        }
        let now = Instant::now();
        let end = match self.child.try_wait() {
            Ok(Some(st)) => End::Exited(st),
            Ok(None) if now < self.deadline => return,
            // Past the deadline, or the status cannot be read: kill and reap.
            _ => {
                terminate_group(self.pgid, Some(&mut self.child));
                let _ = self.child.wait();
                End::TimedOut(self.limit)
            }
        };
        let until = match end {
            End::Exited(_) => now + DRAIN_MAX,
            // What a killed job printed last is in the pipes already.
            End::TimedOut(_) => now + DRAIN_QUIET,
        };
        self.state = State::Draining { end, at: now, until };
    }

    fn finish_group(&mut self) {
        if let State::Draining { end: End::Exited(_), .. } = self.state {
            terminate_group(self.pgid, None);
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        match self.state {
            State::Running => {
                let _ = killpg(self.pgid, Signal::SIGKILL);
                let _ = self.child.wait();
            }
            // The leader is gone but the rest of its group was not ended yet.
            State::Draining { end: End::Exited(_), .. } => {
                let _ = killpg(self.pgid, Signal::SIGKILL);
            }
            State::Draining { .. } | State::Ended { .. } => {}
        }
    }
}

/// SIGTERM to the process group `pgid`, then SIGKILL if anything of it is still there after
/// [`TERM_GRACE`]. Returns as soon as the group is empty; `leader`, when still ours to reap,
/// is reaped meanwhile (a zombie still counts as a member).
fn terminate_group(pgid: Pid, mut leader: Option<&mut Child>) {
    if killpg(pgid, Signal::SIGTERM).is_err() {
        return;
    }
    let until = Instant::now() + TERM_GRACE;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        if let Some(c) = leader.as_mut() {
            let _ = c.try_wait();
        }
        // Signal 0: is any member left?
        if kill(Pid::from_raw(-pgid.as_raw()), None).is_err() {
            return;
        }
    }
    let _ = killpg(pgid, Signal::SIGKILL);
}

/// SIGKILL to the process started by `cmd` when the thread that starts it exits. A driver or
/// test stopped from outside then does not leave its job running; a job whose parent died
/// before it got here does not start.
fn die_with_parent(cmd: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs between fork and exec; prctl(2) and getppid(2) are
    // async-signal-safe system calls, and nothing in it allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

fn spawn_reader<R: Read + Send + 'static>(r: R, stream: Stream, tx: Sender<Line>) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            let text = String::from_utf8_lossy(&buf).into_owned();
            if tx.send(Line { stream, text }).is_err() {
                break;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    fn alive(pid: i32) -> bool {
        // A zombie (killed, not yet reaped by its new parent) counts as gone.
        kill(Pid::from_raw(pid), None).is_ok()
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
    }

    fn wait_gone(pid: i32) {
        let t0 = Instant::now();
        while alive(pid) {
            assert!(t0.elapsed() < Duration::from_secs(5), "process {pid} survived its job");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn captures_both_streams_and_the_status() {
        let f = Supervisor::new(Duration::from_secs(10)).run(sh("echo out; echo err >&2; exit 3")).unwrap();
        assert_eq!(f.stdout, "out\n");
        assert_eq!(f.stderr, "err\n");
        match f.end {
            End::Exited(st) => assert_eq!(st.code(), Some(3)),
            e => panic!("{e:?}"),
        }
        assert!(!f.end.success());
    }

    #[test]
    fn lines_arrive_while_the_job_runs() {
        let mut j =
            Supervisor::new(Duration::from_secs(10)).spawn(sh("echo first; sleep 1; echo second")).unwrap();
        let t0 = Instant::now();
        match j.next_event() {
            Event::Line(l) => assert_eq!((l.stream, l.text.as_str()), (Stream::Out, "first")),
            e => panic!("{e:?}"),
        }
        assert!(t0.elapsed() < Duration::from_millis(900), "first line held back until exit");
        let rest = j.finish();
        assert_eq!(rest.stdout, "second\n");
        assert!(rest.end.success());
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        // The grandchild ignores SIGTERM: only the SIGKILL after the grace period ends it.
        let mut j = Supervisor::new(Duration::from_millis(300))
            .spawn(sh("sh -c 'trap \"\" TERM; echo $$; exec sleep 60' & wait"))
            .unwrap();
        let grandchild: i32 = match j.next_event() {
            Event::Line(l) => l.text.trim().parse().unwrap(),
            e => panic!("{e:?}"),
        };
        assert!(alive(grandchild));
        let f = j.finish();
        assert_eq!(f.end, End::TimedOut(Duration::from_millis(300)));
        wait_gone(grandchild);
    }

    #[test]
    fn leftovers_of_an_exited_job_are_killed() {
        let mut j =
            Supervisor::new(Duration::from_secs(10)).spawn(sh("sleep 60 >/dev/null 2>&1 & echo $!")).unwrap();
        let f = j.finish();
        assert!(f.end.success());
        wait_gone(f.stdout.trim().parse().unwrap());
    }

    #[test]
    fn drop_after_the_leader_exited_kills_the_rest_of_the_group() {
        let mut j =
            Supervisor::new(Duration::from_secs(60)).spawn(sh("sleep 60 >/dev/null 2>&1 & echo $!")).unwrap();
        let pid: i32 = match j.next_event() {
            Event::Line(l) => l.text.trim().parse().unwrap(),
            e => panic!("{e:?}"),
        };
        let t0 = Instant::now();
        while j.exit_status().is_none() {
            assert!(t0.elapsed() < Duration::from_secs(5), "sh did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(alive(pid));
        drop(j);
        wait_gone(pid);
    }

    #[test]
    fn drop_kills_a_running_job() {
        let j = Supervisor::new(Duration::from_secs(60))
            .stdout(Io::Null)
            .stderr(Io::Null)
            .spawn(sh("sleep 60"))
            .unwrap();
        let pid = j.pid() as i32;
        assert!(alive(pid));
        drop(j);
        wait_gone(pid);
    }

    #[test]
    fn cut_deadline_ends_a_job_early() {
        let mut j = Supervisor::new(Duration::from_secs(60)).spawn(sh("echo done; exec sleep 60")).unwrap();
        assert!(matches!(j.next_event(), Event::Line(_)));
        j.cut_deadline(Duration::from_millis(100));
        let t0 = Instant::now();
        assert!(matches!(j.finish().end, End::TimedOut(_)));
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn try_end_without_capture() {
        let mut j = Supervisor::new(Duration::from_secs(10))
            .stdout(Io::Null)
            .stderr(Io::Null)
            .spawn(sh("exit 0"))
            .unwrap();
        let t0 = Instant::now();
        let end = loop {
            if let Some(e) = j.try_end() {
                break e;
            }
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(end.success());
        assert!(j.signal(Signal::SIGKILL).is_err(), "no signal to a reaped leader");
    }

    #[test]
    fn spawn_failure_is_typed() {
        let e = Supervisor::new(Duration::from_secs(1)).spawn(Command::new("/nonexistent/prog")).unwrap_err();
        assert_eq!(e.prog, "/nonexistent/prog");
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound);
    }
}
