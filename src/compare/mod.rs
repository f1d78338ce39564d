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

pub mod nested;
pub mod render;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::record::{MetricResult, RunRecord};
use crate::stats;
use crate::units::{Better, Unit};

/// Significance level of the Mann-Whitney test (after Benjamini-Hochberg adjustment).
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone)]
pub struct Options {
    /// Half-width of the noise band as a fraction (0.02 = ±2 %).
    pub noise: f64,
    /// This machine's between-invocation noise, learned from the store's history
    /// ([`NoiseHistory::learn`]); empty when there is none.
    pub history: NoiseHistory,
    /// The two sides are the arms of one A/B run (`osgauge ab`): pair their runs by round.
    /// Set by itself when both records say so (`config.ab.pair`).
    pub paired: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            noise: 0.02,
            history: NoiseHistory::default(),
            paired: false,
        }
    }
}

pub use nested::{Noise, NoiseHistory};

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
    /// Each side is one invocation and this machine's between-invocation noise is unknown: the
    /// runs of one invocation cannot say whether the change is the system or the machine's drift.
    NoiseUnknown,
    /// Significant, but both sides are the same system and the drift reference moved as much in
    /// the same direction: the machine's drift explains it.
    Drift,
    /// The drift reference itself: shown, never judged.
    Reference,
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
            Verdict::NoiseUnknown => "~ (u)",
            Verdict::Drift => "~ (d)",
            Verdict::Reference => "ref",
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
    /// Median of this side's per-run medians (several invocations: the median of their
    /// medians); None when it has no finished runs.
    pub center: Option<f64>,
    /// Runs, over every invocation of this side.
    pub runs: usize,
    /// Invocations of osgauge (stored runs) this side holds.
    pub invocations: usize,
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
    pub bound: Option<crate::record::BoundKind>,
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
    /// Smallest p the test can give (0 for the t test on invocations; kept for readers of
    /// older exports).
    pub min_p: f64,
    pub verdict: Verdict,
    /// Where the between-invocation noise came from (unknown: no verdict).
    pub noise: Noise,
    /// The smallest change this comparison could detect for the metric, as a fraction (the 95 %
    /// CI's half-width, at least the noise band): what a `~` excludes. None when the noise is
    /// unknown.
    pub detectable: Option<f64>,
    /// The drift reference's direction-normalised change for this metric's family (> 1: the
    /// machine was slower on this side), when both sides ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<f64>,
    /// A better/worse verdict between different systems where the drift reference moved the
    /// same way by at least half as much: part of it may be the host (`(r)`).
    pub reference_alike: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub suite: String,
    pub metric: String,
    pub unit: Unit,
    pub better: Better,
    /// The benchmark's headline (first declared) metric: corrected for multiple comparisons
    /// within the primary family; the other metrics form the secondary family.
    pub primary: bool,
    /// One cell per column; the first is the baseline.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SuiteSummary {
    pub suite: String,
    /// Per non-baseline column: geometric mean of direction-normalised ratios (> 1 = worse than
    /// the baseline), None when no metric is present in every run.
    pub geomean: Vec<Option<f64>>,
    /// Per non-baseline column: the 95 % CI of the geometric mean (its metrics' errors taken
    /// as fully correlated, as a drift of the machine makes them), None when a metric's noise is
    /// unknown.
    pub ci95: Vec<Option<[f64; 2]>>,
    /// Per non-baseline column: the geometric mean's verdict by the same rule as a metric's.
    pub verdict: Vec<Option<Verdict>>,
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
    /// Said once, at the top: what these invocations and this machine's history can detect.
    pub power: Option<String>,
    /// Per non-baseline column: the drift reference's change vs the baseline, one line per
    /// reference figure ("CPU chain +22.1 %"); empty when a side did not run it.
    pub drift: Vec<Vec<String>>,
    /// Per column: whether it is the same system as the baseline (host, CPU, OS, kernel), so
    /// that the drift reference can tell the host's drift from the system.
    pub same_system: Vec<bool>,
    /// Per column: the switch command of an A/B arm (with its last read-back), when it is one.
    pub ab: Vec<Option<String>>,
}

