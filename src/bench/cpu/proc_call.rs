//! Procedure call with 0–7 integer arguments (lmbench `lat_proc`-style). On x86-64 System V the
//! seventh argument goes on the stack, so 7 args is expected to cost slightly more.
//!
//! Not inlined, not optimised away, by construction: each callee is an `extern "C"` function with
//! `#[inline(never)]`, and the caller gets its address through `black_box`, so the compiler cannot
//! know which function it calls — it must emit a real (indirect) call every iteration. Every argument
//! is passed through `black_box` and every result is consumed by `black_box`, so neither the call
//! nor its arguments can be hoisted or folded. The test `callees_really_run` checks the results.

use std::hint::black_box;

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::harness::{BatchOptions, RunContext};
use crate::model::BenchError;
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

/// Calls the callee with `args` arguments `n` times; returns the xor of the results.
#[inline(never)]
fn call_n(args: usize, n: u64) -> u64 {
    let x = black_box(0x5a5a_u64);
    let mut acc = 0u64;
    macro_rules! run {
        ($f:expr, $($a:ident),*) => {{
            let f = black_box($f);
            for _ in 0..n {
                $(let $a = black_box(x);)*
                acc ^= black_box(f($($a),*));
            }
        }};
    }
    match args {
        0 => run!(call0 as extern "C" fn() -> u64,),
        1 => run!(call1 as extern "C" fn(u64) -> u64, a),
        2 => run!(call2 as extern "C" fn(u64, u64) -> u64, a, b),
        3 => run!(call3 as extern "C" fn(u64, u64, u64) -> u64, a, b, c),
        4 => run!(
            call4 as extern "C" fn(u64, u64, u64, u64) -> u64,
            a,
            b,
            c,
            d
        ),
        5 => run!(
            call5 as extern "C" fn(u64, u64, u64, u64, u64) -> u64,
            a,
            b,
            c,
            d,
            e
        ),
        6 => run!(
            call6 as extern "C" fn(u64, u64, u64, u64, u64, u64) -> u64,
            a,
            b,
            c,
            d,
            e,
            f
        ),
        _ => run!(
            call7 as extern "C" fn(u64, u64, u64, u64, u64, u64, u64) -> u64,
            a,
            b,
            c,
            d,
            e,
            f,
            g
        ),
    }
    acc
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
                method:
                    "Batches of calls to extern \"C\" #[inline(never)] functions reached through \
                         a black_box'ed function pointer (so no inlining or elision is possible), \
                         arguments and results through black_box; time per call = batch time / \
                         calls − empty-loop cost per iteration − one clock read per batch."
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
            "indirect call of extern \"C\" #[inline(never)] fn",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callees_really_run() {
        // x ^ x ^ ... : an even number of equal args xors to 0, an odd number to x; call0 returns 1.
        let x = 0x5a5a_u64;
        let expect = |args: usize| {
            if args == 0 {
                1
            } else if args % 2 == 1 {
                x
            } else {
                0
            }
        };
        for args in 0..8 {
            // 3 calls: acc = r ^ r ^ r = r.
            assert_eq!(call_n(args, 3), expect(args), "args {args}");
            assert_eq!(call_n(args, 2), 0, "args {args}");
        }
    }
}
