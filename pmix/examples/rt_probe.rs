//! Test child for `weft-run` (used by `pmix/tests/launcher.rs`).
//!
//! `rt_probe MODE [ARGS]`, started under `weft-run` (or alone: singleton):
//! - `modex`: put two keys, fence, check every rank's keys; print `OK rank=R size=N`.
//! - `kill VICTIM STAMPFILE [before]`: VICTIM writes the wall-clock time (µs) to STAMPFILE and
//!   SIGKILLs itself after the first fence (or before it with `before`); survivors poll
//!   `poll_terminated` until VICTIM is reported, print `DETECT rank=R victim=V delay_us=D`, then
//!   check that the next fence fails naming exactly VICTIM and the one after succeeds.
//! - `garbage VICTIM`: after the first fence VICTIM writes garbage on the launcher socket;
//!   survivors detect it like `kill`.
//! - `exit VICTIM CODE`: VICTIM exits with CODE after the first fence, without finalize.
//! - `abort VICTIM CODE`: VICTIM calls `abort(CODE)` after the first fence; others fence again.
//! - `sleep`: print `PID rank=R pid=P sock=S`, fence, sleep forever.
//! - `shm`: create `/dev/shm/<jobid>-probe-<rank>` (the launcher must remove it) and print it.
//! - `pollcost`: time 10 000 idle `poll_terminated` calls.
//! - `info`: print what the runtime says about this process.
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
    match rt.fence() {
        Err(RuntimeError::FenceFailed(ranks)) if ranks == [victim] => {
            println!("FENCE_FAILED rank={r} ranks={ranks:?}");
        }
        other => fail(format!("rank {r}: expected FenceFailed([{victim}]), got {other:?}")),
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).cloned().unwrap_or_else(|| "modex".into());
    if mode == "garbage" {
        garbage(&args);
        return;
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
                std::env::var("WEFT_RUN_SOCK").unwrap_or_default()
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

fn garbage(args: &[String]) {
    use std::os::fd::AsFd;
    let victim = num(args, 2);
    let mut lr =
        weft_pmix::launcher::LauncherRuntime::connect().unwrap_or_else(|e| fail(format!("connect: {e}")));
    let r = lr.rank();
    modex(&mut lr);
    if r == victim {
        // Write garbage on the launcher connection through a duplicate descriptor.
        let dup = lr.as_fd().try_clone_to_owned().unwrap_or_else(|e| fail(format!("dup: {e}")));
        let mut s = std::os::unix::net::UnixStream::from(dup);
        let _ = s.write_all(&[0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3]);
        sleep_forever();
    }
    detect(&mut lr, victim, None);
    after_failure(&mut lr, victim);
    lr.finalize().unwrap_or_else(|e| fail(format!("finalize: {e}")));
    println!("OK rank={r} size={}", lr.size());
}
