//! Test child for `weft-run` (used by `pmix/tests/launcher.rs`).
//!
//! `rt_probe MODE [ARGS]`, started under `weft-run` (or alone: singleton):
//! - `modex`: put two keys, fence, check every rank's keys; print `OK rank=R size=N`.
//! - `kill VICTIM STAMPFILE [before]`: VICTIM writes the wall-clock time (µs) to STAMPFILE and
//!   SIGKILLs itself after the first fence (or before it with `before`); survivors poll
//!   `poll_terminated` until VICTIM is reported, print `DETECT rank=R victim=V delay_us=D`, then
//!   check that the next fence fails naming exactly VICTIM and the one after succeeds.
//! - `exit VICTIM CODE`: VICTIM exits with CODE after the first fence, without finalize.
//! - `early VICTIM CODE`: VICTIM exits with CODE before it initialises the runtime (never
//!   connects to the PMIx server); the others initialise and fence (weft-run must end the job).
//! - `abort VICTIM CODE`: VICTIM calls `abort(CODE)` after the first fence; others fence again.
//! - `sleep`: print `PID rank=R pid=P sock=S`, fence, sleep forever.
//! - `shm`: create `/dev/shm/<jobid>-probe-<rank>` (the launcher must remove it) and print it.
//! - `pollcost`: time 10 000 idle `poll_terminated` calls.
//! - `info`: print what the runtime says about this process.
//! - `nodes`: print `NODES rank=R node=N peers=[…] map=[node_of(0), …] dom=WEFT_FI_DOMAIN
//!   netns=INODE links=IF,IF… job=J`.
//! - `nodewait NODE`: fence, print `READY`; ranks of NODE then sleep (a `--kill-node` kills
//!   them); the others wait until every rank of NODE is reported terminated and print
//!   `NODE_DOWN rank=R node=NODE ranks=[…]`, then check that exactly one fence failed, naming
//!   exactly the ranks of NODE.
//! - `killnode NODE KILLER`: like `nodewait`, but rank KILLER kills NODE itself through
//!   weft-run's control connection (`LauncherControl::kill_node`), checks the ranks it names and
//!   the error for a node out of range (`KILLED …` line), then waits for the node-down event
//!   like the others.
//! - `net`: (for `--netns`, 2 nodes) the first rank of node 1 listens on TCP on its veth
//!   address; rank 0 connects across the bridge (`CONNECT ok`), then retries until a
//!   `--partition 1@…` makes it fail (`PARTITIONED`).
//!
//! Any unexpected result prints `FAIL …` and exits 3.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weft_pmix::{Runtime, RuntimeError};

fn now_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0)
}

fn fail(msg: String) -> ! {
    println!("FAIL {msg}");
    let _ = std::io::stdout().flush();
    std::process::exit(3)
}

fn arg(args: &[String], i: usize) -> String {
    args.get(i).cloned().unwrap_or_else(|| fail(format!("missing argument {i}")))
}

