//! C ABI tests: the checked-in header is what cbindgen generates, and the C programs
//! (`tests/c/*.c`, `examples/c/ring.c`) compile against `include/weft.h` and the `weft`
//! cdylib and pass under `weft-run -n 4` (the collectives also under `-n 3`).
//!
//! Regenerate the header: `WEFT_BLESS=1 cargo test -p weft --test capi header_is_fresh`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use weft_testkit::job::{End, Supervisor};

mod common;

const RANKS: usize = 4;
/// `weft-run --timeout`, seconds.
const JOB_TIMEOUT: u32 = 30;
/// Hard limit in the test itself, in case `weft-run` does not end the job.
const HARD_TIMEOUT: Duration = Duration::from_secs(60);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn generate_header() -> String {
    let cfg = cbindgen::Config::from_file(root().join("cbindgen.toml")).expect("read cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_config(cfg)
        .with_src(root().join("src/capi.rs"))
        .with_src(root().join("src/capi/p2p.rs")) // point to point and request completion
        .with_src(root().join("src/capi/error.rs")) // error codes, weft_error_string, weft_last_error
        .with_src(root().join("src/capi/status.rs")) // weft_status
        .with_src(root().join("src/capi/ft.rs")) // FT section of the C ABI
        .with_src(root().join("src/capi/dgrp.rs")) // DGRP section
        .with_src(root().join("src/capi/coll.rs")) // collectives section
        .with_src(root().join("src/capi/reinit.rs")) // global restart section
        .with_src(expand_c_collectives()) // its `c_collectives!` table, which cbindgen skips
        .generate()
        .expect("cbindgen failed on src/capi.rs")
        .write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

/// The functions that `c_collectives!` in `src/capi/coll.rs` generates, written out as
/// cbindgen reads them (cbindgen does not expand macros): each entry
/// `name / iname (params) => (comm, call);` with its doc comment becomes `name(params)` with
/// that doc and `iname(params, req)` with the doc the macro gives it, read from the macro's
/// `#[doc = ...]` lines. Returns the file's path.
fn expand_c_collectives() -> PathBuf {
    let src = std::fs::read_to_string(root().join("src/capi/coll.rs")).expect("read src/capi/coll.rs");
    // The non-blocking twin's doc lines: string literals, or `concat!` of literals and
    // `stringify!($name)`.
    let rules = src.split("macro_rules! c_collectives {").nth(1).expect("the c_collectives! macro");
    let rules = &rules[..rules.find("\n}\n").expect("the end of the macro")];
    let twin_doc: Vec<&str> = rules
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("#[doc = ")?.strip_suffix(']'))
        .filter(|d| *d != "$doc")
        .collect();
    assert!(twin_doc.len() >= 2, "no doc lines for the non-blocking twin in c_collectives!");
    let doc_line = |expr: &str, name: &str| -> String {
        let expr = expr.strip_prefix("concat!(").and_then(|e| e.strip_suffix(')')).unwrap_or(expr);
        let parts: Vec<&str> = expr
            .split("stringify!($name)")
            .map(|p| p.trim().trim_matches(',').trim().trim_matches('"'))
            .collect();
        format!("///{}\n", parts.join(name))
    };
    let table = src.split("\nc_collectives! {\n").nth(1).expect("a c_collectives! table");
    let table = &table[..table.find("\n}\n").expect("the end of the table")];
    let mut out = String::from("use std::ffi::{c_int, c_void};\n");
    let mut doc = String::new();
    let mut entry = String::new();
    for line in table.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push_str(&format!("///{d}\n"));
            continue;
        }
        if line.is_empty() {
            continue;
        }
        entry.push_str(line);
        entry.push(' ');
        if !line.ends_with(';') {
            continue;
        }
        let (head, _) = entry.split_once("=>").expect("`=>` in a c_collectives! entry");
        let (names, params) = head.split_once('(').expect("parameters");
        let (name, iname) = names.split_once('/').expect("`name / iname`");
        let (name, iname) = (name.trim(), iname.trim());
        let params = params.trim().trim_end_matches(')').trim();
        out.push_str(&format!(
            "{doc}#[no_mangle]\npub unsafe extern \"C\" fn {name}({params}) -> c_int {{ 0 }}\n"
        ));
        out.extend(twin_doc.iter().map(|d| doc_line(d, name)));
        out.push_str(&format!(
            "#[no_mangle]\npub unsafe extern \"C\" fn {iname}({params}, req: *mut weft_request) -> c_int {{ 0 }}\n"
        ));
        doc.clear();
        entry.clear();
    }
    assert!(out.matches("extern \"C\"").count() >= 30, "c_collectives! table not understood:\n{out}");
    let path = out_dir().join("c_collectives_expanded.rs");
    std::fs::write(&path, out).expect("write the expanded table");
    path
}

