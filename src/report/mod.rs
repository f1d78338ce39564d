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

use std::fmt::Write as _;

use crate::compare::{
    self, Comparison, Verdict,
    render::{delta_text, pct, pq_text, verdict_text},
};
use crate::model::{BenchmarkResult, RunRecord};
use crate::units::{Unit, format_value};

/// Id of the embedded JSON block.
pub const EMBED_ID: &str = "osgauge-runs";
const EMBED_OPEN: &str = "<script type=\"application/json\" id=\"osgauge-runs\">";

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

pub fn color(i: usize) -> (u8, u8, u8) {
    PALETTE[i % PALETTE.len()]
}

fn css_color(i: usize) -> String {
    let (r, g, b) = color(i);
    format!("rgb({r},{g},{b})")
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The JSON embedded in a report written by [`render`].
pub fn extract_embedded(html: &str) -> Option<&str> {
    let start = html.find(EMBED_OPEN)? + EMBED_OPEN.len();
    let len = html[start..].find("</script>")?;
    Some(&html[start..start + len])
}

/// A chart and its title (the title is HTML text, so it is searchable and accessible).
pub struct Figure {
    pub title: String,
    pub svg: String,
    /// Wide figures take the whole row.
    pub wide: bool,
}

/// Render the report for `runs` (first = baseline).
pub fn render(runs: &[(String, RunRecord)], opts: compare::Options) -> anyhow::Result<String> {
    anyhow::ensure!(!runs.is_empty(), "no runs to report");
    let cmp = compare::compare(runs, opts);
    let mut h = String::new();
    let title = format!(
        "osgauge report: {}",
        runs.iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" vs ")
    );
    write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n<p class=\"sub\">Generated {} by osgauge {}. First run = baseline. Every figure is the median of per-run medians across independent runs unless the chart says otherwise.</p>\n",
        esc(&title),
        esc(&title),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        env!("CARGO_PKG_VERSION")
    )?;
    h.push_str(&legend(runs));
    h.push_str(&summary(&cmp));
    // One run: its headline figures and verdicts first, then the charts; the long tables come
    // last, folded (`<details>`).
    let single = runs.len() == 1;
    if single {
        h.push_str(&run_summary(&runs[0].1));
    } else {
        h.push_str(&system_table(runs, &cmp));
        h.push_str(&results_section(&cmp));
    }

    // Forest plot of the micro-benchmarks (ids suite/name).
    if runs.len() > 1 {
        let rows: Vec<&compare::Row> = cmp
            .rows
            .iter()
            .filter(|r| r.benchmark.matches('/').count() == 1)
            .filter(|r| r.cells.iter().skip(1).any(|c| c.vs_base.is_some()))
            .collect();
        if !rows.is_empty() {
            h.push_str("<section>\n<h2>Micro-benchmarks: ratio to the baseline</h2>\n");
            h.push_str("<p class=\"note\">Direction-normalised ratio to the baseline with its 95 % bootstrap CI, one chart per suite, on a log axis (ratios multiply: ½ and 2 are as far from 1): right of 1 = worse, left = better, whatever the metric's direction. The shaded band is the noise band; a ratio beyond 1/8 or 8 is drawn at the edge (▶ ◀) with its value.</p>\n");
            h.push_str(&figures(&charts::forests(&cmp, &rows)?));
            h.push_str("</section>\n");
        }
    }

    // Grouped bar charts for suite/task/load ids.
    for (suite, figs) in charts::grouped_suites(runs)? {
        write!(
            h,
            "<section>\n<h2>{} — per task and load</h2>\n<p class=\"note\">One chart per task and statistic; loads on the x axis; one bar per run (colours as in the legend). Statistics over runs: median of the per-run values.</p>\n",
            esc(&suite)
        )?;
        h.push_str(&legend(runs));
        h.push_str(&figures(&figs));
        h.push_str("</section>\n");
    }

    // Latency-vs-size curves.
    let curves = charts::curves(runs)?;
    if !curves.is_empty() {
        h.push_str("<section>\n<h2>Latency vs working-set size</h2>\n");
        h.push_str(&legend(runs));
        h.push_str(&figures(&curves));
        h.push_str("</section>\n");
    }

    h.push_str(&net::section(runs)?);
    h.push_str(&latency::section(runs)?);
    h.push_str(&fs::section(runs)?);
    h.push_str(&policy::section(runs)?);

    if single {
        let rows = cmp.rows.len();
        write!(
            h,
            "<section id=\"tables\">\n<h2>Tables</h2>\n<details><summary>Results: all {rows} figure(s), with CI and direction</summary>\n{}</details>\n<details><summary>System and environment</summary>\n{}</details>\n</section>\n",
            results_section(&cmp),
            system_table(runs, &cmp)
        )?;
    }

    h.push_str(&warnings_section(runs));

    // The records, for re-import (`osgauge results import report.html`).
    let records: Vec<&RunRecord> = runs.iter().map(|(_, r)| r).collect();
    let json = serde_json::to_string(&records)?.replace('<', "\\u003c");
    write!(
        h,
        "<footer>The full run records are embedded in this file; <code>osgauge results import &lt;this file&gt;</code> reads them back.</footer>\n</main>\n{EMBED_OPEN}{json}</script>\n</body>\n</html>\n"
    )?;
    Ok(h)
}