use nested::per_run;

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

/// One side of a row: per invocation, its runs' values.
fn side_values(
    found: &[Option<(&crate::record::BenchmarkResult, &MetricResult)>],
) -> Vec<Vec<f64>> {
    found
        .iter()
        .flatten()
        .map(|(_, m)| per_run(m))
        .filter(|v| !v.is_empty())
        .collect()
}

/// The change of `side` against `base` for one metric (not yet judged).
fn delta(base: &nested::Side, side: &nested::Side, noise_band: f64) -> Option<Delta> {
    let all = || base.invocations.iter().chain(&side.invocations).flatten();
    let positive = all().all(|&v| v > 0.0);
    let lin = nested::estimate(base, side, false)?;
    let center = |s: &nested::Side| {
        let c: Vec<f64> = s.invocations.iter().map(|v| stats::median(v)).collect();
        stats::median(&c)
    };
    let (ca, cb) = (center(base), center(side));
    let test = if positive {
        nested::estimate(base, side, true)?
    } else {
        lin
    };
    let difference = if positive { cb - ca } else { lin.change };
    Some(delta_of(test, lin, difference, ca, noise_band))
}

/// A change not yet judged, from its test (log scale for a ratio) and its estimate on the
/// metric's own scale; `ca`: the baseline's centre (for a difference's relative size).
fn delta_of(
    test: nested::Estimate,
    lin: nested::Estimate,
    difference: f64,
    ca: f64,
    noise_band: f64,
) -> Delta {
    let detectable = (test.noise != Noise::Unknown).then(|| {
        let d = if test.log {
            test.half_width.exp() - 1.0
        } else if ca != 0.0 {
            test.half_width / ca.abs()
        } else {
            f64::INFINITY
        };
        d.max(noise_band)
    });
    let [lo, hi] = test.ci();
    let (basis, ratio, ci95) = if test.log {
        (Basis::Ratio, test.change.exp(), [lo.exp(), hi.exp()])
    } else {
        (Basis::Difference, f64::NAN, [f64::NAN, f64::NAN])
    };
    Delta {
        basis,
        ratio,
        ci95,
        difference,
        difference_ci95: lin.ci(),
        p: test.p,
        p_exact: false,
        q: test.p,
        min_p: 0.0,
        verdict: Verdict::Same,
        noise: test.noise,
        detectable,
        reference: None,
        reference_alike: false,
    }
}

/// Whether two records are of the same system: host, CPU, OS and kernel (the drift reference
/// can then only have measured the host).
fn same_system(a: &RunRecord, b: &RunRecord) -> bool {
    nested::machine_key(a) == nested::machine_key(b)
        && a.machine.kernel_version == b.machine.kernel_version
}

/// Compare `runs` (first = baseline), one invocation each. `names` are what the user called them.
pub fn compare(runs: &[(String, RunRecord)], opts: Options) -> Comparison {
    let groups: Vec<(String, Vec<RunRecord>)> = runs
        .iter()
        .map(|(n, r)| (n.clone(), vec![r.clone()]))
        .collect();
    compare_groups(&groups, &opts)
}

