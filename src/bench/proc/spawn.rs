//! std::process::Command: what a portable program pays to run another program and wait for it.

use super::{interrupted_or, op_err, tiny_program};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct Spawn {
    info: Info,
}

impl Spawn {
    pub fn new() -> Self {
        Spawn {
            info: Info {
                id: "proc/spawn".into(),
                suite: "proc",
                title: "Program start: std::process::Command + wait".into(),
                method: "Batches of std::process::Command::new(tiny program).status(): a new \
                         Command each time, stdio and environment inherited; the status must be \
                         success (else the run fails with it). The tiny program is /bin/true on \
                         Linux, /usr/bin/true on macOS, rundll32.exe from the system directory with no \
                         arguments on Windows (exits 0 at once; Windows has no true.exe) — checked to \
                         exist at setup. Time per Command+spawn+exit+wait = batch time / \
                         starts − one clock read per batch. Rust's std uses posix_spawn where it \
                         can, else fork/exec, and adds its own bookkeeping (e.g. a CLOEXEC pipe \
                         to report exec errors); on Windows it calls CreateProcessW."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "spawn",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per Command::new(tiny program).status()",
                }],
            },
        }
    }
}

impl Default for Spawn {
    fn default() -> Self {
        Self::new()
    }
}

impl Benchmark for Spawn {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let program = tiny_program()?;
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                let status = std::process::Command::new(program)
                    .status()
                    .map_err(|e| op_err(ctx, &format!("spawn {}", program.display()), e))?;
                if !status.success() {
                    let e = BenchError::failed(format!(
                        "{} {status} (expected a normal exit with status 0)",
                        program.display()
                    ));
                    return Err(interrupted_or(ctx, e));
                }
            }
            Ok(())
        })?;
        Ok(RunOutput::default()
            .metric("spawn", samples)
            .fact("program", program.display().to_string())
            .fact("api", "std::process::Command::new(program).status()"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::testutil::quick;

    #[test]
    fn measures_or_is_unsupported() {
        match quick(|ctx| Spawn::new().run(ctx)) {
            Ok(out) => {
                let (name, s) = &out.samples[0];
                assert_eq!(*name, "spawn");
                assert!(!s.is_empty() && s.iter().all(|&v| v > 0.0), "{s:?}");
                assert!(out.facts.contains_key("program"));
            }
            Err(e) => panic!("spawn must work on every OS: {e}"),
        }
    }
}
