//! The report: medians over jobs and rounds, derived overhead ratios, the weft / Open MPI
//! ratios, targets, and the output as tables or CSV.

use std::collections::BTreeMap;

use super::rows::{FtRow, Runs};
use super::{median, ncores, FtCli, OMPI};

/// A metric's key, its label and its target (bound, text). [`METRICS`] lists them in table
/// order; the target is checked where one is given.
type Metric = (&'static str, &'static str, Option<(f64, &'static str)>);

const METRICS: &[Metric] = &[
    ("allreduce_us", "allreduce 8 B (BAND)", None),
    ("agree_us", "agree 8 B word", None),
    ("agree/allreduce", "agree / allreduce (same run)", Some((1.5, "<= 1.5"))),
    ("agree_c_us", "agree 8 B word from C (weft_comm_agree, own job)", None),
    ("agree_c/agree", "agree from C / from Rust (medians)", None),
    ("agree_c/allreduce_c", "agree / allreduce from C (same run)", Some((1.5, "<= 1.5"))),
    ("iagree_us", "iagree + wait", None),
    ("shrink_us", "shrink, healthy", None),
    ("shrink_after_failure_us", "shrink after 1 failure (max over survivors)", None),
    ("revoke_prop_us", "revoke -> every rank's plan-A allreduce Revoked", None),
    ("planB_base_us", "plan B allreduce, before revoke", None),
    ("planB_post1_us", "plan B allreduce #1 after revoke", None),
    ("planB_post1/base", "  #1 / before revoke (same cycle)", Some((1.2, "<= 1.2"))),
    ("planB_skew_us", "  entry skew: last rank's entry - first rank's", None),
    ("planB_post1_last_us", "  #1 from the last rank's entry to the last return", None),
    ("planB_post1_last/base", "  #1 from the last entry / before revoke", Some((1.2, "<= 1.2"))),
    ("planB_post2_us", "plan B allreduce #2 after revoke", None),
    ("planB_post3_us", "plan B allreduce #3 after revoke", None),
    ("revoke_shrink_us", "revoke -> shrink done everywhere", None),
    ("shrink_norevoke_us", "start -> shrink done everywhere, no revoke", None),
    ("revoke_shrink/norevoke", "revoke+shrink / shrink", None),
    (
        "detect_default_us",
        "kill -> all survivors know (same node, all sources)",
        Some((1000.0, "<= 1000 us")),
    ),
    ("detect_shm_us", "  (a) in-band shm pidfd only (launcher stopped)", Some((1000.0, "<= 1000 us"))),
    ("detect_launcher_us", "  (b) out-of-band launcher event (victim on node 1)", None),
    (
        "detect_launcher_sigchld_us",
        "      (b) from the launcher's SIGCHLD (no victim exit)",
        Some((1000.0, "<= 1000 us")),
    ),
    ("detect_prrte_us", "      (b) the same under PRRTE (PMIx event; shm off)", None),
    ("detect_fabric_us", "  (c) libfabric in-band, node 1 (launcher stopped)", None),
    ("detect_hb_us", "  (d) heartbeat, SIGSTOP (period/timeout see notes)", None),
    ("detect_default_first_us", "kill -> first survivor knows (same node)", None),
    ("detect_in_op_us", "kill -> blocked allreduce returns error", None),
    (
        "kill_to_shrunk_allreduce_us",
        "kill -> revoke+shrink+allreduce done",
        Some((2000.0, "<= 2000 us (4 ranks)")),
    ),
    ("p2p_lat_noft_us", "p2p 8 B latency, FT off (weft: installed, unused)", None),
    ("p2p_lat_ft_us", "p2p 8 B latency, FT on (weft: after agree)", None),
    ("p2p_lat_hb_us", "p2p 8 B latency, heartbeat detector on", None),
    ("p2p_ft_overhead", "p2p FT on / off", Some((1.03, "<= 1.03"))),
    ("p2p_hb_overhead", "p2p heartbeat on / off", Some((1.03, "<= 1.03"))),
    ("coll_lat_noft_us", "allreduce 8 B, FT off", None),
    ("coll_lat_ft_us", "allreduce 8 B, FT on", None),
    ("coll_lat_hb_us", "allreduce 8 B, heartbeat detector on", None),
    ("coll_ft_overhead", "allreduce FT on / off", Some((1.03, "<= 1.03"))),
    ("coll_hb_overhead", "allreduce heartbeat on / off", Some((1.03, "<= 1.03"))),
];

pub(super) fn report(
    cli: &FtCli,
    rows: Vec<FtRow>,
    runs: &BTreeMap<(String, String), Runs>,
    notes: &[String],
) {
    // Median over jobs / rounds.
    let mut acc: BTreeMap<(String, u32, String), (Vec<f64>, String)> = BTreeMap::new();
    for r in rows {
        acc.entry((r.metric, r.ranks, r.imp)).or_insert_with(|| (vec![], r.unit)).0.push(r.value);
    }
    let mut val: BTreeMap<(String, u32, String), (f64, String, usize)> =
        acc.into_iter().map(|(k, (v, u))| (k, (median(v.clone()), u, v.len()))).collect();
    // Derived overhead ratios (of the medians).
    let imps = ["weft".to_string(), OMPI.to_string()];
    for &n in &cli.ranks {
        for imp in &imps {
            for (kind, on) in [("p2p", "ft"), ("p2p", "hb"), ("coll", "ft"), ("coll", "hb")] {
                let off = val.get(&(format!("{kind}_lat_noft_us"), n, imp.clone())).map(|v| v.0);
                let onv = val.get(&(format!("{kind}_lat_{on}_us"), n, imp.clone())).map(|v| v.0);
                if let (Some(a), Some(b)) = (off, onv) {
                    val.insert((format!("{kind}_{on}_overhead"), n, imp.clone()), (b / a, "ratio".into(), 1));
                }
            }
        }
    }
    // The agreement from C against Rust: two jobs of the same rounds, so a ratio of medians.
    for &n in &cli.ranks {
        let key = |m: &str| (m.to_string(), n, "weft".to_string());
        if let (Some(c), Some(r)) = (val.get(&key("agree_c_us")), val.get(&key("agree_us"))) {
            let v = c.0 / r.0;
            val.insert(key("agree_c/agree"), (v, "ratio".into(), 1));
        }
    }
    // OMPI's only detection path is its default one: compare every weft source with it.
    let peer = |m: &str, n: u32| -> Option<f64> {
        let m = if m.starts_with("detect_") && !m.ends_with("first_us") { "detect_default_us" } else { m };
        val.get(&(m.to_string(), n, OMPI.to_string())).map(|v| v.0)
    };
    if cli.csv {
        println!("benchmark,ranks,impl,value,unit");
        for ((m, n, imp), (v, u, _)) in &val {
            println!("{m},{n},{imp},{v:.3},{u}");
        }
        for ((m, n, imp), (v, _, _)) in &val {
            if imp == "weft" {
                if let Some(p) = peer(m, *n) {
                    println!("{m},{n},weft/{OMPI},{:.3},ratio", v / p);
                }
            }
        }
        for ((s, imp), r) in runs {
            let fin =
                if r.fin_ms.is_empty() { f64::NAN } else { r.fin_ms.iter().cloned().fold(0.0, f64::max) };
            println!("jobs:{s},0,{imp},{},count", r.jobs);
            println!("failed_jobs:{s},0,{imp},{},count", r.no_rows + r.timeouts);
            println!("max_finalize_ms:{s},0,{imp},{fin:.1},ms");
        }
        return;
    }
    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "# weft-bench ft: fault tolerance, {} (pinned: {}); medians over jobs/rounds; times in us; \
         ratios are weft / {OMPI} (lower is better for weft)",
        cli.ranks.iter().map(|n| format!("{n} ranks")).collect::<Vec<_>>().join(", "),
        !cli.no_pin
    );
    for &n in &cli.ranks {
        let _ = writeln!(
            out,
            "\n## {n} ranks{}",
            if n as usize > ncores() { " (WEFT_PROGRESS=yield; ompi mpi_yield_when_idle)" } else { "" }
        );
        let _ = writeln!(
            out,
            "{:<54} {:>11} {:>11} {:>9}  {:<22} met",
            "metric", "weft", OMPI, "ratio", "target"
        );
        for &(m, label, target) in METRICS {
            let w = val.get(&(m.to_string(), n, "weft".to_string()));
            let p = val
                .get(&(m.to_string(), n, OMPI.to_string()))
                .map(|v| v.0)
                .or_else(|| peer(m, n).filter(|_| m.starts_with("detect_")));
            if w.is_none() && p.is_none() {
                continue;
            }
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
            let wv = w.map(|v| v.0);
            let ratio = match (wv, p) {
                (Some(a), Some(b)) if !m.ends_with("overhead") && !m.contains('/') => format!("{:.3}", a / b),
                _ => "-".into(),
            };
            let (tgt, met) = match (target, wv) {
                (Some((t, s)), Some(v)) if !(m == "kill_to_shrunk_allreduce_us" && n != 4) => {
                    (s.to_string(), if v <= t { "yes" } else { "NO" })
                }
                _ => (String::new(), ""),
            };
            let samples =
                w.map_or(String::new(), |v| if v.2 > 1 { format!(" (n={})", v.2) } else { String::new() });
            let _ = writeln!(
                out,
                "{:<54} {:>11} {:>11} {:>9}  {:<22} {}{}",
                label,
                f(wv),
                f(p),
                ratio,
                tgt,
                met,
                samples
            );
        }
    }
    let _ = writeln!(out, "\n## jobs (failure jobs expect a non-zero launcher status; finalize = rank 0's last line -> job exit)");
    for ((s, imp), r) in runs {
        let fin = if r.fin_ms.is_empty() {
            "-".into()
        } else {
            format!("{:.0} ms", r.fin_ms.iter().cloned().fold(0.0, f64::max))
        };
        let _ = writeln!(
            out,
            "  {imp:<11} {s:<24} jobs {:>3}  without rows {:>2}  timed out / hung {:>2}  max finalize {fin}",
            r.jobs, r.no_rows, r.timeouts
        );
    }
    let _ = writeln!(out, "\nnotes:");
    let _ = writeln!(
        out,
        "  heartbeat jobs: WEFT_FT_HB_PERIOD={} WEFT_FT_HB_TIMEOUT={} (expected detection <= timeout + period = {} ms)",
        cli.hb_period,
        cli.hb_timeout,
        cli.hb_timeout + cli.hb_period
    );
    let _ = writeln!(out, "  {OMPI}: detection rows compare with its default detection (one column for all weft sources); agree is on an int (MPIX_Comm_agree), allreduce on a uint64 (BAND); FT off = mpirun without --with-ft ulfm");
    for n in notes {
        let _ = writeln!(out, "  {n}");
    }
    print!("{out}");
}
