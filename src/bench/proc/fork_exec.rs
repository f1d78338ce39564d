//! fork + exec + exit + wait: starting a new program the classic Unix way (lmbench
//! `lat_proc exec`).

use std::path::Path;

use super::{op_err, tiny_program};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::harness::{BatchOptions, RunContext};
use crate::model::BenchError;
use crate::platform::{self, ExecProgram};
use crate::units::{Better, Unit};

pub struct ForkExec {
    info: Info,
}

impl ForkExec {
    pub fn new() -> Self {
        ForkExec {
            info: Info {
                id: "proc/fork_exec".into(),
                suite: "proc",
                title: "Program start: fork + exec + exit + wait".into(),
                method: "Batches of: fork(); the child calls execve on the tiny program (Linux: \
                         /bin/true, checked to exist at setup) with argv = [program] and an empty \
                         environment (the C strings are built once, before timing); the parent \
                         waits with waitpid and checks a normal exit with status 0 (else the run \
                         fails with the status; 127 = exec failed). Time per fork+exec+exit+wait \
                         = batch time / starts − one clock read per batch (lmbench `lat_proc \
                         exec`). Includes the dynamic loading of the program. Linux only: \
                         unsupported on macOS (fork in a multi-threaded program) and Windows (no \
                         fork)."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "fork_exec",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per fork + execve(tiny program) + its exit + waitpid",
                }],
            },
        }
    }
}

impl Default for ForkExec {
    fn default() -> Self {
        Self::new()
    }
}

impl Benchmark for ForkExec {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        platform::fork_available().map_err(|e| os_err("fork", e))?;
        let program: &Path = tiny_program()?;
        let prog = ExecProgram::new(program).map_err(|e| os_err("prepare program", e))?;
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                platform::fork_exec_wait(&prog)
                    .map_err(|e| op_err(ctx, &format!("fork+exec {}", program.display()), e))?;
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric("fork_exec", samples)
            .fact("program", program.display().to_string())
            .fact("argv", "[program]")
            .fact("environment", "empty"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::proc::testutil::{is_linux, quick};
    use crate::model::ErrorKind;

    #[test]
    fn measures_or_is_unsupported() {
        match quick(|ctx| ForkExec::new().run(ctx)) {
            Ok(out) => {
                assert!(is_linux());
                let (name, s) = &out.samples[0];
                assert_eq!(*name, "fork_exec");
                assert!(!s.is_empty() && s.iter().all(|&v| v > 0.0), "{s:?}");
                assert_eq!(out.facts["program"], "/bin/true");
            }
            Err(e) => {
                assert!(!is_linux(), "{e}");
                assert_eq!(e.kind, ErrorKind::Unsupported);
            }
        }
    }
}
