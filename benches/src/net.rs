//! Reporting of the network path (`--net`): the table with its path headers, the check that
//! no implementation silently stayed on shared memory, and the weft vs `fi_pingpong` section.

use crate::fipp;
use crate::peers::Peer;
use crate::report::Row;
use crate::{Bench, Cli};

/// weft's 8 B latency (after the rounds' reduction), if measured.
fn weft_small_latency(rows: &[Row]) -> Option<f64> {
    rows.iter()
        .find(|r| r.bench == Bench::Latency && r.size == fipp::SIZE && r.imp == "weft")
        .map(|r| r.value)
}

/// `--net --csv --fi-pingpong`: the fi_pingpong row and the weft/fi_pingpong ratio row.
pub fn fipp_csv(rows: &[Row], fi: f64) -> String {
    let mut out = Row::new(Bench::Latency, fipp::SIZE, "fi_pingpong", fi).csv() + "\n";
    if let Some(w) = weft_small_latency(rows) {
        let r = Row {
            bench: Bench::Latency,
            size: fipp::SIZE,
            imp: "weft/fi_pingpong".into(),
            value: w / fi,
            unit: "ratio".into(),
        };
        out += &(r.csv() + "\n");
    }
    out
}

/// The weft vs raw `fi_pingpong` section of the table.
pub fn fipp_table(rows: &[Row], fi: f64, runs: usize, how: &str) -> String {
    let w = weft_small_latency(rows);
    let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let ratio = w.map(|w| w / fi);
    let verdict = match ratio {
        Some(q) if q <= fipp::TARGET_RATIO => "  (target <= 1.15: met)",
        Some(_) => "  (target <= 1.15: MISSED)",
        None => "  (weft 8 B latency not measured: add --bench latency and a size range with 8)",
    };
    format!(
        "# weft-bench latency vs raw libfabric on the same provider: fi_pingpong {}\n\
         # fi_pingpong usec/xfer = elapsed / iterations / 2 = one-way (half the round trip), like \
         weft's latency; ratio = weft/fi_pingpong, lower is better, target <= {:.2} (weft within 15%)\n\
         {:>10} {:>13} {:>13} {:>17}\n{:>10} {:>13} {:>13} {:>17}{verdict}\n\
         # fi_pingpong: {how}; median of {runs} run(s), one per round; no warm-up (its first \
         iteration includes the connection setup)\n\n",
        fipp::command_line(),
        fipp::TARGET_RATIO,
        "size",
        "weft",
        "fi_pingpong",
        "weft/fi_pingpong",
        fipp::SIZE,
        cell(w.map(|v| format!("{v:.3}"))),
        format!("{fi:.3}"),
        cell(ratio.map(|q| format!("{q:.2}"))),
    )
}

/// The report table with every section header marked as the network path, preceded by how
/// each implementation was put on it.
pub fn net_table(table: &str, cli: &Cli, peers: &[&str]) -> String {
    let placement =
        if cli.ranks == 2 { "--nodes 2".to_string() } else { format!("--map 1,{}", cli.ranks - 1) };
    let mut out = format!(
        "# network path (tcp, loopback): weft ranks 0 and 1 on different virtual nodes (weft-run \
         {placement}), libfabric {} on lo (WEFT_FI_DOMAIN=lo, WEFT_BIND=none)\n",
        fipp::provider()
    );
    for p in peers {
        if let Some(how) = Peer::NET.iter().find(|q| q.name() == *p).map(|q| q.net_description()) {
            out += &format!("# network path (tcp, loopback): {p}: {how}\n");
        }
    }
    out.push('\n');
    for line in table.lines() {
        out += line;
        if line.starts_with("# weft-bench ") {
            out += " -- network path (tcp, loopback)";
        }
        out.push('\n');
    }
    out
}

/// Notes for implementations whose smallest-size latency is below what any network path can
/// do (a sign that they still went through shared memory).
pub fn shm_suspects(rows: &[Row]) -> Vec<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut notes = Vec::new();
    let mut lat: Vec<&Row> = rows.iter().filter(|r| r.bench == Bench::Latency).collect();
    lat.sort_by_key(|r| r.size);
    for r in lat {
        if seen.contains(&r.imp.as_str()) {
            continue;
        }
        seen.push(&r.imp);
        if r.value < 2.0 {
            notes.push(format!(
                "WARNING: {} {} B latency {:.3} us is shared-memory range, not the network path",
                r.imp, r.size, r.value
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_shared_memory_latency() {
        let rows = vec![
            Row::new(Bench::Latency, 1, "mpich", 0.4),
            Row::new(Bench::Latency, 8, "mpich", 12.0),
            Row::new(Bench::Latency, 1, "weft", 20.0),
        ];
        let n = shm_suspects(&rows);
        assert_eq!(n.len(), 1);
        assert!(n[0].contains("mpich 1 B"));
    }

    #[test]
    fn fi_pingpong_rows() {
        let rows = vec![Row::new(Bench::Latency, 8, "weft", 12.0)];
        let csv = fipp_csv(&rows, 10.0);
        assert!(csv.contains("latency,8,fi_pingpong,10.000,us"));
        assert!(csv.contains("latency,8,weft/fi_pingpong,1.200,ratio"));
        let t = fipp_table(&rows, 10.0, 3, "x");
        assert!(t.contains("MISSED") && t.contains("1.20"));
    }
}
