//! Comparison of 2..N runs: the first is the baseline, every other run is compared with it.
//!
//! Method (see `docs` in README and `/reference/results.md`): the unit is one independent run.
//! Per benchmark and metric, with `a` = the baseline's per-run medians and `b` = the other run's:
//!
//! * **Change.** Where every per-run value on both sides is positive, the ratio of medians
//!   `median(b) / median(a)` with a 95 % percentile-bootstrap CI ([`stats::bootstrap_ratio_ci`],
//!   fixed seed). A ratio means nothing for zero or negative values (a baseline of 0 dropped
//!   frames has no ratio; −5 → +10 ns would give a negative one), so there the change is the
//!   difference of medians `median(b) − median(a)` in the metric's unit with its bootstrap CI
//!   ([`stats::bootstrap_diff_ci`]) ([`Basis`]).
//! * **Test.** A two-sided Mann-Whitney U test over the per-run values ([`stats::mann_whitney`]:
//!   exact for up to 40 runs in total, ties included), p-values adjusted with Benjamini-Hochberg
//!   over every directed metric compared in that pair.
//! * **Verdict.** better/worse only when the adjusted p is below α = 0.05 *and* the whole CI lies
//!   outside the noise band (±2 % by default; for a difference: ± 2 % of |median(a)|, so ± 0
//!   for a baseline of 0); otherwise `~`. When the run counts are too small for the test to ever
//!   reach α, the verdict says so. The direction comes from the metric: for lower-is-better an
//!   increase is worse, whatever the signs of the values.
//! * **Neutral metrics** ([`Better::Neutral`], verification figures such as the CPU a task
//!   really used vs its target) get their change, CI and p, but never a better/worse verdict,
//!   and count in no correction, summary or regression check.
//! * **Regressions** (`--fail-on-regression X`): a *worse* verdict whose direction-normalised
//!   change is at least X: the ratio's change, or for a difference `|Δ| / |median(a)|`; with a
//!   baseline of 0 there is no relative size, so any significant worse change counts (0 → 5
//!   dropped frames is a regression at any threshold).
//!
//! Summary per suite: the geometric mean of direction-normalised ratios over the directed metrics
//! compared by ratio in every run. Above every comparison: the machine/environment fields and
//! the settings (run config; each benchmark's parameters as asked and as applied/read back) that
//! differ; a cell whose benchmark ran with settings other than the baseline's is marked.

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
    /// How this run's machine was busier or quieter than the baseline's while it measured (load,
    /// CPU pressure, steal), when beyond [`ENV_THRESHOLDS`]: its verdicts are marked `(e)`.
    pub environment_differs: Option<String>,
}

/// How much two runs' environments may differ before their verdicts are marked: CPU busy time
/// of the whole machine (percentage points of all CPUs), CPU pressure (`some avg10`, points) and
/// steal (points), each the larger of the start and end samples.
pub const ENV_THRESHOLDS: (f64, f64, f64) = (20.0, 10.0, 5.0);

/// (busy %, CPU pressure %, steal %) of a run's environment: the larger of its start and end
/// samples, where recorded.
fn environment_load(r: &RunRecord) -> [Option<f64>; 3] {
    let samples: Vec<&crate::system::Environment> = std::iter::once(&r.environment.start)
        .chain(r.environment.end.as_ref())
        .collect();
    let max = |f: &dyn Fn(&crate::system::Environment) -> Option<f64>| {
        samples.iter().filter_map(|e| f(e)).reduce(f64::max)
    };
    [
        max(&|e| e.cpu_time.as_ref().and_then(|c| c.window_busy_pct)),
        max(&|e| e.cpu_pressure.as_ref().map(|p| p.some_avg10)),
        max(&|e| e.cpu_time.as_ref().and_then(|c| c.window_steal_pct)),
    ]
}

