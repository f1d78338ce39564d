//! The first screen of a run: per suite the few figures a user compares first (each with its 95 %
//! CI), then the verdicts that matter (noisy machine, a suite unsupported, failures, noisy
//! figures). The full tables follow it; warnings are folded so that one kind of warning repeated
//! over metrics and runs is one line (the record keeps every one).

use std::collections::BTreeMap;

use crate::model::{BenchmarkResult, ErrorKind, MetricResult, RunRecord};
use crate::units::{Better, format_value};

use super::display_text;

/// A headline: benchmark id, the metric (a name; "" for the benchmark's first metric; or a prefix
/// ending in `*` whose last measured match is taken: the largest size of a sweep), and its label.
const HEADLINES: &[(&str, &str, &str)] = &[
    ("cpu/null_syscall", "", "null system call"),
    ("cpu/io_syscall", "", "1-byte read"),
    ("proc/fork_exit", "", "fork + exit"),
    ("proc/thread_create", "", "thread create + join"),
    (
        "proc/ctx_switch_thread_pinned",
        "switch",
        "context switch (threads, pinned)",
    ),
    ("mem/latency_random", "ram", "load latency, RAM"),
    ("mem/bandwidth_1t", "copy", "copy bandwidth, 1 thread"),
    ("mem/bandwidth_all", "copy", "copy bandwidth, all CPUs"),
    ("net/tcp_rtt_64b", "rtt_p50_us", "TCP round trip 64 B, p50"),
    ("net/tcp_stream", "throughput_gbit_s", "TCP stream"),
    ("net/udp_stream", "jitter_p99_us", "UDP jitter p99"),
    (
        "fs/read_latency",
        "random_block_*",
        "random 4 KiB read, cache bypassed",
    ),
    ("fs/seq_read_t1", "mb_per_s", "sequential read, 1 thread"),
    ("fs/seq_write_t1", "mb_per_s", "sequential write, 1 thread"),
    ("fs/fsync", "write_fsync", "write + fsync"),
    (
        "frame/pacing_60fps_1mp",
        "period_dev_p99",
        "60 fps: p99 period deviation",
    ),
    ("frame/pacing_60fps_1mp", "late_pct", "60 fps: frames late"),
    ("latency/wakeup", "latency", "timer wake-up latency, p50"),
    (
        "latency/wakeup",
        "latency_p99",
        "timer wake-up latency, p99",
    ),
    ("latency/noise", "noise_pct", "OS noise (busy loop per CPU)"),
    (
        "latency/idle_wakeup",
        "idle_exit",
        "waking an idle CPU (idle − busy)",
    ),
];

/// Headline figures per suite at most (the policy and interactivity suites list cells).
const MAX_PER_SUITE: usize = 6;

/// One headline figure, formatted.
pub struct Figure {
    pub label: String,
    pub value: String,
    pub ci: String,
}

/// Per suite (record order) its headline figures, at most [`MAX_PER_SUITE`], and notes: how many
/// more of the same kind the table holds, a suite this OS cannot run at all.
pub fn headlines(record: &RunRecord) -> (Vec<(String, Vec<Figure>)>, Vec<String>) {
    let mut suites: Vec<(&str, Vec<&BenchmarkResult>)> = Vec::new();
    for b in &record.benchmarks {
        match suites.iter_mut().find(|(s, _)| *s == b.suite) {
            Some((_, v)) => v.push(b),
            None => suites.push((b.suite.as_str(), vec![b])),
        }
    }
    let mut out = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for (suite, benches) in &suites {
        let mut figures = suite_figures(suite, benches);
        let more = figures.len().saturating_sub(MAX_PER_SUITE);
        figures.truncate(MAX_PER_SUITE);
        if more > 0 {
            notes.push(format!(
                "{suite}: {more} more figure(s) of the same kind in the table below"
            ));
        }
        if benches
            .iter()
            .all(|b| b.error.as_ref().map(|e| e.kind) == Some(ErrorKind::Unsupported))
        {
            let why = benches
                .first()
                .and_then(|b| b.error.as_ref())
                .map(|e| display_text(&e.message, 120))
                .unwrap_or_default();
            notes.push(format!("{suite}: unsupported here ({why})"));
        }
        out.push((suite.to_string(), figures));
    }
    (out, notes)
}

