//! Relations between the cpu and proc benchmarks that hold on any machine: an operation that
//! contains another costs more than it. Each benchmark's own test checks that it measures or says
//! why not; these check that the figures mean what their names say (a benchmark timing the wrong
//! thing, or a broken overhead subtraction, breaks an order).

use std::collections::BTreeMap;
use std::time::Duration;

use super::testutil::{BusyWindow, is_linux, skip_timing, with_ctx};
use super::{Benchmark, cpu, proc};
use crate::model::ErrorKind;

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
fn containing_operations_cost_more_than_what_they_contain() {
    let all: Vec<Box<dyn Benchmark>> = cpu::benchmarks()
        .into_iter()
        .chain(proc::benchmarks())
        .collect();
    let window = BusyWindow::start();
    let wanted = [
        ("cpu/null_syscall", "call"),
        ("proc/thread_create", "create_join"),
        ("proc/fork_exit", "fork_exit"),
        ("proc/fork_exec", "fork_exec"),
        ("proc/posix_spawn", "posix_spawn"),
        ("proc/spawn", "spawn"),
        ("proc/ctx_switch_thread_unpinned", "round_trip"),
        ("proc/ctx_switch_process_unpinned", "round_trip"),
    ];
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
    let busy = window.busy();
    // (cheaper, dearer, why): the dearer operation contains the cheaper one.
    let order = [
        (
            "cpu/null_syscall",
            "proc/thread_create",
            "clone + exit + join are several system calls",
        ),
        (
            "proc/thread_create",
            "proc/fork_exit",
            "a process copies the address space a thread shares",
        ),
        (
            "proc/fork_exit",
            "proc/fork_exec",
            "fork+exec is fork plus loading a program",
        ),
        (
            "cpu/null_syscall",
            "proc/posix_spawn",
            "posix_spawn creates a process and loads /bin/true",
        ),
        (
            "cpu/null_syscall",
            "proc/spawn",
            "spawning a program is many system calls",
        ),
        (
            "cpu/null_syscall",
            "proc/ctx_switch_thread_unpinned",
            "a round trip is two writes, two reads and two switches",
        ),
        (
            "cpu/null_syscall",
            "proc/ctx_switch_process_unpinned",
            "a round trip is two writes, two reads and two switches",
        ),
    ];
    let pairs: Vec<_> = order
        .iter()
        .filter_map(|&(cheap, dear, why)| Some((cheap, *m.get(cheap)?, dear, *m.get(dear)?, why)))
        .collect();
    for &(cheap, a, ..) in &pairs {
        assert!(a > 0.0, "{cheap}: median {a} ns");
    }
    let what = format!("{} cost orders such as fork_exit < fork_exec", pairs.len());
    if skip_timing(busy, &what) {
        return;
    }
    for (cheap, a, dear, b, why) in pairs {
        assert!(a < b, "{cheap} {a:.0} ns ≥ {dear} {b:.0} ns, yet {why}");
    }
}
