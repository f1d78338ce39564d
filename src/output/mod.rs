//! Terminal output: one table per suite, units chosen per value, warnings at the end; the progress
//! bar (stderr, only on a TTY, never ticking on its own during a timed window).

pub mod conditions;
pub mod grid;
pub mod progress;
pub mod stdout;
pub mod summary;

use crate::record::{BenchmarkResult, MetricResult, RunRecord};
use crate::units::{Better, format_value};

/// Longest label `--label` accepts, in characters; also where printed labels are cut.
pub const LABEL_MAX_CHARS: usize = 64;

/// Characters that would act on a terminal or reorder text instead of showing: C0/C1 controls
/// (newline, ESC of an ANSI sequence) and the bidirectional overrides and isolates.
/// Control characters, bidirectional overrides and invisible format characters (zero-width
/// spaces and joiners, the byte-order mark): what must never reach a terminal or a log raw.
fn is_unprintable(c: char) -> bool {
    c.is_control()
        || ('\u{200b}'..='\u{200f}').contains(&c)
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2060}'..='\u{2069}').contains(&c)
        || c == '\u{feff}'
}

/// `--label`: non-empty, not only spaces, no control characters, at most [`LABEL_MAX_CHARS`].
pub fn parse_label(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("a label must not be empty or only spaces".into());
    }
    if let Some(c) = s.chars().find(|&c| is_unprintable(c)) {
        return Err(format!(
            "a label must not contain control characters (found {})",
            c.escape_unicode()
        ));
    }
    let n = s.chars().count();
    if n > LABEL_MAX_CHARS {
        return Err(format!(
            "a label has at most {LABEL_MAX_CHARS} characters (this one has {n})"
        ));
    }
    Ok(s.to_string())
}

/// Text from a record (a label, a name; possibly imported, so anything) made safe to print on a
/// terminal: control characters shown escaped (`\n`, `\u{1b}`), cut to `max` characters with "…".
pub fn display_text(s: &str, max: usize) -> String {
    let pieces: Vec<String> = s
        .chars()
        .map(|c| {
            if is_unprintable(c) {
                c.escape_default().collect()
            } else {
                c.to_string()
            }
        })
        .collect();
    let total: usize = pieces.iter().map(|p| p.chars().count()).sum();
    if total <= max {
        return pieces.concat();
    }
    let mut out = String::new();
    let mut n = 0;
    for p in pieces {
        let len = p.chars().count();
        if n + len + 1 > max {
            break;
        }
        out.push_str(&p);
        n += len;
    }
    out.push('…');
    out
}

