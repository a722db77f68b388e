//! OSU's output: comment lines start with `#`; a result line is `size value...` (the first
//! value column is the one reported: latency in µs, bandwidth in MB/s), or a single value for
//! the benchmarks without sizes (barrier).

/// `(size, value)` pairs of one run; size 0 for a benchmark without sizes.
pub fn results(out: &str) -> Vec<(u64, f64)> {
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            match cols.as_slice() {
                [v] => v.parse().ok().map(|v| (0, v)),
                [s, v, ..] => Some((s.parse().ok()?, v.parse().ok()?)),
                [] => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_and_unsized_results() {
        let lat = "# OSU MPI Latency Test v7.2\n# Size          Latency (us)\n1                       0.21\n8  0.25\n";
        assert_eq!(results(lat), vec![(1, 0.21), (8, 0.25)]);
        let bar = "# OSU MPI Barrier Latency Test v7.2\n# Avg Latency(us)\n             0.54\n";
        assert_eq!(results(bar), vec![(0, 0.54)]);
        let coll = "# Size       Avg Latency(us)   Min   Max  Iterations\n8   1.10   1.0  1.2  1000\n";
        assert_eq!(results(coll), vec![(8, 1.10)]);
        assert!(results("rank 1: symbol lookup error\n").is_empty());
    }
}
