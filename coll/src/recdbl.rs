//! Recursive doubling: allreduce (any size: the ranks beyond the largest power of two fold
//! into a neighbour first, as in MPICH, which keeps rank order for non-commutative
//! operations), allgather (powers of two), inclusive and exclusive scan.

use crate::schedule::{Region, ScheduleBuilder};

/// Folding of `n` ranks onto a power of two: `(p, rem)` with `p` the largest power of two
/// ≤ n and `rem = n − p`.
pub fn fold(n: u32) -> (u32, u32) {
    let p = if n == 0 { 1 } else { 1 << (31 - n.leading_zeros()) };
    (p, n - p)
}

/// Rank in the folded group, `None` for ranks that sit out.
pub fn newrank(rank: u32, rem: u32) -> Option<u32> {
    if rank < 2 * rem {
        (!rank.is_multiple_of(2)).then_some(rank / 2)
    } else {
        Some(rank - rem)
    }
}

/// Real rank of a folded rank.
pub fn real(nr: u32, rem: u32) -> u32 {
    if nr < rem {
        nr * 2 + 1
    } else {
        nr + rem
    }
}

/// Fold in: even ranks below 2·rem give their data to the odd neighbour.
pub fn fold_in(b: &mut ScheduleBuilder, rank: u32, rem: u32, data: Region) {
    if rank < 2 * rem {
        if rank.is_multiple_of(2) {
            b.send(rank + 1, data);
        } else {
            let t = b.tmp(data.len);
            b.recv(rank - 1, t);
            b.reduce(t, data, true);
        }
        b.next();
    }
}

/// Fold out: odd ranks below 2·rem return the result to the even neighbour.
pub fn fold_out(b: &mut ScheduleBuilder, rank: u32, rem: u32, data: Region) {
    if rank < 2 * rem {
        if rank % 2 == 1 {
            b.send(rank - 1, data);
        } else {
            b.recv(rank + 1, data);
        }
        b.next();
    }
}

/// Allreduce of `data` (this rank's contribution in place) by recursive doubling.
pub fn allreduce(b: &mut ScheduleBuilder, rank: u32, n: u32, data: Region) {
    let (p, rem) = fold(n);
    fold_in(b, rank, rem, data);
    if let Some(nr) = newrank(rank, rem) {
        let t = b.tmp(data.len);
        let mut mask = 1;
        while mask < p {
            let dst = real(nr ^ mask, rem);
            b.send(dst, data);
            b.recv(dst, t);
            b.reduce(t, data, dst < rank);
            b.next();
            mask <<= 1;
        }
    }
    fold_out(b, rank, rem, data);
}

/// Allreduce of `send` into `data` by recursive doubling. When no rank folds (`n` a power of
/// two), the first exchange sends `send` itself and the copy into `data` runs among that
/// round's local steps, before its reduction: the first message then leaves at once instead
/// of after a round of its own that only copies (at 2 ranks that round was a third of the
/// run's steps). Otherwise `send` is copied into `data` first and [`allreduce`] runs on it.
pub fn allreduce_from(b: &mut ScheduleBuilder, rank: u32, n: u32, send: Region, data: Region) {
    let (p, rem) = fold(n);
    if rem > 0 || p < 2 {
        b.copy(send, data);
        b.next();
        allreduce(b, rank, n, data);
        return;
    }
    let t = b.tmp(data.len);
    let mut mask = 1;
    while mask < p {
        let dst = rank ^ mask;
        b.send(dst, if mask == 1 { send } else { data });
        b.recv(dst, t);
        if mask == 1 {
            b.copy(send, data);
        }
        b.reduce(t, data, dst < rank);
        b.next();
        mask <<= 1;
    }
}

/// Allgather by recursive doubling (n a power of two): block i of `blk` bytes at offset
/// `i·blk` of `base`; this rank's block is in place.
pub fn allgather(b: &mut ScheduleBuilder, rank: u32, n: u32, base: Region, blk: usize) {
    debug_assert!(n.is_power_of_two());
    let mut mask = 1;
    while mask < n {
        let dst = rank ^ mask;
        let mine = (rank / mask * mask) as usize;
        let theirs = (dst / mask * mask) as usize;
        b.send(dst, base.sub(mine * blk, mask as usize * blk));
        b.recv(dst, base.sub(theirs * blk, mask as usize * blk));
        b.next();
        mask <<= 1;
    }
}

/// Inclusive (`exclusive` = false) or exclusive scan of `send` into `recv` (MPICH's
/// recursive doubling; keeps rank order). Rank 0's `recv` is untouched by an exclusive scan.
pub fn scan(b: &mut ScheduleBuilder, rank: u32, n: u32, send: Region, recv: Region, exclusive: bool) {
    let partial = b.tmp(send.len);
    let t = b.tmp(send.len);
    b.copy(send, partial);
    if !exclusive {
        b.copy(send, recv);
    }
    b.next();
    let mut have = !exclusive;
    let mut mask = 1;
    while mask < n {
        let dst = rank ^ mask;
        if dst < n {
            b.send(dst, partial);
            b.recv(dst, t);
            if rank > dst {
                b.reduce(t, partial, true);
                if have {
                    b.reduce(t, recv, true);
                } else {
                    b.copy(t, recv);
                    have = true;
                }
            } else {
                b.reduce(t, partial, false);
            }
            b.next();
        }
        mask <<= 1;
    }
}

/// Linear (chain) scan: rank r waits for the prefix of ranks < r, then passes its own on.
pub fn scan_linear(b: &mut ScheduleBuilder, rank: u32, n: u32, send: Region, recv: Region, exclusive: bool) {
    let acc = b.tmp(send.len);
    b.copy(send, acc);
    b.next();
    if rank > 0 {
        let t = b.tmp(send.len);
        b.recv(rank - 1, t);
        if exclusive {
            b.copy(t, recv);
        }
        b.reduce(t, acc, true);
        b.next();
    }
    if !exclusive {
        b.copy(acc, recv);
    }
    if rank + 1 < n {
        b.send(rank + 1, acc);
    }
    b.next();
}
