//! Failure-detection scenario, run by `tests/failure.rs` under `weft-run -n N`:
//! the last rank stamps the time, sends the stamp to every survivor and SIGKILLs itself.
//! Rank 0 is blocked in a receive from it and must get `ProcFailed`; every survivor reports
//! how long after the kill it learned of the failure, then the survivors keep communicating.

use std::time::Duration;

fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid pointer we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn fail(msg: String) -> ! {
    eprintln!("failure_test: FAILED: {msg}");
    std::process::exit(1);
}

fn main() {
    let w = weft::init().unwrap_or_else(|e| fail(format!("init: {e}")));
    let c = w.world();
    let (me, n) = (c.rank(), c.size());
    let victim = n - 1;
    c.barrier().unwrap_or_else(|e| fail(format!("barrier: {e}")));
    if me == victim {
        let t = mono_ns().to_le_bytes();
        for r in 0..victim {
            c.send(&t, r, 99).unwrap_or_else(|e| fail(format!("stamp send: {e}")));
        }
        // SAFETY: raising SIGKILL on ourselves; never returns.
        unsafe { libc::raise(libc::SIGKILL) };
        unreachable!();
    }
    let detected_ns = if me == 0 {
        // Blocked in a receive from the victim: must end with an error, not hang.
        let mut b = [0u8; 8];
        match c.recv(&mut b, victim as i32, 1) {
            Err(e) if e.is_proc_failed() => {
                println!("failure_test: rank 0 blocked recv ended with: {e}")
            }
            other => fail(format!("blocked recv from dead rank returned {other:?}")),
        }
        mono_ns()
    } else {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !w.failed_world_ranks().contains(&victim) {
            w.progress();
            if std::time::Instant::now() > deadline {
                fail(format!("rank {me}: failure of {victim} not detected in 10 s"));
            }
        }
        mono_ns()
    };
    // The stamp was sent before the death: it must still be delivered.
    let mut t = [0u8; 8];
    c.recv(&mut t, victim as i32, 99).unwrap_or_else(|e| fail(format!("rank {me}: stamp lost: {e}")));
    let killed_ns = u64::from_le_bytes(t);
    let ms = detected_ns.saturating_sub(killed_ns) as f64 / 1e6;
    println!("failure_test: rank {me} detected rank {victim} after {ms:.3} ms");
    println!("failure_test: rank {me} sources {:?}", w.failures_by_source());
    assert_eq!(c.get_failed().unwrap(), vec![victim]);
    // Survivors keep working: a ring among ranks 0..victim.
    let s = victim;
    if s > 1 {
        let mut b = [0u8; 4];
        let next = (me + 1) % s;
        let prev = (me + s - 1) % s;
        if me == 0 {
            c.send(&me.to_le_bytes(), next, 3).unwrap_or_else(|e| fail(format!("ring: {e}")));
            c.recv(&mut b, prev as i32, 3).unwrap_or_else(|e| fail(format!("ring: {e}")));
        } else {
            c.recv(&mut b, prev as i32, 3).unwrap_or_else(|e| fail(format!("ring: {e}")));
            c.send(&me.to_le_bytes(), next, 3).unwrap_or_else(|e| fail(format!("ring: {e}")));
        }
        if u32::from_le_bytes(b) != prev {
            fail("survivor ring data".into());
        }
    }
    // Sending to the dead rank is an error, not a hang.
    match c.send(&[1], victim, 0) {
        Err(e) if e.is_proc_failed() => {}
        other => fail(format!("send to dead rank returned {other:?}")),
    }
    println!("failure_test: rank {me} survivors OK");
    w.finalize().unwrap_or_else(|e| fail(format!("finalize: {e}")));
}
