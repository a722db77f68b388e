//! Bad-input scenario, run by `tests/errors.rs`: every misuse returns a typed error with a
//! clear message, nothing panics, and the engine stays usable afterwards.
//! With `--expect-config-error`, `init` must fail with a configuration error; with
//! `--expect-init-error TEXT`, with an error whose message contains TEXT.

use weft::{EngineError, Error, ANY_TAG};

fn fail(msg: String) -> ! {
    eprintln!("bad_input: FAILED: {msg}");
    std::process::exit(1);
}

fn expect<T: std::fmt::Debug>(what: &str, r: weft::Result<T>, ok: impl Fn(&EngineError) -> bool) {
    match r {
        Err(Error::Engine(ref e)) if ok(e) => println!("bad_input: {what}: {e}"),
        other => fail(format!("{what}: got {other:?}")),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--expect-config-error") {
        match weft::init() {
            Err(e @ Error::Config { .. }) => {
                println!("bad_input: config error: {e}");
                return;
            }
            Err(e) => fail(format!("expected a config error, got {e}")),
            Ok(_) => fail("expected a config error, init succeeded".into()),
        }
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--expect-init-error") {
        let want = args.get(i + 1).map(String::as_str).unwrap_or("");
        match weft::init() {
            Err(e) if e.to_string().contains(want) => {
                println!("bad_input: init error: {e}");
                return;
            }
            Err(e) => fail(format!("expected an init error containing {want:?}, got {e}")),
            Ok(_) => fail("expected an init error, init succeeded".into()),
        }
    }
    let w = weft::init().unwrap_or_else(|e| fail(format!("init: {e}")));
    let c = w.world();
    let (me, n) = (c.rank(), c.size());
    let peer = (me + 1) % n;
    expect("send to rank n", c.send(b"x", n, 0), |e| matches!(e, EngineError::InvalidRank { .. }));
    expect("negative tag", c.send(b"x", peer, -4), |e| matches!(e, EngineError::InvalidTag(-4)));
    expect("ANY_TAG on send", c.send(b"x", peer, ANY_TAG), |e| matches!(e, EngineError::InvalidTag(_)));
    let mut b = [0u8; 4];
    expect("recv from rank -7", c.recv(&mut b, -7, 0), |e| matches!(e, EngineError::InvalidRank { .. }));
    // Truncation: 64 bytes into a 4-byte buffer.
    c.send(&[7u8; 64], peer, 1).unwrap_or_else(|e| fail(format!("send: {e}")));
    let from = ((me + n - 1) % n) as i32;
    expect("truncated recv", c.recv(&mut b, from, 1), |e| {
        matches!(e, EngineError::Truncated { incoming: 64, capacity: 4, .. })
    });
    // A freed communicator.
    let d = c.dup().unwrap_or_else(|e| fail(format!("dup: {e}")));
    let d2 = d.clone();
    d.free().unwrap_or_else(|e| fail(format!("free: {e}")));
    expect("send on freed comm", d2.send(b"x", peer, 0), |e| matches!(e, EngineError::InvalidComm));
    expect("free twice", d2.clone().free(), |e| matches!(e, EngineError::InvalidComm));
    expect("bad split color", c.split(-5, 0).map(|_| ()), |e| matches!(e, EngineError::InvalidArg(_)));
    // Still usable.
    c.send(&me.to_le_bytes(), peer, 2).unwrap_or_else(|e| fail(format!("send after errors: {e}")));
    c.recv(&mut b, from, 2).unwrap_or_else(|e| fail(format!("recv after errors: {e}")));
    if u32::from_le_bytes(b) != from as u32 {
        fail("data after errors".into());
    }
    c.barrier().unwrap_or_else(|e| fail(format!("barrier: {e}")));
    println!("bad_input: rank {me} OK");
    w.finalize().unwrap_or_else(|e| fail(format!("finalize: {e}")));
}