/// What differs beyond [`ENV_THRESHOLDS`] between `r`'s environment and the baseline's.
pub fn environment_contrast(base: &RunRecord, r: &RunRecord) -> Option<String> {
    let (a, b) = (environment_load(base), environment_load(r));
    let limits = [ENV_THRESHOLDS.0, ENV_THRESHOLDS.1, ENV_THRESHOLDS.2];
    let names = ["CPUs busy", "CPU pressure", "steal"];
    let parts: Vec<String> = (0..3)
        .filter_map(|i| {
            let (x, y) = (a[i]?, b[i]?);
            ((y - x).abs() > limits[i]).then(|| format!("{} {y:.0} % vs {x:.0} %", names[i]))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
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
    /// A neutral metric (verification figure): its change is shown, never judged.
    Neutral,
    /// One side's figure is a bound (≥/≤), not a measurement: the change is not judged.
    Bound,
}

impl Verdict {
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "~",
            Verdict::TooFewRuns => "~ (a)",
            Verdict::Neutral => "neutral",
            Verdict::Bound => "bound",
        }
    }
}

/// How a change is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// `median(b) / median(a)`: every per-run value on both sides is positive.
    Ratio,
    /// `median(b) − median(a)` in the metric's unit: some value is zero or negative, where a
    /// ratio is undefined or misleading.
    Difference,
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

    /// Direction-normalised relative change as a fraction (+ = worse, − = better):
    /// `ratio − 1` (inverted for higher-is-better), or for a difference `Δ / |baseline|`
    /// signed by direction, ±∞ when the baseline is 0 and Δ ≠ 0. 0 for neutral metrics.
    pub fn worse_fraction(&self, better: Better, baseline: f64) -> f64 {
        let toward_worse = match better {
            Better::Neutral => return 0.0,
            Better::Lower => 1.0,
            Better::Higher => -1.0,
        };
        match self.basis {
            Basis::Ratio => normalised(self.ratio, better) - 1.0,
            Basis::Difference => {
                let w = toward_worse * self.difference;
                if w == 0.0 {
                    0.0
                } else if baseline == 0.0 {
                    w.signum() * f64::INFINITY
                } else {
                    w / baseline.abs()
                }
            }
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
    /// This benchmark's settings (asked or applied) differ from the baseline's; the fields are
    /// in [`Comparison::settings`].
    pub settings_differ: bool,
    /// The run's environment differed from the baseline's beyond [`ENV_THRESHOLDS`]: a verdict
    /// here is marked `(e)`.
    pub environment_differs: bool,
    /// The figure is a bound, not a measurement (see `MetricResult::bound`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<crate::model::BoundKind>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    /// Whether the change is judged by the ratio or by the difference of medians.
    pub basis: Basis,
    /// median(this) / median(baseline); NaN (null in JSON) when the basis is the difference.
    pub ratio: f64,
    /// 95 % bootstrap CI of the ratio; NaN (null) when the basis is the difference.
    pub ci95: [f64; 2],
    /// median(this) − median(baseline), in the metric's unit.
    pub difference: f64,
    /// 95 % bootstrap CI of the difference.
    pub difference_ci95: [f64; 2],
    /// Two-sided Mann-Whitney U p-value, before adjustment.
    pub p: f64,
    /// True when `p` is from the exact distribution (small samples), false for the normal
    /// approximation.
    pub p_exact: bool,
    /// Benjamini-Hochberg adjusted p-value (over every directed metric compared in this pair;
    /// for a neutral metric, `p` itself).
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

/// A setting whose value differs between the runs: a field of the run config (`config.…`,
/// `benchmarks` empty) or a parameter of the listed benchmarks, as asked (e.g. `policy`) or as
/// applied and read back (e.g. `task_sched.policy`, `realtime_denied`).
#[derive(Debug, Clone, Serialize)]
pub struct SettingDiff {
    /// The benchmarks with this difference (the same values in each); empty for the run config.
    pub benchmarks: Vec<String>,
    pub field: String,
    /// One value per column ("—" when absent or when the run lacks the benchmark).
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub columns: Vec<Column>,
    pub noise: f64,
    pub alpha: f64,
    pub differences: Vec<FieldDiff>,
    pub settings: Vec<SettingDiff>,
    pub rows: Vec<Row>,
    pub suites: Vec<SuiteSummary>,
    pub footnotes: Vec<String>,
    /// Said once, at the top: what these run counts and this many metrics can detect at all.
    pub power: Option<String>,
}

/// Per-run values compared: each run's median.
fn per_run(m: &MetricResult) -> Vec<f64> {
    // Too few runs measured it to make a figure (see `runner::too_few_measured`): nothing to compare.
    if m.summary.is_none() && m.not_measured.is_some() {
        return Vec::new();
    }
    m.runs
        .iter()
        .map(|r| r.summary.p50)
        .filter(|v| v.is_finite())
        .collect()
}

/// Direction-normalised ratio: > 1 means worse than the baseline whatever the metric's direction.
/// A neutral metric has no direction: its ratio is returned as is.
pub fn normalised(ratio: f64, better: Better) -> f64 {
    match better {
        Better::Lower | Better::Neutral => ratio,
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

/// What the comparison can detect at all, or None when a single changed metric can reach
/// q < α. A change that stands alone among `metrics` compared gets q = p·m from
/// Benjamini-Hochberg, and p is at least [`min_p`] of the run counts: with 5 vs 5 runs (p ≥ 0.0079)
/// and 150 metrics that is 1.19, so nothing can be called better or worse. Says the smallest q
/// reachable and the runs per side (or the fewer metrics) that would reach α.
pub fn power_note(n1: usize, n2: usize, metrics: usize) -> Option<String> {
    if metrics == 0 || n1 == 0 || n2 == 0 {
        return None;
    }
    let p = min_p(n1, n2);
    let q = (p * metrics as f64).min(1.0);
    if q < ALPHA {
        return None;
    }
    let runs = (2..200).find(|&n| min_p(n, n) * (metrics as f64) < ALPHA);
    let max_metrics = (ALPHA / p).ceil() as usize - 1;
    Some(format!(
        "With {n1} vs {n2} runs the smallest p the test can give is {}, and a change alone among \
         the {metrics} metrics compared gets q = p × {metrics} ≥ {} (Benjamini-Hochberg): no \
         single change can reach q < {ALPHA} here. To detect one, use {}, or compare fewer \
         metrics (at most {} at these run counts: one suite, e.g. `osgauge micro cpu`).",
        crate::units::sig(p),
        crate::units::sig(q),
        match runs {
            Some(n) => format!("--runs {n} (or more) on both runs"),
            None => "many more runs".into(),
        },
        max_metrics.max(1)
    ))
}

/// Smallest equal run count per side at which the test can reach α.
pub fn runs_needed() -> usize {
    (2..100).find(|&n| min_p(n, n) < ALPHA).unwrap_or(100)
}

/// Metrics recorded before the neutral direction existed that are verification figures (they
/// were stored as higher-is-better): (benchmark id prefix, metric name).
const LEGACY_NEUTRAL: &[(&str, &str)] = &[
    ("interactivity/", "task_cpu"),
    ("interactivity/", "load_cpu"),
];

/// The direction of a row: neutral when any run (or the legacy table) says so, else the first
/// run's.
fn direction(bid: &str, metric: &str, ms: &[&MetricResult]) -> Better {
    let legacy = LEGACY_NEUTRAL
        .iter()
        .any(|(prefix, name)| bid.starts_with(prefix) && metric == *name);
    if legacy || ms.iter().any(|m| m.better == Better::Neutral) {
        Better::Neutral
    } else {
        ms[0].better
    }
}

fn delta(base_vals: &[f64], vals: &[f64]) -> Delta {
    let positive = base_vals.iter().chain(vals).all(|&v| v > 0.0);
    let (basis, ratio, ci95) = if positive {
        let (lo, hi) = stats::bootstrap_ratio_ci(
            base_vals,
            vals,
            0.95,
            stats::BOOTSTRAP_RESAMPLES,
            stats::BOOTSTRAP_SEED,
        );
        (
            Basis::Ratio,
            stats::median(vals) / stats::median(base_vals),
            [lo, hi],
        )
    } else {
        (Basis::Difference, f64::NAN, [f64::NAN, f64::NAN])
    };
    let (dlo, dhi) = stats::bootstrap_diff_ci(
        base_vals,
        vals,
        0.95,
        stats::BOOTSTRAP_RESAMPLES,
        stats::BOOTSTRAP_SEED,
    );
    let mw = stats::mann_whitney(base_vals, vals);
    Delta {
        basis,
        ratio,
        ci95,
        difference: stats::median(vals) - stats::median(base_vals),
        difference_ci95: [dlo, dhi],
        p: mw.p,
        p_exact: mw.exact,
        q: mw.p,
        min_p: min_p(base_vals.len(), vals.len()),
        verdict: Verdict::Same,
    }
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
            environment_differs: environment_contrast(&runs[0].1, r),
        })
        .collect();
    let settings = settings_differences(runs);
    let marked = |bid: &str, j: usize| {
        j > 0
            && settings
                .iter()
                .any(|d| d.benchmarks.iter().any(|b| b == bid) && d.values[j] != d.values[0])
    };

    let mut rows = rows_of(runs, &columns, marked);
    let judged = judge(&mut rows, columns.len(), opts);
    let (suites, excluded_nonpositive) = suite_summaries(&rows, columns.len());
    let footnotes = footnotes(&columns, &rows, &judged, excluded_nonpositive, opts);
    // Run counts: the most runs any metric of each side has (what the test can use at best).
    let runs_of = |j: usize| {
        rows.iter()
            .filter_map(|r| r.cells.get(j))
            .map(|c| c.runs)
            .max()
            .unwrap_or(0)
    };
    let compared = rows
        .iter()
        .filter(|r| r.better != Better::Neutral && r.cells.iter().all(|c| c.center.is_some()))
        .count();
    let power = (1..columns.len())
        .filter_map(|j| power_note(runs_of(0), runs_of(j), compared))
        .next();
    Comparison {
        power,
        columns,
        noise: opts.noise,
        alpha: ALPHA,
        differences: differences(runs),
        settings,
        rows,
        suites,
        footnotes,
    }
}

/// One row per (benchmark, metric) in any run, in order of first appearance: each run's median,
/// run count, why it has none, and its change against the baseline (not yet judged).
fn rows_of(
    runs: &[(String, RunRecord)],
    columns: &[Column],
    marked: impl Fn(&str, usize) -> bool,
) -> Vec<Row> {
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
        let ms: Vec<&MetricResult> = found.iter().flatten().map(|(_, m)| *m).collect();
        let better = direction(bid, mname, &ms);
        let base_vals = found[0].map(|(_, m)| per_run(m)).unwrap_or_default();
        let cells = found
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let vals = f.map(|(_, m)| per_run(m)).unwrap_or_default();
                let note = match f {
                    None => Some("not in this run".to_string()),
                    // The real reason: the benchmark's error, else why this metric was not
                    // measured (a busy machine, counters too coarse), else no finished runs.
                    Some((b, m)) if vals.is_empty() => Some(
                        b.error
                            .as_ref()
                            .map(|e| e.to_string())
                            .or_else(|| {
                                m.not_measured
                                    .as_ref()
                                    .map(|w| format!("not measured: {w}"))
                            })
                            .unwrap_or_else(|| "no finished runs".into()),
                    ),
                    _ => None,
                };
                let center = (!vals.is_empty()).then(|| stats::median(&vals));
                let vs_base = (i > 0 && !vals.is_empty() && !base_vals.is_empty())
                    .then(|| delta(&base_vals, &vals));
                Cell {
                    center,
                    runs: vals.len(),
                    note,
                    vs_base,
                    settings_differ: f.is_some() && found[0].is_some() && marked(bid, i),
                    environment_differs: i > 0 && columns[i].environment_differs.is_some(),
                    bound: f.and_then(|(_, m)| m.bound.as_ref().map(|b| b.kind)),
                }
            })
            .collect();
        rows.push(Row {
            benchmark: bid.clone(),
            suite: b0.suite.clone(),
            metric: mname.clone(),
            unit: m0.unit,
            better,
            cells,
        });
    }

    rows
}

