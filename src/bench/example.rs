//! A commented template for a new benchmark (fio's `skeleton_external.c` idea). It is a real,
//! working benchmark but is not in any suite (its unit test runs it through the runner).
//!
//! - **A new benchmark**: copy this file into the suite's folder (`src/bench/<suite>/`), rename
//!   the type and id (`<suite>/<name>`), and add one line to that suite's `benchmarks()` in its
//!   `mod.rs`. Nothing else changes: the runner, the record, `compare`, the exports and the report
//!   read its `Info` (id, title, method, metrics with unit and direction).
//! - **A new suite**: copy the smallest suite folder, `src/bench/cpu/` (a `mod.rs` with
//!   `DESCRIPTION`, the figures a run's summary shows first (`HEADLINES`) and `benchmarks()`, one
//!   file per benchmark), add `pub mod <suite>;` to `src/bench/mod.rs` and one `Suite` entry to
//!   `src/bench/registry.rs` (with its notes on a run if it has any, and its leftovers of killed
//!   runs in `remove_leftovers`). A suite with options declares them in its own `mod.rs` (a
//!   `<Suite>Options` with `Default`, and `quick()` if the quick preset runs it lighter, as
//!   `mem::MemOptions` does) and adds one field to `SuiteOptions` in `registry.rs`, plus its line
//!   in `SuiteOptions::quick()` if it has a `quick()`; every other `SuiteOptions` built in the code
//!   names only the suites it sets and fills the rest with `..Default::default()`, so none of them
//!   changes. Options a user sets on `osgauge micro` are one clap group in `src/cli/micro.rs`
//!   (as `MemOpts`): its field in `SuiteArgs`, its check against the selection and its line in
//!   `SuiteArgs::suite_options`. So a suite touches its own folder, `bench/mod.rs`,
//!   `registry.rs`, and `cli/micro.rs` only if it has `micro` flags. A suite imports no other
//!   suite: what two suites share lives in `crate::timing`, `crate::stats` or `crate::platform`.
//!
//! Rules every benchmark follows:
//! - `run` is one independent run: make what it needs, measure, free everything, return samples.
//! - Time only the operation: use `ctx.time_batches` (the harness sizes batches and subtracts its
//!   own overhead) or `ctx.collect_batches` when each batch needs untimed setup.
//! - Call `ctx.check()` in any loop of your own, so the time bound and Ctrl-C are honoured.
//! - Where the OS lacks a feature, return `BenchError::unsupported` with the reason; OS-specific
//!   calls go in `crate::platform`, never here.

use std::hint::black_box;

use super::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct Example {
    info: Info,
}

impl Example {
    pub fn new() -> Self {
        Example {
            info: Info {
                id: "example/integer_add".into(),
                suite: "example",
                title: "Integer add (template benchmark)".into(),
                method: "Adds an opaque value to an accumulator in a batched loop; the empty-loop \
                         cost is subtracted."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "add",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per dependent integer add",
                }],
            },
        }
    }
}

impl Default for Example {
    fn default() -> Self {
        Self::new()
    }
}

impl Benchmark for Example {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let opts = BatchOptions {
            subtract_loop_overhead: true,
            ..Default::default()
        };
        let samples = ctx.time_batches(opts, |n| {
            let mut acc = 0u64;
            for i in 0..n {
                // black_box stops the compiler from folding the loop into one multiplication.
                acc = black_box(acc.wrapping_add(black_box(i)));
            }
            black_box(acc);
            Ok(())
        })?;
        Ok(RunOutput::default().metric("add", samples))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::record::Config;
    use crate::runner::{Plan, run_benchmark};

    /// The template is a working benchmark: through the real runner it yields a summary and a
    /// histogram per run (whatever the sign of its overhead-corrected samples).
    #[test]
    fn the_template_runs_through_the_runner() {
        let plan = Plan {
            benchmarks: vec![Box::new(Example::new())],
            label: None,
            tags: Default::default(),
            config: Config {
                preset: "custom".into(),
                selection: vec![],
                runs: 3,
                warmup_runs: 1,
                run_time_ms: 5,
                timeout_ms: 20_000,
                bootstrap_seed: crate::stats::BOOTSTRAP_SEED,
                command_line: vec![],
                adaptive: None,
                schedule: None,
                ab: None,
            },
        };
        let timing = crate::timing::calibrate();
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(plan.benchmarks[0].as_ref(), &plan, &timing, &cancel);
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.id, "example/integer_add");
        let m = &r.metrics[0];
        assert_eq!(m.name, "add");
        assert_eq!(m.runs.len(), 3);
        assert!(m.runs.iter().all(|x| x.histogram.is_some()));
        assert_eq!(m.summary.as_ref().unwrap().runs, 3);
    }
}
