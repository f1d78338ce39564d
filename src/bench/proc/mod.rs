//! Suite `proc`: process and thread creation, spawn+exec, context switches.

use super::Benchmark;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![]
}
