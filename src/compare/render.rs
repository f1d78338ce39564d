//! Renderings of a [`Comparison`]: terminal text, Markdown, CSV and JSON.

use super::{Basis, Cell, Comparison, Delta, Row, Verdict};
use crate::units::{Better, Unit, format_value, sig};

/// `+3.1 %` style change from a ratio.
pub fn pct(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "—".into();
    }
    let d = (ratio - 1.0) * 100.0;
    let d = if d.abs() < 0.05 { 0.0 } else { d };
    format!("{d:+.1} %")
}

/// `+3.1 % [+1.0, +5.2]`: the change with its CI; no ratio when the baseline is 0.
pub fn change_text(ratio: f64, ci: [f64; 2]) -> String {
    if !ratio.is_finite() {
        return "— (no ratio: baseline is 0)".into();
    }
    format!("{} {}", pct(ratio), ci_pct(ci))
}

fn ci_pct(ci: [f64; 2]) -> String {
    if !(ci[0].is_finite() && ci[1].is_finite()) {
        return "—".into();
    }
    format!(
        "[{:+.1}, {:+.1}]",
        (ci[0] - 1.0) * 100.0,
        (ci[1] - 1.0) * 100.0
    )
}

pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// A signed difference in the metric's unit: `+5.000`, `-15.90 ns`, `+2.500 pp` (percentage
/// points for % metrics).
pub fn signed(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let sign = if v < 0.0 { "-" } else { "+" };
    match unit {
        Unit::Percent => format!("{sign}{} pp", sig(v.abs())),
        _ => format!("{sign}{}", format_value(v.abs(), unit)),
    }
}

/// The change alone: `+3.1 %` (ratio) or `Δ +5.000` (difference).
pub fn delta_change(d: &Delta, unit: Unit) -> String {
    match d.basis {
        Basis::Ratio => pct(d.ratio),
        Basis::Difference => format!("Δ {}", signed(d.difference, unit)),
    }
}

/// The change's 95 % CI: `[+1.0, +5.2]` (ratio, %) or `[+3.000, +7.000]` (difference).
pub fn delta_ci(d: &Delta, unit: Unit) -> String {
    match d.basis {
        Basis::Ratio => ci_pct(d.ci95),
        Basis::Difference => {
            let [lo, hi] = d.difference_ci95;
            if !(lo.is_finite() && hi.is_finite()) {
                return "—".into();
            }
            format!("[{}, {}]", signed(lo, unit), signed(hi, unit))
        }
    }
}

/// The change with its CI: `+3.1 % [+1.0, +5.2]` or `Δ +5.000 [+3.000, +7.000]`.
pub fn delta_text(d: &Delta, unit: Unit) -> String {
    format!("{} {}", delta_change(d, unit), delta_ci(d, unit))
}

/// The verdict as shown in a cell: `worse`, `~ (a)`, `neutral`, plus ` (s)` when the cell's
/// settings differ from the baseline's.
pub fn verdict_text(cell: &Cell) -> String {
    let symbol = |d: &Delta| match (d.verdict, d.detectable) {
        (Verdict::Same, Some(x)) if !d.lost_to_correction() => {
            format!("~ within ±{}", pct_abs(x))
        }
        _ => d.symbol().to_string(),
    };
    let mut t = match &cell.vs_base {
        Some(d) if cell.settings_differ => format!("{} (s)", symbol(d)),
        Some(d) => symbol(d),
        None if cell.settings_differ => "(s)".into(),
        None => String::new(),
    };
    // A verdict measured on a machine in another state than the baseline's: marked.
    if cell.environment_differs
        && cell
            .vs_base
            .as_ref()
            .is_some_and(|d| matches!(d.verdict, Verdict::Better | Verdict::Worse))
    {
        t.push_str(" (e)");
    }
    if cell.vs_base.as_ref().is_some_and(|d| d.reference_alike) {
        t.push_str(" (r)");
    }
    t
}

/// A fraction as an unsigned percentage with sensible digits: `2 %`, `12.5 %`, `1.3 %`.
pub fn pct_abs(x: f64) -> String {
    if !x.is_finite() {
        return "∞".into();
    }
    let v = x * 100.0;
    if v >= 10.0 {
        format!("{v:.0} %")
    } else {
        format!("{v:.1} %")
    }
}

