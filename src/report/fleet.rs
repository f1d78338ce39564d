//! HTML of the fleet view (`osgauge fleet --export-html`) and of a metric's history (`osgauge
//! fleet history … --export-html`): self-contained like the report (inline CSS and SVG, no
//! scripts), the same chart code and the same escaping — every text from a record (hostnames,
//! labels, CPU names, benchmark ids: untrusted, possibly imported) is a maud interpolation, which
//! escapes it, or goes through the SVG backend's own escaping.

use anyhow::Result;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use plotters::prelude::*;

use super::charts::{self, BarValues, FONT, chart_on, house_mesh, pe, rgb, svg_chart};
use super::{CSS, Figure, css_color, figures, json_for_script, swatch};
use crate::fleet::render::{
    BEST, attribute_rows, cell_text, history_method, method_text, span_text,
};
use crate::fleet::{Fleet, History, Row, Series};
use crate::units::{Unit, format_value};

/// Id of the JSON block the page embeds (the fleet table or the history as exported).
pub const EMBED_ID: &str = "osgauge-fleet";

fn page(title: &str, body: Markup, json: &str) -> String {
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            "\n"
            head {
                "\n"
                meta charset="utf-8"; "\n"
                meta name="viewport" content="width=device-width, initial-scale=1"; "\n"
                title { (title) } "\n"
                // CSS: constants of this file and the report's.
                style { (PreEscaped(CSS)) (PreEscaped(FLEET_CSS)) } "\n"
            } "\n"
            body {
                "\n"
                main {
                    "\n"
                    h1 { (title) } "\n"
                    p.sub { "Generated " (chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")) " by osgauge " (env!("CARGO_PKG_VERSION")) "." } "\n"
                    (body)
                } "\n"
                // The exported JSON, `<` written \u003c (json_for_script).
                script type="application/json" id=(EMBED_ID) { (PreEscaped(json_for_script(json))) } "\n"
            } "\n"
        } "\n"
    }
    .into_string();
    super::visible_controls(page)
}

