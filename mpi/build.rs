//! Gives the MPI library its standard-ABI SONAME, `libmpi_abi.so.1`: a program built against
//! any standard-ABI `mpi.h` (weft's, or MPICH's `mpi_abi.h` through `mpicc_abi`) asks the loader
//! for that name, so the same binary runs on every library that implements the ABI.
//!
//! Cargo names the file `libmpi_abi.so`; this script also puts the link
//! `libmpi_abi.so.1 -> libmpi_abi.so` next to it in `target/<profile>/`, the job `ldconfig`
//! does for an installed library, so that programs linked against the build tree load.

use std::path::PathBuf;

const SONAME: &str = "libmpi_abi.so.1";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return; // -soname is an ELF option.
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{SONAME}");
    if let Some(dir) = profile_dir() {
        let link = dir.join(SONAME);
        if std::fs::symlink_metadata(&link).is_err() {
            if let Err(e) = std::os::unix::fs::symlink("libmpi_abi.so", &link) {
                println!("cargo:warning=could not create {}: {e}", link.display());
            }
        }
    }
}

/// `target/[<triple>/]<profile>`: `OUT_DIR` is `<that>/build/weft-mpi-<hash>/out`.
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let dir = out.ancestors().nth(3)?;
    let build = out.ancestors().nth(2)?;
    (build.file_name()? == "build" && dir.join("deps").is_dir()).then(|| dir.to_path_buf())
}
