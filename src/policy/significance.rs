//! Which policy differences in one study are significant: for each workload × process count, every
//! pair of policies is compared on the per-run medians of a metric with the two-sided
//! Mann-Whitney U test (runs are the unit, as in `compare`), and the p-values of the whole table
//! are adjusted with Benjamini-Hochberg. `compare` cannot do this: it matches benchmarks by id
//! across runs, and here the policy is part of the id. Pure: reads a record, returns rows.

use std::fmt::Write as _;

use crate::model::RunRecord;
use crate::stats;

/// The metrics compared (the seed's: time and switches).
pub const METRICS: &[&str] = &["makespan", "turnaround", "voluntary", "involuntary"];

/// Significance level the verdict column uses (on the BH-adjusted q).
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, PartialEq)]
pub struct PairTest {
    /// `<work>/<procs>`.
    pub group: String,
    pub metric: String,
    pub a: String,
    pub b: String,
    pub median_a: f64,
    pub median_b: f64,
    pub runs_a: usize,
    pub runs_b: usize,
    pub p: f64,
    /// Benjamini-Hochberg adjusted over every row of the table.
    pub q: f64,
    pub exact: bool,
}

/// `policy/<work>/<policy>/<procs>` → (work, policy, procs).
fn parse_id(id: &str) -> Option<(&str, &str, &str)> {
    let mut it = id.split('/');
    match (it.next(), it.next(), it.next(), it.next(), it.next()) {
        (Some("policy"), Some(w), Some(p), Some(n), None) => Some((w, p, n)),
        _ => None,
    }
}

/// Every pair of policies within each workload × process count, for each metric in `metrics`
/// that both cells measured in at least 2 runs.
pub fn pairwise(record: &RunRecord, metrics: &[&str]) -> Vec<PairTest> {
    // (group, policy, per metric: per-run medians), in record order.
    let mut cells: Vec<(String, String, &crate::model::BenchmarkResult)> = Vec::new();
    for b in &record.benchmarks {
        if let Some((w, p, n)) = parse_id(&b.id) {
            cells.push((format!("{w}/{n}"), p.to_string(), b));
        }
    }
    let per_run = |b: &crate::model::BenchmarkResult, m: &str| -> Vec<f64> {
        b.metrics
            .iter()
            .find(|x| x.name == m)
            .map(|x| x.runs.iter().map(|r| r.summary.p50).collect())
            .unwrap_or_default()
    };
    let mut rows = Vec::new();
    for (i, (group, pa, ba)) in cells.iter().enumerate() {
        for (group_b, pb, bb) in &cells[i + 1..] {
            if group != group_b {
                continue;
            }
            for m in metrics {
                let (xa, xb) = (per_run(ba, m), per_run(bb, m));
                if xa.len() < 2 || xb.len() < 2 {
                    continue;
                }
                let t = stats::mann_whitney(&xa, &xb);
                rows.push(PairTest {
                    group: group.clone(),
                    metric: m.to_string(),
                    a: pa.clone(),
                    b: pb.clone(),
                    median_a: stats::median(&xa),
                    median_b: stats::median(&xb),
                    runs_a: xa.len(),
                    runs_b: xb.len(),
                    p: t.p,
                    q: f64::NAN,
                    exact: t.exact,
                });
            }
        }
    }
    let q = stats::benjamini_hochberg(&rows.iter().map(|r| r.p).collect::<Vec<_>>());
    for (r, q) in rows.iter_mut().zip(q) {
        r.q = q;
    }
    rows
}

/// The table as text; empty when there is nothing to compare (one policy, or one run).
pub fn render(rows: &[PairTest], unit_of: impl Fn(&str) -> crate::units::Unit) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "policy differences: two-sided Mann-Whitney on per-run medians, q = Benjamini-Hochberg \
         over this table; \"differ\" when q < {ALPHA}"
    );
    let _ = writeln!(
        s,
        "{:<14} {:<12} {:<22} {:>14} {:>14} {:>8} {:>8}  verdict",
        "work/procs", "metric", "a vs b", "median a", "median b", "p", "q"
    );
    for r in rows {
        let unit = unit_of(&r.metric);
        let verdict = if r.q < ALPHA { "differ" } else { "~ same" };
        let _ = writeln!(
            s,
            "{:<14} {:<12} {:<22} {:>14} {:>14} {:>8.4} {:>8.4}  {verdict}{}",
            r.group,
            r.metric,
            format!("{} vs {}", r.a, r.b),
            crate::units::format_value(r.median_a, unit),
            crate::units::format_value(r.median_b, unit),
            r.p,
            r.q,
            if r.exact { "" } else { " (normal approx.)" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_into_work_policy_and_procs() {
        assert_eq!(
            parse_id("policy/cpu/fifo/100"),
            Some(("cpu", "fifo", "100"))
        );
        assert_eq!(
            parse_id("policy/io/other-nice10/10"),
            Some(("io", "other-nice10", "10"))
        );
        assert_eq!(parse_id("cpu/null_syscall"), None);
        assert_eq!(parse_id("policy/cpu/fifo/100/x"), None);
    }

    fn record(cells: &[(&str, Vec<f64>)]) -> RunRecord {
        // A real stored record, its first benchmark cloned per cell with the given run medians.
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        let template = v["benchmarks"][0].clone();
        let run = template["metrics"][0]["runs"][0].clone();
        let benchmarks: Vec<serde_json::Value> = cells
            .iter()
            .map(|(id, medians)| {
                let mut b = template.clone();
                b["id"] = (*id).into();
                b["suite"] = "policy".into();
                let mut m = template["metrics"][0].clone();
                m["name"] = "makespan".into();
                m["runs"] = medians
                    .iter()
                    .map(|&x| {
                        let mut r = run.clone();
                        r["summary"]["p50"] = x.into();
                        r
                    })
                    .collect();
                b["metrics"] = serde_json::Value::Array(vec![m]);
                b
            })
            .collect();
        v["benchmarks"] = serde_json::Value::Array(benchmarks);
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn separated_policies_differ_and_overlapping_ones_do_not() {
        let r = record(&[
            ("policy/cpu/other/10", vec![10.0, 11.0, 12.0, 13.0, 14.0]),
            ("policy/cpu/fifo/10", vec![20.0, 21.0, 22.0, 23.0, 24.0]),
            ("policy/cpu/rr/10", vec![20.5, 21.5, 22.5, 23.5, 24.5]),
            // Another group: never paired with the cells above.
            ("policy/io/other/10", vec![1.0, 2.0]),
        ]);
        let rows = pairwise(&r, &["makespan"]);
        assert_eq!(rows.len(), 3, "{rows:?}");
        let find = |a: &str, b: &str| rows.iter().find(|x| x.a == a && x.b == b).unwrap();
        // 5 vs 5 fully separated: exact p = 2/252.
        let of = find("other", "fifo");
        assert!((of.p - 2.0 / 252.0).abs() < 1e-12, "{of:?}");
        assert!(of.q < ALPHA && of.exact);
        assert_eq!((of.median_a, of.median_b), (12.0, 22.0));
        let fr = find("fifo", "rr");
        assert!(fr.p > 0.5 && fr.q >= ALPHA, "{fr:?}");
        let text = render(&rows, |_| crate::units::Unit::Nanoseconds);
        assert!(text.contains("other vs fifo") && text.contains("differ"));
        assert!(text.contains("fifo vs rr") && text.contains("~ same"));
        assert!(render(&[], |_| crate::units::Unit::Count).is_empty());
    }
}