/// Compare sides (first = baseline), each one or more invocations (stored runs, e.g. every run
/// of one label): with several invocations a side's invocations are the unit of replication.
/// Machine, environment and settings are those of each side's most recent invocation.
pub fn compare_groups(groups: &[(String, Vec<RunRecord>)], opts: &Options) -> Comparison {
    assert!(!groups.is_empty() && groups.iter().all(|(_, g)| !g.is_empty()));
    let runs: Vec<(String, RunRecord)> = groups
        .iter()
        .map(|(n, g)| (n.clone(), g.last().expect("non-empty").clone()))
        .collect();
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
    let same: Vec<bool> = groups
        .iter()
        .map(|(_, g)| {
            g.iter()
                .chain(&groups[0].1)
                .all(|r| same_system(r, &groups[0].1[0]))
        })
        .collect();
    let settings = settings_differences(&runs);
    let marked = |bid: &str, j: usize| {
        j > 0
            && settings
                .iter()
                .any(|d| d.benchmarks.iter().any(|b| b == bid) && d.values[j] != d.values[0])
    };

    let paired = opts.paired || ab_pair(groups);
    let opts = &Options {
        paired,
        ..opts.clone()
    };
    // Paired rounds cancel drift: the reference's change is then the setting's, never the host's.
    let same: Vec<bool> = same.iter().map(|&s| s && !paired).collect();
    let mut rows = rows_of(groups, &columns, marked, opts);
    let drift = reference_changes(&mut rows, columns.len());
    let judged = judge(&mut rows, columns.len(), opts, &same);
    let (suites, excluded_nonpositive) = suite_summaries(&rows, columns.len(), opts.noise);
    let mut footnotes = footnotes(&columns, &rows, &judged, excluded_nonpositive, opts.noise);
    if paired && let Some(m) = footnotes.iter_mut().find(|f| f.starts_with("Method:")) {
        *m = format!(
            "Method: an A/B run on one machine — every round ran both arms, in random order, each after its switch command; the change is the mean of the rounds' paired differences (log scale for ratios), so the machine's drift between rounds cancels; better/worse only when the paired t test gives q < {ALPHA} after Benjamini-Hochberg within the headline or the secondary metrics and its 95 % CI lies outside ±{} %; ~ within ±x % = no change larger than x could be excluded",
            trim_num(opts.noise * 100.0)
        );
    }
    let unknown = rows
        .iter()
        .flat_map(|r| r.cells.iter().skip(1))
        .filter(|c| {
            c.vs_base
                .as_ref()
                .is_some_and(|d| d.verdict == Verdict::NoiseUnknown)
        })
        .count();
    let judged_cells = rows
        .iter()
        .filter(|r| r.better != Better::Neutral && r.suite != crate::record::drift_reference::SUITE)
        .flat_map(|r| r.cells.iter().skip(1))
        .filter(|c| c.vs_base.is_some())
        .count();
    let power = (unknown > 0).then(|| noise_unknown_note(unknown, judged_cells, &groups[0].1[0]));
    Comparison {
        power,
        columns,
        noise: opts.noise,
        alpha: ALPHA,
        differences: differences(&runs),
        settings,
        rows,
        suites,
        footnotes,
        drift,
        same_system: same,
        ab: runs
            .iter()
            .map(|(_, r)| {
                r.config.ab.as_ref().map(|a| {
                    let back = a
                        .switches
                        .last()
                        .and_then(|l| l.read_back.as_deref())
                        .map(|b| format!(" (read back: {})", b.replace('\n', " ")))
                        .unwrap_or_default();
                    format!("{}{back}", a.switch)
                })
            })
            .collect(),
    }
}

/// Two sides, one record each, that are the two arms of one `osgauge ab` run.
pub fn ab_pair(groups: &[(String, Vec<RunRecord>)]) -> bool {
    let pair = |g: &(String, Vec<RunRecord>)| match g.1.as_slice() {
        [r] => r.config.ab.as_ref().map(|a| a.pair.clone()),
        _ => None,
    };
    groups.len() == 2 && pair(&groups[0]).is_some() && pair(&groups[0]) == pair(&groups[1])
}

/// The change of arm `b` against arm `a` of an A/B run, paired by round.
fn paired_delta(a: &MetricResult, b: &MetricResult, noise_band: f64) -> Option<Delta> {
    let (ra, rb) = (nested::per_round(a), nested::per_round(b));
    let positive = ra.iter().chain(&rb).all(|&(_, v)| v > 0.0);
    let lin = nested::paired(&ra, &rb, false)?;
    let test = if positive {
        nested::paired(&ra, &rb, true)?
    } else {
        lin
    };
    let ca = stats::median(&ra.iter().map(|x| x.1).collect::<Vec<_>>());
    Some(delta_of(test, lin, lin.change, ca, noise_band))
}

