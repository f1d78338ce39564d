//! The HTML report: one self-contained file (inline CSS, inline SVG charts drawn with plotters'
//! SVG backend, no scripts, no network), with the full run records embedded as JSON in a
//! `<script type="application/json">` block so the report can be re-imported.
//!
//! Contents: the runs and a side-by-side system table; the machine/environment fields that
//! differ; the comparison table (first run = baseline) with a forest plot of ratios; grouped bar
//! charts for suites whose ids are `suite/task/load` (one chart per task and statistic, loads on
//! the x axis, one bar per run); latency-vs-size curves for benchmarks with a `curve` parameter
//! (`[{size_bytes, ns_per_load}]`, log x); warnings and errors.

pub mod appmodel;
mod charts;
pub mod fleet;
mod fs;
mod latency;
mod net;
mod policy;
mod policy_sig;

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::compare::{
    self, Comparison, Verdict,
    render::{delta_text, pq_text, verdict_text},
};
use crate::embedded::EMBED_ID;
use crate::record::{BenchmarkResult, RunRecord};
use crate::units::{Unit, format_value};

/// Colours of the runs, in order (colour-blind-safe palette, Okabe-Ito).
pub const PALETTE: &[(u8, u8, u8)] = &[
    (0, 114, 178),
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (213, 94, 0),
    (240, 228, 66),
    (0, 0, 0),
];

/// The colour of run (or column) `i`: the palette for the first eight; the palette lightened
/// halfway to white for the next eight; then hues a golden angle apart at two lightnesses. No
/// two of the first several hundred are the same (a 12-machine chart has 12 colours).
pub fn color(i: usize) -> (u8, u8, u8) {
    let n = PALETTE.len();
    if i < n {
        return PALETTE[i];
    }
    if i < 2 * n {
        let (r, g, b) = PALETTE[i - n];
        let light = |c: u8| ((u16::from(c) + 255) / 2) as u8;
        return (light(r), light(g), light(b));
    }
    let k = i - 2 * n;
    let hue = (k as f64 * 137.507_764) % 360.0;
    let lightness = if k.is_multiple_of(2) { 0.38 } else { 0.58 };
    hsl(hue, 0.7, lightness)
}

/// HSL (hue in degrees, saturation and lightness 0..1) as RGB.
fn hsl(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    (to(r), to(g), to(b))
}

/// `html` with every C0 control character but tab, line feed and carriage return shown as its
/// Unicode control picture (ESC as ␛): record text (an imported hostname, a label) may hold them,
/// and HTML has no place for them — escaping `<>&"` does not cover them. The embedded JSON holds
/// none raw (JSON writes them as \u escapes), so the records still read back as they were.
pub fn visible_controls(html: String) -> String {
    if !html
        .chars()
        .any(|c| c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r' | '\x7f'))
    {
        return html;
    }
    html.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' | '\x7f' => c,
            c if c.is_ascii_control() => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            c => c,
        })
        .collect()
}

fn css_color(i: usize) -> String {
    let (r, g, b) = color(i);
    format!("rgb({r},{g},{b})")
}

/// A run colour's swatch: `<i class="sw" style="background:…">`.
fn swatch(i: usize) -> Markup {
    html! { i.sw style={ "background:" (css_color(i)) } {} }
}

