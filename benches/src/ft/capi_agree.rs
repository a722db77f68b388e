//! The `agree-c` scenario, rank side: `healthy`'s agree / allreduce loop (the same 8-byte
//! word, BAND, the same warm-up, iterations and repetitions) called through weft's C ABI
//! (`weft_comm_agree`, `weft_allreduce`) instead of the Rust API. A process holds either the
//! C state or a Rust instance, so this is a job of its own; the driver runs it in the same
//! rounds as `healthy`, and the report compares the two front ends' agreement latency.

use std::ffi::{c_int, CStr};
use std::io::Write as _;

use weft::capi::{self, weft_comm, weft_datatype::WEFT_UINT64, WEFT_OP_BAND};
use weft_testkit::mono_ns;

use super::{median, scaled, FtCli, FINALIZING, ROW};

/// A failed C call: its name, code and the library's message.
fn check(what: &str, rc: c_int) -> Result<(), String> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: weft_last_error returns a NUL-terminated string valid until the next failing
    // call of this thread; it is copied at once.
    let msg = unsafe { CStr::from_ptr(capi::weft_last_error()) }.to_string_lossy().into_owned();
    Err(format!("{what}: error {rc}: {msg}"))
}

const WORD: u64 = !0;

fn allreduce(c: weft_comm) -> Result<u64, String> {
    let (x, mut o) = (WORD, 0u64);
    // SAFETY: one-element u64 buffers that outlive the blocking call.
    let rc = unsafe {
        capi::weft_allreduce(
            (&x as *const u64).cast(),
            (&mut o as *mut u64).cast(),
            1,
            WEFT_UINT64 as c_int,
            WEFT_OP_BAND,
            c,
        )
    };
    check("weft_allreduce", rc)?;
    Ok(o)
}

fn agree(c: weft_comm) -> Result<u64, String> {
    let mut f = WORD;
    // SAFETY: `f` is valid for reads and writes during the blocking call.
    check("weft_comm_agree", unsafe { capi::weft_comm_agree(c, &mut f) })?;
    Ok(f)
}

/// Element-wise maximum of `v` over the members of `c`.
fn max_all(c: weft_comm, v: &mut [u64]) -> Result<(), String> {
    let send = v.to_vec();
    // SAFETY: both buffers hold `v.len()` u64 and outlive the blocking call.
    let rc = unsafe {
        capi::weft_allreduce(
            send.as_ptr().cast(),
            v.as_mut_ptr().cast(),
            v.len(),
            WEFT_UINT64 as c_int,
            capi::WEFT_OP_MAX,
            c,
        )
    };
    check("weft_allreduce (max)", rc)
}

pub fn run(cli: &FtCli) -> Result<(), String> {
    check("weft_init", capi::weft_init())?;
    let (mut c, mut me, mut n): (weft_comm, c_int, c_int) = (0, 0, 0);
    // SAFETY: valid output pointers.
    unsafe {
        check("weft_comm_world", capi::weft_comm_world(&mut c))?;
        check("weft_comm_rank", capi::weft_comm_rank(c, &mut me))?;
        check("weft_comm_size", capi::weft_comm_size(c, &mut n))?;
    }
    if !cli.no_pin {
        super::scenarios::pin(me as u32);
    }
    let iters = scaled(2000, cli.iters_scale);
    for _ in 0..scaled(200, cli.iters_scale) {
        allreduce(c)?;
        agree(c)?;
    }
    let (mut ar, mut ag, mut ratio) = (vec![], vec![], vec![]);
    for _ in 0..7 {
        check("weft_barrier", capi::weft_barrier(c))?;
        let t = mono_ns();
        for _ in 0..iters {
            allreduce(c)?;
        }
        let d_ar = mono_ns() - t;
        check("weft_barrier", capi::weft_barrier(c))?;
        let t = mono_ns();
        for _ in 0..iters {
            agree(c)?;
        }
        let mut m = [d_ar, mono_ns() - t];
        max_all(c, &mut m)?;
        let us = |d: u64| d as f64 / iters as f64 / 1e3;
        ar.push(us(m[0]));
        ag.push(us(m[1]));
        ratio.push(m[1] as f64 / m[0].max(1) as f64);
    }
    if me == 0 {
        for (metric, samples, unit) in
            [("allreduce_c_us", ar, "us"), ("agree_c_us", ag, "us"), ("agree_c/allreduce_c", ratio, "ratio")]
        {
            println!("{ROW},{metric},{n},weft,{:.3},{unit}", median(samples));
        }
        println!("{FINALIZING}");
        let _ = std::io::stdout().flush();
    }
    check("weft_barrier", capi::weft_barrier(c))?;
    check("weft_finalize", capi::weft_finalize())
}
