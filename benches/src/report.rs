//! Result rows, CSV parsing/printing, the OSU-style table and the weft/peer ratios.

use std::fmt::Write as _;

use crate::counts::{self, WINDOW};
use crate::Bench;

/// CSV header of every row printed by a worker or a peer program.
pub const CSV_HEADER: &str = "benchmark,size,impl,value,unit";

/// One measured value: `benchmark,size,impl,value,unit`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub bench: Bench,
    pub size: u64,
    pub imp: String,
    pub value: f64,
    pub unit: String,
}

impl Row {
    pub fn new(bench: Bench, size: u64, imp: &str, value: f64) -> Row {
        Row { bench, size, imp: imp.to_string(), value, unit: bench.unit().to_string() }
    }

    /// Parses one CSV data line; `None` for the header and anything that is not a row.
    pub fn parse(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 5 {
            return None;
        }
        Some(Row {
            bench: Bench::parse(f[0])?,
            size: f[1].parse().ok()?,
            imp: f[2].to_string(),
            value: f[3].parse().ok().filter(|v: &f64| v.is_finite())?,
            unit: f[4].to_string(),
        })
    }

    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.bench.name(),
            self.size,
            self.imp,
            fmt_value(self.value, &self.unit),
            self.unit
        )
    }
}

fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "us" | "ratio" => format!("{v:.3}"),
        _ => format!("{v:.2}"),
    }
}

/// The median of `v` (the mean of the middle two for an even count); NaN when `v` is empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Median (latency: lower is better) or maximum (rates) of the repetitions.
pub fn reduce(mut v: Vec<f64>, use_median: bool) -> f64 {
    if use_median {
        return median(v);
    }
    v.sort_by(f64::total_cmp);
    v.last().copied().unwrap_or(f64::NAN)
}

/// Reduces rows of several rounds to one row per (benchmark, size, impl): median for latency,
/// max for bandwidth and rate (the same reduction as the repetitions inside a job).
pub fn reduce_rounds(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut samples: Vec<Vec<f64>> = Vec::new();
    for r in rows {
        match out.iter().position(|o| o.bench == r.bench && o.size == r.size && o.imp == r.imp) {
            Some(i) => samples[i].push(r.value),
            None => {
                samples.push(vec![r.value]);
                out.push(r);
            }
        }
    }
    for (o, v) in out.iter_mut().zip(samples) {
        o.value = reduce(v, o.bench.lower_is_better());
    }
    out
}

/// What one report shows.
pub struct Report<'a> {
    pub benches: &'a [Bench],
    pub rows: &'a [Row],
    /// Peer implementations shown as columns (in order), e.g. `["openmpi", "mpich"]`.
    pub peers: &'a [&'a str],
    /// Failures and skipped peers, printed under the table.
    pub notes: &'a [String],
    pub reps: u32,
    pub iters_scale: f64,
    pub pinned: bool,
    pub ranks: u32,
    /// Interleaved rounds the driver ran (1 = one job per implementation).
    pub rounds: u32,
    /// Machine load seen by the driver, printed in the footer.
    pub load: Option<String>,
}

