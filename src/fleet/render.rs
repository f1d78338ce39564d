//! Terminal, Markdown, CSV and JSON of the fleet table and of a history. Pure functions of
//! [`Fleet`] / [`History`]; every text from a record (hostnames, labels, CPU names: untrusted,
//! possibly imported) goes through `display_text` (terminal) or `markdown_text` (Markdown).

use super::{Cell, Column, Fleet, History, Member};
use crate::compare::render::direction_mark;
use crate::export::csv::num_cell;
use crate::output::{LABEL_MAX_CHARS, display_text, markdown_text};
use crate::units::{Unit, format_value};

/// The marker of the best figure in a row.
pub const BEST: &str = "★";

fn t(s: &str) -> String {
    display_text(s, LABEL_MAX_CHARS)
}

/// A sentence of ours (may quote record text): control characters escaped, not cut.
fn t_long(s: &str) -> String {
    display_text(s, 1000)
}

/// `lo–hi` in the metric's unit, the unit written once when both ends share it.
pub fn span_text(lo: f64, hi: f64, unit: Unit) -> String {
    let (a, b) = (format_value(lo, unit), format_value(hi, unit));
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((x, ua)), Some((_, ub))) if ua == ub => format!("{x}–{b}"),
        _ => format!("{a}–{b}"),
    }
}

/// A cell as text: `median [CI low–high]` for a run, `median (n=3: min–max)` for a group, with
/// a bound's sign.
pub fn cell_text(c: &Cell, unit: Unit) -> String {
    let sign = match c.bound {
        Some(k) => format!("{} ", k.symbol()),
        None => String::new(),
    };
    let v = format_value(c.center, unit);
    match (c.ci95, c.range) {
        (_, Some(_)) if c.n == 1 => format!("{sign}{v} (n=1)"),
        (_, Some([lo, hi])) => format!("{sign}{v} (n={}: {})", c.n, span_text(lo, hi, unit)),
        (Some([lo, hi]), None) => format!("{sign}{v} [{}]", span_text(lo, hi, unit)),
        (None, None) => format!("{sign}{v}"),
    }
}