/// The direction marker of a row, as in the run tables: ↑ higher is better, ≈ neutral.
pub fn direction_mark(b: Better) -> &'static str {
    match b {
        Better::Lower => "",
        Better::Higher => " ↑",
        Better::Neutral => " ≈",
    }
}

/// The line `--fail-on-regression` prints for a regression of row `r` in column `j`.
pub fn regression_text(c: &Comparison, r: &Row, j: usize) -> String {
    let name = format!("{} [{}]", row_name(c, r), c.columns[j].name);
    let Some(d) = r.cells[j].vs_base.as_ref() else {
        return name;
    };
    let base = r.cells[0].center.unwrap_or(f64::NAN);
    match d.basis {
        Basis::Ratio => format!(
            "{name}: {:+.1} % worse",
            d.worse_fraction(r.better, base) * 100.0
        ),
        Basis::Difference => {
            let from_to = format!(
                "{} → {} (Δ {})",
                format_value(base, r.unit),
                r.cells[j]
                    .center
                    .map(|v| format_value(v, r.unit))
                    .unwrap_or_else(|| "—".into()),
                signed(d.difference, r.unit)
            );
            if base == 0.0 {
                format!(
                    "{name}: {from_to} worse (baseline 0: no relative size, any significant worse change counts)"
                )
            } else {
                format!(
                    "{name}: {from_to} worse, {:+.1} % of |baseline|",
                    d.worse_fraction(r.better, base) * 100.0
                )
            }
        }
    }
}

/// The test's p-value, and the Benjamini-Hochberg adjusted one (q) when it differs:
/// `p=0.100 q=0.400` (terminal) or `0.100 / 0.400` (tables).
pub fn pq_text(d: &Delta, terminal: bool) -> String {
    if !d.p.is_finite() {
        return if terminal {
            "p=—".into()
        } else {
            "—".into()
        };
    }
    let same = p_text(d.p) == p_text(d.q);
    match (terminal, same) {
        (true, true) => format!("p={}", p_text(d.p)),
        (true, false) => format!("p={} q={}", p_text(d.p), p_text(d.q)),
        (false, true) => p_text(d.p),
        (false, false) => format!("{} / {}", p_text(d.p), p_text(d.q)),
    }
}

/// Row name: the benchmark id, plus `.metric` when the benchmark has several metrics.
pub fn row_name(c: &Comparison, r: &Row) -> String {
    let several = c.rows.iter().filter(|x| x.benchmark == r.benchmark).count() > 1;
    if several {
        format!("{}.{}", r.benchmark, r.metric)
    } else {
        r.benchmark.clone()
    }
}

pub fn column_title(c: &Comparison, j: usize) -> String {
    let col = &c.columns[j];
    let mut s = col.name.clone();
    if !col.complete {
        s.push_str(" (incomplete)");
    }
    s
}

/// A cell's figure: "—" when it has none, "≥ 6.400 Gbit/s" when it is a bound.
pub fn value_text(r: &Row, cell: &Cell) -> String {
    match cell.center {
        Some(v) => format!(
            "{}{}",
            cell.bound
                .map(|b| b.symbol().to_string() + " ")
                .unwrap_or_default(),
            format_value(v, r.unit)
        ),
        None => "—".into(),
    }
}

fn cell_text(r: &Row, cell: &Cell) -> String {
    let v = value_text(r, cell);
    match &cell.vs_base {
        Some(d) => format!(
            "{v}  {} {} {}",
            delta_text(d, r.unit),
            pq_text(d, true),
            verdict_text(cell)
        ),
        None if cell.settings_differ => format!("{v} (s)"),
        None => v,
    }
}

/// Row name with its direction marker (↑ higher is better, ≈ neutral).
fn row_label(c: &Comparison, r: &Row) -> String {
    format!(
        "{}{}{}",
        row_name(c, r),
        direction_mark(r.better),
        secondary_mark(r)
    )
}

/// ` †` for a secondary metric (corrected apart from the headline metrics).
pub fn secondary_mark(r: &Row) -> &'static str {
    if r.primary || r.better == Better::Neutral || r.suite == crate::record::drift_reference::SUITE
    {
        ""
    } else {
        " †"
    }
}