/// Text for Markdown: control characters shown escaped as in [`display_text`] (not cut), and `|`,
/// backticks, `<` and backslashes escaped so a label cannot end a table cell, open code or HTML.
pub fn markdown_text(s: &str) -> String {
    let mut out = String::new();
    for c in display_text(s, usize::MAX).chars() {
        if matches!(c, '|' | '`' | '<' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One table row, already formatted.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub median: String,
    pub ci: String,
    pub p99: String,
    pub cv: String,
    pub note: String,
    /// A figure no run measured (its reason in `note`); the terminal folds these into one line.
    pub unmeasured: bool,
}

/// Rows grouped by suite, in record order.
pub fn table_rows(record: &RunRecord) -> Vec<(String, Vec<Row>)> {
    let mut out: Vec<(String, Vec<Row>)> = Vec::new();
    for b in &record.benchmarks {
        let rows = benchmark_rows(b);
        match out.iter_mut().find(|(s, _)| *s == b.suite) {
            Some((_, v)) => v.extend(rows),
            None => out.push((b.suite.clone(), rows)),
        }
    }
    out
}

pub(crate) fn benchmark_rows(b: &BenchmarkResult) -> Vec<Row> {
    // Ids and messages may come from an imported record: shown with control characters escaped.
    let id = display_text(&b.id, usize::MAX);
    let short = id.split_once('/').map(|(_, n)| n).unwrap_or(&id);
    let mut rows: Vec<Row> = b
        .metrics
        .iter()
        .filter(|m| m.summary.is_some() || m.not_measured.is_some())
        .map(|m| {
            let name = if b.metrics.len() == 1 {
                short.to_string()
            } else {
                format!("{short}.{}", display_text(&m.name, usize::MAX))
            };
            metric_row(name, m)
        })
        .collect();
    if let Some(e) = &b.error {
        let note = display_text(&format!("{}: {}", e.kind.as_str(), e.message), usize::MAX);
        match rows.first_mut() {
            Some(r) => {
                r.note = note;
                r.unmeasured = false;
            }
            None => rows.push(Row {
                name: short.to_string(),
                median: "—".into(),
                ci: "—".into(),
                p99: "—".into(),
                cv: "—".into(),
                note,
                unmeasured: false,
            }),
        }
    }
    rows
}

fn metric_row(name: String, m: &MetricResult) -> Row {
    // A metric a run could not measure keeps its row, with the reason.
    let Some(s) = m.summary.as_ref() else {
        return Row {
            name,
            median: "—".into(),
            ci: "—".into(),
            p99: "—".into(),
            cv: "—".into(),
            note: m.not_measured.clone().unwrap_or_default(),
            unmeasured: true,
        };
    };
    let arrow = match m.better {
        Better::Higher => " ↑",
        Better::Neutral => " ≈",
        Better::Lower => "",
    };
    // A bound keeps its sign in every column; the note says what it is bounded by.
    let sign = m.bound_prefix();
    let note = m
        .bound
        .as_ref()
        .map(|b| {
            display_text(
                &format!(
                    "a bound, not a measurement ({} of {} runs): {}",
                    b.runs,
                    m.runs.len().max(b.runs as usize),
                    b.reason
                ),
                usize::MAX,
            )
        })
        .unwrap_or_default();
    Row {
        name,
        median: format!("{sign}{}{arrow}", format_value(s.center, m.unit)),
        ci: format!(
            "{} … {}",
            format_value(s.ci95[0], m.unit),
            format_value(s.ci95[1], m.unit)
        ),
        p99: s
            .p99
            .map(|p| format_value(p, m.unit))
            .unwrap_or_else(|| "—".into()),
        cv: format!("{:.1} %", s.cv * 100.0),
        note,
        unmeasured: false,
    }
}

/// How many runs the summaries rest on: per benchmark the runs kept (the most of any of its
/// metrics), as "74 runs", "1 run" or "3–5 runs" when benchmarks differ; benchmarks this OS does
/// not support are left out. "(of N planned)" follows when fewer were kept than planned.
pub fn runs_kept_text(record: &RunRecord) -> String {
    let counts: Vec<usize> = record
        .benchmarks
        .iter()
        .filter(|b| {
            !(b.metrics.iter().all(|m| m.runs.is_empty())
                && b.error.as_ref().map(|e| e.kind) == Some(crate::record::ErrorKind::Unsupported))
        })
        .map(|b| b.metrics.iter().map(|m| m.runs.len()).max().unwrap_or(0))
        .collect();
    let lo = counts.iter().copied().min().unwrap_or(0);
    let hi = counts.iter().copied().max().unwrap_or(0);
    let mut s = match (lo, hi) {
        (1, 1) => "1 run".to_string(),
        (a, b) if a == b => format!("{a} runs"),
        (a, b) => format!("{a}–{b} runs"),
    };
    let planned = record.config.runs as usize;
    if lo < planned {
        s.push_str(&format!(" (of {planned} planned)"));
    }
    s
}

/// The run's warnings, then each benchmark's, prefixed by its id (once: records made before
/// the file benchmarks stopped naming themselves carry it already).
pub fn all_warnings(record: &RunRecord) -> Vec<String> {
    let mut w = record.warnings.clone();
    for b in &record.benchmarks {
        for x in &b.warnings {
            let x = x
                .strip_prefix(b.id.as_str())
                .and_then(|r| r.strip_prefix(": "))
                .unwrap_or(x);
            w.push(format!("{}: {x}", b.id));
        }
    }
    w
}

/// Figures no run measured, folded into one line per reason (numbers in the reason ignored):
/// "N figure(s) not measured — names: reason".
pub fn unmeasured_lines(rows: &[Row]) -> Vec<String> {
    let mut groups: Vec<(String, String, Vec<&str>)> = Vec::new();
    for r in rows.iter().filter(|r| r.unmeasured) {
        let key = summary::shape_of(&r.note);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.2.push(&r.name),
            None => groups.push((key, r.note.clone(), vec![&r.name])),
        }
    }
    groups
        .into_iter()
        .map(|(_, note, names)| {
            format!(
                "{} figure(s) not measured — {}: {note}",
                names.len(),
                names.join(", ")
            )
        })
        .collect()
}

/// Plain-text tables, columns aligned by display width. Figures no run measured are not rows
/// of dashes: one line per reason under the table names them (the record and the Markdown
/// export keep a row for each).
pub fn render_tables(record: &RunRecord) -> String {
    let mut s = String::new();
    for (suite, all_rows) in table_rows(record) {
        let folded = unmeasured_lines(&all_rows);
        let rows: Vec<Row> = all_rows.into_iter().filter(|r| !r.unmeasured).collect();
        let header = Row {
            name: suite.clone(),
            median: "median".into(),
            ci: "95 % CI".into(),
            p99: "p99".into(),
            cv: "CV".into(),
            note: String::new(),
            unmeasured: false,
        };
        let cells: Vec<Vec<&str>> = std::iter::once(&header)
            .chain(rows.iter())
            .map(|r| vec![&*r.name, &r.median, &r.ci, &r.p99, &r.cv, &r.note])
            .collect();
        use grid::Align::{Left, Right};
        let g = grid::Grid {
            align: &[Left, Right, Right, Right, Right, Left],
            ..Default::default()
        };
        // The rule under the header spans the five figure columns and their gaps.
        let rule: usize = grid::Grid::widths(&cells).iter().take(5).sum::<usize>() + 8;
        for (i, line) in g.lines(&cells).into_iter().enumerate() {
            s.push_str(&line);
            s.push('\n');
            if i == 0 {
                s.push_str(&"─".repeat(rule));
                s.push('\n');
            }
        }
        for line in folded {
            s.push_str(&line);
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// Terminal columns a text takes (defined with the units' formatting, below the system layer).
pub use crate::units::width;

/// `s` followed by spaces up to `w` terminal columns (never cut).
pub fn pad_right(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

/// Spaces up to `w` terminal columns, then `s` (never cut).
pub fn pad_left(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(width(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_validated() {
        assert_eq!(
            parse_label("linux-6.12 (tuned)").unwrap(),
            "linux-6.12 (tuned)"
        );
        for bad in ["", " ", "\t", "a\nb", "red\u{1b}[31m", "x\u{202e}y"] {
            assert!(parse_label(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_label(&"é".repeat(LABEL_MAX_CHARS)).is_ok());
        assert!(parse_label(&"é".repeat(LABEL_MAX_CHARS + 1)).is_err());
    }

    #[test]
    fn printed_text_is_escaped_and_bounded() {
        assert_eq!(display_text("a\nb\u{1b}[0m", 64), "a\\nb\\u{1b}[0m");
        assert_eq!(display_text("abcdef", 6), "abcdef");
        assert_eq!(display_text("abcdefg", 6), "abcde…");
        let long = display_text(&"x".repeat(5000), LABEL_MAX_CHARS);
        assert_eq!(long.chars().count(), LABEL_MAX_CHARS);
        assert!(long.ends_with('…'));
        assert_eq!(markdown_text("a|b`c"), "a\\|b\\`c");
        assert!(!markdown_text("x\ny").contains('\n'));
    }

    #[test]
    fn unmeasured_figures_are_one_line_per_reason_not_rows_of_dashes() {
        let text = include_str!("../../tests/fixtures/cpu-a.json");
        let mut r: RunRecord = serde_json::from_str(text).unwrap();
        let pc = r
            .benchmarks
            .iter_mut()
            .find(|b| b.id == "cpu/proc_call")
            .unwrap();
        for (k, m) in pc.metrics.iter_mut().enumerate().skip(5) {
            m.summary = None;
            m.runs.clear();
            m.not_measured = Some(format!(
                "below the counters' resolution ({k} steps); `osgauge micro cpu/proc_call` measures it"
            ));
        }
        let t = render_tables(&r);
        assert!(!t.lines().any(|l| l.starts_with("proc_call.args5")), "{t}");
        assert!(t.lines().any(|l| l.starts_with("proc_call.args4")), "{t}");
        let line = t
            .lines()
            .find(|l| l.contains("not measured"))
            .expect("a folded line");
        assert!(
            line.starts_with(
                "3 figure(s) not measured — proc_call.args5, proc_call.args6, proc_call.args7: below the counters' resolution (5 steps)"
            ),
            "{line}"
        );
        assert_eq!(t.matches("not measured").count(), 1, "{t}");
        // The Markdown export keeps a row for each.
        let rows: Vec<Row> = table_rows(&r).into_iter().flat_map(|(_, v)| v).collect();
        assert_eq!(rows.iter().filter(|r| r.unmeasured).count(), 3);
    }

    #[test]
    fn footers_count_the_runs_kept() {
        let text = include_str!("../../tests/fixtures/cpu-a.json");
        let mut r: RunRecord = serde_json::from_str(text).unwrap();
        assert_eq!(runs_kept_text(&r), "5 runs");
        r.config.runs = 1000;
        r.benchmarks[0].metrics[0].runs.truncate(2);
        assert_eq!(runs_kept_text(&r), "2–5 runs (of 1000 planned)");
        for b in &mut r.benchmarks {
            for m in &mut b.metrics {
                m.runs.clear();
            }
        }
        assert_eq!(runs_kept_text(&r), "0 runs (of 1000 planned)");
        r.benchmarks[1].error = Some(crate::record::BenchError::unsupported("x"));
        r.benchmarks.retain(|b| b.error.is_some());
        assert_eq!(runs_kept_text(&r), "0 runs (of 1000 planned)");
    }
}