/// What judging the rows found, for the footnotes.
#[derive(Default)]
struct Judged {
    too_few: bool,
    lost: bool,
    any_bound: bool,
}

/// Benjamini-Hochberg per pair (baseline vs column j) over the directed metrics, then each cell's
/// verdict; a bound on either side is no test.
fn judge(rows: &mut [Row], ncols: usize, opts: Options) -> Judged {
    let mut f = Judged::default();
    for j in 1..ncols {
        // A bound on either side is no test: out of the correction, verdict "bound".
        let bounded = |r: &Row| r.cells[0].bound.is_some() || r.cells[j].bound.is_some();
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| {
                rows[i].better != Better::Neutral
                    && rows[i].cells[j].vs_base.is_some()
                    && !bounded(&rows[i])
            })
            .collect();
        let ps: Vec<f64> = idx
            .iter()
            .map(|&i| rows[i].cells[j].vs_base.as_ref().unwrap().p)
            .collect();
        let qs = stats::benjamini_hochberg(&ps);
        for (k, &i) in idx.iter().enumerate() {
            rows[i].cells[j].vs_base.as_mut().unwrap().q = qs[k];
        }
        for row in rows.iter_mut() {
            let better = row.better;
            let base = row.cells[0].center.unwrap_or(f64::NAN);
            let is_bound = bounded(row);
            if let Some(d) = row.cells[j].vs_base.as_mut() {
                if is_bound {
                    d.verdict = Verdict::Bound;
                    f.any_bound = true;
                    continue;
                }
                d.verdict = verdict(d, better, base, opts.noise);
                f.too_few |= d.verdict == Verdict::TooFewRuns;
                f.lost |= d.lost_to_correction();
            }
        }
    }

    f
}

