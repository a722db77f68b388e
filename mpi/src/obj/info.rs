//! Info objects: ordered (key, value) string pairs, the process's info table, and the predefined
//! `MPI_INFO_ENV` (how this process was started). Keys are at most `MPI_MAX_INFO_KEY - 1`
//! bytes and values at most `MPI_MAX_INFO_VAL - 1` bytes; longer ones are
//! `MPI_ERR_INFO_KEY` / `MPI_ERR_INFO_VALUE`.

use std::ffi::c_int;

use std::cell::RefCell;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::handle::{looks_like, Kind, Table};
use crate::state::{Mpi, Owned};

/// One info object: its pairs in insertion order (`MPI_Info_get_nthkey` numbers them so).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) pairs: Vec<(String, String)>,
}

impl Info {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Set `key` to `value` (replacing an earlier value in place).
    pub(crate) fn set(&mut self, key: String, value: String) {
        match self.pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(p) => p.1 = value,
            None => self.pairs.push((key, value)),
        }
    }
}

/// The name the standard gives a thread level (`thread_level` of `MPI_INFO_ENV`).
fn level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// `MPI_INFO_ENV`: `command` and `argv` (from the process's command line), `maxprocs` and
/// `soft` (the job's size: weft starts no processes later), `host`, `arch`, `wdir`,
/// `thread_level` and `mpi_initial_errhandler`. `file` is absent: weft reads no startup file.
fn env_info(m: &Mpi) -> Info {
    let mut i = Info::default();
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_else(|_| std::env::args().collect());
    if let Some(cmd) = args.first() {
        i.set("command".into(), cmd.clone());
    }
    if args.len() > 1 {
        i.set("argv".into(), args[1..].join(" "));
    }
    let n = m.core.job_size().to_string();
    i.set("maxprocs".into(), n.clone());
    i.set("soft".into(), n);
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its length.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        if let Ok(h) = std::ffi::CStr::from_bytes_until_nul(&buf) {
            i.set("host".into(), h.to_string_lossy().into_owned());
        }
    }
    i.set("arch".into(), std::env::consts::ARCH.into());
    if let Ok(d) = std::env::current_dir() {
        i.set("wdir".into(), d.to_string_lossy().into_owned());
    }
    i.set("thread_level".into(), level_name(m.level).into());
    let eh = match std::env::var("WEFT_MPI_INITIAL_ERRHANDLER").as_deref() {
        Ok("return") | Ok("MPI_ERRORS_RETURN") => "mpi_errors_return",
        _ => "mpi_errors_are_fatal",
    };
    i.set("mpi_initial_errhandler".into(), eh.into());
    i
}

/// The error for a handle that names no live info object.
#[cold]
pub(crate) fn invalid(h: MPI_Info) -> MpiErr {
    if h == MPI_INFO_NULL {
        err!(MPI_ERR_INFO, "invalid info: MPI_INFO_NULL")
    } else if looks_like(Kind::Info, h) {
        err!(MPI_ERR_INFO, "invalid info {h:#x}: already freed")
    } else {
        err!(MPI_ERR_INFO, "invalid info {h:#x}: not an info handle")
    }
}

impl Mpi {
    /// A copy of info object `h` (`MPI_INFO_ENV` or a created one).
    pub(crate) fn info(&self, h: MPI_Info) -> MpiResult<Info> {
        if h == MPI_INFO_ENV {
            return Ok(env_info(self));
        }
        self.infos().borrow().get(h).cloned().ok_or_else(|| invalid(h))
    }

    /// A copy of `h`, or an empty info for `MPI_INFO_NULL` (where the standard allows it).
    pub(crate) fn info_or_empty(&self, h: MPI_Info) -> MpiResult<Info> {
        if h == MPI_INFO_NULL {
            Ok(Info::default())
        } else {
            self.info(h)
        }
    }

    /// A new info handle holding `i`.
    pub(crate) fn new_info(&self, i: Info) -> MPI_Info {
        self.infos().borrow_mut().insert(i)
    }

    /// Change created info object `h` with `f` (`MPI_INFO_ENV` is read-only).
    pub(crate) fn with_info<R>(
        &self,
        h: MPI_Info,
        f: impl FnOnce(&mut Info) -> MpiResult<R>,
    ) -> MpiResult<R> {
        if h == MPI_INFO_ENV {
            return Err(err!(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed"));
        }
        let mut infos = self.infos().borrow_mut();
        f(infos.get_mut(h).ok_or_else(|| invalid(h))?)
    }
}

/// The process's table of info objects (see [`Owned`]).
static INFOS: Owned<RefCell<Table<Info>>> = Owned::new();

impl Mpi {
    /// The table of info objects.
    #[inline(always)]
    pub(crate) fn infos(&self) -> &RefCell<Table<Info>> {
        INFOS.get(self)
    }
}

/// Make the table of info objects (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Table<Info>) {
    INFOS.make(RefCell::new(table));
}
