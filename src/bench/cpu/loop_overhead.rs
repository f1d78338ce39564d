//! Cost of one iteration of the harness's empty loop.

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext, empty_loop};
use crate::units::{Better, Unit};

pub struct LoopOverhead {
    info: Info,
}

impl LoopOverhead {
    pub fn new() -> Self {
        LoopOverhead {
            info: Info {
                id: "cpu/loop_overhead".into(),
                suite: "cpu",
                title: "Loop overhead (one empty iteration)".into(),
                method: "Batches of the harness's empty loop (counter passed through black_box so \
                         it cannot be folded); time per iteration = batch time / iterations, one \
                         clock read subtracted per batch. Benchmarks of a few ns subtract this per \
                         operation."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "iteration",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per empty loop iteration",
                }],
            },
        }
    }
}

impl Benchmark for LoopOverhead {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            empty_loop(n);
            Ok(())
        })?;
        Ok(RunOutput::default().metric("iteration", samples))
    }
}