fn figures(figs: &[Figure]) -> String {
    let mut s = String::from("<div class=\"grid\">\n");
    for f in figs {
        s.push_str(&format!(
            "<figure class=\"{}\"><figcaption>{}</figcaption>{}</figure>\n",
            if f.wide { "wide" } else { "" },
            esc(&f.title),
            f.svg
        ));
    }
    s.push_str("</div>\n");
    s
}

fn legend(runs: &[(String, RunRecord)]) -> String {
    let mut s = String::from("<p class=\"legend\">");
    for (i, (n, r)) in runs.iter().enumerate() {
        write!(
            s,
            "<span><i style=\"background:{}\"></i>{}{}</span>",
            css_color(i),
            esc(n),
            if r.complete { "" } else { " (incomplete)" }
        )
        .unwrap();
    }
    s.push_str("</p>\n");
    s
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

fn system_table(runs: &[(String, RunRecord)], cmp: &Comparison) -> String {
    let mut s = String::from("<section>\n<h2>Systems</h2>\n<table class=\"sys\">\n<tr><th></th>");
    for (i, (n, _)) in runs.iter().enumerate() {
        write!(
            s,
            "<th><i class=\"sw\" style=\"background:{}\"></i>{}</th>",
            css_color(i),
            esc(n)
        )
        .unwrap();
    }
    s.push_str("</tr>\n");
    let all: Vec<Vec<(&str, String)>> = runs.iter().map(|(_, r)| system_rows(r)).collect();
    for k in 0..all[0].len() {
        let vals: Vec<&String> = all.iter().map(|rows| &rows[k].1).collect();
        let differs = runs.len() > 1 && vals.iter().any(|v| *v != vals[0]) && k > 2;
        write!(
            s,
            "<tr{}><th>{}</th>",
            if differs { " class=\"diff\"" } else { "" },
            all[0][k].0
        )
        .unwrap();
        for v in vals {
            write!(s, "<td>{}</td>", esc(v)).unwrap();
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    if !cmp.differences.is_empty() {
        write!(
            s,
            "<details><summary>All {} recorded machine / environment fields that differ</summary>\n<table class=\"sys\"><tr><th>field</th>",
            cmp.differences.len()
        )
        .unwrap();
        for (n, _) in runs {
            write!(s, "<th>{}</th>", esc(n)).unwrap();
        }
        s.push_str("</tr>\n");
        for d in &cmp.differences {
            write!(s, "<tr><th>{}</th>", esc(&d.field)).unwrap();
            for v in &d.values {
                write!(s, "<td>{}</td>", esc(v)).unwrap();
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table></details>\n");
    }
    if runs.len() > 1 {
        s.push_str(&settings_table(runs, cmp));
    }
    s.push_str("</section>\n");
    s
}

/// The settings (run config, per-benchmark parameters as asked and applied) that differ.
fn settings_table(runs: &[(String, RunRecord)], cmp: &Comparison) -> String {
    if cmp.settings.is_empty() {
        return "<p class=\"note\">Settings: no differences in the run config or any benchmark's settings.</p>\n".into();
    }
    let mut s = String::from(
        "<h3>Settings that differ</h3>\n<p class=\"note\">Run config, and per benchmark its parameters as asked and as applied (read back). Results cells of these benchmarks are marked (s).</p>\n<table class=\"sys\"><tr><th>field</th><th>benchmarks</th>",
    );
    for (n, _) in runs {
        write!(s, "<th>{}</th>", esc(n)).unwrap();
    }
    s.push_str("</tr>\n");
    for d in &cmp.settings {
        write!(
            s,
            "<tr class=\"diff\"><th>{}</th><td>{}</td>",
            esc(&d.field),
            if d.benchmarks.is_empty() {
                "(run config)".to_string()
            } else {
                esc(&d.benchmarks.join(", "))
            }
        )
        .unwrap();
        for v in &d.values {
            write!(s, "<td>{}</td>", esc(v)).unwrap();
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// At a glance: per suite and run, the geometric mean vs the baseline and the verdict counts.
fn summary(cmp: &Comparison) -> String {
    if cmp.columns.len() < 2 {
        return String::new();
    }
    let mut s = String::from("<section>\n<h2>Summary</h2>\n");
    // What these run counts can detect at all, said once before any verdict.
    if let Some(p) = &cmp.power {
        writeln!(s, "<p class=\"note\"><b>Note:</b> {}</p>", esc(p)).unwrap();
    }
    for (j, col) in cmp.columns.iter().enumerate().skip(1) {
        if let Some(d) = &col.environment_differs {
            writeln!(
                s,
                "<p class=\"note\"><b>Note:</b> [{j}] {} ran on a machine in another state than the baseline's ({}); its verdicts are marked (e).</p>",
                esc(&col.name),
                esc(d)
            )
            .unwrap();
        }
    }
    s.push_str("<table class=\"res\">\n<tr><th>suite</th>");
    for j in 1..cmp.columns.len() {
        write!(
            s,
            "<th><i class=\"sw\" style=\"background:{}\"></i>{} vs {}</th>",
            css_color(j),
            esc(&compare::render::column_title(cmp, j)),
            esc(&cmp.columns[0].name)
        )
        .unwrap();
    }
    s.push_str("</tr>\n");
    for sum in &cmp.suites {
        write!(s, "<tr><td>{}</td>", esc(&sum.suite)).unwrap();
        for (k, g) in sum.geomean.iter().enumerate() {
            let j = k + 1;
            let count = |v: Verdict| {
                cmp.rows
                    .iter()
                    .filter(|r| r.suite == sum.suite)
                    .filter(|r| r.cells[j].vs_base.as_ref().map(|d| d.verdict) == Some(v))
                    .count()
            };
            write!(
                s,
                "<td>geomean {} &nbsp; <span class=\"worse\">{} worse</span>, <span class=\"better\">{} better</span>, {} ~",
                g.map(pct).unwrap_or_else(|| "—".into()),
                count(Verdict::Worse),
                count(Verdict::Better),
                count(Verdict::Same) + count(Verdict::TooFewRuns)
            )
            .unwrap();
            let neutral = count(Verdict::Neutral);
            if neutral > 0 {
                write!(s, " ({neutral} neutral, not judged)").unwrap();
            }
            s.push_str("</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n<p class=\"note\">geomean: geometric mean of direction-normalised ratios over the suite's metrics present in every run (+ = worse than the baseline). Details under Results.</p>\n</section>\n");
    s
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Same | Verdict::TooFewRuns | Verdict::Neutral | Verdict::Bound => "same",
    }
}

fn results_section(cmp: &Comparison) -> String {
    let mut s = String::from("<section>\n<h2>Results</h2>\n");

    let n = cmp.columns.len();
    let mut suites: Vec<&str> = Vec::new();
    for r in &cmp.rows {
        if !suites.contains(&r.suite.as_str()) {
            suites.push(&r.suite);
        }
    }
    for suite in suites {
        write!(
            s,
            "<h3>{}</h3>\n<table class=\"res\">\n<tr><th>benchmark</th>",
            esc(suite)
        )
        .unwrap();
        for j in 0..n {
            let t = esc(&compare::render::column_title(cmp, j));
            if j == 0 {
                write!(s, "<th>{t}</th>").unwrap();
            } else {
                write!(
                    s,
                    "<th>{t}</th><th>change [95 % CI]</th><th>p / q (BH)</th><th></th>"
                )
                .unwrap();
            }
        }
        s.push_str("</tr>\n");
        for r in cmp.rows.iter().filter(|r| r.suite == suite) {
            write!(
                s,
                "<tr><td>{} <span class=\"dir\">({})</span></td>",
                esc(&compare::render::row_name(cmp, r)),
                esc(r.better.describe())
            )
            .unwrap();
            for (j, c) in r.cells.iter().enumerate() {
                let v = match (c.center, &c.note) {
                    (Some(_), _) => compare::render::value_text(r, c),
                    (None, Some(note)) => format!("— ({note})"),
                    (None, None) => "—".into(),
                };
                write!(s, "<td class=\"num\">{}</td>", esc(&v)).unwrap();
                if j > 0 {
                    match &c.vs_base {
                        Some(d) => write!(
                            s,
                            "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{}\">{}</td>",
                            esc(&delta_text(d, r.unit)),
                            esc(&pq_text(d, false)),
                            verdict_class(d.verdict),
                            esc(&verdict_text(c))
                        )
                        .unwrap(),
                        None => write!(
                            s,
                            "<td></td><td></td><td>{}</td>",
                            esc(&verdict_text(c))
                        )
                        .unwrap(),
                    }
                }
            }
            s.push_str("</tr>\n");
        }
        if n > 1
            && let Some(sum) = cmp.suites.iter().find(|x| x.suite == suite)
        {
            write!(
                s,
                "<tr class=\"geo\"><td>geometric mean ({} metrics, normalised: + = worse)</td><td></td>",
                sum.metrics
            )
            .unwrap();
            for g in &sum.geomean {
                write!(
                    s,
                    "<td></td><td class=\"num\">{}</td><td></td><td></td>",
                    g.map(pct).unwrap_or_else(|| "—".into())
                )
                .unwrap();
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
    }
    if cmp
        .rows
        .iter()
        .any(|r| r.better == crate::units::Better::Neutral)
    {
        s.push_str("<p class=\"note\">neutral (≈): informational figures such as switch counts and effective frame rates, or checks against a target the metric's description names (task_cpu against the task's CPU share, load_cpu against the load's): a change is shown but never called better or worse.</p>\n");
    }
    for f in &cmp.footnotes {
        writeln!(s, "<p class=\"note\">{}</p>", esc(f)).unwrap();
    }
    s.push_str("</section>\n");
    s
}

/// A single run's opening: per suite its headline figures with their 95 % CI (as on the
/// terminal, `output::summary`), and the verdicts that change how to read them.
fn run_summary(r: &RunRecord) -> String {
    let (per_suite, notes) = crate::output::summary::headlines(r);
    let mut s = format!(
        "<section id=\"summary\">\n<h2>Summary</h2>\n<p class=\"note\">Median [95 % bootstrap CI] of {}; every figure is in the tables at the end.</p>\n<table class=\"res\">\n<tr><th>suite</th><th>figure</th><th>median</th><th>95 % CI</th></tr>\n",
        esc(&crate::output::runs_kept_text(r))
    );
    for (suite, figures) in &per_suite {
        for (i, f) in figures.iter().enumerate() {
            let name = if i == 0 { esc(suite) } else { String::new() };
            writeln!(
                s,
                "<tr><td>{name}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(&f.label),
                esc(&f.value),
                esc(&f.ci)
            )
            .unwrap();
        }
    }
    s.push_str("</table>\n");
    let verdicts: Vec<String> = crate::output::summary::verdicts(r)
        .into_iter()
        .chain(notes)
        .collect();
    if !verdicts.is_empty() {
        s.push_str("<ul class=\"verdicts\">\n");
        for v in verdicts {
            writeln!(s, "<li>{}</li>", esc(&v)).unwrap();
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");
    s
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

fn warnings_section(runs: &[(String, RunRecord)]) -> String {
    let mut s = String::from("<section>\n<h2>Warnings</h2>\n");
    let mut any = false;
    for (n, r) in runs {
        let mut items: Vec<String> = r.warnings.clone();
        items.extend(r.benchmarks.iter().flat_map(bench_problems));
        if items.is_empty() {
            continue;
        }
        any = true;
        write!(s, "<h3>{}</h3>\n<ul>\n", esc(n)).unwrap();
        for w in items {
            writeln!(s, "<li>{}</li>", esc(&w)).unwrap();
        }
        s.push_str("</ul>\n");
    }
    if !any {
        s.push_str("<p>None.</p>\n");
    }
    s.push_str("</section>\n");
    s
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
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:12px}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px}
figure.wide{grid-column:1/-1}
figcaption{font-weight:600;font-size:13px;margin-bottom:2px}
figure svg{width:100%;height:auto;display:block}
details{margin:6px 0}
summary{cursor:pointer;color:var(--muted)}
footer{margin-top:30px}
";
