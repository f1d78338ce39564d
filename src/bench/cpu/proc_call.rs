//! Procedure call with 0–7 integer arguments (lmbench `lat_proc`-style). On x86-64 System V the
//! seventh argument goes on the stack, so 7 args is expected to cost slightly more.
//!
//! What one iteration of the timed loop does, by construction (`call_loop!`):
//! set up the arguments in registers from the loop counter (`i`, `i + 1`, … — one `mov`/`lea`
//! each), call, add the result into an accumulator that stays in a register. Only the function
//! pointer goes through `black_box`, once, before the loop: the compiler cannot know which
//! function it calls, so it must emit a real (indirect) call every iteration, yet nothing is
//! spilled to the stack per iteration (passing each argument through `black_box` would store and
//! reload it before every call, and the benchmark would time those spills). The callees are
//! `extern "C"` and `#[inline(never)]`; their results depend on every argument and the loop
//! returns the sum of results, which `callees_really_run` checks against a plain computation.
//! Disassembly of a release build (x86-64): each loop is `lea`/`mov` into rdi, rsi, rdx, rcx,
//! r8, r9 (7 args: the seventh is stored to the stack, as the ABI requires), `call *%reg`,
//! `add %rax,%acc`, counter increment and branch.

use std::hint::black_box;

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

#[inline(never)]
extern "C" fn call0() -> u64 {
    1
}
#[inline(never)]
extern "C" fn call1(a: u64) -> u64 {
    a
}
#[inline(never)]
extern "C" fn call2(a: u64, b: u64) -> u64 {
    a ^ b
}
#[inline(never)]
extern "C" fn call3(a: u64, b: u64, c: u64) -> u64 {
    a ^ b ^ c
}
#[inline(never)]
extern "C" fn call4(a: u64, b: u64, c: u64, d: u64) -> u64 {
    a ^ b ^ c ^ d
}
#[inline(never)]
extern "C" fn call5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
    a ^ b ^ c ^ d ^ e
}
#[inline(never)]
extern "C" fn call6(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f
}
#[inline(never)]
#[allow(clippy::too_many_arguments)]
extern "C" fn call7(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64) -> u64 {
    a ^ b ^ c ^ d ^ e ^ f ^ g
}

const METRICS: [&str; 8] = [
    "args0", "args1", "args2", "args3", "args4", "args5", "args6", "args7",
];

/// One non-inlined loop per arity: `n` calls of `$callee` through an opaque function pointer,
/// arguments `i + offset` computed in registers from the loop counter, results summed.
macro_rules! call_loop {
    (@ty $a:ident) => { u64 };
    ($name:ident, $callee:ident $(, $a:ident = $off:literal)*) => {
        #[inline(never)]
        fn $name(n: u64) -> u64 {
            let f = black_box($callee as extern "C" fn($(call_loop!(@ty $a)),*) -> u64);
            let mut acc = 0u64;
            let mut i = 0u64;
            while i < n {
                $(let $a = i.wrapping_add($off);)*
                acc = acc.wrapping_add(f($($a),*));
                i += 1;
            }
            acc
        }
    };
}

call_loop!(loop0, call0);
call_loop!(loop1, call1, a = 0);
call_loop!(loop2, call2, a = 0, b = 1);
call_loop!(loop3, call3, a = 0, b = 1, c = 2);
call_loop!(loop4, call4, a = 0, b = 1, c = 2, d = 3);
call_loop!(loop5, call5, a = 0, b = 1, c = 2, d = 3, e = 4);
call_loop!(loop6, call6, a = 0, b = 1, c = 2, d = 3, e = 4, f_ = 5);
call_loop!(
    loop7,
    call7,
    a = 0,
    b = 1,
    c = 2,
    d = 3,
    e = 4,
    f_ = 5,
    g = 6
);

/// Calls the callee with `args` arguments `n` times; returns the sum of the results.
fn call_n(args: usize, n: u64) -> u64 {
    match args {
        0 => loop0(n),
        1 => loop1(n),
        2 => loop2(n),
        3 => loop3(n),
        4 => loop4(n),
        5 => loop5(n),
        6 => loop6(n),
        _ => loop7(n),
    }
}

pub struct ProcCall {
    info: Info,
}

impl ProcCall {
    pub fn new() -> Self {
        const DESC: [&str; 8] = [
            "time per call with 0 integer arguments, loop overhead subtracted",
            "time per call with 1 integer argument, loop overhead subtracted",
            "time per call with 2 integer arguments, loop overhead subtracted",
            "time per call with 3 integer arguments, loop overhead subtracted",
            "time per call with 4 integer arguments, loop overhead subtracted",
            "time per call with 5 integer arguments, loop overhead subtracted",
            "time per call with 6 integer arguments, loop overhead subtracted",
            "time per call with 7 integer arguments (7th on the stack on x86-64 SysV), loop overhead subtracted",
        ];
        ProcCall {
            info: Info {
                id: "cpu/proc_call".into(),
                suite: "cpu",
                title: "Procedure call, 0–7 integer arguments".into(),
                method: "Batches of calls to extern \"C\" #[inline(never)] functions reached \
                         through a function pointer made opaque once with black_box (so no \
                         inlining or elision is possible); arguments are computed in registers \
                         from the loop counter and results summed in a register, so nothing is \
                         spilled to the stack per call (except the 7th argument, which the x86-64 \
                         SysV ABI passes on the stack); time per call = batch time / calls − \
                         empty-loop cost per iteration − one clock read per batch."
                    .into(),
                metrics: METRICS
                    .iter()
                    .zip(DESC)
                    .map(|(&name, description)| MetricSpec {
                        name,
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description,
                    })
                    .collect(),
            },
        }
    }
}

impl Benchmark for ProcCall {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut out = RunOutput::default();
        // Each argument count gets an eighth of the run's measuring time.
        let sub = ctx.with_run_time(ctx.run_time / METRICS.len() as u32);
        for (args, &name) in METRICS.iter().enumerate() {
            let opts = BatchOptions {
                subtract_loop_overhead: true,
                ..Default::default()
            };
            let samples = sub.time_batches(opts, |n| {
                black_box(call_n(args, n));
                Ok(())
            })?;
            out = out.metric(name, samples);
        }
        Ok(out.fact(
            "call_kind",
            "indirect call of extern \"C\" #[inline(never)] fn, arguments in registers",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the loops must return: the sum over i < n of callee(i, i + 1, …).
    fn expected(args: usize, n: u64) -> u64 {
        (0..n)
            .map(|i| {
                if args == 0 {
                    1
                } else {
                    (0..args as u64).fold(0, |r, k| r ^ i.wrapping_add(k))
                }
            })
            .fold(0u64, |acc, r| acc.wrapping_add(r))
    }

    #[test]
    fn callees_really_run() {
        for args in 0..8 {
            for n in [0, 1, 2, 3, 1000] {
                assert_eq!(call_n(args, n), expected(args, n), "args {args}, n {n}");
            }
        }
        // Every argument reaches the callee: dropping the last one changes the result.
        for args in 1..8 {
            assert_ne!(
                expected(args, 1000),
                expected(args - 1, 1000),
                "args {args}"
            );
        }
    }
}
