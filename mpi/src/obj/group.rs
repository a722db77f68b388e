//! Groups: ordered sets of processes, named by world rank, and the group functions
//! (`MPI_Comm_group`, set operations, rank translation, comparison). `MPI_GROUP_EMPTY` is the
//! predefined empty group; created groups live in `Mpi::groups`.

use std::ffi::c_int;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::handle::{looks_like, Kind};
use crate::state::{call, Mpi, On};
use crate::{export, put};

/// One group: the world ranks of its members, in group-rank order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) ranks: Vec<u32>,
}

impl Group {
    /// The group rank of world rank `w`, if a member.
    pub(crate) fn rank_of(&self, w: u32) -> Option<usize> {
        self.ranks.iter().position(|&r| r == w)
    }
}

/// The error for a handle that names no live group.
#[cold]
fn invalid(h: MPI_Group) -> MpiErr {
    if h == MPI_GROUP_NULL {
        err!(MPI_ERR_GROUP, "invalid group: MPI_GROUP_NULL")
    } else if looks_like(Kind::Group, h) {
        err!(MPI_ERR_GROUP, "invalid group {h:#x}: already freed")
    } else {
        err!(MPI_ERR_GROUP, "invalid group {h:#x}: not a group handle")
    }
}

impl Mpi {
    /// The members of group `h` (`MPI_GROUP_EMPTY` or a live created group).
    pub(crate) fn group(&self, h: MPI_Group) -> MpiResult<Group> {
        if h == MPI_GROUP_EMPTY {
            return Ok(Group::default());
        }
        self.groups.borrow().get(h).cloned().ok_or_else(|| invalid(h))
    }

    /// A handle for `g` (an empty group is `MPI_GROUP_EMPTY`).
    fn new_group(&self, g: Group) -> MPI_Group {
        if g.ranks.is_empty() {
            MPI_GROUP_EMPTY
        } else {
            self.groups.borrow_mut().insert(g)
        }
    }
}

/// `n` ranks from the array `p`, each a rank of a group of `size`, distinct.
///
/// # Safety
/// A non-null `p` must hold `n` ints.
unsafe fn rank_list(p: *const c_int, n: c_int, size: usize) -> MpiResult<Vec<usize>> {
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "invalid number of ranks {n}"));
    }
    if n > 0 && p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `ranks` is NULL"));
    }
    // SAFETY: `p` holds `n` ints by the caller's contract (checked non-null when n > 0).
    let v = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p, n as usize) } };
    let mut seen = vec![false; size];
    v.iter()
        .map(|&r| {
            if r < 0 || r as usize >= size {
                return Err(err!(MPI_ERR_RANK, "invalid rank {r} for a group of {size}"));
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(err!(MPI_ERR_RANK, "rank {r} is listed twice"));
            }
            Ok(r as usize)
        })
        .collect()
}

/// The ranks named by `n` triplets `(first, last, stride)`, in order, for a group of `size`.
///
/// # Safety
/// A non-null `p` must hold `n` triplets.
unsafe fn range_list(p: *const [c_int; 3], n: c_int, size: usize) -> MpiResult<Vec<usize>> {
    if n < 0 {
        return Err(err!(MPI_ERR_ARG, "invalid number of ranges {n}"));
    }
    if n > 0 && p.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `ranges` is NULL"));
    }
    // SAFETY: as above.
    let v = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p, n as usize) } };
    let mut out = Vec::new();
    let mut seen = vec![false; size];
    for &[first, last, stride] in v {
        if stride == 0 {
            return Err(err!(MPI_ERR_ARG, "range ({first}, {last}, 0): stride 0"));
        }
        let ok = |r: c_int| r >= 0 && (r as usize) < size;
        if !ok(first) || !ok(last) {
            return Err(err!(MPI_ERR_RANK, "range ({first}, {last}, {stride}) outside a group of {size}"));
        }
        if (stride > 0 && first > last) || (stride < 0 && first < last) {
            return Err(err!(MPI_ERR_ARG, "range ({first}, {last}, {stride}) is empty"));
        }
        let mut r = first as i64;
        while (stride > 0 && r <= last as i64) || (stride < 0 && r >= last as i64) {
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(err!(MPI_ERR_RANK, "rank {r} is in two ranges"));
            }
            out.push(r as usize);
            r += stride as i64;
        }
    }
    Ok(out)
}

