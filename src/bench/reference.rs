//! The drift reference: a fixed, small workload that runs once in every round of every
//! invocation, whatever was selected, so that a comparison can see how fast the machine itself
//! was while each side measured (this project's host changes core speed ~2× between minutes).
//!
//! Three figures, one per family of metrics (`compare` maps each suite to one):
//! * `cpu_loop` — a dependent chain of integer shift-xor-multiply steps in user space (the `cpu` suite);
//! * `syscall` — the platform's null system call (kernel entry and exit: `proc`, `net`, `fs`,
//!   `latency`, `interactivity`, `policy`);
//! * `mem_read` — one pass reading a 64 MiB buffer, larger than the caches of common machines
//!   (the `mem` suite).
//!
//! The work is the same in every invocation (it ignores `--run-time`: 20 ms per figure), so its
//! figures are comparable between invocations, presets and labels.

use std::hint::black_box;
use std::time::Duration;

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub use crate::record::drift_reference::{ID, SUITE, family_of};

/// Measuring time of each of its figures per run.
const WINDOW: Duration = Duration::from_millis(20);
/// Bytes the memory pass reads.
const MEM_BYTES: usize = 64 << 20;

pub struct Reference {
    info: Info,
}

impl Default for Reference {
    fn default() -> Self {
        Self::new()
    }
}

impl Reference {
    pub fn new() -> Self {
        Reference {
            info: Info {
                id: ID.into(),
                suite: SUITE,
                title: "Drift reference (runs in every round)".into(),
                method: "A fixed workload run once in every round, in the round's random order, \
                         to record how fast the machine itself was: a dependent chain of 64-bit \
                         shift-xor-multiply steps (ns per step), the platform's null system call (ns per \
                         call, as cpu/null_syscall) and one read pass over a 64 MiB buffer \
                         (GB/s); 20 ms of batches each, independent of --run-time. `compare` \
                         shows its change beside the verdicts and does not call a change that \
                         the reference's own change explains when both sides are the same system."
                    .into(),
                metrics: vec![
                    MetricSpec {
                        name: "cpu_loop",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per step of a dependent integer shift-xor-multiply chain",
                    },
                    MetricSpec {
                        name: "syscall",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per null system call (kernel entry + exit)",
                    },
                    MetricSpec {
                        name: "mem_read",
                        unit: Unit::GigabytesPerSecond,
                        better: Better::Higher,
                        description: "read bandwidth of one thread over a 64 MiB buffer",
                    },
                ],
            },
        }
    }
}

/// `n` steps of a dependent chain (each step needs the previous result): a shift-xor and a
/// multiply, which — unlike an affine step — the compiler cannot fold several of into one.
#[inline(never)]
fn chain(n: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..n {
        x = black_box((x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    x
}

/// One read pass over `buf`, summing its words.
fn read_pass(buf: &[u64]) -> u64 {
    buf.iter().fold(0u64, |a, &w| a.wrapping_add(w))
}

impl Benchmark for Reference {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let ctx = ctx.with_run_time(WINDOW);
        let cpu = ctx.time_batches(BatchOptions::default(), |n| {
            black_box(chain(n, black_box(n)));
            Ok(())
        })?;
        let sys = crate::platform::null_syscall().map_err(|e| os_err("null syscall", e))?;
        let call = sys.call;
        let syscall = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                black_box(call());
            }
            Ok(())
        })?;
        // Touch every page first so the passes read memory, not fresh zero pages.
        let buf: Vec<u64> = (0..(MEM_BYTES / 8) as u64).collect();
        let opts = BatchOptions {
            min_batches: 3,
            max_ops_per_batch: 1,
            ..Default::default()
        };
        let per_pass_ns = ctx.time_batches(opts, |n| {
            for _ in 0..n {
                black_box(read_pass(black_box(&buf)));
            }
            Ok(())
        })?;
        // bytes / ns = GB/s.
        let mem: Vec<f64> = per_pass_ns
            .iter()
            .filter(|&&t| t > 0.0)
            .map(|t| MEM_BYTES as f64 / t)
            .collect();
        Ok(RunOutput::default()
            .metric("cpu_loop", cpu)
            .metric("syscall", syscall)
            .metric("mem_read", mem))
    }

    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        e.all_runs() * (3.0 * WINDOW.as_secs_f64() + 0.05)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_has_a_reference_figure_the_reference_declares() {
        let r = Reference::new();
        for suite in [
            "cpu",
            "proc",
            "mem",
            "net",
            "fs",
            "latency",
            "interactivity",
            "policy",
        ] {
            let f = family_of(suite);
            assert!(
                r.info().metrics.iter().any(|m| m.name == f),
                "{suite} → {f}"
            );
        }
    }

    #[test]
    fn a_run_measures_all_three_figures_positive() {
        let r = Reference::new();
        let out = crate::bench::testutil::quick(|ctx| r.run(ctx)).expect("reference runs here");
        for name in ["cpu_loop", "syscall", "mem_read"] {
            let (_, v) = out
                .samples
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("{name} missing"));
            assert!(
                !v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0),
                "{name}: {v:?}"
            );
        }
    }

    #[test]
    fn the_chain_depends_on_every_step() {
        assert_ne!(chain(1, 3), chain(2, 3));
        assert_eq!(read_pass(&[1, 2, 3]), 6);
    }
}
