//! The library's one instance and how a call reaches it: the process-wide [`Mpi`] state, the
//! thread model, and [`call`], the wrapper every exported function runs its body in (lock,
//! panic catch, error handler dispatch).
//!
//! Thread model. Below `MPI_THREAD_MULTIPLE` the application promises that one thread at a
//! time calls MPI, so a call takes no lock at all. At `MPI_THREAD_MULTIPLE` every call holds
//! one process-wide re-entrant lock for its duration, and blocking calls release it between
//! progress polls (see `request::block_on`), so a thread blocked in a receive never stops
//! another thread from sending. The lock is re-entrant so that an error handler or a user
//! reduction that calls MPI from inside a call does not deadlock; such a nested call then finds
//! the operations core borrowed and fails cleanly where it would alias.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};

use parking_lot::ReentrantMutex;
use weft::ops::OpsCore;

use crate::abi::*;
use crate::error::{class_text, MpiErr, MpiResult};
use crate::shortcut::Shortcuts;

/// What one MPI process holds besides the object tables (each object module keeps its own in
/// an [`Owned`]): the operations core, the thread level, the error state and the shortcuts of
/// the direct paths.
pub(crate) struct Mpi {
    pub(crate) core: OpsCore,
    /// The thread level granted by `MPI_Init_thread`.
    pub(crate) level: c_int,
    /// The thread that initialised MPI (`MPI_Is_thread_main`).
    pub(crate) main_thread: std::thread::ThreadId,
    /// Set by `MPI_Finalize`; later calls fail.
    pub(crate) finalized: Cell<bool>,
    /// The last error raised, for `MPI_Error_string` to give its details.
    pub(crate) last_error: RefCell<Option<MpiErr>>,
    /// The resolved arguments of the last direct calls.
    pub(crate) shortcuts: Shortcuts,
    /// The error handler dispatch (the object floor's, registered by `MPI_Init`): hands the
    /// error of a call to the handler of the object it concerns; the code to return.
    pub(crate) raise: fn(&Mpi, &str, On, MpiErr) -> c_int,
}

/// One object kind's process-wide table, kept by the module of that kind rather than by the
/// instance: made by `MPI_Init` before the instance is installed, reached through the instance
/// (holding a `&Mpi` means init made it), under the thread model above.
pub(crate) struct Owned<T>(UnsafeCell<Option<T>>);
// SAFETY: as `Instance`: written once by `MPI_Init` before any call can reach it (the instance
// is installed after), then read only through a `&Mpi`, which `call` and `DIRECT` hand out under
// `LOCK` (MULTIPLE) or under the application's one-thread-at-a-time promise.
unsafe impl<T> Sync for Owned<T> {}

impl<T> Owned<T> {
    pub(crate) const fn new() -> Owned<T> {
        Owned(UnsafeCell::new(None))
    }

    /// Make the table: `MPI_Init` only, before the instance is installed.
    pub(crate) fn make(&self, value: T) {
        assert!(phase() == Phase::Before, "an object table is made once, by MPI_Init");
        // SAFETY: before install no call reaches the table (see the `Sync` impl), and
        // `MPI_Init` runs on one thread.
        unsafe { *self.0.get() = Some(value) };
    }

    /// The table, for a call holding the instance.
    #[inline(always)]
    pub(crate) fn get(&self, _: &Mpi) -> &T {
        // SAFETY: written only by `make`, before the instance that `_` proves exists.
        match unsafe { &*self.0.get() } {
            Some(v) => v,
            None => unmade(),
        }
    }
}

#[cold]
#[inline(never)]
fn unmade() -> ! {
    panic!("an object table MPI_Init did not make")
}

/// The instance as a static: shared between threads only as the thread model above allows
/// (one thread at a time by the application's promise, or under [`LOCK`]).
struct Instance(Mpi);
// SAFETY: `Mpi` is reached only through `call`/`with`, which either hold `LOCK` (thread level
// MULTIPLE) or run under the application's promise that one thread at a time calls MPI (lower
// levels); so its `Rc`s and `RefCell`s are never touched by two threads at once.
unsafe impl Sync for Instance {}
// SAFETY: as above; the instance is created by one thread and then only used under that rule.
unsafe impl Send for Instance {}

