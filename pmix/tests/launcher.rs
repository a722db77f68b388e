//! Multi-process tests of `weft-run` (the hosted OpenPMIx server, its fault injection and its
//! clean-up guarantees) and of the PMIx client backend under it, driving the `rt_probe` example.
//!
//! Every job runs with `weft-run --timeout` *and* as a job of `weft_testkit::job` with a hard
//! deadline in the test (weft-run's process group is killed then), so a hang fails fast
//! instead of blocking CI.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use weft_testkit::job::{End, Event, Job, Line, Stream, Supervisor};

const WEFT_RUN: &str = env!("CARGO_BIN_EXE_weft-run");
const DEADLINE: Duration = Duration::from_secs(60);
/// How every `weft-run` of these tests is started: output captured, killed at [`DEADLINE`].
const JOBS: Supervisor = Supervisor::new(DEADLINE);

/// Path of the `rt_probe` example, built (once per test process) in the same profile and
/// target directory as `weft-run`, so it is never stale.
fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let bin_dir = Path::new(WEFT_RUN).parent().expect("weft-run has a parent dir").to_path_buf();
        let profile = match bin_dir.file_name().and_then(|s| s.to_str()) {
            Some("debug") => "dev".to_string(),
            Some(p) => p.to_string(),
            None => "dev".to_string(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "weft-pmix", "--example", "rt_probe", "--profile", &profile])
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
        if let Some(target_dir) = bin_dir.parent() {
            if std::env::var_os("CARGO_TARGET_DIR").is_none() && target_dir.join("CACHEDIR.TAG").exists() {
                cmd.arg("--target-dir").arg(target_dir);
            }
        }
        let st = cmd.status().expect("run cargo build --example rt_probe");
        assert!(st.success(), "cargo build --example rt_probe failed: {st}");
        let p = bin_dir.join("examples").join("rt_probe");
        assert!(p.exists(), "{} missing after build", p.display());
        p
    })
}

struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Out {
    fn lines(&self, prefix: &str) -> Vec<&str> {
        self.stdout.lines().filter(|l| l.starts_with(prefix)).collect()
    }
    fn dump(&self) -> String {
        format!("status {:?}\n--- stdout\n{}--- stderr\n{}", self.status, self.stdout, self.stderr)
    }
}

/// Wait for the end of `job` (output lines already seen are `seen_out` / `seen_err`); panic
/// if it was still running at the deadline (it has been killed, its ranks die with it).
fn finish(mut job: Job, seen_out: &str, seen_err: &str) -> Out {
    let f = job.finish();
    let (stdout, stderr) = (format!("{seen_out}{}", f.stdout), format!("{seen_err}{}", f.stderr));
    match f.end {
        End::Exited(status) => Out { status, stdout, stderr },
        End::TimedOut(_) => {
            panic!(
                "weft-run did not finish before the test deadline\n--- stdout\n{stdout}--- stderr\n{stderr}"
            )
        }
    }
}

fn run_cmd(cmd: Command) -> Out {
    finish(JOBS.spawn(cmd).expect("spawn weft-run"), "", "")
}

fn run(args: &[&str]) -> Out {
    let mut cmd = Command::new(WEFT_RUN);
    cmd.args(args);
    run_cmd(cmd)
}

/// `weft-run -n N --timeout 30 rt_probe ARGS…`
fn run_probe(n: u32, args: &[&str]) -> Out {
    let n = n.to_string();
    let p = probe().to_str().unwrap().to_string();
    let mut all = vec!["-n", &n, "--timeout", "30", &p];
    all.extend_from_slice(args);
    run(&all)
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

fn is_gone(pid: i32) -> bool {
    match kill(Pid::from_raw(pid), None) {
        Err(nix::errno::Errno::ESRCH) => true,
        // A zombie waiting for an (unrelated) reaper is dead too.
        _ => std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().map(|t| t.trim_start().starts_with('Z')).unwrap_or(false))
            .unwrap_or(true),
    }
}