/// The group `g` without the ranks `drop` (group order kept).
fn without(g: &Group, drop: &[usize]) -> Group {
    let mut gone = vec![false; g.ranks.len()];
    for &r in drop {
        gone[r] = true;
    }
    Group { ranks: g.ranks.iter().zip(gone).filter(|(_, x)| !x).map(|(&w, _)| w).collect() }
}

/// Store a new group in `*out`.
///
/// # Safety
/// A non-null `out` must be valid for a write.
unsafe fn give(m: &Mpi, out: *mut MPI_Group, g: Group) -> MpiResult {
    if out.is_null() {
        return Err(err!(MPI_ERR_ARG, "invalid argument: `newgroup` is NULL"));
    }
    let h = m.new_group(g);
    // SAFETY: checked non-null; valid by the caller's contract.
    unsafe { put(out, h, "newgroup") }
}

export! {
    /// `MPI_Comm_group`: the group of `comm`.
    fn MPI_Comm_group / PMPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) {
        call("MPI_Comm_group", On::Comm(comm), |m| {
            let ranks = m.core.comm_group(m.comm(comm)?)?;
            // SAFETY: output pointer from the caller.
            unsafe { give(m, group, Group { ranks }) }
        })
    }
}

export! {
    /// `MPI_Group_size`.
    fn MPI_Group_size / PMPI_Group_size(group: MPI_Group, size: *mut c_int) {
        call("MPI_Group_size", On::NoObject, |m| {
            let n = m.group(group)?.ranks.len();
            // SAFETY: output pointer from the caller.
            unsafe { put(size, n as c_int, "size") }
        })
    }
}

export! {
    /// `MPI_Group_rank`: this process's rank in the group, or `MPI_UNDEFINED`.
    fn MPI_Group_rank / PMPI_Group_rank(group: MPI_Group, rank: *mut c_int) {
        call("MPI_Group_rank", On::NoObject, |m| {
            let g = m.group(group)?;
            let me = m.core.comm_rank(m.core.world())?;
            let r = g.rank_of(me).map_or(MPI_UNDEFINED, |r| r as c_int);
            // SAFETY: output pointer from the caller.
            unsafe { put(rank, r, "rank") }
        })
    }
}

export! {
    /// `MPI_Group_incl`: the listed ranks, in the listed order.
    fn MPI_Group_incl / PMPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) {
        call("MPI_Group_incl", On::NoObject, |m| {
            let g = m.group(group)?;
            // SAFETY: `ranks` holds `n` ints by the caller's contract.
            let list = unsafe { rank_list(ranks, n, g.ranks.len())? };
            let ng = Group { ranks: list.iter().map(|&r| g.ranks[r]).collect() };
            // SAFETY: output pointer from the caller.
            unsafe { give(m, newgroup, ng) }
        })
    }
}

export! {
    /// `MPI_Group_excl`: the group without the listed ranks.
    fn MPI_Group_excl / PMPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) {
        call("MPI_Group_excl", On::NoObject, |m| {
            let g = m.group(group)?;
            // SAFETY: `ranks` holds `n` ints by the caller's contract.
            let list = unsafe { rank_list(ranks, n, g.ranks.len())? };
            // SAFETY: output pointer from the caller.
            unsafe { give(m, newgroup, without(&g, &list)) }
        })
    }
}