/// The records as JSON for the `<script type="application/json">` block: JSON escapes nothing
/// that would end the script element, so every `<` is written `\u003c` (no `</script>`, no
/// `<!--` can appear); `>` and `&` need no escaping inside a script element.
fn json_for_script(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// A chart and its title (the title is HTML text, so it is searchable and accessible).
pub struct Figure {
    pub title: String,
    /// SVG markup written by plotters' SVG backend, which escapes every text and attribute value
    /// it writes (plotters-svg `escape_and_push`); the only non-maud markup in the report.
    pub svg: String,
    /// Wide figures take the whole row.
    pub wide: bool,
}

impl Figure {
    /// The chart's SVG, inserted raw: plotters wrote it (see [`Figure::svg`]).
    fn svg(&self) -> PreEscaped<&str> {
        PreEscaped(&self.svg)
    }
}

/// Render the report for `runs` (first = baseline).
pub fn render(runs: &[(String, RunRecord)], opts: compare::Options) -> anyhow::Result<String> {
    let groups: Vec<(String, Vec<RunRecord>)> = runs
        .iter()
        .map(|(n, r)| (n.clone(), vec![r.clone()]))
        .collect();
    render_groups(&groups, opts)
}

/// Render the report for sides of one or more invocations each (first = baseline; e.g. every
/// complete run of one label): the comparison is [`compare::compare_groups`]'s, over every
/// invocation; the charts and tables show each side's newest invocation (said on the page); every
/// record is embedded.
pub fn render_groups(
    groups: &[(String, Vec<RunRecord>)],
    opts: compare::Options,
) -> anyhow::Result<String> {
    anyhow::ensure!(
        !groups.is_empty() && groups.iter().all(|(_, g)| !g.is_empty()),
        "no runs to report"
    );
    let cmp = compare::compare_groups(groups, &opts);
    let runs: Vec<(String, RunRecord)> = groups
        .iter()
        .map(|(n, g)| (n.clone(), g.last().expect("non-empty").clone()))
        .collect();
    let runs = runs.as_slice();
    let title = format!(
        "osgauge report: {}",
        runs.iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" vs ")
    );
    // One run: its headline figures and verdicts first, then the charts; the long tables come
    // last, folded (`<details>`).
    let single = runs.len() == 1;
    let forests = micro_forests(&cmp, runs)?;
    let grouped = charts::grouped_suites(runs)?;
    let curves = charts::curves(runs)?;
    let sections = [
        net::section(runs)?,
        latency::section(runs)?,
        fs::section(runs)?,
        policy::section(runs)?,
    ];
    // The records, for re-import (`osgauge results import report.html`).
    let records: Vec<&RunRecord> = groups.iter().flat_map(|(_, g)| g).collect();
    let json = json_for_script(&serde_json::to_string(&records)?);

    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                // CSS: a constant of this file.
                style { (PreEscaped(CSS)) }
            }
            body {
                main {
                    (preamble(&title, groups))
                    (legend(runs))
                    (summary(&cmp))
                    @if single {
                        (run_summary(&runs[0].1))
                    } @else {
                        (system_table(runs, &cmp))
                        (results_section(&cmp))
                    }
                    @if let Some(figs) = &forests {
                        (forest_section(figs))
                    }
                    // Grouped bar charts for suite/task/load ids.
                    @for (suite, figs) in &grouped {
                        (grouped_section(suite, figs, runs))
                    }
                    // Latency-vs-size curves.
                    @if !curves.is_empty() {
                        (curves_section(&curves, runs))
                    }
                    @for s in &sections { (s) }
                    @if single {
                        (tables_section(runs, &cmp))
                    }
                    (warnings_section(runs))
                    footer {
                        "The full run records are embedded in this file; " code { "osgauge results import <this file>" } " reads them back."
                    } "\n"
                }
                // The records as JSON, `<` written \u003c (json_for_script).
                script type="application/json" id=(EMBED_ID) { (PreEscaped(&json)) } "\n"
            }
        }
        "\n"
    };
    Ok(visible_controls(page.into_string()))
}

