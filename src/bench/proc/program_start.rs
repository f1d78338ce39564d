//! Starting a tiny program and waiting for it, by a Unix C-level mechanism: fork + exec (the
//! classic way, lmbench `lat_proc exec`) or posix_spawn (the way modern C libraries prefer).
//! `proc/spawn` measures the portable std::process::Command path separately.

use std::io;

use super::{op_err, tiny_program};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::platform::{self, ExecProgram};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

/// How the program is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    ForkExec,
    PosixSpawn,
}

impl Mechanism {
    /// Metric name, and the last part of the benchmark id.
    fn name(self) -> &'static str {
        match self {
            Mechanism::ForkExec => "fork_exec",
            Mechanism::PosixSpawn => "posix_spawn",
        }
    }
    /// The call named in errors.
    fn call(self) -> &'static str {
        match self {
            Mechanism::ForkExec => "fork+exec",
            Mechanism::PosixSpawn => "posix_spawn",
        }
    }
    fn available(self) -> io::Result<()> {
        match self {
            Mechanism::ForkExec => platform::fork_available(),
            Mechanism::PosixSpawn => platform::posix_spawn_available(),
        }
    }
    fn start_and_wait(self, prog: &ExecProgram) -> io::Result<()> {
        match self {
            Mechanism::ForkExec => platform::fork_exec_wait(prog),
            Mechanism::PosixSpawn => platform::posix_spawn_wait(prog),
        }
    }
}

pub struct ProgramStart {
    mechanism: Mechanism,
    info: Info,
}

impl ProgramStart {
    pub fn new(mechanism: Mechanism) -> Self {
        let (title, method, description) = match mechanism {
            Mechanism::ForkExec => (
                "Program start: fork + exec + exit + wait",
                "Batches of: fork(); the child calls execve on the tiny program (Linux: \
                 /bin/true, checked to exist at setup) with argv = [program] and an empty \
                 environment (the C strings are built once, before timing); the parent waits with \
                 waitpid and checks a normal exit with status 0 (else the run fails with the \
                 status; 127 = exec failed). Time per fork+exec+exit+wait = batch time / starts − \
                 one clock read per batch (lmbench `lat_proc exec`). Includes the dynamic loading \
                 of the program. Linux only: unsupported on macOS (fork in a multi-threaded \
                 program) and Windows (no fork).",
                "time per fork + execve(tiny program) + its exit + waitpid",
            ),
            Mechanism::PosixSpawn => (
                "Program start: posix_spawn + wait",
                "Batches of: posix_spawn of the tiny program (Linux: /bin/true, macOS: \
                 /usr/bin/true; checked to exist at setup) with argv = [program], an empty \
                 environment and no file actions or attributes (the C strings are built once, \
                 before timing); waitpid, checking a normal exit with status 0 (else the run \
                 fails with the status). Time per spawn+exit+wait = batch time / starts − one \
                 clock read per batch. glibc implements posix_spawn with clone(CLONE_VM | \
                 CLONE_VFORK), so no page tables are copied. Linux and macOS; unsupported on \
                 Windows (no posix_spawn).",
                "time per posix_spawn(tiny program) + its exit + waitpid",
            ),
        };
        ProgramStart {
            mechanism,
            info: Info {
                id: format!("proc/{}", mechanism.name()),
                suite: "proc",
                title: title.into(),
                method: method.into(),
                metrics: vec![MetricSpec {
                    name: mechanism.name(),
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description,
                }],
            },
        }
    }
}

impl Benchmark for ProgramStart {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let m = self.mechanism;
        m.available().map_err(|e| os_err(m.call(), e))?;
        let program = tiny_program()?;
        let prog = ExecProgram::new(program).map_err(|e| os_err("prepare program", e))?;
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                m.start_and_wait(&prog)
                    .map_err(|e| op_err(ctx, &format!("{} {}", m.call(), program.display()), e))?;
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric(m.name(), samples)
            .fact("program", prog.path().display().to_string())
            .fact("argv", "[program]")
            .fact("environment", "empty"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::testutil::{is_linux, quick};
    use crate::record::ErrorKind;

    #[test]
    fn fork_exec_measures_on_linux_else_is_unsupported() {
        let b = ProgramStart::new(Mechanism::ForkExec);
        assert_eq!(b.info().id, "proc/fork_exec");
        match quick(|ctx| b.run(ctx)) {
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

    #[test]
    fn posix_spawn_measures_on_unix_else_is_unsupported() {
        let b = ProgramStart::new(Mechanism::PosixSpawn);
        assert_eq!(b.info().id, "proc/posix_spawn");
        match quick(|ctx| b.run(ctx)) {
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