export! {
    /// `MPI_Group_range_incl`: the ranks of the `(first, last, stride)` triplets, in order.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: MPI_Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut MPI_Group) {
        call("MPI_Group_range_incl", On::NoObject, |m| {
            let g = m.group(group)?;
            // SAFETY: `ranges` holds `n` triplets by the caller's contract.
            let list = unsafe { range_list(ranges, n, g.ranks.len())? };
            let ng = Group { ranks: list.iter().map(|&r| g.ranks[r]).collect() };
            // SAFETY: output pointer from the caller.
            unsafe { give(m, newgroup, ng) }
        })
    }
}

export! {
    /// `MPI_Group_range_excl`: the group without the ranks of the triplets.
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: MPI_Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut MPI_Group) {
        call("MPI_Group_range_excl", On::NoObject, |m| {
            let g = m.group(group)?;
            // SAFETY: `ranges` holds `n` triplets by the caller's contract.
            let list = unsafe { range_list(ranges, n, g.ranks.len())? };
            // SAFETY: output pointer from the caller.
            unsafe { give(m, newgroup, without(&g, &list)) }
        })
    }
}

/// The set operations: union (all of `a`, then the members of `b` not in `a`), intersection
/// and difference (members of `a` in / not in `b`, in `a`'s order).
#[derive(Clone, Copy)]
enum SetOp {
    Union,
    Intersection,
    Difference,
}

fn set_op(op: SetOp, a: &Group, b: &Group) -> Group {
    let ranks = match op {
        SetOp::Union => {
            a.ranks.iter().copied().chain(b.ranks.iter().copied().filter(|w| !a.ranks.contains(w))).collect()
        }
        SetOp::Intersection => a.ranks.iter().copied().filter(|w| b.ranks.contains(w)).collect(),
        SetOp::Difference => a.ranks.iter().copied().filter(|w| !b.ranks.contains(w)).collect(),
    };
    Group { ranks }
}

/// Run set operation `op` for the exported function `name`.
///
/// # Safety
/// A non-null `out` must be valid for a write.
unsafe fn set_call(name: &'static str, op: SetOp, a: MPI_Group, b: MPI_Group, out: *mut MPI_Group) -> c_int {
    call(name, On::NoObject, |m| {
        let g = set_op(op, &m.group(a)?, &m.group(b)?);
        // SAFETY: by this function's contract.
        unsafe { give(m, out, g) }
    })
}

export! {
    /// `MPI_Group_union`.
    fn MPI_Group_union / PMPI_Group_union(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) {
        // SAFETY: output pointer from the caller.
        unsafe { set_call("MPI_Group_union", SetOp::Union, a, b, newgroup) }
    }
}

export! {
    /// `MPI_Group_intersection`.
    fn MPI_Group_intersection / PMPI_Group_intersection(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) {
        // SAFETY: output pointer from the caller.
        unsafe { set_call("MPI_Group_intersection", SetOp::Intersection, a, b, newgroup) }
    }
}

export! {
    /// `MPI_Group_difference`.
    fn MPI_Group_difference / PMPI_Group_difference(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) {
        // SAFETY: output pointer from the caller.
        unsafe { set_call("MPI_Group_difference", SetOp::Difference, a, b, newgroup) }
    }
}

export! {
    /// `MPI_Group_translate_ranks`: the rank in `b` of each listed rank of `a`
    /// (`MPI_UNDEFINED` if not a member; `MPI_PROC_NULL` stays `MPI_PROC_NULL`).
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(a: MPI_Group, n: c_int, ranks_a: *const c_int, b: MPI_Group, ranks_b: *mut c_int) {
        call("MPI_Group_translate_ranks", On::NoObject, |m| {
            let (ga, gb) = (m.group(a)?, m.group(b)?);
            if n < 0 {
                return Err(err!(MPI_ERR_ARG, "invalid number of ranks {n}"));
            }
            if n > 0 && (ranks_a.is_null() || ranks_b.is_null()) {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `ranks1` or `ranks2` is NULL"));
            }
            for i in 0..n as usize {
                // SAFETY: both arrays hold `n` ints by the caller's contract.
                let r = unsafe { *ranks_a.add(i) };
                let t = if r == MPI_PROC_NULL {
                    MPI_PROC_NULL
                } else if r < 0 || r as usize >= ga.ranks.len() {
                    return Err(err!(MPI_ERR_RANK, "invalid rank {r} for a group of {}", ga.ranks.len()));
                } else {
                    gb.rank_of(ga.ranks[r as usize]).map_or(MPI_UNDEFINED, |x| x as c_int)
                };
                // SAFETY: as above.
                unsafe { *ranks_b.add(i) = t };
            }
            Ok(())
        })
    }
}

