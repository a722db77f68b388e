//! Buffered sends: the buffer the application attaches (`MPI_Buffer_attach`), how a buffered
//! send takes room in it, and `MPI_Buffer_detach`, which waits for the sends using it.
//!
//! A buffered send copies (packs) its data into the attached buffer and sends from there; the
//! send itself is then complete for the application. Each one takes its data bytes plus
//! `MPI_BSEND_OVERHEAD` (the standard's per-message allowance) at the first offset with room;
//! the room is given back once the core request completes (checked at every buffered send and
//! at detach). No room is `MPI_ERR_BUFFER`. An error of a send from the buffer after it was
//! started has no request to report it on and is dropped.
//! `MPI_BUFFER_AUTOMATIC` is not supported (attach rejects it).

use std::ffi::{c_int, c_void};

use weft::ops::CommId;

use crate::abi::*;
use crate::bind::p2p::send_tag;
use crate::error::{err, MpiResult};
use crate::obj::datatype::Span;
use crate::obj::request::block_on;
use crate::state::{Mpi, On};
use crate::{export, put};

impl Mpi {
    /// Give back the room of the buffered sends that completed.
    fn reap_bsends(&self) {
        let mut reqs = self.reqs().borrow_mut();
        reqs.bsend.live.retain(|&(_, _, id)| matches!(self.core.test(id), Ok(None)));
    }

    /// A buffered send of `count` elements of `dt` at `buf` to `dest`: copied into the
    /// attached buffer and sent from there.
    ///
    /// # Safety
    /// `buf` must be valid for the type map's reads (only during this call).
    pub(crate) unsafe fn bsend(
        &self,
        c: CommId,
        buf: *const c_void,
        count: MPI_Count,
        dt: MPI_Datatype,
        dest: c_int,
        tag: c_int,
    ) -> MpiResult {
        let tag = send_tag(tag)?;
        let dst = self.core.dest(c, dest)?;
        let span = self.types().borrow().span(dt, count)?;
        let n = span.bytes();
        if n > 0 && buf.is_null() {
            return Err(err!(MPI_ERR_BUFFER, "invalid buffer: NULL with {n} bytes to move"));
        }
        self.reap_bsends();
        let need = n + MPI_BSEND_OVERHEAD as usize;
        let mut reqs = self.reqs().borrow_mut();
        let pool = &mut reqs.bsend;
        let Some((base, size)) = pool.attached else {
            return Err(err!(
                MPI_ERR_BUFFER,
                "buffered send of {n} bytes with no buffer attached (MPI_Buffer_attach)"
            ));
        };
        let Some(off) = pool.room(need) else {
            return Err(err!(
                MPI_ERR_BUFFER,
                "buffered send of {n} bytes (+{MPI_BSEND_OVERHEAD} overhead) does not fit in the attached buffer of {size} bytes"
            ));
        };
        // SAFETY: `off + need <= size` (`room`), inside the attached buffer.
        let dst_ptr = unsafe { base.add(off) };
        match span {
            // SAFETY: `buf` holds `n` bytes (caller) and the region `n` writable bytes; the
            // application's buffer and the attached one do not overlap (standard's rule).
            Span::Contig(_) => unsafe { std::ptr::copy_nonoverlapping(buf.cast::<u8>(), dst_ptr, n) },
            Span::Strided(_, ty) => {
                let mut packed = Vec::with_capacity(n);
                // SAFETY: forwarded contract.
                unsafe { crate::obj::datatype::pack(buf.cast(), count as usize, &ty, &mut packed) };
                // SAFETY: `packed` holds `n` bytes, the region `n` writable bytes.
                unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), dst_ptr, n) };
            }
        }
        // SAFETY: the region stays reserved (and the buffer attached: detach waits for it)
        // until the core request completes.
        let id = unsafe { self.core.isend(c, dst_ptr, n, dst, tag)? };
        let i = pool.live.partition_point(|&(o, _, _)| o < off);
        pool.live.insert(i, (off, need, id));
        Ok(())
    }

    fn attach(&self, buffer: *mut c_void, size: MPI_Count) -> MpiResult {
        if buffer as usize == MPI_BUFFER_AUTOMATIC {
            return Err(err!(MPI_ERR_BUFFER, "MPI_BUFFER_AUTOMATIC is not supported"));
        }
        if size < 0 {
            return Err(err!(MPI_ERR_BUFFER, "invalid buffer size {size}"));
        }
        if buffer.is_null() && size > 0 {
            return Err(err!(MPI_ERR_BUFFER, "invalid buffer: NULL with size {size}"));
        }
        let mut reqs = self.reqs().borrow_mut();
        if reqs.bsend.attached.is_some() {
            return Err(err!(MPI_ERR_BUFFER, "a buffer is attached already (MPI_Buffer_detach it first)"));
        }
        reqs.bsend.attached = Some((buffer.cast(), size as usize));
        Ok(())
    }

    /// Wait for every send from the attached buffer, then detach it; its address and size
    /// (null and 0 if none was attached).
    fn detach(&self) -> MpiResult<(*mut u8, usize)> {
        // One at a time, each entry staying in the pool until its send is done: at
        // MPI_THREAD_MULTIPLE another thread's buffered send must not take its room meanwhile.
        loop {
            let next = self.reqs().borrow().bsend.live.first().map(|e| e.2);
            let Some(id) = next else { break };
            // The send's error has no request to go to (see the module doc); an id another
            // thread's buffered send already reaped is an error here too, and done as well.
            let _ = block_on(self, id);
            self.reqs().borrow_mut().bsend.live.retain(|e| e.2 != id);
        }
        Ok(self.reqs().borrow_mut().bsend.attached.take().unwrap_or((std::ptr::null_mut(), 0)))
    }
}

export! {
    /// `MPI_Buffer_attach`: the buffer buffered sends copy into.
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) on On::NoObject;
    |m| m.attach(buffer, size.into())
}

export! {
    /// `MPI_Buffer_attach_c`: `MPI_Buffer_attach` with a large size.
    fn MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buffer: *mut c_void, size: MPI_Count) on On::NoObject;
    |m| m.attach(buffer, size)
}

/// The body of `MPI_Buffer_detach(_c)`: check the output pointers, detach, write the
/// buffer's address through `buffer_addr` (a `void **`); the buffer's size.
///
/// # Safety
/// A non-null `buffer_addr` must be valid for a write of a pointer.
unsafe fn detach_to(m: &Mpi, buffer_addr: *mut c_void, size_null: bool) -> MpiResult<usize> {
    if buffer_addr.is_null() || size_null {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `buffer_addr` or `size` is NULL"));
    }
    let (p, n) = m.detach()?;
    // SAFETY: non-null, valid by the caller's contract.
    unsafe { buffer_addr.cast::<*mut c_void>().write(p.cast()) };
    Ok(n)
}

export! {
    /// `MPI_Buffer_detach`: wait for the buffered sends, detach the buffer; `buffer_addr`
    /// (a `void **`) receives its address.
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) on On::NoObject;
    |m| {
        // SAFETY: output pointers from the caller.
        unsafe {
            let n = detach_to(m, buffer_addr, size.is_null())?;
            put(size, n as c_int, "size")
        }
    }
}

export! {
    /// `MPI_Buffer_detach_c`: `MPI_Buffer_detach` with a large size.
    fn MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut MPI_Count) on On::NoObject;
    |m| {
        // SAFETY: output pointers from the caller.
        unsafe {
            let n = detach_to(m, buffer_addr, size.is_null())?;
            put(size, n as MPI_Count, "size")
        }
    }
}
