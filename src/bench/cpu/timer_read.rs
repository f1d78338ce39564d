//! Cost of one monotonic clock read (back-to-back reads), the clock every benchmark uses.

use std::hint::black_box;
use std::time::Instant;

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct TimerRead {
    info: Info,
}

impl TimerRead {
    pub fn new() -> Self {
        TimerRead {
            info: Info {
                id: "cpu/timer_read".into(),
                suite: "cpu",
                title: "Clock read (back-to-back monotonic reads)".into(),
                method: format!(
                    "Batches of back-to-back reads of the monotonic clock ({}), each result kept \
                     alive with black_box; time per read = batch time / reads. Nothing is \
                     subtracted: this is the overhead the harness subtracts elsewhere. The clock's \
                     reported and observed resolution are in the record's `timing`.",
                    crate::platform::clock_description()
                ),
                metrics: vec![MetricSpec {
                    name: "read",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per clock read",
                }],
            },
        }
    }
}

impl Benchmark for TimerRead {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let samples = ctx.collect_batches(BatchOptions::default(), |n| {
            let t0 = Instant::now();
            for _ in 0..n {
                black_box(Instant::now());
            }
            // The closing read is one more read: n + 1 reads happened between t0 and now.
            Ok(t0.elapsed().as_nanos() as f64 * n as f64 / (n + 1) as f64
                + ctx.timing.timer_overhead_ns)
        })?;
        Ok(RunOutput::default()
            .metric("read", samples)
            .fact("clock", crate::platform::clock_description())
            .fact("reported_resolution_ns", ctx.timing.reported_resolution_ns)
            .fact("observed_resolution_ns", ctx.timing.observed_resolution_ns))
    }
}
