//! Attribute caching: keyvals (with their copy and delete callbacks), the attribute values
//! attached to communicators and datatypes, the predefined attributes of the communicators
//! (`MPI_TAG_UB`, `MPI_HOST`, `MPI_IO`, `MPI_WTIME_IS_GLOBAL`, `MPI_APPNUM`,
//! `MPI_UNIVERSE_SIZE`, weft's `MPIX_FT`), and the process's keyval table. The attribute
//! functions are in `bind/attr.rs`.
//!
//! An attribute value is a `void *` the application stores; the predefined ones are pointers
//! to `int`s that live as long as the process. Communicator attributes sit in `CommObj::attrs`,
//! datatype attributes in [`Keyvals::type_attrs`]. A keyval freed while attributes still use
//! it stays known (its callbacks still run when those attributes go) but accepts no new use.
//!
//! Datatypes: `MPI_Type_dup` and `MPI_Type_free` (datatype.rs) call [`Mpi::copy_type_attrs`]
//! and [`Mpi::delete_type_attrs`] so the callbacks run there.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicI32;

use std::cell::RefCell;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::state::{Mpi, Owned};

/// weft's fault-tolerance attribute key (declared in `mpi-ext.h`): its value is true.
pub const MPIX_FT: c_int = 0x1001;
/// First keyval value handed to the application (clear of the predefined ones).
const FIRST_KEYVAL: c_int = 0x2000;

/// A copy callback (`MPI_Comm_copy_attr_function`, `MPI_Type_copy_attr_function`: the object
/// handle is pointer-sized in both).
pub(crate) type CopyFn =
    unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// A delete callback (`MPI_Comm_delete_attr_function`, `MPI_Type_delete_attr_function`).
pub(crate) type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

/// What a keyval may be attached to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Object {
    Comm,
    Type,
}

/// How attributes are copied when their object is duplicated.
#[derive(Clone, Copy)]
enum Copy {
    /// `MPI_*_NULL_COPY_FN`: not copied.
    Null,
    /// `MPI_*_DUP_FN`: the value is copied as is.
    Dup,
    User(CopyFn),
}

/// One keyval.
#[derive(Clone, Copy)]
struct Keyval {
    object: Object,
    copy: Copy,
    delete: Option<DeleteFn>,
    extra: *mut c_void,
    freed: bool,
}

/// Every keyval the application created, and the datatypes' attributes.
pub(crate) struct Keyvals {
    keys: HashMap<c_int, Keyval>,
    next: c_int,
    /// Attributes of datatypes, by type handle.
    pub(crate) type_attrs: HashMap<MPI_Datatype, HashMap<c_int, usize>>,
}

impl Keyvals {
    pub(crate) fn new() -> Keyvals {
        Keyvals { keys: HashMap::new(), next: FIRST_KEYVAL, type_attrs: HashMap::new() }
    }
}

/// The predefined attributes' values (the standard hands out pointers to them).
static TAG_UB: c_int = weft::MAX_TAG;
static HOST: c_int = MPI_PROC_NULL;
static IO: c_int = MPI_ANY_SOURCE;
static WTIME_IS_GLOBAL: c_int = 0;
/// weft-run starts one application, number 0.
static APPNUM: c_int = 0;
/// The job's size, set at the first query (weft starts no processes later).
static UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(0);
static FT: c_int = 1;

/// The value of predefined attribute `key`, if it is one.
fn predefined(m: &Mpi, key: c_int) -> Option<usize> {
    let p: *const c_int = match key {
        MPI_TAG_UB => &TAG_UB,
        MPI_HOST => &HOST,
        MPI_IO => &IO,
        MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL,
        MPI_APPNUM => &APPNUM,
        MPI_UNIVERSE_SIZE => {
            UNIVERSE_SIZE.store(m.core.job_size() as c_int, std::sync::atomic::Ordering::Relaxed);
            UNIVERSE_SIZE.as_ptr()
        }
        MPIX_FT => &FT,
        _ => return None,
    };
    Some(p as usize)
}

fn is_predefined(key: c_int) -> bool {
    matches!(
        key,
        MPI_TAG_UB | MPI_HOST | MPI_IO | MPI_WTIME_IS_GLOBAL | MPI_APPNUM | MPI_UNIVERSE_SIZE | MPIX_FT
    )
}