/// A geomean cell: `+25.4 % [-3.0, +60.2] ~`, or without a CI when the noise is unknown.
pub fn geomean_text(sum: &super::SuiteSummary, k: usize) -> String {
    let Some(g) = sum.geomean.get(k).copied().flatten() else {
        return "—".into();
    };
    let ci = sum.ci95.get(k).copied().flatten();
    let v = sum.verdict.get(k).copied().flatten();
    match ci {
        Some(ci) => format!(
            "{} {} {}",
            pct(g),
            ci_pct(ci),
            v.map(|v| v.symbol()).unwrap_or("")
        ),
        None => format!("{} ~ (u)", pct(g)),
    }
}

/// `a, b, c and 4 more`.
fn short_list(xs: &[String], max: usize) -> String {
    if xs.len() <= max {
        xs.join(", ")
    } else {
        format!("{} and {} more", xs[..max].join(", "), xs.len() - max)
    }
}

/// Invocations column `j` holds (the most any of its rows has).
pub fn invocations(c: &Comparison, j: usize) -> usize {
    c.rows
        .iter()
        .filter_map(|r| r.cells.get(j))
        .map(|x| x.invocations)
        .max()
        .unwrap_or(0)
}

/// The terminal rendering.
pub fn text(c: &Comparison) -> String {
    let mut s = runs_text(c);
    s.push_str(&notes_text(c));
    s.push_str(&differences_text(c));
    s.push_str(&settings_text(c));
    for suite in suites_in_order(c) {
        s.push_str(&suite_text(c, suite));
    }
    for f in &c.footnotes {
        s.push_str(&wrap(f, 100, "    "));
    }
    s
}

/// The runs compared, one line each, and the switch command of each A/B arm.
fn runs_text(c: &Comparison) -> String {
    let mut s = String::new();
    s.push_str("Runs compared (the first is the baseline):\n");
    for (j, col) in c.columns.iter().enumerate() {
        s.push_str(&format!(
            "  [{j}] {} run {}  os {}{}{}\n",
            crate::output::pad_right(&col.name, 20),
            col.run_id,
            col.os,
            if col.complete { "" } else { "  (incomplete)" },
            match invocations(c, j) {
                n if n > 1 => format!("  ({n} invocations; newest shown)"),
                _ => String::new(),
            }
        ));
    }
    s.push('\n');
    for (j, arm) in c.ab.iter().enumerate() {
        if let Some(a) = arm {
            s.push_str(&format!(
                "  [{j}] switched by: {}\n",
                crate::output::display_text(a, 300)
            ));
        }
    }
    if c.ab.iter().any(Option::is_some) {
        s.push('\n');
    }
    s
}

/// What to keep in mind before the tables: the drift reference's changes, the power note, and
/// the columns that ran on a machine in another state than the baseline's.
fn notes_text(c: &Comparison) -> String {
    let mut s = String::new();
    for (k, lines) in c.drift.iter().enumerate() {
        if !lines.is_empty() {
            s.push_str(&format!(
                "Drift reference [{}] vs [0] (reference/drift, run in every round): {}{}\n",
                k + 1,
                lines.join(", "),
                if c.ab.iter().any(Option::is_some) {
                    " — A/B paired by round: the machine's drift cancels, so this is the setting's own effect on the reference"
                } else if c.same_system.get(k + 1).copied().unwrap_or(false) {
                    " — same system: a change it explains is not called (d)"
                } else {
                    " — another system: shown, not subtracted"
                }
            ));
        }
    }
    if c.drift.iter().any(|l| !l.is_empty()) {
        s.push('\n');
    }
    if let Some(p) = &c.power {
        s.push_str(&wrap(&format!("NOTE: {p}"), 100, "    "));
        s.push('\n');
    }
    for (j, col) in c.columns.iter().enumerate().skip(1) {
        if let Some(d) = &col.environment_differs {
            s.push_str(&format!(
                "NOTE: [{j}] ran on a machine in another state than the baseline's ({d}); its verdicts are marked (e)\n\n"
            ));
        }
    }
    s
}

/// The machine and environment fields that differ between the runs, or that none do.
fn differences_text(c: &Comparison) -> String {
    let mut s = String::new();
    if !c.differences.is_empty() {
        s.push_str("Machine / environment fields that differ:\n");
        let w = field_width(c.differences.iter().map(|d| d.field.as_str()));
        for d in &c.differences {
            s.push_str(&format!(
                "  {}  {}\n",
                crate::output::pad_right(&d.field, w),
                d.values.join("  |  ")
            ));
        }
        s.push('\n');
    } else if c.columns.len() > 1 {
        s.push_str("Machine / environment: no differences in the recorded fields.\n\n");
    }
    s
}

