//! What holds for the cpu and proc benchmarks whose costs contain one another, on any machine and
//! at any load: each measures (or is unsupported only where that is allowed) with positive, finite
//! medians. The relations between them (an operation that contains another costs more than it;
//! a benchmark timing the wrong thing, or a broken overhead subtraction, breaks an order) are
//! timing relations, judged in a quiet window only: tests/it/timing.rs.

use std::collections::BTreeMap;
use std::time::Duration;

use super::testutil::{is_linux, with_ctx};
use super::{Benchmark, cpu, proc};
use crate::record::ErrorKind;

/// Median of metric `metric` of benchmark `id` over one 100 ms run, or None where unsupported.
fn measure(all: &[Box<dyn Benchmark>], id: &str, metric: &str) -> Option<f64> {
    let b = all
        .iter()
        .find(|b| b.info().id == id)
        .unwrap_or_else(|| panic!("no benchmark {id}"));
    let r = with_ctx(Duration::from_millis(100), Duration::from_secs(30), |ctx| {
        b.run(ctx)
    });
    match r {
        Ok(out) => {
            let s = &out
                .samples
                .iter()
                .find(|(n, _)| *n == metric)
                .unwrap_or_else(|| panic!("{id}: no metric {metric}"))
                .1;
            assert!(!s.is_empty(), "{id}/{metric}: no samples");
            assert!(s.iter().all(|v| v.is_finite()), "{id}/{metric}: {s:?}");
            Some(crate::stats::median(s))
        }
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Unsupported, "{id}: {e}");
            eprintln!("{id}: {e}");
            None
        }
    }
}

#[test]
fn containing_and_contained_operations_measure_where_they_must() {
    let all: Vec<Box<dyn Benchmark>> = cpu::benchmarks()
        .into_iter()
        .chain(proc::benchmarks())
        .collect();
    let wanted = crate::testing::CONTAINMENT;
    let mut m = BTreeMap::new();
    for (id, metric) in wanted {
        if let Some(v) = measure(&all, id, metric) {
            m.insert(id, v);
        } else {
            // Only fork-based benchmarks (and posix_spawn on Windows) may be missing.
            assert!(
                !is_linux() && id != "cpu/null_syscall" && id != "proc/spawn",
                "{id} must measure here"
            );
        }
    }
    eprintln!("medians (ns): {m:?}");
    if is_linux() {
        assert!(m.contains_key("proc/fork_exec") && m.contains_key("proc/fork_exit"));
    }
    for (id, v) in &m {
        assert!(*v > 0.0, "{id}: median {v} ns");
    }
}
