//! Application model: "which OS suits my application?" (thesis seed 003, chapters 3,
//! 5, 6). A profile (per-unit demand, target rate, QoS limits, weighted requirements) × per-run
//! inputs read from stored benchmark results (or a published-figures file) → service demand per
//! resource, utilisations, maximum rate and bottleneck, QoS pass/fail, a 1–5 score table with a
//! requirements gate. See `profile.rs` for the profile format, `inputs.rs` for where every input
//! comes from, `calc.rs` for the laws. Not to be confused with `crate::record` (the result record).

pub mod calc;
pub mod check;
pub mod construction;
pub mod examples;
pub mod inputs;
pub mod profile;
pub mod published;
pub mod render;
pub mod score;
pub mod validate;

use serde::Serialize;

pub use calc::{Prediction, predict};
pub use inputs::Inputs;
pub use profile::{Profile, ProfileError};

/// Everything `osgauge model` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub schema: &'static str,
    pub profile: Profile,
    /// Set when the inputs are published figures (someone else's measurements).
    pub published: Option<published::RawSource>,
    pub inputs: Vec<Inputs>,
    pub predictions: Vec<Prediction>,
    pub scores: score::Scores,
    /// Per column of a published-figures file: the printed results recomputed.
    pub checks: Vec<Vec<published::Check>>,
}

/// Predict `profile` on each of `inputs` (already named), with the score table.
pub fn analyse(
    profile: &Profile,
    mut inputs: Vec<Inputs>,
    published: Option<(published::RawSource, Vec<Vec<published::RawCheckOut>>)>,
) -> Analysis {
    for i in inputs.iter_mut() {
        profile.apply_to(i);
    }
    let predictions: Vec<Prediction> = inputs.iter().map(|i| predict(profile, i)).collect();
    let scores = score::scores(profile, &predictions, &inputs);
    let (source, checks) = match published {
        Some((s, raw)) => {
            let checks = raw
                .iter()
                .zip(predictions.iter().zip(&inputs))
                .map(|(r, (pr, i))| published::checks(profile, pr, i, r))
                .collect();
            (Some(s), checks)
        }
        None => (None, Vec::new()),
    };
    Analysis {
        schema: "osgauge.appmodel/1",
        profile: profile.clone(),
        published: source,
        inputs,
        predictions,
        scores,
        checks,
    }
}

/// The published-figures file's columns as inputs, with their checks.
pub fn from_published(
    p: published::Published,
) -> (
    Vec<Inputs>,
    published::RawSource,
    Vec<Vec<published::RawCheckOut>>,
) {
    let mut ins = Vec::new();
    let mut checks = Vec::new();
    for (i, c) in p.columns {
        ins.push(i);
        checks.push(c);
    }
    (ins, p.source, checks)
}
