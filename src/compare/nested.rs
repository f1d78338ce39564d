//! Runs nested in invocations: the statistics every verdict rests on.
//!
//! The runs of one invocation of osgauge share that invocation's machine state: on a machine
//! whose speed drifts between minutes they are samples of "this system during these minutes",
//! not of "this system" (`/reference/replication.md`: 10 runs agreeing to 0.1 %, the next
//! invocation 22 % slower). So the unit of replication is the invocation, and a metric's value
//! in invocation i of a side is modelled as
//!
//! ```text
//! y_i = μ_side + u_i + e_i,   u_i ~ (0, σ_u²) between invocations,  e_i ~ (0, w_i) within
//! ```
//!
//! on the log scale where every value is positive (a ratio of medians), else on the metric's
//! own scale (a difference). `y_i` is the median of invocation i's per-run values; `w_i` its
//! variance from the runs (π/2 · var / n, the variance of a median).
//!
//! * **Several invocations on a side** (a label stored several times): the side's centre is the
//!   mean of its invocations' `y_i` and its variance `s²/k` from their spread — the between-
//!   invocation noise measured directly. Where this machine's history also knows σ_u², the two
//!   are pooled (`((k−1)s² + ν_h σ_h²) / (k−1+ν_h)`, ν = degrees of freedom).
//! * **One invocation on a side**: its variance is `w + σ_u²`, with σ_u² learned from this
//!   machine's history in the store ([`NoiseHistory`]: repeated invocations under one label,
//!   e.g. `osgauge calibrate`). Without history the between-invocation noise is unknown and no
//!   verdict is given ([`Noise::Unknown`]): the runs of one invocation cannot say it.
//! * **The test**: Welch's t on the two centres, `t = Δ / √(v_A + v_B)` with Welch–Satterthwaite
//!   degrees of freedom; the 95 % CI of Δ is `Δ ± t₀.₉₇₅ √(v_A + v_B)` (exponentiated: a ratio).
//!   Its half-width is the smallest change this comparison could detect for that metric: what a
//!   `~` can exclude ("within ±x %").
//!
//! Pure: records in, estimates out.

use std::collections::BTreeMap;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::record::{MetricResult, RunRecord};
use crate::stats;

/// Where a comparison's between-invocation noise came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    /// Each side has several invocations: measured from their spread (pooled with history when
    /// there is some).
    Invocations,
    /// A side has one invocation: from this machine's history of repeated invocations.
    History,
    /// A side has one invocation and this machine has no history for the metric: no verdict.
    Unknown,
    /// An A/B run on one machine: the arms' runs paired by round, the spread of the paired
    /// differences (drift cancels).
    Paired,
}

/// The between-invocation variance of one metric on one machine, learned from repeated
/// invocations under one label.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Learned {
    /// On the log scale (every value positive), else None.
    pub var_log: Option<f64>,
    /// On the metric's own scale.
    pub var_lin: f64,
    /// Degrees of freedom: invocations minus one per label.
    pub df: f64,
    /// Invocations it was learned from.
    pub invocations: usize,
}

/// Between-invocation noise per machine and metric, learned from a store's history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NoiseHistory {
    /// machine key → "benchmark\tmetric" → what was learned.
    pub machines: BTreeMap<String, BTreeMap<String, Learned>>,
}

/// What identifies "the same machine and system" for noise: the machine's stable id (the host
/// name for records made before there was one, or where the OS gives none — containers that
/// share a host name are then not told apart), CPU model, OS and kernel.
pub fn machine_key(r: &RunRecord) -> String {
    let m = &r.machine;
    let who = match &m.machine_id {
        Some(id) => format!("id:{id}"),
        None => format!("host:{}", m.hostname.as_deref().unwrap_or("?")),
    };
    format!(
        "{who}|{}|{}|{}",
        m.cpu.model_name.as_deref().unwrap_or("?"),
        m.os,
        m.kernel_release.as_deref().unwrap_or("?")
    )
}

/// The per-run values a metric's comparison uses: each run's median (none when too few runs
/// measured it to make a figure).
pub fn per_run(m: &MetricResult) -> Vec<f64> {
    if m.summary.is_none() && m.not_measured.is_some() {
        return Vec::new();
    }
    m.runs
        .iter()
        .map(|r| r.summary.p50)
        .filter(|v| v.is_finite())
        .collect()
}