/// Geometric-mean summary per suite over directed metrics compared by ratio in every run; true
/// when a metric was left out for a zero or negative value.
fn suite_summaries(rows: &[Row], ncols: usize) -> (Vec<SuiteSummary>, bool) {
    let mut suites: Vec<SuiteSummary> = Vec::new();
    let mut suite_names: Vec<String> = Vec::new();
    for r in rows {
        if !suite_names.contains(&r.suite) {
            suite_names.push(r.suite.clone());
        }
    }
    let mut excluded_nonpositive = false;
    for s in &suite_names {
        let present: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                &r.suite == s
                    && r.better != Better::Neutral
                    && r.cells
                        .iter()
                        .all(|c| c.center.is_some() && c.bound.is_none())
            })
            .collect();
        let usable: Vec<&&Row> = present
            .iter()
            .filter(|r| {
                r.cells
                    .iter()
                    .skip(1)
                    .all(|c| c.vs_base.as_ref().is_some_and(|d| d.basis == Basis::Ratio))
            })
            .collect();
        excluded_nonpositive |= usable.len() < present.len();
        let geomean = (1..ncols)
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

    (suites, excluded_nonpositive)
}

/// The footnotes a comparison needs: what its marks mean and what qualifies its verdicts.
fn footnotes(
    columns: &[Column],
    rows: &[Row],
    judged: &Judged,
    excluded_nonpositive: bool,
    opts: Options,
) -> Vec<String> {
    let mut footnotes = Vec::new();
    if judged.any_bound {
        footnotes.push(
            "bound: a figure printed with ≥ or ≤ is a bound (a ramp that ran out of steps, a sweep \
             that ended before its effect), not a measurement: its change is not judged and it is \
             left out of the geomean"
                .to_string(),
        );
    }
    if judged.too_few {
        footnotes.push(format!(
            "(a) too few runs to detect a difference: with these run counts the Mann-Whitney test can never reach p < {ALPHA}; need >= {} runs per side",
            runs_needed()
        ));
    }
    if judged.lost {
        footnotes.push(format!(
            "(b) p < {ALPHA} before, but not after, the Benjamini-Hochberg correction for the number of metrics compared; more runs per side give the test more power"
        ));
    }
    if rows
        .iter()
        .any(|r| r.cells.iter().any(|c| c.settings_differ))
    {
        footnotes.push(
            "(s) this benchmark ran with settings (asked or applied) other than the baseline's: see \"Settings that differ\"; the figures were not measured under the same conditions".into(),
        );
    }
    if columns.len() > 1 {
        footnotes.push(format!(
            "change = ratio of the medians of per-run medians vs the baseline ({}) with its 95 % bootstrap CI; Δ = their difference in the metric's unit (pp = percentage points), used where a value is zero or negative and a ratio means nothing. p = two-sided Mann-Whitney p over per-run values (exact for <= {} runs in total), q = p adjusted by Benjamini-Hochberg over the metrics compared (shown when it differs); better/worse only when q < {ALPHA} and the CI lies outside ±{} % (for Δ: ±{} % of the baseline, i.e. ±0 for a baseline of 0); ~ = no difference shown",
            columns[0].name,
            stats::MWU_EXACT_MAX_TOTAL,
            trim_num(opts.noise * 100.0),
            trim_num(opts.noise * 100.0)
        ));
        footnotes.push(
            "geomean: geometric mean over the suite's metrics present in every run of direction-normalised ratios (> 1 = worse than the baseline)".to_string(),
        );
    }
    if rows.iter().any(|r| r.better == Better::Neutral) {
        footnotes.push(
            "neutral: a verification figure (achieved vs its target, e.g. the CPU a task or load really used); its change is shown but never called better or worse, and it counts in no geomean or regression check".into(),
        );
    }
    if excluded_nonpositive {
        footnotes.push(
            "metrics with a zero or negative value are compared by their difference and left out of the geometric mean".into(),
        );
    }
    for (j, c) in columns.iter().enumerate().skip(1) {
        if let Some(d) = &c.environment_differs {
            footnotes.push(format!(
                "(e) [{j}] {} ran while the machine was in another state than for the baseline ({d}): its better/worse verdicts may reflect the machine, not the system under test",
                c.name
            ));
        }
    }
    if columns.iter().any(|c| !c.complete) {
        footnotes.push(
            "a run marked (incomplete) was interrupted; only its finished benchmarks are compared"
                .into(),
        );
    }

    footnotes
}