impl Mpi {
    /// Keyval `key` for use on `object`, or `MPI_ERR_KEYVAL`.
    fn keyval(&self, key: c_int, object: Object) -> MpiResult<Keyval> {
        let kv = self.keyvals().borrow().keys.get(&key).copied();
        match kv {
            Some(k) if k.freed => Err(err!(MPI_ERR_KEYVAL, "invalid keyval {key}: already freed")),
            Some(k) if k.object != object => Err(err!(
                MPI_ERR_KEYVAL,
                "invalid keyval {key}: made for a {:?}, used on a {object:?}",
                k.object
            )),
            Some(k) => Ok(k),
            None => Err(err!(MPI_ERR_KEYVAL, "invalid keyval {key}")),
        }
    }

    /// Run `key`'s delete callback on `value` of object `h`.
    fn run_delete(&self, h: usize, key: c_int, value: usize) -> MpiResult {
        let kv = self.keyvals().borrow().keys.get(&key).copied();
        if let Some(Keyval { delete: Some(f), extra, .. }) = kv {
            // SAFETY: `f` is the application's delete callback for this keyval, called with the
            // arguments the standard defines; no borrow of the instance is held across it.
            let rc = unsafe { f(h, key, value as *mut c_void, extra) };
            if rc != MPI_SUCCESS {
                return Err(MpiErr::new(rc, format!("the delete callback of keyval {key} returned {rc}")));
            }
        }
        Ok(())
    }

