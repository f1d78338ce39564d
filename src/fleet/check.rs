//! `osgauge fleet check`: each series' newest run against its own history, by `compare`'s rule.
//!
//! A series is one machine's runs under one label (the fleet table's columns), in the order
//! asked for (start time, or a tag). Its last run is the one checked; the runs before it (at
//! most [`Options::history`]) are the baseline, each one invocation. `compare::compare_groups`
//! judges the two sides as `osgauge compare` does — the invocation as the unit, Welch's t,
//! Benjamini-Hochberg within the headline and the other metrics, the noise band, the drift
//! reference — with the between-invocation noise the new run is judged against learned from
//! the baseline itself ([`NoiseHistory::learn_series`]): the newest run is flagged when it lies
//! outside what the history's own run-to-run spread explains. A regression is a `worse` verdict
//! whose direction-normalised change is at least [`Options::threshold`].
//!
//! A series with fewer than [`MIN_HISTORY`] earlier runs is not checked, and says so.
//!
//! Pure: records in, verdicts out.

use serde::Serialize;

use super::{Machines, Order, per_machine};
use crate::compare::{self, NoiseHistory, Verdict};
use crate::record::RunRecord;
use crate::units::{Better, Unit};

/// Schema of `fleet check --export-json`.
pub const CHECK_SCHEMA: &str = "osgauge.fleet-check/1";

/// Fewest earlier runs a series needs before its newest run is checked (with two, the spread
/// of the history has one degree of freedom: no verdict could reach significance).
pub const MIN_HISTORY: usize = 3;

/// Settings of a check.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    /// At most this many runs before the newest form its baseline (the most recent ones).
    pub history: usize,
    /// A worse verdict counts as a regression when its change is at least this (fraction).
    pub threshold: f64,
    /// Half-width of the noise band (fraction): a change inside it is never a verdict.
    pub noise: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            history: 10,
            threshold: 0.0,
            noise: 0.02,
        }
    }
}

/// One metric of the newest run that is significantly worse than its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    pub benchmark: String,
    pub metric: String,
    pub unit: Unit,
    pub better: Better,
    /// The history's centre and the newest run's median.
    pub history: Option<f64>,
    pub newest: Option<f64>,
    /// Newest / history with its 95 % CI, when judged by ratio.
    pub ratio: Option<f64>,
    pub ratio_ci95: Option<[f64; 2]>,
    /// Direction-normalised change as a fraction (+ = worse); +∞ from a baseline of 0.
    pub worse_by: f64,
    /// Benjamini-Hochberg adjusted p.
    pub q: f64,
    /// As `compare --fail-on-regression` prints it.
    pub text: String,
}

/// What the check found for one series.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Outcome {
    /// Too few runs to check the newest against.
    TooFewRuns { runs: usize, needed: usize },
    Checked {
        /// Metric comparisons with a verdict (better, worse or ~), drift-explained ones
        /// included.
        judged: usize,
        /// Worse verdicts at least `threshold` large.
        regressions: Vec<Regression>,
        /// Worse verdicts smaller than the threshold.
        below_threshold: usize,
        better: usize,
        /// Significant, but the drift reference moved as much: the machine's drift (`~ (d)`).
        drift: usize,
        /// Comparisons without a verdict for want of a noise estimate (`~ (u)`).
        unknown: usize,
        /// The median smallest change the comparisons could detect (fraction).
        detectable: Option<f64>,
    },
}

/// One series and its check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesCheck {
    /// The machine as shown, and its id when recorded.
    pub machine: String,
    pub machine_id: Option<String>,
    pub label: Option<String>,
    /// Runs in the series (matching the filters).
    pub runs: usize,
    /// The run checked (the last in the order).
    pub newest: String,
    /// The runs it was checked against, oldest first.
    pub baseline: Vec<String>,
    pub outcome: Outcome,
}

impl SeriesCheck {
    pub fn regressed(&self) -> bool {
        matches!(&self.outcome, Outcome::Checked { regressions, .. } if !regressions.is_empty())
    }
}

/// The result of `fleet check`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub schema: String,
    /// How the runs were chosen, in words.
    pub selection: String,
    pub order: String,
    pub options: Options,
    pub series: Vec<SeriesCheck>,
}

impl Check {
    /// Series with a regression.
    pub fn regressed(&self) -> usize {
        self.series.iter().filter(|s| s.regressed()).count()
    }

