//! Benchmarks: one file each implementing [`Benchmark`]; a suite is a list of them. Adding a
//! benchmark touches only its file and its suite's list. `example.rs` is a commented template.

use serde_json::{Map, Value};

use crate::harness::RunContext;
use crate::model::BenchError;
use crate::units::{Better, Unit};

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
pub mod registry;
#[cfg(test)]
pub(crate) mod testutil;

/// One metric a benchmark reports.
#[derive(Debug, Clone)]
pub struct MetricSpec {
    pub name: &'static str,
    pub unit: Unit,
    pub better: Better,
    /// What one value means, e.g. "time per null system call (getppid), harness overhead subtracted".
    pub description: &'static str,
}

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

/// What one independent run returns.
#[derive(Debug, Default)]
pub struct RunOutput {
    /// Samples per metric name (each name must be one of `Info::metrics`).
    pub samples: Vec<(&'static str, Vec<f64>)>,
    /// Facts read back while running (e.g. the CPU a thread was really pinned to): kept per run
    /// in the record's `run_facts`, and in its params where every run agrees.
    pub facts: Map<String, Value>,
    pub warnings: Vec<String>,
    /// Declared metrics this run could not measure, with the reason (shown in place of a value).
    pub not_measured: Vec<(&'static str, String)>,
    /// Metrics whose value in this run is a bound, not a measurement (a ramp that ran out of
    /// steps, a sweep that ended before the effect it looks for): shown with ≥/≤, never compared
    /// as a measured difference.
    pub bounds: Vec<(&'static str, crate::model::BoundKind, String)>,
    /// Metrics that are a difference of two measured figures (idle − busy): a value ≤ 0 is a
    /// finding the benchmark states itself, not a subtracted overhead that exceeded the
    /// measurement, so the runner's generic "≤ 0" warnings are not given for them.
    pub differences: Vec<&'static str>,
}

impl RunOutput {
    /// Say why metric `name` has no samples in this run (e.g. "unsupported: …").
    pub fn not_measured(mut self, name: &'static str, why: impl Into<String>) -> Self {
        self.not_measured.push((name, why.into()));
        self
    }
    /// Say that this run's value of metric `name` is a bound of `kind`, and why.
    pub fn bounded(
        mut self,
        name: &'static str,
        kind: crate::model::BoundKind,
        why: impl Into<String>,
    ) -> Self {
        self.bounds.push((name, kind, why.into()));
        self
    }
    /// Say that metric `name` is a difference of two measured figures (see `differences`).
    pub fn difference(mut self, name: &'static str) -> Self {
        self.differences.push(name);
        self
    }
    pub fn metric(mut self, name: &'static str, samples: Vec<f64>) -> Self {
        self.samples.push((name, samples));
        self
    }
    pub fn fact(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.facts.insert(key.to_string(), value.into());
        self
    }
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
    /// Called once after the last run with the measured runs' outputs, in order: a benchmark
    /// whose metrics are defined over all runs (e.g. cache levels detected once on the pooled
    /// curve) rewrites them here. Returns facts derived from all runs, for the params.
    fn finish(&self, runs: &mut [RunOutput]) -> Map<String, Value> {
        let _ = runs;
        Map::new()
    }
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

/// Convert an OS error into a benchmark error: `unsupported` stays unsupported.
pub fn os_err(call: &str, e: std::io::Error) -> BenchError {
    if e.kind() == std::io::ErrorKind::Unsupported {
        BenchError::unsupported(e.to_string())
    } else {
        BenchError::os(call, e)
    }
}