static INSTANCE: AtomicPtr<Instance> = AtomicPtr::new(std::ptr::null_mut());
static LOCK: ReentrantMutex<()> = ReentrantMutex::new(());
static MULTIPLE: AtomicBool = AtomicBool::new(false);
/// The instance while MPI runs below `MPI_THREAD_MULTIPLE` (null before init, after finalize
/// and at `MULTIPLE`): one load tells a call's direct path both that MPI runs and that it
/// takes no lock. Read by `export!`'s direct clause, in the export itself (so that a direct
/// path calls nothing in this file); a call that finds it null, or whose direct path
/// declines, goes through [`call`]. A non-null value is the instance `install` made by
/// `Box::into_raw` and never freed, and below `MULTIPLE` one thread at a time calls MPI (the
/// application's promise), so it may be used as a `&'static Mpi`.
pub(crate) static DIRECT: AtomicPtr<Mpi> = AtomicPtr::new(std::ptr::null_mut());

/// Life cycle of the library in this process.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Phase {
    /// `MPI_Init` has not run.
    Before = 0,
    /// Between init and finalize.
    Running,
    /// After `MPI_Finalize`.
    After,
}
static PHASE: AtomicU8 = AtomicU8::new(Phase::Before as u8);

pub(crate) fn phase() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::Before,
        1 => Phase::Running,
        _ => Phase::After,
    }
}

/// Install the instance made by `MPI_Init` (once per process).
pub(crate) fn install(mpi: Mpi) {
    MULTIPLE.store(mpi.level == MPI_THREAD_MULTIPLE, Ordering::Release);
    let p = Box::into_raw(Box::new(Instance(mpi)));
    INSTANCE.store(p, Ordering::Release);
    PHASE.store(Phase::Running as u8, Ordering::Release);
    if !multiple() {
        // SAFETY: `p` is the live allocation just made; the field's address, no access.
        DIRECT.store(unsafe { std::ptr::addr_of_mut!((*p).0) }, Ordering::Release);
    }
}

/// Mark the library finalized (the instance stays, for the calls allowed after finalize).
pub(crate) fn set_finalized() {
    DIRECT.store(std::ptr::null_mut(), Ordering::Release);
    PHASE.store(Phase::After as u8, Ordering::Release);
}

#[inline(always)]
fn instance() -> Option<&'static Mpi> {
    let p = INSTANCE.load(Ordering::Acquire);
    // SAFETY: a non-null pointer came from `Box::into_raw` in `install` and is never freed.
    (!p.is_null()).then(|| unsafe { &(*p).0 })
}

/// True at `MPI_THREAD_MULTIPLE` (blocking calls release the lock while they wait).
#[inline(always)]
pub(crate) fn multiple() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

/// Release the process lock for the duration of `f` (a blocking call between two polls), if
/// this thread holds it.
pub(crate) fn unlocked<R>(f: impl FnOnce() -> R) -> R {
    if multiple() {
        // SAFETY: only called from inside `call`, which holds the lock on this thread (at
        // MULTIPLE); the guard is re-taken before `f`'s caller touches the instance again.
        unsafe { LOCK.force_unlock() };
        let r = f();
        std::mem::forget(LOCK.lock());
        r
    } else {
        f()
    }
}

/// Which object's error handler an error of this call is raised on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum On {
    /// The communicator handle the call was given.
    Comm(MPI_Comm),
    /// No object: `MPI_COMM_SELF`'s handler (the standard's rule since MPI 4.0).
    NoObject,
}

/// Run the body of the exported function `name`: reach the instance (taking the lock at
/// `MPI_THREAD_MULTIPLE`), catch a panic as `MPI_ERR_INTERN`, and hand an error to the error
/// handler of the object `on` names. Returns the code the function returns.
#[inline(always)]
pub(crate) fn call(name: &'static str, on: On, f: impl FnOnce(&'static Mpi) -> MpiResult) -> c_int {
    let Some(mpi) = running(name) else {
        return not_running(name);
    };
    let guard = multiple().then(|| LOCK.lock());
    let r = match catch_unwind(AssertUnwindSafe(|| f(mpi))) {
        Ok(Ok(())) => return MPI_SUCCESS,
        Ok(Err(e)) => e,
        Err(p) => panic_error(&p),
    };
    let code = (mpi.raise)(mpi, name, on, r);
    drop(guard);
    code
}

