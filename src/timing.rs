//! The timing harness, written once (lmbench's `lib_timing.c` idea): calibrate the clock's own cost,
//! pick a repetition count so each timed batch lasts long enough for the clock, time batches until
//! the run's measuring time is used, subtract the harness overhead, and stop cleanly at the
//! benchmark's time bound or on Ctrl-C.
//!
//! Method (also printed by `osgauge list --long`):
//! - Clock: the OS's monotonic clock through `std::time::Instant` (ns units).
//! - A batch of `n` operations is timed with two clock reads; one clock-read cost (the median of
//!   back-to-back reads, measured at start) is subtracted per batch, and where the benchmark asks,
//!   the empty-loop cost per iteration too. Sample = corrected batch time / n.
//! - `n` doubles from 1 until one batch lasts at least the minimum batch time: the larger of 50 µs
//!   and 1000 clock reads, so the clock's cost and resolution are ≤ 0.1 % of a batch. Those sizing
//!   batches double as warm-up and are discarded.
//! - Batches are then timed until the run's measuring time is used (at least `min_batches`).
//!   The per-run value is the median of the batch samples; p99 is over batches.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::record::{BenchError, TimingCalibration};
use crate::stats;
use crate::units::{Better, Unit};

/// One metric a benchmark reports.
#[derive(Debug, Clone)]
pub struct MetricSpec {
    pub name: &'static str,
    pub unit: Unit,
    pub better: Better,
    /// What one value means, e.g. "time per null system call (getppid), harness overhead subtracted".
    pub description: &'static str,
}

/// What one independent run returns.
#[derive(Debug, Default, Clone)]
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
    pub bounds: Vec<(&'static str, crate::record::BoundKind, String)>,
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
        kind: crate::record::BoundKind,
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

/// Convert an OS error into a benchmark error: `unsupported` stays unsupported.
pub fn os_err(call: &str, e: std::io::Error) -> BenchError {
    if e.kind() == std::io::ErrorKind::Unsupported {
        BenchError::unsupported(e.to_string())
    } else {
        BenchError::os(call, e)
    }
}

/// Measure the clock's and the empty loop's own costs.
pub fn calibrate() -> TimingCalibration {
    // Back-to-back reads: the difference of consecutive reads is one read's cost.
    let mut diffs = Vec::with_capacity(20_000);
    let mut min_step = f64::INFINITY;
    for _ in 0..20_000 {
        let a = Instant::now();
        let b = Instant::now();
        let d = b.duration_since(a).as_nanos() as f64;
        diffs.push(d);
        if d > 0.0 && d < min_step {
            min_step = d;
        }
    }
    // A batched measure is less quantised: 1000 reads per batch.
    let mut per_read = Vec::with_capacity(200);
    for _ in 0..200 {
        let t0 = Instant::now();
        for _ in 0..1000 {
            black_box(Instant::now());
        }
        per_read.push(t0.elapsed().as_nanos() as f64 / 1001.0);
    }
    let mut loop_cost = Vec::with_capacity(200);
    for _ in 0..200 {
        let n = 100_000u64;
        let t0 = Instant::now();
        empty_loop(n);
        loop_cost.push(t0.elapsed().as_nanos() as f64 / n as f64);
    }
    TimingCalibration {
        clock: crate::platform::clock_description().to_string(),
        reported_resolution_ns: crate::platform::clock_resolution_ns(),
        observed_resolution_ns: if min_step.is_finite() { min_step } else { 0.0 },
        timer_overhead_ns: stats::median(&per_read),
        loop_overhead_ns: stats::median(&loop_cost),
    }
}

/// The loop every batched benchmark uses around its operation, with nothing inside: its cost per
/// iteration is the "loop overhead". `black_box` keeps the counter from being folded away.
#[inline(never)]
pub fn empty_loop(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

/// Options for [`RunContext::time_batches`].
#[derive(Debug, Clone, Copy)]
pub struct BatchOptions {
    /// Subtract the empty-loop cost per iteration (for operations of a few ns).
    pub subtract_loop_overhead: bool,
    /// At least this many timed batches, even past the measuring time (bounded by the deadline).
    pub min_batches: usize,
    /// Stop after this many batches.
    pub max_batches: usize,
    /// Never put more than this many operations in one batch (for operations that use resources).
    pub max_ops_per_batch: u64,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            subtract_loop_overhead: false,
            min_batches: 5,
            max_batches: 100_000,
            max_ops_per_batch: 1 << 30,
        }
    }
}