/// An invocation's value of a metric and the variance of that value from its runs.
fn invocation(vals: &[f64], log: bool) -> (f64, f64) {
    let xs: Vec<f64> = if log {
        vals.iter().map(|v| v.ln()).collect()
    } else {
        vals.to_vec()
    };
    let center = stats::median(&xs);
    let w = if xs.len() >= 2 {
        let sd = stats::std_dev(&xs);
        std::f64::consts::FRAC_PI_2 * sd * sd / xs.len() as f64
    } else {
        0.0
    };
    (center, w)
}

fn sample_var(xs: &[f64]) -> f64 {
    let sd = stats::std_dev(xs);
    sd * sd
}

impl NoiseHistory {
    /// Learn from `records`: on each machine, the labels with two or more complete invocations;
    /// per metric, the pooled variance of the invocations' values around their label's mean.
    pub fn learn(records: &[RunRecord]) -> NoiseHistory {
        // (machine, label) → records.
        let mut groups: BTreeMap<(String, String), Vec<&RunRecord>> = BTreeMap::new();
        for r in records {
            if let Some(l) = &r.label
                && r.complete
            {
                groups
                    .entry((machine_key(r), l.clone()))
                    .or_default()
                    .push(r);
            }
        }
        let groups: Vec<(&str, &[&RunRecord])> = groups
            .iter()
            .map(|((m, _), v)| (m.as_str(), v.as_slice()))
            .collect();
        Self::from_groups(&groups)
    }

    /// The between-invocation noise of one series of invocations (every record one invocation of
    /// the same system, whatever their labels or kernels say), kept under `machine`: the noise a
    /// new invocation of that series is judged against (`osgauge fleet check`).
    pub fn learn_series(machine: &str, records: &[RunRecord]) -> NoiseHistory {
        let recs: Vec<&RunRecord> = records.iter().collect();
        Self::from_groups(&[(machine, recs.as_slice())])
    }

    /// Per group (machine key, its invocations of one label), pooled per machine and metric.
    fn from_groups(groups: &[(&str, &[&RunRecord])]) -> NoiseHistory {
        // machine → metric → (ss_log, ss_lin, df, invocations, all positive so far)
        let mut acc: BTreeMap<String, BTreeMap<String, Sums>> = BTreeMap::new();
        for (machine, recs) in groups.iter().filter(|(_, v)| v.len() >= 2) {
            let mut per_metric: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
            for r in recs.iter() {
                for b in &r.benchmarks {
                    for m in &b.metrics {
                        let v = per_run(m);
                        if !v.is_empty() {
                            per_metric
                                .entry(format!("{}\t{}", b.id, m.name))
                                .or_default()
                                .push(v);
                        }
                    }
                }
            }
            for (key, invs) in per_metric {
                if invs.len() < 2 {
                    continue;
                }
                let positive = invs.iter().flatten().all(|&v| v > 0.0);
                let lin: Vec<f64> = invs.iter().map(|v| invocation(v, false).0).collect();
                let ss = |xs: &[f64]| sample_var(xs) * (xs.len() - 1) as f64;
                let ss_log = if positive {
                    let lg: Vec<f64> = invs.iter().map(|v| invocation(v, true).0).collect();
                    ss(&lg)
                } else {
                    0.0
                };
                let e = acc
                    .entry(machine.to_string())
                    .or_default()
                    .entry(key)
                    .or_insert((0.0, 0.0, 0.0, 0, true));
                e.0 += ss_log;
                e.1 += ss(&lin);
                e.2 += (invs.len() - 1) as f64;
                e.3 += invs.len();
                e.4 &= positive;
            }
        }
        let machines = acc
            .into_iter()
            .map(|(m, metrics)| {
                let learned = metrics
                    .into_iter()
                    .map(|(k, (ss_log, ss_lin, df, n, positive))| {
                        (
                            k,
                            Learned {
                                var_log: positive.then_some(ss_log / df),
                                var_lin: ss_lin / df,
                                df,
                                invocations: n,
                            },
                        )
                    })
                    .collect();
                (m, learned)
            })
            .collect();
        NoiseHistory { machines }
    }

    pub fn get(&self, machine: &str, benchmark: &str, metric: &str) -> Option<Learned> {
        self.machines
            .get(machine)?
            .get(&format!("{benchmark}\t{metric}"))
            .copied()
    }

