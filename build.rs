//! Gives the C library (`libweft.so`, the cdylib) an SONAME, so that C programs record the ABI
//! version they were linked against instead of the bare `libweft.so`.
//!
//! The SONAME follows cargo-c's rule: `libweft.so.MAJOR` from 1.0 on, `libweft.so.0.MINOR`
//! before (in 0.x every minor release may break the ABI). `scripts/install` installs the file
//! as `libweft.so.X.Y.Z` with the `libweft.so.<soversion>` and `libweft.so` links.
//!
//! A program linked against the build tree (`-L target/debug -lweft`, as `tests/capi.rs` and
//! `examples/c/ring.c` do) then asks the loader for `libweft.so.<soversion>`, which cargo does
//! not create. So this script also puts the link `libweft.so.<soversion> -> libweft.so` next to
//! the cdylib in `target/<profile>/` (the one file it writes outside `OUT_DIR`, the job
//! `ldconfig` does for an installed library).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major: u64 = env("CARGO_PKG_VERSION_MAJOR").parse().expect("CARGO_PKG_VERSION_MAJOR");
    let minor: u64 = env("CARGO_PKG_VERSION_MINOR").parse().expect("CARGO_PKG_VERSION_MINOR");
    let soversion = if major > 0 { major.to_string() } else { format!("0.{minor}") };
    let soname = format!("libweft.so.{soversion}");
    if env("CARGO_CFG_TARGET_OS") != "linux" {
        return; // -soname is an ELF (GNU ld / lld) option; other targets keep the plain name.
    }
    // `rustc-link-arg-cdylib` would also reach the cdylibs of dependent packages (cargo keeps
    // that old behaviour of `rustc-cdylib-link-arg`), where it overrode weft-mpi's own SONAME
    // (`libmpi_abi.so.1`). `rustc-link-arg` applies only to this package's linked targets; on
    // its test executables an SONAME has no effect.
    println!("cargo:rustc-link-arg=-Wl,-soname,{soname}");
    if let Some(dir) = profile_dir() {
        let link = dir.join(&soname);
        if std::fs::symlink_metadata(&link).is_err() {
            if let Err(e) = std::os::unix::fs::symlink("libweft.so", &link) {
                println!("cargo:warning=could not create {}: {e}", link.display());
            }
        }
    }
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("cargo sets {key} for build scripts"))
}

/// `target/[<triple>/]<profile>`: `OUT_DIR` is `<that>/build/weft-<hash>/out`. `None` when the
/// layout is not the one expected (then no link is made; installed copies do not need it).
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let dir = out.ancestors().nth(3)?;
    let build = out.ancestors().nth(2)?;
    (build.file_name()? == "build" && dir.join("deps").is_dir()).then(|| dir.to_path_buf())
}
