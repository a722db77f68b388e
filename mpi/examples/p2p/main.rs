//! Multi-rank checks of weft-mpi's point-to-point layer, run under `weft-run -n 2` by
//! `mpi/tests/p2p.rs`: `p2p <part>` runs one part (modes, persistent, completion, mprobe,
//! errors, threads) and exits 0 only if every check held; a failed check prints the rank,
//! the line and what went wrong, and exits 1. `p2p latency <single|multiple> <iters>` prints
//! the 8-byte ping-pong latency at that thread level (no checks on the figure).
//!
//! The functions are called as a C program calls them through `libmpi_abi.so`: the exported
//! `MPI_*` symbols, with raw pointers and the standard ABI's constants.

use std::ffi::c_int;
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::*;

/// Fail the job if `cond` does not hold.
macro_rules! check {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            eprintln!("rank {}: check failed at {}:{}: {}", crate::rank(), file!(), line!(), format!($($fmt)*));
            std::process::exit(1);
        }
    };
}

/// Call an MPI function; its return code.
macro_rules! mpi {
    ($f:ident($($a:expr),* $(,)?)) => {{
        // SAFETY: every pointer argument points at a live local (or buffer) of the type the
        // function takes, or is null where the standard allows it.
        unsafe { $f($($a),*) }
    }};
}

/// Call an MPI function that must succeed.
macro_rules! ok {
    ($f:ident($($a:expr),* $(,)?)) => {{
        let rc = mpi!($f($($a),*));
        check!(rc == MPI_SUCCESS, "{} returned {}", stringify!($f), rc);
    }};
}

/// Call an MPI function that must fail with error class `class`.
macro_rules! fails {
    ($class:expr, $f:ident($($a:expr),* $(,)?)) => {{
        let rc = mpi!($f($($a),*));
        check!(rc == $class, "{} returned {} where {} ({}) was expected", stringify!($f), rc, stringify!($class), $class);
    }};
}

mod completion;
mod errors;
mod latency;
mod modes;
mod mprobe;
mod persistent;
mod threads;

static RANK: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// This process's rank in the world (-1 before init).
pub fn rank() -> i32 {
    RANK.load(std::sync::atomic::Ordering::Relaxed)
}

/// A zeroed status.
pub fn status() -> MPI_Status {
    MPI_Status { MPI_SOURCE: 0, MPI_TAG: 0, MPI_ERROR: 0, MPI_internal: [0; 5] }
}

/// `MPI_STATUS_IGNORE`.
pub const IGNORE: *mut MPI_Status = null_mut();

/// Elements of `c_int` a status counts.
pub fn count(st: &MPI_Status) -> c_int {
    let mut n = -1;
    ok!(MPI_Get_count(st, MPI_INT, &mut n));
    n
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let part = args.get(1).map(String::as_str).unwrap_or("");
    let level = if part == "threads" || (part == "latency" && args.get(2).is_some_and(|a| a == "multiple")) {
        MPI_THREAD_MULTIPLE
    } else {
        MPI_THREAD_SINGLE
    };
    let mut provided = -1;
    ok!(MPI_Init_thread(null_mut(), null_mut(), level, &mut provided));
    check!(provided == level, "provided thread level {provided}, asked {level}");
    let mut me = -1;
    ok!(MPI_Comm_rank(MPI_COMM_WORLD, &mut me));
    RANK.store(me, std::sync::atomic::Ordering::Relaxed);
    let mut n = 0;
    ok!(MPI_Comm_size(MPI_COMM_WORLD, &mut n));
    check!(n == 2, "run with 2 ranks, not {n}");
    // Errors are checked by the return codes: on the world and on MPI_COMM_SELF (the handler
    // of calls that name no communicator).
    ok!(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    ok!(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    match part {
        "modes" => modes::run(me),
        "persistent" => persistent::run(me),
        "completion" => completion::run(me),
        "mprobe" => mprobe::run(me),
        "errors" => errors::run(me),
        "threads" => threads::run(me),
        "latency" => latency::run(me, args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10_000)),
        other => check!(false, "unknown part {other:?}"),
    }
    ok!(MPI_Barrier(MPI_COMM_WORLD));
    ok!(MPI_Finalize());
    if part != "latency" {
        println!("rank {me}: {part} ok");
    }
}