/// What a benchmark's `run` is given: its measuring time, time bound, calibration and the cancel flag.
#[derive(Clone, Copy)]
pub struct RunContext<'a> {
    /// 0-based index of this run; warm-up runs have `warmup == true`.
    pub run_index: u32,
    pub warmup: bool,
    /// Measuring time aimed for in this run.
    pub run_time: Duration,
    /// Hard bound: past it the benchmark must stop, clean up and return a timeout.
    pub deadline: Instant,
    pub timing: &'a TimingCalibration,
    cancel: &'a AtomicBool,
    /// Runs of this benchmark still to do, this one included (1 when not told): a run that
    /// spends time beyond its measuring time leaves the rest their share of the deadline.
    pub runs_left: u32,
}

impl<'a> RunContext<'a> {
    pub fn new(
        run_index: u32,
        warmup: bool,
        run_time: Duration,
        deadline: Instant,
        timing: &'a TimingCalibration,
        cancel: &'a AtomicBool,
    ) -> Self {
        RunContext {
            run_index,
            warmup,
            run_time,
            deadline,
            timing,
            cancel,
            runs_left: 1,
        }
    }

    /// The same context, knowing how many runs are still to do (this one included).
    pub fn with_runs_left(mut self, n: u32) -> Self {
        self.runs_left = n.max(1);
        self
    }