    /// The attributes `old` (of keyvals made for `object`) gives a duplicate, by their copy
    /// callbacks.
    fn copy_attrs(&self, old: usize, attrs: Vec<(c_int, usize)>) -> MpiResult<HashMap<c_int, usize>> {
        let mut out = HashMap::new();
        for (key, value) in attrs {
            let kv = self.keyvals().borrow().keys.get(&key).copied();
            let Some(kv) = kv else { continue };
            match kv.copy {
                Copy::Null => {}
                Copy::Dup => {
                    out.insert(key, value);
                }
                Copy::User(f) => {
                    let (mut new, mut flag) = (0usize, 0 as c_int);
                    // SAFETY: the application's copy callback, given the old value and pointers
                    // to locals for the new value and flag; no borrow is held across it.
                    let rc = unsafe {
                        f(
                            old,
                            key,
                            kv.extra,
                            value as *mut c_void,
                            (&mut new as *mut usize).cast(),
                            &mut flag,
                        )
                    };
                    if rc != MPI_SUCCESS {
                        return Err(MpiErr::new(
                            rc,
                            format!("the copy callback of keyval {key} returned {rc}"),
                        ));
                    }
                    if flag != 0 {
                        out.insert(key, new);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Run the delete callbacks of the attributes `attrs` removed from object `h`; every
    /// callback runs, the first error is returned.
    fn delete_all(&self, h: usize, attrs: impl IntoIterator<Item = (c_int, usize)>) -> MpiResult {
        let mut first = Ok(());
        for (k, v) in attrs {
            let r = self.run_delete(h, k, v);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// Attributes communicator `old` passes to its duplicate (`MPI_Comm_dup`, `idup`).
    pub(crate) fn copy_comm_attrs(&self, old: MPI_Comm) -> MpiResult<HashMap<c_int, usize>> {
        let attrs: Vec<_> = self.comms().borrow().resolve(old)?.attrs.iter().map(|(&k, &v)| (k, v)).collect();
        self.copy_attrs(old, attrs)
    }

    /// Delete every attribute of communicator `h` (before it is freed), running the delete
    /// callbacks; the first callback error is returned after all ran.
    pub(crate) fn delete_comm_attrs(&self, h: MPI_Comm) -> MpiResult {
        let attrs: Vec<_> = self.comms().borrow_mut().resolve_mut(h)?.attrs.drain().collect();
        self.delete_all(h, attrs)
    }

    /// Copy the attributes of datatype `old` to its duplicate `new` (`MPI_Type_dup`).
    pub(crate) fn copy_type_attrs(&self, old: MPI_Datatype, new: MPI_Datatype) -> MpiResult {
        let attrs: Vec<_> = self
            .keyvals()
            .borrow()
            .type_attrs
            .get(&old)
            .map(|a| a.iter().map(|(&k, &v)| (k, v)).collect())
            .unwrap_or_default();
        let copied = self.copy_attrs(old, attrs)?;
        if !copied.is_empty() {
            self.keyvals().borrow_mut().type_attrs.insert(new, copied);
        }
        Ok(())
    }

    /// Delete every attribute of datatype `h` (`MPI_Type_free`).
    pub(crate) fn delete_type_attrs(&self, h: MPI_Datatype) -> MpiResult {
        let attrs = self.keyvals().borrow_mut().type_attrs.remove(&h).unwrap_or_default();
        self.delete_all(h, attrs)
    }

    /// The attribute table of object `h` for `f` to read or change.
    fn with_attrs<R>(
        &self,
        object: Object,
        h: usize,
        f: impl FnOnce(&mut HashMap<c_int, usize>) -> R,
    ) -> MpiResult<R> {
        match object {
            Object::Comm => {
                let mut comms = self.comms().borrow_mut();
                let c = comms.resolve_mut(h)?;
                Ok(f(&mut c.attrs))
            }
            Object::Type => {
                self.types().borrow().get(h)?;
                Ok(f(self.keyvals().borrow_mut().type_attrs.entry(h).or_default()))
            }
        }
    }

    pub(crate) fn set_attr(&self, object: Object, h: usize, key: c_int, value: usize) -> MpiResult {
        if is_predefined(key) {
            return Err(err!(MPI_ERR_KEYVAL, "keyval {key} is predefined: it cannot be set"));
        }
        self.keyval(key, object)?;
        if let Some(old) = self.with_attrs(object, h, |a| a.remove(&key))? {
            self.run_delete(h, key, old)?;
        }
        self.with_attrs(object, h, |a| a.insert(key, value))?;
        Ok(())
    }

    pub(crate) fn get_attr(&self, object: Object, h: usize, key: c_int) -> MpiResult<Option<usize>> {
        if object == Object::Comm {
            if let Some(v) = predefined(self, key) {
                self.comm(h)?;
                return Ok(Some(v));
            }
        }
        self.keyval(key, object)?;
        self.with_attrs(object, h, |a| a.get(&key).copied())
    }

    pub(crate) fn delete_attr(&self, object: Object, h: usize, key: c_int) -> MpiResult {
        if is_predefined(key) {
            return Err(err!(MPI_ERR_KEYVAL, "keyval {key} is predefined: it cannot be deleted"));
        }
        self.keyval(key, object)?;
        match self.with_attrs(object, h, |a| a.remove(&key))? {
            Some(v) => self.run_delete(h, key, v),
            None => Ok(()),
        }
    }

    pub(crate) fn create_keyval(
        &self,
        object: Object,
        copy: usize,
        delete: usize,
        extra: *mut c_void,
    ) -> c_int {
        let copy = match copy {
            MPI_COMM_NULL_COPY_FN => Copy::Null,
            MPI_COMM_DUP_FN => Copy::Dup,
            // SAFETY: any other value is the address of the application's copy callback
            // (`MPI_*_copy_attr_function`), which `CopyFn` matches in ABI.
            f => Copy::User(unsafe { std::mem::transmute::<usize, CopyFn>(f) }),
        };
        let delete = match delete {
            MPI_COMM_NULL_DELETE_FN => None,
            // SAFETY: as above, the application's delete callback.
            f => Some(unsafe { std::mem::transmute::<usize, DeleteFn>(f) }),
        };
        let mut kvs = self.keyvals().borrow_mut();
        let key = kvs.next;
        kvs.next += 1;
        kvs.keys.insert(key, Keyval { object, copy, delete, extra, freed: false });
        key
    }

    pub(crate) fn free_keyval(&self, object: Object, key: *mut c_int) -> MpiResult {
        if key.is_null() {
            return Err(err!(MPI_ERR_ARG, "invalid argument: `keyval` is NULL"));
        }
        // SAFETY: non-null in/out pointer from the caller.
        let k = unsafe { *key };
        if is_predefined(k) {
            return Err(err!(MPI_ERR_KEYVAL, "keyval {k} is predefined: it cannot be freed"));
        }
        self.keyval(k, object)?;
        if let Some(kv) = self.keyvals().borrow_mut().keys.get_mut(&k) {
            kv.freed = true;
        }
        // SAFETY: as above.
        unsafe { *key = MPI_KEYVAL_INVALID };
        Ok(())
    }
}

/// The process's table of keyvals (see [`Owned`]).
static KEYVALS: Owned<RefCell<Keyvals>> = Owned::new();

impl Mpi {
    /// The table of keyvals.
    #[inline(always)]
    pub(crate) fn keyvals(&self) -> &RefCell<Keyvals> {
        KEYVALS.get(self)
    }
}

/// Make the table of keyvals (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Keyvals) {
    KEYVALS.make(RefCell::new(table));
}
