//! Which MPI library the ranks load: weft's own `libmpi_abi.so.1`, when it sits next to
//! weft-run, so that `weft-run -n 4 ./prog` runs a standard-ABI MPI program (built with
//! weft-mpicc, or MPICH's mpicc_abi) on weft without further setup.
//!
//! The library is looked up in the directory of the weft-run executable (the build tree's
//! `target/<profile>/`) and in `../lib` beside it (an installed `<prefix>/bin`, `<prefix>/lib`).
//! When found, its directory is put first in the ranks' `LD_LIBRARY_PATH` (before what the
//! user set). `--no-mpi-lib` or `WEFT_RUN_MPI_LIB=0` leaves the environment alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The standard ABI's SONAME: what a program linked against any standard-ABI `mpi.h` loads.
const SONAME: &str = "libmpi_abi.so.1";

/// Environment switch: `0` (or `no`, `off`, `false`) disables the lookup like `--no-mpi-lib`.
pub const ENV_SWITCH: &str = "WEFT_RUN_MPI_LIB";

/// False when the user turned the MPI library lookup off through [`ENV_SWITCH`].
pub fn enabled_by_env() -> bool {
    !matches!(
        std::env::var(ENV_SWITCH).map(|v| v.trim().to_ascii_lowercase()).as_deref(),
        Ok("0" | "no" | "off" | "false")
    )
}

/// The directory holding weft's MPI library for the weft-run executable `exe`, if any.
pub fn library_dir(exe: &Path) -> Option<PathBuf> {
    let bin = exe.parent()?;
    [bin.to_path_buf(), bin.join("../lib")].into_iter().find(|d| d.join(SONAME).exists()).map(|d| {
        // `<prefix>/bin/../lib` reads better as `<prefix>/lib`.
        d.canonicalize().unwrap_or(d)
    })
}

/// `LD_LIBRARY_PATH` for the ranks: `dir` first, then `current` (the launcher's own value).
pub fn library_path(dir: &Path, current: Option<OsString>) -> OsString {
    let mut path = OsString::from(dir);
    if let Some(cur) = current.filter(|c| !c.is_empty()) {
        path.push(":");
        path.push(cur);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_beside_the_executable_or_in_the_prefix_lib() {
        let tmp = std::env::temp_dir().join(format!("weft-run-mpi-lib-{}", std::process::id()));
        let bin = tmp.join("bin");
        let lib = tmp.join("lib");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let exe = bin.join("weft-run");
        assert_eq!(library_dir(&exe), None);
        std::fs::write(lib.join(SONAME), b"").unwrap();
        assert_eq!(library_dir(&exe), Some(lib.canonicalize().unwrap()));
        std::fs::write(bin.join(SONAME), b"").unwrap();
        assert_eq!(library_dir(&exe), Some(bin.canonicalize().unwrap()));
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn prepended_to_the_users_path() {
        let d = Path::new("/opt/weft/lib");
        assert_eq!(library_path(d, None), OsString::from("/opt/weft/lib"));
        assert_eq!(library_path(d, Some("".into())), OsString::from("/opt/weft/lib"));
        assert_eq!(library_path(d, Some("/usr/x:/y".into())), OsString::from("/opt/weft/lib:/usr/x:/y"));
    }
}