    pub fn is_empty(&self) -> bool {
        self.machines.is_empty()
    }

    /// Invocations it learned from on `machine` (the most of any metric).
    pub fn invocations(&self, machine: &str) -> usize {
        self.machines
            .get(machine)
            .and_then(|m| m.values().map(|l| l.invocations).max())
            .unwrap_or(0)
    }
}

/// One side of a comparison for one metric.
#[derive(Debug, Clone)]
pub struct Side {
    /// Per invocation: its runs' values.
    pub invocations: Vec<Vec<f64>>,
    /// This machine's learned between-invocation noise for the metric.
    pub history: Option<Learned>,
}

/// The change between two sides and its uncertainty, on the log scale (`log`) or the metric's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Whether the scale is the log (Δ is a log ratio) or the metric's own (Δ a difference).
    pub log: bool,
    /// Δ = centre(b) − centre(a).
    pub change: f64,
    /// Standard error of Δ; NaN when the noise is unknown.
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p of Welch's t; NaN when the noise is unknown.
    pub p: f64,
    /// Half-width of the 95 % CI of Δ; NaN when the noise is unknown.
    pub half_width: f64,
    pub noise: Noise,
}

impl Estimate {
    pub fn ci(&self) -> [f64; 2] {
        [self.change - self.half_width, self.change + self.half_width]
    }
}

/// Per metric while learning: squared deviations (log, linear), degrees of freedom,
/// invocations, and whether every value was positive.
type Sums = (f64, f64, f64, usize, bool);

/// A side's centre, its variance with degrees of freedom (None: unknown), and whether the
/// spread of its own invocations was used.
type SideStats = (f64, Option<(f64, f64)>, bool);

/// The centre of a side and its variance and degrees of freedom, or None when its variance is
/// unknown (one invocation, no history). Also whether the spread of invocations was used.
fn side_stats(s: &Side, log: bool) -> Option<SideStats> {
    let invs: Vec<(f64, f64)> = s
        .invocations
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| invocation(v, log))
        .collect();
    let k = invs.len();
    if k == 0 {
        return None;
    }
    let centers: Vec<f64> = invs.iter().map(|x| x.0).collect();
    let center = stats::mean(&centers);
    let hist = s
        .history
        .and_then(|h| if log { h.var_log } else { Some(h.var_lin) }.map(|v| (v, h.df)));
    let var = if k >= 2 {
        let s2 = sample_var(&centers);
        let nu = (k - 1) as f64;
        let (pooled, df) = match hist {
            Some((vh, dfh)) => ((nu * s2 + dfh * vh) / (nu + dfh), nu + dfh),
            None => (s2, nu),
        };
        Some((pooled / k as f64, df))
    } else {
        hist.map(|(vh, dfh)| (invs[0].1 + vh, dfh))
    };
    Some((center, var, k >= 2))
}

/// Student t quantile (two-sided 95 %) for `df` degrees of freedom.
pub fn t975(df: f64) -> f64 {
    let df = if df.is_finite() { df.max(1.0) } else { 1e6 };
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(1.96)
}

/// Two-sided p of `t` with `df` degrees of freedom.
fn t_p(t: f64, df: f64) -> f64 {
    let df = if df.is_finite() { df.max(1.0) } else { 1e6 };
    StudentsT::new(0.0, 1.0, df)
        .map(|d| 2.0 * (1.0 - d.cdf(t.abs())))
        .unwrap_or(f64::NAN)
        .clamp(0.0, 1.0)
}

