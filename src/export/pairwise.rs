//! Which policy differences in one study are significant: for each workload × process count, every
//! pair of policies is compared on the per-run medians of a metric with the two-sided
//! Mann-Whitney U test (runs are the unit, as in `compare`), and the p-values of the whole table
//! are adjusted with Benjamini-Hochberg. `compare` cannot do this: it matches benchmarks by id
//! across runs, and here the policy is part of the id. Pure: reads a record, returns rows
//! ([`analyse`]: rows + notes) and renders them for the terminal ([`render`]), the Markdown export
//! ([`render_markdown`]) and `--export-significance` ([`to_json`], [`to_csv`]); the HTML section
//! is `crate::report::policy_sig`. Derived, so not in the run record (osgauge.run/1 holds what
//! was measured; these rows are recomputed from it by every reader). It stands with the exports,
//! which write it (the Markdown export's section, `--export-significance`); the terminal and the
//! report read it from here.

use std::fmt::Write as _;

use crate::record::RunRecord;
use crate::stats;

/// The metrics compared (the seed's: time and switches).
/// `switches` (the total) is what macOS and Windows have; on Linux it is voluntary + involuntary.
pub const METRICS: &[&str] = &[
    "makespan",
    "turnaround",
    "switches",
    "voluntary",
    "involuntary",
];

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
    let mut cells: Vec<(String, String, &crate::record::BenchmarkResult)> = Vec::new();
    for b in &record.benchmarks {
        if let Some((w, p, n)) = parse_id(&b.id) {
            cells.push((format!("{w}/{n}"), p.to_string(), b));
        }
    }
    let per_run = |b: &crate::record::BenchmarkResult, m: &str| -> Vec<f64> {
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
        let verdict = verdict(r);
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

/// The method, in one sentence, for every rendering (terminal, Markdown, HTML, exports).
pub fn method_text() -> String {
    format!(
        "Within each workload × process count, every pair of policies is compared per metric with \
         the two-sided Mann-Whitney U test on the per-run medians (runs are the unit: one value per \
         independent run; exact permutation p for small samples, normal approximation with tie \
         correction above); q = Benjamini-Hochberg adjustment over every row of this table; \
         \"differ\" when q < {ALPHA}."
    )
}

/// `median_b / median_a` (NaN when a is 0 or either is not finite).
pub fn ratio(r: &PairTest) -> f64 {
    if r.median_a != 0.0 && r.median_a.is_finite() && r.median_b.is_finite() {
        r.median_b / r.median_a
    } else {
        f64::NAN
    }
}

/// Significant after the Benjamini-Hochberg adjustment.
pub fn significant(r: &PairTest) -> bool {
    r.q < ALPHA
}

/// "differ: b higher", "differ: b lower" or "~ same".
pub fn verdict(r: &PairTest) -> String {
    if !significant(r) {
        return "~ same".into();
    }
    if r.median_b > r.median_a {
        format!("differ: {} higher", r.b)
    } else if r.median_b < r.median_a {
        format!("differ: {} lower", r.b)
    } else {
        "differ".into()
    }
}

/// A p or q value for the tables.
pub fn fmt_p(p: f64) -> String {
    if p.is_nan() {
        "—".into()
    } else if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// `1.23×` (— when undefined).
pub fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}×")
    } else {
        "—".into()
    }
}

/// The study's cells grouped by `<work>/<procs>`, in record order: (group, [(policy, cell)]).
type Groups<'a> = Vec<(String, Vec<(String, &'a crate::record::BenchmarkResult)>)>;

fn groups(record: &RunRecord) -> Groups<'_> {
    let mut g: Groups<'_> = Vec::new();
    for b in &record.benchmarks {
        if let Some((w, p, n)) = parse_id(&b.id) {
            let key = format!("{w}/{n}");
            match g.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push((p.to_string(), b)),
                None => g.push((key, vec![(p.to_string(), b)])),
            }
        }
    }
    g
}

/// C(n, k) as a float.
fn choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The whole analysis of one record: the rows and what the reader must know about them.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub rows: Vec<PairTest>,
    /// Why some cells were not compared, how the p-values were computed, and whether any
    /// difference could be significant at all with this many runs.
    pub notes: Vec<String>,
    /// Unit and direction of each metric compared (from the record).
    pub units: Vec<(String, crate::units::Unit, crate::units::Better)>,
}

