//! Instruction counting of small blocking collectives (not a correctness test; ignored by
//! default). Two engines in two threads over the in-memory transport, yield progress mode.
//! Run one benchmark under callgrind, collecting only inside `icount_loop`:
//!
//! ```sh
//! ICOUNT=allreduce ICOUNT_ITERS=1000 valgrind --tool=callgrind --toggle-collect='*icount_loop*' \
//!     target/release/deps/icount-* --ignored --exact icount
//! ```
//!
//! `ICOUNT_N` sets the number of ranks (default 2). `ICOUNT` is `allreduce` (8 B, f32 sum), `barrier`, `bcast` (8 B, root 0) or `pingpong`
//! (8-byte send + receive on the engine between ranks 0 and 1, the point-to-point reference);
//! Ir / ITERS / N is the cost per call and rank (every thread is collected).

mod common;

use weft_coll::*;
use weft_engine::{CollPort, CommId, Common, Engine};

/// The measured loop: only this function is collected.
#[inline(never)]
fn icount_loop(bench: &str, iters: usize, r: u32, e: &mut Engine, c: &mut Coll, w: CommId) {
    body(bench, iters, r, e, c, w)
}

#[inline(never)]
fn body(bench: &str, iters: usize, r: u32, e: &mut Engine, c: &mut Coll, w: CommId) {
    let s = [1.0f32; 2];
    let mut d = [0.0f32; 2];
    let mut b = [0u8; 8];
    let mut spec = match bench {
        "allreduce" => {
            let mut sp = Spec::new(Kind::Allreduce, DType::F32);
            (sp.send, sp.send_len, sp.recv, sp.recv_len, sp.count) =
                (s.as_ptr() as *const u8, 8, d.as_mut_ptr() as *mut u8, 8, 2);
            sp.op = Some(Op::Sum);
            sp
        }
        "bcast" => {
            let mut sp = Spec::new(Kind::Bcast, DType::U8);
            (sp.recv, sp.recv_len, sp.count) = (b.as_mut_ptr(), 8, 8);
            sp
        }
        _ => Spec::new(Kind::Barrier, DType::U8),
    };
    for _ in 0..iters {
        if bench == "pingpong" && r > 1 {
            continue;
        } else if bench == "pingpong" {
            let peer = 1 - r;
            if r == 0 {
                e.send(w, &b, peer, 1).unwrap();
                e.recv(w, &mut b, peer as i32, 1).unwrap();
            } else {
                e.recv(w, &mut b, peer as i32, 1).unwrap();
                e.send(w, &b, peer, 1).unwrap();
            }
        } else {
            // SAFETY: the buffers outlive the blocking call.
            unsafe { c.run(CollPort::of(e), w, &spec).unwrap() };
        }
    }
    spec.count = std::hint::black_box(spec.count);
    if bench == "allreduce" {
        assert_eq!(d, [e.comm(w).unwrap().size() as f32; 2]);
    }
}

#[test]
#[ignore]
fn icount() {
    let bench = std::env::var("ICOUNT").unwrap_or_else(|_| "allreduce".into());
    let iters: usize = std::env::var("ICOUNT_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let n: u32 = std::env::var("ICOUNT_N").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    common::run(n, &[], move |r, e, c, _| {
        let w = e.world();
        body(&bench, 20, r, e, c, w); // warm-up: schedules built, buffers allocated
        e.barrier(w).unwrap();
        icount_loop(&bench, iters, r, e, c, w);
        e.barrier(w).unwrap();
    });
}