/// Compare side `b` with baseline `a`. `log`: on the log scale (every value positive). None when
/// a side has no values.
pub fn estimate(a: &Side, b: &Side, log: bool) -> Option<Estimate> {
    let (ca, va, many_a) = side_stats(a, log)?;
    let (cb, vb, many_b) = side_stats(b, log)?;
    let change = cb - ca;
    let (Some((va, dfa)), Some((vb, dfb))) = (va, vb) else {
        return Some(Estimate {
            log,
            change,
            se: f64::NAN,
            df: f64::NAN,
            p: f64::NAN,
            half_width: f64::NAN,
            noise: Noise::Unknown,
        });
    };
    let v = va + vb;
    let noise = if many_a && many_b {
        Noise::Invocations
    } else {
        Noise::History
    };
    if v <= 0.0 {
        // No spread anywhere (identical values): exact.
        return Some(Estimate {
            log,
            change,
            se: 0.0,
            df: f64::INFINITY,
            p: if change == 0.0 { 1.0 } else { 0.0 },
            half_width: 0.0,
            noise,
        });
    }
    // Welch–Satterthwaite. Where both sides are single invocations whose noise is the same
    // learned variance (one machine), that estimate is one component counted twice, not two
    // independent ones: its degrees of freedom are not doubled.
    let shared = match (a.history, b.history) {
        (Some(ha), Some(hb)) if !many_a && !many_b && ha == hb => {
            if log { ha.var_log } else { Some(ha.var_lin) }.map(|vh| (vh, ha.df))
        }
        _ => None,
    };
    let denom = match shared {
        Some((vh, dfh)) => {
            let wa = va - vh;
            let wb = vb - vh;
            let within = |w: f64, s: &Side| {
                let n = s.invocations.iter().map(Vec::len).max().unwrap_or(1);
                if n >= 2 { w * w / (n - 1) as f64 } else { 0.0 }
            };
            (2.0 * vh).powi(2) / dfh + within(wa, a) + within(wb, b)
        }
        None => va * va / dfa + vb * vb / dfb,
    };
    let df = if denom > 0.0 {
        v * v / denom
    } else {
        dfa + dfb
    };
    let se = v.sqrt();
    Some(Estimate {
        log,
        change,
        se,
        df,
        p: t_p(change / se, df),
        half_width: t975(df) * se,
        noise,
    })
}

/// A metric's per-run values with the round each was taken in (runs without a round left out).
pub fn per_round(m: &MetricResult) -> Vec<(u32, f64)> {
    if m.summary.is_none() && m.not_measured.is_some() {
        return Vec::new();
    }
    m.runs
        .iter()
        .filter_map(|r| Some((r.round?, r.summary.p50)))
        .filter(|(_, v)| v.is_finite())
        .collect()
}