fn figure(label: String, m: &MetricResult) -> Option<Figure> {
    let s = m.summary.as_ref()?;
    let arrow = match m.better {
        Better::Higher => " ↑",
        Better::Neutral => " ≈",
        Better::Lower => "",
    };
    Some(Figure {
        label,
        value: format!(
            "{}{}{arrow}",
            m.bound_prefix(),
            format_value(s.center, m.unit)
        ),
        ci: format!(
            "[{} … {}]",
            format_value(s.ci95[0], m.unit),
            format_value(s.ci95[1], m.unit)
        ),
    })
}

fn metric<'a>(b: &'a BenchmarkResult, name: &str) -> Option<&'a MetricResult> {
    if name.is_empty() {
        return b.metrics.first();
    }
    match name.strip_suffix('*') {
        Some(prefix) => b
            .metrics
            .iter()
            .rev()
            .find(|m| m.name.starts_with(prefix) && m.summary.is_some()),
        None => b.metrics.iter().find(|m| m.name == name),
    }
}

/// The headline figures of one suite, in record order.
fn suite_figures(suite: &str, benches: &[&BenchmarkResult]) -> Vec<Figure> {
    let mut out = Vec::new();
    match suite {
        // Per task: its latency without load and under the load that hurt it most.
        "interactivity" => {
            let mut tasks: Vec<&str> = Vec::new();
            for b in benches {
                let task = b.id.split('/').nth(1).unwrap_or("");
                if !tasks.contains(&task) {
                    tasks.push(task);
                }
            }
            for task in tasks {
                let cells: Vec<(&str, &MetricResult)> = benches
                    .iter()
                    .filter(|b| b.id.split('/').nth(1) == Some(task))
                    .filter_map(|b| {
                        let load = b.id.split('/').nth(2).unwrap_or("");
                        metric(b, "latency")
                            .filter(|m| m.summary.is_some())
                            .map(|m| (load, m))
                    })
                    .collect();
                if let Some((_, m)) = cells.iter().find(|(l, _)| *l == "none") {
                    out.extend(figure(format!("{task} latency, no load"), m));
                }
                let worst = cells.iter().filter(|(l, _)| *l != "none").max_by(|a, b| {
                    let c = |m: &MetricResult| m.summary.as_ref().map_or(0.0, |s| s.center);
                    c(a.1).total_cmp(&c(b.1))
                });
                if let Some((load, m)) = worst {
                    out.extend(figure(format!("{task} latency, worst load ({load})"), m));
                }
            }
        }
        "policy" => {
            for b in benches {
                let cell = b.id.strip_prefix("policy/").unwrap_or(&b.id);
                if let Some(m) = metric(b, "makespan") {
                    out.extend(figure(format!("{cell}: makespan"), m));
                }
            }
        }
        _ => {
            for (id, name, label) in HEADLINES {
                if let Some(b) = benches.iter().find(|b| b.id == *id)
                    && let Some(m) = metric(b, name)
                {
                    out.extend(figure(label.to_string(), m));
                }
            }
            // A suite without listed headlines (or a selection of other benchmarks): the first
            // measured figure of each benchmark.
            if out.is_empty() {
                for b in benches {
                    if let Some(m) = b.metrics.iter().find(|m| m.summary.is_some()) {
                        let short = b.id.split_once('/').map_or(b.id.as_str(), |(_, n)| n);
                        let label = if b.metrics.len() == 1 {
                            short.to_string()
                        } else {
                            format!("{short}.{}", m.name)
                        };
                        out.extend(figure(display_text(&label, 48), m));
                    }
                }
            }
        }
    }
    out
}