/// Run `f`, the operations-core call of a direct path of the exported function `name`, as
/// [`call`] runs a body: a panic becomes `MPI_ERR_INTERN` on the error handler of the object
/// `on` names, whose code is the `Err`.
#[inline(always)]
pub(crate) fn catching<R>(mpi: &Mpi, name: &'static str, on: On, f: impl FnOnce() -> R) -> Result<R, c_int> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| raise_panic(mpi, name, on, p))
}

/// An error of a direct path, to the error handler of the object `on` names; the code to
/// return.
#[cold]
#[inline(never)]
pub(crate) fn raise_cold(mpi: &Mpi, name: &'static str, on: On, e: MpiErr) -> c_int {
    (mpi.raise)(mpi, name, on, e)
}

/// A panic of a direct path, as `MPI_ERR_INTERN` to the error handler of the object `on`
/// names; the code to return.
#[cold]
#[inline(never)]
pub(crate) fn raise_panic(mpi: &Mpi, name: &'static str, on: On, p: Box<dyn std::any::Any + Send>) -> c_int {
    (mpi.raise)(mpi, name, on, panic_error(&p))
}

/// A panic caught in a call, as the `MPI_ERR_INTERN` it reports.
fn panic_error(p: &Box<dyn std::any::Any + Send>) -> MpiErr {
    MpiErr::new(MPI_ERR_INTERN, format!("internal error (panic): {}", panic_text(p)))
}

/// Like [`call`] for the functions that may run before `MPI_Init` and after `MPI_Finalize`
/// (`MPI_Initialized`, `MPI_Get_version`, ...): no instance needed; errors are returned.
pub(crate) fn call_anytime(f: impl FnOnce() -> MpiResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => e.class,
        Err(_) => MPI_ERR_INTERN,
    }
}

/// The instance, if MPI is initialised and not finalized.
#[inline(always)]
fn running(_name: &str) -> Option<&'static Mpi> {
    if phase() != Phase::Running {
        return None;
    }
    instance()
}

/// A call before `MPI_Init` or after `MPI_Finalize`: there is no communicator whose handler
/// applies, so the initial error handler (`MPI_ERRORS_ARE_FATAL` unless
/// `WEFT_MPI_INITIAL_ERRHANDLER=return`) handles it.
#[cold]
fn not_running(name: &str) -> c_int {
    let when = if phase() == Phase::Before { "before MPI_Init" } else { "after MPI_Finalize" };
    let e = MpiErr::new(MPI_ERR_OTHER, format!("{name} called {when}"));
    raise_initial(name, e)
}

/// The initial error handler, for calls made when no instance is running.
pub(crate) fn raise_initial(name: &str, e: MpiErr) -> c_int {
    match std::env::var("WEFT_MPI_INITIAL_ERRHANDLER").as_deref().map(str::trim) {
        Ok("return") => {
            eprintln!("weft MPI: {name}: {} (returned {})", e.msg, e.class);
            e.class
        }
        _ => fatal(None, name, &e),
    }
}

/// Print the error and end the job with the error class as exit code.
pub(crate) fn fatal(mpi: Option<&Mpi>, name: &str, e: &MpiErr) -> ! {
    let class = class_text(e.class).unwrap_or("error");
    let rank = mpi.and_then(|m| m.core.comm_rank(m.core.world()).ok());
    let who = rank.map(|r| format!(" (rank {r})")).unwrap_or_default();
    let msg = format!("{name}: {} [{class}]; MPI_ERRORS_ARE_FATAL ends the job", e.msg);
    eprintln!("weft MPI{who}: {msg}");
    match mpi {
        Some(m) => m.core.abort(e.class.clamp(1, 255), &msg),
        None => std::process::exit(e.class.clamp(1, 255)),
    }
}

/// The instance for code outside a call (the error handler dispatch, tests).
pub(crate) fn try_instance() -> Option<&'static Mpi> {
    instance()
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}