/// The attribute rows every suite table starts with: (name, value per column).
pub fn attribute_rows(f: &Fleet) -> Vec<(&'static str, Vec<String>)> {
    let attr = |g: fn(&Member) -> &str| -> Vec<String> {
        f.columns.iter().map(|c| c.attribute(g)).collect()
    };
    let mut rows = vec![
        ("CPU", attr(|m| m.cpu.as_str())),
        ("CPUs", attr(|m| m.cores.as_str())),
        ("OS", attr(|m| m.os.as_str())),
        ("kernel", attr(|m| m.kernel.as_str())),
    ];
    if f.columns
        .iter()
        .any(|c| c.members.iter().any(|m| !m.tags.is_empty()))
    {
        rows.push((
            "tags",
            f.columns
                .iter()
                .map(|c| {
                    c.attribute_owned(|m| {
                        m.tags
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                })
                .collect(),
        ));
    }
    if f.group_by.is_some() {
        rows.push((
            "machines",
            f.columns
                .iter()
                .map(|c| {
                    let mut v: Vec<&str> = Vec::new();
                    for m in &c.members {
                        if !v.contains(&m.machine.as_str()) {
                            v.push(&m.machine);
                        }
                    }
                    // A machine with several labels has a run of each in the group: count
                    // machines as machines, and say how many runs when that differs.
                    if c.members.len() == v.len() {
                        format!("{}: {}", v.len(), v.join(", "))
                    } else {
                        format!("{} ({} runs): {}", v.len(), c.members.len(), v.join(", "))
                    }
                })
                .collect(),
        ));
    } else {
        let ids: Vec<&str> = f
            .columns
            .iter()
            .map(|c| c.members[0].run_id.as_str())
            .collect();
        let short = crate::store::short_ids(&ids);
        rows.push((
            "run",
            f.columns
                .iter()
                .zip(short)
                .map(|(c, id)| {
                    let m = &c.members[0];
                    format!("{id}{}", if m.complete { "" } else { " (incomplete)" })
                })
                .collect(),
        ));
    }
    rows
}

/// What the numbers are, in one paragraph.
pub fn method_text(f: &Fleet) -> String {
    let grouped = match f.group_by {
        Some(g) => format!(
            " Columns are groups by {}: each figure is the median of the member runs' medians, with n (the runs that have it) and their smallest–largest median.",
            g.as_str()
        ),
        None => {
            " Each figure is the run's median of per-run medians with its 95 % bootstrap CI.".into()
        }
    };
    format!(
        "Runs: {}.{grouped} {BEST} marks the best median of a row by the metric's direction (↑ higher is better; ≈ neutral: never marked; no mark when the best is tied or a bound); it is not a significance test — use `osgauge compare` for that.",
        f.selection
    )
}

fn row_name(bench: &str, metric: &str) -> String {
    format!("{bench} {metric}")
}

fn cell_or_note(r: &super::Row, j: usize) -> String {
    match &r.cells[j] {
        Some(c) => {
            let mut s = cell_text(c, r.unit);
            if r.best == Some(j) {
                s.push(' ');
                s.push_str(BEST);
            }
            s
        }
        None => format!("— {}", r.notes[j]),
    }
}

fn column_titles(cols: &[Column]) -> Vec<String> {
    cols.iter().map(|c| t(&c.title)).collect()
}

/// The terminal tables.
pub fn text(f: &Fleet) -> String {
    let mut s = String::new();
    if f.columns.is_empty() {
        return "No runs selected.\n".into();
    }
    for suite in &f.suites {
        let mut table: Vec<Vec<String>> = Vec::new();
        let mut head = vec![t(&suite.suite)];
        head.extend(column_titles(&f.columns));
        table.push(head);
        for (name, vals) in attribute_rows(f) {
            let mut l = vec![format!("  {name}")];
            l.extend(vals.iter().map(|v| t(v)));
            table.push(l);
        }
        for r in &suite.rows {
            let mut l = vec![format!(
                "{}{}",
                t(&row_name(&r.benchmark, &r.metric)),
                direction_mark(r.better)
            )];
            l.extend((0..f.columns.len()).map(|j| t(&cell_or_note(r, j))));
            table.push(l);
        }
        let w = crate::output::grid::Grid::widths(&table);
        let g = crate::output::grid::Grid::default();
        for (i, line) in g.lines(&table).into_iter().enumerate() {
            s.push_str(&line);
            s.push('\n');
            if i == 0 {
                s.push_str(&"-".repeat(w.iter().sum::<usize>() + 2 * (w.len() - 1)));
                s.push('\n');
            }
        }
        s.push('\n');
    }
    s.push_str(&method_text(f));
    s.push('\n');
    s
}

/// GitHub-flavoured Markdown.
pub fn markdown(f: &Fleet) -> String {
    let mut s = String::from("# osgauge fleet\n\n");
    s.push_str(&markdown_text(&method_text(f)));
    s.push_str("\n\n");
    for suite in &f.suites {
        s.push_str(&format!("## {}\n\n", markdown_text(&suite.suite)));
        s.push_str("| benchmark metric |");
        for c in &f.columns {
            s.push_str(&format!(" {} |", markdown_text(&c.title)));
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(f.columns.len()));
        s.push('\n');
        for (name, vals) in attribute_rows(f) {
            s.push_str(&format!("| *{name}* |"));
            for v in vals {
                s.push_str(&format!(" {} |", markdown_text(&v)));
            }
            s.push('\n');
        }
        for r in &suite.rows {
            s.push_str(&format!(
                "| {}{} |",
                markdown_text(&row_name(&r.benchmark, &r.metric)),
                direction_mark(r.better)
            ));
            for j in 0..f.columns.len() {
                let c = cell_or_note(r, j);
                if r.best == Some(j) {
                    s.push_str(&format!(" **{}** |", markdown_text(&c)));
                } else {
                    s.push_str(&format!(" {} |", markdown_text(&c)));
                }
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// CSV header of the fleet table.
pub const CSV_HEADER: [&str; 20] = [
    "suite",
    "benchmark",
    "metric",
    "unit",
    "better",
    "column",
    "machines",
    "labels",
    "run_ids",
    "cpu",
    "os",
    "kernel",
    "n",
    "median",
    "ci95_low",
    "ci95_high",
    "range_low",
    "range_high",
    "best",
    "note",
];

/// CSV: one line per row and column, values in the metric's base unit.
pub fn csv(f: &Fleet) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for suite in &f.suites {
        for r in &suite.rows {
            for (j, col) in f.columns.iter().enumerate() {
                let c = r.cells[j].as_ref();
                let join = |g: fn(&Member) -> String| {
                    col.members.iter().map(g).collect::<Vec<_>>().join(";")
                };
                let pair =
                    |v: Option<[f64; 2]>, k: usize| v.map(|x| num_cell(x[k])).unwrap_or_default();
                w.write_record([
                    suite.suite.clone(),
                    r.benchmark.clone(),
                    r.metric.clone(),
                    r.unit.symbol().to_string(),
                    r.better.as_str().to_string(),
                    col.title.clone(),
                    join(|m| m.machine.clone()),
                    join(|m| m.label.clone().unwrap_or_default()),
                    join(|m| m.run_id.clone()),
                    col.attribute(|m| m.cpu.as_str()),
                    col.attribute(|m| m.os.as_str()),
                    col.attribute(|m| m.kernel.as_str()),
                    c.map(|c| c.n.to_string()).unwrap_or_default(),
                    c.map(|c| num_cell(c.center)).unwrap_or_default(),
                    pair(c.and_then(|c| c.ci95), 0),
                    pair(c.and_then(|c| c.ci95), 1),
                    pair(c.and_then(|c| c.range), 0),
                    pair(c.and_then(|c| c.range), 1),
                    (r.best == Some(j)).to_string(),
                    r.notes[j].clone(),
                ])?;
            }
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// JSON (schema `osgauge.fleet/1`, see docs/record.md).
pub fn json(f: &Fleet) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(f)?;
    s.push('\n');
    Ok(s)
}

fn point_text(p: &super::Point, unit: Unit) -> String {
    let sign = p
        .bound
        .map(|k| format!("{} ", k.symbol()))
        .unwrap_or_default();
    format!(
        "{sign}{} [{}]",
        format_value(p.center, unit),
        span_text(p.ci95[0], p.ci95[1], unit)
    )
}

/// What the change points are, in one paragraph.
pub fn history_method(h: &History) -> String {
    format!(
        "Each point is one run's median of per-run medians with its 95 % bootstrap CI. Change points: E-Divisive means over the whole series of medians (Matteson & James; permutation test, {} permutations, α = {}, at least {} runs on either side, seed {}); for each, `osgauge compare` between the runs on either side, the segment before against the segment after, each run one invocation (Welch's t over invocations: verdict on this metric, ratio with its 95 % CI, q after Benjamini-Hochberg within the headline or the other metrics the runs share; a segment of one run leaves the noise unknown: ~ (u)).",
        h.method.permutations, h.method.alpha, h.method.min_size, h.method.seed
    )
}

fn change_verdict(c: &super::Change) -> String {
    match (c.ratio, c.ratio_ci95) {
        (Some(r), Some(ci)) => format!(
            "{} ({}, q {})",
            c.verdict.symbol(),
            crate::compare::render::change_text(r, ci),
            crate::compare::render::p_text(c.q.unwrap_or(f64::NAN))
        ),
        _ => c.verdict.symbol().to_string(),
    }
}

/// The terminal history: per machine, one line per run, change points marked between runs.
pub fn history_text(h: &History) -> String {
    let mut s = format!(
        "{} {}{} — {} machine(s){}\n",
        t(&h.benchmark),
        t(&h.metric),
        direction_mark(h.better),
        h.series.len(),
        if h.order == "started" {
            String::new()
        } else {
            format!(", runs in the order of {}", t(&h.order))
        }
    );
    for se in &h.series {
        s.push_str(&format!(
            "\n{}: {} run(s){}\n",
            t(&se.machine),
            se.points.len(),
            if se.skipped > 0 {
                format!(" ({} more without this metric)", se.skipped)
            } else {
                String::new()
            }
        ));
        let tag = h.order.strip_prefix("tag:");
        let ids: Vec<&str> = se.points.iter().map(|p| p.run_id.as_str()).collect();
        let short = crate::store::short_ids(&ids);
        let short_of = |id: &str| {
            ids.iter()
                .position(|x| *x == id)
                .map(|i| short[i].clone())
                .unwrap_or_else(|| crate::store::short_id(id).to_string())
        };
        for (i, p) in se.points.iter().enumerate() {
            if let Some(c) = se.changes.iter().find(|c| c.index == i) {
                s.push_str(&format!(
                    "  ── change point (p {}): segment median ×{} ; compare {} → {}: {}\n",
                    crate::units::sig(c.p),
                    crate::units::sig(c.segment_ratio),
                    short_of(&c.before),
                    short_of(&c.after),
                    change_verdict(c)
                ));
            }
            s.push_str(&format!(
                "  {}  {}  {:<24}  {}{}\n",
                p.started.format("%Y-%m-%d %H:%M"),
                short[i],
                match tag {
                    Some(k) => format!(
                        "{}={}",
                        t(k),
                        t(p.tags.get(k).map(String::as_str).unwrap_or("—"))
                    ),
                    None => t(p.label.as_deref().unwrap_or("—")),
                },
                point_text(p, h.unit),
                if p.complete { "" } else { " (incomplete)" }
            ));
        }
        if se.changes.is_empty() {
            s.push_str(&format!(
                "  no change point: {}\n",
                t_long(&se.no_more_changes)
            ));
        } else {
            s.push_str(&format!(
                "  no further change point: {}\n",
                t_long(&se.no_more_changes)
            ));
        }
    }
    s.push('\n');
    s.push_str(&history_method(h));
    s.push('\n');
    s
}

/// Markdown of a history.
pub fn history_markdown(h: &History) -> String {
    let mut s = format!(
        "# {} {}\n\n{}\n\n",
        markdown_text(&h.benchmark),
        markdown_text(&h.metric),
        markdown_text(&history_method(h))
    );
    for se in &h.series {
        s.push_str(&format!("## {}\n\n", markdown_text(&se.machine)));
        s.push_str(
            "| started (UTC) | run | label | median [95 % CI] | change |\n|---|---|---|---:|---|\n",
        );
        for (i, p) in se.points.iter().enumerate() {
            let change = se
                .changes
                .iter()
                .find(|c| c.index == i)
                .map(|c| {
                    format!(
                        "change (p {}): {}",
                        crate::units::sig(c.p),
                        change_verdict(c)
                    )
                })
                .unwrap_or_default();
            s.push_str(&format!(
                "| {} | `{}` | {} | {} | {} |\n",
                p.started.format("%Y-%m-%d %H:%M"),
                p.run_id,
                markdown_text(p.label.as_deref().unwrap_or("—")),
                point_text(p, h.unit),
                markdown_text(&change)
            ));
        }
        s.push('\n');
    }
    s
}

/// CSV of a history: one line per run.
pub fn history_csv(h: &History) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "machine",
        "benchmark",
        "metric",
        "unit",
        "better",
        "started",
        "run_id",
        "label",
        "complete",
        "runs",
        "median",
        "ci95_low",
        "ci95_high",
        "change_point",
        "change_p",
        "verdict",
    ])?;
    for se in &h.series {
        for (i, p) in se.points.iter().enumerate() {
            let c = se.changes.iter().find(|c| c.index == i);
            w.write_record([
                se.machine.clone(),
                h.benchmark.clone(),
                h.metric.clone(),
                h.unit.symbol().to_string(),
                h.better.as_str().to_string(),
                p.started.to_rfc3339(),
                p.run_id.clone(),
                p.label.clone().unwrap_or_default(),
                p.complete.to_string(),
                p.runs.to_string(),
                num_cell(p.center),
                num_cell(p.ci95[0]),
                num_cell(p.ci95[1]),
                c.is_some().to_string(),
                c.map(|c| num_cell(c.p)).unwrap_or_default(),
                c.map(|c| c.verdict.symbol().to_string())
                    .unwrap_or_default(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// JSON of a history (schema `osgauge.history/1`).
pub fn history_json(h: &History) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(h)?;
    s.push('\n');
    Ok(s)
}

/// The terminal text of `fleet check`: per series, its verdict; regressions first in detail.
pub fn check_text(c: &super::check::Check) -> String {
    use super::check::Outcome;
    let mut s = String::new();
    let name = |x: &super::check::SeriesCheck| match &x.label {
        Some(l) => format!("{} · {}", t(&x.machine), t(l)),
        None => t(&x.machine),
    };
    let mut too_few = Vec::new();
    let newest: Vec<&str> = c.series.iter().map(|x| x.newest.as_str()).collect();
    let short = crate::store::short_ids(&newest);
    for (se, short) in c.series.iter().zip(&short) {
        match &se.outcome {
            Outcome::TooFewRuns { runs, needed } => too_few.push(format!(
                "  {}: {runs} run(s); a check needs at least {needed} (the newest and {} before it)",
                name(se),
                needed - 1
            )),
            Outcome::Checked {
                judged,
                regressions,
                below_threshold,
                better,
                drift,
                unknown,
                detectable,
            } => {
                let head = format!(
                    "{}: newest run {} against the {} before it",
                    name(se),
                    short,
                    se.baseline.len()
                );
                let mut facts = vec![format!("{judged} metric(s) judged")];
                if *better > 0 {
                    facts.push(format!("{better} better"));
                }
                if *below_threshold > 0 {
                    facts.push(format!("{below_threshold} worse below the threshold"));
                }
                if *drift > 0 {
                    facts.push(format!("{drift} explained by the machine's drift"));
                }
                if *unknown > 0 {
                    facts.push(format!("{unknown} without a noise estimate"));
                }
                if let Some(d) = detectable {
                    facts.push(format!(
                        "changes of about ±{} could be detected",
                        crate::compare::render::pct_abs(*d)
                    ));
                }
                if regressions.is_empty() {
                    s.push_str(&format!("ok      {head}: no regression ({})\n", facts.join(", ")));
                } else {
                    s.push_str(&format!(
                        "REGRESSION  {head}: {} regression(s) ({})\n",
                        regressions.len(),
                        facts.join(", ")
                    ));
                    for r in regressions {
                        s.push_str(&format!("    {}\n", t_long(&r.text)));
                    }
                }
            }
        }
    }
    if !too_few.is_empty() {
        s.push_str(&format!(
            "\nNot checked ({} series with too few runs):\n{}\n",
            too_few.len(),
            too_few.join("\n")
        ));
    }
    s.push_str(&format!(
        "\n{} series checked, {} with a regression, {} with too few runs. Runs: {}; order: {}. Each newest run against the runs before it (at most {}), every run one invocation: `osgauge compare`'s rule (Welch's t over invocations with the history's own between-invocation noise, Benjamini-Hochberg, ±{} noise band, the drift reference); a regression is a worse verdict of at least {}.\n",
        c.checked(),
        c.regressed(),
        too_few.len(),
        t_long(&c.selection),
        t(&c.order),
        c.options.history,
        crate::compare::render::pct_abs(c.options.noise),
        crate::compare::render::pct_abs(c.options.threshold),
    ));
    s
}

/// JSON of `fleet check` (schema `osgauge.fleet-check/1`).
pub fn check_json(c: &super::check::Check) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(c)?;
    s.push('\n');
    Ok(s)
}
