//! The 1–5 score table per weighted subsystem (the thesis's Table 7.1 style) with a requirements
//! gate: a run that fails a hard requirement (a weight's `require_min`/`require_max`, a QoS limit,
//! or the target rate above the rate at the utilisation ceiling) is marked FAILED whatever its
//! score, and is ranked after every run that passed. A requirement that could not be checked (a
//! missing input) is "not verified", never a pass.
//!
//! Score: with `best`/`worst` in the profile, linear from worst (1) to best (5), clamped; without,
//! relative to the best run shown: round(5 × value/best) for higher-is-better (best/value for
//! lower), at least 1. With one run and no absolute scale every scored subsystem gets 5. Where
//! both runs' inputs carry a 95 % CI (measured over several runs) and the CIs overlap, the runs
//! do not resolve the difference: the run scores as the best, marked "within noise" — a shared
//! machine's run-to-run swing must not pass for a difference between OSes.

use serde::Serialize;

use super::calc::Prediction;
use super::inputs::{Dir, Inputs};
use super::profile::{Profile, Weight};

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub value: Option<f64>,
    pub score: Option<u8>,
    /// Scored relative to the best run, and this run's 95 % CI overlaps the best run's: the runs
    /// do not resolve a difference, so it scores as the best (shown as "≈").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_noise: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub subsystem: String,
    pub weight: f64,
    pub input: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    Pass,
    Failed,
    NotVerified,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunGate {
    pub gate: Gate,
    /// Each failed or unverified requirement, in plain words.
    pub reasons: Vec<String>,
    /// Σ weight × score over scored rows.
    pub weighted: f64,
    /// 5 × Σ weight over the same rows.
    pub weighted_max: f64,
    pub rows_unscored: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scores {
    pub runs: Vec<String>,
    pub rows: Vec<Row>,
    pub gates: Vec<RunGate>,
    /// Run indices, best first: passing runs by weighted score, then not verified, then failed.
    pub ranking: Vec<usize>,
}

fn value(w_input: &str, pred: &Prediction, inp: &Inputs) -> Option<f64> {
    if w_input == "max_rate" {
        pred.x_max
    } else {
        inp.get(w_input)
    }
}

pub fn scores(p: &Profile, preds: &[Prediction], inputs: &[Inputs]) -> Scores {
    let mut gates: Vec<RunGate> = preds.iter().map(gate).collect();
    let mut rows = Vec::new();
    for w in &p.weights {
        let cells = cells(w, preds, inputs);
        count(w, &cells, &mut gates);
        rows.push(Row {
            subsystem: w.subsystem.clone(),
            weight: w.weight,
            input: w.input.clone(),
            cells,
        });
    }
    let rank = |g: &RunGate| match g.gate {
        Gate::Pass => 0,
        Gate::NotVerified => 1,
        Gate::Failed => 2,
    };
    let mut ranking: Vec<usize> = (0..preds.len()).collect();
    ranking.sort_by(|&a, &b| {
        rank(&gates[a])
            .cmp(&rank(&gates[b]))
            .then(gates[b].weighted.total_cmp(&gates[a].weighted))
    });
    Scores {
        runs: preds.iter().map(|p| p.name.clone()).collect(),
        rows,
        gates,
        ranking,
    }
}

/// A run's gate from its prediction alone: the target against the rate at the ceiling, and the
/// QoS limits (the requirements of the weights are added by [`count`]).
fn gate(pr: &Prediction) -> RunGate {
    let mut reasons = Vec::new();
    let mut failed = false;
    let mut unverified = false;
    match pr.target_ok {
        Some(true) => {}
        Some(false) => {
            failed = true;
            reasons.push(format!(
                "target {} {}/s above the rate at the {} % ceiling ({:.3})",
                super::calc::fmt(pr.target_rate),
                pr.unit,
                super::calc::fmt(pr.ceiling * 100.0),
                pr.x_ceiling.unwrap_or(0.0)
            ));
        }
        None => {
            unverified = true;
            reasons.push("no rate could be predicted".into());
        }
    }
    if pr.upper_bound && pr.target_ok == Some(true) {
        unverified = true;
        reasons.push("rate is an upper bound (inputs missing)".into());
    }
    for q in &pr.qos {
        match q.pass {
            Some(true) => {}
            Some(false) => {
                failed = true;
                reasons.push(format!(
                    "{} {} > limit {}",
                    q.what,
                    super::calc::fmt(q.measured.unwrap_or(0.0)),
                    super::calc::fmt(q.limit)
                ));
            }
            None => {
                unverified = true;
                reasons.push(format!("{}: not measured", q.what));
            }
        }
    }
    RunGate {
        gate: if failed {
            Gate::Failed
        } else if unverified {
            Gate::NotVerified
        } else {
            Gate::Pass
        },
        reasons,
        weighted: 0.0,
        weighted_max: 0.0,
        rows_unscored: 0,
    }
}

/// Each run's value of the weight's input and its 1–5 score: on the weight's absolute scale,
/// else relative to the best run (5 too where the run's 95 % CI overlaps the best one's).
fn cells(w: &Weight, preds: &[Prediction], inputs: &[Inputs]) -> Vec<Cell> {
    let vals: Vec<Option<f64>> = preds
        .iter()
        .zip(inputs)
        .map(|(pr, i)| value(&w.input, pr, i))
        .collect();
    let best = vals
        .iter()
        .flatten()
        .copied()
        .filter(|v| *v > 0.0)
        .reduce(|a, b| match w.better {
            Dir::Higher => a.max(b),
            Dir::Lower => a.min(b),
        });
    let best_ci = best.and_then(|b| {
        vals.iter()
            .position(|v| *v == Some(b))
            .and_then(|k| inputs[k].ci(&w.input))
    });
    let relative = w.best.is_none() || w.worst.is_none();
    vals.iter()
        .zip(inputs)
        .map(|(v, inp)| {
            let within_noise = relative
                && v.is_some_and(|v| v > 0.0 && Some(v) != best)
                && matches!((inp.ci(&w.input), best_ci),
                    (Some([lo, hi]), Some([blo, bhi])) if lo <= bhi && blo <= hi);
            if within_noise {
                return Cell {
                    value: *v,
                    score: Some(5),
                    within_noise,
                };
            }
            let score = v.and_then(|v| match (w.best, w.worst) {
                (Some(b), Some(wo)) => {
                    let f = ((v - wo) / (b - wo)).clamp(0.0, 1.0);
                    Some((1.0 + 4.0 * f).round() as u8)
                }
                _ => best.filter(|_| v > 0.0).map(|b| {
                    let r = match w.better {
                        Dir::Higher => v / b,
                        Dir::Lower => b / v,
                    };
                    ((5.0 * r).round() as u8).clamp(1, 5)
                }),
            });
            Cell {
                value: *v,
                score,
                within_noise,
            }
        })
        .collect()
}

/// A row's scores into each run's weighted sum, and its requirement into each run's gate.
fn count(w: &Weight, cells: &[Cell], gates: &mut [RunGate]) {
    for (k, c) in cells.iter().enumerate() {
        let g = &mut gates[k];
        match c.score {
            Some(s) => {
                g.weighted += w.weight * s as f64;
                g.weighted_max += 5.0 * w.weight;
            }
            None => g.rows_unscored += 1,
        }
        let req = (w.require_min, w.require_max);
        if req.0.is_some() || req.1.is_some() {
            match c.value {
                None => {
                    if g.gate == Gate::Pass {
                        g.gate = Gate::NotVerified;
                    }
                    g.reasons.push(format!(
                        "{}: requirement not verified (not measured)",
                        w.subsystem
                    ));
                }
                Some(v) => {
                    let lo = req.0.is_some_and(|m| v < m);
                    let hi = req.1.is_some_and(|m| v > m);
                    if lo || hi {
                        g.gate = Gate::Failed;
                        g.reasons.push(format!(
                            "{}: {} {} required {} {}",
                            w.subsystem,
                            w.input,
                            super::calc::fmt(v),
                            if lo { "≥" } else { "≤" },
                            super::calc::fmt(if lo { req.0.unwrap() } else { req.1.unwrap() })
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appmodel::inputs::{Origin, Value};
    use std::collections::BTreeMap;

    fn inputs(name: &str, bw: f64, cs: f64) -> Inputs {
        let mut values = BTreeMap::new();
        for (k, v) in [("mem_bw_mb_s", bw), ("ctx_switch_us", cs), ("cpus", 4.0)] {
            values.insert(
                k.to_string(),
                Value {
                    value: v,
                    origin: Origin::Measured,
                    source: "test".into(),
                },
            );
        }
        Inputs {
            name: name.into(),
            os: "test".into(),
            values,
            missing: BTreeMap::new(),
            ci95: BTreeMap::new(),
        }
    }

    /// Two runs whose memory bandwidths differ by 2× but whose CIs overlap: the slower one is not
    /// scored down (it cannot be told apart); with CIs apart it is; with an absolute scale the
    /// CIs do not matter.
    #[test]
    fn a_difference_inside_the_runs_noise_is_not_scored_as_one() {
        let prof = |scale: &str| {
            Profile::parse(
                "p",
                &format!(
                    "[app]\nname = \"t\"\nunit = \"u\"\ntarget_rate = 1\n[demand]\napp_mem_mb = 10\n\
                     [[weights]]\nsubsystem = \"mem\"\nweight = 10\ninput = \"mem_bw_mb_s\"\n{scale}"
                ),
            )
            .unwrap()
        };
        let with_ci = |name: &str, bw: f64, ci: [f64; 2]| {
            let mut i = inputs(name, bw, 1.0);
            i.ci95.insert("mem_bw_mb_s".into(), ci);
            i
        };
        let score = |p: &Profile, ins: &[Inputs]| {
            let preds: Vec<_> = ins.iter().map(|i| crate::appmodel::predict(p, i)).collect();
            let s = scores(p, &preds, ins);
            let c = &s.rows[0].cells;
            (c[0].score, c[1].score, c[1].within_noise)
        };
        let p = prof("");
        let overlap = [
            with_ci("a", 10000.0, [4000.0, 16000.0]),
            with_ci("b", 5000.0, [3000.0, 12000.0]),
        ];
        assert_eq!(score(&p, &overlap), (Some(5), Some(5), true));
        let apart = [
            with_ci("a", 10000.0, [9000.0, 11000.0]),
            with_ci("b", 5000.0, [4500.0, 5500.0]),
        ];
        assert_eq!(score(&p, &apart), (Some(5), Some(3), false));
        // Without CIs (one run each, or published figures): the plain relative score.
        let plain = [inputs("a", 10000.0, 1.0), inputs("b", 5000.0, 1.0)];
        assert_eq!(score(&p, &plain), (Some(5), Some(3), false));
        // An absolute scale scores each value on its own.
        let p = prof("best = 10000\nworst = 0\n");
        assert_eq!(score(&p, &overlap), (Some(5), Some(3), false));
    }

    /// The faster-memory run scores higher but fails its hard context-switch requirement: it is
    /// marked FAILED and ranked after the slower run that passes.
    #[test]
    fn a_failed_requirement_is_never_hidden_by_a_high_score() {
        let p = Profile::parse(
            "p",
            "[app]\nname = \"t\"\nunit = \"u\"\ntarget_rate = 1\n[demand]\napp_mem_mb = 10\n\
             [[weights]]\nsubsystem = \"mem\"\nweight = 50\ninput = \"mem_bw_mb_s\"\n\
             [[weights]]\nsubsystem = \"cs\"\nweight = 1\ninput = \"ctx_switch_us\"\nrequire_max = 5\n",
        )
        .unwrap();
        let ins = vec![inputs("fast", 10000.0, 9.0), inputs("slow", 5000.0, 2.0)];
        let preds: Vec<_> = ins
            .iter()
            .map(|i| crate::appmodel::predict(&p, i))
            .collect();
        let s = scores(&p, &preds, &ins);
        assert_eq!(s.rows[0].cells[0].score, Some(5));
        assert_eq!(s.rows[0].cells[1].score, Some(3)); // round(5 × 0.5) = 2.5 → 3
        assert!(s.gates[0].weighted > s.gates[1].weighted);
        assert_eq!(s.gates[0].gate, Gate::Failed);
        assert!(
            s.gates[0]
                .reasons
                .iter()
                .any(|r| r.contains("required ≤ 5"))
        );
        assert_eq!(s.gates[1].gate, Gate::Pass);
        assert_eq!(s.ranking, vec![1, 0]);
    }
}
