//! The first screen of a run: per suite the few figures a user compares first (each with its 95 %
//! CI), then the verdicts that matter (noisy machine, a suite unsupported, failures, noisy
//! figures). The full tables follow it; warnings are folded so that one kind of warning repeated
//! over metrics and runs is one line (the record keeps every one).

use crate::record::{BenchmarkResult, ErrorKind, MetricResult, RunRecord};
use crate::units::{Better, format_value};

use super::conditions::{brief_text, conditions, noisy};
use super::display_text;

/// A headline figure a suite declares (in its `mod.rs`, read through the suite registry): one
/// benchmark's metric and the label it is shown under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headline {
    /// The benchmark's id.
    pub id: &'static str,
    /// The metric: a name; "" for the benchmark's first metric; or a prefix ending in `*` whose
    /// last measured match is taken (the largest size of a sweep).
    pub metric: &'static str,
    /// At most [`LABEL_W`] columns, so that a row fits 80.
    pub label: &'static str,
    /// The label when other work competed for the CPUs during the run and the figure includes
    /// that work (see [`other_work_competed`]); None: the same label.
    pub label_when_busy: Option<&'static str>,
}

impl Headline {
    pub const fn new(id: &'static str, metric: &'static str, label: &'static str) -> Headline {
        Headline {
            id,
            metric,
            label,
            label_when_busy: None,
        }
    }

    /// This headline, labelled `label` when other work competed for the CPUs.
    pub const fn when_busy(self, label: &'static str) -> Headline {
        Headline {
            label_when_busy: Some(label),
            ..self
        }
    }
}

/// One figure a suite picked from its results: the benchmark, its metric and the label.
pub struct Pick<'a> {
    pub bench: &'a BenchmarkResult,
    pub metric: &'a MetricResult,
    pub label: String,
}

/// How a suite chooses its headline figures.
#[derive(Debug, Clone, Copy)]
pub enum Headlines {
    /// These figures, in this order; a suite none of whose listed figures is in the record
    /// (or which lists none) shows the first measured figure of each benchmark.
    Listed(&'static [Headline]),
    /// A suite whose benchmarks are the cells of a matrix (ids not known up front) picks its
    /// figures from its results (the record's order).
    Picked(for<'a> fn(&[&'a BenchmarkResult]) -> Vec<Pick<'a>>),
}