/// What to do when the between-invocation noise is unknown.
fn noise_unknown_note(unknown: usize, of: usize, base: &RunRecord) -> String {
    // The command to repeat, from the baseline's own configuration (never its raw command
    // line: that may hold a label or text of anyone's).
    let c = &base.config;
    let cmd = match c.preset.as_str() {
        "quick" => "run".to_string(),
        "standard" => "run --preset standard".to_string(),
        "interactivity" | "policy" => c.preset.clone(),
        _ => {
            let sel: Vec<String> = c
                .selection
                .iter()
                .take(8)
                .map(|x| crate::output::display_text(x, 40))
                .collect();
            format!("micro {} --runs {}", sel.join(" "), c.runs)
        }
    };
    format!(
        "{unknown} of {of} metric comparisons have no verdict (~ (u)): each side is one \
         invocation, and the store holds no repeated invocations of one label on this machine \
         for them, so the drift between invocations (this can be tens of %) cannot be told from \
         a change of the system. Learn it once per machine: `osgauge calibrate {cmd}` (3 \
         invocations kept in the store under the label 'calibration'), or store several \
         invocations under each label and compare the labels."
    )
}

/// One row per (benchmark, metric) in any run, in order of first appearance: each side's centre,
/// run and invocation counts, why it has none, and its change against the baseline (not yet
/// judged).
fn rows_of(
    groups: &[(String, Vec<RunRecord>)],
    columns: &[Column],
    marked: impl Fn(&str, usize) -> bool,
    opts: &Options,
) -> Vec<Row> {
    let keys = metric_keys(groups);
    let mut first_metric: BTreeMap<String, String> = BTreeMap::new();
    for (b, m) in &keys {
        first_metric.entry(b.clone()).or_insert_with(|| m.clone());
    }
    let machine_of: Vec<String> = groups
        .iter()
        .map(|(_, g)| nested::machine_key(g.last().expect("non-empty")))
        .collect();
    let mut rows = Vec::new();
    for (bid, mname) in &keys {
        let found = found_of(groups, bid, mname);
        let Some((b0, m0)) = found.iter().flatten().flatten().next().copied() else {
            continue;
        };
        let ms: Vec<&MetricResult> = found.iter().flatten().flatten().map(|(_, m)| *m).collect();
        let better = direction(bid, mname, &ms);
        let sides: Vec<nested::Side> = found
            .iter()
            .enumerate()
            .map(|(j, f)| nested::Side {
                invocations: side_values(f),
                history: opts.history.get(&machine_of[j], bid, mname),
            })
            .collect();
        let cells = (0..found.len())
            .map(|i| {
                let marked = || marked(bid, i);
                let environment_differs = i > 0 && columns[i].environment_differs.is_some();
                cell_of(&found, &sides, i, opts, marked, environment_differs)
            })
            .collect();
        rows.push(Row {
            benchmark: bid.clone(),
            suite: b0.suite.clone(),
            metric: mname.clone(),
            unit: m0.unit,
            better,
            primary: first_metric.get(bid) == Some(mname),
            cells,
        });
    }

    rows
}

/// Every (benchmark, metric) in any run of `groups` (the drift reference's included), in order
/// of first appearance.
fn metric_keys(groups: &[(String, Vec<RunRecord>)]) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, g) in groups {
        for r in g {
            for b in r.benchmarks.iter().chain(&r.reference) {
                for m in &b.metrics {
                    let k = (b.id.clone(), m.name.clone());
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
        }
    }
    keys
}

/// Per invocation of one side: the benchmark and metric found in it, if any.
type Found<'a> = Vec<Option<(&'a crate::record::BenchmarkResult, &'a MetricResult)>>;

/// Benchmark `bid`'s metric `mname` in every invocation of every side (the drift reference's
/// too).
fn found_of<'a>(groups: &'a [(String, Vec<RunRecord>)], bid: &str, mname: &str) -> Vec<Found<'a>> {
    groups
        .iter()
        .map(|(_, g)| {
            g.iter()
                .map(|r| {
                    r.benchmark(bid)
                        .or(r.reference.as_ref().filter(|x| x.id == bid))
                        .and_then(|b| b.metrics.iter().find(|m| m.name == mname).map(|m| (b, m)))
                })
                .collect()
        })
        .collect()
}

