//! posix_spawn + wait: starting a new program the way modern Unix C libraries prefer.

use super::{op_err, tiny_program};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::harness::{BatchOptions, RunContext};
use crate::model::BenchError;
use crate::platform::{self, ExecProgram};
use crate::units::{Better, Unit};

pub struct PosixSpawn {
    info: Info,
}

impl PosixSpawn {
    pub fn new() -> Self {
        PosixSpawn {
            info: Info {
                id: "proc/posix_spawn".into(),
                suite: "proc",
                title: "Program start: posix_spawn + wait".into(),
                method: "Batches of: posix_spawn of the tiny program (Linux: /bin/true, macOS: \
                         /usr/bin/true; checked to exist at setup) with argv = [program], an empty environment and no file \
                         actions or attributes (the C strings are built once, before timing); \
                         waitpid, checking a normal exit with status 0 (else the run fails with \
                         the status). Time per spawn+exit+wait = batch time / starts − one clock \
                         read per batch. glibc implements posix_spawn with clone(CLONE_VM | \
                         CLONE_VFORK), so no page tables are copied. Linux and macOS; \
                         unsupported on Windows (no posix_spawn)."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "posix_spawn",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per posix_spawn(tiny program) + its exit + waitpid",
                }],
            },
        }
    }
}

impl Default for PosixSpawn {
    fn default() -> Self {
        Self::new()
    }
}

impl Benchmark for PosixSpawn {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        platform::posix_spawn_available().map_err(|e| os_err("posix_spawn", e))?;
        let program = tiny_program()?;
        let prog = ExecProgram::new(program).map_err(|e| os_err("prepare program", e))?;
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                platform::posix_spawn_wait(&prog)
                    .map_err(|e| op_err(ctx, &format!("posix_spawn {}", program.display()), e))?;
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric("posix_spawn", samples)
            .fact("program", prog.path().display().to_string())
            .fact("argv", "[program]")
            .fact("environment", "empty"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::proc::testutil::quick;
    use crate::model::ErrorKind;

    #[test]
    fn measures_or_is_unsupported() {
        match quick(|ctx| PosixSpawn::new().run(ctx)) {
            Ok(out) => {
                let (name, s) = &out.samples[0];
                assert_eq!(*name, "posix_spawn");
                assert!(!s.is_empty() && s.iter().all(|&v| v > 0.0), "{s:?}");
            }
            Err(e) => {
                assert_eq!(crate::platform::OS_NAME, "Windows", "{e}");
                assert_eq!(e.kind, ErrorKind::Unsupported);
            }
        }
    }
}