export! {
    /// `MPI_Group_compare`: `MPI_IDENT` (same members, same order), `MPI_SIMILAR` (same
    /// members), `MPI_UNEQUAL`.
    fn MPI_Group_compare / PMPI_Group_compare(a: MPI_Group, b: MPI_Group, result: *mut c_int) {
        call("MPI_Group_compare", On::NoObject, |m| {
            let (ga, gb) = (m.group(a)?, m.group(b)?);
            let r = if ga == gb {
                MPI_IDENT
            } else {
                let (mut sa, mut sb) = (ga.ranks, gb.ranks);
                sa.sort_unstable();
                sb.sort_unstable();
                if sa == sb { MPI_SIMILAR } else { MPI_UNEQUAL }
            };
            // SAFETY: output pointer from the caller.
            unsafe { put(result, r, "result") }
        })
    }
}

export! {
    /// `MPI_Group_free`: frees a created group and sets the handle to `MPI_GROUP_NULL`
    /// (freeing `MPI_GROUP_EMPTY` only resets the handle).
    fn MPI_Group_free / PMPI_Group_free(group: *mut MPI_Group) {
        call("MPI_Group_free", On::NoObject, |m| {
            if group.is_null() {
                return Err(err!(MPI_ERR_ARG, "invalid argument: `group` is NULL"));
            }
            // SAFETY: non-null in/out pointer from the caller.
            let h = unsafe { *group };
            if h != MPI_GROUP_EMPTY && m.groups.borrow_mut().remove(h).is_none() {
                return Err(invalid(h));
            }
            // SAFETY: as above.
            unsafe { *group = MPI_GROUP_NULL };
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations_keep_the_standards_order() {
        let a = Group { ranks: vec![3, 1, 4] };
        let b = Group { ranks: vec![5, 4, 1, 0] };
        assert_eq!(set_op(SetOp::Union, &a, &b).ranks, [3, 1, 4, 5, 0]);
        assert_eq!(set_op(SetOp::Intersection, &a, &b).ranks, [1, 4]);
        assert_eq!(set_op(SetOp::Difference, &a, &b).ranks, [3]);
        assert_eq!(without(&b, &[0, 2]).ranks, [4, 0]);
    }

    #[test]
    fn ranges_expand_and_reject_bad_triplets() {
        // SAFETY: pointers to local arrays of the given lengths.
        unsafe {
            assert_eq!(range_list([[0, 6, 3], [5, 1, -4]].as_ptr(), 2, 8).unwrap(), [0, 3, 6, 5, 1]);
            assert_eq!(range_list([[0, 4, 4], [7, 2, -5]].as_ptr(), 2, 8).unwrap(), [0, 4, 7, 2]);
            let e = range_list([[0, 6, 3], [5, 1, -2]].as_ptr(), 2, 8).unwrap_err();
            assert_eq!(e.class, MPI_ERR_RANK, "rank 3 in both ranges");
            let e = range_list([[0, 4, 2], [4, 4, 1]].as_ptr(), 2, 8).unwrap_err();
            assert_eq!(e.class, MPI_ERR_RANK, "rank 4 twice");
            assert_eq!(range_list([[0, 9, 1]].as_ptr(), 1, 8).unwrap_err().class, MPI_ERR_RANK);
            assert_eq!(range_list([[0, 3, 0]].as_ptr(), 1, 8).unwrap_err().class, MPI_ERR_ARG);
        }
    }
}
