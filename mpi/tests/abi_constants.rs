//! weft's `mpi.h` against the standard ABI: a C program that prints every constant of the
//! standard's table (`abi::ALL`, generated with `mpi/src/abi.rs`) and the layout of
//! `MPI_Status` and of the ABI's scalar and handle types must print, compiled against
//! `mpi/include/mpi.h`, exactly what the Rust side of the library holds; and, compiled against
//! MPICH's standard-ABI header `mpi_abi.h` where it is installed, the same.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mpi_abi::abi::{self, MPI_Status};

/// The C program: one `NAME VALUE` line per constant, then the layout lines.
fn program() -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include WEFT_MPI_HEADER\n\
         #define P(name) printf(\"%s %lld\\n\", #name, (long long)(intptr_t)(name))\n\
         #define S(what, v) printf(\"%s %lld\\n\", what, (long long)(v))\n\
         int main(void) {\n",
    );
    for (name, _) in abi::ALL {
        writeln!(c, "    P({name});").unwrap();
    }
    for line in layout() {
        let (what, _) = line.split_once(' ').unwrap();
        let expr = match what.split_once(':') {
            Some(("sizeof", ty)) => format!("sizeof({ty})"),
            Some(("offsetof", field)) => format!("offsetof(MPI_Status, {field})"),
            _ => unreachable!("{what}"),
        };
        writeln!(c, "    S(\"{what}\", {expr});").unwrap();
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// `sizeof:T N` / `offsetof:F N` lines, with the sizes the Rust side uses.
fn layout() -> Vec<String> {
    let mut v = vec![
        format!("sizeof:MPI_Status {}", std::mem::size_of::<MPI_Status>()),
        format!("offsetof:MPI_SOURCE {}", std::mem::offset_of!(MPI_Status, MPI_SOURCE)),
        format!("offsetof:MPI_TAG {}", std::mem::offset_of!(MPI_Status, MPI_TAG)),
        format!("offsetof:MPI_ERROR {}", std::mem::offset_of!(MPI_Status, MPI_ERROR)),
        format!("offsetof:MPI_internal {}", std::mem::offset_of!(MPI_Status, MPI_internal)),
        format!("sizeof:MPI_Aint {}", std::mem::size_of::<abi::MPI_Aint>()),
        format!("sizeof:MPI_Offset {}", std::mem::size_of::<abi::MPI_Offset>()),
        format!("sizeof:MPI_Count {}", std::mem::size_of::<abi::MPI_Count>()),
    ];
    macro_rules! handle_sizes {
        ($($t:ident)*) => { $(v.push(format!("sizeof:{} {}", stringify!($t), std::mem::size_of::<abi::$t>()));)* };
    }
    handle_sizes!(MPI_Comm MPI_Datatype MPI_Errhandler MPI_File MPI_Group MPI_Info MPI_Message MPI_Op MPI_Request MPI_Session MPI_Win);
    v
}

fn expected() -> String {
    let mut s = String::new();
    for (name, value) in abi::ALL {
        writeln!(s, "{name} {value}").unwrap();
    }
    for line in layout() {
        writeln!(s, "{line}").unwrap();
    }
    s
}

/// Compile the program with `-I include -DWEFT_MPI_HEADER=header` and run it; its stdout.
fn print_with(include: &Path, header: &str, tag: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi_constants");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{tag}.c"));
    let exe = dir.join(tag);
    std::fs::write(&src, program()).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(cc);
    cmd.arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(include)
        .arg(format!("-DWEFT_MPI_HEADER=<{header}>"))
        .arg(&src)
        .arg("-o")
        .arg(&exe);
    let out = common::run_with_timeout(cmd, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "compiling against {}: {}",
        include.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::run_with_timeout(Command::new(&exe), Duration::from_secs(30));
    assert!(out.status.success(), "{} failed", exe.display());
    String::from_utf8(out.stdout).unwrap()
}

fn weft_include() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// The directory of MPICH's `mpi_abi.h`: `WEFT_MPICH_ABI_INCLUDE`, else `mpicc_abi -show`'s
/// include directory, else the pip wheel's; `Err` says why there is none.
pub fn mpich_abi_include() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("WEFT_MPICH_ABI_INCLUDE") {
        let d = PathBuf::from(d);
        return if d.join("mpi_abi.h").exists() {
            Ok(d)
        } else {
            Err(format!("WEFT_MPICH_ABI_INCLUDE={} has no mpi_abi.h", d.display()))
        };
    }
    if let Ok(out) = Command::new("mpicc_abi").arg("-show").output() {
        let show = String::from_utf8_lossy(&out.stdout).to_string();
        if let Some(d) = show
            .split_whitespace()
            .filter_map(|a| a.strip_prefix("-I"))
            .map(PathBuf::from)
            .find(|d| d.join("mpi_abi.h").exists())
        {
            return Ok(d);
        }
    }
    let pip = PathBuf::from("/root/.pyenv/versions/3.11.7/include");
    if pip.join("mpi_abi.h").exists() {
        return Ok(pip);
    }
    Err("no MPICH mpi_abi.h (set WEFT_MPICH_ABI_INCLUDE, or put mpicc_abi on PATH: pip install mpich)".into())
}

#[test]
fn weft_header_prints_the_values_the_library_holds() {
    let got = print_with(&weft_include(), "mpi.h", "weft");
    let want = expected();
    for (g, w) in got.lines().zip(want.lines()) {
        assert_eq!(g, w, "weft's mpi.h disagrees with mpi/src/abi.rs");
    }
    assert_eq!(got.lines().count(), want.lines().count());
    assert!(got.lines().count() > 300, "the table has more than 300 constants");
}

#[test]
fn mpich_abi_header_prints_the_same() {
    let inc = match mpich_abi_include() {
        Ok(d) => d,
        Err(why) => {
            println!("skipped: comparing with MPICH's mpi_abi.h: {why}");
            return;
        }
    };
    let mpich = print_with(&inc, "mpi_abi.h", "mpich");
    let weft = print_with(&weft_include(), "mpi.h", "weft_for_mpich");
    for (m, w) in mpich.lines().zip(weft.lines()) {
        assert_eq!(w, m, "weft's mpi.h and MPICH's mpi_abi.h ({}) disagree", inc.display());
    }
    assert_eq!(mpich.lines().count(), weft.lines().count());
}
