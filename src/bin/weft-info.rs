//! `weft-info`: what this weft build is and how it is configured — the build, the transports
//! and libfabric providers, the machine's topology (hwloc), the runtime backend this
//! environment would select, and every `WEFT_*` key with its current value and default (like
//! `ompi_info` / `ucx_info`).
//!
//! Exit status: 0; 2 when a `WEFT_*` setting is bad or unknown (the message names the key).

use std::process::ExitCode;

fn main() -> ExitCode {
    // A closed pipe (`weft-info | head`) ends the program quietly, as it ends C tools, instead
    // of making println! panic.
    // SAFETY: restoring the default disposition of SIGPIPE at the start of main, before any
    // thread exists, affects only this process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    println!("weft {}", env!("CARGO_PKG_VERSION"));
    println!();
    println!("Build");
    println!("  version: {}", env!("CARGO_PKG_VERSION"));
    println!("  profile: {}", if cfg!(debug_assertions) { "debug" } else { "release" });
    println!("  target:  {}-{}", std::env::consts::ARCH, std::env::consts::OS);
    println!();
    println!("Transports");
    println!("  self    in-process delivery");
    println!(
        "  shm     memfd rings (SPSC per peer pair) + CMA single-copy rendezvous + pidfd death detection"
    );
    println!("  ofi     libfabric FI_EP_RDM, between nodes (providers below)");
    println!();
    println!("libfabric");
    fabric_section();
    println!();

    let cfg = weft::Config::from_env();
    let (cfg, cfg_err) = match cfg {
        Ok(c) => (c, None),
        Err(e) => (weft::Config::default(), Some(e)),
    };

    println!("Topology (hwloc)");
    match weft::Topology::load() {
        Ok(t) => {
            print!("{}", t.summary());
            // Under weft-run, binding follows the rank's slot on the host (as in weft_init).
            let local: u32 = std::env::var(weft_pmix::launcher::ENV_HOST_SLOT)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let policy = cfg.value_of("WEFT_BIND").unwrap_or_default();
            match t.binding_target(cfg.bind, local) {
                Ok(Some(d)) => println!("  WEFT_BIND={policy}: local rank {local} would be bound to {d}"),
                Ok(None) => println!("  WEFT_BIND={policy}: no binding"),
                Err(e) => println!("  WEFT_BIND={policy}: {e}"),
            }
        }
        Err(e) => println!("  unavailable: {e}"),
    }
    println!();

    let (backend, why) = weft_pmix::select(|v| std::env::var_os(v).is_some());
    println!("Runtime");
    println!("  backends built (tried in this order): {}", weft_pmix::BACKENDS.join(", "));
    println!(
        "    pmix       OpenPMIx client: weft-run (hosts an OpenPMIx server), Open MPI mpirun, PRRTE, \
         srun --mpi=pmix (PMIX_RANK, PMIX_NAMESPACE)"
    );
    println!(
        "    pmi2       PMI-2 over PMI_FD: MPICH hydra, srun --mpi=pmi2 (PMI_FD); no termination events"
    );
    println!("    singleton  no launcher: rank 0 of 1");
    match why {
        Some(var) => println!("  a job started here would use: {backend} ({var} is set)"),
        None => println!("  a job started here would use: {backend} (no launcher variable is set)"),
    }
    let shown: &[&str] = match backend {
        "pmix" => &["PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_VERSION"],
        "pmi2" => &["PMI_FD", "PMI_RANK", "PMI_SIZE", "PMI_JOBID"],
        _ => &[],
    };
    for v in shown {
        if let Ok(val) = std::env::var(v) {
            println!("  {v}={val}");
        }
    }
    println!(
        "  server reply timeout: {} s ({})",
        weft_pmix::server_timeout().as_secs(),
        weft_pmix::ENV_TIMEOUT
    );
    println!();

    println!("Configuration (environment)");
    let mut status = ExitCode::SUCCESS;
    if let Some(e) = &cfg_err {
        println!("  ERROR: {e}");
        eprintln!("weft-info: {e}");
        status = ExitCode::from(2);
    }
    println!("  {:<22} {:<10} {:<10} meaning", "key", "value", "default");
    for k in weft::KEYS {
        let v = cfg.value_of(k.name).unwrap_or_default();
        println!("  {:<22} {:<10} {:<10} {}", k.name, v, k.default, k.help);
    }
    status
}

/// The libfabric section: library version and file, the API version asked of it, and the providers weft can use (FI_EP_RDM with
/// FI_TAGGED), one line per provider and capability set with the domains offering it.
fn fabric_section() {
    let (maj, min) = weft_fabric::version();
    println!("  version: {maj}.{min}");
    match weft_fabric::library::path() {
        Some(p) => println!("  loaded from: {}", p.display()),
        None => println!("  loaded from: unknown (the loader does not name the object)"),
    }
    let (amaj, amin) = weft_fabric::library::api_version_pair();
    println!("  API version requested: {amaj}.{amin}");
    let list = match weft_fabric::providers() {
        Ok(l) => l,
        Err(e) => {
            println!("  providers: cannot list ({e})");
            return;
        }
    };
    let usable =
        |p: &weft_fabric::ProviderInfo| p.ep_type == "FI_EP_RDM" && p.caps_names().contains(&"FI_TAGGED");
    // (provider, caps, limits) -> domains, in libfabric's order.
    let mut rows: Vec<(String, String, Vec<String>)> = Vec::new();
    for p in list.iter().filter(|p| usable(p)) {
        let mr = match p.mr_mode_names() {
            v if v.is_empty() => "none".to_string(),
            v => v.join("|"),
        };
        let caps = format!(
            "{} (inject {} B, max msg {} B, mr_mode {mr})",
            p.caps_names().join("|"),
            p.inject_size,
            p.max_msg_size
        );
        match rows.iter_mut().find(|r| r.0 == p.name && r.1 == caps) {
            Some(r) => {
                if !r.2.contains(&p.domain) {
                    r.2.push(p.domain.clone());
                }
            }
            None => rows.push((p.name.clone(), caps, vec![p.domain.clone()])),
        }
    }
    if rows.is_empty() {
        println!("  usable providers (FI_EP_RDM + FI_TAGGED): none");
    } else {
        println!("  usable providers (FI_EP_RDM + FI_TAGGED):");
    }
    for (name, caps, doms) in &rows {
        println!("  {name:<14} domains {:<16} {caps}", doms.join(","));
    }
    let mut others: Vec<&str> = Vec::new();
    for p in list.iter().filter(|p| !usable(p)) {
        if !others.contains(&p.name.as_str()) && !rows.iter().any(|r| r.0 == p.name) {
            others.push(&p.name);
        }
    }
    if !others.is_empty() {
        println!("  other providers (no FI_EP_RDM with FI_TAGGED): {}", others.join(", "));
    }
}