#[test]
fn header_is_fresh() {
    let path = root().join("include/weft.h");
    let fresh = generate_header();
    if std::env::var_os("WEFT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &fresh).expect("write include/weft.h");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "include/weft.h is stale: run `WEFT_BLESS=1 cargo test -p weft --test capi header_is_fresh` \
         (or `cbindgen --config cbindgen.toml --output include/weft.h src/capi.rs`) to regenerate"
    );
}

fn cargo_build(args: &[&str]) {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root()).arg("build").args(args);
    if common::target_dir().file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("run cargo build");
    assert!(st.success(), "cargo build {args:?} failed");
}

/// `(lib dir, weft-run)`, built once: the cdylib and the launcher are (re)built with cargo so
/// the C programs link the current code (cargo's lock makes this safe while `cargo test` runs).
fn artifacts() -> &'static (PathBuf, PathBuf) {
    static A: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    A.get_or_init(|| {
        cargo_build(&["-p", "weft", "--lib"]);
        cargo_build(&["-p", "weft-pmix", "--bin", "weft-run"]);
        let dir = common::target_dir();
        assert!(dir.join("libweft.so").exists(), "no libweft.so in {}", dir.display());
        let run = dir.join("weft-run");
        assert!(run.exists(), "no weft-run in {}", dir.display());
        (dir, run)
    })
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capi");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compile one C program against the header and the cdylib.
fn compile(src: &str) -> PathBuf {
    artifacts();
    common::compile_c(src)
}

/// Run `exe` under `weft-run -n RANKS`; returns (stdout, stderr) after asserting exit 0.
fn run_job(exe: &Path) -> (String, String) {
    run_job_n(exe, RANKS)
}

/// Run `exe` under `weft-run -n ranks`; returns (stdout, stderr) after asserting exit 0.
fn run_job_n(exe: &Path, ranks: usize) -> (String, String) {
    // One job at a time: 4 ranks each already outnumber the cores.
    static JOBS: Mutex<()> = Mutex::new(());
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let (_, weft_run) = artifacts();
    let name = exe.file_name().unwrap().to_str().unwrap();
    let mut cmd = Command::new(weft_run);
    cmd.args(["-n", &ranks.to_string(), "--timeout", &JOB_TIMEOUT.to_string()])
        .arg(exe)
        .env("WEFT_PROGRESS", "yield");
    // A supervised job: weft-run's process group is killed at the hard timeout.
    let done = Supervisor::new(HARD_TIMEOUT).run(cmd).expect("spawn weft-run");
    let (out, err) = (done.stdout, done.stderr);
    match done.end {
        End::TimedOut(_) => {
            panic!("{name}: hard timeout after {HARD_TIMEOUT:?}\nstdout:\n{out}\nstderr:\n{err}")
        }
        End::Exited(st) => {
            assert!(st.success(), "{name}: weft-run exited with {st}\nstdout:\n{out}\nstderr:\n{err}")
        }
    }
    (out, err)
}

