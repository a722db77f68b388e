//! `weft-info`: what this weft build is and how it is configured — the build, the transports
//! compiled in, the runtime backend this environment would select, the machine's cores, and
//! every `WEFT_*` key with its current value and default (like `ompi_info` / `ucx_info`).

use std::process::ExitCode;

fn main() -> ExitCode {
    println!(
        "weft {} ({} build)",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    println!();
    println!("Transports");
    println!("  self    in-process delivery");
    println!(
        "  shm     memfd rings (SPSC per peer pair) + CMA single-copy rendezvous + pidfd death detection"
    );
    println!("  ofi     not in this build (libfabric transport not implemented yet)");
    println!();
    let backend = if std::env::var_os("WEFT_RUN_SOCK").is_some() {
        "weft-run"
    } else if std::env::var_os("PMIX_NAMESPACE").is_some() || std::env::var_os("PMIX_RANK").is_some() {
        "pmix"
    } else {
        "singleton"
    };
    println!("Runtime");
    println!("  backend selected here: {backend}");
    println!("  backends built: weft-run (embedded launcher), pmix (OpenPMIx client), singleton");
    println!();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("Topology");
    println!("  cores available: {cores}");
    println!();
    println!("Configuration (environment)");
    let cfg = weft::Config::from_env();
    let mut status = ExitCode::SUCCESS;
    let cfg = match cfg {
        Ok(c) => c,
        Err(e) => {
            println!("  ERROR: {e}");
            status = ExitCode::from(2);
            weft::Config::default()
        }
    };
    println!("  {:<22} {:<10} {:<10} meaning", "key", "value", "default");
    for k in weft::KEYS {
        let v = cfg.value_of(k.name).unwrap_or_default();
        println!("  {:<22} {:<10} {:<10} {}", k.name, v, k.default, k.help);
    }
    status
}
