//! ULFM scenarios for `tests/ft.rs`, run under `weft-run`: `ft_suite MODE`. Each survivor
//! prints `ft_suite: rank R MODE OK` (plus timings) when its checks pass; any failed check
//! prints `FAILED` and exits 1. Victims SIGKILL themselves at the chosen point.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weft::{Comm, EngineError, ErrScope, Error, Weft, ANY_SOURCE};

fn fail(msg: String) -> ! {
    println!("ft_suite: FAILED: {msg}");
    std::process::exit(1);
}

fn die() -> ! {
    // SAFETY: plain kill(2) of this very process.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    unreachable!("SIGKILL did not kill")
}

fn ok<T>(what: &str, r: weft::Result<T>) -> T {
    r.unwrap_or_else(|e| fail(format!("{what}: {e}")))
}

fn is_pf<T: std::fmt::Debug>(r: &weft::Result<T>) -> bool {
    matches!(r, Err(e) if e.is_proc_failed())
}

fn is_revoked<T>(r: &weft::Result<T>) -> bool {
    matches!(r, Err(Error::Engine(EngineError::Revoked)))
}

/// Progress until world rank `v` is known failed (10 s limit).
fn wait_known(w: &Weft, v: u32) {
    let t = Instant::now();
    while !w.failed_world_ranks().contains(&v) {
        w.progress();
        if t.elapsed() > Duration::from_secs(10) {
            fail(format!("rank {v} never known failed"));
        }
    }
}

fn spin(w: &Weft, d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        w.progress();
        std::thread::yield_now();
    }
}

fn wall_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| fail("usage: ft_suite MODE".into()));
    let w = ok("init", weft::init());
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    ok("barrier", world.barrier());
    match mode.as_str() {
        "errors" => errors(&w, &world, me, n),
        "revoke" => revoke(&w, &world, me, n),
        "kill_revoke" => kill_revoke(&w, &world, me, n),
        "agree" => agree(&w, &world, me, n),
        "shrink_kill" => shrink_kill(&w, &world, me, n),
        "ishrinks" => ishrinks(&w, &world, me, n),
        "node" => node(&w, &world, me, n),
        "freeze" => freeze(&w, &world, me, n),
        "uniform" => uniform(&w, &world, me, n),
        "last" => last(&w, &world, me, n),
        "data_path" => data_path(&w, &world, me, n),
        m => fail(format!("unknown mode {m}")),
    }
    println!("ft_suite: rank {me} {mode} OK");
    let _ = w.finalize();
}

