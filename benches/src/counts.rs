//! Sizes, iteration counts and the window of the point-to-point benchmarks (OSU semantics):
//! the worker ([`crate::pt2pt`]) runs them, the report ([`crate::report`]) describes them, and
//! `benches/peers/osu_p2p.c` must use the same.

use crate::Bench;

/// Messages in flight per window (bw, bibw, mr), as in OSU.
pub const WINDOW: usize = 64;
/// Sizes above this use the "large" iteration counts, as in OSU.
pub const LARGE_MESSAGE: u64 = 8192;
/// Largest size the message-rate benchmark reports.
pub const MR_MAX: u64 = 8192;

// Latency: the OSU micro-benchmarks defaults (scaled by --iters-scale).
pub const LAT_ITERS_SMALL: u64 = 10_000;
pub const LAT_SKIP_SMALL: u64 = 100;
pub const LAT_ITERS_LARGE: u64 = 1_000;
pub const LAT_SKIP_LARGE: u64 = 10;
// Window benchmarks (bw, bibw, mr): about WIN_BYTES per timed loop, between WIN_ITERS_MIN and
// WIN_ITERS_MAX windows (OSU's fixed 100 / 20 windows last well under a millisecond for small
// sizes here, far too short on a shared machine); warm-up a tenth of that, at least 2.
pub const WIN_BYTES: u64 = 1 << 29;
pub const WIN_ITERS_MIN: u64 = 20;
pub const WIN_ITERS_MAX: u64 = 1_000;

/// `base * scale`, rounded, at least 1 (identical to `scaled()` in osu_p2p.c).
pub fn scaled(base: u64, scale: f64) -> u64 {
    ((base as f64 * scale + 0.5) as u64).max(1)
}

/// (timed iterations, warm-up iterations) for one benchmark and size (identical to `counts()`
/// in osu_p2p.c).
pub fn counts(bench: Bench, size: u64, scale: f64) -> (u64, u64) {
    let (iters, skip) = if bench == Bench::Latency {
        if size <= LARGE_MESSAGE {
            (LAT_ITERS_SMALL, LAT_SKIP_SMALL)
        } else {
            (LAT_ITERS_LARGE, LAT_SKIP_LARGE)
        }
    } else {
        let iters = (WIN_BYTES / (WINDOW as u64 * size)).clamp(WIN_ITERS_MIN, WIN_ITERS_MAX);
        (iters, (iters / 10).max(2))
    };
    (scaled(iters, scale), scaled(skip, scale))
}

/// The powers of two in `[min, max]` (for `mr`, capped at [`MR_MAX`]).
pub fn sizes(bench: Bench, min: u64, max: u64) -> Vec<u64> {
    let top = if bench == Bench::Mr { max.min(MR_MAX) } else { max };
    std::iter::successors(Some(1u64), |s| Some(s * 2))
        .take_while(|&s| s <= top)
        .filter(|&s| s >= min)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_powers_of_two() {
        assert_eq!(sizes(Bench::Latency, 1, 8), vec![1, 2, 4, 8]);
        assert_eq!(sizes(Bench::Bw, 3, 20), vec![4, 8, 16]);
        assert_eq!(sizes(Bench::Mr, 1, 1 << 22).last(), Some(&8192));
        assert_eq!(sizes(Bench::Latency, 1, 4 << 20).len(), 23);
    }

    #[test]
    fn counts_match_osu() {
        assert_eq!(counts(Bench::Latency, 8192, 1.0), (10_000, 100));
        assert_eq!(counts(Bench::Latency, 16384, 1.0), (1_000, 10));
        assert_eq!(counts(Bench::Bw, 8, 1.0), (1_000, 100));
        assert_eq!(counts(Bench::Bw, 8192, 1.0), (1_000, 100));
        assert_eq!(counts(Bench::Mr, 16384, 1.0), (512, 51));
        assert_eq!(counts(Bench::Bw, 4 << 20, 1.0), (20, 2));
        assert_eq!(counts(Bench::Bibw, 1 << 20, 0.01), (1, 1));
    }
}
