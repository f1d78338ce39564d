//! Comparison of 2..N runs: the first is the baseline, every other run is compared with it.
//!
//! Method (see `docs` in README and `/reference/results.md`): the unit is one independent run.
//! Per benchmark and metric, with `a` = the baseline's per-run medians and `b` = the other run's:
//! the ratio of medians `median(b) / median(a)` with a 95 % percentile-bootstrap CI
//! ([`stats::bootstrap_ratio_ci`], fixed seed), a two-sided Mann-Whitney U test over the per-run
//! values ([`stats::mann_whitney_u`]), p-values adjusted with Benjamini-Hochberg over every
//! metric compared in that pair. A difference is called better/worse only when the adjusted p is
//! below α = 0.05 *and* the whole CI lies outside the noise band (±2 % by default); otherwise `~`.
//! When the run counts are too small for the test to ever reach α, the verdict says so.
//! Summary per suite: the geometric mean of direction-normalised ratios over the metrics present
//! with results in every run.

pub mod render;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{MetricResult, RunRecord};
use crate::stats;
use crate::units::{Better, Unit};

/// Significance level of the Mann-Whitney test (after Benjamini-Hochberg adjustment).
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Half-width of the noise band as a fraction (0.02 = ±2 %).
    pub noise: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { noise: 0.02 }
    }
}

/// One run taking part in the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// What the user called it (label, id or file name).
    pub name: String,
    pub run_id: String,
    pub label: Option<String>,
    pub os: String,
    pub complete: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// No difference shown (not significant, or inside the noise band).
    Same,
    /// Too few runs on one side for the test to ever reach α.
    TooFewRuns,
}

impl Verdict {
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "~",
            Verdict::TooFewRuns => "~ (a)",
        }
    }
}

impl Delta {
    /// Not significant after the Benjamini-Hochberg correction although p < α before it.
    pub fn lost_to_correction(&self) -> bool {
        self.verdict == Verdict::Same && self.p < ALPHA && self.q >= ALPHA
    }

    /// The verdict as shown, with its footnote marker.
    pub fn symbol(&self) -> &'static str {
        if self.lost_to_correction() {
            "~ (b)"
        } else {
            self.verdict.symbol()
        }
    }
}

/// One metric of one run, as compared with the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Median of this run's per-run medians; None when it has no finished runs.
    pub center: Option<f64>,
    pub runs: usize,
    /// Why there is no value (error kind and message, or "not in this run").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// vs the baseline (None for the baseline column itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_base: Option<Delta>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    /// median(this) / median(baseline).
    pub ratio: f64,
    pub ci95: [f64; 2],
    /// Two-sided Mann-Whitney U p-value, before adjustment.
    pub p: f64,
    /// Benjamini-Hochberg adjusted p-value (over every metric compared in this pair).
    pub q: f64,
    /// Smallest p the test can give with these run counts.
    pub min_p: f64,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub suite: String,
    pub metric: String,
    pub unit: Unit,
    pub better: Better,
    /// One cell per column; the first is the baseline.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SuiteSummary {
    pub suite: String,
    /// Per non-baseline column: geometric mean of direction-normalised ratios (> 1 = worse than
    /// the baseline), None when no metric is present in every run.
    pub geomean: Vec<Option<f64>>,
    /// Number of metrics in the geometric mean.
    pub metrics: usize,
}

/// A machine/environment field whose value differs between the runs.
#[derive(Debug, Clone, Serialize)]
pub struct FieldDiff {
    pub field: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub columns: Vec<Column>,
    pub noise: f64,
    pub alpha: f64,
    pub differences: Vec<FieldDiff>,
    pub rows: Vec<Row>,
    pub suites: Vec<SuiteSummary>,
    pub footnotes: Vec<String>,
}

/// Per-run values compared: each run's median.
fn per_run(m: &MetricResult) -> Vec<f64> {
    m.runs
        .iter()
        .map(|r| r.summary.p50)
        .filter(|v| v.is_finite())
        .collect()
}

/// Direction-normalised ratio: > 1 means worse than the baseline whatever the metric's direction.
pub fn normalised(ratio: f64, better: Better) -> f64 {
    match better {
        Better::Lower => ratio,
        Better::Higher => 1.0 / ratio,
    }
}

/// The smallest two-sided p-value the Mann-Whitney test can produce for these sample sizes
/// (complete separation, no ties).
pub fn min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
    let b: Vec<f64> = (n1..n1 + n2).map(|i| i as f64).collect();
    stats::mann_whitney_u(&a, &b).1
}

/// Smallest equal run count per side at which the test can reach α.
pub fn runs_needed() -> usize {
    (2..100).find(|&n| min_p(n, n) < ALPHA).unwrap_or(100)
}