/// The settings that differ (run config, and each benchmark's as asked and as applied), or that
/// none do.
fn settings_text(c: &Comparison) -> String {
    let mut s = String::new();
    if !c.settings.is_empty() {
        s.push_str(
            "Settings that differ (run config; per benchmark: as asked and as applied/read back):\n",
        );
        let w = field_width(c.settings.iter().map(|d| d.field.as_str()));
        for d in &c.settings {
            s.push_str(&format!(
                "  {}  {}",
                crate::output::pad_right(&d.field, w),
                d.values.join("  |  ")
            ));
            if !d.benchmarks.is_empty() {
                s.push_str(&format!("   in {}", short_list(&d.benchmarks, 3)));
            }
            s.push('\n');
        }
        s.push('\n');
    } else if c.columns.len() > 1 {
        s.push_str("Settings: no differences in the run config or any benchmark's settings.\n\n");
    }
    s
}

/// The display width of the widest field name (0 for none).
fn field_width<'a>(fields: impl Iterator<Item = &'a str>) -> usize {
    fields.map(crate::output::width).max().unwrap_or(0)
}

/// The suites of the rows, in order of first appearance.
fn suites_in_order(c: &Comparison) -> Vec<&str> {
    let mut suites: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !suites.contains(&r.suite.as_str()) {
            suites.push(&r.suite);
        }
    }
    suites
}