/// Each suite's [`Headlines`], by suite name: what the summary's caller passes in (the suite
/// registry's). A suite not in it shows the first measured figure of each benchmark.
pub type SuiteHeadlines<'a> = &'a [(&'a str, Headlines)];

/// Headline figures per suite at most (the policy and interactivity suites list cells).
const MAX_PER_SUITE: usize = 6;

/// Widest label of a summary row, in columns: label, median and a compact CI fit 80 columns.
pub const LABEL_W: usize = 32;

/// One headline figure, formatted.
pub struct Figure {
    pub label: String,
    pub value: String,
    pub ci: String,
    /// "~" when its runs varied more than 10 %, "?" when its 95 % CI includes zero (the value
    /// is then in parentheses: not told apart from 0); empty otherwise. See [`MARKS`].
    pub marks: String,
}

/// The marks of a summary row and what they mean.
pub const MARKS: &[(char, &str)] = &[
    ('~', "varied > 10 % run to run"),
    ('?', "95 % CI includes 0"),
];

/// Per suite (record order) its headline figures, at most [`MAX_PER_SUITE`], and notes: how many
/// more of the same kind the table holds, a suite this OS cannot run at all. `chosen`: each suite's
/// headlines (the suite registry's).
pub fn headlines(
    record: &RunRecord,
    chosen: SuiteHeadlines,
) -> (Vec<(String, Vec<Figure>)>, Vec<String>) {
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
        let how = chosen.iter().find(|(s, _)| s == suite).map(|(_, h)| *h);
        let mut figures = suite_figures(record, how, benches);
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

/// `label_when_busy`: the label instead when other work competed for the CPUs.
fn figure(
    record: &RunRecord,
    b: &BenchmarkResult,
    label: String,
    label_when_busy: Option<&str>,
    m: &MetricResult,
) -> Option<Figure> {
    let s = m.summary.as_ref()?;
    let arrow = match m.better {
        Better::Higher => " ↑",
        Better::Neutral => " ≈",
        Better::Lower => "",
    };
    let mut marks = String::new();
    if super::conditions::is_noisy(record, &b.id, &m.name) {
        marks.push('~');
    }
    let crosses_zero = s.ci95[0] < 0.0 && s.ci95[1] > 0.0;
    let mut value = format!("{}{}", m.bound_prefix(), format_value(s.center, m.unit));
    if crosses_zero {
        marks.push('?');
        value = format!("({value})");
    }
    let label = match label_when_busy {
        Some(busy) if other_work_competed(record) => busy.to_string(),
        _ => label,
    };
    Some(Figure {
        label: display_text(&label, LABEL_W),
        value: format!("{value}{arrow}"),
        ci: compact_ci(
            &format_value(s.ci95[0], m.unit),
            &format_value(s.ci95[1], m.unit),
        ),
        marks,
    })
}

/// "[75.46 … 77.11 ns]" when both ends have one unit, "[11.09 µs … 4.011 ms]" otherwise.
pub fn compact_ci(lo: &str, hi: &str) -> String {
    match (lo.rsplit_once(' '), hi.rsplit_once(' ')) {
        (Some((a, ua)), Some((b, ub))) if ua == ub => format!("[{a} … {b} {ua}]"),
        _ => format!("[{lo} … {hi}]"),
    }
}

/// Whether other work competed for the CPUs while the run measured: the machine checks at its
/// start or end found a noisy machine or CPU pressure.
pub fn other_work_competed(record: &RunRecord) -> bool {
    std::iter::once(&record.environment.start)
        .chain(record.environment.end.as_ref())
        .flat_map(|e| crate::system::check(&record.machine, e))
        .any(|f| {
            f.level == crate::system::Level::Warning
                && matches!(f.topic.as_str(), "load" | "cpu_pressure")
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

/// The headline figures of one suite: as `how` lists or picks them; the first measured figure of
/// each benchmark when it lists none that the record holds (or the suite has no headlines).
fn suite_figures(
    record: &RunRecord,
    how: Option<Headlines>,
    benches: &[&BenchmarkResult],
) -> Vec<Figure> {
    let mut out = Vec::new();
    match how {
        Some(Headlines::Picked(pick)) => {
            for p in pick(benches) {
                out.extend(figure(record, p.bench, p.label, None, p.metric));
            }
            return out;
        }
        Some(Headlines::Listed(list)) => {
            for h in list {
                if let Some(b) = benches.iter().find(|b| b.id == h.id)
                    && let Some(m) = metric(b, h.metric)
                {
                    out.extend(figure(record, b, h.label.to_string(), h.label_when_busy, m));
                }
            }
        }
        None => {}
    }
    // A suite without listed headlines (or a selection of other benchmarks): the first measured
    // figure of each benchmark.
    if out.is_empty() {
        for b in benches {
            if let Some(m) = b.metrics.iter().find(|m| m.summary.is_some()) {
                let short = b.id.split_once('/').map_or(b.id.as_str(), |(_, n)| n);
                let label = if b.metrics.len() == 1 {
                    short.to_string()
                } else {
                    format!("{short}.{}", m.name)
                };
                out.extend(figure(record, b, label, None, m));
            }
        }
    }
    out
}

/// The summary block: headline figures per suite, then the verdict lines. Empty when the record
/// holds one suite of at most [`MAX_PER_SUITE`] figures (the table is then short enough alone).
/// `chosen`: each suite's headlines (the suite registry's).
pub fn render_summary(record: &RunRecord, chosen: SuiteHeadlines) -> String {
    if !shows_summary(record) {
        return String::new();
    }
    let (per_suite, notes) = headlines(record, chosen);
    let all: Vec<&Figure> = per_suite.iter().flat_map(|(_, f)| f).collect();
    let w = |f: fn(&Figure) -> usize| all.iter().map(|x| f(x)).max().unwrap_or(0);
    let (wl, wv) = (w(|f| super::width(&f.label)), w(|f| super::width(&f.value)));
    let mut s = format!(
        "Summary — median [95 % CI] of {}; full tables below\n",
        super::runs_kept_text(record)
    );
    if other_work_competed(record) {
        s.push_str("(other work competed for the CPUs during this run: the figures include it)\n");
    }
    // The suite on its own line: a row is label, median, CI and marks, within 80 columns.
    for (suite, figures) in &per_suite {
        if figures.is_empty() {
            continue;
        }
        s.push_str(&format!("{suite}\n"));
        for f in figures {
            let marks = if f.marks.is_empty() {
                String::new()
            } else {
                format!(" {}", f.marks)
            };
            s.push_str(&format!(
                "  {}  {}  {}{marks}\n",
                super::pad_right(&f.label, wl),
                super::pad_left(&f.value, wv),
                f.ci
            ));
        }
    }
    let used: Vec<String> = MARKS
        .iter()
        .filter(|(c, _)| all.iter().any(|f| f.marks.contains(*c)))
        .map(|(c, what)| format!("{c} {what}"))
        .collect();
    if !used.is_empty() {
        s.push_str(&format!("  {}\n", used.join(" · ")));
    }
    let verdicts = verdicts(record);
    if !verdicts.is_empty() || !notes.is_empty() {
        s.push_str("Verdicts (each in full: --verbose):\n");
        for v in verdicts.iter().chain(notes.iter()) {
            for line in super::conditions::wrap(&format!("! {v}"), 78, "    ") {
                s.push_str(&format!("  {line}\n"));
            }
        }
    }
    s.push('\n');
    s
}

/// The lines that change how the figures should be read, brief: the run's own conditions (a
/// noisy machine, a debug build, too few runs, what was not measured), each with the benchmarks
/// whose warnings repeat it; how many figures were noisy; adaptive benchmarks that stopped at
/// their cap. The full text is in the record and behind `--verbose`.
pub fn verdicts(record: &RunRecord) -> Vec<String> {
    let mut v: Vec<String> = conditions(record)
        .into_iter()
        .filter(|c| c.run_level)
        .map(|c| c.brief(BRIEF))
        .collect();
    let (noisy, benches) = noisy_figures(record);
    if noisy > 0 {
        v.push(format!(
            "{noisy} figure(s) of {benches} benchmark(s) varied more than 10 % from run to run \
             (marked ~; --verbose lists them); more runs or --ci-width narrow them"
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
            brief_text(&display_text(&capped.join(", "), usize::MAX), BRIEF)
        ));
    }
    v
}

/// Characters of a condition's text in brief (two terminal lines with its benchmarks).
const BRIEF: usize = 110;

/// Figures whose run-to-run CV was flagged as noisy, and the benchmarks they belong to.
fn noisy_figures(record: &RunRecord) -> (usize, usize) {
    let n = noisy(record);
    (n.iter().map(|(_, v)| v.len()).sum(), n.len())
}

/// Digits replaced by `#`: warnings (or reasons) that differ only in their numbers are of one
/// kind.
pub fn shape_of(s: &str) -> String {
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

/// The Warnings section as printed: each condition once (see [`conditions`]). In brief, the
/// run's own conditions are left out when the summary's Verdicts already said them
/// (`verdicts_shown`), each text is cut at a clause and the noisy figures are counted; with
/// `verbose` everything in full. The record and the report keep every warning as raised.
pub fn warning_lines(record: &RunRecord, verbose: bool, verdicts_shown: bool) -> Vec<String> {
    let mut out: Vec<String> = conditions(record)
        .into_iter()
        .filter(|c| verbose || !(c.run_level && verdicts_shown))
        .map(|c| if verbose { c.full() } else { c.brief(BRIEF) })
        .collect();
    let noisy = noisy(record);
    if !noisy.is_empty() {
        let n: usize = noisy.iter().map(|(_, v)| v.len()).sum();
        let head = format!(
            "noisy: run-to-run CV above 10 % in {n} figure(s) of {} benchmark(s) ({}the CV \
             column of the tables) — repeat on a quieter machine, with more runs or with \
             --ci-width",
            noisy.len(),
            if verdicts_shown {
                "marked ~ in the summary; "
            } else {
                ""
            }
        );
        if verbose {
            let list: Vec<String> = noisy
                .iter()
                .map(|(id, v)| format!("{id} ({})", v.join(", ")))
                .collect();
            out.push(format!("{head}: {}", list.join("; ")));
        } else if !verdicts_shown {
            out.push(head);
        }
    }
    out
}

/// Whether [`render_summary`] prints a summary (with its Verdicts) for this record.
pub fn shows_summary(record: &RunRecord) -> bool {
    let suites = record
        .benchmarks
        .iter()
        .map(|b| b.suite.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let rows: usize = record.benchmarks.iter().map(|b| b.metrics.len()).sum();
    !(suites < 2 && rows <= MAX_PER_SUITE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture's suite (cpu) with two headlines.
    const TEST_HEADLINES: SuiteHeadlines = &[(
        "cpu",
        Headlines::Listed(&[
            Headline::new("cpu/null_syscall", "", "null system call"),
            Headline::new("cpu/io_syscall", "", "1-byte read"),
        ]),
    )];

    fn fixture() -> RunRecord {
        serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap()
    }

    #[test]
    fn numbers_do_not_make_a_new_kind_of_warning() {
        assert_eq!(
            shape_of("10 of 10 samples ≤ 0 in run 1"),
            shape_of("8 of 9 samples ≤ 0 in run 12")
        );
        assert_ne!(shape_of("a 1"), shape_of("b 1"));
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
        // Without a summary to say the run's own conditions, the section says them.
        let w = warning_lines(&r, false, false);
        assert_eq!(w[0], "load: noisy machine");
        // BackgroundLoad a summary's Verdicts, not again.
        assert!(
            !warning_lines(&r, false, true)
                .iter()
                .any(|l| l.contains("load: noisy"))
        );
        let mine: Vec<&String> = w.iter().filter(|l| l.starts_with(&id)).collect();
        // One line for the ≤ 0 kind (every metric named, the numbers as ranges, the count
        // said), one for its own.
        assert_eq!(mine.len(), 2, "{w:#?}");
        assert!(
            mine[0].contains(&names.join(", "))
                && mine[0].contains("1–3 of 10 samples ≤ 0 in run 1–3")
                && mine[0].contains(&format!("({} times)", names.len() * 3)),
            "{}",
            mine[0]
        );
        assert!(mine[1].ends_with("a warning of the benchmark itself"));
        // Every noisy figure of every benchmark: one line, counted; with --verbose each
        // benchmark listed.
        let w = warning_lines(&r, true, true);
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
        assert_eq!(render_summary(&r, TEST_HEADLINES), "");
        let mut r = fixture();
        r.warnings = vec!["load: noisy machine: load average 4.2".into()];
        for b in &mut r.benchmarks {
            b.warnings.clear();
        }
        r.benchmarks[1].warnings = vec![format!(
            "{}: run-to-run CV 15 % — noisy",
            r.benchmarks[1].metrics[0].name
        )];
        let s = render_summary(&r, TEST_HEADLINES);
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
        let lo = format_value(m.ci95[0], nul.metrics[0].unit);
        assert!(line.contains(lo.split(' ').next().unwrap()), "{line}");
        assert!(s.contains("! load: noisy machine"), "{s}");
        assert!(
            s.contains("! 1 figure(s) of 1 benchmark(s) varied more than 10 %"),
            "{s}"
        );
        // One screen.
        assert!(s.lines().count() <= 40, "{s}");
    }

    /// A row says how far to trust it: a noisy figure is marked, a CI across zero is not a
    /// clean figure, a run other work competed with says so; every row fits 80 columns.
    #[test]
    fn summary_rows_say_how_far_to_trust_them_within_80_columns() {
        let mut r = fixture();
        r.warnings.clear();
        for b in &mut r.benchmarks {
            b.warnings.clear();
        }
        let k = r
            .benchmarks
            .iter()
            .position(|b| b.id == "cpu/null_syscall")
            .unwrap();
        let name = r.benchmarks[k].metrics[0].name.clone();
        r.benchmarks[k]
            .warnings
            .push(format!("{name}: run-to-run CV 15 % — noisy; repeat"));
        let j = r
            .benchmarks
            .iter()
            .position(|b| b.id == "cpu/io_syscall")
            .unwrap();
        {
            let s = r.benchmarks[j].metrics[0].summary.as_mut().unwrap();
            s.center = 2.714;
            s.ci95 = [-224.0, 8958.0];
        }
        if let Some(l) = r.environment.start.load_avg.as_mut() {
            l.one = 0.0;
        }
        r.environment.start.cpu_time = None;
        r.environment.start.cpu_pressure = None;
        r.environment.end = None;
        let s = render_summary(&r, TEST_HEADLINES);
        let row = |what: &str| s.lines().find(|l| l.contains(what)).unwrap().to_string();
        assert!(row("null system call").ends_with(" ~"), "{s}");
        let io = row("1-byte read");
        assert!(io.contains("(2.714 ns)") && io.ends_with(" ?"), "{io}");
        assert!(s.contains("~ varied > 10 % run to run"), "{s}");
        assert!(s.contains("? 95 % CI includes 0"), "{s}");
        assert!(!s.contains("other work competed"), "{s}");
        for l in s.lines() {
            assert!(
                crate::output::width(l) <= 80,
                "{} columns: {l}",
                crate::output::width(l)
            );
        }
        // Other work on the machine: said above the figures.
        let cpus = r.machine.cpu.logical_cpus.unwrap_or(1) as f64;
        r.environment
            .start
            .load_avg
            .get_or_insert_with(Default::default)
            .one = cpus * 3.0;
        assert!(other_work_competed(&r));
        assert!(render_summary(&r, TEST_HEADLINES).contains("other work competed for the CPUs"));
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
        b.error = Some(crate::record::BenchError::unsupported(
            "unsupported on TestOS: none",
        ));
        r.benchmarks.push(b);
        let s = render_summary(&r, TEST_HEADLINES);
        assert!(
            s.contains("! other: unsupported here (unsupported on TestOS: none)"),
            "{s}"
        );
    }
}