/// Compare `runs` (first = baseline). `names` are what the user called them.
pub fn compare(runs: &[(String, RunRecord)], opts: Options) -> Comparison {
    assert!(!runs.is_empty());
    let columns: Vec<Column> = runs
        .iter()
        .map(|(name, r)| Column {
            name: name.clone(),
            run_id: r.run_id.to_string(),
            label: r.label.clone(),
            os: r.machine.os.clone(),
            complete: r.complete,
        })
        .collect();

    // Rows: every (benchmark, metric) in any run, in order of first appearance.
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, r) in runs {
        for b in &r.benchmarks {
            for m in &b.metrics {
                let k = (b.id.clone(), m.name.clone());
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    let mut rows = Vec::new();
    let mut too_few = false;
    let mut lost = false;
    for (bid, mname) in &keys {
        let found: Vec<Option<(&crate::model::BenchmarkResult, &MetricResult)>> = runs
            .iter()
            .map(|(_, r)| {
                r.benchmark(bid)
                    .and_then(|b| b.metrics.iter().find(|m| &m.name == mname).map(|m| (b, m)))
            })
            .collect();
        let Some((b0, m0)) = found.iter().flatten().next().copied() else {
            continue;
        };
        let base_vals = found[0].map(|(_, m)| per_run(m)).unwrap_or_default();
        let cells = found
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let vals = f.map(|(_, m)| per_run(m)).unwrap_or_default();
                let note = match f {
                    None => Some("not in this run".to_string()),
                    Some((b, _)) if vals.is_empty() => Some(
                        b.error
                            .as_ref()
                            .map(|e| e.to_string())
                            .unwrap_or_else(|| "no finished runs".into()),
                    ),
                    _ => None,
                };
                let center = (!vals.is_empty()).then(|| stats::median(&vals));
                let vs_base = (i > 0 && !vals.is_empty() && !base_vals.is_empty()).then(|| {
                    let ratio = stats::median(&vals) / stats::median(&base_vals);
                    let (lo, hi) = stats::bootstrap_ratio_ci(
                        &base_vals,
                        &vals,
                        0.95,
                        stats::BOOTSTRAP_RESAMPLES,
                        stats::BOOTSTRAP_SEED,
                    );
                    let p = stats::mann_whitney_u(&base_vals, &vals).1;
                    Delta {
                        ratio,
                        ci95: [lo, hi],
                        p,
                        q: p,
                        min_p: min_p(base_vals.len(), vals.len()),
                        verdict: Verdict::Same,
                    }
                });
                Cell {
                    center,
                    runs: vals.len(),
                    note,
                    vs_base,
                }
            })
            .collect();
        rows.push(Row {
            benchmark: bid.clone(),
            suite: b0.suite.clone(),
            metric: mname.clone(),
            unit: m0.unit,
            better: m0.better,
            cells,
        });
    }

    // Benjamini-Hochberg per pair (baseline vs column j), then verdicts.
    for j in 1..columns.len() {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].cells[j].vs_base.is_some())
            .collect();
        let ps: Vec<f64> = idx
            .iter()
            .map(|&i| rows[i].cells[j].vs_base.as_ref().unwrap().p)
            .collect();
        let qs = stats::benjamini_hochberg(&ps);
        for (k, &i) in idx.iter().enumerate() {
            let better = rows[i].better;
            let d = rows[i].cells[j].vs_base.as_mut().unwrap();
            d.q = qs[k];
            d.verdict = verdict(d, better, opts.noise);
            too_few |= d.verdict == Verdict::TooFewRuns;
            lost |= d.lost_to_correction();
        }
    }

    // Geometric-mean summary per suite over metrics with results in every run.
    let mut suites: Vec<SuiteSummary> = Vec::new();
    let mut suite_names: Vec<String> = Vec::new();
    for r in &rows {
        if !suite_names.contains(&r.suite) {
            suite_names.push(r.suite.clone());
        }
    }
    let mut excluded_nonpositive = false;
    for s in &suite_names {
        let present: Vec<&Row> = rows
            .iter()
            .filter(|r| &r.suite == s && r.cells.iter().all(|c| c.center.is_some()))
            .collect();
        let usable: Vec<&&Row> = present
            .iter()
            .filter(|r| r.cells.iter().all(|c| c.center.unwrap() > 0.0))
            .collect();
        excluded_nonpositive |= usable.len() < present.len();
        let geomean = (1..columns.len())
            .map(|j| {
                let xs: Vec<f64> = usable
                    .iter()
                    .map(|r| normalised(r.cells[j].vs_base.as_ref().unwrap().ratio, r.better))
                    .collect();
                stats::geometric_mean(&xs)
            })
            .collect();
        suites.push(SuiteSummary {
            suite: s.clone(),
            geomean,
            metrics: usable.len(),
        });
    }

    let mut footnotes = Vec::new();
    if too_few {
        footnotes.push(format!(
            "(a) too few runs to detect a difference: with these run counts the Mann-Whitney test can never reach p < {ALPHA}; need >= {} runs per side",
            runs_needed()
        ));
    }
    if lost {
        footnotes.push(format!(
            "(b) p < {ALPHA} before, but not after, the Benjamini-Hochberg correction for the number of metrics compared; more runs per side give the test more power"
        ));
    }
    if columns.len() > 1 {
        footnotes.push(format!(
            "ratio = median of per-run medians vs the baseline ({}), 95 % bootstrap CI; better/worse only when the Benjamini-Hochberg adjusted Mann-Whitney p < {ALPHA} and the CI lies outside ±{} %; ~ = no difference shown",
            columns[0].name,
            trim_num(opts.noise * 100.0)
        ));
        footnotes.push(
            "geomean: geometric mean over the suite's metrics present in every run of direction-normalised ratios (> 1 = worse than the baseline)".to_string(),
        );
    }
    if excluded_nonpositive {
        footnotes.push(
            "metrics with a zero or negative value are left out of the geometric mean".into(),
        );
    }
    if columns.iter().any(|c| !c.complete) {
        footnotes.push(
            "a run marked (incomplete) was interrupted; only its finished benchmarks are compared"
                .into(),
        );
    }

    Comparison {
        columns,
        noise: opts.noise,
        alpha: ALPHA,
        differences: differences(runs),
        rows,
        suites,
        footnotes,
    }
}

