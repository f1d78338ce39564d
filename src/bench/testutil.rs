//! Test helpers shared by the suites' unit tests: a real harness context without the runner.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::harness::RunContext;
use crate::model::TimingCalibration;

/// The harness's own calibration, as a real run uses.
pub fn timing() -> TimingCalibration {
    crate::harness::calibrate()
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