/// The summary block: headline figures per suite, then the verdict lines. Empty when the record
/// holds one suite of at most [`MAX_PER_SUITE`] figures (the table is then short enough alone).
pub fn render_summary(record: &RunRecord) -> String {
    let suites = record
        .benchmarks
        .iter()
        .map(|b| b.suite.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let rows: usize = record.benchmarks.iter().map(|b| b.metrics.len()).sum();
    if suites < 2 && rows <= MAX_PER_SUITE {
        return String::new();
    }
    let (per_suite, notes) = headlines(record);
    let mut lines: Vec<(String, Figure)> = Vec::new();
    for (suite, figures) in per_suite {
        for (i, f) in figures.into_iter().enumerate() {
            let name = if i == 0 { suite.clone() } else { String::new() };
            lines.push((name, f));
        }
    }
    let mut s = format!(
        "Summary — median [95 % CI] of {}; full tables below\n",
        super::runs_kept_text(record)
    );
    let w = |f: fn(&(String, Figure)) -> usize| lines.iter().map(f).max().unwrap_or(0);
    let (ws, wl, wv) = (
        w(|l| super::width(&l.0)),
        w(|l| super::width(&l.1.label)),
        w(|l| super::width(&l.1.value)),
    );
    for (suite, f) in &lines {
        s.push_str(&format!(
            "  {}  {}  {}  {}\n",
            super::pad_right(suite, ws),
            super::pad_right(&f.label, wl),
            super::pad_left(&f.value, wv),
            f.ci
        ));
    }
    let verdicts = verdicts(record);
    if !verdicts.is_empty() || !notes.is_empty() {
        s.push_str("Verdicts:\n");
        for v in verdicts.iter().chain(notes.iter()) {
            s.push_str(&format!("  ! {v}\n"));
        }
    }
    s.push('\n');
    s
}

/// The lines that change how the figures should be read: the run's own warnings (a noisy
/// machine, a debug build, too few runs, what was not measured), how many figures were noisy,
/// and adaptive benchmarks that stopped at their cap.
pub fn verdicts(record: &RunRecord) -> Vec<String> {
    let mut v: Vec<String> = record
        .warnings
        .iter()
        .map(|w| display_text(w, 400))
        .collect();
    let (noisy, benches) = noisy_figures(record);
    if noisy > 0 {
        v.push(format!(
            "{noisy} figure(s) of {benches} benchmark(s) varied more than 10 % from run to run \
             (listed under Warnings); more runs or --ci-width narrow them"
        ));
    }
    let capped: Vec<&str> = record
        .benchmarks
        .iter()
        .filter(|b| b.adaptive.as_ref().is_some_and(|a| !a.reached))
        .map(|b| b.id.as_str())
        .collect();
    if !capped.is_empty() {
        v.push(format!(
            "{} benchmark(s) stopped before their 95 % CI reached the --ci-width: {}",
            capped.len(),
            display_text(&capped.join(", "), 300)
        ));
    }
    v
}

const CV_MARK: &str = "run-to-run CV ";

/// Figures whose run-to-run CV was flagged as noisy, and the benchmarks they belong to.
fn noisy_figures(record: &RunRecord) -> (usize, usize) {
    let mut n = 0;
    let mut b_n = 0;
    for b in &record.benchmarks {
        let k = b.warnings.iter().filter(|w| w.contains(CV_MARK)).count();
        n += k;
        b_n += usize::from(k > 0);
    }
    (n, b_n)
}

/// Digits replaced by `#`: warnings (or reasons) that differ only in their numbers are of one
/// kind.
pub fn shape_of(s: &str) -> String {
    shape(s)
}

fn shape(s: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() || (in_digits && c == '.') {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// The warnings as printed on the terminal: the run's own, then per benchmark one line per kind
/// of warning (a warning repeated over its metrics and runs is one line naming the metrics and
/// how many were folded), and the noisy-CV warnings of every benchmark in one line. The record
/// and the report keep each one.
pub fn folded_warnings(record: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = record.warnings.clone();
    let mut noisy: Vec<String> = Vec::new();
    let mut noisy_count = 0;
    for b in &record.benchmarks {
        let mut cv: Vec<String> = Vec::new();
        // kind → (first warning's text after its metric, metrics in order, count)
        let mut kinds: BTreeMap<String, (usize, String, Vec<String>, usize)> = BTreeMap::new();
        for (order, w) in b.warnings.iter().enumerate() {
            let split = w
                .split_once(": ")
                .filter(|(head, _)| b.metrics.iter().any(|m| m.name == *head));
            match split {
                Some((head, rest)) if rest.starts_with(CV_MARK) => {
                    let pct = rest
                        .trim_start_matches(CV_MARK)
                        .split(" —")
                        .next()
                        .unwrap_or("")
                        .to_string();
                    cv.push(format!("{head} {pct}"));
                }
                Some((head, rest)) => {
                    let e = kinds
                        .entry(shape(rest))
                        .or_insert_with(|| (order, rest.to_string(), Vec::new(), 0));
                    if !e.2.iter().any(|m| m == head) {
                        e.2.push(head.to_string());
                    }
                    e.3 += 1;
                }
                None => {
                    kinds
                        .entry(format!("\u{0}{order}"))
                        .or_insert_with(|| (order, w.clone(), Vec::new(), 1));
                }
            }
        }
        let mut kinds: Vec<_> = kinds.into_values().collect();
        kinds.sort_by_key(|k| k.0);
        for (_, text, metrics, count) in kinds {
            let line = match (metrics.len(), count) {
                (0, _) => text,
                (1, 1) => format!("{}: {text}", metrics[0]),
                _ => format!(
                    "{}: {text} (and {} alike: {count} in all, each in the record)",
                    metrics.join(", "),
                    count - 1
                ),
            };
            out.push(format!("{}: {line}", b.id));
        }
        if !cv.is_empty() {
            noisy_count += cv.len();
            noisy.push(format!("{} ({})", b.id, cv.join(", ")));
        }
    }
    if !noisy.is_empty() {
        out.push(format!(
            "noisy: run-to-run CV above 10 % in {noisy_count} figure(s) of {} benchmark(s) — \
             repeat on a quieter machine, with more runs or with --ci-width: {}",
            noisy.len(),
            noisy.join("; ")
        ));
    }
    out.into_iter().map(|w| display_text(&w, 2000)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunRecord {
        serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap()
    }

    #[test]
    fn numbers_do_not_make_a_new_kind_of_warning() {
        assert_eq!(
            shape("10 of 10 samples ≤ 0 in run 1"),
            shape("8 of 9 samples ≤ 0 in run 12")
        );
        assert_ne!(shape("a 1"), shape("b 1"));
    }

    #[test]
    fn repeated_warnings_fold_into_one_line_per_kind_and_noisy_ones_into_one_line() {
        let mut r = fixture();
        r.warnings = vec!["load: noisy machine".into()];
        for b in &mut r.benchmarks {
            b.warnings.clear();
        }
        let b = &mut r.benchmarks[2];
        let names: Vec<String> = b.metrics.iter().map(|m| m.name.clone()).collect();
        assert!(names.len() >= 2, "fixture benchmark with several metrics");
        b.warnings.clear();
        for n in &names {
            for run in 1..=3 {
                b.warnings.push(format!(
                    "{n}: {run} of 10 samples ≤ 0 in run {run} — the subtracted cost exceeded"
                ));
            }
            b.warnings.push(format!(
                "{n}: run-to-run CV 15 % — noisy; repeat on a quieter machine or with more runs"
            ));
        }
        b.warnings.push("a warning of the benchmark itself".into());
        let id = b.id.clone();
        r.benchmarks[0].warnings = vec![format!(
            "{}: run-to-run CV 12 % — noisy; repeat",
            r.benchmarks[0].metrics[0].name
        )];
        let total: usize = r.benchmarks.iter().map(|b| b.warnings.len()).sum::<usize>() + 1;
        let w = folded_warnings(&r);
        assert_eq!(w[0], "load: noisy machine");
        let mine: Vec<&String> = w
            .iter()
            .filter(|l| l.starts_with(&format!("{id}:")))
            .collect();
        // One line for the ≤ 0 kind (every metric named, the count said), one for its own.
        assert_eq!(mine.len(), 2, "{w:#?}");
        assert!(
            mine[0].contains(&names.join(", "))
                && mine[0].contains(&format!("{} in all", names.len() * 3)),
            "{}",
            mine[0]
        );
        assert!(mine[1].ends_with("a warning of the benchmark itself"));
        // Every noisy figure of every benchmark: one line, counted, each benchmark listed.
        let noisy: Vec<&String> = w.iter().filter(|l| l.starts_with("noisy:")).collect();
        assert_eq!(noisy.len(), 1, "{w:#?}");
        assert!(
            noisy[0].contains(&format!(
                "in {} figure(s) of 2 benchmark(s)",
                names.len() + 1
            )),
            "{}",
            noisy[0]
        );
        assert!(noisy[0].contains(&r.benchmarks[0].id) && noisy[0].contains(&id));
        assert!(w.len() < total, "{} of {total}", w.len());
    }

    #[test]
    fn the_summary_gives_headline_figures_with_their_ci_and_the_verdicts() {
        let mut r = fixture();
        // One suite of few rows: no summary.
        r.benchmarks.truncate(1);
        r.benchmarks[0].metrics.truncate(1);
        assert_eq!(render_summary(&r), "");
        let mut r = fixture();
        r.warnings = vec!["load: noisy machine: load average 4.2".into()];
        for b in &mut r.benchmarks {
            b.warnings.clear();
        }
        r.benchmarks[1].warnings = vec![format!(
            "{}: run-to-run CV 15 % — noisy",
            r.benchmarks[1].metrics[0].name
        )];
        let s = render_summary(&r);
        assert!(s.starts_with("Summary — median [95 % CI] of 5 runs"), "{s}");
        let nul = r
            .benchmarks
            .iter()
            .find(|b| b.id == "cpu/null_syscall")
            .unwrap();
        let m = &nul.metrics[0].summary.as_ref().unwrap();
        let line = s
            .lines()
            .find(|l| l.contains("null system call"))
            .expect("the headline");
        assert!(
            line.contains(&format_value(m.center, nul.metrics[0].unit)),
            "{line}"
        );
        assert!(
            line.contains(&format_value(m.ci95[0], nul.metrics[0].unit)),
            "{line}"
        );
        assert!(s.contains("! load: noisy machine"), "{s}");
        assert!(
            s.contains("! 1 figure(s) of 1 benchmark(s) varied more than 10 %"),
            "{s}"
        );
        // One screen.
        assert!(s.lines().count() <= 40, "{s}");
    }

    #[test]
    fn a_suite_unsupported_here_is_a_verdict() {
        let mut r = fixture();
        let mut b = r.benchmarks[0].clone();
        b.id = "other/thing".into();
        b.suite = "other".into();
        for m in &mut b.metrics {
            m.summary = None;
            m.runs.clear();
        }
        b.error = Some(crate::model::BenchError::unsupported(
            "unsupported on TestOS: none",
        ));
        r.benchmarks.push(b);
        let s = render_summary(&r);
        assert!(
            s.contains("! other: unsupported here (unsupported on TestOS: none)"),
            "{s}"
        );
    }
}
