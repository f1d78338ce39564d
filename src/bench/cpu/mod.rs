//! Suite `cpu`: the cost of reading the clock, of a loop iteration, of a procedure call with 0–7
//! integer arguments, of a null system call and of a cheap I/O system call.

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str =
    "CPU and kernel-entry costs: clock read, loop, procedure call, null and I/O system call";

/// The figures the summary of a run shows first for this suite, in this order.
pub const HEADLINES: Headlines = Headlines::Listed(&[
    Headline::new("cpu/null_syscall", "", "null system call"),
    Headline::new("cpu/io_syscall", "", "1-byte read"),
]);

mod io_syscall;
mod loop_overhead;
mod null_syscall;
mod proc_call;
mod timer_read;

use super::Benchmark;
use super::{Headline, Headlines};

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(timer_read::TimerRead::new()),
        Box::new(loop_overhead::LoopOverhead::new()),
        Box::new(proc_call::ProcCall::new()),
        Box::new(null_syscall::NullSyscall::new()),
        Box::new(io_syscall::IoSyscall::new()),
    ]
}
