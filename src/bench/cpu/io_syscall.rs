//! One cheap I/O system call: a 1-byte read from the zero device.

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::platform::CheapIo;
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct IoSyscall {
    info: Info,
}

impl IoSyscall {
    pub fn new() -> Self {
        IoSyscall {
            info: Info {
                id: "cpu/io_syscall".into(),
                suite: "cpu",
                title: "Cheap I/O system call (1-byte read of the zero device)".into(),
                method: "Batches of 1-byte reads from the zero device through the OS's read call \
                         directly (Linux/macOS: read(2) on /dev/zero; no library buffering), each \
                         read checked to return 1 byte. Windows: WriteFile of 1 byte to the NUL \
                         device, checked to report 1 byte written (reads of NUL return end-of-file, \
                         so a write is the null device's byte-moving call; both enter the kernel \
                         and go through the I/O manager to the null driver); time per read = batch time / reads − \
                         empty-loop cost − one clock read per batch (lmbench `lat_syscall read`)."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "read",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per 1-byte read system call",
                }],
            },
        }
    }
}

impl Benchmark for IoSyscall {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut dev = CheapIo::open().map_err(|e| os_err("open zero device", e))?;
        let description = dev.description;
        let opts = BatchOptions {
            subtract_loop_overhead: true,
            ..Default::default()
        };
        let samples = ctx.time_batches(opts, |n| {
            for _ in 0..n {
                dev.read_one().map_err(|e| os_err("read", e))?;
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric("read", samples)
            .fact("call", description))
    }
}