    /// Series checked (with enough runs).
    pub fn checked(&self) -> usize {
        self.series
            .iter()
            .filter(|s| matches!(s.outcome, Outcome::Checked { .. }))
            .count()
    }
}

/// Check the newest run of every (machine, label) series of `records` against its history.
pub fn check(
    records: &[RunRecord],
    machines: &Machines,
    order: &Order,
    opts: Options,
    selection: &str,
) -> Check {
    let mut series = Vec::new();
    for (machine, recs) in per_machine(records, machines, order) {
        let mut labels: Vec<&Option<String>> = Vec::new();
        for r in &recs {
            if !labels.contains(&&r.label) {
                labels.push(&r.label);
            }
        }
        labels.sort();
        for label in labels {
            let runs: Vec<&RunRecord> =
                recs.iter().copied().filter(|r| &r.label == label).collect();
            let newest = *runs.last().expect("a label of these runs");
            let before = &runs[..runs.len() - 1];
            let baseline = &before[before.len().saturating_sub(opts.history.max(1))..];
            let outcome = if before.len() < MIN_HISTORY {
                Outcome::TooFewRuns {
                    runs: runs.len(),
                    needed: MIN_HISTORY + 1,
                }
            } else {
                judge(baseline, newest, opts)
            };
            series.push(SeriesCheck {
                machine: machine.name.clone(),
                machine_id: machine.id.clone(),
                label: label.clone(),
                runs: runs.len(),
                newest: newest.run_id.to_string(),
                baseline: baseline.iter().map(|r| r.run_id.to_string()).collect(),
                outcome,
            });
        }
    }
    Check {
        schema: CHECK_SCHEMA.into(),
        selection: selection.into(),
        order: order.as_text(),
        options: opts,
        series,
    }
}

/// `newest` against `baseline` (each one invocation) by `compare`'s rule.
fn judge(baseline: &[&RunRecord], newest: &RunRecord, opts: Options) -> Outcome {
    let base: Vec<RunRecord> = baseline.iter().map(|r| (*r).clone()).collect();
    let history = NoiseHistory::learn_series(&compare::nested::machine_key(newest), &base);
    let groups = vec![
        ("history".to_string(), base),
        ("newest".to_string(), vec![newest.clone()]),
    ];
    let cmp = compare::compare_groups(
        &groups,
        &compare::Options {
            noise: opts.noise,
            history,
            paired: false,
        },
    );
    let regressions = cmp
        .regressions(opts.threshold)
        .into_iter()
        .map(|(r, j, w)| {
            let d = r.cells[j].vs_base.as_ref().expect("a judged cell");
            let ratio = (d.basis == compare::Basis::Ratio).then_some(d.ratio);
            Regression {
                benchmark: r.benchmark.clone(),
                metric: r.metric.clone(),
                unit: r.unit,
                better: r.better,
                history: r.cells[0].center,
                newest: r.cells[j].center,
                ratio,
                ratio_ci95: ratio.map(|_| d.ci95),
                worse_by: w,
                q: d.q,
                text: compare::render::regression_text(&cmp, r, j),
            }
        })
        .collect::<Vec<_>>();
    let deltas: Vec<&compare::Delta> = cmp
        .rows
        .iter()
        .filter(|r| r.better != Better::Neutral)
        .filter_map(|r| r.cells.get(1).and_then(|c| c.vs_base.as_ref()))
        .filter(|d| d.verdict != Verdict::Reference)
        .collect();
    let count = |v: Verdict| deltas.iter().filter(|d| d.verdict == v).count();
    let mut detectable: Vec<f64> = deltas
        .iter()
        .filter_map(|d| d.detectable)
        .filter(|x| x.is_finite())
        .collect();
    detectable.sort_by(f64::total_cmp);
    Outcome::Checked {
        judged: count(Verdict::Better)
            + count(Verdict::Worse)
            + count(Verdict::Same)
            + count(Verdict::Drift),
        below_threshold: count(Verdict::Worse) - regressions.len(),
        regressions,
        better: count(Verdict::Better),
        drift: count(Verdict::Drift),
        unknown: count(Verdict::NoiseUnknown),
        detectable: (!detectable.is_empty()).then(|| crate::stats::median(&detectable)),
    }
}
