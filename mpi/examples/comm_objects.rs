//! Groups, communicator creation, attributes and info through the exported MPI functions, on
//! every rank of a `weft-run` job (at least 3 ranks). Every check panics on failure (non-zero
//! exit); rank 0 prints `comm_objects OK` at the end. The first argument is the number of
//! (virtual) nodes the job runs on (`weft-run --nodes K` places ranks in contiguous blocks,
//! as even as possible); `MPI_Comm_split_type` must give the ranks of this process's block.

use std::ffi::{c_int, c_void, CString};
use std::ptr::null_mut;

use mpi_abi::abi::*;
use mpi_abi::*;

fn ok(rc: c_int, what: &str) {
    assert_eq!(rc, MPI_SUCCESS, "{what} failed with {rc}");
}

static mut DELETED: c_int = 0;
static mut COPIED: c_int = 0;

unsafe extern "C" fn copy_plus_one(
    _comm: usize,
    _key: c_int,
    _extra: *mut c_void,
    attr_in: *mut c_void,
    attr_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the library hands a valid `void **` output and flag.
    unsafe {
        COPIED += 1;
        *(attr_out as *mut usize) = attr_in as usize + 1;
        *flag = 1;
    }
    MPI_SUCCESS
}

unsafe extern "C" fn count_delete(_comm: usize, _key: c_int, _val: *mut c_void, extra: *mut c_void) -> c_int {
    // SAFETY: `extra` is the address of DELETED, given at keyval creation.
    unsafe { *(extra as *mut c_int) += 1 };
    MPI_SUCCESS
}

fn main() {
    // SAFETY: the whole program calls the MPI ABI with valid pointers to locals.
    unsafe { run() }
}

