//! How big a collective's buffers must be at one rank: the one table of send and receive
//! element counts per collective, and of which count/displacement arrays a rank reads. The
//! collectives validate a call with it, and front ends that receive pointers without lengths
//! (C, MPI) size the buffers with it.

use weft_engine::{Error, Result};

use crate::{Kind, Spec};

/// Which per-rank count and displacement arrays a call reads at one rank. The others are
/// ignored there (MPI: "significant only at root"), so a front end must not read them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrays {
    /// `scounts` (sendcounts).
    pub scounts: bool,
    /// `sdispls`.
    pub sdispls: bool,
    /// `rcounts` (recvcounts).
    pub rcounts: bool,
    /// `rdispls`.
    pub rdispls: bool,
}

/// The arrays `kind` reads at a rank that is (`at_root`) or is not its root.
pub fn arrays(kind: Kind, at_root: bool) -> Arrays {
    let none = Arrays::default();
    let send = Arrays { scounts: true, sdispls: true, ..none };
    let recv = Arrays { rcounts: true, rdispls: true, ..none };
    match kind {
        Kind::Gatherv if at_root => recv,
        Kind::Scatterv if at_root => send,
        Kind::Allgatherv => recv,
        Kind::Alltoallv => Arrays { scounts: true, sdispls: true, rcounts: true, rdispls: true },
        Kind::ReduceScatter => Arrays { rcounts: true, ..none },
        _ => none,
    }
}

/// Bytes this rank's send and receive buffers must hold for `spec` on a communicator of `n`
/// ranks where this rank is `rank`. Checks the arrays the call reads (one entry per rank) and
/// the per-rank counts that must agree with this rank's own count; a size that overflows
/// `usize` is an error.
pub fn needs(spec: &Spec, rank: u32, n: u32) -> Result<(usize, usize)> {
    let (k, c, n_) = (spec.kind, spec.count, n as usize);
    let root = rank == spec.root;
    let overflow = || Error::InvalidArg(format!("{}: buffer size overflows usize", k.name()));
    let mul = |a: usize, b: usize| a.checked_mul(b).ok_or_else(overflow);
    let reads = arrays(k, root);
    for (on, v, what) in [
        (reads.scounts, spec.scounts, "sendcounts"),
        (reads.sdispls, spec.sdispls, if k == Kind::Alltoallv { "sdispls" } else { "displs" }),
        (reads.rcounts, spec.rcounts, "recvcounts"),
        (reads.rdispls, spec.rdispls, if k == Kind::Alltoallv { "rdispls" } else { "displs" }),
    ] {
        if on && v.len() < n_ {
            return Err(Error::InvalidArg(format!(
                "{}: {what} has {} entries, the communicator {n}",
                k.name(),
                v.len()
            )));
        }
    }
    let own_count = |what: &str| -> Result<()> {
        let rc = spec.rcounts[rank as usize];
        if rc != c {
            return Err(Error::InvalidArg(format!(
                "{}: {what}recvcounts[{rank}] = {rc} but the send count is {c}",
                k.name()
            )));
        }
        Ok(())
    };
    let span = |counts: &[usize], displs: &[usize]| -> Result<usize> {
        counts[..n_]
            .iter()
            .zip(&displs[..n_])
            .try_fold(0usize, |m, (&c, &d)| c.checked_add(d).map(|e| m.max(e)))
            .ok_or_else(overflow)
    };
    let (s, r) = match k {
        Kind::Barrier => (0, 0),
        Kind::Bcast => (0, c),
        Kind::Reduce => (c, if root { c } else { 0 }),
        Kind::Allreduce | Kind::Scan | Kind::Exscan => (c, c),
        Kind::Gather => (c, if root { mul(n_, c)? } else { 0 }),
        Kind::Gatherv if root => {
            own_count("root's ")?;
            (c, span(spec.rcounts, spec.rdispls)?)
        }
        Kind::Gatherv => (c, 0),
        Kind::Scatter => (if root { mul(n_, c)? } else { 0 }, c),
        Kind::Scatterv => (if root { span(spec.scounts, spec.sdispls)? } else { 0 }, c),
        Kind::Allgather => (c, mul(n_, c)?),
        Kind::Allgatherv => {
            own_count("")?;
            (c, span(spec.rcounts, spec.rdispls)?)
        }
        Kind::Alltoall => (mul(n_, c)?, mul(n_, c)?),
        Kind::Alltoallv => (span(spec.scounts, spec.sdispls)?, span(spec.rcounts, spec.rdispls)?),
        Kind::ReduceScatterBlock => (mul(n_, c)?, c),
        Kind::ReduceScatter => {
            let total =
                spec.rcounts[..n_].iter().try_fold(0usize, |t, &x| t.checked_add(x)).ok_or_else(overflow)?;
            (total, spec.rcounts[rank as usize])
        }
    };
    let es = spec.dtype.size();
    Ok((mul(s, es)?, mul(r, es)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn sizes_follow_counts() {
        let mut s = Spec::new(Kind::Gather, DType::F64);
        s.count = 3;
        s.root = 1;
        assert_eq!(needs(&s, 1, 4).ok(), Some((24, 96)));
        assert_eq!(needs(&s, 0, 4).ok(), Some((24, 0)));
        s.kind = Kind::ReduceScatter;
        let rc = [1usize, 2, 3];
        s.rcounts = &rc;
        assert_eq!(needs(&s, 2, 3).ok(), Some((48, 24)));
    }

    #[test]
    fn short_arrays_and_overflow_are_errors() {
        let mut s = Spec::new(Kind::Allgatherv, DType::U8);
        let rc = [1usize];
        s.rcounts = &rc;
        s.rdispls = &rc;
        s.count = 1;
        assert!(needs(&s, 0, 2).is_err(), "one entry for two ranks");
        let mut s = Spec::new(Kind::Alltoall, DType::U64);
        s.count = usize::MAX / 2;
        assert!(needs(&s, 0, 4).is_err(), "overflow");
    }

    #[test]
    fn only_significant_arrays_are_read() {
        assert_eq!(arrays(Kind::Gatherv, false), Arrays::default());
        assert!(arrays(Kind::Gatherv, true).rcounts);
        assert!(!arrays(Kind::ReduceScatter, false).rdispls);
        assert!(arrays(Kind::Alltoallv, false).sdispls);
    }
}