fn num(args: &[String], i: usize) -> u32 {
    arg(args, i).parse().unwrap_or_else(|_| fail(format!("argument {i} is not a number")))
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn value_for(rank: u32) -> Vec<u8> {
    (0..(100 + rank * 37)).map(|i| (i ^ rank) as u8).collect()
}

fn modex(rt: &mut dyn Runtime) {
    let r = rt.rank();
    rt.put("addr", format!("rank-{r}").as_bytes()).unwrap_or_else(|e| fail(format!("put: {e}")));
    rt.put("blob", &value_for(r)).unwrap_or_else(|e| fail(format!("put: {e}")));
    rt.commit().unwrap_or_else(|e| fail(format!("commit: {e}")));
    rt.fence().unwrap_or_else(|e| fail(format!("fence: {e}")));
    for p in 0..rt.size() {
        let a = rt.get(p, "addr").unwrap_or_else(|e| fail(format!("get({p}, addr): {e}")));
        if a != format!("rank-{p}").as_bytes() {
            fail(format!("rank {r}: wrong addr for {p}: {a:?}"));
        }
        let b = rt.get(p, "blob").unwrap_or_else(|e| fail(format!("get({p}, blob): {e}")));
        if b != value_for(p) {
            fail(format!("rank {r}: wrong blob for {p}"));
        }
    }
    match rt.get(rt.size(), "addr") {
        Err(RuntimeError::BadRank { .. }) => {}
        other => fail(format!("get(size): expected BadRank, got {other:?}")),
    }
    match rt.get(0, "no-such-key") {
        Err(RuntimeError::NotFound { .. }) => {}
        other => fail(format!("get(missing): expected NotFound, got {other:?}")),
    }
}

/// Survivor side: wait until `victim` is reported, return the delay since its stamp (µs).
fn detect(rt: &mut dyn Runtime, victim: u32, stamp: Option<&str>) {
    let r = rt.rank();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut out = Vec::new();
    loop {
        rt.poll_terminated(&mut out);
        if !out.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            fail(format!("rank {r}: no termination reported within 20 s"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let seen = now_us();
    if out != [victim] {
        fail(format!("rank {r}: expected [{victim}] terminated, got {out:?}"));
    }
    let delay = match stamp {
        Some(path) => {
            let s = std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("read stamp: {e}")));
            let t: u128 = s.trim().parse().unwrap_or_else(|_| fail(format!("bad stamp {s:?}")));
            seen.saturating_sub(t) as i128
        }
        None => -1,
    };
    println!("DETECT rank={r} victim={victim} delay_us={delay}");
}

/// Survivor side after a detected failure: the next fence fails naming exactly `victim`, the
/// one after succeeds, no further termination shows up.
fn after_failure(rt: &mut dyn Runtime, victim: u32) {
    let r = rt.rank();
    // Under a PMIx server (weft-run included) the survivors' fence runs among the survivors
    // once the victim's connection is gone; it fails, naming the victim, only if the victim
    // was still counted when the fence began.
    match rt.fence() {
        Ok(()) => println!("FENCE_OK rank={r}"),
        Err(RuntimeError::FenceFailed(ranks)) if ranks == [victim] => {
            println!("FENCE_FAILED rank={r} ranks={ranks:?}");
        }
        other => fail(format!("rank {r}: expected Ok or FenceFailed([{victim}]), got {other:?}")),
    }
    rt.put("late", b"x").unwrap_or_else(|e| fail(format!("put: {e}")));
    rt.fence().unwrap_or_else(|e| fail(format!("rank {r}: fence after failure: {e}")));
    for p in 0..rt.size() {
        let got = rt.get(p, "late");
        match (p == victim, got) {
            (false, Ok(v)) if v == b"x" => {}
            (true, Err(RuntimeError::NotFound { .. })) => {}
            (_, other) => fail(format!("rank {r}: get({p}, late) gave {other:?}")),
        }
    }
    let mut out = Vec::new();
    rt.poll_terminated(&mut out);
    if !out.is_empty() {
        fail(format!("rank {r}: extra terminations {out:?}"));
    }
}

fn netns_inode() -> String {
    std::fs::read_link("/proc/self/ns/net").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Interfaces of this process's network namespace (`/proc/self/net/dev` is per namespace).
fn links() -> String {
    let dev = std::fs::read_to_string("/proc/self/net/dev").unwrap_or_default();
    let mut v: Vec<&str> = dev.lines().skip(2).filter_map(|l| l.split(':').next()).map(str::trim).collect();
    v.sort();
    v.join(",")
}

fn node_ranks(rt: &dyn Runtime, node: u32) -> Vec<u32> {
    (0..rt.size()).filter(|&p| rt.node_of(p).ok() == Some(node)).collect()
}

/// Fence; `Ok(None)` on success, `Ok(Some(ranks))` when it failed naming `ranks`.
fn fence_verdict(rt: &mut dyn Runtime) -> Option<Vec<u32>> {
    match rt.fence() {
        Ok(()) => None,
        Err(RuntimeError::FenceFailed(ranks)) => Some(ranks),
        Err(e) => fail(format!("rank {}: fence: {e}", rt.rank())),
    }
}

/// Survivor side of a node failure: wait for TERMINATED of every rank of `node`, then check
/// that exactly one fence (`first` or the next one) failed naming exactly those ranks.
fn node_down(rt: &mut dyn Runtime, node: u32, first: Option<Vec<u32>>) {
    let r = rt.rank();
    let victims = node_ranks(rt, node);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < victims.len() {
        rt.poll_terminated(&mut seen);
        if Instant::now() > deadline {
            fail(format!("rank {r}: only {seen:?} of node {node} reported within 20 s"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    seen.sort_unstable();
    if seen != victims {
        fail(format!("rank {r}: expected {victims:?} terminated, got {seen:?}"));
    }
    println!("NODE_DOWN rank={r} node={node} ranks={seen:?}");
    let second = fence_verdict(rt);
    match (first, second) {
        (Some(f), None) | (None, Some(f)) if f == victims => {}
        // PMIx servers (weft-run's included) run later fences among the survivors.
        (None, None) => {}
        (a, b) => fail(format!("rank {r}: fence verdicts {a:?} then {b:?}, expected one naming {victims:?}")),
    }
    if let Some(f) = fence_verdict(rt) {
        fail(format!("rank {r}: third fence failed with {f:?}"));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).cloned().unwrap_or_else(|| "modex".into());
    if mode == "killnode" {
        killnode(&args);
        return;
    }
    if mode == "early" && std::env::var("PMIX_RANK").ok() == Some(arg(&args, 2)) {
        std::process::exit(num(&args, 3) as i32);
    }
    let mut rt = weft_pmix::from_env().unwrap_or_else(|e| fail(format!("runtime init: {e}")));
    let r = rt.rank();
    match mode.as_str() {
        "info" => {
            println!(
                "INFO backend={} rank={} size={} node={} peers={:?} job={} node_of0={:?}",
                rt.backend(),
                r,
                rt.size(),
                rt.node_id(),
                rt.local_peers(),
                rt.job_id(),
                rt.node_of(0).ok()
            );
        }
        "modex" => modex(rt.as_mut()),
        "nodes" => {
            let map: Vec<u32> = (0..rt.size())
                .map(|p| rt.node_of(p).unwrap_or_else(|e| fail(format!("node_of({p}): {e}"))))
                .collect();
            if map[r as usize] != rt.node_id() {
                fail(format!("rank {r}: node_of(self)={} but node_id={}", map[r as usize], rt.node_id()));
            }
            println!(
                "NODES rank={r} node={} peers={:?} map={:?} dom={} netns={} links={} job={}",
                rt.node_id(),
                rt.local_peers(),
                map,
                std::env::var("WEFT_FI_DOMAIN").unwrap_or_else(|_| "-".into()),
                netns_inode(),
                links(),
                rt.job_id()
            );
        }
        "nodewait" => {
            let node = num(&args, 2);
            let first = fence_verdict(rt.as_mut());
            println!("READY rank={r}");
            let _ = std::io::stdout().flush();
            if rt.node_id() == node {
                sleep_forever();
            }
            node_down(rt.as_mut(), node, first);
        }
        "net" => net(rt.as_mut()),
        "kill" => {
            let victim = num(&args, 2);
            let stamp = arg(&args, 3);
            let before = args.get(4).map(|s| s == "before").unwrap_or(false);
            if !before {
                modex(rt.as_mut());
            }
            if r == victim {
                std::fs::write(&stamp, now_us().to_string()).unwrap_or_else(|e| fail(format!("stamp: {e}")));
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                sleep_forever();
            }
            detect(rt.as_mut(), victim, Some(&stamp));
            after_failure(rt.as_mut(), victim);
        }
        "early" => {
            rt.fence().unwrap_or_else(|e| fail(format!("fence: {e}")));
            fail(format!("rank {r}: the fence completed without rank {}", arg(&args, 2)));
        }
        "exit" => {
            let victim = num(&args, 2);
            let code = num(&args, 3) as i32;
            modex(rt.as_mut());
            if r == victim {
                std::process::exit(code);
            }
            detect(rt.as_mut(), victim, None);
            after_failure(rt.as_mut(), victim);
        }
        "abort" => {
            let victim = num(&args, 2);
            let code = num(&args, 3) as i32;
            modex(rt.as_mut());
            if r == victim {
                rt.abort(code, "rt_probe abort test");
            }
            // Everybody else waits in a fence that the abort ends by killing us.
            let _ = rt.fence();
            sleep_forever();
        }
        "pollcost" => {
            // Cost of poll_terminated when nothing happened (strace -c shows one recv each).
            modex(rt.as_mut());
            let mut out = Vec::new();
            let t = Instant::now();
            for _ in 0..10_000 {
                rt.poll_terminated(&mut out);
            }
            let ns = t.elapsed().as_nanos() / 10_000;
            println!("POLLCOST rank={r} ns_per_call={ns} reported={}", out.len());
        }
        "shm" => {
            // Leave a named segment behind; weft-run must remove it at exit.
            let path = format!("/dev/shm/{}-probe-{r}", rt.job_id());
            std::fs::write(&path, b"x").unwrap_or_else(|e| fail(format!("{path}: {e}")));
            println!("SHM {path}");
        }
        "sleep" => {
            println!(
                "PID rank={r} pid={} sock={}",
                std::process::id(),
                std::env::var(weft_pmix::launcher::ENV_CTL).unwrap_or_default()
            );
            let _ = std::io::stdout().flush();
            rt.fence().unwrap_or_else(|e| fail(format!("fence: {e}")));
            println!("READY rank={r}");
            let _ = std::io::stdout().flush();
            sleep_forever();
        }
        other => fail(format!("unknown mode {other}")),
    }
    rt.finalize().unwrap_or_else(|e| fail(format!("finalize: {e}")));
    println!("OK rank={r} size={}", rt.size());
}

fn killnode(args: &[String]) {
    let node = num(args, 2);
    let killer = num(args, 3);
    let mut rt = weft_pmix::from_env().unwrap_or_else(|e| fail(format!("runtime init: {e}")));
    let lr = rt.as_mut();
    let r = lr.rank();
    let num_nodes = (0..lr.size()).filter_map(|p| lr.node_of(p).ok()).max().map_or(1, |m| m + 1);
    let first = fence_verdict(lr);
    if r == killer {
        let mut ctl = weft_pmix::launcher::LauncherControl::connect()
            .unwrap_or_else(|e| fail(format!("LauncherControl::connect: {e}")));
        let killed = ctl.kill_node(node).unwrap_or_else(|e| fail(format!("LauncherControl::kill_node: {e}")));
        // The launcher answered after handing NODE_DOWN to the PMIx server; the event itself
        // reaches us on libpmix's progress thread, possibly a little later.
        let mut now = Vec::new();
        lr.poll_terminated(&mut now);
        now.sort_unstable();
        println!("KILLED rank={r} node={node} ranks={killed:?} immediate={}", now.len());
        let victims = node_ranks(lr, node);
        if killed != victims {
            fail(format!("rank {r}: killed {killed:?}, node {node} has {victims:?}"));
        }
        match ctl.kill_node(num_nodes) {
            Err(RuntimeError::Launcher(_)) => {}
            other => fail(format!("kill_node(out of range): {other:?}")),
        }
        // The second request names nobody: they are all dead already.
        let again = ctl.kill_node(node).unwrap_or_else(|e| fail(format!("kill_node again: {e}")));
        if !again.is_empty() {
            fail(format!("second kill_node killed {again:?}"));
        }
        let _ = std::io::stdout().flush();
        node_down_after(lr, node, first, now);
    } else {
        if lr.node_id() == node {
            sleep_forever();
        }
        node_down(lr, node, first);
    }
    lr.finalize().unwrap_or_else(|e| fail(format!("finalize: {e}")));
    println!("OK rank={r} size={}", lr.size());
}

/// `node_down` for a rank that already consumed some terminations (`seen`).
fn node_down_after(rt: &mut dyn Runtime, node: u32, first: Option<Vec<u32>>, mut seen: Vec<u32>) {
    let victims = node_ranks(rt, node);
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < victims.len() && Instant::now() < deadline {
        rt.poll_terminated(&mut seen);
        std::thread::sleep(Duration::from_micros(200));
    }
    seen.sort_unstable();
    if seen != victims {
        fail(format!("rank {}: expected {victims:?} terminated, got {seen:?}", rt.rank()));
    }
    println!("NODE_DOWN rank={} node={node} ranks={seen:?}", rt.rank());
    let second = fence_verdict(rt);
    match (first, second) {
        (Some(f), None) | (None, Some(f)) if f == victims => {}
        // PMIx servers (weft-run's included) run later fences among the survivors.
        (None, None) => {}
        (a, b) => fail(format!("fence verdicts {a:?} then {b:?}, expected one naming {victims:?}")),
    }
}

/// TCP across the `--netns` bridge, then across a `--partition`.
fn net(rt: &mut dyn Runtime) {
    use std::net::{SocketAddr, TcpListener, TcpStream};
    let r = rt.rank();
    let server = node_ranks(rt, 1).first().copied().unwrap_or_else(|| fail("no node 1".into()));
    if r == server {
        let addr = local_veth_addr().unwrap_or_else(|| fail("no veth address".into()));
        let l = TcpListener::bind((addr.as_str(), 0)).unwrap_or_else(|e| fail(format!("bind: {e}")));
        let a = l.local_addr().unwrap_or_else(|e| fail(format!("local_addr: {e}")));
        std::thread::spawn(move || {
            for c in l.incoming() {
                drop(c);
            }
        });
        rt.put("addr", a.to_string().as_bytes()).unwrap_or_else(|e| fail(format!("put: {e}")));
    }
    rt.fence().unwrap_or_else(|e| fail(format!("fence: {e}")));
    if r == 0 {
        let a = rt.get(server, "addr").unwrap_or_else(|e| fail(format!("get: {e}")));
        let a: SocketAddr =
            String::from_utf8_lossy(&a).parse().unwrap_or_else(|_| fail("bad address".into()));
        match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
            Ok(_) => println!("CONNECT ok rank={r} to={a}"),
            Err(e) => fail(format!("connect {a} before the partition: {e}")),
        }
        let t0 = Instant::now();
        loop {
            if TcpStream::connect_timeout(&a, Duration::from_millis(500)).is_err() {
                println!("PARTITIONED rank={r} after_ms={}", t0.elapsed().as_millis());
                break;
            }
            if t0.elapsed() > Duration::from_secs(15) {
                fail("still connected 15 s after the first connect".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    rt.fence().unwrap_or_else(|e| fail(format!("second fence: {e}")));
}

/// IPv4 address of this namespace's `wn*` interface, from `ip -o -4 addr`.
fn local_veth_addr() -> Option<String> {
    let out = std::process::Command::new("ip").args(["-o", "-4", "addr", "show"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 3 && f[1].starts_with("wn")).then(|| f[3].split('/').next().unwrap_or("").to_string())
    })
}