/// Side `i`'s cell of a row: its centre (median of its invocations' medians), run and
/// invocation counts, why it has no figure, and its change against the baseline (side 0), by
/// rounds when `opts.paired`. `marked()`: whether its settings of the benchmark differ from the
/// baseline's (asked only when both have the metric).
fn cell_of(
    found: &[Found],
    sides: &[nested::Side],
    i: usize,
    opts: &Options,
    marked: impl FnOnce() -> bool,
    environment_differs: bool,
) -> Cell {
    let (f, side) = (&found[i], &sides[i]);
    let newest = f.last().copied().flatten();
    let centers: Vec<f64> = side.invocations.iter().map(|v| stats::median(v)).collect();
    let center = (!centers.is_empty()).then(|| stats::median(&centers));
    let vs_base = (i > 0 && !side.invocations.is_empty() && !sides[0].invocations.is_empty())
        .then(|| {
            if opts.paired {
                let (Some((_, ma)), Some((_, mb))) = (found[0].last().copied().flatten(), newest)
                else {
                    return None;
                };
                paired_delta(ma, mb, opts.noise)
            } else {
                delta(&sides[0], side, opts.noise)
            }
        })
        .flatten();
    Cell {
        center,
        runs: side.invocations.iter().map(Vec::len).sum(),
        invocations: side.invocations.len(),
        note: empty_note(newest, side.invocations.is_empty()),
        vs_base,
        settings_differ: newest.is_some()
            && found[0].last().copied().flatten().is_some()
            && marked(),
        environment_differs,
        bound: f
            .iter()
            .flatten()
            .find_map(|(_, m)| m.bound.as_ref().map(|b| b.kind)),
    }
}

