//! The installed C library, used the way README "Using weft from C" says: `scripts/install
//! --prefix DIR` into a temporary prefix, the README's `hello.c` compiled with
//! `cc hello.c $(pkg-config --cflags --libs weft) -Wl,-rpath,$(pkg-config --variable=libdir weft)`
//! against that prefix only, and run under the installed `weft-run -n 4`.
//!
//! It installs this profile's artifacts (`scripts/install --profile debug` under
//! `cargo test`), building the library and `weft-run` first as `tests/capi.rs` does, so it
//! does not need the release build of `scripts/setup`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const RANKS: usize = 4;
/// `weft-run --timeout`, seconds; the test-side deadline is a little longer.
const JOB_TIMEOUT: u64 = 30;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cargo_build(args: &[&str], profile: &str) {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root()).arg("build").args(args);
    if profile == "release" {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("run cargo build");
    assert!(st.success(), "cargo build {args:?} failed");
}

/// The C program of README "Using weft from C" (its one ```c block).
fn readme_hello() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("read README.md");
    let section =
        readme.split("\n## Using weft from C\n").nth(1).expect("README has no `## Using weft from C`");
    let section = section.split("\n## ").next().unwrap();
    let code = section.split("\n```c\n").nth(1).expect("no ```c block in README \"Using weft from C\"");
    code.split("\n```").next().unwrap().to_string() + "\n"
}

/// Run `cmd` with a hard deadline; its stdout, after asserting it succeeded.
/// `cargo test` puts `target/<profile>` on `LD_LIBRARY_PATH`, which the loader searches before
/// the program's rpath: the commands here must not see it, or they would run the build tree's
/// library instead of the installed one.
fn ok(mut cmd: Command, limit: Duration) -> String {
    cmd.env_remove("LD_LIBRARY_PATH");
    let what = format!("{cmd:?}");
    let out = common::run_with_timeout(cmd, limit);
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    stdout
}

/// `sh -c script` with `vars` set, through [`ok`].
fn sh(script: &str, vars: &[(&str, &Path)]) -> String {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).envs(vars.iter().copied());
    ok(cmd, Duration::from_secs(300))
}

