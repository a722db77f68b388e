//! Groups: ordered sets of processes, named by world rank, the set operations and rank
//! translation on them, and the process's group table. `MPI_GROUP_EMPTY` is the predefined
//! empty group; created groups live in the table. The group functions are in `bind/group.rs`.

use std::ffi::c_int;

use std::cell::RefCell;

use crate::abi::*;
use crate::error::{err, MpiErr, MpiResult};
use crate::handle::{looks_like, Kind, Table};
use crate::state::{Mpi, Owned};

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
pub(crate) fn invalid(h: MPI_Group) -> MpiErr {
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
        self.groups().borrow().get(h).cloned().ok_or_else(|| invalid(h))
    }

    /// A handle for `g` (an empty group is `MPI_GROUP_EMPTY`).
    pub(crate) fn new_group(&self, g: Group) -> MPI_Group {
        if g.ranks.is_empty() {
            MPI_GROUP_EMPTY
        } else {
            self.groups().borrow_mut().insert(g)
        }
    }
}

/// The ranks named by `n` triplets `(first, last, stride)`, in order, for a group of `size`.
///
/// # Safety
/// A non-null `p` must hold `n` triplets.
pub(crate) unsafe fn range_list(p: *const [c_int; 3], n: c_int, size: usize) -> MpiResult<Vec<usize>> {
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
pub(crate) fn without(g: &Group, drop: &[usize]) -> Group {
    let mut gone = vec![false; g.ranks.len()];
    for &r in drop {
        gone[r] = true;
    }
    Group { ranks: g.ranks.iter().zip(gone).filter(|(_, x)| !x).map(|(&w, _)| w).collect() }
}

/// The set operations: union (all of `a`, then the members of `b` not in `a`), intersection
/// and difference (members of `a` in / not in `b`, in `a`'s order).
#[derive(Clone, Copy)]
pub(crate) enum SetOp {
    Union,
    Intersection,
    Difference,
}

pub(crate) fn set_op(op: SetOp, a: &Group, b: &Group) -> Group {
    let ranks = match op {
        SetOp::Union => {
            a.ranks.iter().copied().chain(b.ranks.iter().copied().filter(|w| !a.ranks.contains(w))).collect()
        }
        SetOp::Intersection => a.ranks.iter().copied().filter(|w| b.ranks.contains(w)).collect(),
        SetOp::Difference => a.ranks.iter().copied().filter(|w| !b.ranks.contains(w)).collect(),
    };
    Group { ranks }
}

/// The process's table of groups (see [`Owned`]).
static GROUPS: Owned<RefCell<Table<Group>>> = Owned::new();

impl Mpi {
    /// The table of groups.
    #[inline(always)]
    pub(crate) fn groups(&self) -> &RefCell<Table<Group>> {
        GROUPS.get(self)
    }
}

/// Make the table of groups (`MPI_Init`, before the instance is installed).
pub(crate) fn make_table(table: Table<Group>) {
    GROUPS.make(RefCell::new(table));
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
