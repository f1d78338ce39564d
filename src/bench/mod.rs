//! Benchmarks: one file each implementing [`Benchmark`]; a suite is a list of them. Adding a
//! benchmark touches only its file and its suite's list. `example.rs` is a commented template.

use serde_json::{Map, Value};

use crate::harness::RunContext;
use crate::model::BenchError;
use crate::units::{Better, Unit};

pub mod cpu;
pub mod example;
pub mod frame;
pub mod fs;
#[cfg(test)]
mod invariants;
pub mod mem;
pub mod net;
pub mod proc;
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

pub struct Suite {
    pub name: &'static str,
    pub description: &'static str,
    pub benchmarks: Vec<Box<dyn Benchmark>>,
}

/// Options that change how suites are built (the quick preset's lighter configurations and
/// suite-specific `micro` options).
#[derive(Debug, Clone, Default)]
pub struct SuiteOptions {
    pub mem: mem::MemOptions,
    pub net: net::NetOptions,
    pub fs: fs::FsOptions,
}

/// Every suite, in the order `run` executes them, with default options.
pub fn suites() -> Vec<Suite> {
    suites_with(&SuiteOptions::default())
}

/// Every suite, built with `opts`.
pub fn suites_with(opts: &SuiteOptions) -> Vec<Suite> {
    vec![
        Suite {
            name: "cpu",
            description: "CPU and kernel-entry costs: clock read, loop, procedure call, null and I/O system call",
            benchmarks: cpu::benchmarks(),
        },
        Suite {
            name: "proc",
            description: "Process and thread services: creation, spawn+exec, context switch",
            benchmarks: proc::benchmarks(),
        },
        Suite {
            name: "mem",
            description: "Memory: load-latency curve with cache levels, bandwidth (1 thread and all), page faults",
            benchmarks: mem::benchmarks(&opts.mem),
        },
        Suite {
            name: "net",
            description: "Network: TCP round trip and size sweep, bandwidth (1 and N streams) with CPU cost, connection setup/teardown, UDP stream jitter/loss and highest loss-free rate",
            benchmarks: net::benchmarks(&opts.net),
        },
        Suite {
            name: "fs",
            description: "File system: cache-bypassed read latency (size sweep), file-cache size, contention, disk bandwidth with CPU cost, create/delete, fsync",
            benchmarks: fs::benchmarks(&opts.fs),
        },
        Suite {
            name: "frame",
            description: "Frame pacing: an absolute-time frame loop with a frame copy (60 fps 1 MP, 25 fps 5 MP); no display",
            benchmarks: frame::benchmarks(),
        },
        Suite {
            name: "interactivity",
            description: "Interactive task latency under load (quick matrix: audio & video × none & burn; full matrix: `osgauge interactivity`)",
            benchmarks: crate::interactivity::quick_benchmarks(),
        },
        Suite {
            name: "policy",
            description: "Scheduling policies: 10 processes of cpu and io work under the default policy (full study: `osgauge policy`)",
            benchmarks: crate::policy::quick_benchmarks(),
        },
    ]
}

/// Convert an OS error into a benchmark error: `unsupported` stays unsupported.
pub fn os_err(call: &str, e: std::io::Error) -> BenchError {
    if e.kind() == std::io::ErrorKind::Unsupported {
        BenchError::unsupported(e.to_string())
    } else {
        BenchError::os(call, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn metrics_named_in_a_unit_are_stored_in_it() {
        for s in suites() {
            for b in &s.benchmarks {
                for m in &b.info().metrics {
                    if let Some(u) = crate::units::unit_of_suffix(m.name) {
                        assert_eq!(
                            m.unit,
                            u,
                            "{}/{}: the name promises {}, the unit is {}",
                            b.info().id,
                            m.name,
                            u.symbol(),
                            m.unit.symbol()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn ids_are_unique_and_prefixed_by_their_suite() {
        let mut seen = HashSet::new();
        for s in suites() {
            assert!(!s.benchmarks.is_empty(), "suite {} is empty", s.name);
            for b in &s.benchmarks {
                let i = b.info();
                assert!(seen.insert(i.id.clone()), "duplicate id {}", i.id);
                assert_eq!(i.suite, s.name);
                assert!(i.id.starts_with(&format!("{}/", s.name)), "{}", i.id);
                assert!(!i.metrics.is_empty(), "{} has no metrics", i.id);
                assert!(!i.method.is_empty() && !i.title.is_empty());
                let mut names = HashSet::new();
                for m in &i.metrics {
                    assert!(
                        names.insert(m.name),
                        "{}: duplicate metric {}",
                        i.id,
                        m.name
                    );
                    assert!(!m.description.is_empty());
                }
            }
        }
    }
}
