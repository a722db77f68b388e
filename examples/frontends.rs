//! One scenario through the Rust API; `tests/c/frontends.c` runs the same scenario through
//! the C ABI, and `tests/frontends.rs` checks that both print the same lines. Both front ends
//! call the same operations core, so any difference is a bug.
//!
//! Run under `weft-run -n 4`. Each step prints `frontends: rank R <step> <result>`, where an
//! error is printed as its C code (`weft_error`). Rank 3 SIGKILLs itself after the failure-free
//! steps; the survivors then run the recovery steps.

use weft::capi::error_code;
use weft::coll::Op;
use weft::{Comm, EngineError, Error};

fn code<T>(r: &Result<T, Error>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => error_code(e) as i32,
    }
}

fn say(me: u32, what: &str) {
    println!("frontends: rank {me} {what}");
}

fn main() -> Result<(), Error> {
    let w = weft::init()?;
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    assert_eq!(n, 4, "run with weft-run -n 4");
    say(me, &format!("size {n}"));

    // Ring of 8-byte values.
    let next = (me + 1) % n;
    let prev = ((me + n - 1) % n) as i32;
    world.send(&u64::from(me * 10).to_le_bytes(), next, 5)?;
    let mut b = [0u8; 8];
    world.recv(&mut b, prev, 5)?;
    say(me, &format!("ring {}", u64::from_le_bytes(b)));

    // Bad input: a destination outside the communicator, a truncated receive.
    say(me, &format!("bad-dest {}", code(&world.send(&b, n, 0))));
    if me == 0 {
        world.send(&[1u8; 8], 1, 7)?;
    } else if me == 1 {
        let mut small = [0u8; 4];
        let r = world.recv(&mut small, 0, 7);
        let incoming = match &r {
            Err(Error::Engine(EngineError::Truncated { incoming, .. })) => *incoming,
            _ => 0,
        };
        say(me, &format!("truncate {} {incoming}", code(&r)));
    }

    // Collectives.
    let mut sum = [0i64];
    world.allreduce(&[i64::from(me) + 1], &mut sum, Op::Sum)?;
    say(me, &format!("allreduce {}", sum[0]));
    let mut v = [if me == 2 { 77i32 } else { 0 }];
    world.bcast(&mut v, 2)?;
    say(me, &format!("bcast {}", v[0]));
    say(me, &format!("bad-root {}", code(&world.bcast(&mut v, n))));
    let flag = world.agree(!(1u64 << me) & 0xff)?;
    say(me, &format!("agree {flag:#x}"));
    let half = world.dup()?.split((me % 2) as i32, -(me as i32))?.expect("a color");
    say(me, &format!("split {} {}", half.rank(), half.size()));

    // Failure and recovery.
    world.set_uniform(true)?;
    if me == 3 {
        // SAFETY: plain kill(2) of this very process.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    say(me, &format!("uniform-barrier {}", code(&world.barrier())));
    say(me, &format!("ack {}", world.ack_failed()?));
    say(me, &format!("failed {:?}", world.get_failed()?));
    say(me, &format!("agree-acked {:#x}", world.agree(0xff)?));
    if me == 0 {
        world.revoke()?;
    }
    let mut b = [0u8; 8];
    say(me, &format!("recv-revoked {}", code(&world.recv(&mut b, weft::ANY_SOURCE, 99))));
    let small: Comm = world.shrink()?;
    let mut sum = [0i64];
    small.allreduce(&[i64::from(small.rank()) + 1], &mut sum, Op::Sum)?;
    say(me, &format!("shrunk {} {} {}", small.rank(), small.size(), sum[0]));
    w.finalize()?;
    say(me, "done");
    Ok(())
}