impl Analysis {
    pub fn unit(&self, metric: &str) -> crate::units::Unit {
        self.units
            .iter()
            .find(|(m, ..)| m == metric)
            .map_or(crate::units::Unit::Count, |x| x.1)
    }

    pub fn better(&self, metric: &str) -> crate::units::Better {
        self.units
            .iter()
            .find(|(m, ..)| m == metric)
            .map_or(crate::units::Better::Lower, |x| x.2)
    }
}

/// The analysis of a record's policy cells: `None` when there is nothing to say — no policy cells,
/// or only the single-policy cells another command ran (`osgauge run` has cpu & io × other × 10);
/// an `osgauge policy` study always gets one, saying why when nothing could be compared.
pub fn analyse(record: &RunRecord) -> Option<Analysis> {
    let groups = groups(record);
    let study = record.config.preset == "policy" || groups.iter().any(|(_, v)| v.len() > 1);
    if groups.is_empty() || !study {
        return None;
    }
    let mut rows = pairwise(record, METRICS);
    // Read by workload × process count, then metric (pairs stay in record order).
    let rank = |r: &PairTest| {
        (
            groups.iter().position(|(g, _)| *g == r.group),
            METRICS.iter().position(|m| *m == r.metric),
        )
    };
    rows.sort_by_key(rank);
    let mut notes = Vec::new();
    let single: Vec<String> = groups
        .iter()
        .filter(|(_, v)| v.len() < 2)
        .map(|(g, v)| format!("{g} ({})", v[0].0))
        .collect();
    if !single.is_empty() {
        notes.push(format!(
            "One policy only, nothing to compare: {}. Give several, e.g. --policy other,batch.",
            single.join(", ")
        ));
    }
    let mut few = Vec::new();
    for (g, v) in groups.iter().filter(|(_, v)| v.len() >= 2) {
        for (p, b) in v {
            let runs = b.metrics.iter().map(|m| m.runs.len()).max().unwrap_or(0);
            if runs < 2 {
                let (w, n) = g.split_once('/').unwrap_or((g, ""));
                few.push(match &b.error {
                    Some(_) if runs == 0 => format!("{w}/{p}/{n} (failed)"),
                    _ => format!(
                        "{w}/{p}/{n} ({runs} run{})",
                        if runs == 1 { "" } else { "s" }
                    ),
                });
            }
        }
    }
    if !few.is_empty() {
        notes.push(format!(
            "Too few runs to test (each policy needs ≥ 2 runs in a cell): {}. Use --runs 5 or more.",
            few.join(", ")
        ));
    }
    if !rows.is_empty() {
        // With na vs nb runs and no ties the smallest two-sided p is 2 / C(na + nb, na).
        let best = rows
            .iter()
            .map(|r| (2.0 / choose(r.runs_a + r.runs_b, r.runs_a)).min(1.0))
            .fold(f64::INFINITY, f64::min);
        if best >= ALPHA {
            notes.push(format!(
                "With this many runs no difference can be significant: the smallest possible p \
                 (every run of one policy below every run of the other) is {}, not below {ALPHA}. \
                 5 runs per policy allow p = 0.0079.",
                fmt_p(best)
            ));
        }
        let approx = rows.iter().filter(|r| !r.exact).count();
        notes.push(if approx == 0 {
            format!(
                "All {} p-values exact (permutation distribution).",
                rows.len()
            )
        } else {
            format!(
                "{approx} of {} p-values from the normal approximation (marked \"approx.\"), the \
                 others exact.",
                rows.len()
            )
        });
    } else if single.is_empty() && few.is_empty() {
        notes.push("No metric was measured by both cells of any pair.".into());
    }
    let mut units = Vec::new();
    for m in METRICS {
        if let Some(x) = record
            .benchmarks
            .iter()
            .filter(|b| parse_id(&b.id).is_some())
            .flat_map(|b| &b.metrics)
            .find(|x| x.name == *m)
        {
            units.push((m.to_string(), x.unit, x.better));
        }
    }
    Some(Analysis { rows, notes, units })
}

