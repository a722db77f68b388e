//! Global restart used wrongly; each mode prints one line `reinit_misuse: MODE -> RESULT`
//! (the error's Rust variant and message) and exits 0 when the error is the expected one.
//!
//! Modes: `twice` (reinit after a completed reinit), `after_init` (reinit while a `Weft` of
//! `weft::init` exists), `main_error` (the resilient main returns an error that is no
//! rollback), `no_launcher` (run outside weft-run: the error names the runtime).

use std::process::ExitCode;

use weft::Error;

fn report(mode: &str, r: weft::Result<()>, expect: fn(&Error) -> bool) -> ExitCode {
    match r {
        Err(e) if expect(&e) => {
            println!("reinit_misuse: {mode} -> OK {e:?}: {e}");
            ExitCode::SUCCESS
        }
        other => {
            println!("reinit_misuse: {mode} -> FAILED, got {other:?}");
            ExitCode::from(1)
        }
    }
}

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let usage = |e: &Error| matches!(e, Error::Reinit(_));
    match mode.as_str() {
        "twice" => {
            if let Err(e) = weft::reinit(|_, w| w.world().barrier()) {
                println!("reinit_misuse: twice -> FAILED, first call: {e}");
                return ExitCode::from(1);
            }
            report("twice", weft::reinit(|_, _| Ok(())), usage)
        }
        "after_init" => {
            let w = match weft::init() {
                Ok(w) => w,
                Err(e) => {
                    println!("reinit_misuse: after_init -> FAILED, init: {e}");
                    return ExitCode::from(1);
                }
            };
            let code = report("after_init", weft::reinit(|_, _| Ok(())), usage);
            let _ = w.finalize();
            code
        }
        "main_error" => report(
            "main_error",
            weft::reinit(|_, w| {
                w.world().barrier()?;
                Err(Error::Topology("the application's own failure".into()))
            }),
            |e| matches!(e, Error::Topology(m) if m.contains("application")),
        ),
        "no_launcher" => report(
            "no_launcher",
            weft::reinit(|_, _| Ok(())),
            |e| matches!(e, Error::Reinit(m) if m.contains("weft-run") && m.contains("singleton")),
        ),
        _ => {
            println!("reinit_misuse: unknown mode {mode:?}");
            ExitCode::from(2)
        }
    }
}