/// The page's heading `title`, when and by what it was made, and which sides of `groups` hold
/// several invocations (the comparison uses all of them, the charts the newest).
fn preamble(title: &str, groups: &[(String, Vec<RunRecord>)]) -> Markup {
    let invocations: Vec<String> = groups
        .iter()
        .filter(|(_, g)| g.len() > 1)
        .map(|(n, g)| format!("{n}: {} invocations", g.len()))
        .collect();
    html! {
        h1 { (title) } "\n"
        p.sub {
            "Generated " (chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"))
            " by osgauge " (env!("CARGO_PKG_VERSION"))
            ". First run = baseline. Every figure is the median of per-run medians across independent runs unless the chart says otherwise."
        } "\n"
        @if !invocations.is_empty() {
            p.sub {
                "Several invocations of one label are one column (" (invocations.join("; ")) "): the comparison and its verdicts use every invocation as the unit of replication; the charts, tables and system details show the newest invocation."
            } "\n"
        }
    }
}

/// Forest plots of the micro-benchmarks (ids suite/name) compared with the baseline: none for
/// one run or when no such row has a comparison.
fn micro_forests(
    cmp: &Comparison,
    runs: &[(String, RunRecord)],
) -> anyhow::Result<Option<Vec<Figure>>> {
    let forest_rows: Vec<&compare::Row> = cmp
        .rows
        .iter()
        .filter(|r| r.benchmark.matches('/').count() == 1)
        .filter(|r| r.cells.iter().skip(1).any(|c| c.vs_base.is_some()))
        .collect();
    if runs.len() > 1 && !forest_rows.is_empty() {
        Ok(Some(charts::forests(cmp, &forest_rows)?))
    } else {
        Ok(None)
    }
}

/// The micro-benchmarks' forest plots `figs`, with how to read them.
fn forest_section(figs: &[Figure]) -> Markup {
    html! {
        section {
            "\n"
            h2 { "Micro-benchmarks: ratio to the baseline" }
            p.note { "Direction-normalised ratio to the baseline with its 95 % bootstrap CI, one chart per suite, on a log axis (ratios multiply: ½ and 2 are as far from 1): right of 1 = worse, left = better, whatever the metric's direction. The shaded band is the noise band; a ratio beyond 1/8 or 8 is drawn at the edge (▶ ◀) with its value." }
            (figures(figs))
        } "\n"
    }
}

/// One suite's grouped bar charts `figs` (ids suite/task/load), with how to read them.
fn grouped_section(suite: &str, figs: &[Figure], runs: &[(String, RunRecord)]) -> Markup {
    html! {
        section {
            "\n"
            h2 { (suite) " — per task and load" }
            p.note { "One chart per task and statistic; loads on the x axis, one bar per load for each report column (colours as in the legend: one colour when the report holds one osgauge run). Each bar is the median over that cell's runs of the per-run statistic its title names: \"latency mean\" is the median of per-run means, so it can sit far above the summary's figure, which is the median of per-run medians (a few long delays lift a mean, not a median)." }
            (legend(runs))
            (figures(figs))
        } "\n"
    }
}

/// The latency-vs-working-set-size curves.
fn curves_section(curves: &[Figure], runs: &[(String, RunRecord)]) -> Markup {
    html! {
        section {
            "\n"
            h2 { "Latency vs working-set size" }
            (legend(runs))
            (figures(curves))
        } "\n"
    }
}

/// A one-run report's long tables, folded: every figure, and the system and environment.
fn tables_section(runs: &[(String, RunRecord)], cmp: &Comparison) -> Markup {
    html! {
        section #tables {
            "\n" h2 { "Tables" } "\n"
            details {
                summary { "Results: all " (cmp.rows.len()) " figure(s), with CI and direction" } "\n"
                (results_section(cmp))
            } "\n"
            details {
                summary { "System and environment" } "\n"
                (system_table(runs, cmp))
            } "\n"
        } "\n"
    }
}

pub(super) fn figures(figs: &[Figure]) -> Markup {
    html! {
        div.grid {
            "\n"
            @for f in figs {
                figure class=(if f.wide { "wide" } else { "" }) {
                    figcaption { (f.title) } (f.svg())
                } "\n"
            }
        } "\n"
    }
}

pub(super) fn legend(runs: &[(String, RunRecord)]) -> Markup {
    html! {
        p.legend {
            @for (i, (n, r)) in runs.iter().enumerate() {
                span {
                    i style={ "background:" (css_color(i)) } {}
                    (n) @if !r.complete { " (incomplete)" }
                }
            }
        } "\n"
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "—".into())
}