impl Report<'_> {
    fn value(&self, bench: Bench, size: u64, imp: &str) -> Option<f64> {
        self.rows.iter().find(|r| r.bench == bench && r.size == size && r.imp == imp).map(|r| r.value)
    }

    fn sizes(&self, bench: Bench) -> Vec<u64> {
        let mut s: Vec<u64> = self.rows.iter().filter(|r| r.bench == bench).map(|r| r.size).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// weft / peer, for every (bench, size, peer) where both exist.
    fn ratio(&self, bench: Bench, size: u64, peer: &str) -> Option<f64> {
        let w = self.value(bench, size, "weft")?;
        let p = self.value(bench, size, peer)?;
        (p > 0.0).then(|| w / p)
    }

    /// CSV: header, then per benchmark and size the rows of every implementation followed by
    /// the `weft/<peer>` ratio rows (unit `ratio`). Nothing else (notes go to stderr).
    pub fn csv(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{CSV_HEADER}");
        for &bench in self.benches {
            for size in self.sizes(bench) {
                for imp in std::iter::once("weft").chain(self.peers.iter().copied()) {
                    if let Some(r) =
                        self.rows.iter().find(|r| r.bench == bench && r.size == size && r.imp == imp)
                    {
                        let _ = writeln!(out, "{}", r.csv());
                    }
                }
                for peer in self.peers {
                    if let Some(q) = self.ratio(bench, size, peer) {
                        let r =
                            Row { bench, size, imp: format!("weft/{peer}"), value: q, unit: "ratio".into() };
                        let _ = writeln!(out, "{}", r.csv());
                    }
                }
            }
        }
        out
    }

    /// OSU-style table: one section per benchmark.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let impls: Vec<&str> = std::iter::once("weft").chain(self.peers.iter().copied()).collect();
        for &bench in self.benches {
            let (what, better) = match bench {
                Bench::Latency => (
                    "one-way latency (us), ping-pong rank 0 <-> 1",
                    "ratio = weft/peer, lower is better: <= 1.00 means weft is faster",
                ),
                Bench::Bw => (
                    "uni-directional bandwidth (MB/s = 10^6 B/s), window of 64 + 4 B ack",
                    "ratio = weft/peer, higher is better: >= 1.00 means weft is faster",
                ),
                Bench::Bibw => (
                    "bi-directional bandwidth (MB/s = 10^6 B/s), window of 64 each way",
                    "ratio = weft/peer, higher is better: >= 1.00 means weft is faster",
                ),
                Bench::Mr => (
                    "message rate (messages/s), bw window pattern, sizes <= 8 KiB",
                    "ratio = weft/peer, higher is better: >= 1.00 means weft is faster",
                ),
            };
            let _ = writeln!(out, "# weft-bench {}: {what}", bench.name());
            if !self.peers.is_empty() {
                let _ = writeln!(out, "# {better}");
            }
            let mut header = format!("{:>10}", "size");
            for imp in &impls {
                let _ = write!(header, " {imp:>13}");
            }
            for peer in self.peers {
                let _ = write!(header, " {:>13}", format!("weft/{peer}"));
            }
            let _ = writeln!(out, "{header}");
            let sizes = self.sizes(bench);
            if sizes.is_empty() {
                let _ = writeln!(out, "{:>10} (no results)", "-");
            }
            for size in sizes {
                let mut line = format!("{size:>10}");
                for imp in &impls {
                    let cell = match self.value(bench, size, imp) {
                        Some(v) => fmt_value(v, bench.unit()),
                        None => "-".into(),
                    };
                    let _ = write!(line, " {cell:>13}");
                }
                for peer in self.peers {
                    let cell = match self.ratio(bench, size, peer) {
                        Some(q) => format!("{q:.2}"),
                        None => "-".into(),
                    };
                    let _ = write!(line, " {cell:>13}");
                }
                let _ = writeln!(out, "{line}");
            }
            let _ = writeln!(out);
        }
        let it = |base: u64| counts::scaled(base, self.iters_scale);
        let rounds = if self.rounds > 1 {
            format!(
                "; {} interleaved rounds (weft, then each peer, per round), reduced the same way \
                 across rounds",
                self.rounds
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "# noise: per size, warm-up once, then {} timed repetition(s) of the full iteration \
             count; latency = median of the reps, bw/bibw/mr = max of the reps (same in the C \
             peers){rounds}.",
            self.reps
        );
        let _ = writeln!(
            out,
            "# iterations: latency {} (<= 8 KiB) / {} (larger), warm-up {} / {}; bw, bibw, mr \
             min({}, max({}, 2^29 B / ({WINDOW} x size))) windows of {WINDOW}, warm-up a tenth \
             (>= 2). Data and status checked after the timed loops.",
            it(counts::LAT_ITERS_SMALL),
            it(counts::LAT_ITERS_LARGE),
            it(counts::LAT_SKIP_SMALL),
            it(counts::LAT_SKIP_LARGE),
            it(counts::WIN_ITERS_MAX),
            it(counts::WIN_ITERS_MIN),
        );
        let _ = writeln!(
            out,
            "# {} ranks; {}",
            self.ranks,
            if self.pinned {
                "pinned: weft rank r -> core r % ncores; Open MPI --bind-to core --map-by core; \
                 MPICH -bind-to core"
            } else {
                "not pinned (--no-pin)"
            }
        );
        if let Some(load) = &self.load {
            let _ = writeln!(out, "# {load}");
        }
        for n in self.notes {
            let _ = writeln!(out, "# {n}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }

    #[test]
    fn reduce_median_and_max() {
        assert_eq!(reduce(vec![3.0, 1.0, 2.0], true), 2.0);
        assert_eq!(reduce(vec![4.0, 1.0, 2.0, 3.0], true), 2.5);
        assert_eq!(reduce(vec![3.0, 1.0, 2.0], false), 3.0);
    }

    #[test]
    fn parse_roundtrip() {
        let r = Row::parse("latency,8,weft,0.210,us").unwrap();
        assert_eq!(r.bench, Bench::Latency);
        assert_eq!(r.size, 8);
        assert_eq!(r.csv(), "latency,8,weft,0.210,us");
        assert!(Row::parse(CSV_HEADER).is_none());
        assert!(Row::parse("some noise from mpirun").is_none());
        assert!(Row::parse("bw,8,weft,nan,MB/s").is_none());
    }

    #[test]
    fn rounds_reduce_median_and_max() {
        let rows = vec![
            Row::new(Bench::Latency, 8, "weft", 3.0),
            Row::new(Bench::Bw, 8, "weft", 100.0),
            Row::new(Bench::Latency, 8, "weft", 1.0),
            Row::new(Bench::Bw, 8, "weft", 300.0),
            Row::new(Bench::Latency, 8, "weft", 2.0),
            Row::new(Bench::Bw, 8, "weft", 200.0),
        ];
        let r = reduce_rounds(rows);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].value, 2.0);
        assert_eq!(r[1].value, 300.0);
    }

    #[test]
    fn ratios_in_csv() {
        let rows = vec![
            Row::new(Bench::Latency, 8, "weft", 0.5),
            Row::new(Bench::Latency, 8, "openmpi", 1.0),
            Row::new(Bench::Bw, 8, "weft", 300.0),
            Row::new(Bench::Bw, 8, "mpich", 200.0),
        ];
        let rep = Report {
            benches: &[Bench::Latency, Bench::Bw],
            rows: &rows,
            peers: &["openmpi", "mpich"],
            notes: &[],
            reps: 3,
            iters_scale: 1.0,
            pinned: true,
            ranks: 2,
            rounds: 1,
            load: None,
        };
        let csv = rep.csv();
        assert!(csv.contains("latency,8,weft/openmpi,0.500,ratio"));
        assert!(csv.contains("bw,8,weft/mpich,1.500,ratio"));
        assert!(!csv.contains("latency,8,weft/mpich"));
        let table = rep.table();
        assert!(table.contains("weft/openmpi"));
        assert!(table.contains("0.50"));
    }
}
