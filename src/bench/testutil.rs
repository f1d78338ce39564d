//! Test helpers shared by the suites' unit tests: a real harness context without the runner.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::record::TimingCalibration;
use crate::timing::RunContext;

/// The harness's own calibration, as a real run uses.
pub fn timing() -> TimingCalibration {
    crate::timing::calibrate()
}

/// Owns what a [`RunContext`] borrows, so a test can make several contexts.
pub struct TestCtx {
    timing: TimingCalibration,
    cancel: AtomicBool,
}

impl TestCtx {
    pub fn new() -> Self {
        TestCtx {
            timing: timing(),
            cancel: AtomicBool::new(false),
        }
    }

    /// A context of measuring time `run_time` whose time bound is `bound` from now
    /// (`Duration::ZERO`: already reached).
    pub fn ctx(&self, run_time: Duration, bound: Duration) -> RunContext<'_> {
        RunContext::new(
            0,
            false,
            run_time,
            Instant::now() + bound,
            &self.timing,
            &self.cancel,
        )
    }
}

/// Call `f` with a context of the given measuring time and time bound.
pub fn with_ctx<T>(run_time: Duration, bound: Duration, f: impl FnOnce(&RunContext) -> T) -> T {
    let t = TestCtx::new();
    f(&t.ctx(run_time, bound))
}

/// Quick run: 20 ms of measuring, 20 s bound (fork-heavy tests share 2 CPUs in parallel).
pub fn quick<T>(f: impl FnOnce(&RunContext) -> T) -> T {
    with_ctx(Duration::from_millis(20), Duration::from_secs(20), f)
}

pub fn is_linux() -> bool {
    crate::platform::OS_NAME == "Linux"
}

/// A stored result of benchmark `id` with these metrics, each with its median (None: not
/// measured), taken from a fixture's record (for tests of what a suite reads from results).
pub fn result(id: &str, metrics: &[(&str, Option<f64>)]) -> crate::record::BenchmarkResult {
    let record: crate::record::RunRecord =
        serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
    let mut b = record.benchmarks[0].clone();
    let template = b.metrics[0].clone();
    b.id = id.to_string();
    b.suite = id.split('/').next().unwrap_or(id).to_string();
    b.metrics = metrics
        .iter()
        .map(|(name, center)| {
            let mut m = template.clone();
            m.name = name.to_string();
            match center {
                Some(c) => m.summary.as_mut().unwrap().center = *c,
                None => m.summary = None,
            }
            m
        })
        .collect();
    b
}