const FLEET_CSS: &str = "
td.best{background:#e7f5ec;font-weight:700}
tr.attr td,tr.attr th{background:#fafbfc;color:var(--muted)}
td.none{color:var(--muted)}
td.nowrap{white-space:nowrap}
.scroll{overflow-x:auto}
";

fn legend(titles: &[String]) -> Markup {
    html! {
        p.legend {
            @for (i, t) in titles.iter().enumerate() {
                span { i style={ "background:" (css_color(i)) } {} (t) }
            }
        } "\n"
    }
}

/// Rows of one chart, in table order: the same unit, medians within a factor of 4 of each
/// other (so one bar does not flatten the rest), at most 4 benchmarks (their names must fit
/// under the bars). Rows with a figure below zero are not charted (bars grow from 0); they are
/// returned apart, to be named.
fn chart_groups(rows: &[Row]) -> (Vec<Vec<&Row>>, Vec<&Row>) {
    let top = |r: &Row| {
        r.cells
            .iter()
            .flatten()
            .map(|c| c.center)
            .filter(|v| v.is_finite())
            .fold(0.0_f64, f64::max)
    };
    let negative = |r: &Row| r.cells.iter().flatten().any(|c| c.center < 0.0);
    let mut out: Vec<(Vec<&Row>, f64, f64)> = Vec::new();
    let mut apart = Vec::new();
    for r in rows {
        if negative(r) {
            apart.push(r);
            continue;
        }
        let t = top(r);
        if t <= 0.0 {
            continue;
        }
        match out.last_mut() {
            Some((g, lo, hi))
                if g[0].unit == r.unit && g.len() < 4 && hi.max(t) <= 4.0 * lo.min(t) =>
            {
                g.push(r);
                *lo = lo.min(t);
                *hi = hi.max(t);
            }
            _ => out.push((vec![r], t, t)),
        }
    }
    (out.into_iter().map(|(g, _, _)| g).collect(), apart)
}

fn short_name(r: &Row) -> String {
    let b = r
        .benchmark
        .split_once('/')
        .map(|x| x.1)
        .unwrap_or(&r.benchmark);
    format!("{b} {}", r.metric)
}

/// The fleet page: per suite the table (attribute rows, a row per metric, the best marked) and
/// grouped bar charts (one bar per column, whiskers = CI, or the member range for a group).
pub fn render_fleet(f: &Fleet) -> Result<String> {
    let titles: Vec<String> = f.columns.iter().map(|c| c.title.clone()).collect();
    let attributes = attribute_rows(f);
    let mut sections = Vec::new();
    for suite in &f.suites {
        let mut figs = Vec::new();
        let (groups, apart) = chart_groups(&suite.rows);
        for group in groups {
            let cats: Vec<String> = group.iter().map(|r| short_name(r)).collect();
            let values: BarValues = group
                .iter()
                .map(|r| {
                    r.cells
                        .iter()
                        .map(|c| c.as_ref().map(|c| (c.center, c.ci95.or(c.range))))
                        .collect()
                })
                .collect();
            let unit: Unit = group[0].unit;
            let (svg, axis) = charts::bar_chart(&cats, &values, unit, titles.len())?;
            figs.push(Figure {
                title: format!("{}: {} ({axis})", suite.suite, cats.join(", ")),
                svg,
                wide: false,
            });
        }
        let apart: Vec<String> = apart.iter().map(|r| short_name(r)).collect();
        sections.push(html! {
            section {
                "\n" h2 { (suite.suite) } "\n"
                div.scroll {
                    table {
                        "\n"
                        tr {
                            th { "benchmark metric" }
                            @for (i, t) in titles.iter().enumerate() { th { (swatch(i)) (t) } }
                        } "\n"
                        @for (name, vals) in &attributes {
                            tr.attr { th { (name) } @for v in vals { td { (v) } } } "\n"
                        }
                        @for r in &suite.rows {
                            tr {
                                th { (r.benchmark) " " (r.metric) " " span.dir { (r.better.describe()) } }
                                @for (j, c) in r.cells.iter().enumerate() {
                                    @match c {
                                        Some(c) if r.best == Some(j) => {
                                            td class="num best" { (cell_text(c, r.unit)) " " (BEST) }
                                        }
                                        Some(c) => { td.num { (cell_text(c, r.unit)) } }
                                        None => { td.none { "— " (r.notes[j]) } }
                                    }
                                }
                            } "\n"
                        }
                    }
                } "\n"
                @if !figs.is_empty() { (figures(&figs)) }
                @if !apart.is_empty() {
                    p.note { "Not charted (a figure below zero; bars grow from 0): " (apart.join(", ")) "." } "\n"
                }
            } "\n"
        });
    }
    let body = html! {
        p.note { (method_text(f)) } "\n"
        p.note {
            @if f.group_by.is_some() {
                "Charts: one bar per group (colours as in the legend), the whisker spans the smallest to largest member median; benchmarks of one unit and of similar size (within a factor of 4) share a chart."
            } @else {
                "Charts: one bar per run (colours as in the legend), the whisker is its 95 % CI; benchmarks of one unit and of similar size (within a factor of 4) share a chart."
            }
        } "\n"
        (legend(&titles))
        @for s in &sections { (s) }
    };
    let what = match f.group_by {
        Some(g) => format!("osgauge fleet, grouped by {}", g.as_str()),
        None => format!("osgauge fleet: {} run(s)", f.columns.len()),
    };
    Ok(page(&what, body, &crate::fleet::render::json(f)?))
}

/// The y range of a history chart of `points`: the largest figure (a CI end or a median), and
/// the axis from `lo` to `hi` — the figures padded by 10 % either way (not below 0 when none is
/// negative), or 0 … 110 % of the largest when they do not span a range.
fn history_range(points: &[crate::fleet::Point]) -> (f64, f64, f64) {
    let max = points
        .iter()
        .map(|p| p.ci95[1].max(p.center))
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let min = points
        .iter()
        .map(|p| p.ci95[0].min(p.center))
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    let (lo, hi) = if min.is_finite() && max > min {
        let pad = (max - min) * 0.1;
        (
            (min - pad).max(if min >= 0.0 { 0.0 } else { f64::MIN }),
            max + pad,
        )
    } else {
        (0.0, max.max(1.0) * 1.1)
    };
    (max, lo, hi)
}

type HistoryChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The CI of every point of `se`, divided by `div`, in colour `c`: a band through the runs, or
/// for a single run a vertical line.
fn draw_history_ci(chart: &mut HistoryChart, se: &Series, div: f64, c: RGBColor) -> Result<()> {
    let mut band: Vec<(f64, f64)> = se
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.ci95[1] / div))
        .collect();
    band.extend(
        se.points
            .iter()
            .enumerate()
            .rev()
            .map(|(i, p)| (i as f64, p.ci95[0] / div)),
    );
    if se.points.len() > 1 {
        chart
            .draw_series(std::iter::once(Polygon::new(band, c.mix(0.18).filled())))
            .map_err(pe)?;
    } else {
        chart
            .draw_series(se.points.iter().map(|p| {
                PathElement::new(
                    vec![(0.0, p.ci95[0] / div), (0.0, p.ci95[1] / div)],
                    c.stroke_width(2),
                )
            }))
            .map_err(pe)?;
    }
    Ok(())
}

