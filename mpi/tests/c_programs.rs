//! C programs through weft's MPI library: a smoke test of a few calls through weft's own
//! headers (built with `scripts/weft-mpicc`), and one standard-ABI source built both with
//! weft-mpicc and with MPICH's `mpicc_abi` (when installed), whose binaries must print the
//! same under `weft-run -n 2` on weft's library. Every job has a hard timeout.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const JOB_SECS: u64 = 60;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// `libmpi_abi.so` of this build, built first: `cargo test` builds the rlib, not necessarily
/// the shared library the C programs load.
fn library() -> PathBuf {
    static LIB: std::sync::Once = std::sync::Once::new();
    LIB.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft-mpi", "--lib"]);
        if common::target_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("cargo build -p weft-mpi").success(), "building libmpi_abi failed");
    });
    common::target_dir().join("libmpi_abi.so")
}

/// Build `mpi/tests/c/<name>.c` with `compiler` (a weft-mpicc-like command); the executable.
fn build(compiler: &[&str], name: &str, tag: &str) -> PathBuf {
    library();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_programs");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(format!("{name}-{tag}"));
    let mut cmd = Command::new(compiler[0]);
    cmd.args(&compiler[1..])
        .arg("-Wall")
        .arg("-Werror")
        .arg(repo().join(format!("mpi/tests/c/{name}.c")))
        .arg("-o")
        .arg(&exe)
        .env("WEFT_PROFILE", common::target_dir().file_name().unwrap());
    let out = common::run_with_timeout(cmd, Duration::from_secs(120));
    assert!(out.status.success(), "{compiler:?} {name}.c: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn weft_mpicc() -> String {
    repo().join("scripts/weft-mpicc").to_string_lossy().into_owned()
}

/// Run under `weft-run -n 2` (which puts weft's libmpi_abi.so.1 first on the library path);
/// the sorted stdout lines.
fn run2(exe: &PathBuf) -> Vec<String> {
    run2_with(exe, &[])
}

/// As [`run2`], with `envs` set for the launcher and its ranks.
fn run2_with(exe: &PathBuf, envs: &[(&str, &str)]) -> Vec<String> {
    run_on(2, &[], exe, envs)
}

/// Run under `weft-run -n <n>` with `launcher` options and `envs`; the job must succeed. The
/// sorted stdout lines.
fn run_on(n: u32, launcher: &[&str], exe: &PathBuf, envs: &[(&str, &str)]) -> Vec<String> {
    common::weft_run();
    let out = common::weft_job_on(n, launcher, exe, &[], envs, JOB_SECS);
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "{} {launcher:?} failed: {stderr}\nstdout:\n{stdout}", exe.display());
    let mut lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// MPI_Comm_spawn under weft-run: 2 parents spawn 2 children, talk to them over the
/// intercommunicator, merge it and reduce over the merged communicator; a spawn beyond
/// `--universe-size` fails with MPI_ERR_SPAWN. Without a launcher (singleton) the spawn fails
/// naming the runtime.
#[test]
fn spawn_exchange_merge_and_reduce() {
    let exe = build(&[&weft_mpicc()], "spawn", "weft");
    let lines = run_on(2, &["--universe-size", "4"], &exe, &[]);
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(
        lines[..4],
        [
            "child 0: merged rank 2 sum 10",
            "child 1: merged rank 3 sum 10",
            "oversized spawn: error in spawning processes: the PMIx server refused to start 4 \
             process(es) of \"./spawn-weft\": OUT-OF-RESOURCE"
                .replace("./spawn-weft", &exe.to_string_lossy())
                .leak(),
            "parent 0: merged rank 0 sum 10",
        ]
    );
    assert_eq!(lines[4], "parent 1: merged rank 1 sum 10");

    let mut alone = Command::new(&exe);
    alone.arg("alone").env("LD_LIBRARY_PATH", common::target_dir());
    for v in ["PMIX_RANK", "PMIX_NAMESPACE", "PMI_FD"] {
        alone.env_remove(v);
    }
    let out = common::run_with_timeout(alone, Duration::from_secs(JOB_SECS));
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "singleton spawn check failed: {stderr}\nstdout:\n{stdout}");
    assert!(
        stdout.contains("alone: error in spawning processes: the singleton runtime cannot start processes"),
        "{stdout}"
    );
}