/// An A/B run's change: the differences `y_B,r − y_A,r` of the rounds both arms measured (log
/// scale when `log`), their mean with a one-sample t test and CI over the rounds. Unknown noise
/// with fewer than 3 pairs.
pub fn paired(a: &[(u32, f64)], b: &[(u32, f64)], log: bool) -> Option<Estimate> {
    let f = |v: f64| if log { v.ln() } else { v };
    let d: Vec<f64> = a
        .iter()
        .filter_map(|&(r, x)| b.iter().find(|(rb, _)| *rb == r).map(|&(_, y)| f(y) - f(x)))
        .collect();
    if d.is_empty() {
        return None;
    }
    let change = stats::mean(&d);
    let n = d.len();
    if n < 3 {
        return Some(Estimate {
            log,
            change,
            se: f64::NAN,
            df: f64::NAN,
            p: f64::NAN,
            half_width: f64::NAN,
            noise: Noise::Unknown,
        });
    }
    let df = (n - 1) as f64;
    let se = stats::std_dev(&d) / (n as f64).sqrt();
    if se == 0.0 {
        return Some(Estimate {
            log,
            change,
            se,
            df,
            p: if change == 0.0 { 1.0 } else { 0.0 },
            half_width: 0.0,
            noise: Noise::Paired,
        });
    }
    Some(Estimate {
        log,
        change,
        se,
        df,
        p: t_p(change / se, df),
        half_width: t975(df) * se,
        noise: Noise::Paired,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        // Box-Muller.
        let u1: f64 = rng.random::<f64>().max(1e-12);
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// One simulated invocation of a metric whose true value is `mu`: the machine's speed this
    /// invocation is off by a drift with SD `drift` (relative), its `runs` runs agree within
    /// `within` (relative).
    fn invocation_values(
        rng: &mut ChaCha8Rng,
        mu: f64,
        drift: f64,
        within: f64,
        runs: usize,
    ) -> Vec<f64> {
        let u = drift * normal(rng);
        (0..runs)
            .map(|_| mu * (u + within * normal(rng)).exp())
            .collect()
    }

    fn learned(rng: &mut ChaCha8Rng, drift: f64, invocations: usize) -> Learned {
        // What `learn` would see from a calibration of `invocations` invocations.
        let ys: Vec<f64> = (0..invocations)
            .map(|_| invocation(&invocation_values(rng, 100.0, drift, 0.002, 10), true).0)
            .collect();
        Learned {
            var_log: Some(sample_var(&ys)),
            var_lin: 1.0,
            df: (invocations - 1) as f64,
            invocations,
        }
    }

    /// The A/A false-verdict rate over many simulated pairs of single invocations on a machine
    /// drifting 15 % between invocations (runs within one agreeing to 0.2 %), with the noise
    /// learned from a 5-invocation calibration: at most the nominal 5 % (plus simulation
    /// error). The run-level test alone calls nearly every pair.
    #[test]
    fn a_over_a_false_verdicts_stay_at_the_nominal_level_under_drift() {
        let mut rng = ChaCha8Rng::seed_from_u64(39);
        let trials = 4000;
        let mut called = 0;
        let mut naive_called = 0;
        for _ in 0..trials {
            let hist = learned(&mut rng, 0.15, 5);
            let a = Side {
                invocations: vec![invocation_values(&mut rng, 100.0, 0.15, 0.002, 10)],
                history: Some(hist),
            };
            let b = Side {
                invocations: vec![invocation_values(&mut rng, 100.0, 0.15, 0.002, 10)],
                history: Some(hist),
            };
            let e = estimate(&a, &b, true).unwrap();
            assert_eq!(e.noise, Noise::History);
            if e.p < 0.05 {
                called += 1;
            }
            let naive = crate::stats::mann_whitney(&a.invocations[0], &b.invocations[0]);
            if naive.p < 0.05 {
                naive_called += 1;
            }
        }
        let rate = called as f64 / trials as f64;
        // Binomial SD at 5 % over 4000 trials is 0.34 %: 6.5 % is more than 4 SD above.
        assert!(rate <= 0.065, "false-verdict rate {rate}");
        assert!(
            naive_called as f64 / trials as f64 > 0.8,
            "the run-level test should be fooled by drift: {naive_called}"
        );
    }

    /// The same with several invocations per side and no history at all: the invocation is the
    /// unit, and the rate stays at the nominal level.
    #[test]
    fn a_over_a_with_invocations_as_the_unit_stays_at_the_nominal_level() {
        let mut rng = ChaCha8Rng::seed_from_u64(40);
        let trials = 4000;
        let mut called = 0;
        for _ in 0..trials {
            let side = |rng: &mut ChaCha8Rng| Side {
                invocations: (0..3)
                    .map(|_| invocation_values(rng, 50.0, 0.2, 0.01, 5))
                    .collect(),
                history: None,
            };
            let (a, b) = (side(&mut rng), side(&mut rng));
            let e = estimate(&a, &b, true).unwrap();
            assert_eq!(e.noise, Noise::Invocations);
            if e.p < 0.05 {
                called += 1;
            }
        }
        let rate = called as f64 / trials as f64;
        assert!(rate <= 0.065, "false-verdict rate {rate}");
    }

    /// A real change well beyond the drift is found; the CI covers the true change.
    #[test]
    fn a_real_change_beyond_the_noise_is_found_with_a_ci_that_covers_it() {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let trials = 500;
        let (mut found, mut covered) = (0, 0);
        let truth = (1.25f64).ln();
        for _ in 0..trials {
            let hist = learned(&mut rng, 0.03, 8);
            let a = Side {
                invocations: vec![invocation_values(&mut rng, 100.0, 0.03, 0.002, 10)],
                history: Some(hist),
            };
            let b = Side {
                invocations: vec![invocation_values(&mut rng, 125.0, 0.03, 0.002, 10)],
                history: Some(hist),
            };
            let e = estimate(&a, &b, true).unwrap();
            found += usize::from(e.p < 0.05 && e.change > 0.0);
            let [lo, hi] = e.ci();
            covered += usize::from(lo <= truth && truth <= hi);
        }
        assert!(
            found as f64 / trials as f64 > 0.9,
            "found {found} of {trials}"
        );
        assert!(
            covered as f64 / trials as f64 > 0.9,
            "covered {covered} of {trials}"
        );
    }

    #[test]
    fn one_invocation_each_without_history_is_unknown_noise() {
        let a = Side {
            invocations: vec![vec![1.0, 1.01, 0.99]],
            history: None,
        };
        let b = Side {
            invocations: vec![vec![2.0, 2.01, 1.99]],
            history: None,
        };
        let e = estimate(&a, &b, true).unwrap();
        assert_eq!(e.noise, Noise::Unknown);
        assert!(e.p.is_nan() && e.half_width.is_nan());
        assert!((e.change - 2f64.ln()).abs() < 0.02);
    }

    fn record(label: &str, host: &str, value: f64) -> RunRecord {
        let mut r: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        r.label = Some(label.into());
        r.machine.hostname = Some(host.into());
        r.complete = true;
        let m = &mut r.benchmarks[0].metrics[0];
        for run in m.runs.iter_mut() {
            run.summary.p50 = value;
        }
        r
    }

    #[test]
    fn history_learns_from_labels_with_several_invocations_per_machine() {
        let recs = vec![
            record("cal", "h1", 100.0),
            record("cal", "h1", 110.0),
            record("cal", "h1", 90.0),
            // A label with one invocation teaches nothing; another machine is kept apart.
            record("once", "h1", 500.0),
            record("cal", "h2", 100.0),
            record("cal", "h2", 200.0),
        ];
        let h = NoiseHistory::learn(&recs);
        assert!(recs.iter().all(|r| r.machine.machine_id.is_none()));
        let k1 = machine_key(&recs[0]);
        let k2 = machine_key(&recs[4]);
        let (b, m) = (
            &recs[0].benchmarks[0].id,
            &recs[0].benchmarks[0].metrics[0].name,
        );
        let l1 = h.get(&k1, b, m).unwrap();
        assert_eq!(l1.invocations, 3);
        assert_eq!(l1.df, 2.0);
        assert!((l1.var_lin - 100.0).abs() < 1e-9, "{l1:?}");
        let l2 = h.get(&k2, b, m).unwrap();
        assert!((l2.var_lin - 5000.0).abs() < 1e-9);
        assert!(l2.var_log.unwrap() > l1.var_log.unwrap());
    }

    #[test]
    fn the_machine_id_not_the_host_name_says_which_machine_learned_the_noise() {
        let with = |host: &str, id: Option<&str>| {
            let mut r = record("cal", host, 100.0);
            r.machine.machine_id = id.map(str::to_string);
            r
        };
        // Containers sharing a host name are kept apart; a renamed host stays one machine.
        let a = with("box", Some("aaaa"));
        let b = with("box", Some("bbbb"));
        let renamed = with("box-renamed", Some("aaaa"));
        assert_ne!(machine_key(&a), machine_key(&b));
        assert_eq!(machine_key(&a), machine_key(&renamed));
        // Without an id, the host name (older records): never equal to an id's key.
        let old = with("box", None);
        assert_eq!(machine_key(&old), machine_key(&with("box", None)));
        assert_ne!(machine_key(&old), machine_key(&a));
    }

    /// A/B on a drifting machine: each round's drift hits both arms, so the paired test finds a
    /// 10 % effect that unpaired invocation-level statistics could not, and calls nothing in A/A.
    #[test]
    fn paired_rounds_cancel_drift() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let (mut aa, mut ab) = (0, 0);
        let trials = 2000;
        for _ in 0..trials {
            let mut a = Vec::new();
            let mut b = Vec::new();
            let mut c = Vec::new();
            for r in 1..=10u32 {
                // The machine's speed this round (30 % drift), shared by both arms.
                let u = 0.3 * normal(&mut rng);
                let noise = |rng: &mut ChaCha8Rng| 0.01 * normal(rng);
                a.push((r, 100.0 * (u + noise(&mut rng)).exp()));
                b.push((r, 100.0 * (u + noise(&mut rng)).exp()));
                c.push((r, 110.0 * (u + noise(&mut rng)).exp()));
            }
            let same = paired(&a, &b, true).unwrap();
            assert_eq!(same.noise, Noise::Paired);
            aa += usize::from(same.p < 0.05);
            let diff = paired(&a, &c, true).unwrap();
            ab += usize::from(diff.p < 0.05 && diff.change > 0.0);
        }
        assert!((aa as f64 / trials as f64) <= 0.065, "A/A called {aa}");
        assert!((ab as f64 / trials as f64) > 0.95, "A/B found {ab}");
    }
}