fn verdict(d: &Delta, better: Better, noise: f64) -> Verdict {
    let outside = d.ci95[0] > 1.0 + noise || d.ci95[1] < 1.0 - noise;
    if d.q < ALPHA && outside {
        if normalised(d.ratio, better) > 1.0 {
            Verdict::Worse
        } else {
            Verdict::Better
        }
    } else if d.min_p >= ALPHA {
        Verdict::TooFewRuns
    } else {
        Verdict::Same
    }
}

impl Comparison {
    /// Metrics of column `j` that are worse than the baseline by at least `threshold` (fraction).
    pub fn regressions(&self, threshold: f64) -> Vec<(&Row, usize, f64)> {
        let mut out = Vec::new();
        for r in &self.rows {
            for (j, c) in r.cells.iter().enumerate().skip(1) {
                if let Some(d) = &c.vs_base {
                    let n = normalised(d.ratio, r.better);
                    if d.verdict == Verdict::Worse && n - 1.0 >= threshold {
                        out.push((r, j, n - 1.0));
                    }
                }
            }
        }
        out
    }
}

/// Fields that change from run to run on the same machine and say nothing about it.
const VOLATILE: &[&str] = &[
    "taken_at",
    "load_avg",
    "cpu_pressure",
    "cpu_time",
    "procs_running",
    "procs_blocked",
    "mem_available_bytes",
    "swap_free_bytes",
    "notes",
    "reported_mhz",
];

/// Flatten a JSON value into `path = value` leaves.
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if VOLATILE.contains(&k.as_str()) {
                    continue;
                }
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, out);
            }
        }
        serde_json::Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let s: Vec<String> = a.iter().map(leaf).collect();
            out.insert(prefix.to_string(), s.join(","));
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        x => {
            out.insert(prefix.to_string(), leaf(x));
        }
    }
}

fn leaf(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "—".into(),
        serde_json::Value::String(s) => s.clone(),
        x => x.to_string(),
    }
}

/// The comparable facts of a run, flattened: machine, environment at start, tool, config.
pub fn facts(r: &RunRecord) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten("machine", &to_value(&r.machine), &mut out);
    flatten("environment", &to_value(&r.environment.start), &mut out);
    flatten("tool", &to_value(&r.tool), &mut out);
    for (k, x) in [
        ("config.runs", r.config.runs.to_string()),
        ("config.warmup_runs", r.config.warmup_runs.to_string()),
        ("config.run_time_ms", r.config.run_time_ms.to_string()),
    ] {
        out.insert(k.to_string(), x);
    }
    out
}

fn to_value<T: Serialize>(x: &T) -> serde_json::Value {
    serde_json::to_value(x).unwrap_or(serde_json::Value::Null)
}

/// Machine/environment fields whose values differ between the runs.
pub fn differences(runs: &[(String, RunRecord)]) -> Vec<FieldDiff> {
    if runs.len() < 2 {
        return Vec::new();
    }
    let all: Vec<BTreeMap<String, String>> = runs.iter().map(|(_, r)| facts(r)).collect();
    let mut keys: Vec<&String> = all.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let vals: Vec<String> = all
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or_else(|| "—".into()))
                .collect();
            (vals.iter().any(|v| v != &vals[0])).then(|| FieldDiff {
                field: k.clone(),
                values: vals,
            })
        })
        .collect()
}

/// A number without trailing zeros: 2 → "2", 2.5 → "2.5".
pub fn trim_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