/// A spawned process dies: both its parents and its sibling see the failure (the launcher's
/// event and the pidfd of the shared-memory connection made at the spawn), and finish.
#[test]
fn a_spawned_process_failure_reaches_parents_and_siblings() {
    let exe = build(&[&weft_mpicc()], "spawn", "weft");
    common::weft_run();
    let out = common::weft_job_on(2, &["--universe-size", "4"], &exe, &["victim"], &[], JOB_SECS);
    let (stdout, stderr) = common::text(&out);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "child 0: saw the child's death",
            "parent 0: saw the child's death",
            "parent 1: saw the child's death"
        ],
        "stderr:\n{stderr}"
    );
    // The dead child is universe rank 3 (after the 2 parents and its sibling); weft-run counts
    // it as the job's only failure.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let failed: Vec<&str> = stderr.lines().filter(|l| l.starts_with("weft-run: rank ")).collect();
    assert_eq!(failed.len(), 1, "{stderr}");
    assert!(
        failed[0].starts_with("weft-run: rank 3 ") && failed[0].ends_with("killed by signal 9 (SIGKILL)"),
        "{stderr}"
    );
}

/// `MPI_Comm_idup` does not complete at the call: rank 0 sends to rank 1 between its idup and
/// its wait, rank 1 receives that message before its own idup (a blocking idup deadlocks,
/// which the job's timeout ends); the duplicates, several pending at once and completed in
/// reverse order, each get their own context.
#[test]
fn comm_idup_completes_after_the_call() {
    let exe = build(&[&weft_mpicc()], "idup", "weft");
    assert_eq!(run2(&exe), ["idup ok rank 0", "idup ok rank 1"]);
    assert_eq!(run_on(3, &[], &exe, &[]), ["idup ok rank 0", "idup ok rank 1", "idup ok rank 2"]);
}

/// weft does not link libfabric: a job on one host never loads it (nor the provider libraries
/// it links, whose constructors cost ≈100 ms each at every process start), and a job across
/// virtual nodes loads it for the network transport and runs.
#[test]
fn libfabric_is_loaded_only_for_the_network_transport() {
    let exe = build(&[&weft_mpicc()], "fabric_loaded", "weft");
    assert_eq!(run2(&exe), ["rank 0 libfabric not loaded", "rank 1 libfabric not loaded"]);
    let across = run_on(2, &["--nodes", "2"], &exe, &[]);
    assert_eq!(across, ["rank 0 libfabric loaded", "rank 1 libfabric loaded"]);
}

#[test]
fn smoke_through_weft_headers() {
    let exe = build(&[&weft_mpicc()], "smoke", "weft");
    assert_eq!(run2(&exe), ["smoke ok rank 0", "smoke ok rank 1"]);
}

/// `WEFT_RUN_MPI_LIB=0` turns weft-run's library-path setting off; the ranks inherit the
/// variable and must take it as the launcher's, not as an unknown configuration key. The
/// weft-mpicc binary finds weft's library through its rpath either way.
#[test]
fn the_launchers_library_switch_is_not_a_rank_setting() {
    let exe = build(&[&weft_mpicc()], "smoke", "weft-nolib");
    assert_eq!(run2_with(&exe, &[("WEFT_RUN_MPI_LIB", "0")]), ["smoke ok rank 0", "smoke ok rank 1"]);
}

#[test]
fn weft_mpicc_and_mpicc_abi_binaries_agree_on_weft() {
    let weft = run2(&build(&[&weft_mpicc()], "ring_sum", "weft"));
    assert_eq!(
        weft,
        ["rank 0 of 2 got 1001 sum 2001 max 1001", "rank 1 of 2 got 1000 sum 2001 max -1"],
        "weft-mpicc build"
    );
    let mpicc_abi = std::env::var("WEFT_MPICC_ABI").unwrap_or_else(|_| "mpicc_abi".into());
    let found = Command::new(&mpicc_abi).arg("-show").output().is_ok_and(|o| o.status.success());
    let mpicc_abi = if found { mpicc_abi } else { "/root/.pyenv/versions/3.11.7/bin/mpicc_abi".into() };
    if !Path::new(&mpicc_abi).exists() && !found {
        println!(
            "skipped: the mpicc_abi half (no MPICH mpicc_abi on PATH or WEFT_MPICC_ABI; pip install mpich)"
        );
        return;
    }
    let exe = build(&[&mpicc_abi], "ring_sum", "mpich");
    assert_eq!(run2(&exe), weft, "the mpicc_abi binary on weft's library");
}

/// Every function both headers declare, and its `PMPI_` twin, is a defined dynamic symbol of
/// `libmpi_abi.so` (a source mention that fooled build.rs's scan would leave one undefined).
#[test]
fn the_library_exports_every_declared_function() {
    let lib = library();
    let Some(symbols) = dynamic_symbols(&lib) else { return };
    let exported: std::collections::HashSet<&str> = symbols.keys().map(String::as_str).collect();
    let mut declared = 0;
    for h in ["mpi.h", "mpi-ext.h"] {
        let text = std::fs::read_to_string(repo().join("mpi/include").join(h)).unwrap();
        for line in text.lines().filter(|l| !l.starts_with("typedef") && l.ends_with(");")) {
            let name = line.split('(').next().unwrap().rsplit([' ', '*']).next().unwrap();
            if name.starts_with("MPI") || name.starts_with("PMPI") {
                declared += 1;
                assert!(
                    exported.contains(name),
                    "{name} (declared in {h}) is not exported by {}",
                    lib.display()
                );
            }
        }
    }
    assert!(declared > 1300, "only {declared} declarations found");
}