/// The section as GitHub-flavoured Markdown ("" when the record is not a policy study).
pub fn render_markdown(record: &RunRecord) -> String {
    use crate::output::markdown_text as md;
    let Some(a) = analyse(record) else {
        return String::new();
    };
    let mut s = String::from("## Which policy differences are significant\n\n");
    let _ = writeln!(s, "{}\n", md(&method_text()));
    for n in &a.notes {
        let _ = writeln!(s, "- {}", md(n));
    }
    if !a.notes.is_empty() {
        s.push('\n');
    }
    if a.rows.is_empty() {
        return s;
    }
    s.push_str(
        "| work/procs | metric | a vs b | median a | median b | b / a | p | q | verdict |\n\
         |---|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for r in &a.rows {
        let unit = a.unit(&r.metric);
        let v = verdict(r);
        let _ = writeln!(
            s,
            "| {} | {} | {} vs {} | {} | {} | {} | {}{} | {} | {} |",
            md(&r.group),
            md(&r.metric),
            md(&r.a),
            md(&r.b),
            crate::units::format_value(r.median_a, unit),
            crate::units::format_value(r.median_b, unit),
            fmt_ratio(ratio(r)),
            fmt_p(r.p),
            if r.exact { "" } else { " approx." },
            fmt_p(r.q),
            if significant(r) {
                format!("**{}**", md(&v))
            } else {
                md(&v)
            }
        );
    }
    s.push('\n');
    s
}