/// The change points of `se`: a red vertical line from `lo` to `hi` (axis units) between the
/// runs on either side, labelled with the segments' ratio and the verdict at the top.
fn draw_history_changes(chart: &mut HistoryChart, se: &Series, lo: f64, hi: f64) -> Result<()> {
    let red = RGBColor(176, 0, 32);
    for ch in &se.changes {
        let x = ch.index as f64 - 0.5;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, lo), (x, hi)],
                red.stroke_width(2),
            )))
            .map_err(pe)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!(
                    "×{} {}",
                    crate::units::sig(ch.segment_ratio),
                    ch.verdict.symbol()
                ),
                (x + 0.05, hi),
                (FONT, 14).into_font().color(&red),
            )))
            .map_err(pe)?;
    }
    Ok(())
}

/// One machine's series: the medians as a line, the CI as a band, change points as red
/// vertical lines between the runs on either side.
fn history_chart(se: &Series, unit: Unit, color: usize) -> Result<String> {
    let n = se.points.len();
    let (max, lo, hi) = history_range(&se.points);
    let (div, axis) = charts::axis_unit(unit, max);
    let c = rgb(color);
    svg_chart((1000, 320), |root| {
        let mut chart = chart_on(root, 10, 48, 64)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), (lo / div)..(hi / div))
            .map_err(pe)?;
        let label = |x: &f64| -> String {
            let i = x.round();
            if (x - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            se.points
                .get(i as usize)
                .map(|p| p.started.format("%m-%d %H:%M").to_string())
                .unwrap_or_default()
        };
        house_mesh(&mut chart.configure_mesh())
            .x_labels(n.clamp(2, 10))
            .x_label_formatter(&label)
            .x_desc("run (start time, UTC)")
            .y_desc(axis.as_str())
            .draw()
            .map_err(pe)?;
        draw_history_ci(&mut chart, se, div, c)?;
        let pts: Vec<(f64, f64)> = se
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, p.center / div))
            .collect();
        charts::line_with_dots(&mut chart, &pts, c, 2)?;
        draw_history_changes(&mut chart, se, lo / div, hi / div)
    })
}

