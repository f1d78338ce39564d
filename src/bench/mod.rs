//! Benchmarks: one file each implementing [`Benchmark`]; a suite is a list of them. Adding a
//! benchmark touches only its file and its suite's list. `example.rs` is a commented template.

use serde_json::{Map, Value};

// What one run returns, and the metric declarations, are the timing layer's (src/timing.rs): the
// workload layer's loads beside a measurement build them too.
use crate::record::BenchError;
use crate::timing::RunContext;
pub use crate::timing::{MetricSpec, RunOutput, os_err};
// A suite declares its headline figures (its `HEADLINES`, beside its `DESCRIPTION`) in the
// summary's vocabulary; the registry hands them to the summary.
pub use crate::output::summary::{Headline, Headlines, Pick};

/// What a thread that measures latency is called (`top -H`, a trace, a spike's attribution
/// show it so, apart from the loads — "load compile" — and osgauge's other threads).
pub const MEASURING_THREAD: &str = "measuring";

pub mod cpu;
pub mod example;
pub mod frame;
pub mod fs;
pub mod interactivity;
#[cfg(test)]
mod invariants;
pub mod latency;
pub mod mem;
pub mod net;
pub mod policy;
pub mod proc;
pub mod reference;
pub mod registry;
#[cfg(test)]
pub(crate) mod testutil;

/// What a benchmark is: shown by `osgauge list`, copied into every result.
#[derive(Debug, Clone)]
pub struct Info {
    /// `suite/name`, stable across versions (results are compared by it).
    pub id: String,
    pub suite: &'static str,
    pub title: String,
    /// How it measures, in a few sentences (`osgauge list --long`).
    pub method: String,
    pub metrics: Vec<MetricSpec>,
}

pub trait Benchmark: Send + Sync {
    fn info(&self) -> &Info;
    /// Parameters as configured (before running).
    fn params(&self) -> Map<String, Value> {
        Map::new()
    }
    /// One independent run: set up, measure with `ctx` (honouring its deadline and cancel flag),
    /// tear down everything it made, return samples. Errors: `unsupported` with the reason where
    /// the OS lacks the feature; `failed` naming the OS call otherwise.
    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError>;
    /// Called with the measured runs' outputs, in order, each time the runner assembles this
    /// benchmark's result. In the runner's rounds (`execute`, `execute_arms`) that is after every
    /// round (in `ab`, every arm's turn) for every benchmark begun so far, with a copy of its runs
    /// so far (the record kept after each round), and once more at the end with all of them;
    /// `run_benchmark` calls it once, at the end. So it may be called many times, in `ab` in turn
    /// with each arm's runs: derive everything from `runs`, not from state a previous call
    /// consumed. A benchmark whose metrics are defined over all runs (e.g. cache levels detected
    /// once on the pooled curve) rewrites them here. Returns facts derived from these runs, for
    /// the params.
    fn finish(&self, runs: &mut [RunOutput]) -> Map<String, Value> {
        let _ = runs;
        Map::new()
    }
    /// Whether every run warms up on its own before it measures (it discards what a warm-up run
    /// would): the harness's warm-up runs would only repeat that, and are not taken for it. Its
    /// method says so.
    fn warms_itself(&self) -> bool {
        false
    }
    /// Free what the benchmark keeps between its runs (e.g. arrays faulted in once): the runner
    /// calls it when the benchmark will take no more runs (its last run, an error, the adaptive
    /// rule's stop) and before an `ab` arm switch, so that no run meets state made under the
    /// other arm's setting. A run after it starts afresh.
    fn release(&self) {}
    /// Wall time the whole benchmark (warm-up and runs) is expected to take, s: from what it will
    /// do — its timed windows, set-up, calibration, extensions. For the up-front estimate and the
    /// progress bar's ETA only; never part of a result. The default suits a benchmark that
    /// measures for `run_time` per run with little set-up.
    fn estimate_s(&self, e: &Estimate) -> f64 {
        e.timed(DEFAULT_SETUP_S)
    }
    /// Time the benchmark may take beyond [`Self::estimate_s`] when a window it extends only as
    /// needed runs to its cap (a CPU-cost window below the counters' resolution), s. Shown as
    /// the upper end of the estimate.
    fn estimate_extension_s(&self, e: &Estimate) -> f64 {
        let _ = e;
        0.0
    }
}

/// Set-up time per run assumed by the default estimate, s (a batched micro-benchmark sizes its
/// batches and reads the clock overhead; measured here at 0.01–0.04 s per run).
pub const DEFAULT_SETUP_S: f64 = 0.02;

/// What a plan asks of one benchmark, for [`Benchmark::estimate_s`].
#[derive(Debug, Clone, Copy)]
pub struct Estimate {
    /// Measured runs expected (with `--ci-width`: the minimum).
    pub runs: u32,
    pub warmup: u32,
    pub run_time: std::time::Duration,
}

impl Estimate {
    /// Runs including warm-up.
    pub fn all_runs(&self) -> f64 {
        f64::from(self.runs + self.warmup)
    }

    /// Every run measures for `run_time`, plus `setup_s` of set-up each.
    pub fn timed(&self, setup_s: f64) -> f64 {
        self.all_runs() * (self.run_time.as_secs_f64() + setup_s)
    }
}
