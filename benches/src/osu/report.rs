//! The comparison table: per benchmark and size, the median over rounds on each library, and
//! the ratios weft/MPICH and MPI/native as medians of per-round ratios with their quartiles
//! (for latencies lower is better, for bandwidths higher).
//!
//! A ratio is formed within a round, from runs made back to back, so a change of the machine's
//! speed between rounds (this kind of shared machine has slow and fast phases) moves both of its
//! terms and not the ratio; the quartiles of the per-round ratios say how far one round's ratio
//! can be trusted.

use std::collections::BTreeMap;

use crate::report::median;

/// One OSU result line of one run.
#[derive(Clone, Debug)]
pub struct Row {
    pub round: u32,
    pub bench: String,
    pub size: u64,
    pub lib: &'static str,
    pub value: f64,
}

/// Median and quartiles of a sample (NaN when empty).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        v.retain(|x| x.is_finite());
        v.sort_by(f64::total_cmp);
        let q = |p: f64| -> f64 {
            if v.is_empty() {
                return f64::NAN;
            }
            // Linear interpolation between closest ranks.
            let x = p * (v.len() - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
        };
        Spread { q1: q(0.25), median: q(0.5), q3: q(0.75) }
    }
}

/// One (benchmark, size) of the table.
struct Cell {
    mpich: f64,
    weft: f64,
    native: f64,
    /// weft/MPICH per round.
    vs_mpich: Spread,
    /// weft/native per round (NaN without native runs).
    vs_native: Spread,
}

/// Results reduced over rounds.
pub struct Table {
    cells: BTreeMap<(String, u64), Cell>,
}

/// Bandwidth benchmarks report MB/s (higher is better); the others µs.
fn is_bandwidth(bench: &str) -> bool {
    matches!(bench, "bw" | "bibw" | "mbw_mr" | "bw_persistent" | "bibw_persistent")
}

/// `num/den` of the rounds where both were measured.
fn paired(num: &BTreeMap<u32, f64>, den: &BTreeMap<u32, f64>) -> Spread {
    Spread::of(num.iter().filter_map(|(r, a)| Some(a / den.get(r)?)).collect())
}

impl Table {
    pub fn new(rows: &[Row]) -> Table {
        // Per (benchmark, size): round -> value, for MPICH, weft and native.
        type Rounds = [BTreeMap<u32, f64>; 3];
        let mut by: BTreeMap<(String, u64), Rounds> = BTreeMap::new();
        for r in rows {
            let e = by.entry((r.bench.clone(), r.size)).or_default();
            let i = match r.lib {
                "mpich" => 0,
                "weft" => 1,
                _ => 2,
            };
            e[i].insert(r.round, r.value);
        }
        let values = |m: &BTreeMap<u32, f64>| median(m.values().copied().collect());
        let cells = by
            .into_iter()
            .map(|(k, [m, w, n])| {
                let cell = Cell {
                    mpich: values(&m),
                    weft: values(&w),
                    native: values(&n),
                    vs_mpich: paired(&w, &m),
                    vs_native: paired(&w, &n),
                };
                (k, cell)
            })
            .collect();
        Table { cells }
    }

    pub fn csv(&self) -> String {
        let mut s = String::from("benchmark,size,impl,value,unit\n");
        for ((b, size), c) in &self.cells {
            let unit = if is_bandwidth(b) { "MB/s" } else { "us" };
            s += &format!(
                "osu_{b},{size},mpich,{:.3},{unit}\nosu_{b},{size},weft,{:.3},{unit}\n",
                c.mpich, c.weft
            );
            s += &format!("osu_{b},{size},weft/mpich,{:.4},ratio\n", c.vs_mpich.median);
            if !c.native.is_nan() {
                s += &format!("osu_{b},{size},native,{:.3},{unit}\n", c.native);
                s += &format!("osu_{b},{size},weft/native,{:.4},ratio\n", c.vs_native.median);
            }
        }
        s
    }

    pub fn text(&self, ranks: u32, rounds: u32) -> String {
        let mut s = format!(
            "# Same OSU 7.2 binaries (mpicc_abi) on MPICH 5.0.2 and on weft, {ranks} ranks, {rounds} interleaved rounds\n\
             # values: medians over rounds; ratios: median [quartiles] of the per-round ratios\n\
             # ratio = weft/MPICH (latency: < 1 is faster; bandwidth: > 1 is faster); native = weft-bench's own\n\
             # benchmark of the operation (no MPI layer, OSU's timing loops); mpi/native = the MPI layer's cost\n\
             {:<18} {:>9} {:>12} {:>12} {:>18} {:>12} {:>18}\n",
            "benchmark", "size", "mpich", "weft", "ratio", "native", "mpi/native"
        );
        let spread = |x: &Spread| format!("{:.2} [{:.2}-{:.2}]", x.median, x.q1, x.q3);
        for ((b, size), c) in &self.cells {
            let unit = if is_bandwidth(b) { "MB/s" } else { "us" };
            let size = if *size == 0 { "-".to_string() } else { size.to_string() };
            let native = if c.native.is_nan() {
                format!("{:>12} {:>18}", "-", "-")
            } else {
                format!("{:>9.3} {unit:<2} {:>18}", c.native, spread(&c.vs_native))
            };
            s += &format!(
                "{:<18} {size:>9} {:>9.3} {unit:<2} {:>9.3} {unit:<2} {:>18} {native}\n",
                format!("osu_{b}"),
                c.mpich,
                c.weft,
                spread(&c.vs_mpich)
            );
        }
        s
    }
}

/// Every run's value, one line each (`round,benchmark,size,impl,value`).
pub fn raw(rows: &[Row]) -> String {
    let mut s = String::from("round,benchmark,size,impl,value\n");
    for r in rows {
        s += &format!("{},osu_{},{},{},{}\n", r.round, r.bench, r.size, r.lib, r.value);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(round: u32, lib: &'static str, value: f64) -> Row {
        Row { round, bench: "latency".into(), size: 8, lib, value }
    }

    #[test]
    fn ratios_are_paired_by_round() {
        // Round 1 is twice as slow for both: per-round ratios stay 0.5 and 1.0 exactly.
        let rows = [
            row(0, "mpich", 1.0),
            row(0, "weft", 0.5),
            row(0, "native", 0.5),
            row(1, "mpich", 2.0),
            row(1, "weft", 1.0),
            row(1, "native", 1.0),
            row(2, "mpich", 1.0),
            row(2, "weft", 0.5),
        ];
        let t = Table::new(&rows);
        let c = &t.cells[&("latency".to_string(), 8)];
        assert_eq!(c.vs_mpich, Spread { q1: 0.5, median: 0.5, q3: 0.5 });
        assert_eq!(c.vs_native, Spread { q1: 1.0, median: 1.0, q3: 1.0 });
        assert_eq!(c.mpich, 1.0);
    }

    #[test]
    fn quartiles_interpolate() {
        let s = Spread::of(vec![4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!(s, Spread { q1: 2.0, median: 3.0, q3: 4.0 });
        let s = Spread::of(vec![1.0, 2.0]);
        assert_eq!(s.median, 1.5);
        assert!(Spread::of(vec![]).median.is_nan());
    }
}
