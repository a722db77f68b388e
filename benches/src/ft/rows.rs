//! What the ft driver collects: the parsed `FTROW` result lines ([`FtRow`]) and the count of
//! jobs that ran per scenario and implementation ([`Runs`]). The job runner (`jobs.rs`) fills
//! them, the report (`report.rs`) reads them.

use super::ROW;

/// One result: (metric, ranks, impl) → value.
#[derive(Clone, Debug)]
pub(super) struct FtRow {
    pub(super) metric: String,
    pub(super) ranks: u32,
    pub(super) imp: String,
    pub(super) value: f64,
    pub(super) unit: String,
}

impl FtRow {
    pub(super) fn parse(l: &str) -> Option<FtRow> {
        let f: Vec<&str> = l.trim().split(',').collect();
        if f.len() != 6 || f[0] != ROW {
            return None;
        }
        Some(FtRow {
            metric: f[1].into(),
            ranks: f[2].parse().ok()?,
            imp: f[3].into(),
            value: f[4].parse().ok().filter(|v: &f64| v.is_finite())?,
            unit: f[5].into(),
        })
    }
}

/// What ran: per (scenario, impl): jobs, failed jobs, finalize times.
#[derive(Default)]
pub(super) struct Runs {
    pub(super) jobs: u32,
    pub(super) no_rows: u32,
    pub(super) timeouts: u32,
    pub(super) fin_ms: Vec<f64>,
}
