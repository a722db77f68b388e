//! Bad input with `MPI_ERRORS_RETURN`: each call returns its error class and changes nothing.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::*;

use crate::{status, IGNORE};

const W: MPI_Comm = MPI_COMM_WORLD;

pub fn run(me: c_int) {
    let other = 1 - me;
    let buf = [0 as c_int; 4];
    let mut rbuf = [0 as c_int; 4];
    let mut r = MPI_REQUEST_NULL;
    let mut st = status();
    let (mut flag, mut idx, mut n) = (0, 0, 0);
    // Negative counts.
    fails!(MPI_ERR_COUNT, MPI_Ssend(buf.as_ptr().cast(), -1, MPI_INT, other, 0, W));
    fails!(MPI_ERR_COUNT, MPI_Issend_c(buf.as_ptr().cast(), -1, MPI_INT, other, 0, W, &mut r));
    fails!(MPI_ERR_COUNT, MPI_Send_init(buf.as_ptr().cast(), -1, MPI_INT, other, 0, W, &mut r));
    fails!(MPI_ERR_COUNT, MPI_Recv_init(rbuf.as_mut_ptr().cast(), -1, MPI_INT, other, 0, W, &mut r));
    fails!(
        MPI_ERR_COUNT,
        MPI_Sendrecv_replace(rbuf.as_mut_ptr().cast(), -2, MPI_INT, other, 0, other, 0, W, IGNORE)
    );
    fails!(MPI_ERR_COUNT, MPI_Waitany(-1, &mut r, &mut idx, IGNORE));
    fails!(MPI_ERR_COUNT, MPI_Testsome(-1, &mut r, &mut n, &mut idx, IGNORE));
    fails!(MPI_ERR_COUNT, MPI_Startall(-1, &mut r));
    fails!(MPI_ERR_COUNT, MPI_Status_set_elements(&mut st, MPI_INT, -1));
    check!(r == MPI_REQUEST_NULL, "a failed call wrote a request");
    // Bad ranks, tags, types, buffers.
    fails!(MPI_ERR_RANK, MPI_Send_init(buf.as_ptr().cast(), 1, MPI_INT, 7, 0, W, &mut r));
    fails!(MPI_ERR_RANK, MPI_Rsend(buf.as_ptr().cast(), 1, MPI_INT, -7, 0, W));
    fails!(MPI_ERR_TAG, MPI_Recv_init(rbuf.as_mut_ptr().cast(), 1, MPI_INT, other, -5, W, &mut r));
    fails!(MPI_ERR_TAG, MPI_Mprobe(other, -5, W, &mut r, IGNORE));
    fails!(MPI_ERR_TYPE, MPI_Bsend_init(buf.as_ptr().cast(), 1, MPI_DATATYPE_NULL, other, 0, W, &mut r));
    fails!(MPI_ERR_TYPE, MPI_Get_elements(&st, MPI_DATATYPE_NULL, &mut n));
    fails!(MPI_ERR_BUFFER, MPI_Ssend(std::ptr::null(), 4, MPI_INT, other, 0, W));
    fails!(MPI_ERR_BUFFER, MPI_Buffer_attach(null_mut(), 100));
    fails!(MPI_ERR_BUFFER, MPI_Buffer_attach(rbuf.as_mut_ptr().cast(), -1));
    fails!(MPI_ERR_COMM, MPI_Issend(buf.as_ptr().cast(), 1, MPI_INT, other, 0, MPI_COMM_NULL, &mut r));
    // NULL pointers.
    fails!(MPI_ERR_ARG, MPI_Issend(buf.as_ptr().cast(), 1, MPI_INT, other, 0, W, null_mut()));
    fails!(MPI_ERR_ARG, MPI_Recv_init(rbuf.as_mut_ptr().cast(), 1, MPI_INT, other, 0, W, null_mut()));
    fails!(MPI_ERR_ARG, MPI_Start(null_mut()));
    fails!(MPI_ERR_ARG, MPI_Request_free(null_mut()));
    fails!(MPI_ERR_ARG, MPI_Cancel(null_mut()));
    fails!(MPI_ERR_ARG, MPI_Waitany(1, &mut r, null_mut(), IGNORE));
    fails!(MPI_ERR_ARG, MPI_Testany(1, &mut r, &mut idx, null_mut(), IGNORE));
    fails!(MPI_ERR_ARG, MPI_Waitsome(1, null_mut(), &mut n, &mut idx, IGNORE));
    fails!(MPI_ERR_ARG, MPI_Testall(1, &mut r, null_mut(), IGNORE));
    fails!(MPI_ERR_ARG, MPI_Request_get_status(r, null_mut(), IGNORE));
    fails!(MPI_ERR_ARG, MPI_Test_cancelled(std::ptr::null(), &mut flag));
    fails!(MPI_ERR_ARG, MPI_Get_elements_x(std::ptr::null(), MPI_INT, null_mut()));
    fails!(MPI_ERR_ARG, MPI_Status_set_cancelled(null_mut(), 1));
    fails!(MPI_ERR_ARG, MPI_Improbe(other, 0, W, null_mut(), null_mut(), IGNORE));
    fails!(MPI_ERR_ARG, MPI_Mrecv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, null_mut(), IGNORE));
    fails!(MPI_ERR_ARG, MPI_Buffer_detach(null_mut::<c_void>(), &mut n));
    // Null, freed and forged requests and messages.
    fails!(MPI_ERR_REQUEST, MPI_Request_free(&mut r));
    fails!(MPI_ERR_REQUEST, MPI_Cancel(&mut r));
    fails!(MPI_ERR_REQUEST, MPI_Start(&mut r));
    ok!(MPI_Irecv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, me, 3, W, &mut r));
    let stale = r;
    ok!(MPI_Send(buf.as_ptr().cast(), 1, MPI_INT, me, 3, W));
    ok!(MPI_Wait(&mut r, IGNORE));
    // The same on the direct paths (`W` and `MPI_INT` are their shortcut now; the engine checks
    // a direct send's destination and tag): `MPI_PROC_NULL` moves nothing, bad values fail
    // with their class and the message of the full path.
    ok!(MPI_Send(buf.as_ptr().cast(), 1, MPI_INT, MPI_PROC_NULL, 3, W));
    fails!(MPI_ERR_RANK, MPI_Send(buf.as_ptr().cast(), 1, MPI_INT, -7, 3, W));
    fails!(MPI_ERR_RANK, MPI_Send(buf.as_ptr().cast(), 1, MPI_INT, 7, 3, W));
    check!(error_string(MPI_ERR_RANK).contains('7'), "the rank error names no rank");
    fails!(MPI_ERR_TAG, MPI_Send(buf.as_ptr().cast(), 1, MPI_INT, other, -5, W));
    check!(error_string(MPI_ERR_TAG).contains("send tags are >= 0"), "the send tag error's text");
    ok!(MPI_Recv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, MPI_PROC_NULL, 3, W, &mut st));
    check!(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "receive from MPI_PROC_NULL");
    fails!(MPI_ERR_RANK, MPI_Recv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, -7, 3, W, IGNORE));
    fails!(MPI_ERR_TAG, MPI_Recv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, other, -5, W, IGNORE));
    for mut h in [stale, 0xdead_0000] {
        fails!(MPI_ERR_REQUEST, MPI_Wait(&mut h, IGNORE));
        fails!(MPI_ERR_REQUEST, MPI_Test(&mut h, &mut flag, IGNORE));
        fails!(MPI_ERR_REQUEST, MPI_Request_free(&mut h));
        fails!(MPI_ERR_REQUEST, MPI_Cancel(&mut h));
        fails!(MPI_ERR_REQUEST, MPI_Start(&mut h));
        fails!(MPI_ERR_REQUEST, MPI_Request_get_status(h, &mut flag, IGNORE));
        fails!(MPI_ERR_REQUEST, MPI_Waitany(1, &mut h, &mut idx, IGNORE));
        fails!(MPI_ERR_REQUEST, MPI_Testsome(1, &mut h, &mut n, &mut idx, IGNORE));
        fails!(MPI_ERR_REQUEST, MPI_Testall(1, &mut h, &mut flag, IGNORE));
        let mut msg: MPI_Message = h;
        fails!(MPI_ERR_REQUEST, MPI_Mrecv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, &mut msg, IGNORE));
        fails!(MPI_ERR_REQUEST, MPI_Imrecv(rbuf.as_mut_ptr().cast(), 1, MPI_INT, &mut msg, &mut r));
    }
    // Still working after all that.
    ok!(MPI_Sendrecv(
        buf.as_ptr().cast(),
        4,
        MPI_INT,
        other,
        9,
        rbuf.as_mut_ptr().cast(),
        4,
        MPI_INT,
        other,
        9,
        W,
        &mut st
    ));
    check!(st.MPI_SOURCE == other, "a call after the bad ones");
}

/// The library's text for error code `rc` (the details of the last error of its class).
fn error_string(rc: c_int) -> String {
    let mut text = vec![0u8; MPI_MAX_ERROR_STRING as usize];
    let mut len: c_int = 0;
    // SAFETY: `text` holds MPI_MAX_ERROR_STRING bytes, as the call requires.
    unsafe { MPI_Error_string(rc, text.as_mut_ptr().cast(), &mut len) };
    String::from_utf8_lossy(&text[..len.max(0) as usize]).into_owned()
}
