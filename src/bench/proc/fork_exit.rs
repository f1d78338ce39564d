//! fork + exit + wait: the cost of creating a process that does nothing (lmbench `lat_proc fork`).

use super::op_err;
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::platform;
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct ForkExit {
    info: Info,
}

impl ForkExit {
    pub fn new() -> Self {
        ForkExit {
            info: Info {
                id: "proc/fork_exit".into(),
                suite: "proc",
                title: "Process creation: fork + exit + wait".into(),
                method: "Batches of: fork(); the child calls _exit(0) at once; the parent waits \
                         for it with waitpid and checks it exited normally with status 0 (else \
                         the run fails with the status). Time per fork+exit+wait = batch time / \
                         forks − one clock read per batch (lmbench `lat_proc fork`). The cost \
                         grows with the parent's address space (page tables are copied); the \
                         parent is this osgauge process. Linux only: unsupported on macOS (fork \
                         in a multi-threaded program) and Windows (no fork)."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "fork_exit",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per fork + child _exit(0) + waitpid",
                }],
            },
        }
    }
}

impl Default for ForkExit {
    fn default() -> Self {
        Self::new()
    }
}

impl Benchmark for ForkExit {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        platform::fork_available().map_err(|e| os_err("fork", e))?;
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                platform::fork_exit_wait().map_err(|e| op_err(ctx, "fork+_exit+waitpid", e))?;
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric("fork_exit", samples)
            .fact("child", "_exit(0) immediately after fork"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::testutil::{is_linux, quick, with_ctx};
    use crate::record::ErrorKind;

    #[test]
    fn measures_or_is_unsupported() {
        match quick(|ctx| ForkExit::new().run(ctx)) {
            Ok(out) => {
                assert!(is_linux());
                let (name, s) = &out.samples[0];
                assert_eq!(*name, "fork_exit");
                assert!(!s.is_empty() && s.iter().all(|&v| v > 0.0), "{s:?}");
            }
            Err(e) => {
                assert!(!is_linux(), "{e}");
                assert_eq!(e.kind, ErrorKind::Unsupported);
                assert!(e.message.contains("fork"), "{e}");
            }
        }
    }

    #[test]
    fn past_deadline_is_a_timeout() {
        if !is_linux() {
            return;
        }
        let e = with_ctx(Duration::from_millis(20), Duration::ZERO, |ctx| {
            ForkExit::new().run(ctx)
        })
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout);
    }
}