fn verdict(d: &Delta, better: Better, baseline: f64, noise: f64) -> Verdict {
    if better == Better::Neutral {
        return Verdict::Neutral;
    }
    let (outside, change) = match d.basis {
        Basis::Ratio => (
            d.ci95[0] > 1.0 + noise || d.ci95[1] < 1.0 - noise,
            d.ratio - 1.0,
        ),
        Basis::Difference => {
            let band = noise * baseline.abs();
            (
                d.difference_ci95[0] > band || d.difference_ci95[1] < -band,
                d.difference,
            )
        }
    };
    if d.q < ALPHA && outside {
        let worse = match better {
            Better::Lower => change > 0.0,
            _ => change < 0.0,
        };
        if worse {
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
    /// Metrics of column `j` that are worse than the baseline by at least `threshold` (fraction),
    /// with their direction-normalised relative change ([`Delta::worse_fraction`]; +∞ for a
    /// significant worse change from a baseline of 0, which exceeds every threshold).
    pub fn regressions(&self, threshold: f64) -> Vec<(&Row, usize, f64)> {
        let mut out = Vec::new();
        for r in &self.rows {
            let base = r.cells[0].center.unwrap_or(f64::NAN);
            for (j, c) in r.cells.iter().enumerate().skip(1) {
                if let Some(d) = &c.vs_base {
                    let w = d.worse_fraction(r.better, base);
                    if d.verdict == Verdict::Worse && w >= threshold {
                        out.push((r, j, w));
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

pub use crate::model::{ParamKind, param_kind};

/// Flatten a JSON value into `path = value` leaves, leaving out the keys in `skip` (at any depth).
fn flatten_skipping(
    prefix: &str,
    v: &serde_json::Value,
    skip: &[&str],
    out: &mut BTreeMap<String, String>,
) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if skip.contains(&k.as_str()) {
                    continue;
                }
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_skipping(&p, x, skip, out);
            }
        }
        serde_json::Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let s: Vec<String> = a.iter().map(leaf).collect();
            out.insert(prefix.to_string(), s.join(","));
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten_skipping(&format!("{prefix}[{i}]"), x, skip, out);
            }
        }
        x => {
            out.insert(prefix.to_string(), leaf(x));
        }
    }
}

/// Flatten a JSON value into `path = value` leaves (volatile machine fields left out).
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    flatten_skipping(prefix, v, VOLATILE, out)
}

fn leaf(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "—".into(),
        serde_json::Value::String(s) => s.clone(),
        x => x.to_string(),
    }
}