/// The rows as JSON (schema `osgauge.policy-significance/1`): the derived analysis of one stored
/// run, recomputable from its record at any time.
pub fn to_json(record: &RunRecord) -> anyhow::Result<String> {
    let a = analyse(record).ok_or_else(|| anyhow::anyhow!("the run has no policy cells"))?;
    let rows: Vec<serde_json::Value> = a
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "group": r.group,
                "metric": r.metric,
                "unit": a.unit(&r.metric),
                "better": a.better(&r.metric),
                "a": r.a,
                "b": r.b,
                "median_a": r.median_a,
                "median_b": r.median_b,
                "ratio_b_a": ratio(r),
                "runs_a": r.runs_a,
                "runs_b": r.runs_b,
                "p": r.p,
                "q": r.q,
                "exact": r.exact,
                "significant": significant(r),
                "verdict": verdict(r),
            })
        })
        .collect();
    let v = serde_json::json!({
        "schema": "osgauge.policy-significance/1",
        "run_id": record.run_id,
        "label": record.label,
        "alpha": ALPHA,
        "method": method_text(),
        "notes": a.notes,
        "rows": rows,
    });
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// The rows as CSV, one per pair × metric × group; values in the base unit named in `unit`.
pub fn to_csv(record: &RunRecord) -> anyhow::Result<String> {
    let a = analyse(record).ok_or_else(|| anyhow::anyhow!("the run has no policy cells"))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "run_id",
        "group",
        "metric",
        "unit",
        "a",
        "b",
        "median_a",
        "median_b",
        "ratio_b_a",
        "runs_a",
        "runs_b",
        "p",
        "q",
        "exact",
        "significant",
        "verdict",
    ])?;
    let num = super::csv::num_cell;
    for r in &a.rows {
        w.write_record([
            record.run_id.to_string(),
            r.group.clone(),
            r.metric.clone(),
            a.unit(&r.metric).symbol().to_string(),
            r.a.clone(),
            r.b.clone(),
            num(r.median_a),
            num(r.median_b),
            num(ratio(r)),
            r.runs_a.to_string(),
            r.runs_b.to_string(),
            num(r.p),
            num(r.q),
            r.exact.to_string(),
            significant(r).to_string(),
            verdict(r),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

#[cfg(test)]
pub(crate) mod tests {
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

    pub(crate) fn record(cells: &[(&str, Vec<f64>)]) -> RunRecord {
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
        v["config"]["preset"] = "policy".into();
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

    #[test]
    fn notes_say_why_cells_were_not_compared() {
        let r = record(&[
            ("policy/cpu/other/10", vec![10.0, 11.0, 12.0]),
            ("policy/cpu/fifo/10", vec![20.0, 21.0, 22.0]),
            ("policy/cpu/rr/10", vec![20.0]),
            ("policy/io/other/100", vec![1.0, 2.0, 3.0]),
        ]);
        let a = analyse(&r).unwrap();
        assert_eq!(a.rows.len(), 1, "{:?}", a.rows);
        let all = a.notes.join("\n");
        assert!(
            all.contains("One policy only") && all.contains("io/100 (other)"),
            "{all}"
        );
        assert!(
            all.contains("Too few runs") && all.contains("cpu/rr/10 (1 run)"),
            "{all}"
        );
        // 3 vs 3: the smallest possible p is 2/20 = 0.1.
        assert!(all.contains("no difference can be significant") && all.contains("0.1000"));
        assert!(all.contains("All 1 p-values exact"), "{all}");
        assert_eq!(a.unit("makespan"), crate::units::Unit::Nanoseconds);
        // Not a policy study: no analysis at all.
        let other: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        assert!(analyse(&other).is_none());
        assert_eq!(render_markdown(&other), "");
        // `osgauge run`'s single-policy cells are not a study: no section there.
        let mut run = record(&[
            ("policy/cpu/other/10", vec![1.0, 2.0]),
            ("policy/io/other/10", vec![1.0, 2.0]),
        ]);
        assert!(analyse(&run).is_some_and(|a| a.rows.is_empty()));
        run.config.preset = "standard".into();
        assert!(analyse(&run).is_none());
    }

    #[test]
    fn large_samples_use_and_say_the_normal_approximation() {
        let a: Vec<f64> = (0..25).map(|i| f64::from(i % 5)).collect();
        let b: Vec<f64> = (0..25).map(|i| f64::from(i % 5) + 3.0).collect();
        let r = record(&[("policy/cpu/other/10", a), ("policy/cpu/fifo/10", b)]);
        let an = analyse(&r).unwrap();
        assert!(!an.rows[0].exact);
        let all = an.notes.join("\n");
        assert!(
            all.contains("1 of 1 p-values from the normal approximation"),
            "{all}"
        );
        assert!(!all.contains("no difference can be significant"), "{all}");
        assert!(render_markdown(&r).contains(" approx. |"));
    }

    #[test]
    fn markdown_marks_significant_rows_and_escapes_names() {
        let r = record(&[
            ("policy/cpu/oth|er/10", vec![10.0, 11.0, 12.0, 13.0, 14.0]),
            ("policy/cpu/fifo/10", vec![20.0, 21.0, 22.0, 23.0, 24.0]),
            ("policy/cpu/rr/10", vec![20.5, 21.5, 22.5, 23.5, 24.5]),
        ]);
        let md = render_markdown(&r);
        assert!(
            md.starts_with("## Which policy differences are significant"),
            "{md}"
        );
        assert!(md.contains("Mann-Whitney") && md.contains("Benjamini-Hochberg"));
        let row = md
            .lines()
            .find(|l| l.contains("oth\\|er vs fifo"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(row.contains("**differ: fifo higher**"), "{row}");
        assert!(row.contains("| 1.833× | 0.0079 | 0.0119 |"), "{row}");
        let same = md.lines().find(|l| l.contains("fifo vs rr")).unwrap();
        assert!(
            same.contains("| ~ same |") && !same.contains("**"),
            "{same}"
        );
    }

    #[test]
    fn json_and_csv_exports_carry_every_row() {
        let r = record(&[
            ("policy/cpu/other/10", vec![10.0, 11.0, 12.0, 13.0, 14.0]),
            ("policy/cpu/fifo/10", vec![20.0, 21.0, 22.0, 23.0, 24.0]),
        ]);
        let v: serde_json::Value = serde_json::from_str(&to_json(&r).unwrap()).unwrap();
        assert_eq!(v["schema"], "osgauge.policy-significance/1");
        let row = &v["rows"][0];
        assert_eq!(row["group"], "cpu/10");
        assert_eq!(
            (row["a"].as_str(), row["b"].as_str()),
            (Some("other"), Some("fifo"))
        );
        assert_eq!(row["median_b"], 22.0);
        assert_eq!(row["significant"], true);
        assert!((row["p"].as_f64().unwrap() - 2.0 / 252.0).abs() < 1e-12);
        let csv = to_csv(&r).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2, "{csv}");
        assert!(lines[0].starts_with("run_id,group,metric,unit,a,b"));
        assert!(
            lines[1].contains(",cpu/10,makespan,ns,other,fifo,12,22,"),
            "{csv}"
        );
        let other: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        assert!(to_json(&other).is_err());
    }
}
