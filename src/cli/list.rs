//! `osgauge list`: every benchmark, what it measures, its unit and direction.

use crate::bench::registry::suites;

/// `osgauge list` output.
pub fn list_text(long: bool, json: bool) -> String {
    let all = suites();
    if json {
        let v: Vec<_> = all
            .iter()
            .flat_map(|s| s.benchmarks.iter())
            .map(|b| {
                let i = b.info();
                serde_json::json!({
                    "id": i.id, "suite": i.suite, "title": i.title, "method": i.method,
                    "metrics": i.metrics.iter().map(|m| serde_json::json!({
                        "name": m.name, "unit": m.unit, "better": m.better, "description": m.description
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        return serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    }
    let mut s = String::new();
    for suite in &all {
        s.push_str(&format!("{} — {}\n", suite.name, suite.description));
        for b in &suite.benchmarks {
            let i = b.info();
            s.push_str(&format!("  {:<34} {}\n", i.id, i.title));
            for m in &i.metrics {
                let better = m.better.describe();
                s.push_str(&format!(
                    "      {:<10} {:<5} {:<16} {}\n",
                    m.name,
                    m.unit.symbol(),
                    better,
                    m.description
                ));
            }
            if long {
                s.push_str(&wrap(&i.method, 6, 96));
            }
        }
        s.push('\n');
    }
    if long {
        s.push_str("Harness (every batched benchmark):\n");
        s.push_str(&wrap(HARNESS_METHOD, 2, 96));
    }
    s
}

pub const HARNESS_METHOD: &str = "A batch of n operations is timed with two monotonic clock reads; one clock-read cost (measured at the start of every run record, `timing.timer_overhead_ns`) is subtracted per batch, and for operations of a few ns the empty-loop cost per iteration (`timing.loop_overhead_ns`) too. n doubles until a batch lasts ≥ max(50 µs, 1000 clock reads); those sizing batches are discarded. Batches are timed until the run's measuring time is used; the run's value is the median over its batches and its p99 the 99th percentile over batches (single operations when n = 1). Runs are independent repetitions after a discarded warm-up run (none for a benchmark whose every run warms itself, as its method says); the reported figure is the median of per-run medians with a 95 % bootstrap CI (fixed seed), and CV is the run-to-run coefficient of variation. Every benchmark has a time bound; reaching it stops the benchmark cleanly and records a timeout, keeping the finished runs.";

fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent + line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_respects_width() {
        let w = wrap(HARNESS_METHOD, 2, 60);
        assert!(
            w.lines()
                .all(|l| l.chars().count() <= 60 || !l.trim().contains(' '))
        );
        assert!(w.lines().all(|l| l.starts_with("  ")));
    }
}