/// Why a side has no figure (`no_values`: none of its invocations has a value), given what its
/// newest invocation found: not in the run at all, else the real reason (the benchmark's error,
/// else why this metric was not measured: a busy machine, counters too coarse), else no
/// finished runs. None when it has a figure.
fn empty_note(
    newest: Option<(&crate::record::BenchmarkResult, &MetricResult)>,
    no_values: bool,
) -> Option<String> {
    match newest {
        None if no_values => Some("not in this run".to_string()),
        Some((b, m)) if no_values => Some(
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
    }
}

/// Short names of the drift reference's figures.
fn reference_name(metric: &str) -> &str {
    match metric {
        "cpu_loop" => "CPU chain",
        "syscall" => "null syscall",
        "mem_read" => "memory read",
        m => m,
    }
}

/// Mark the drift reference's rows, give every other row's cells the reference's change for
/// its family, and return per non-baseline column the reference lines to show.
fn reference_changes(rows: &mut [Row], ncols: usize) -> Vec<Vec<String>> {
    let reference = crate::record::drift_reference::SUITE;
    // family metric → per column: direction-normalised ratio (> 1: the machine was slower).
    let mut by_family: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    let mut lines = vec![Vec::new(); ncols.saturating_sub(1)];
    for r in rows.iter_mut().filter(|r| r.suite == reference) {
        let per_col: Vec<Option<f64>> = r
            .cells
            .iter()
            .map(|c| {
                c.vs_base
                    .as_ref()
                    .filter(|d| d.basis == Basis::Ratio)
                    .map(|d| normalised(d.ratio, r.better))
            })
            .collect();
        for (j, c) in r.cells.iter_mut().enumerate().skip(1) {
            if let Some(d) = c.vs_base.as_mut() {
                d.verdict = Verdict::Reference;
                if let Some(x) = per_col[j] {
                    lines[j - 1].push(format!(
                        "{} {} ({})",
                        reference_name(&r.metric),
                        render::pct(d.ratio),
                        if x >= 1.0 { "slower" } else { "faster" }
                    ));
                }
            }
        }
        by_family.insert(r.metric.clone(), per_col);
    }
    for r in rows.iter_mut().filter(|r| r.suite != reference) {
        let fam = crate::record::drift_reference::family_of(&r.suite);
        if let Some(per_col) = by_family.get(fam) {
            for (j, c) in r.cells.iter_mut().enumerate().skip(1) {
                if let Some(d) = c.vs_base.as_mut() {
                    d.reference = per_col[j];
                }
            }
        }
    }
    lines
}

/// What judging the rows found, for the footnotes.
#[derive(Default)]
struct Judged {
    lost: bool,
    any_bound: bool,
    drift: bool,
    drift_note: bool,
    secondary: bool,
}

/// Benjamini-Hochberg per pair (baseline vs column j) within each family — the benchmarks'
/// headline metrics (primary), the rest (secondary) — over the directed metrics whose noise is
/// known; then each cell's verdict. A bound on either side is no test; the drift reference is
/// never judged.
fn judge(rows: &mut [Row], ncols: usize, opts: &Options, same: &[bool]) -> Judged {
    let mut f = Judged::default();
    let reference = crate::record::drift_reference::SUITE;
    for (j, &same_j) in same.iter().enumerate().take(ncols).skip(1) {
        // A bound on either side is no test: out of the correction, verdict "bound".
        let bounded = |r: &Row| r.cells[0].bound.is_some() || r.cells[j].bound.is_some();
        for primary in [true, false] {
            let idx: Vec<usize> = (0..rows.len())
                .filter(|&i| {
                    rows[i].primary == primary
                        && rows[i].better != Better::Neutral
                        && rows[i].suite != reference
                        && rows[i].cells[j]
                            .vs_base
                            .as_ref()
                            .is_some_and(|d| d.noise != Noise::Unknown)
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
        }
        for row in rows.iter_mut() {
            if row.suite == reference {
                continue;
            }
            let better = row.better;
            let base = row.cells[0].center.unwrap_or(f64::NAN);
            let is_bound = bounded(row);
            let primary = row.primary;
            if let Some(d) = row.cells[j].vs_base.as_mut() {
                if is_bound {
                    d.verdict = Verdict::Bound;
                    f.any_bound = true;
                    continue;
                }
                d.verdict = verdict(d, better, base, opts.noise, same_j);
                f.lost |= d.lost_to_correction();
                f.drift |= d.verdict == Verdict::Drift;
                d.reference_alike = !same_j && drift_alike(d, better);
                f.drift_note |= d.reference_alike;
                f.secondary |= !primary
                    && matches!(d.verdict, Verdict::Better | Verdict::Worse | Verdict::Same);
            }
        }
    }
    f
}

/// Whether the drift reference moved in the same direction as the metric by at least half as
/// much (on a different system it cannot say whether that was the host or the system).
pub fn drift_alike(d: &Delta, better: Better) -> bool {
    let (Some(r), Basis::Ratio) = (d.reference, d.basis) else {
        return false;
    };
    if !matches!(d.verdict, Verdict::Better | Verdict::Worse) {
        return false;
    }
    let m = normalised(d.ratio, better).ln();
    let r = r.ln();
    m * r > 0.0 && r.abs() >= 0.5 * m.abs()
}

/// Geometric-mean summary per suite over directed metrics compared by ratio in every run, with
/// its CI and verdict; true when a metric was left out for a zero or negative value. The drift
/// reference has no summary.
fn suite_summaries(rows: &[Row], ncols: usize, noise: f64) -> (Vec<SuiteSummary>, bool) {
    let mut suites: Vec<SuiteSummary> = Vec::new();
    let mut suite_names: Vec<String> = Vec::new();
    for r in rows {
        if !suite_names.contains(&r.suite) && r.suite != crate::record::drift_reference::SUITE {
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
        let mut geomean = Vec::new();
        let mut cis = Vec::new();
        let mut verdicts = Vec::new();
        for j in 1..ncols {
            let deltas: Vec<(&Delta, Better)> = usable
                .iter()
                .map(|r| (r.cells[j].vs_base.as_ref().unwrap(), r.better))
                .collect();
            let xs: Vec<f64> = deltas
                .iter()
                .map(|(d, b)| normalised(d.ratio, *b))
                .collect();
            let g = stats::geometric_mean(&xs);
            // Log half-widths of the metrics' CIs; their mean is the geomean's half-width when
            // the metrics' errors are fully correlated (a drift moves them together), which is
            // the widest it can be.
            let halves: Option<Vec<f64>> = deltas
                .iter()
                .map(|(d, _)| {
                    (d.noise != Noise::Unknown && d.ci95[0] > 0.0)
                        .then(|| (d.ci95[1].ln() - d.ci95[0].ln()) / 2.0)
                })
                .collect();
            let ci = match (g, halves) {
                (Some(g), Some(h)) if !h.is_empty() => {
                    let hw = stats::mean(&h);
                    Some([g * (-hw).exp(), g * hw.exp()])
                }
                _ => None,
            };
            let v = g.map(|_| match ci {
                None => Verdict::NoiseUnknown,
                Some([lo, _]) if lo > 1.0 + noise => Verdict::Worse,
                Some([_, hi]) if hi < 1.0 - noise => Verdict::Better,
                Some(_) => Verdict::Same,
            });
            geomean.push(g);
            cis.push(ci);
            verdicts.push(v);
        }
        suites.push(SuiteSummary {
            suite: s.clone(),
            geomean,
            ci95: cis,
            verdict: verdicts,
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
    noise: f64,
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
    if judged.drift {
        footnotes.push(format!(
            "(d) significant, but both sides are the same system (host, CPU, OS, kernel) and the drift reference (reference/drift, run in every round) moved the same way by as much, within ±{} %: the machine's own drift explains the change, so it is not called",
            trim_num(noise * 100.0)
        ));
    }
    if judged.drift_note {
        footnotes.push(
            "(r) the drift reference moved the same way by at least half as much: on another system it cannot tell the host's drift from the system's own speed, so the verdict stands, but part of it may be the host".into(),
        );
    }
    if rows.iter().any(|r| {
        r.cells.iter().any(|c| {
            c.vs_base
                .as_ref()
                .is_some_and(|d| d.verdict == Verdict::NoiseUnknown)
        })
    }) {
        footnotes.push(
            "(u) no verdict: each side is one invocation and this machine's between-invocation noise is unknown (see the note at the top)".into(),
        );
    }
    if judged.secondary {
        footnotes.push(
            "† a secondary metric (not its benchmark's headline): corrected for multiple comparisons within the secondary family, apart from the headline metrics".into(),
        );
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
            "Method: the invocation (one run of osgauge) is the unit, its benchmarks' runs taken in rounds of random order; better/worse only when Welch's t over invocations — the between-invocation noise from each side's invocations or this machine's stored history — gives q < {ALPHA} after Benjamini-Hochberg within the headline or the secondary metrics, the 95 % CI lies outside ±{} %, and on the same system the drift reference does not explain it. change = ratio of the sides' centres vs the baseline ({}) with that CI; Δ = their difference in the metric's unit (pp = percentage points), used where a value is zero or negative; ~ within ±x % = no change larger than x could be excluded",
            trim_num(noise * 100.0),
            columns[0].name,
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

/// The rule every verdict follows: better/worse only when the between-invocation noise is
/// known, q < α (Welch's t on invocations, Benjamini-Hochberg within the family) and the whole
/// 95 % CI lies outside the noise band; and, when both sides are the same system, not when the
/// drift reference moved the same way by as much (the machine's drift explains it: `~ (d)`).
fn verdict(d: &Delta, better: Better, baseline: f64, noise: f64, same_system: bool) -> Verdict {
    if better == Better::Neutral {
        return Verdict::Neutral;
    }
    if d.noise == Noise::Unknown {
        return Verdict::NoiseUnknown;
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
    if !(d.q < ALPHA && outside) {
        return Verdict::Same;
    }
    if same_system && explained_by_drift(d, better, noise) {
        return Verdict::Drift;
    }
    let worse = match better {
        Better::Lower => change > 0.0,
        _ => change < 0.0,
    };
    if worse {
        Verdict::Worse
    } else {
        Verdict::Better
    }
}

/// The drift reference moved in the same direction as the metric, and at least as far (within
/// the noise band): `ln r_metric` and `ln r_ref` share a sign and `|ln r_metric| ≤ |ln r_ref| +
/// ln(1 + noise)`, both direction-normalised (> 1 = slower/worse).
pub fn explained_by_drift(d: &Delta, better: Better, noise: f64) -> bool {
    let (Some(r), Basis::Ratio) = (d.reference, d.basis) else {
        return false;
    };
    let m = normalised(d.ratio, better).ln();
    let r = r.ln();
    m * r > 0.0 && m.abs() <= r.abs() + (1.0 + noise).ln()
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

pub use crate::record::{ParamKind, param_kind};

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
    // The run order (its seed and rounds) is drawn fresh for each run: not a setting.
    flatten_skipping(
        "config",
        &to_value(&r.config),
        &["seed", "rounds"],
        &mut out,
    );
    if let Some(cl) = out.get_mut("config.command_line") {
        *cl = cl.replace(',', " ");
    }
    out
}

/// The settings of one benchmark, flattened: its parameters as asked and as applied/read back,
/// measured facts ([`param_kind`]) left out.
pub fn benchmark_settings(b: &crate::record::BenchmarkResult) -> BTreeMap<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunRecord {
        serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap()
    }

    fn keys_of(r: &RunRecord) -> Vec<(String, String)> {
        r.benchmarks
            .iter()
            .chain(&r.reference)
            .flat_map(|b| b.metrics.iter().map(|m| (b.id.clone(), m.name.clone())))
            .collect()
    }

    #[test]
    fn the_rows_are_every_metric_once_in_order_of_first_appearance() {
        let full = fixture();
        let mut second_only = full.clone();
        second_only.benchmarks = vec![full.benchmarks[1].clone()];
        let groups = [
            ("a".to_string(), vec![second_only.clone()]),
            ("b".to_string(), vec![full.clone(), full.clone()]),
        ];
        let mut expected = keys_of(&second_only);
        for k in keys_of(&full) {
            if !expected.contains(&k) {
                expected.push(k);
            }
        }
        assert_ne!(expected, keys_of(&full));
        assert_eq!(metric_keys(&groups), expected);
    }

    #[test]
    fn an_empty_cell_says_why_it_has_no_figure() {
        let r = fixture();
        let mut b = r.benchmarks[0].clone();
        let mut m = b.metrics[0].clone();
        assert_eq!(empty_note(None, true).as_deref(), Some("not in this run"));
        assert_eq!(empty_note(Some((&b, &m)), false), None);
        assert_eq!(
            empty_note(Some((&b, &m)), true).as_deref(),
            Some("no finished runs")
        );
        m.not_measured = Some("the machine was busy".into());
        assert_eq!(
            empty_note(Some((&b, &m)), true).as_deref(),
            Some("not measured: the machine was busy")
        );
        let e = crate::record::BenchError::failed("boom");
        b.error = Some(e.clone());
        assert_eq!(empty_note(Some((&b, &m)), true), Some(e.to_string()));
    }
}