/// `name -> (nm type letter, address)` of the defined dynamic symbols of `lib`, or `None`
/// (reported as skipped) without binutils' `nm`.
fn dynamic_symbols(lib: &Path) -> Option<std::collections::HashMap<String, (char, u64)>> {
    let Ok(out) = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output() else {
        println!("skipped: no nm (binutils) to list the symbols of {}", lib.display());
        return None;
    };
    assert!(out.status.success(), "nm {}: {}", lib.display(), String::from_utf8_lossy(&out.stderr));
    let nm = String::from_utf8_lossy(&out.stdout);
    let mut symbols = std::collections::HashMap::new();
    for line in nm.lines() {
        let mut f = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else { continue };
        let addr = u64::from_str_radix(addr, 16).unwrap_or_else(|e| panic!("nm line `{line}`: {e}"));
        symbols.insert(name.to_string(), (kind.chars().next().unwrap(), addr));
    }
    Some(symbols)
}

/// The profiling interface's symbols: every `MPI_`/`MPIX_` function the library exports is a
/// weak symbol (nm `W`) at the address of its strong `PMPI_` twin (nm `T`), and every `PMPI_`
/// function has its `MPI_` alias, so a profiling library's own `MPI_x` takes precedence, also
/// when linked statically.
#[test]
fn every_mpi_export_is_a_weak_alias_of_its_pmpi_function() {
    let Some(symbols) = dynamic_symbols(&library()) else { return };
    let mut pairs = 0;
    for (name, &(kind, addr)) in &symbols {
        if name.starts_with("MPI_") || name.starts_with("MPIX_") {
            assert_eq!(kind, 'W', "{name} is exported as `{kind}`, not as a weak symbol");
            let pname = format!("P{name}");
            let Some(&(pkind, paddr)) = symbols.get(&pname) else { panic!("{name} has no {pname} twin") };
            assert_eq!(pkind, 'T', "{pname} is exported as `{pkind}`, not as a strong function");
            assert_eq!(addr, paddr, "{name} ({addr:#x}) is not at the address of {pname} ({paddr:#x})");
            pairs += 1;
        } else if let Some(name) = name.strip_prefix('P').filter(|n| n.starts_with("MPI")) {
            assert!(symbols.contains_key(name), "P{name} has no weak {name} alias");
        }
    }
    assert!(pairs > 650, "only {pairs} MPI_/PMPI_ pairs exported");
}

/// A profiling wrapper: a program that defines its own `MPI_Send` and `MPI_Recv` (counting
/// calls, then calling `PMPI_`) links against the library, its wrappers are the ones called,
/// and the library's `MPI_Send` is its `PMPI_Send` (one address through `dlsym`).
#[test]
fn a_profiling_wrapper_intercepts_mpi_calls() {
    let exe = build(&[&weft_mpicc()], "pmpi_wrapper", "weft");
    assert_eq!(run2(&exe), ["pmpi_wrapper ok rank 0", "pmpi_wrapper ok rank 1"]);
}

#[test]
fn bad_input_returns_its_class_through_the_handler() {
    let exe = build(&[&weft_mpicc()], "bad_input", "weft");
    common::weft_run();
    let out = common::weft_job(2, &exe, &[], &[("WEFT_MPI_INITIAL_ERRHANDLER", "return")], JOB_SECS);
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "bad_input failed:\n{stdout}\n{stderr}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("bad_input ok")).count(), 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("called before MPI_Init"), "the early call is reported: {stderr}");
}

#[test]
fn errors_are_fatal_by_default_and_say_why() {
    let exe = build(&[&weft_mpicc()], "fatal", "weft");
    common::weft_run();
    let out = common::weft_job(2, &exe, &[], &[], JOB_SECS);
    let (stdout, stderr) = common::text(&out);
    assert!(!out.status.success(), "the job must end with an error:\n{stdout}\n{stderr}");
    assert!(!stdout.contains("not reached"), "{stdout}");
    assert!(stderr.contains("MPI_Send") && stderr.contains("MPI_ERRORS_ARE_FATAL"), "{stderr}");
    assert!(stderr.contains("invalid rank 99"), "{stderr}");
}
