//! Null system call: a real kernel entry and exit that the C library cannot cache.

use std::hint::black_box;

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct NullSyscall {
    info: Info,
}

impl NullSyscall {
    pub fn new() -> Self {
        NullSyscall {
            info: Info {
                id: "cpu/null_syscall".into(),
                suite: "cpu",
                title: "Null system call".into(),
                method:
                    "Batches of the platform's null system call (Linux: raw syscall(SYS_getppid), \
                         as `perf bench syscall basic` and lmbench `lat_syscall null` use; macOS: \
                         getppid(), not cached by libSystem; Windows: \
                         NtQueryInformationThread(current thread, ThreadBasicInformation), which \
                         has no user-mode fast path, unlike GetCurrentProcessId or \
                         QueryPerformanceCounter), result \
                         through black_box; time per call = batch time / calls − empty-loop cost − \
                         one clock read per batch."
                        .into(),
                metrics: vec![MetricSpec {
                    name: "call",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per null system call (kernel entry + exit)",
                }],
            },
        }
    }
}

impl Benchmark for NullSyscall {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let sys = crate::platform::null_syscall().map_err(|e| os_err("null syscall", e))?;
        let call = sys.call;
        let opts = BatchOptions {
            subtract_loop_overhead: true,
            ..Default::default()
        };
        let samples = ctx.time_batches(opts, |n| {
            for _ in 0..n {
                black_box(call());
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric("call", samples)
            .fact("syscall", sys.description))
    }
}
