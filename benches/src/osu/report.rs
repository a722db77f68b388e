//! The comparison table: per benchmark and size, the median over rounds on each library and
//! weft's ratio to MPICH (for latencies lower is better, for bandwidths higher).

use std::collections::BTreeMap;

use crate::report::median;

/// One OSU result line of one run.
#[derive(Clone, Debug)]
pub struct Row {
    pub bench: String,
    pub size: u64,
    pub lib: &'static str,
    pub value: f64,
}

/// Results reduced over rounds: (benchmark, size) -> (MPICH, weft, weft-bench native) medians
/// (NaN where not run).
pub struct Table {
    cells: BTreeMap<(String, u64), (f64, f64, f64)>,
}

/// Bandwidth benchmarks report MB/s (higher is better); the others µs.
fn is_bandwidth(bench: &str) -> bool {
    matches!(bench, "bw" | "bibw" | "mbw_mr" | "bw_persistent" | "bibw_persistent")
}

impl Table {
    pub fn new(rows: &[Row]) -> Table {
        // Per (benchmark, size): the MPICH, weft and native values of every round.
        type Samples = (Vec<f64>, Vec<f64>, Vec<f64>);
        let mut by: BTreeMap<(String, u64), Samples> = BTreeMap::new();
        for r in rows {
            let e = by.entry((r.bench.clone(), r.size)).or_default();
            match r.lib {
                "weft" => &mut e.1,
                "native" => &mut e.2,
                _ => &mut e.0,
            }
            .push(r.value);
        }
        let cells = by.into_iter().map(|(k, (m, w, n))| (k, (median(m), median(w), median(n)))).collect();
        Table { cells }
    }

    pub fn csv(&self) -> String {
        let mut s = String::from("benchmark,size,impl,value,unit\n");
        for ((b, size), (m, w, n)) in &self.cells {
            let unit = if is_bandwidth(b) { "MB/s" } else { "us" };
            s += &format!("osu_{b},{size},mpich,{m:.3},{unit}\nosu_{b},{size},weft,{w:.3},{unit}\n");
            if !n.is_nan() {
                s += &format!("osu_{b},{size},native,{n:.3},{unit}\n");
            }
        }
        s
    }

    pub fn text(&self, ranks: u32, rounds: u32) -> String {
        let mut s = format!(
            "# Same OSU 7.2 binaries (mpicc_abi) on MPICH 5.0.2 and on weft, {ranks} ranks, median of {rounds} interleaved rounds\n\
             # ratio = weft/MPICH (latency: < 1 is faster; bandwidth: > 1 is faster); native = weft-bench's own\n\
             # benchmark of the operation (no MPI layer, OSU's timing loops); mpi/native = the MPI layer's cost\n\
             {:<18} {:>9} {:>12} {:>12} {:>7} {:>12} {:>10}\n",
            "benchmark", "size", "mpich", "weft", "ratio", "native", "mpi/native"
        );
        for ((b, size), (m, w, n)) in &self.cells {
            let unit = if is_bandwidth(b) { "MB/s" } else { "us" };
            let size = if *size == 0 { "-".to_string() } else { size.to_string() };
            let native = if n.is_nan() {
                format!("{:>12} {:>10}", "-", "-")
            } else {
                format!("{n:>9.3} {unit:<2} {:>10.2}", w / n)
            };
            s += &format!(
                "{:<18} {size:>9} {m:>9.3} {unit:<2} {w:>9.3} {unit:<2} {:>7.2} {native}\n",
                format!("osu_{b}"),
                w / m
            );
        }
        s
    }
}