fn wait_gone(pids: &[i32], within: Duration) {
    let end = Instant::now() + within;
    while pids.iter().any(|&p| !is_gone(p)) {
        assert!(
            Instant::now() < end,
            "processes still alive: {:?}",
            pids.iter().filter(|&&p| !is_gone(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A job whose ranks print `PID …` and `READY …` lines, then sleep forever.
struct Sleeper {
    job: Option<Job>,
    pids: Vec<i32>,
    sock_dir: PathBuf,
    /// What the job printed while it was starting.
    out: String,
    err: String,
}

impl Sleeper {
    fn job(&mut self) -> &mut Job {
        self.job.as_mut().expect("job not finished")
    }

    /// Wait for the end of weft-run (panic at the test deadline).
    fn finish(&mut self) -> Out {
        finish(self.job.take().expect("finished once"), &self.out, &self.err)
    }
}

fn start_sleepers(n: u32, timeout: &str) -> Sleeper {
    start_sleepers_with(n, timeout, &[])
}

fn start_sleepers_with(n: u32, timeout: &str, extra: &[&str]) -> Sleeper {
    let mut cmd = Command::new(WEFT_RUN);
    cmd.args(["-n", &n.to_string(), "--timeout", timeout]).args(extra).arg(probe()).arg("sleep");
    let mut job = JOBS.spawn(cmd).expect("spawn weft-run");
    let (mut pids, mut sock_dir, mut out, mut err) = (Vec::new(), None, String::new(), String::new());
    let mut ready = 0;
    while ready < n {
        let line = match job.next_event() {
            Event::Line(Line { stream: Stream::Out, text }) => text,
            Event::Line(Line { stream: Stream::Err, text }) => {
                err.push_str(&text);
                err.push('\n');
                continue;
            }
            end => panic!("ranks did not become ready: {end:?}\n--- stdout\n{out}--- stderr\n{err}"),
        };
        if line.starts_with("PID ") {
            pids.push(field(&line, "pid").parse().unwrap());
            sock_dir = Some(PathBuf::from(field(&line, "sock")).parent().unwrap().to_path_buf());
        } else if line.starts_with("READY ") {
            ready += 1;
        }
        out.push_str(&line);
        out.push('\n');
    }
    Sleeper { job: Some(job), pids, sock_dir: sock_dir.unwrap(), out, err }
}

// ------------------------------------------------------------------------ tests

#[test]
fn modex_n1_n4_n8() {
    for n in [1u32, 4, 8] {
        let out = run_probe(n, &["modex"]);
        assert!(out.status.success(), "n={n}: {}", out.dump());
        assert_eq!(out.lines("OK ").len(), n as usize, "n={n}: {}", out.dump());
        assert!(out.lines("FAIL").is_empty(), "{}", out.dump());
    }
}

#[test]
fn info_under_launcher_and_singleton() {
    let out = run_probe(3, &["info"]);
    assert!(out.status.success(), "{}", out.dump());
    let info = out.lines("INFO ");
    assert_eq!(info.len(), 3);
    let job = field(info[0], "job");
    assert!(job.starts_with("weft-"), "{job}");
    for l in &info {
        // weft-run hosts a PMIx server: its ranks take the PMIx client backend.
        assert_eq!(field(l, "backend"), "pmix");
        assert_eq!(field(l, "size"), "3");
        assert_eq!(field(l, "job"), job, "job id differs between ranks");
    }
    // Alone: the singleton backend.
    let o = Command::new(probe())
        .arg("info")
        .env_remove("PMIX_NAMESPACE")
        .env_remove("PMIX_RANK")
        .env_remove("PMI_FD")
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{s}");
    assert!(s.contains("backend=singleton rank=0 size=1 node=0 peers=[0]"), "{s}");
}

/// A rank whose PMIx server cannot be reached (gone, or never there) ends with a typed
/// runtime error at init, not a hang.
#[test]
fn unreachable_pmix_server_is_a_typed_error() {
    // A port nobody listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let uri = format!("pmix-server.1;tcp4://127.0.0.1:{port}");
    let t0 = Instant::now();
    let o = Command::new(probe())
        .arg("info")
        .env_remove("PMI_FD")
        .envs([
            ("PMIX_NAMESPACE", "weft-gone"),
            ("PMIX_RANK", "0"),
            ("PMIX_SERVER_URI41", uri.as_str()),
            ("PMIX_SERVER_URI4", uri.as_str()),
        ])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{s}");
    assert!(s.contains("runtime init: PMIx call PMIx_Init failed"), "{s}");
    assert!(t0.elapsed() < Duration::from_secs(20), "took {:?}", t0.elapsed());
}

fn check_detection(out: &Out, n: u32, victim: u32, max_us: Option<u64>) {
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.lines("FAIL").is_empty(), "{}", out.dump());
    let det = out.lines("DETECT ");
    assert_eq!(det.len(), n as usize - 1, "every survivor detects: {}", out.dump());
    for l in &det {
        assert_eq!(field(l, "victim"), victim.to_string());
        if let Some(max) = max_us {
            let d: i64 = field(l, "delay_us").parse().unwrap();
            assert!(d >= 0 && (d as u64) < max, "detection took {d} µs: {l}");
        }
    }
    // libpmix drops a dead client from the fences it is part of: the survivors' next fence
    // either fails naming the victim (it was counted when the fence began) or succeeds among
    // the survivors. Either way every survivor gets a verdict.
    let verdicts = out.lines("FENCE_FAILED ").len() + out.lines("FENCE_OK ").len();
    assert_eq!(verdicts, n as usize - 1, "{}", out.dump());
    assert_eq!(out.lines("OK ").len(), n as usize - 1, "survivors finish: {}", out.dump());
    let failed: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("weft-run: rank ")).collect();
    assert!(
        failed.iter().any(|l| l.starts_with(&format!("weft-run: rank {victim} (pid "))),
        "{}",
        out.dump()
    );
}

#[test]
fn sigkilled_rank_is_reported_to_every_survivor_fast() {
    let stamp = std::env::temp_dir().join(format!("weft-test-stamp-{}", std::process::id()));
    let s = stamp.to_str().unwrap();
    let out = run_probe(4, &["kill", "2", s]);
    check_detection(&out, 4, 2, Some(100_000));
    assert!(out.stderr.contains("weft-run: rank 2 (pid "), "{}", out.dump());
    assert!(out.stderr.contains("killed by signal 9 (SIGKILL)"), "{}", out.dump());
    for l in out.lines("DETECT ") {
        eprintln!("{l}");
    }
    // Death before the first fence: that fence fails, the next succeeds.
    let out = run_probe(4, &["kill", "1", s, "before"]);
    check_detection(&out, 4, 1, None);
    let _ = std::fs::remove_file(&stamp);
}

#[test]
fn nonzero_exit_and_exit_without_finalize_are_failures() {
    let out = run_probe(3, &["exit", "0", "5"]);
    check_detection(&out, 3, 0, None);
    assert!(
        out.stderr.contains("rank 0 (pid ") && out.stderr.contains("exited with status 5"),
        "{}",
        out.dump()
    );
    let out = run_probe(3, &["exit", "2", "0"]);
    check_detection(&out, 3, 2, None);
    assert!(out.stderr.contains("exited with status 0 before finalize"), "{}", out.dump());
}

/// A rank that fails before it connects to the PMIx server: the others' bootstrap fence
/// cannot complete, weft-run ends the job right away (not at its timeout) and says why.
#[test]
fn rank_failing_before_connecting_ends_the_job() {
    let t0 = Instant::now();
    let out = run_probe(3, &["early", "1", "4"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.lines("FAIL").is_empty(), "{}", out.dump());
    assert!(
        out.stderr.contains("rank 1 (pid ") && out.stderr.contains("exited with status 4"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("rank 1 failed before connecting to the PMIx server"), "{}", out.dump());
    assert!(t0.elapsed() < Duration::from_secs(20), "took {:?}: {}", t0.elapsed(), out.dump());
}

#[test]
fn abort_kills_the_job_with_its_code() {
    let out = run_probe(3, &["abort", "1", "7"]);
    assert_eq!(out.status.code(), Some(7), "{}", out.dump());
    assert!(out.stderr.contains("called abort(7): rt_probe abort test"), "{}", out.dump());
}

#[test]
fn timeout_kills_everything() {
    let mut s = start_sleepers(3, "2");
    assert_eq!(s.pids.len(), 3);
    let Out { status: st, stderr: err, .. } = s.finish();
    assert_eq!(st.code(), Some(124), "{err}");
    assert!(err.contains("weft-run: timeout after 2 s"), "{err}");
    // weft-run reaps its ranks before exiting: they are gone right away.
    wait_gone(&s.pids, Duration::from_millis(1));
    assert!(!s.sock_dir.exists(), "socket dir left behind");
}

#[test]
fn sigterm_and_sigint_kill_children_and_clean_up() {
    for (sig, code, n) in [(Signal::SIGTERM, 143, 4), (Signal::SIGINT, 130, 2)] {
        let mut s = start_sleepers(n, "60");
        let sock = s.sock_dir.join("sock");
        assert!(sock.exists());
        // Strangers on the fault-injection control socket must not disturb the launcher:
        // garbage, requests for ranks and nodes that do not exist, an over-long line.
        use std::io::Write;
        use std::os::unix::net::UnixStream;
        for bytes in [
            vec![0xffu8; 64],
            b"kill-rank 99\n".to_vec(),
            b"kill-node 7\n".to_vec(),
            b"kill-all 1\n".to_vec(),
            vec![b'x'; 1000],
        ] {
            let mut c = UnixStream::connect(&sock).unwrap();
            let _ = c.write_all(&bytes);
        }
        std::thread::sleep(Duration::from_millis(100));
        assert!(s.job().exit_status().is_none(), "weft-run died on garbage");
        assert!(s.pids.iter().all(|&p| !is_gone(p)), "a rank died on garbage");
        s.job().signal(sig).unwrap();
        let Out { status: st, stderr: err, .. } = s.finish();
        assert_eq!(st.code(), Some(code), "{sig}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        wait_gone(&s.pids, Duration::from_millis(1));
        assert!(!s.sock_dir.exists(), "socket dir left behind");
    }
}

#[test]
fn sigkilled_launcher_takes_its_ranks_along() {
    let mut s = start_sleepers(3, "60");
    s.job().signal(Signal::SIGKILL).unwrap(); // No cleanup possible, PDEATHSIG must do it.
    let out = s.finish();
    assert_eq!(out.status.signal(), Some(9), "{}", out.dump());
    // PR_SET_PDEATHSIG: the ranks die with the launcher.
    wait_gone(&s.pids, Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(&s.sock_dir);
}

#[test]
fn shm_segments_named_after_the_job_are_removed() {
    if !Path::new("/dev/shm").is_dir() {
        return;
    }
    let out = run_probe(2, &["shm"]);
    assert!(out.status.success(), "{}", out.dump());
    let paths = out.lines("SHM ");
    assert_eq!(paths.len(), 2);
    for l in paths {
        let p = l.trim_start_matches("SHM ");
        assert!(!Path::new(p).exists(), "{p} left behind");
    }
}

#[test]
fn argument_errors_exit_2() {
    let cases: &[&[&str]] = &[
        &["-n", "0", "true"],
        &["-n", "2"],
        &["true"],
        &["-n", "x", "true"],
        &["-n", "2", "/nonexistent/prog"],
        &["-n", "2", "/etc/hostname-not-exec-weft"],
        &["-n", "2", "/dev/null"],
        &["-n", "2", "no-such-program-weft-xyz"],
        &["-n", "2", "--timeout", "abc", "true"],
        &["-n", "2", "--timeout", "-3", "true"],
        &["-n", "2", "--timeout", "0", "true"],
        &["-n", "4", "--nodes", "0", "true"],
        &["-n", "4", "--nodes", "5", "true"],
        &["-n", "4", "--nodes", "x", "true"],
        &["-n", "4", "--map", "3,2", "true"],
        &["-n", "4", "--map", "2,0,2", "true"],
        &["-n", "4", "--map", "2,x", "true"],
        &["-n", "4", "--map", "", "true"],
        &["-n", "4", "--nodes", "3", "--map", "2,2", "true"],
        &["-n", "4", "--nodes", "2", "--kill-node", "2@1", "true"],
        &["-n", "4", "--nodes", "2", "--kill-node", "1", "true"],
        &["-n", "4", "--nodes", "2", "--kill-node", "1@-1", "true"],
        &["-n", "4", "--nodes", "2", "--partition", "1@1", "true"],
    ];
    for args in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.dump());
        assert!(!out.stderr.trim().is_empty(), "{args:?}: no message");
        assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.dump());
    }
    // A plain program that never joins the protocol and exits 0 is a normal end.
    let out = run(&["-n", "2", "--timeout", "30", "true"]);
    assert!(out.status.success(), "{}", out.dump());
    let out = run(&["-n", "2", "--timeout", "30", "false"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert_eq!(
        out.stderr.lines().filter(|l| l.contains("exited with status 1")).count(),
        2,
        "{}",
        out.dump()
    );
}

// ------------------------------------------------------------------------ virtual nodes

/// Parsed `NODES …` line of `rt_probe nodes`.
struct NodeLine {
    rank: u32,
    node: u32,
    peers: String,
    map: String,
    dom: String,
    netns: String,
    links: String,
    job: String,
}

fn node_lines(out: &Out) -> Vec<NodeLine> {
    let mut v: Vec<NodeLine> = out
        .lines("NODES ")
        .iter()
        .map(|l| {
            // peers=[0, 1] and map=[…] contain spaces: take the bracketed text.
            let bracket = |key: &str| {
                let s = l.split(&format!("{key}=[")).nth(1).unwrap_or_else(|| panic!("{key} in {l}"));
                format!("[{}]", &s[..s.find(']').unwrap()])
            };
            NodeLine {
                rank: field(l, "rank").parse().unwrap(),
                node: field(l, "node").parse().unwrap(),
                peers: bracket("peers"),
                map: bracket("map"),
                dom: field(l, "dom").to_string(),
                netns: field(l, "netns").to_string(),
                links: field(l, "links").to_string(),
                job: field(l, "job").to_string(),
            }
        })
        .collect();
    v.sort_by_key(|x| x.rank);
    v
}

fn check_map(out: &Out, n: u32, map: &[u32], dom: &str) -> Vec<NodeLine> {
    assert!(out.status.success(), "{}", out.dump());
    let lines = node_lines(out);
    assert_eq!(lines.len(), n as usize, "{}", out.dump());
    let want_map = format!("{map:?}");
    for l in &lines {
        assert_eq!(l.map, want_map, "rank {}: {}", l.rank, out.dump());
        assert_eq!(l.node, map[l.rank as usize], "rank {}", l.rank);
        let peers: Vec<u32> = (0..n).filter(|&p| map[p as usize] == l.node).collect();
        assert_eq!(l.peers, format!("{peers:?}"), "rank {}", l.rank);
        assert_eq!(l.dom, dom, "rank {}", l.rank);
    }
    lines
}

#[test]
fn node_map_reaches_every_rank() {
    let p = probe().to_str().unwrap().to_string();
    let cases: &[(u32, &[&str], &[u32])] = &[
        (4, &["--nodes", "2"], &[0, 0, 1, 1]),
        (5, &["--nodes", "2"], &[0, 0, 0, 1, 1]),
        (4, &["--map", "3,1"], &[0, 0, 0, 1]),
        (5, &["--map", "2,2,1"], &[0, 0, 1, 1, 2]),
        (5, &["--nodes", "3", "--map", "2,2,1"], &[0, 0, 1, 1, 2]),
        (3, &["--nodes", "3"], &[0, 1, 2]),
    ];
    for &(n, opts, map) in cases {
        let ns = n.to_string();
        let mut args = vec!["-n", &ns, "--timeout", "30"];
        args.extend_from_slice(opts);
        args.extend_from_slice(&[&p, "nodes"]);
        let out = run(&args);
        check_map(&out, n, map, "lo");
    }
    // One node: WEFT_FI_DOMAIN is left alone.
    let out = run(&["-n", "2", "--timeout", "30", &p, "nodes"]);
    check_map(&out, 2, &[0, 0], "-");
    // A user's WEFT_FI_DOMAIN wins over the loopback default.
    let mut cmd = Command::new(WEFT_RUN);
    cmd.args(["-n", "2", "--nodes", "2", "--timeout", "30", &p, "nodes"]).env("WEFT_FI_DOMAIN", "mydev");
    let out = run_cmd(cmd);
    check_map(&out, 2, &[0, 1], "mydev");
}

/// Every survivor reports every rank of `node` (exactly `victims`); the launcher reports them
/// as failed.
fn check_node_down(out: &Out, n: u32, node: u32, victims: &[u32], why: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.lines("FAIL").is_empty(), "{}", out.dump());
    let survivors = n as usize - victims.len();
    let down = out.lines("NODE_DOWN ");
    assert_eq!(down.len(), survivors, "{}", out.dump());
    for l in &down {
        assert_eq!(field(l, "node"), node.to_string(), "{l}");
        assert!(l.ends_with(&format!("ranks={victims:?}")), "{l}");
    }
    assert_eq!(out.lines("OK ").len(), survivors, "{}", out.dump());
    for v in victims {
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("weft-run: rank {v} (pid ")))
            .unwrap_or_else(|| panic!("rank {v} not reported as failed: {}", out.dump()));
        assert!(line.contains("SIGKILL") && line.contains(why), "{line}");
    }
    let failed = out.stderr.lines().filter(|l| l.starts_with("weft-run: rank ")).count();
    assert_eq!(failed, victims.len(), "{}", out.dump());
}

#[test]
fn kill_node_at_a_time_reports_every_rank_of_the_node() {
    let out = run_probe_with(5, &["--nodes", "2", "--kill-node", "1@0.5"], &["nodewait", "1"]);
    check_node_down(&out, 5, 1, &[3, 4], "--kill-node");
    assert!(out.stderr.contains("--kill-node: killing node 1 (ranks [3, 4])"), "{}", out.dump());
}

#[test]
fn kill_node_from_a_rank() {
    let out = run_probe_with(5, &["--map", "2,2,1"], &["killnode", "1", "0"]);
    check_node_down(&out, 5, 1, &[2, 3], "node 1 killed by a control request");
    let k = out.lines("KILLED ");
    assert_eq!(k.len(), 1, "{}", out.dump());
    // `immediate` (events already delivered when the answer came) is not checked: libpmix
    // delivers on its own progress thread, after the launcher's answer or before.
    assert!(k[0].contains("ranks=[2, 3] immediate="), "{}", k[0]);
    // Through a control connection, from a rank of another node.
    let out = run_probe_with(5, &["--map", "2,2,1"], &["killnode", "2", "3", "ctl"]);
    check_node_down(&out, 5, 2, &[4], "node 2 killed by a control request");
}

/// `weft-run -n N --timeout 30 OPTS… rt_probe ARGS…`
fn run_probe_with(n: u32, opts: &[&str], args: &[&str]) -> Out {
    let n = n.to_string();
    let p = probe().to_str().unwrap().to_string();
    let mut all = vec!["-n", &n, "--timeout", "30"];
    all.extend_from_slice(opts);
    all.push(&p);
    all.extend_from_slice(args);
    run(&all)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Namespaces whose name contains `job`.
fn netns_of(job: &str) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(job))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn netns_per_node_created_and_removed() {
    if !is_root() {
        let out = run_probe_with(2, &["--nodes", "2", "--netns"], &["nodes"]);
        assert_eq!(out.status.code(), Some(2), "{}", out.dump());
        assert!(out.stderr.contains("--netns needs root"), "{}", out.dump());
        return;
    }
    let out = run_probe_with(3, &["--nodes", "2", "--netns"], &["nodes"]);
    assert!(out.status.success(), "{}", out.dump());
    let lines = node_lines(&out);
    assert_eq!(lines.len(), 3, "{}", out.dump());
    let host_ns = std::fs::read_link("/proc/self/ns/net").unwrap().to_string_lossy().into_owned();
    for l in &lines {
        assert_eq!(l.dom, format!("wn{}", l.node), "{}", out.dump());
        assert_eq!(l.links, format!("lo,wn{}", l.node), "{}", out.dump());
        assert_ne!(l.netns, host_ns, "rank {} runs in the host namespace", l.rank);
    }
    assert_eq!(lines[0].netns, lines[1].netns, "ranks of node 0 share a namespace");
    assert_ne!(lines[0].netns, lines[2].netns, "nodes 0 and 1 share a namespace");
    assert!(netns_of(&lines[0].job).is_empty(), "left behind: {:?}", netns_of(&lines[0].job));

    // TCP crosses the bridge, and stops after --partition.
    let out = run_probe_with(2, &["--nodes", "2", "--netns", "--partition", "1@3"], &["net"]);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.lines("CONNECT ok").len(), 1, "{}", out.dump());
    assert_eq!(out.lines("PARTITIONED ").len(), 1, "{}", out.dump());
    assert!(out.stderr.contains("--partition: node 1"), "{}", out.dump());

    // Timeout and SIGINT paths remove the namespaces too.
    for sig in [None, Some(Signal::SIGINT)] {
        let timeout = if sig.is_some() { "60" } else { "3" };
        let mut s = start_sleepers_with(2, timeout, &["--nodes", "2", "--netns"]);
        let job =
            s.sock_dir.file_name().unwrap().to_string_lossy().trim_start_matches("weft-run.").to_string();
        assert_eq!(netns_of(&job).len(), 3, "namespaces of {job}: {:?}", netns_of(&job));
        if let Some(sig) = sig {
            s.job().signal(sig).unwrap();
        }
        let Out { status: st, stderr: err, .. } = s.finish();
        assert!(!st.success(), "{err}");
        assert!(netns_of(&job).is_empty(), "{sig:?}: left behind: {:?}", netns_of(&job));
        wait_gone(&s.pids, Duration::from_millis(1));
    }
}

#[test]
fn bind_to_core_gives_each_rank_one_cpu() {
    let out = run(&[
        "-n",
        "2",
        "--timeout",
        "30",
        "--bind-to",
        "core",
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert!(out.status.success(), "{}", out.dump());
    let cpus: Vec<&str> =
        out.lines("Cpus_allowed_list").iter().map(|l| l.split_whitespace().last().unwrap()).collect();
    assert_eq!(cpus.len(), 2, "{}", out.dump());
    for c in &cpus {
        assert!(c.parse::<usize>().is_ok(), "rank not bound to a single CPU: {c}\n{}", out.dump());
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        assert_ne!(cpus[0], cpus[1], "two ranks of one node on one CPU\n{}", out.dump());
    }
    let bad = run(&["-n", "1", "--bind-to", "socket", "true"]);
    assert!(!bad.status.success() && bad.stderr.contains("--bind-to"), "{}", bad.dump());
}

/// `weft-run ARGS… env` with `GLIBC_TUNABLES` set to `user` (or removed): the value every rank
/// got (`None` for a rank without one).
fn tunables_seen(user: Option<&str>, args: &[&str]) -> (Out, Vec<Option<String>>) {
    let mut cmd = Command::new(WEFT_RUN);
    match user {
        Some(v) => cmd.env("GLIBC_TUNABLES", v),
        None => cmd.env_remove("GLIBC_TUNABLES"),
    };
    cmd.args(args).args(["--timeout", "30", "sh", "-c", "echo \"rank-tunables:${GLIBC_TUNABLES-none}\""]);
    let out = run_cmd(cmd);
    assert!(out.status.success(), "{}", out.dump());
    let seen = out
        .lines("rank-tunables:")
        .iter()
        .map(|l| Some(l["rank-tunables:".len()..].to_string()).filter(|v| v != "none"))
        .collect();
    (out, seen)
}

#[test]
fn oversubscribed_ranks_start_without_rseq_and_avx512_string_functions() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let over = (cpus + 1).to_string();
    // One process, but a universe of more processes than CPUs: oversubscribed.
    let (out, seen) = tunables_seen(None, &["-n", "1", "--universe-size", &over]);
    assert_eq!(seen.len(), 1, "{}", out.dump());
    let v = seen[0].clone().unwrap_or_else(|| panic!("no GLIBC_TUNABLES\n{}", out.dump()));
    assert!(v.contains("glibc.pthread.rseq=0") && v.contains("-AVX512VL"), "{v}");
    // A key the user set wins; the others are added.
    let (out, seen) = tunables_seen(Some("glibc.pthread.rseq=1"), &["-n", "1", "--universe-size", &over]);
    let v = seen[0].clone().unwrap_or_else(|| panic!("no GLIBC_TUNABLES\n{}", out.dump()));
    assert!(
        v.starts_with("glibc.pthread.rseq=1:") && !v.contains("rseq=0") && v.contains("-AVX512VL"),
        "{v}"
    );
    // --no-tunables, or a job that fits the CPUs: the environment is left alone.
    let (out, seen) = tunables_seen(None, &["-n", "1", "--universe-size", &over, "--no-tunables"]);
    assert_eq!(seen, vec![None], "{}", out.dump());
    let (out, seen) = tunables_seen(Some("glibc.malloc.check=3"), &["-n", "1"]);
    assert_eq!(seen, vec![Some("glibc.malloc.check=3".to_string())], "{}", out.dump());
}
