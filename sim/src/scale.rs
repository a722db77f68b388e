//! Scale runs: one run per N = 2^from … 2^to, a table or CSV, and least-squares fits
//! `y = a·log₂N + b` with R².

use std::time::Instant;

use super::{run, Config, Mode, Net, Proto, Report, Violation};

/// Least squares `y = a·x + b`; returns (a, b, R²).
pub fn fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return (0.0, ys.first().copied().unwrap_or(0.0), 1.0);
    }
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let a = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let b = my - a * mx;
    let ss_tot: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
    let ss_res: f64 = xs.iter().zip(ys).map(|(x, y)| (y - (a * x + b)).powi(2)).sum();
    let r2 = if ss_tot > 0.0 { 1.0 - ss_res / ss_tot } else { 1.0 };
    (a, b, r2)
}

/// One row of a scale table.
#[derive(Clone, Debug)]
pub struct Row {
    /// log₂ N.
    pub lg: u32,
    /// The run's report.
    pub report: Report,
    /// Wall-clock seconds of the run.
    pub wall: f64,
}

/// Options of a scale run.
#[derive(Clone, Debug)]
pub struct ScaleOpts {
    /// Protocol.
    pub proto: Proto,
    /// From 2^from ranks.
    pub from: u32,
    /// To 2^to ranks.
    pub to: u32,
    /// Seed.
    pub seed: u64,
    /// Failure mode.
    pub mode: Mode,
    /// Failures per run.
    pub failures: u32,
    /// Network model.
    pub net: Net,
    /// Gossip decision margin (`None`: the default, see [`Config::gossip_min_cycles`]).
    pub gossip_min_cycles: Option<u32>,
}

/// Run the scale series; `each` sees every row as it completes. Stops the fault matrix at
/// [`crate::gossip::drive::FM_MAX_N`].
pub fn scale(o: &ScaleOpts, mut each: impl FnMut(&Row)) -> Result<Vec<Row>, Box<Violation>> {
    let mut rows = Vec::new();
    for lg in o.from..=o.to {
        let n = 1u32 << lg;
        if o.proto == Proto::GossipFm && n > crate::gossip::drive::FM_MAX_N {
            break;
        }
        let mut c = Config::new(o.proto, n, o.seed, o.mode, o.failures);
        c.net = o.net.clone();
        c.gossip_min_cycles = o.gossip_min_cycles;
        c.skew = 0;
        c.binbin = false;
        let t = Instant::now();
        let report = run(&c)?;
        let row = Row { lg, report, wall: t.elapsed().as_secs_f64() };
        each(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The fits of a series: (metric, a, b, R²) for rounds, messages per process and virtual
/// time (µs).
pub fn fits(rows: &[Row]) -> Vec<(&'static str, f64, f64, f64)> {
    let xs: Vec<f64> = rows.iter().map(|r| r.lg as f64).collect();
    let col = |f: &dyn Fn(&Report) -> f64| rows.iter().map(|r| f(&r.report)).collect::<Vec<f64>>();
    let mut out = Vec::new();
    for (name, ys) in [
        ("rounds/cycles (max)", col(&|r| r.rounds)),
        ("rounds/cycles (mean)", col(&|r| r.rounds_mean)),
        ("msgs/proc", col(&|r| r.msgs_mean)),
        ("vtime_us", col(&|r| r.vtime as f64 / 1e3)),
    ] {
        let (a, b, r2) = fit(&xs, &ys);
        out.push((name, a, b, r2));
    }
    // Gossip: cycles to consensus reached, when every run reached it.
    for (name, f) in [
        ("reached cycles (max)", (|r: &Report| r.reached) as fn(&Report) -> Option<f64>),
        ("reached cycles (mean)", |r: &Report| r.reached_mean),
    ] {
        if let Some(ys) = rows.iter().map(|r| f(&r.report)).collect::<Option<Vec<f64>>>() {
            if !ys.is_empty() {
                let (a, b, r2) = fit(&xs, &ys);
                out.push((name, a, b, r2));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_line() {
        let xs = [10.0, 11.0, 12.0, 13.0];
        let ys: Vec<f64> = xs.iter().map(|x| 2.0 * x + 1.0).collect();
        let (a, b, r2) = fit(&xs, &ys);
        assert!((a - 2.0).abs() < 1e-9 && (b - 1.0).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-9);
    }
}