#[test]
fn c_program_from_installed_prefix() {
    let profile_dir = common::target_dir();
    let profile = profile_dir.file_name().unwrap().to_str().unwrap().to_string();
    let target = profile_dir.parent().unwrap();
    // The library and launcher of the current code (no-ops when `cargo test` built them).
    cargo_build(&["-p", "weft", "--lib"], &profile);
    cargo_build(&["-p", "weft-pmix", "--bin", "weft-run"], &profile);
    cargo_build(&["-p", "weft-mpi", "--lib"], &profile);

    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("install");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let prefix = work.join("prefix");
    let mut install = Command::new(root().join("scripts/install"));
    install
        .args(["--no-build", "--profile", &profile, "--target-dir"])
        .arg(target)
        .arg("--prefix")
        .arg(&prefix);
    ok(install, Duration::from_secs(300));

    let soversion = format!("0.{}", env!("CARGO_PKG_VERSION_MINOR"));
    let version = env!("CARGO_PKG_VERSION");
    for f in [
        format!("lib/libweft.so.{version}"),
        format!("lib/libweft.so.{soversion}"),
        "lib/libweft.so".into(),
        "lib/libweft.a".into(),
        "lib/pkgconfig/weft.pc".into(),
        "include/weft.h".into(),
        "bin/weft-run".into(),
        "lib/libmpi_abi.so.1".into(),
        "lib/libmpi_abi.so".into(),
        "include/mpi.h".into(),
        "include/mpi-ext.h".into(),
        "bin/weft-mpicc".into(),
    ] {
        assert!(prefix.join(&f).exists(), "{f} not installed under {}", prefix.display());
    }

    // pkg-config sees only this prefix (PKG_CONFIG_LIBDIR replaces the system search path).
    let pc = prefix.join("lib/pkgconfig");
    let env = [("PKG_CONFIG_PATH", pc.as_path()), ("PKG_CONFIG_LIBDIR", pc.as_path())];
    let modversion = sh("pkg-config --modversion weft", &env);
    assert_eq!(modversion.trim(), version, "pkg-config --modversion weft");

    let src = work.join("hello.c");
    std::fs::write(&src, readme_hello()).unwrap();
    let exe = work.join("hello");
    let vars = [env[0], env[1], ("SRC", src.as_path()), ("EXE", exe.as_path())];
    // The README's command line, plus warnings as errors.
    sh(
        r#"${CC:-cc} -Wall -Wextra -Werror "$SRC" -o "$EXE" $(pkg-config --cflags --libs weft) \
             -Wl,-rpath,$(pkg-config --variable=libdir weft)"#,
        &vars,
    );
    // It runs the installed library, found through its SONAME.
    let ldd = sh(r#"ldd "$EXE""#, &vars);
    let line =
        ldd.lines().find(|l| l.contains("libweft")).unwrap_or_else(|| panic!("no libweft in ldd:\n{ldd}"));
    let want = format!("libweft.so.{soversion} => {}/", prefix.join("lib").display());
    assert!(line.trim_start().starts_with(&want), "ldd: `{line}`, expected `{want}...`");

    // Static linking: libweft.a plus what Libs.private names.
    let static_exe = work.join("hello-static");
    let svars = [env[0], env[1], ("SRC", src.as_path()), ("EXE", static_exe.as_path())];
    sh(
        r#"${CC:-cc} -Wall "$SRC" -o "$EXE" $(pkg-config --cflags weft) \
             "$(pkg-config --variable=libdir weft)/libweft.a" $(pkg-config --static --libs-only-l weft | sed 's/-lweft //')"#,
        &svars,
    );
    let ldd = sh(r#"ldd "$EXE""#, &svars);
    assert!(!ldd.contains("libweft"), "the static build needs a shared libweft:\n{ldd}");

    for exe in [&exe, &static_exe] {
        let mut cmd = Command::new(prefix.join("bin/weft-run"));
        cmd.args(["-n", &RANKS.to_string(), "--timeout", &JOB_TIMEOUT.to_string()]).arg(exe);
        cmd.env("WEFT_PROGRESS", "yield");
        let stdout = ok(cmd, Duration::from_secs(JOB_TIMEOUT + 15));
        for r in 0..RANKS {
            let line = format!("hello from rank {r} of {RANKS}");
            assert_eq!(
                stdout.lines().filter(|l| *l == line).count(),
                1,
                "expected `{line}` once; stdout:\n{stdout}"
            );
        }
    }

    mpi_program_from_installed_prefix(&prefix, &work);
}

/// An MPI program built with the installed weft-mpicc loads the installed libmpi_abi.so.1 and
/// runs under the installed weft-run.
fn mpi_program_from_installed_prefix(prefix: &Path, work: &Path) {
    let src = work.join("mpi_hello.c");
    std::fs::write(
        &src,
        r#"#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("mpi rank %d of %d sum %d ft %d\n", rank, size, sum, MPIX_ERR_REVOKED);
    return MPI_Finalize();
}
"#,
    )
    .unwrap();
    let exe = work.join("mpi_hello");
    let mpicc = prefix.join("bin/weft-mpicc");
    let vars = [("MPICC", mpicc.as_path()), ("SRC", src.as_path()), ("EXE", exe.as_path())];
    sh(r#""$MPICC" -Wall -Wextra -Werror "$SRC" -o "$EXE""#, &vars);
    let ldd = sh(r#"ldd "$EXE""#, &vars);
    let line = ldd.lines().find(|l| l.contains("libmpi_abi")).unwrap_or_else(|| panic!("ldd:\n{ldd}"));
    let want = format!("libmpi_abi.so.1 => {}/", prefix.join("lib").display());
    assert!(line.trim_start().starts_with(&want), "ldd: `{line}`, expected `{want}...`");

    let mut cmd = Command::new(prefix.join("bin/weft-run"));
    cmd.args(["-n", &RANKS.to_string(), "--timeout", &JOB_TIMEOUT.to_string()]).arg(&exe);
    cmd.env("WEFT_PROGRESS", "yield");
    let stdout = ok(cmd, Duration::from_secs(JOB_TIMEOUT + 15));
    let sum: usize = (0..RANKS).sum();
    for r in 0..RANKS {
        let line = format!("mpi rank {r} of {RANKS} sum {sum} ft 103");
        assert_eq!(
            stdout.lines().filter(|l| *l == line).count(),
            1,
            "expected `{line}` once; stdout:\n{stdout}"
        );
    }
}