/// The history page: per machine a line chart with its CI band and change points, and the
/// table of runs.
pub fn render_history(h: &History) -> Result<String> {
    let mut sections = Vec::new();
    for (i, se) in h.series.iter().enumerate() {
        let chart = if se.points.is_empty() {
            None
        } else {
            Some(Figure {
                title: format!(
                    "{} {} on {} — median per run, 95 % CI band, change points in red",
                    h.benchmark, h.metric, se.machine
                ),
                svg: history_chart(se, h.unit, i)?,
                wide: true,
            })
        };
        let change = |k: usize| {
            se.changes.iter().find(|c| c.index == k).map(|c| {
                format!(
                    "p {} · segment ×{} · compare {} → {}: {}{}",
                    crate::units::sig(c.p),
                    crate::units::sig(c.segment_ratio),
                    crate::store::short_id(&c.before),
                    crate::store::short_id(&c.after),
                    c.verdict.symbol(),
                    match (c.ratio, c.ratio_ci95) {
                        (Some(r), Some(ci)) =>
                            format!(" ({})", crate::compare::render::change_text(r, ci)),
                        _ => String::new(),
                    }
                )
            })
        };
        sections.push(html! {
            section {
                "\n" h2 { (se.machine) } "\n"
                p.note {
                    (se.points.len()) " run(s)"
                    @if se.skipped > 0 { ", " (se.skipped) " more without this metric" }
                    "; " (se.changes.len()) " change point(s)."
                } "\n"
                @if let Some(fig) = &chart { (figures(std::slice::from_ref(fig))) }
                table {
                    "\n"
                    tr { th { "started (UTC)" } th { "run" } th { "label" } th { "median [95 % CI]" } th { "change point" } } "\n"
                    @for (k, p) in se.points.iter().enumerate() {
                        @let change = change(k);
                        tr class=[change.is_some().then_some("diff")] {
                            td.nowrap { (p.started.format("%Y-%m-%d %H:%M:%S")) }
                            td { code title=(p.run_id) { (crate::store::short_id(&p.run_id)) } }
                            td { (p.label.as_deref().unwrap_or("—")) }
                            td.num { (format_value(p.center, h.unit)) " [" (span_text(p.ci95[0], p.ci95[1], h.unit)) "]" }
                            td { (change.as_deref().unwrap_or("")) }
                        } "\n"
                    }
                } "\n"
            } "\n"
        });
    }
    let body = html! {
        p.note { (history_method(h)) } "\n"
        @for s in &sections { (s) }
    };
    let title = format!("osgauge history: {} {}", h.benchmark, h.metric);
    Ok(page(&title, body, &crate::fleet::render::history_json(h)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::Cell;
    use crate::units::Better;

    fn row(name: &str, unit: Unit, centers: &[f64]) -> Row {
        Row {
            benchmark: format!("s/{name}"),
            metric: "m".into(),
            unit,
            better: Better::Lower,
            cells: centers
                .iter()
                .map(|&c| {
                    Some(Cell {
                        center: c,
                        ci95: None,
                        range: None,
                        n: 1,
                        bound: None,
                    })
                })
                .collect(),
            notes: vec![String::new(); centers.len()],
            best: None,
        }
    }

    #[test]
    fn charts_share_a_unit_and_a_scale_and_leave_negative_figures_out() {
        let rows = [
            row("a", Unit::Nanoseconds, &[10.0, 12.0]),
            row("b", Unit::Nanoseconds, &[30.0, 35.0]),
            row("c", Unit::Nanoseconds, &[500.0, 400.0]),
            row("d", Unit::Percent, &[50.0, 60.0]),
            row("e", Unit::Nanoseconds, &[-1.0, 2.0]),
            row("f", Unit::Nanoseconds, &[0.0, 0.0]),
            row("g", Unit::Nanoseconds, &[450.0, 460.0]),
        ];
        let (groups, apart) = chart_groups(&rows);
        let names: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.iter().map(|r| r.benchmark.as_str()).collect())
            .collect();
        // a and b within 4× of each other; c alone (10× b); the % row apart from the ns rows;
        // g is not next to c in the table, so it starts its own chart.
        assert_eq!(
            names,
            [vec!["s/a", "s/b"], vec!["s/c"], vec!["s/d"], vec!["s/g"]]
        );
        assert_eq!(apart.len(), 1);
        assert_eq!(apart[0].benchmark, "s/e");
    }
}