/// The comparable facts of a run, flattened: machine, environment at start, tool.
pub fn facts(r: &RunRecord) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten("machine", &to_value(&r.machine), &mut out);
    flatten("environment", &to_value(&r.environment.start), &mut out);
    flatten("tool", &to_value(&r.tool), &mut out);
    out
}

/// The run-wide settings of a run, flattened: every field of its config.
pub fn config_settings(r: &RunRecord) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten_skipping("config", &to_value(&r.config), &[], &mut out);
    if let Some(cl) = out.get_mut("config.command_line") {
        *cl = cl.replace(',', " ");
    }
    out
}

/// The settings of one benchmark, flattened: its parameters as asked and as applied/read back,
/// measured facts ([`param_kind`]) left out.
pub fn benchmark_settings(b: &crate::model::BenchmarkResult) -> BTreeMap<String, String> {
    let settings: serde_json::Map<String, serde_json::Value> =
        b.settings().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut out = BTreeMap::new();
    flatten_skipping("", &serde_json::Value::Object(settings), &[], &mut out);
    out
}

fn to_value<T: Serialize>(x: &T) -> serde_json::Value {
    serde_json::to_value(x).unwrap_or(serde_json::Value::Null)
}

/// Keys whose values differ between the maps (a missing key counts as "—").
fn differing(all: &[Option<BTreeMap<String, String>>]) -> Vec<(String, Vec<String>)> {
    let mut keys: Vec<&String> = all.iter().flatten().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let vals: Vec<Option<String>> = all
                .iter()
                .map(|m| {
                    m.as_ref()
                        .map(|m| m.get(k).cloned().unwrap_or_else(|| "—".into()))
                })
                .collect();
            let present: Vec<&String> = vals.iter().flatten().collect();
            (present.iter().any(|v| *v != present[0])).then(|| {
                (
                    k.clone(),
                    vals.into_iter()
                        .map(|v| v.unwrap_or_else(|| "—".into()))
                        .collect(),
                )
            })
        })
        .collect()
}