/// Errors to sender, receiver, wildcard receiver and collective; get/ack; an unrelated
/// communicator is not disturbed (local scope); group scope raises until acknowledged.
fn errors(w: &Weft, c: &Comm, me: u32, n: u32) {
    let victim = n - 1;
    let pair = ok("split", c.split((me / 2) as i32, 0)).unwrap();
    let grp = ok("dup", c.dup());
    ok("scope", grp.set_error_scope(ErrScope::Group));
    ok("barrier", c.barrier());
    if me == victim {
        die();
    }
    let mut b = [0u8; 8];
    match me {
        0 => {
            // Sender: eventually fails.
            let t = Instant::now();
            loop {
                let r = c.send(&[1; 8], victim, 5);
                if is_pf(&r) {
                    break;
                }
                ok("send", r);
                if t.elapsed() > Duration::from_secs(10) {
                    fail("send to dead rank never failed".into());
                }
            }
        }
        1 => {
            let r = c.recv(&mut b, victim as i32, 5);
            if !is_pf(&r) {
                fail(format!("recv from dead: {r:?}"));
            }
        }
        _ => {}
    }
    wait_known(w, victim);
    // Wildcard receive: pending while unacknowledged, completes after the ack.
    if me == 2 % (n - 1) && n >= 4 {
        let st = w.scope(|s| {
            let mut r = c.irecv(s, &mut b, ANY_SOURCE, 6)?;
            match r.test() {
                Err(e) if matches!(e.engine(), Some(EngineError::ProcFailedPending)) => {}
                other => fail(format!("wildcard before ack: {other:?}")),
            }
            c.send(&[0; 1], 0, 7)?; // tell rank 0 to send now
            c.ack_failed()?;
            r.wait()
        });
        let st = ok("wildcard after ack", st);
        if st.source != 0 {
            fail("wildcard source".into());
        }
    } else if me == 0 && n >= 4 {
        ok("recv go", c.recv(&mut b, (2 % (n - 1)) as i32, 7));
        ok("send to wildcard", c.send(&[9; 8], 2 % (n - 1), 6));
    }
    // get/ack of failed processes.
    if ok("get_failed", c.get_failed()) != vec![victim] {
        fail("get_failed".into());
    }
    ok("ack", c.ack_failed());
    ok("failure_ack", c.failure_ack());
    if ok("get_acked", c.get_acked()) != vec![victim] {
        fail("get_acked".into());
    }
    // Collective error: a barrier over the dead rank fails (not hangs) everywhere.
    if c.barrier().is_ok() {
        fail("barrier with a dead member succeeded".into());
    }
    // Unrelated communicator (ranks {0,1}) keeps working in local scope.
    if me / 2 == 0 {
        let peer = 1 - pair.rank();
        ok("pair send", pair.send(&[me as u8], peer, 1));
        ok("pair recv", pair.recv(&mut b[..1], peer as i32, 1));
        ok("pair barrier", pair.barrier());
    }
    // Group scope: operations on `grp` not involving the victim raise until acknowledged.
    let r = grp.send(&[1], (me + 1) % victim, 3);
    if !is_pf(&r) {
        fail(format!("group scope did not raise: {r:?}"));
    }
    ok("grp ack", grp.ack_failed());
    // Agreement after everybody acknowledged: no error; then shrink.
    let f = ok("agree after ack", c.agree(0xff ^ (1 << me)));
    let want = (0..victim).fold(0xffu64, |a, r| a & !(1 << r));
    if f != want {
        fail(format!("agree flag {f:#x} want {want:#x}"));
    }
    let s = ok("shrink", c.shrink());
    if s.size() != n - 1 {
        fail("shrunk size".into());
    }
    ok("barrier on shrunk", s.barrier());
}

