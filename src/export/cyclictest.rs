//! `osgauge latency --histogram FILE`: the per-CPU wake-up histogram in cyclictest's `-h` layout
//! (one line per 1 µs bucket: the bucket, then one count per CPU; then the totals, minimum,
//! average and maximum latencies and overflow counts as `#` lines), so the plotting scripts real-
//! time users keep (OSADL-style) read it unchanged. Built from the record's per-run histograms of
//! `latency/wakeup`'s `cpu<N>` metrics, all runs merged; those histograms keep 3 significant
//! digits, so above 1 ms a count can land in a neighbouring microsecond; latencies are whole
//! microseconds, truncated, as cyclictest prints them.

use crate::record::{BenchmarkResult, decode_histogram};

/// One CPU's merged histogram in whole microseconds.
pub struct Column {
    /// Count per 1 µs bucket, 0 … limit − 1.
    pub counts: Vec<u64>,
    /// Samples at or above the limit.
    pub overflows: u64,
    pub total: u64,
    pub min_us: f64,
    pub sum_us: f64,
    pub max_us: f64,
}

/// Every `cpu<N>` metric of `b` (a `latency/wakeup` result) as 1 µs buckets up to `limit_us`,
/// all runs merged.
pub fn columns(b: &BenchmarkResult, limit_us: u64) -> Vec<(String, Column)> {
    let mut cols: Vec<(String, Column)> = Vec::new();
    for m in b.metrics.iter().filter(|m| {
        m.name
            .strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
    }) {
        let mut c = Column {
            counts: vec![0; limit_us as usize],
            overflows: 0,
            total: 0,
            min_us: f64::INFINITY,
            sum_us: 0.0,
            max_us: 0.0,
        };
        for r in &m.runs {
            let (Some(h), Some(scale)) = (
                r.histogram.as_deref().and_then(decode_histogram),
                r.histogram_scale,
            ) else {
                continue;
            };
            let offset = r.histogram_offset.unwrap_or(0.0);
            for v in h.iter_recorded() {
                let ns = h.median_equivalent(v.value_iterated_to()) as f64 / scale + offset;
                let us = ns / 1e3;
                let n = v.count_at_value();
                c.total += n;
                c.sum_us += us * n as f64;
                c.min_us = c.min_us.min(us);
                c.max_us = c.max_us.max(us);
                match c.counts.get_mut(us.floor() as usize) {
                    Some(k) => *k += n,
                    None => c.overflows += n,
                }
            }
        }
        if c.total > 0 {
            cols.push((m.name.clone(), c));
        }
    }
    cols
}

/// The histogram text of `b` (a `latency/wakeup` result) with `limit_us` one-µs buckets, or None
/// when it has no per-CPU histogram.
pub fn render(b: &BenchmarkResult, limit_us: u64) -> Option<String> {
    let cols = columns(b, limit_us);
    if cols.is_empty() {
        return None;
    }
    let mut s = format!(
        "# osgauge {} histogram, cyclictest -h layout: 1 µs buckets, one column per CPU ({})\n",
        b.id,
        cols.iter()
            .map(|c| c.0.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    for i in 0..limit_us as usize {
        s.push_str(&format!("{i:06}"));
        for (_, c) in &cols {
            s.push_str(&format!(" {:06}", c.counts[i]));
        }
        s.push('\n');
    }
    let line = |title: &str, f: &dyn Fn(&Column) -> String| {
        let mut l = format!("# {title}:");
        for (_, c) in &cols {
            l.push(' ');
            l.push_str(&f(c));
        }
        l.push('\n');
        l
    };
    s.push_str(&line("Total", &|c| format!("{:09}", c.total)));
    s.push_str(&line("Min Latencies", &|c| {
        format!("{:05}", c.min_us.floor() as u64)
    }));
    s.push_str(&line("Avg Latencies", &|c| {
        format!("{:05}", (c.sum_us / c.total as f64).round() as u64)
    }));
    s.push_str(&line("Max Latencies", &|c| {
        format!("{:05}", c.max_us.floor() as u64)
    }));
    s.push_str(&line("Histogram Overflows", &|c| {
        format!("{:05}", c.overflows)
    }));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{MetricResult, RunMetric, encode_histogram};
    use crate::units::{Better, Unit};

    fn metric(name: &str, runs: &[&[f64]]) -> MetricResult {
        MetricResult {
            name: name.into(),
            unit: Unit::Nanoseconds,
            better: Better::Lower,
            description: String::new(),
            runs: runs
                .iter()
                .map(|s| RunMetric {
                    summary: crate::stats::summarize(s).unwrap(),
                    histogram: encode_histogram(s, 1000.0),
                    histogram_scale: Some(1000.0),
                    histogram_offset: None,
                    round: None,
                })
                .collect(),
            summary: None,
            not_measured: None,
            bound: None,
        }
    }

    #[test]
    fn buckets_are_whole_microseconds_per_cpu_and_runs_merge() {
        let b = BenchmarkResult {
            id: "latency/wakeup".into(),
            suite: "latency".into(),
            title: String::new(),
            params: Default::default(),
            measured: Default::default(),
            metrics: vec![
                metric("latency", &[&[1.0]]),
                // cpu0: 2 × 3.2 µs in run 1, 1 × 5.9 µs and one overflow (25.3 µs) in run 2.
                metric("cpu0", &[&[3200.0, 3200.0], &[5900.0, 25_300.0]]),
                metric("cpu1", &[&[1500.0]]),
            ],
            warnings: vec![],
            error: None,
            wall_s: 0.0,
            run_facts: vec![],
            adaptive: None,
        };
        let t = render(&b, 10).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].starts_with("# ") && lines[0].contains("cpu0 cpu1"),
            "{}",
            lines[0]
        );
        assert_eq!(lines[1 + 1], "000001 000000 000001");
        assert_eq!(lines[1 + 3], "000003 000002 000000");
        assert_eq!(lines[1 + 5], "000005 000001 000000");
        assert_eq!(lines.len(), 1 + 10 + 5);
        assert_eq!(lines[11], "# Total: 000000004 000000001");
        assert_eq!(lines[12], "# Min Latencies: 00003 00001");
        assert_eq!(lines[14], "# Max Latencies: 00025 00001");
        assert_eq!(lines[15], "# Histogram Overflows: 00001 00000");
        // No per-CPU histogram: nothing to write.
        let none = BenchmarkResult {
            metrics: vec![metric("latency", &[&[1.0]])],
            ..b
        };
        assert!(render(&none, 10).is_none());
    }
}