/// One suite's table (a row per metric, its geomean when there is something to compare with),
/// then why any of its cells are empty.
fn suite_text(c: &Comparison, suite: &str) -> String {
    let mut s = String::new();
    let rows: Vec<&Row> = c.rows.iter().filter(|r| r.suite == suite).collect();
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut header = vec![suite.to_string()];
    header.extend((0..c.columns.len()).map(|j| column_title(c, j)));
    table.push(header);
    for r in &rows {
        let mut line = vec![row_label(c, r)];
        line.extend(r.cells.iter().map(|cell| cell_text(r, cell)));
        table.push(line);
    }
    if let Some(sum) = c.suites.iter().find(|x| x.suite == suite)
        && c.columns.len() > 1
    {
        let mut line = vec![format!("geomean ({} metrics; + = worse)", sum.metrics)];
        line.push(String::new());
        line.extend((0..sum.geomean.len()).map(|k| geomean_text(sum, k)));
        table.push(line);
    }
    let g = crate::output::grid::Grid {
        gap: "   ",
        ..Default::default()
    };
    let widths = crate::output::grid::Grid::widths(&table);
    for (i, line) in g.lines(&table).into_iter().enumerate() {
        s.push_str(&line);
        s.push('\n');
        if i == 0 {
            s.push_str(&"-".repeat(widths.iter().sum::<usize>() + 3 * (widths.len() - 1)));
            s.push('\n');
        }
    }
    // Why cells are empty.
    for r in &rows {
        for (j, cell) in r.cells.iter().enumerate() {
            if let Some(n) = &cell.note {
                s.push_str(&format!(
                    "  {} [{}]: {n}\n",
                    row_name(c, r),
                    c.columns[j].name
                ));
            }
        }
    }
    s.push('\n');
    s
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stays whole),
/// continuation lines indented by `indent`; each line ends with a newline.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
        } else if len > 0 && line != indent {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

pub fn markdown(c: &Comparison) -> String {
    let mut s = String::from("# osgauge comparison\n\n");
    s.push_str(&md_runs(c));
    s.push_str(&md_differences(c));
    s.push_str(&md_settings(c));
    s.push_str(&md_results(c));
    s.push_str(&md_geomeans(c));
    s.push('\n');
    for f in &c.footnotes {
        s.push_str(&format!("{}\n\n", md_escape(f)));
    }
    s
}

/// Markdown: the runs compared, one list item each, and the power note.
fn md_runs(c: &Comparison) -> String {
    let mut s = String::new();
    for (j, col) in c.columns.iter().enumerate() {
        s.push_str(&format!(
            "- [{j}] **{}** — run `{}`, {}{}{}\n",
            crate::output::markdown_text(&col.name),
            col.run_id,
            col.os,
            if j == 0 { " (baseline)" } else { "" },
            if col.complete { "" } else { " (incomplete)" }
        ));
    }
    if let Some(p) = &c.power {
        s.push_str(&format!(
            "\n> **Note:** {}\n",
            crate::output::markdown_text(p)
        ));
    }
    s
}

/// Markdown: the machine and environment fields that differ, a table (nothing when none do).
fn md_differences(c: &Comparison) -> String {
    let mut s = String::new();
    if c.differences.is_empty() {
        return s;
    }
    s.push_str("\n## Machine / environment fields that differ\n\n| field |");
    for j in 0..c.columns.len() {
        s.push_str(&format!(
            " {} |",
            crate::output::markdown_text(&column_title(c, j))
        ));
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(c.columns.len()));
    s.push('\n');
    for d in &c.differences {
        s.push_str(&format!("| {} |", d.field));
        for v in &d.values {
            s.push_str(&format!(" {} |", md_escape(v)));
        }
        s.push('\n');
    }
    s
}

/// Markdown: the settings that differ, a table, or that none do.
fn md_settings(c: &Comparison) -> String {
    let mut s = String::new();
    if !c.settings.is_empty() {
        s.push_str("\n## Settings that differ\n\nRun config, and per benchmark its parameters as asked and as applied (read back).\n\n| field | benchmarks |");
        for j in 0..c.columns.len() {
            s.push_str(&format!(" {} |", md_escape(&column_title(c, j))));
        }
        s.push_str("\n|---|---|");
        s.push_str(&"---|".repeat(c.columns.len()));
        s.push('\n');
        for d in &c.settings {
            s.push_str(&format!(
                "| {} | {} |",
                md_escape(&d.field),
                if d.benchmarks.is_empty() {
                    "(run config)".to_string()
                } else {
                    md_escape(&d.benchmarks.join(", "))
                }
            ));
            for v in &d.values {
                s.push_str(&format!(" {} |", md_escape(v)));
            }
            s.push('\n');
        }
    } else if c.columns.len() > 1 {
        s.push_str("\nSettings: no differences in the run config or any benchmark's settings.\n");
    }
    s
}

/// Markdown: the results table, a row per metric: the baseline's figure, then per other run its
/// figure, change, CI, p / q and verdict.
fn md_results(c: &Comparison) -> String {
    let mut s = String::new();
    s.push_str("\n## Results\n\nDirection: lower is better unless marked ↑ (higher is better) or ≈ (neutral: a verification figure, never judged).\n\n| benchmark | ");
    s.push_str(&md_escape(&column_title(c, 0)));
    s.push_str(" |");
    for j in 1..c.columns.len() {
        let t = md_escape(&column_title(c, j));
        s.push_str(&format!(" {t} | change | 95 % CI | p / q (BH) | verdict |"));
    }
    s.push_str("\n|---|---:|");
    s.push_str(&"---:|---:|---:|---:|---|".repeat(c.columns.len() - 1));
    s.push('\n');
    for r in &c.rows {
        s.push_str(&format!(
            "| {} | {} |",
            md_escape(&row_label(c, r)),
            value_text(r, &r.cells[0])
        ));
        for cell in &r.cells[1..] {
            match &cell.vs_base {
                Some(d) => s.push_str(&format!(
                    " {} | {} | {} | {} | {} |",
                    value_text(r, cell),
                    delta_change(d, r.unit),
                    delta_ci(d, r.unit),
                    pq_text(d, false),
                    verdict_text(cell)
                )),
                None => s.push_str(&format!(
                    " {} | | | | {} |",
                    value_text(r, cell),
                    if cell.settings_differ {
                        "— (s)"
                    } else {
                        "—"
                    }
                )),
            }
        }
        s.push('\n');
    }
    s
}

/// Markdown: each suite's geomean change per other run, a table (nothing with one run).
fn md_geomeans(c: &Comparison) -> String {
    let mut s = String::new();
    if c.columns.len() <= 1 {
        return s;
    }
    s.push_str("\n| suite | metrics |");
    for j in 1..c.columns.len() {
        s.push_str(&format!(
            " geomean {} |",
            crate::output::markdown_text(&column_title(c, j))
        ));
    }
    s.push_str("\n|---|---:|");
    s.push_str(&"---:|".repeat(c.columns.len() - 1));
    s.push('\n');
    for sum in &c.suites {
        s.push_str(&format!("| {} | {} |", sum.suite, sum.metrics));
        for k in 0..sum.geomean.len() {
            s.push_str(&format!(" {} |", geomean_text(sum, k)));
        }
        s.push('\n');
    }
    s
}

fn md_escape(s: &str) -> String {
    crate::output::markdown_text(s)
}

/// One line per (benchmark, metric, run).
pub fn csv(c: &Comparison) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "benchmark",
        "metric",
        "unit",
        "better",
        "column",
        "name",
        "run_id",
        "runs",
        "center",
        "ratio",
        "ci95_low",
        "ci95_high",
        "basis",
        "difference",
        "difference_ci95_low",
        "difference_ci95_high",
        "p",
        "p_exact",
        "p_bh",
        "settings_differ",
        "verdict",
        "note",
        "bound",
    ])?;
    let f = crate::export::csv::num_cell;
    for r in &c.rows {
        for (j, cell) in r.cells.iter().enumerate() {
            let col = &c.columns[j];
            let d = cell.vs_base.as_ref();
            w.write_record([
                r.benchmark.clone(),
                r.metric.clone(),
                r.unit.symbol().to_string(),
                r.better.as_str().to_string(),
                j.to_string(),
                col.name.clone(),
                col.run_id.clone(),
                cell.runs.to_string(),
                cell.center.map(f).unwrap_or_default(),
                d.map(|d| f(d.ratio)).unwrap_or_default(),
                d.map(|d| f(d.ci95[0])).unwrap_or_default(),
                d.map(|d| f(d.ci95[1])).unwrap_or_default(),
                d.map(|d| basis_word(d.basis).to_string())
                    .unwrap_or_default(),
                d.map(|d| f(d.difference)).unwrap_or_default(),
                d.map(|d| f(d.difference_ci95[0])).unwrap_or_default(),
                d.map(|d| f(d.difference_ci95[1])).unwrap_or_default(),
                d.map(|d| f(d.p)).unwrap_or_default(),
                d.map(|d| d.p_exact.to_string()).unwrap_or_default(),
                d.map(|d| f(d.q)).unwrap_or_default(),
                cell.settings_differ.to_string(),
                d.map(|d| verdict_word(d.verdict).to_string())
                    .unwrap_or_default(),
                cell.note.clone().unwrap_or_default(),
                cell.bound
                    .map(|b| b.symbol().to_string())
                    .unwrap_or_default(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Same => "same",
        Verdict::TooFewRuns => "too_few_runs",
        Verdict::Neutral => "neutral",
        Verdict::Bound => "bound",
        Verdict::NoiseUnknown => "noise_unknown",
        Verdict::Drift => "drift",
        Verdict::Reference => "reference",
    }
}

fn basis_word(b: Basis) -> &'static str {
    match b {
        Basis::Ratio => "ratio",
        Basis::Difference => "difference",
    }
}

pub fn json(c: &Comparison) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(c)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footnotes_wrap_at_spaces_and_keep_every_word() {
        let text = "aaa bbb ccc dddddddddd ee";
        let w = wrap(text, 8, "  ");
        assert_eq!(w, "aaa bbb\n  ccc\n  dddddddddd\n  ee\n");
        let words: Vec<&str> = w.split_whitespace().collect();
        assert_eq!(words, text.split(' ').collect::<Vec<_>>());
        assert_eq!(wrap("short", 100, "  "), "short\n");
    }

    #[test]
    fn change_text_shows_the_ci_and_never_nan() {
        assert_eq!(change_text(1.1, [1.0, 1.2]), "+10.0 % [+0.0, +20.0]");
        assert_eq!(change_text(0.5, [0.25, 0.75]), "-50.0 % [-75.0, -25.0]");
        // A baseline of 0 (e.g. no dropped frames) has no ratio.
        for (r, ci) in [
            (f64::NAN, [f64::NAN, f64::NAN]),
            (f64::INFINITY, [f64::NAN, f64::INFINITY]),
        ] {
            let t = change_text(r, ci);
            assert!(!t.contains("NaN") && !t.contains("inf"), "{t}");
            assert!(t.contains("baseline is 0"), "{t}");
        }
        assert_eq!(p_text(0.0004), "<0.001");
        // Differences carry the metric's unit; % metrics in percentage points.
        assert_eq!(signed(15.9, Unit::Nanoseconds), "+15.90 ns");
        assert_eq!(signed(-1534.0, Unit::Nanoseconds), "-1.534 µs");
        assert_eq!(signed(5.0, Unit::Count), "+5.000");
        assert_eq!(signed(-2.5, Unit::Percent), "-2.500 pp");
        assert_eq!(signed(f64::NAN, Unit::Count), "—");
        assert_eq!(p_text(0.0251), "0.025");
    }
}