fn system_rows(r: &RunRecord) -> Vec<(&'static str, String)> {
    let m = &r.machine;
    let e = &r.environment.start;
    let os = [m.os_name.clone(), m.os_version.clone()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let governors = e
        .governors
        .as_ref()
        .map(|g| {
            let mut v: Vec<String> = g.iter().filter_map(|x| x.governor.clone()).collect();
            v.sort();
            v.dedup();
            v.join(", ")
        })
        .unwrap_or_else(|| "— (no cpufreq)".into());
    let virt = match (&m.virtualization.virtualized, &m.virtualization.vendor) {
        (Some(true), Some(v)) => format!("yes ({v})"),
        (Some(true), None) => "yes".into(),
        (Some(false), _) => "no".into(),
        (None, _) => "unknown".into(),
    };
    let mitig = m
        .mitigations
        .as_ref()
        .map(|x| {
            format!(
                "{} mitigated, {} vulnerable{}",
                x.mitigated,
                x.vulnerable,
                x.cmdline
                    .as_ref()
                    .map(|c| format!(" (mitigations={c})"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_else(|| "—".into());
    vec![
        ("run id", r.run_id.to_string()),
        ("label", opt(&r.label)),
        (
            "started",
            r.started.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        ),
        (
            "state",
            if r.complete {
                "complete".into()
            } else {
                "incomplete (interrupted)".into()
            },
        ),
        ("hostname", opt(&m.hostname)),
        (
            "OS",
            format!("{} ({})", if os.is_empty() { "—" } else { &os }, m.os),
        ),
        ("kernel", opt(&m.kernel_release)),
        ("architecture", m.arch.clone()),
        ("CPU", opt(&m.cpu.model_name)),
        (
            "cores / threads",
            format!(
                "{} / {}",
                opt(&m.cpu.physical_cores),
                opt(&m.cpu.logical_cpus)
            ),
        ),
        (
            "memory",
            m.memory_total_bytes
                .map(|b| format_value(b as f64, Unit::Bytes))
                .unwrap_or_else(|| "—".into()),
        ),
        ("virtualization", virt),
        ("clock source", opt(&m.clocksource)),
        ("preemption", opt(&m.preemption)),
        ("governor", governors),
        ("boost / turbo", opt(&e.boost)),
        ("SMT", opt(&m.cpu.smt_active)),
        ("mitigations", mitig),
        (
            "osgauge",
            format!("{} ({})", r.tool.version, r.tool.profile),
        ),
        (
            "runs × time",
            format!(
                "{} × {} ms (+{} warm-up)",
                r.config.runs, r.config.run_time_ms, r.config.warmup_runs
            ),
        ),
    ]
}

fn system_table(runs: &[(String, RunRecord)], cmp: &Comparison) -> Markup {
    let all: Vec<Vec<(&str, String)>> = runs.iter().map(|(_, r)| system_rows(r)).collect();
    html! {
        section {
            "\n"
            h2 { "Systems" } "\n"
            table.sys {
                tr {
                    th {}
                    @for (i, (n, _)) in runs.iter().enumerate() { th { (swatch(i)) (n) } }
                } "\n"
                @for k in 0..all[0].len() {
                    @let vals: Vec<&String> = all.iter().map(|rows| &rows[k].1).collect();
                    @let differs = runs.len() > 1 && vals.iter().any(|v| *v != vals[0]) && k > 2;
                    tr class=[differs.then_some("diff")] {
                        th { (all[0][k].0) }
                        @for v in vals { td { (v) } }
                    } "\n"
                }
            } "\n"
            @if !cmp.differences.is_empty() {
                details {
                    summary { "All " (cmp.differences.len()) " recorded machine / environment fields that differ" } "\n"
                    table.sys {
                        tr { th { "field" } @for (n, _) in runs { th { (n) } } } "\n"
                        @for d in &cmp.differences {
                            tr {
                                th { (d.field) }
                                @for v in &d.values { td { (v) } }
                            } "\n"
                        }
                    }
                } "\n"
            }
            @if runs.len() > 1 { (settings_table(runs, cmp)) }
        } "\n"
    }
}

/// The settings (run config, per-benchmark parameters as asked and applied) that differ.
fn settings_table(runs: &[(String, RunRecord)], cmp: &Comparison) -> Markup {
    if cmp.settings.is_empty() {
        return html! {
            p.note { "Settings: no differences in the run config or any benchmark's settings." } "\n"
        };
    }
    html! {
        h3 { "Settings that differ" } "\n"
        p.note { "Run config, and per benchmark its parameters as asked and as applied (read back). Results cells of these benchmarks are marked (s)." } "\n"
        table.sys {
            tr { th { "field" } th { "benchmarks" } @for (n, _) in runs { th { (n) } } } "\n"
            @for d in &cmp.settings {
                tr.diff {
                    th { (d.field) }
                    td {
                        @if d.benchmarks.is_empty() { "(run config)" } @else { (d.benchmarks.join(", ")) }
                    }
                    @for v in &d.values { td { (v) } }
                } "\n"
            }
        } "\n"
    }
}

/// At a glance: per suite and run, the geometric mean vs the baseline and the verdict counts.
fn summary(cmp: &Comparison) -> Markup {
    if cmp.columns.len() < 2 {
        return html! {};
    }
    let count = |suite: &str, j: usize, v: Verdict| {
        cmp.rows
            .iter()
            .filter(|r| r.suite == suite)
            .filter(|r| r.cells[j].vs_base.as_ref().map(|d| d.verdict) == Some(v))
            .count()
    };
    html! {
        section {
            "\n"
            h2 { "Summary" } "\n"
            // What these run counts can detect at all, said once before any verdict.
            @if let Some(p) = &cmp.power {
                p.note { b { "Note:" } " " (p) } "\n"
            }
            @for (j, col) in cmp.columns.iter().enumerate().skip(1) {
                @if let Some(d) = &col.environment_differs {
                    p.note {
                        b { "Note:" } " [" (j) "] " (col.name)
                        " ran on a machine in another state than the baseline's (" (d)
                        "); its verdicts are marked (e)."
                    } "\n"
                }
            }
            table.res {
                tr {
                    th { "suite" }
                    @for j in 1..cmp.columns.len() {
                        th { (swatch(j)) (compare::render::column_title(cmp, j)) " vs " (cmp.columns[0].name) }
                    }
                } "\n"
                @for sum in &cmp.suites {
                    tr {
                        td { (sum.suite) }
                        @for k in 0..sum.geomean.len() {
                            @let j = k + 1;
                            @let neutral = count(&sum.suite, j, Verdict::Neutral);
                            td {
                                "geomean " (compare::render::geomean_text(sum, k)) " \u{a0} "
                                span.worse { (count(&sum.suite, j, Verdict::Worse)) " worse" } ", "
                                span.better { (count(&sum.suite, j, Verdict::Better)) " better" } ", "
                                (count(&sum.suite, j, Verdict::Same) + count(&sum.suite, j, Verdict::TooFewRuns) + count(&sum.suite, j, Verdict::Drift) + count(&sum.suite, j, Verdict::NoiseUnknown)) " ~"
                                @if neutral > 0 { " (" (neutral) " neutral, not judged)" }
                            }
                        }
                    } "\n"
                }
            } "\n"
            p.note { "geomean: geometric mean of direction-normalised ratios over the suite's metrics present in every run (+ = worse than the baseline). Details under Results." } "\n"
        } "\n"
    }
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Same
        | Verdict::TooFewRuns
        | Verdict::Neutral
        | Verdict::Bound
        | Verdict::NoiseUnknown
        | Verdict::Drift
        | Verdict::Reference => "same",
    }
}

fn results_section(cmp: &Comparison) -> Markup {
    let n = cmp.columns.len();
    let mut suites: Vec<&str> = Vec::new();
    for r in &cmp.rows {
        if !suites.contains(&r.suite.as_str()) {
            suites.push(&r.suite);
        }
    }
    let value = |r: &compare::Row, c: &compare::Cell| match (c.center, &c.note) {
        (Some(_), _) => compare::render::value_text(r, c),
        (None, Some(note)) => format!("— ({note})"),
        (None, None) => "—".into(),
    };
    html! {
        section {
            "\n"
            h2 { "Results" } "\n"
            @for suite in suites {
                h3 { (suite) } "\n"
                table.res {
                    tr {
                        th { "benchmark" }
                        @for j in 0..n {
                            th { (compare::render::column_title(cmp, j)) }
                            @if j > 0 { th { "change [95 % CI]" } th { "p / q (BH)" } th {} }
                        }
                    } "\n"
                    @for r in cmp.rows.iter().filter(|r| r.suite == suite) {
                        tr {
                            td { (compare::render::row_name(cmp, r)) " " span.dir { "(" (r.better.describe()) ")" } }
                            @for (j, c) in r.cells.iter().enumerate() {
                                td.num { (value(r, c)) }
                                @if j > 0 {
                                    @match &c.vs_base {
                                        Some(d) => {
                                            td.num { (delta_text(d, r.unit)) }
                                            td.num { (pq_text(d, false)) }
                                            td class=(verdict_class(d.verdict)) { (verdict_text(c)) }
                                        }
                                        None => { td {} td {} td { (verdict_text(c)) } }
                                    }
                                }
                            }
                        } "\n"
                    }
                    @if n > 1 {
                        @if let Some(sum) = cmp.suites.iter().find(|x| x.suite == suite) {
                            tr.geo {
                                td { "geometric mean (" (sum.metrics) " metrics, normalised: + = worse)" }
                                td {}
                                @for k in 0..sum.geomean.len() {
                                    td {} td.num { (compare::render::geomean_text(sum, k)) } td {} td {}
                                }
                            } "\n"
                        }
                    }
                } "\n"
            }
            @if cmp.rows.iter().any(|r| r.better == crate::units::Better::Neutral) {
                p.note { "neutral (≈): informational figures such as switch counts and effective frame rates, or checks against a target the metric's description names (task_cpu against the task's CPU share, load_cpu against the load's): a change is shown but never called better or worse." } "\n"
            }
            @for f in &cmp.footnotes { p.note { (f) } "\n" }
        } "\n"
    }
}

/// A single run's opening: per suite its headline figures with their 95 % CI (as on the
/// terminal, `output::summary`), and the verdicts that change how to read them.
fn run_summary(r: &RunRecord) -> Markup {
    let (per_suite, notes) =
        crate::output::summary::headlines(r, &crate::bench::registry::headlines());
    let verdicts: Vec<String> = crate::output::summary::verdicts(r)
        .into_iter()
        .chain(notes)
        .collect();
    html! {
        section #summary {
            "\n"
            h2 { "Summary" } "\n"
            p.note { "Median [95 % bootstrap CI] of " (crate::output::runs_kept_text(r)) "; every figure is in the tables at the end." } "\n"
            table.res {
                tr { th { "suite" } th { "figure" } th { "median" } th { "95 % CI" } } "\n"
                @for (suite, figures) in &per_suite {
                    @for (i, f) in figures.iter().enumerate() {
                        tr {
                            td { @if i == 0 { (suite) } }
                            td { (f.label) }
                            td.num { (f.value) }
                            td.num { (f.ci) " " (f.marks) }
                        } "\n"
                    }
                }
            } "\n"
            @if !verdicts.is_empty() {
                ul.verdicts { @for v in &verdicts { li { (v) } "\n" } } "\n"
            }
        } "\n"
    }
}

fn bench_problems(b: &BenchmarkResult) -> Vec<String> {
    let mut v: Vec<String> = b
        .warnings
        .iter()
        .map(|w| format!("{}: {w}", b.id))
        .collect();
    if let Some(e) = &b.error {
        v.push(format!("{}: {e}", b.id));
    }
    v
}

fn warnings_section(runs: &[(String, RunRecord)]) -> Markup {
    let per_run: Vec<(&String, Vec<String>)> = runs
        .iter()
        .map(|(n, r)| {
            let mut items: Vec<String> = r.warnings.clone();
            items.extend(r.benchmarks.iter().flat_map(bench_problems));
            (n, items)
        })
        .filter(|(_, items)| !items.is_empty())
        .collect();
    html! {
        section {
            "\n"
            h2 { "Warnings" } "\n"
            @for (n, items) in &per_run {
                h3 { (n) } "\n"
                ul { @for w in items { li { (w) } "\n" } } "\n"
            }
            @if per_run.is_empty() { p { "None." } "\n" }
        } "\n"
    }
}

const CSS: &str = "
:root{--fg:#1b1f24;--muted:#5b6470;--line:#d8dde3;--bg:#fff;--head:#f3f5f8}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}
main{max-width:1320px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:4px 0}
h2{font-size:18px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
.sub,.note,footer{color:var(--muted);font-size:13px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--head);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.diff th,tr.diff td{background:#fff6d6}
tr.geo td{font-weight:600;background:var(--head)}
.dir{color:var(--muted);font-size:12px}
.worse{color:#b00020;font-weight:700}
.better{color:#00703c;font-weight:700}
td.same{color:var(--muted)}
.legend span{display:inline-block;margin-right:16px}
.legend i,.sw{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;border-radius:2px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:12px;align-items:start}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px}
figure.wide{grid-column:1/-1}
figcaption{font-weight:600;font-size:13px;margin-bottom:2px}
figure svg{max-width:100%;height:auto;display:block}
details{margin:6px 0}
summary{cursor:pointer;color:var(--muted)}
footer{margin-top:30px}
";

#[cfg(test)]
mod color_tests {
    #[test]
    fn colours_do_not_repeat_after_eight() {
        let cs: Vec<(u8, u8, u8)> = (0..300).map(super::color).collect();
        for i in 0..cs.len() {
            for j in 0..i {
                assert_ne!(cs[i], cs[j], "colours {j} and {i}");
            }
        }
        assert_eq!(super::color(0), super::PALETTE[0]);
    }
}