unsafe fn run() {
    let nodes: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1);
    // SAFETY: every call follows the MPI standard's contract; pointers are to live locals.
    unsafe {
        ok(MPI_Init(null_mut(), null_mut()), "MPI_Init");
        ok(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "set_errhandler");
        ok(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN), "set_errhandler self");
        let (mut rank, mut size) = (0, 0);
        MPI_Comm_rank(MPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mut size);
        assert!(size >= 3, "needs 3 ranks");

        // ---- groups
        let mut world = 0;
        ok(MPI_Comm_group(MPI_COMM_WORLD, &mut world), "Comm_group");
        let mut n = 0;
        MPI_Group_size(world, &mut n);
        assert_eq!(n, size);
        let mut r = -1;
        MPI_Group_rank(world, &mut r);
        assert_eq!(r, rank);
        // Reverse order of the even ranks.
        let evens: Vec<c_int> = (0..size).filter(|r| r % 2 == 0).rev().collect();
        let mut ev = 0;
        ok(MPI_Group_incl(world, evens.len() as c_int, evens.as_ptr(), &mut ev), "incl");
        let mut ev_rank = -1;
        MPI_Group_rank(ev, &mut ev_rank);
        let expect = evens.iter().position(|&x| x == rank).map_or(MPI_UNDEFINED, |p| p as c_int);
        assert_eq!(ev_rank, expect);
        let mut odd = 0;
        let range = [[0, size - 1, 2]];
        ok(MPI_Group_range_excl(world, 1, range.as_ptr(), &mut odd), "range_excl");
        let mut odd_n = 0;
        MPI_Group_size(odd, &mut odd_n);
        assert_eq!(odd_n, size / 2);
        let mut uni = 0;
        ok(MPI_Group_union(ev, odd, &mut uni), "union");
        let mut cmp = 0;
        MPI_Group_compare(uni, world, &mut cmp);
        assert_eq!(cmp, MPI_SIMILAR, "union of evens (reversed) and odds");
        let mut inter = 0;
        ok(MPI_Group_intersection(ev, odd, &mut inter), "intersection");
        assert_eq!(inter, MPI_GROUP_EMPTY);
        let mut diff = 0;
        ok(MPI_Group_difference(world, odd, &mut diff), "difference");
        MPI_Group_compare(diff, ev, &mut cmp);
        assert_eq!(cmp, MPI_SIMILAR);
        let all: Vec<c_int> = (0..size).collect();
        let mut tr = vec![0; size as usize];
        ok(MPI_Group_translate_ranks(world, size, all.as_ptr(), ev, tr.as_mut_ptr()), "translate");
        for w in 0..size {
            let e = evens.iter().position(|&x| x == w).map_or(MPI_UNDEFINED, |p| p as c_int);
            assert_eq!(tr[w as usize], e);
        }
        let mut excl = 0;
        let one = [1];
        ok(MPI_Group_excl(world, 1, one.as_ptr(), &mut excl), "excl");
        MPI_Group_size(excl, &mut n);
        assert_eq!(n, size - 1);
        // Bad input: duplicate ranks, a freed group.
        let dup = [0, 0];
        let mut bad = 0;
        assert_eq!(MPI_Group_incl(world, 2, dup.as_ptr(), &mut bad), MPI_ERR_RANK);
        let mut tmp = odd;
        ok(MPI_Group_free(&mut tmp), "free");
        assert_eq!(tmp, MPI_GROUP_NULL);
        assert_eq!(MPI_Group_size(odd, &mut n), MPI_ERR_GROUP, "freed group");

        // ---- MPI_Comm_create: evens in reversed order; odds get MPI_COMM_NULL.
        let mut ce = 0;
        ok(MPI_Comm_create(MPI_COMM_WORLD, ev, &mut ce), "Comm_create");
        if rank % 2 == 0 {
            let mut cr = -1;
            MPI_Comm_rank(ce, &mut cr);
            assert_eq!(cr, expect);
            // A message ring on the new communicator proves its context works.
            let mut cs = 0;
            MPI_Comm_size(ce, &mut cs);
            let mut v: c_int = 0;
            ok(
                MPI_Allreduce(
                    (&cr as *const c_int).cast(),
                    (&mut v as *mut c_int).cast(),
                    1,
                    MPI_INT,
                    MPI_SUM,
                    ce,
                ),
                "allreduce",
            );
            assert_eq!(v, cs * (cs - 1) / 2);
            ok(MPI_Comm_free(&mut ce), "free ce");
        } else {
            assert_eq!(ce, MPI_COMM_NULL);
        }

        // ---- MPI_Comm_create_group: only the first two world ranks call it.
        if rank < 2 {
            let first = [[0, 1, 1]];
            let mut g2 = 0;
            ok(MPI_Group_range_incl(world, 1, first.as_ptr(), &mut g2), "range_incl");
            let mut c2 = 0;
            ok(MPI_Comm_create_group(MPI_COMM_WORLD, g2, 7, &mut c2), "create_group");
            let mut s2 = 0;
            MPI_Comm_size(c2, &mut s2);
            assert_eq!(s2, 2);
            let mut x: c_int = rank + 10;
            ok(MPI_Bcast((&mut x as *mut c_int).cast(), 1, MPI_INT, 1, c2), "bcast on create_group comm");
            assert_eq!(x, 11);
            ok(MPI_Comm_free(&mut c2), "free c2");
            MPI_Group_free(&mut g2);
        }
        ok(MPI_Barrier(MPI_COMM_WORLD), "barrier");

        // ---- split_type by node (weft-run --nodes K: contiguous blocks).
        let mut node = 0;
        ok(
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &mut node),
            "split_type",
        );
        let mut ns = 0;
        MPI_Comm_size(node, &mut ns);
        let (base, extra) = (size as usize / nodes, size as usize % nodes);
        let block = |r: usize| {
            let big = extra * (base + 1);
            if r < big {
                r / (base + 1)
            } else {
                extra + (r - big) / base
            }
        };
        let mine = (0..size as usize).filter(|&r| block(r) == block(rank as usize)).count();
        assert_eq!(ns as usize, mine, "node communicator size");
        ok(MPI_Comm_free(&mut node), "free node");
        let mut none = 0;
        ok(
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &mut none),
            "split_type undefined",
        );
        assert_eq!(none, MPI_COMM_NULL);
        assert_eq!(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &mut none), MPI_ERR_ARG);

        // ---- predefined attributes
        let mut p: *mut c_int = null_mut();
        let mut flag = 0;
        ok(
            MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, (&mut p as *mut *mut c_int).cast(), &mut flag),
            "TAG_UB",
        );
        assert!(flag == 1 && *p >= 32767, "MPI_TAG_UB");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, (&mut p as *mut *mut c_int).cast(), &mut flag);
        assert_eq!(*p, MPI_PROC_NULL);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, (&mut p as *mut *mut c_int).cast(), &mut flag);
        assert_eq!(*p, MPI_ANY_SOURCE);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, (&mut p as *mut *mut c_int).cast(), &mut flag);
        assert_eq!(*p, size);
        MPI_Comm_get_attr(MPI_COMM_WORLD, attr::MPIX_FT, (&mut p as *mut *mut c_int).cast(), &mut flag);
        assert!(flag == 1 && *p == 1, "MPIX_FT");
        assert_eq!(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, null_mut()), MPI_ERR_KEYVAL);

        // ---- user attributes: copy callback on dup, delete callback on free/delete/replace.
        let mut key = 0;
        let deleted = (&raw mut DELETED).cast::<c_void>();
        ok(
            MPI_Comm_create_keyval(
                copy_plus_one as *const () as usize,
                count_delete as *const () as usize,
                &mut key,
                deleted,
            ),
            "create_keyval",
        );
        let mut key_dup = 0;
        ok(
            MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &mut key_dup, null_mut()),
            "keyval dup",
        );
        let mut key_none = 0;
        ok(
            MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &mut key_none, null_mut()),
            "keyval null",
        );
        let mut d = 0;
        ok(MPI_Comm_dup(MPI_COMM_WORLD, &mut d), "dup");
        ok(MPI_Comm_set_attr(d, key, 41 as *mut c_void), "set");
        ok(MPI_Comm_set_attr(d, key_dup, 7 as *mut c_void), "set dup");
        ok(MPI_Comm_set_attr(d, key_none, 9 as *mut c_void), "set none");
        let mut v: usize = 0;
        ok(MPI_Comm_get_attr(d, key, (&mut v as *mut usize).cast(), &mut flag), "get");
        assert_eq!((flag, v), (1, 41));
        let mut d2 = 0;
        ok(MPI_Comm_dup(d, &mut d2), "dup with attrs");
        assert_eq!((&raw const COPIED).read(), 1);
        MPI_Comm_get_attr(d2, key, (&mut v as *mut usize).cast(), &mut flag);
        assert_eq!((flag, v), (1, 42), "copy callback result");
        MPI_Comm_get_attr(d2, key_dup, (&mut v as *mut usize).cast(), &mut flag);
        assert_eq!((flag, v), (1, 7), "MPI_COMM_DUP_FN");
        MPI_Comm_get_attr(d2, key_none, (&mut v as *mut usize).cast(), &mut flag);
        assert_eq!(flag, 0, "MPI_COMM_NULL_COPY_FN");
        ok(MPI_Comm_set_attr(d, key, 50 as *mut c_void), "replace");
        assert_eq!((&raw const DELETED).read(), 1, "replacing runs the delete callback");
        ok(MPI_Comm_delete_attr(d, key), "delete");
        assert_eq!((&raw const DELETED).read(), 2);
        MPI_Comm_get_attr(d, key, (&mut v as *mut usize).cast(), &mut flag);
        assert_eq!(flag, 0);
        ok(MPI_Comm_free(&mut d2), "free d2");
        assert_eq!((&raw const DELETED).read(), 3, "free runs the delete callback");
        let stale = key;
        ok(MPI_Comm_free_keyval(&mut key), "free_keyval");
        assert_eq!(key, MPI_KEYVAL_INVALID);
        assert_eq!(MPI_Comm_set_attr(d, stale, null_mut()), MPI_ERR_KEYVAL, "freed keyval");
        assert_eq!(MPI_Comm_get_attr(d, 0x7777, (&mut v as *mut usize).cast(), &mut flag), MPI_ERR_KEYVAL);
        ok(MPI_Comm_free(&mut d), "free d");

        // ---- info
        let mut info = 0;
        ok(MPI_Info_create(&mut info), "info create");
        let (k1, v1) = (CString::new("alpha").unwrap(), CString::new("one").unwrap());
        let (k2, v2) = (CString::new("beta").unwrap(), CString::new("two two").unwrap());
        ok(MPI_Info_set(info, k1.as_ptr(), v1.as_ptr()), "set");
        ok(MPI_Info_set(info, k2.as_ptr(), v2.as_ptr()), "set");
        MPI_Info_get_nkeys(info, &mut n);
        assert_eq!(n, 2);
        let mut kb = [0u8; MPI_MAX_INFO_KEY as usize];
        ok(MPI_Info_get_nthkey(info, 1, kb.as_mut_ptr().cast()), "nthkey");
        assert_eq!(std::ffi::CStr::from_bytes_until_nul(&kb).unwrap().to_str().unwrap(), "beta");
        let mut buf = [0u8; 64];
        let mut len: c_int = 4;
        ok(
            MPI_Info_get_string(info, k2.as_ptr(), &mut len, buf.as_mut_ptr().cast(), &mut flag),
            "get_string",
        );
        assert_eq!((flag, len), (1, 8), "value length + 1");
        assert_eq!(&buf[..4], b"two\0", "cut to the buffer");
        let mut vl = 0;
        MPI_Info_get_valuelen(info, k1.as_ptr(), &mut vl, &mut flag);
        assert_eq!((flag, vl), (1, 3));
        MPI_Info_get(info, k1.as_ptr(), 63, buf.as_mut_ptr().cast(), &mut flag);
        assert_eq!(&buf[..4], b"one\0");
        let mut dupi = 0;
        ok(MPI_Info_dup(info, &mut dupi), "info dup");
        ok(MPI_Info_delete(info, k1.as_ptr()), "delete");
        assert_eq!(MPI_Info_delete(info, k1.as_ptr()), MPI_ERR_INFO_NOKEY);
        MPI_Info_get_nkeys(dupi, &mut n);
        assert_eq!(n, 2, "the dup is independent");
        let long_key = CString::new("k".repeat(MPI_MAX_INFO_KEY as usize)).unwrap();
        assert_eq!(MPI_Info_set(info, long_key.as_ptr(), v1.as_ptr()), MPI_ERR_INFO_KEY);
        let long_val = CString::new("v".repeat(MPI_MAX_INFO_VAL as usize)).unwrap();
        assert_eq!(MPI_Info_set(info, k1.as_ptr(), long_val.as_ptr()), MPI_ERR_INFO_VALUE);
        assert_eq!(MPI_Info_set(MPI_INFO_NULL, k1.as_ptr(), v1.as_ptr()), MPI_ERR_INFO);
        assert_eq!(MPI_Info_get_nkeys(MPI_INFO_NULL, &mut n), MPI_ERR_INFO);
        // Communicator hints.
        let mut ci = 0;
        ok(MPI_Comm_dup_with_info(MPI_COMM_WORLD, dupi, &mut ci), "dup_with_info");
        let mut used = 0;
        ok(MPI_Comm_get_info(ci, &mut used), "get_info");
        MPI_Info_get_nkeys(used, &mut n);
        assert_eq!(n, 2);
        ok(MPI_Comm_set_info(ci, info), "set_info");
        MPI_Info_free(&mut used);
        MPI_Comm_get_info(ci, &mut used);
        MPI_Info_get_nkeys(used, &mut n);
        assert_eq!(n, 1);
        let mut req = 0;
        let mut ci2 = 0;
        ok(MPI_Comm_idup(ci, &mut ci2, &mut req), "idup");
        ok(MPI_Wait(&mut req, null_mut()), "wait idup");
        MPI_Comm_compare(ci, ci2, &mut cmp);
        assert_eq!(cmp, MPI_CONGRUENT);
        MPI_Comm_free(&mut ci2);
        MPI_Comm_free(&mut ci);
        MPI_Info_free(&mut used);
        MPI_Info_free(&mut dupi);
        let freed = info;
        ok(MPI_Info_free(&mut info), "info free");
        assert_eq!(info, MPI_INFO_NULL);
        assert_eq!(MPI_Info_get_nkeys(freed, &mut n), MPI_ERR_INFO, "freed info");
        // MPI_INFO_ENV
        let cmd = CString::new("command").unwrap();
        let maxp = CString::new("maxprocs").unwrap();
        len = 64;
        ok(
            MPI_Info_get_string(MPI_INFO_ENV, cmd.as_ptr(), &mut len, buf.as_mut_ptr().cast(), &mut flag),
            "env",
        );
        assert_eq!(flag, 1);
        assert!(std::ffi::CStr::from_bytes_until_nul(&buf)
            .unwrap()
            .to_str()
            .unwrap()
            .contains("comm_objects"));
        len = 64;
        MPI_Info_get_string(MPI_INFO_ENV, maxp.as_ptr(), &mut len, buf.as_mut_ptr().cast(), &mut flag);
        assert_eq!(std::ffi::CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap(), size.to_string());
        assert_eq!(MPI_Info_free(&mut MPI_INFO_ENV.clone()), MPI_ERR_INFO);

        MPI_Group_free(&mut ev);
        MPI_Group_free(&mut uni);
        MPI_Group_free(&mut diff);
        MPI_Group_free(&mut excl);
        MPI_Group_free(&mut world);
        if rank == 0 {
            println!("comm_objects OK");
        }
        ok(MPI_Finalize(), "finalize");
    }
}