    /// The same run with another measuring time (for benchmarks that measure several things).
    pub fn with_run_time(&self, run_time: Duration) -> RunContext<'a> {
        RunContext { run_time, ..*self }
    }

    /// Err(interrupted) after Ctrl-C, Err(timeout) past the deadline; benchmarks call this in loops.
    pub fn check(&self) -> Result<(), BenchError> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(BenchError::interrupted());
        }
        if Instant::now() >= self.deadline {
            return Err(BenchError::timeout("time bound reached"));
        }
        Ok(())
    }

    /// What ends a blocking wait of this run: its deadline plus `grace` (time to hear a peer's
    /// final report), and Ctrl-C/SIGTERM.
    pub fn bound(&self, grace: Duration) -> crate::platform::wait::Bound<'a> {
        crate::platform::wait::Bound::new(self.deadline.checked_add(grace), Some(self.cancel))
    }

    /// Time left before the deadline (zero when past it).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Minimum duration of one timed batch (see the module docs).
    pub fn min_batch(&self) -> Duration {
        let by_clock = Duration::from_nanos((self.timing.timer_overhead_ns * 1000.0) as u64);
        by_clock.max(Duration::from_micros(50))
    }

    /// Time batches of `op(n)` (which must perform exactly `n` operations and nothing else that
    /// costs time) and return per-operation samples in ns with the harness overhead subtracted.
    pub fn time_batches(
        &self,
        opts: BatchOptions,
        mut op: impl FnMut(u64) -> Result<(), BenchError>,
    ) -> Result<Vec<f64>, BenchError> {
        self.collect_batches(opts, |n| {
            let t0 = Instant::now();
            op(n)?;
            Ok(t0.elapsed().as_nanos() as f64)
        })
    }

    /// Like [`time_batches`](Self::time_batches), for operations that time themselves (so that
    /// per-batch setup stays outside the timed window): `op(n)` returns the ns that `n` operations
    /// took, measured with two `Instant::now()` reads around them.
    pub fn collect_batches(
        &self,
        opts: BatchOptions,
        mut op: impl FnMut(u64) -> Result<f64, BenchError>,
    ) -> Result<Vec<f64>, BenchError> {
        let min_batch = self.min_batch().as_nanos() as f64;
        let max_ops = opts.max_ops_per_batch.max(1);
        // Size the batch (these batches also warm caches and branch predictors; discarded).
        let mut n: u64 = 1;
        loop {
            self.check()?;
            let t = op(n)?;
            if t >= min_batch || n >= max_ops {
                break;
            }
            // Aim straight for the target with a margin, but at most ×16 per step.
            let per_op = (t / n as f64).max(0.01);
            let want = ((min_batch * 1.2) / per_op).ceil() as u64;
            n = want.clamp(n * 2, n.saturating_mul(16)).min(max_ops);
        }
        let per_batch_overhead = self.timing.timer_overhead_ns;
        let per_op_overhead = if opts.subtract_loop_overhead {
            self.timing.loop_overhead_ns
        } else {
            0.0
        };
        let start = Instant::now();
        let mut samples = Vec::new();
        while samples.len() < opts.max_batches
            && (samples.len() < opts.min_batches || start.elapsed() < self.run_time)
        {
            self.check()?;
            let t = op(n)?;
            samples.push((t - per_batch_overhead) / n as f64 - per_op_overhead);
        }
        Ok(samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx_with<'a>(
        t: &'a TimingCalibration,
        cancel: &'a AtomicBool,
        bound: Duration,
    ) -> RunContext<'a> {
        RunContext::new(
            0,
            false,
            Duration::from_millis(5),
            Instant::now() + bound,
            t,
            cancel,
        )
    }

    #[test]
    fn calibration_is_plausible() {
        let t = calibrate();
        assert!(t.timer_overhead_ns > 0.0 && t.timer_overhead_ns < 100_000.0);
        assert!(t.loop_overhead_ns >= 0.0 && t.loop_overhead_ns < 1000.0);
        assert!(t.observed_resolution_ns >= 0.0);
    }

    #[test]
    fn batches_are_sized_and_overhead_subtracted() {
        let timing = TimingCalibration {
            clock: "test".into(),
            reported_resolution_ns: None,
            observed_resolution_ns: 1.0,
            timer_overhead_ns: 10.0,
            loop_overhead_ns: 0.5,
        };
        let cancel = AtomicBool::new(false);
        let ctx = ctx_with(&timing, &cancel, Duration::from_secs(30));
        // Synthetic op: reports exactly 100 ns per op plus the 10 ns clock overhead per batch.
        let mut sizes = Vec::new();
        let samples = ctx
            .collect_batches(
                BatchOptions {
                    subtract_loop_overhead: true,
                    min_batches: 7,
                    max_batches: 7,
                    ..Default::default()
                },
                |n| {
                    sizes.push(n);
                    Ok(n as f64 * 100.0 + 10.0)
                },
            )
            .unwrap();
        assert_eq!(samples.len(), 7);
        for s in &samples {
            assert!((s - 99.5).abs() < 1e-9, "sample {s}");
        }
        // Batches reach the 50 µs minimum: n * 100 ns >= 50_000 ns.
        assert!(*sizes.last().unwrap() >= 500);
        // Sizing grows at most ×16 per step.
        for w in sizes.windows(2) {
            assert!(w[1] <= w[0] * 16);
        }
    }

    #[test]
    fn deadline_and_cancel_stop_a_run() {
        let timing = calibrate();
        let cancel = AtomicBool::new(false);
        let ctx = ctx_with(&timing, &cancel, Duration::from_millis(0));
        let err = ctx
            .time_batches(BatchOptions::default(), |_| Ok(()))
            .unwrap_err();
        assert_eq!(err.kind, crate::record::ErrorKind::Timeout);
        cancel.store(true, Ordering::Relaxed);
        let ctx = ctx_with(&timing, &cancel, Duration::from_secs(10));
        let err = ctx
            .time_batches(BatchOptions::default(), |_| Ok(()))
            .unwrap_err();
        assert_eq!(err.kind, crate::record::ErrorKind::Interrupted);
    }

    #[test]
    fn op_errors_propagate() {
        let timing = calibrate();
        let cancel = AtomicBool::new(false);
        let ctx = ctx_with(&timing, &cancel, Duration::from_secs(10));
        let err = ctx
            .time_batches(BatchOptions::default(), |_| Err(BenchError::failed("boom")))
            .unwrap_err();
        assert_eq!(err.message, "boom");
    }
}