/// Revoke interrupts pending point-to-point and barrier at every rank; then revoke+shrink
/// repeated 100 times.
fn revoke(w: &Weft, c: &Comm, me: u32, n: u32) {
    let mut b = [0u8; 4];
    if me == 0 {
        spin(w, Duration::from_millis(50));
        ok("revoke", c.revoke());
    } else if me % 2 == 1 {
        let r = c.recv(&mut b, 0, 1);
        if !is_revoked(&r) {
            fail(format!("pending recv not revoked: {r:?}"));
        }
    } else {
        let r = c.barrier();
        if !is_revoked(&r) {
            fail(format!("pending barrier not revoked: {r:?}"));
        }
    }
    if !ok("is_revoked", c.is_revoked()) || !is_revoked(&c.send(&[1], 0, 1)) {
        fail("later ops on a revoked comm".into());
    }
    let mut cur = ok("shrink revoked", c.shrink());
    // The check runs on a duplicate: rank 0 revokes `cur` as soon as its own check returns,
    // which can be before a slower rank's barrier on `cur` completed (that barrier would then
    // rightly fail with Revoked). Rank 0 leaves the duplicate's barrier only after every rank
    // entered it, i.e. finished the `dup` on `cur`.
    let d = ok("dup", cur.dup());
    ok("barrier", d.barrier());
    let _ = d.free();
    let t = Instant::now();
    for i in 0..100u32 {
        if cur.rank() == i % n {
            ok("revoke", cur.revoke());
        }
        // Everyone notices the revoke (a pending receive is interrupted).
        let r = cur.recv(&mut b, ((cur.rank() + 1) % n) as i32, 2);
        if !is_revoked(&r) {
            fail(format!("iteration {i}: {r:?}"));
        }
        let next = ok("shrink", cur.shrink());
        let _ = cur.free();
        cur = next;
    }
    ok("final barrier", cur.barrier());
    println!("ft_suite: rank {me} revoke+shrink x100 in {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
}

/// A kill during the revoke's propagation: the revoker's neighbour dies at once.
fn kill_revoke(w: &Weft, world: &Comm, me: u32, n: u32) {
    // Revoke a duplicate, not the communicator of the initial barrier: a rank that left that
    // barrier early could otherwise revoke it under a rank still inside (whose barrier then
    // rightly fails with Revoked).
    let c = &ok("dup", world.dup());
    if me == 1 {
        ok("revoke", c.revoke());
        w.progress();
        die();
    }
    let mut b = [0u8; 4];
    let r = c.recv(&mut b, ((me + 1) % n) as i32, 1);
    if !is_revoked(&r) && !is_pf(&r) {
        fail(format!("recv: {r:?}"));
    }
    let t = Instant::now();
    while !ok("is_revoked", c.is_revoked()) {
        w.progress();
        if t.elapsed() > Duration::from_secs(10) {
            fail("revoke never arrived".into());
        }
    }
    let s = ok("shrink", c.shrink());
    wait_known(w, 1);
    let s = if s.size() == n { ok("reshrink", s.shrink()) } else { s };
    if s.size() != n - 1 {
        fail(format!("shrunk size {}", s.size()));
    }
    ok("barrier", s.barrier());
}

/// Agreement with failures before (uniform ProcFailed, then success after ack) and during
/// (the root, rank 0, dies inside the agreement).
fn agree(w: &Weft, c: &Comm, me: u32, n: u32) {
    // Before: rank n−1 dies; nobody acknowledged.
    if me == n - 1 {
        die();
    }
    wait_known(w, n - 1);
    let tree_only = std::env::var("WEFT_FT_AGREE").as_deref() == Ok("tree");
    let fast0 = w.ft_stats().decided_fast;
    let t = Instant::now();
    let r = c.agree(1 | (2 << me));
    if !is_pf(&r) {
        fail(format!("agree with unacknowledged failure: {r:?}"));
    }
    // Every member knows the failure when it starts: at 3 live members of 4 the agreement
    // runs the fast path's direct exchange over them (the tree only with WEFT_FT_AGREE=tree).
    if (w.ft_stats().decided_fast != fast0) == tree_only {
        fail(format!("an agreement with a known failure: fast path {}", !tree_only));
    }
    let t_fail = t.elapsed();
    ok("ack", c.ack_failed());
    let f = ok("agree after ack", c.agree(0b111));
    if f != 0b111 {
        fail("flag".into());
    }
    // Failure-free timing on the shrunk communicator.
    let s = ok("shrink", c.shrink());
    let fast0 = w.ft_stats().decided_fast;
    let t = Instant::now();
    for _ in 0..200 {
        ok("agree", s.agree(1));
    }
    let per = t.elapsed().as_secs_f64() * 1e6 / 200.0;
    let fast = w.ft_stats().decided_fast - fast0;
    // Fence: rank 0 dies right after this test's loop, and a member still finishing its
    // 200th agreement would then see a failure during it and legitimately fall back. An
    // agreement completes at rank 0 only after every member contributed, i.e. finished the
    // 200th; the fence itself decides uniformly even if it falls back.
    ok("fence agree", s.agree(1));
    if fast != if tree_only { 0 } else { 200 } {
        fail(format!(
            "{fast} of 200 failure-free agreements on the fast path (WEFT_FT_AGREE tree: {tree_only})"
        ));
    }
    // During: the root (rank 0) starts the agreement and dies inside it.
    if me == 0 {
        let mut flag = 5u64;
        w.scope(|sc| {
            let _r = s.iagree(sc, &mut flag);
            for _ in 0..20 {
                w.progress();
            }
            die();
        });
    }
    let r = s.agree(5);
    match &r {
        Ok(5) => {}
        Err(e) if e.is_proc_failed() => {}
        other => fail(format!("agree with root dying: {other:?}")),
    }
    // Uniformity: a second agreement on whether the first succeeded.
    let okbit = r.is_ok() as u64;
    wait_known(w, 0);
    ok("ack", s.ack_failed());
    let both = ok("agree on outcome", s.agree(okbit | 2));
    let any_ok = ok("agree on outcome or", s.agree((1 - okbit) | 2));
    // AND of okbit == 1 - AND of (1-okbit) would mean mixed outcomes.
    if (both & 1) == 0 && (any_ok & 1) == 0 {
        fail("agreement outcomes were not uniform".into());
    }
    println!(
        "ft_suite: rank {me} agree {per:.1} us (failure-free, {} ranks), ProcFailed agree {:.1} us",
        s.size(),
        t_fail.as_secs_f64() * 1e6
    );
}

/// A kill during shrink.
fn shrink_kill(w: &Weft, c: &Comm, me: u32, n: u32) {
    let victim = 2 % n;
    let t = Instant::now();
    let mut req = ok("ishrink", c.ishrink());
    if me == victim {
        for _ in 0..5 {
            w.progress();
        }
        die();
    }
    let mut s = loop {
        if let Some(s) = ok("test", req.test()) {
            break s;
        }
    };
    let t1 = t.elapsed();
    if std::env::var_os("FT_DEBUG").is_some() {
        eprintln!("rank {me}: ishrink done, size {}", s.size());
    }
    // The dead rank may or may not be in it (if it contributed before dying): shrink again.
    // A plain barrier can succeed at some ranks and fail at others (only the ranks whose
    // partners include the dead one see it), which would send them down different paths;
    // the uniform barrier agrees on one outcome everywhere.
    ok("uniform", s.set_uniform(true));
    while let Err(e) = s.barrier() {
        if std::env::var_os("FT_DEBUG").is_some() {
            eprintln!("rank {me}: barrier on size {} failed: {e}", s.size());
        }
        ok("ack", s.ack_failed());
        s = ok("reshrink", s.shrink());
        ok("uniform", s.set_uniform(true));
    }
    if s.size() != n - 1 {
        fail(format!("final size {}", s.size()));
    }
    println!("ft_suite: rank {me} shrink with a kill inside: {:.2} ms", t1.as_secs_f64() * 1e3);
}

/// Several ishrinks in flight on different communicators, overlapping application traffic.
fn ishrinks(w: &Weft, c: &Comm, me: u32, n: u32) {
    let c1 = ok("dup", c.dup());
    let c2 = ok("dup", c.dup());
    let c3 = ok("split", c.split((me % 2) as i32, 0)).unwrap();
    ok("barrier", c.barrier());
    let victim = n - 1;
    if me == victim {
        die();
    }
    wait_known(w, victim);
    let t = Instant::now();
    let mut reqs =
        vec![ok("ishrink1", c1.ishrink()), ok("ishrink2", c2.ishrink()), ok("ishrink3", c3.ishrink())];
    // Application work meanwhile: a ring among survivors on the (unaffected-in-local-scope)
    // world pairs that do not involve the victim.
    let live = n - 1;
    let mut b = [0u8; 4];
    for _ in 0..10 {
        let next = (me + 1) % live;
        let prev = (me + live - 1) % live;
        let sb = [me as u8; 4];
        ok(
            "ring",
            w.scope(|s| {
                let r = c.irecv(s, &mut b, prev as i32, 11)?;
                let q = c.isend(s, &sb, next, 11)?;
                weft::wait_all(&mut [r, q])
            }),
        );
    }
    let mut out: Vec<Option<Comm>> = vec![None, None, None];
    while out.iter().any(|x| x.is_none()) {
        for (i, r) in reqs.iter_mut().enumerate() {
            if out[i].is_none() {
                out[i] = ok("test", r.test());
            }
        }
    }
    let dt = t.elapsed();
    drop(reqs);
    let s: Vec<Comm> = out.into_iter().map(|x| x.unwrap()).collect();
    if s[0].size() != n - 1 || s[1].size() != n - 1 {
        fail("sizes".into());
    }
    // Isolation: a message on s[0] is not received on s[1].
    for x in &s {
        ok("barrier", x.barrier());
    }
    if s[0].rank() == 0 {
        ok("send", s[0].send(&[1], 1, 4));
        ok("send", s[1].send(&[2], 1, 4));
    } else if s[0].rank() == 1 {
        ok("recv", s[1].recv(&mut b[..1], 0, 4));
        if b[0] != 2 {
            fail("cross-talk between concurrently shrunk communicators".into());
        }
        ok("recv", s[0].recv(&mut b[..1], 0, 4));
    }
    println!("ft_suite: rank {me} 3 concurrent ishrinks in {:.2} ms", dt.as_secs_f64() * 1e3);
}

/// A whole virtual node dies during repeated agreements (hierarchical tree).
fn node(w: &Weft, c: &Comm, me: u32, n: u32) {
    let _ = n;
    // `FT_KILL_NODE=NODE@MS`: rank 0 has the launcher kill that node MS ms after init, so the
    // kill lands during the agreements however long init took on a loaded machine.
    if let (0, Ok(spec)) = (me, std::env::var("FT_KILL_NODE")) {
        kill_node_later(&spec);
    }
    let t = Instant::now();
    loop {
        match c.agree(1) {
            Ok(_) => {}
            Err(e) if e.is_proc_failed() => break,
            Err(e) => fail(format!("agree: {e}")),
        }
        if t.elapsed() > Duration::from_secs(20) {
            fail("node kill never seen".into());
        }
    }
    let mut s = ok("shrink", c.shrink());
    ok("uniform", s.set_uniform(true));
    while let Err(e) = s.barrier() {
        if std::env::var_os("FT_DEBUG").is_some() {
            eprintln!("rank {me}: barrier on size {} failed: {e}", s.size());
        }
        ok("ack", s.ack_failed());
        s = ok("reshrink", s.shrink());
        ok("uniform", s.set_uniform(true));
    }
    let _ = w;
    println!("ft_suite: rank {me} after node kill: {} survivors", s.size());
}

/// SIGSTOP: the heartbeat detector declares the frozen rank; after SIGCONT its messages are
/// ignored.
fn freeze(w: &Weft, c: &Comm, me: u32, n: u32) {
    let victim = n - 1;
    let mut b = [0u8; 16];
    if me == victim {
        ok("send pid", c.send(&(std::process::id() as u64).to_le_bytes(), 0, 1));
        // After being resumed: try to disturb the survivors, then leave.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1500) {
            w.progress();
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = c.revoke();
        let _ = c.send(&[0xee; 16], 0, 9);
        spin(w, Duration::from_millis(300));
        std::process::exit(0);
    }
    let mut pid = 0u64;
    if me == 0 {
        ok("recv pid", c.recv(&mut b[..8], victim as i32, 1));
        pid = u64::from_le_bytes(b[..8].try_into().unwrap());
        let t0 = wall_us();
        // SAFETY: kill(2) of a peer's pid.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        ok("bcast t0", (1..victim).try_for_each(|r| c.send(&t0.to_le_bytes(), r, 2)));
    }
    let t0 = if me == 0 {
        wall_us()
    } else {
        ok("recv t0", c.recv(&mut b[..16], 0, 2));
        u128::from_le_bytes(b[..16].try_into().unwrap())
    };
    wait_known(w, victim);
    let lat = (wall_us().saturating_sub(t0)) as f64 / 1e3;
    println!("ft_suite: rank {me} frozen rank declared after {lat:.1} ms");
    ok("barrier", ok("shrink", c.shrink()).barrier());
    if me == 0 {
        // SAFETY: kill(2) of a peer's pid.
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    }
    // Its late messages must change nothing.
    spin(w, Duration::from_millis(2500));
    if ok("is_revoked", c.is_revoked()) {
        fail("a revoke from the declared-failed rank was obeyed".into());
    }
    if me == 0 {
        if let Ok(Some(_)) = c.iprobe(victim as i32, 9) {
            println!("ft_suite: rank 0 NOTE data from the declared-failed rank reached the matching queue");
        }
    }
    println!("ft_suite: rank {me} dropped {} FT messages from failed ranks", w.ft_stats().from_failed);
}

/// Uniform mode: a barrier with a dead member fails at every member alike.
fn uniform(w: &Weft, c: &Comm, me: u32, n: u32) {
    ok("uniform", c.set_uniform(true));
    ok("barrier", c.barrier());
    if me == n - 1 {
        die();
    }
    wait_known(w, n - 1);
    let r = c.barrier();
    if !is_pf(&r) {
        fail(format!("uniform barrier: {r:?}"));
    }
    ok("ack", c.ack_failed());
    let s = ok("shrink", c.shrink());
    ok("uniform", s.set_uniform(true));
    ok("barrier", s.barrier());
}

/// The last member standing: every rank but 0 dies; rank 0's agreements, non-blocking
/// agreements and shrinks are decided alone (without an agreement instance: counted in
/// `decided_alone`), with ULFM's outcomes: `ProcFailed` until the failures are
/// acknowledged, then the member's own flag; shrinks give one-member communicators that agree
/// and shrink again.
fn last(w: &Weft, c: &Comm, me: u32, n: u32) {
    if me != 0 {
        die();
    }
    for v in 1..n {
        wait_known(w, v);
    }
    let st0 = w.ft_stats();
    let r = c.agree(0b1011);
    if !is_pf(&r) {
        fail(format!("agree alone with unacknowledged failures: {r:?}"));
    }
    let mut flag = 0b0110u64;
    let r = w.scope(|sc| ok("iagree", c.iagree(sc, &mut flag)).wait());
    if !is_pf(&r) || flag != 0b0110 {
        fail(format!("iagree alone with unacknowledged failures: {r:?}, flag {flag:#b}"));
    }
    let acked = ok("ack", c.ack_failed());
    if acked != n as usize - 1 {
        fail(format!("{acked} failures acknowledged, expected {}", n - 1));
    }
    if ok("agree after ack", c.agree(0b1011)) != 0b1011 {
        fail("agree alone: not this member's flag".into());
    }
    let mut flag = 0b0110u64;
    ok("iagree after ack", w.scope(|sc| ok("iagree", c.iagree(sc, &mut flag)).wait()));
    if flag != 0b0110 {
        fail(format!("iagree alone: flag {flag:#b}"));
    }
    let s = ok("shrink", c.shrink());
    let s2 = ok("ishrink", ok("ishrink", c.ishrink()).wait());
    for (what, x) in [("shrink", &s), ("ishrink", &s2)] {
        if x.size() != 1 || x.rank() != 0 {
            fail(format!("{what} alone: size {} rank {}", x.size(), x.rank()));
        }
        if ok("agree on the shrunk", x.agree(0b11)) != 0b11 {
            fail(format!("agree on the {what} communicator"));
        }
        let y = ok("shrink of the shrunk", x.shrink());
        if y.size() != 1 || ok("agree", y.agree(1)) != 1 {
            fail(format!("shrink of the {what} communicator: size {}", y.size()));
        }
    }
    let st = w.ft_stats();
    // On the world 4 agreements and 2 shrinks; on each shrunk communicator an agreement and a
    // shrink, and an agreement on that one.
    let (decided, alone) = (st.decided - st0.decided, st.decided_alone - st0.decided_alone);
    if decided != 12 || alone != 12 || st.decided_fast != st0.decided_fast {
        fail(format!("{decided} decisions, {alone} alone, expected 12 alone: {st:?}"));
    }
}

/// Ask `weft-run` (through a control connection of its own, independent of the engine) to
/// SIGKILL every rank of a node after a delay; `spec` is `NODE@MS`.
fn kill_node_later(spec: &str) {
    let (node, ms) = spec.split_once('@').unwrap_or_else(|| fail(format!("bad FT_KILL_NODE {spec}")));
    let node: u32 = node.parse().unwrap_or_else(|_| fail(format!("bad node in {spec}")));
    let ms: u64 = ms.parse().unwrap_or_else(|_| fail(format!("bad delay in {spec}")));
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        let mut ctl = weft_pmix::launcher::LauncherControl::connect()
            .unwrap_or_else(|e| fail(format!("launcher control: {e}")));
        ctl.kill_node(node).unwrap_or_else(|e| fail(format!("kill_node: {e}")));
    });
}