/// Every rank printed `{prefix} rank R ...` exactly once for R in 0..RANKS.
fn assert_every_rank(out: &str, prefix: &str, suffix: &str) {
    assert_every_rank_n(out, prefix, suffix, RANKS)
}

/// Every rank printed `{prefix} rank R ...` exactly once for R in 0..ranks.
fn assert_every_rank_n(out: &str, prefix: &str, suffix: &str, ranks: usize) {
    for r in 0..ranks {
        let head = format!("{prefix} rank {r} ");
        let n = out.lines().filter(|l| l.starts_with(&head) && l.contains(suffix)).count();
        assert_eq!(n, 1, "expected one `{head}...{suffix}` line, got {n}; stdout:\n{out}");
    }
}

#[test]
fn c_example_ring() {
    let exe = compile("examples/c/ring.c");
    let (out, _) = run_job(&exe);
    assert_every_rank(&out, "ring:", "ok: 12 sizes up to 1048576 bytes");
    assert!(out.contains("ring: rank 0 of 4 ok: 12 sizes up to 1048576 bytes, token 4"), "stdout:\n{out}");
    assert!(
        out.contains("wildcard: rank 0 received from all 3 peers with WEFT_ANY_SOURCE/WEFT_ANY_TAG"),
        "stdout:\n{out}"
    );
}

#[test]
fn c_p2p() {
    let exe = compile("tests/c/p2p.c");
    let (out, _) = run_job(&exe);
    assert_every_rank(&out, "p2p:", "ok");
}

#[test]
fn c_errors() {
    let exe = compile("tests/c/errors.c");
    let (out, err) = run_job(&exe);
    assert_every_rank(&out, "errors:", "ok");
    assert!(!err.contains("errors: rank"), "stderr:\n{err}");
}

#[test]
fn c_dgrp() {
    let exe = compile("tests/c/dgrp.c");
    let (out, err) = run_job(&exe);
    assert_every_rank(&out, "dgrp:", "ok");
    assert!(!err.contains("dgrp: rank"), "stderr:\n{err}");
    // Every rank returned the same view from each round barrier.
    for k in 0..6 {
        let views: Vec<&str> = out
            .lines()
            .filter(|l| l.contains(&format!(" round {k} view ")))
            .map(|l| l.rsplit(" view ").next().unwrap())
            .collect();
        assert_eq!(views.len(), RANKS, "round {k}: stdout:\n{out}");
        assert!(views.iter().all(|v| *v == views[0]), "round {k}: views differ: stdout:\n{out}");
    }
}

/// Every collective through the C ABI, results checked against values computed in C.
fn c_coll_n(ranks: usize) {
    // Both sizes run the same program: compile it once (the tests run in parallel).
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| compile("tests/c/coll.c"));
    let (out, err) = run_job_n(exe, ranks);
    assert_every_rank_n(&out, "coll:", &format!("of {ranks} ok"), ranks);
    assert!(!err.contains("coll: rank"), "stderr:\n{err}");
}

#[test]
fn c_coll() {
    c_coll_n(RANKS);
}

/// A size that is not a power of two (recursive doubling, Rabenseifner and Bruck fold ranks).
#[test]
fn c_coll_3() {
    c_coll_n(3);
}

#[test]
fn header_compiles_as_cpp() {
    let Ok(cxx) = which("c++") else { return };
    let src = out_dir().join("cpp_check.cpp");
    std::fs::write(
        &src,
        "#include \"weft.h\"\nint main() { weft_status s{}; (void)s; return WEFT_SUCCESS; }\n",
    )
    .unwrap();
    let out = Command::new(cxx)
        .args(["-fsyntax-only", "-Wall", "-Werror", "-I"])
        .arg(root().join("include"))
        .arg(&src)
        .output()
        .expect("run c++");
    assert!(
        out.status.success(),
        "include/weft.h does not compile as C++:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn which(prog: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path).map(|d| d.join(prog)).find(|p| p.exists()).ok_or(())
}