/// Machine/environment fields whose values differ between the runs.
pub fn differences(runs: &[(String, RunRecord)]) -> Vec<FieldDiff> {
    if runs.len() < 2 {
        return Vec::new();
    }
    let all: Vec<Option<BTreeMap<String, String>>> =
        runs.iter().map(|(_, r)| Some(facts(r))).collect();
    differing(&all)
        .into_iter()
        .map(|(field, values)| FieldDiff { field, values })
        .collect()
}

/// Settings whose values differ between the runs: the run config, then per benchmark (present in
/// at least two runs) its parameters as asked and as applied. A field with the same values in
/// several benchmarks is listed once with all of them.
pub fn settings_differences(runs: &[(String, RunRecord)]) -> Vec<SettingDiff> {
    if runs.len() < 2 {
        return Vec::new();
    }
    let config: Vec<Option<BTreeMap<String, String>>> =
        runs.iter().map(|(_, r)| Some(config_settings(r))).collect();
    let mut out: Vec<SettingDiff> = differing(&config)
        .into_iter()
        .map(|(field, values)| SettingDiff {
            benchmarks: Vec::new(),
            field,
            values,
        })
        .collect();
    let mut ids: Vec<&str> = Vec::new();
    for (_, r) in runs {
        for b in &r.benchmarks {
            if !ids.contains(&b.id.as_str()) {
                ids.push(&b.id);
            }
        }
    }
    let first = out.len();
    for id in ids {
        let per: Vec<Option<BTreeMap<String, String>>> = runs
            .iter()
            .map(|(_, r)| r.benchmark(id).map(benchmark_settings))
            .collect();
        if per.iter().flatten().count() < 2 {
            continue;
        }
        for (field, values) in differing(&per) {
            match out[first..]
                .iter_mut()
                .find(|d| d.field == field && d.values == values)
            {
                Some(d) => d.benchmarks.push(id.to_string()),
                None => out.push(SettingDiff {
                    benchmarks: vec![id.to_string()],
                    field,
                    values,
                }),
            }
        }
    }
    out
}

/// A number without trailing zeros: 2 → "2", 2.5 → "2.5".
pub fn trim_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