/// The blocking agreement's data path (at most 4 members, none known failed) against the
/// control path, at every rank count 2..=4 of `c` (sub-communicators of the first k ranks):
/// failure-free agreements on the data path with per-rank flags; a member that revoked
/// runs the control path while the others start on the data path and convert; agreements on
/// the revoked communicator (control path, stale data-path messages left behind); then
/// again on the data path on its shrunk copy. Every result is the AND of the flags.
fn data_path(w: &Weft, c: &Comm, me: u32, n: u32) {
    for k in 2..=n.min(4) {
        let Some(sub) = ok("split", c.split(if me < k { 0 } else { weft::UNDEFINED }, me as i32)) else {
            continue;
        };
        let flag = |i: u64, r: u32| !(1u64 << ((i + r as u64) % 64));
        // `count` agreements on `comm`, each checked; how many decided on the data path.
        let agree_all = |comm: &Comm, count: u64, what: &str| -> u64 {
            let data0 = w.ft_stats().decided_data;
            for i in 0..count {
                let want = (0..k).fold(u64::MAX, |a, r| a & flag(i, r));
                let f = ok(what, comm.agree(flag(i, me)));
                if f != want {
                    fail(format!("k={k}: {what} {i}: {f:#x}, want {want:#x}"));
                }
            }
            w.ft_stats().decided_data - data0
        };
        let on_data = agree_all(&sub, 100, "agree");
        if on_data != 100 {
            fail(format!("k={k}: {on_data} of 100 agreements on the data path"));
        }
        // Rank 0 revokes and agrees at once (control path: its communicator is revoked);
        // the others start before they handle the revoke (data path) and must convert.
        // The barrier on `sub` after the one on `d`: rank 0 may leave a barrier before the
        // others have (a dissemination barrier's last messages are still in flight), and a
        // revoke reaching a rank still inside `d`'s barrier rightly ends it with REVOKED.
        // Everyone has left `d`'s barrier once `sub`'s returns at rank 0.
        let d = ok("dup", sub.dup());
        ok("barrier", d.barrier());
        ok("barrier", sub.barrier());
        if me == 0 {
            ok("revoke", d.revoke());
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
        if agree_all(&d, 20, "agree on revoked") != 0 {
            fail(format!("k={k}: an agreement on a revoked communicator decided on the data path"));
        }
        println!(
            "ft_suite: rank {me} k={k} data-path agreements converted so far: {}",
            w.ft_stats().converted_data
        );
        let s = ok("shrink", d.shrink());
        let on_data = agree_all(&s, 50, "agree after the revoke");
        if on_data != 50 {
            fail(format!("k={k}: {on_data} of 50 agreements on the data path after the revoke"));
        }
        ok("barrier", s.barrier());
    }
}
