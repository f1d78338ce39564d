//! Charts of the HTML report, drawn as SVG strings with plotters' SVG backend.

use anyhow::{Result, anyhow};
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

use super::{Figure, color};
use crate::compare::{self, Comparison, Verdict, normalised};
use crate::record::{MetricResult, RunRecord};
use crate::stats;
use crate::units::Unit;

pub(super) const FONT: &str = "sans-serif";

pub(super) fn pe<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

/// The SVG of a `size` chart: a white canvas handed to `draw`, then presented.
pub(super) fn svg_chart(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(pe)?;
        draw(&root)?;
        root.present().map_err(pe)?;
    }
    Ok(svg)
}

/// A chart on `root` with the report's margins: `margin`, and label areas `x_area` (below) and
/// `y_area` (left).
pub(super) fn chart_on<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    margin: u32,
    x_area: u32,
    y_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.margin(margin)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    b
}

/// The report's mesh style: 16 px labels and axis descriptions, light grey grid lines.
pub(super) fn house_mesh<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style((FONT, 16))
        .axis_desc_style((FONT, 16))
        .light_line_style(RGBColor(240, 240, 240))
}

/// The report's legend: the series labels in a framed, half-transparent box, at `position`
/// (plotters' default place when None).
pub(super) fn house_legend<'a, 'b: 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    position: Option<SeriesLabelPosition>,
) -> Result<()> {
    let mut labels = chart.configure_series_labels();
    if let Some(p) = position {
        labels.position(p);
    }
    labels
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()
        .map_err(pe)
}

/// The report's legend beside the plot: `root` split into the plot's area (returned) and a strip
/// on the right with one key per series — its line and label at the house font size — so the
/// legend covers no data however the series run. Keys wrap into further columns when the chart
/// is too short for one; the strip takes at most a third of the width, and keys beyond it are
/// counted in a last line ("… 12 more") rather than drawn off the chart.
pub(super) fn legend_beside<'b>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    keys: &[(String, ShapeStyle)],
) -> Result<DrawingArea<SVGBackend<'b>, Shift>> {
    const ROW: i32 = 24;
    // ~9 px per character of 16 px sans-serif; a 28 px key line and gaps take 48 px.
    const CHAR_W: u32 = 9;
    const KEY_W: u32 = 48;
    let (w, h) = root.dim_in_pixel();
    if keys.is_empty() {
        return Ok(root.clone());
    }
    let max_strip = w / 3;
    let rows = ((h as i32 - 2 * ROW) / ROW).max(1) as usize;
    let longest = keys.iter().map(|k| k.0.chars().count()).max().unwrap_or(0) as u32;
    let col_w = (longest * CHAR_W + KEY_W).min(max_strip);
    let max_cols = (max_strip / col_w).max(1) as usize;
    let cols = keys.len().div_ceil(rows).min(max_cols);
    let room = rows * cols;
    // All keys, or room for one line fewer and that line saying how many are left out.
    let shown = if keys.len() > room {
        room - 1
    } else {
        keys.len()
    };
    let (plot, side) = root.split_horizontally(w - col_w * cols as u32);
    let font = TextStyle::from((FONT, 16).into_font()).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Left,
        plotters::style::text_anchor::VPos::Center,
    ));
    let fit = ((col_w - KEY_W) / CHAR_W) as usize;
    let at = |i: usize| {
        (
            8 + (i / rows) as i32 * col_w as i32,
            ROW + (i % rows) as i32 * ROW,
        )
    };
    for (i, (label, style)) in keys.iter().take(shown).enumerate() {
        let (x, y) = at(i);
        let text = if label.chars().count() > fit {
            let head: String = label.chars().take(fit.saturating_sub(1)).collect();
            format!("{head}…")
        } else {
            label.clone()
        };
        side.draw(&PathElement::new(vec![(x, y), (x + 28, y)], *style))
            .map_err(pe)?;
        side.draw(&Text::new(text, (x + 36, y), font.clone()))
            .map_err(pe)?;
    }
    if shown < keys.len() {
        let (x, y) = at(shown);
        side.draw(&Text::new(
            format!("… {} more", keys.len() - shown),
            (x + 36, y),
            font.clone(),
        ))
        .map_err(pe)?;
    }
    Ok(plot)
}

/// Bar `i` of `nruns` in category `c` of a grouped bar chart: its x extent.
pub(super) fn bar_x(c: usize, i: usize, nruns: usize) -> (f64, f64) {
    let w = 0.8 / nruns.max(1) as f64;
    let x0 = c as f64 + 0.1 + w * i as f64;
    (x0, x0 + w * 0.92)
}

/// A line through `pts` with a dot on each point, in colour `c`.
pub(super) fn line_with_dots<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    pts: &[(f64, f64)],
    c: RGBColor,
    width: u32,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(pts.to_vec(), c.stroke_width(width)))
        .map_err(pe)?;
    chart
        .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
        .map_err(pe)?;
    Ok(())
}

/// A 0..n axis whose ticks sit at the category centres i + 0.5.
pub(super) struct Categories(pub(super) usize);

impl Ranged for Categories {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = f64::from(limit.1 - limit.0);
        limit.0 + (v / self.0.max(1) as f64 * span).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }
    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.0 as f64
    }
}

/// A log axis from `.0` to `.1` (both > 0) whose ticks are numbers a reader can read off: 1, 10,
/// 100 over several decades; 1-2-5 or every digit within one or two; even steps when the range
/// is narrower than one digit — never a single "1", never none (plotters' log scale puts ticks
/// only at powers of ten that fall inside the range).
pub(super) struct LogAxis(pub(super) f64, pub(super) f64);

impl Ranged for LogAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = f64::from(limit.1 - limit.0);
        let (a, b) = (self.0.ln(), self.1.ln());
        let x = (v.max(f64::MIN_POSITIVE).ln() - a) / (b - a);
        limit.0 + (x * span).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        log_ticks(self.0, self.1, hint.max_num_points().clamp(3, 12))
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.0..self.1
    }
}

/// Ticks for a log axis from `lo` to `hi`: at least 3 where the range allows, at most `max`.
pub(super) fn log_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    log_ticks_unrounded(lo, hi, max)
        .into_iter()
        .map(round_tick)
        .collect()
}

/// A tick value to 12 significant digits, through Rust's own decimal formatting: the powers of
/// ten come from the platform's libm, which leaves 1.0000000000000002 on some (MinGW under
/// Wine), and a tick is a round number by intent.
fn round_tick(v: f64) -> f64 {
    format!("{v:.11e}").parse().unwrap_or(v)
}

fn log_ticks_unrounded(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    if !(lo > 0.0 && hi.is_finite()) {
        return Vec::new();
    }
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let ladder = |digits: &[f64]| -> Vec<f64> {
        (e0..=e1)
            .flat_map(|e| digits.iter().map(move |d| d * 10f64.powi(e)))
            .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
            .collect()
    };
    let thin = |v: Vec<f64>| -> Vec<f64> {
        let step = v.len().div_ceil(max).max(1);
        v.into_iter().step_by(step).collect()
    };
    // A ladder is taken when it gives 3 ticks and leaves no stretch of the axis (between two
    // ticks, or to an end) longer than half of it without a number.
    let spread = (hi / lo).ln();
    let covers = |v: &[f64]| {
        let mut edges = vec![lo];
        edges.extend_from_slice(v);
        edges.push(hi);
        edges.windows(2).all(|w| (w[1] / w[0]).ln() <= spread / 2.0)
    };
    for digits in [
        &[1.0][..],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &[
            1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
        ],
    ] {
        let v = ladder(digits);
        if v.len() >= 3 && covers(&v) {
            return thin(v);
        }
    }
    // Narrower than one digit: even steps of 1, 2 or 5 × 10^k.
    let raw = (hi - lo) / 3.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| (hi - lo) / s <= 5.0)
        .unwrap_or(10.0 * p);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|k| first + k as f64 * step)
        .take_while(|v| *v <= hi * (1.0 + 1e-9))
        .collect()
}

/// A log2 axis of sizes: values are log2(bytes); ticks at whole powers of two.
struct Log2Bytes(f64, f64);

impl Ranged for Log2Bytes {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = f64::from(limit.1 - limit.0);
        limit.0 + ((v - self.0) / (self.1 - self.0) * span).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let (lo, hi) = (self.0.ceil() as i64, self.1.floor() as i64);
        let n = (hi - lo + 1).max(1) as usize;
        let step = n.div_ceil(hint.max_num_points().clamp(2, 12)).max(1);
        (lo..=hi).step_by(step).map(|k| k as f64).collect()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.0..self.1
    }
}

/// `2^k` bytes as "512 B", "4 KiB", "16 MiB".
fn pow2_bytes(k: f64) -> String {
    let k = k.round() as i64;
    let (unit, e) = match k {
        ..10 => ("B", 0),
        10..20 => ("KiB", 10),
        20..30 => ("MiB", 20),
        _ => ("GiB", 30),
    };
    format!("{} {unit}", 1u64 << (k - e).clamp(0, 62))
}

pub(super) fn rgb(i: usize) -> RGBColor {
    let (r, g, b) = color(i);
    RGBColor(r, g, b)
}

/// Divisor and axis unit for values of `unit` whose largest is `max`.
pub(super) fn axis_unit(unit: Unit, max: f64) -> (f64, String) {
    match unit {
        Unit::Nanoseconds if max >= 1e9 => (1e9, "s".into()),
        Unit::Nanoseconds if max >= 1e6 => (1e6, "ms".into()),
        Unit::Nanoseconds if max >= 1e3 => (1e3, "µs".into()),
        Unit::Nanoseconds => (1.0, "ns".into()),
        Unit::BytesPerSecond if max >= 1e9 => (1e9, "GB/s".into()),
        Unit::BytesPerSecond if max >= 1e6 => (1e6, "MB/s".into()),
        Unit::OpsPerSecond if max >= 1e6 => (1e6, "Mop/s".into()),
        Unit::OpsPerSecond if max >= 1e3 => (1e3, "kop/s".into()),
        u => (1.0, u.symbol().to_string()),
    }
}

/// A statistic of one metric summarised over runs.
#[derive(Clone, Copy)]
enum Stat {
    /// Median of per-run medians, with its CI.
    Center,
    Mean,
    P99,
    Max,
}

impl Stat {
    fn name(self) -> &'static str {
        match self {
            Stat::Center => "median",
            Stat::Mean => "mean",
            Stat::P99 => "p99",
            Stat::Max => "max",
        }
    }
}

/// Value (and CI for the center) of `stat` for one metric of one run.
fn stat_value(m: &MetricResult, stat: Stat) -> Option<(f64, Option<[f64; 2]>)> {
    let per: Vec<f64> = m
        .runs
        .iter()
        .map(|r| match stat {
            Stat::Center => r.summary.p50,
            Stat::Mean => r.summary.mean,
            Stat::P99 => r.summary.p99,
            Stat::Max => r.summary.max,
        })
        .filter(|v| v.is_finite())
        .collect();
    if per.is_empty() {
        return None;
    }
    let ci = match stat {
        Stat::Center => m.summary.as_ref().map(|s| s.ci95),
        _ => None,
    };
    Some((stats::median(&per), ci))
}

/// Grouped bar charts for every suite with ids `suite/task/load`: per task and statistic, loads
/// on the x axis, one bar per run.
pub fn grouped_suites(runs: &[(String, RunRecord)]) -> Result<Vec<(String, Vec<Figure>)>> {
    let mut suites: Vec<String> = Vec::new();
    for (_, r) in runs {
        for b in &r.benchmarks {
            if b.id.split('/').count() == 3 && !suites.contains(&b.suite) {
                suites.push(b.suite.clone());
            }
        }
    }
    let mut out = Vec::new();
    for suite in suites {
        let (tasks, metrics) = suite_layout(runs, &suite);
        let mut figs = Vec::new();
        for (task, loads) in &tasks {
            figs.extend(task_figures(runs, &suite, task, loads, &metrics)?);
        }
        if !figs.is_empty() {
            out.push((suite, figs));
        }
    }
    Ok(out)
}

/// A suite's tasks with their loads, and its metrics (name, unit, whether any run has a
/// distribution of several samples), each in order of first appearance over `runs`.
type SuiteLayout = (Vec<(String, Vec<String>)>, Vec<(String, Unit, bool)>);

/// The tasks, loads and metrics of `suite`'s `suite/task/load` benchmarks in `runs`.
fn suite_layout(runs: &[(String, RunRecord)], suite: &str) -> SuiteLayout {
    let mut tasks: Vec<(String, Vec<String>)> = Vec::new();
    let mut metrics: Vec<(String, Unit, bool)> = Vec::new();
    for (_, r) in runs {
        for b in r.benchmarks.iter().filter(|b| b.suite == suite) {
            let parts: Vec<&str> = b.id.split('/').collect();
            if parts.len() != 3 {
                continue;
            }
            let (task, load) = (parts[1].to_string(), parts[2].to_string());
            match tasks.iter_mut().find(|(t, _)| *t == task) {
                Some((_, loads)) if !loads.contains(&load) => loads.push(load),
                Some(_) => {}
                None => tasks.push((task, vec![load])),
            }
            for m in &b.metrics {
                let dist = m.runs.iter().any(|r| r.summary.count > 1);
                match metrics.iter_mut().find(|(n, _, _)| *n == m.name) {
                    Some(x) => x.2 |= dist,
                    None => metrics.push((m.name.clone(), m.unit, dist)),
                }
            }
        }
    }
    (tasks, metrics)
}

/// One task's charts: per metric and statistic (mean, p99 and max of a distribution, else the
/// centre) a bar chart over `loads`, one bar per run. Charts whose every bar would be 0 are not
/// drawn (an empty frame reads as "no data"): one line names them.
fn task_figures(
    runs: &[(String, RunRecord)],
    suite: &str,
    task: &str,
    loads: &[String],
    metrics: &[(String, Unit, bool)],
) -> Result<Vec<Figure>> {
    let mut figs = Vec::new();
    let mut all_zero: Vec<String> = Vec::new();
    for (metric, unit, dist) in metrics {
        let stats: &[Stat] = if *dist {
            &[Stat::Mean, Stat::P99, Stat::Max]
        } else {
            &[Stat::Center]
        };
        for &stat in stats {
            // values[load][run]
            let values: BarValues = loads
                .iter()
                .map(|load| {
                    let id = format!("{suite}/{task}/{load}");
                    runs.iter()
                        .map(|(_, r)| {
                            r.benchmark(&id)
                                .and_then(|b| b.metrics.iter().find(|m| &m.name == metric))
                                .and_then(|m| stat_value(m, stat))
                        })
                        .collect()
                })
                .collect();
            if values.iter().flatten().all(|v| v.is_none()) {
                continue;
            }
            let what = if *dist {
                format!("{metric} {}", stat.name())
            } else {
                metric.clone()
            };
            if all_bars_zero(&values) {
                all_zero.push(what);
                continue;
            }
            let (svg, axis) = bar_chart(loads, &values, *unit, runs.len())?;
            figs.push(Figure {
                title: format!("{suite} {task}: {what} ({axis})"),
                svg,
                wide: false,
            });
        }
    }
    if !all_zero.is_empty() {
        figs.push(Figure {
            title: format!(
                "{suite} {task}: {} — 0 in every cell and run (not drawn)",
                all_zero.join(", ")
            ),
            svg: String::new(),
            wide: false,
        });
    }
    Ok(figs)
}

/// Whether every bar of `values` (and its CI, where it has one) is 0.
fn all_bars_zero(values: &BarValues) -> bool {
    values
        .iter()
        .flatten()
        .flatten()
        .all(|(v, ci)| *v == 0.0 && ci.is_none_or(|c| c[0] == 0.0 && c[1] == 0.0))
}

pub(super) type BarValues = Vec<Vec<Option<(f64, Option<[f64; 2]>)>>>;

pub(super) fn bar_chart(
    cats: &[String],
    values: &BarValues,
    unit: Unit,
    nruns: usize,
) -> Result<(String, String)> {
    let max = values
        .iter()
        .flatten()
        .flatten()
        .map(|(v, ci)| ci.map(|c| c[1]).unwrap_or(*v).max(*v))
        .fold(0.0_f64, f64::max);
    let (div, axis) = axis_unit(unit, max);
    let top = if unit == Unit::Percent {
        (max.max(100.0) / div) * 1.05
    } else if max > 0.0 {
        max / div * 1.12
    } else {
        1.0
    };
    let n = cats.len();
    let svg = svg_chart((640, 300), |root| {
        let mut chart = chart_on(root, 8, 34, 56)
            .build_cartesian_2d(Categories(n), 0.0..top)
            .map_err(pe)?;
        let label = |x: &f64| -> String {
            let i = x.floor() as usize;
            cats.get(i).cloned().unwrap_or_default()
        };
        house_mesh(&mut chart.configure_mesh())
            .disable_x_mesh()
            .y_desc(axis.as_str())
            .x_label_formatter(&label)
            .light_line_style(RGBColor(242, 242, 242))
            .draw()
            .map_err(pe)?;
        for (c, row) in values.iter().enumerate() {
            for (i, v) in row.iter().enumerate() {
                let Some((v, ci)) = v else { continue };
                let (x0, x1) = bar_x(c, i, nruns);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, v / div)],
                        rgb(i).filled(),
                    )))
                    .map_err(pe)?;
                if let Some([lo, hi]) = ci
                    && lo.is_finite()
                    && hi.is_finite()
                {
                    let xm = (x0 + x1) / 2.0;
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(xm, lo / div), (xm, hi / div)],
                            BLACK.stroke_width(1),
                        )))
                        .map_err(pe)?;
                }
            }
        }
        Ok(())
    })?;
    Ok((svg, axis))
}

/// Forest plot: direction-normalised ratio to the baseline with its CI, one line per metric and run.
/// Ratios beyond this factor either way are drawn at the edge of the forest plot, marked and
/// labelled with their value, so one outlier does not squeeze every other metric into a line.
pub const FOREST_CLIP: f64 = 8.0;

/// One forest plot per suite (a chart of ~140 metrics on one axis could not be read).
pub fn forests(cmp: &Comparison, rows: &[&compare::Row]) -> Result<Vec<Figure>> {
    let mut suites: Vec<&str> = Vec::new();
    for r in rows {
        if !suites.contains(&r.suite.as_str()) {
            suites.push(&r.suite);
        }
    }
    suites
        .into_iter()
        .map(|s| {
            let mine: Vec<&compare::Row> = rows.iter().filter(|r| r.suite == s).copied().collect();
            let mut f = forest(cmp, &mine)?;
            f.title = format!("{s}: {}", f.title);
            Ok(f)
        })
        .collect()
}

/// One point of a forest plot: row `row` of the plot, run column `col` (1 = the first run after
/// the baseline), the direction-normalised ratio `r` and its CI `lo` … `hi`.
struct ForestEntry {
    row: usize,
    col: usize,
    r: f64,
    lo: f64,
    hi: f64,
    significant: bool,
}

/// A ratio a log axis can place: finite and above zero.
fn plottable(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// The entries of a forest plot of `rows`: each cell's comparison with the baseline, normalised
/// so > 1 is worse. A difference (zero or negative values) has no ratio to plot; a bound is no
/// measured change: neither is an entry.
fn forest_entries(rows: &[&compare::Row]) -> Vec<ForestEntry> {
    let mut entries = Vec::new();
    for (ri, row) in rows.iter().enumerate() {
        for (j, c) in row.cells.iter().enumerate().skip(1) {
            let Some(d) = &c.vs_base else { continue };
            if d.basis != compare::Basis::Ratio || d.verdict == compare::Verdict::Bound {
                continue;
            }
            let a = normalised(d.ci95[0], row.better);
            let b = normalised(d.ci95[1], row.better);
            entries.push(ForestEntry {
                row: ri,
                col: j,
                r: normalised(d.ratio, row.better),
                lo: a.min(b),
                hi: a.max(b),
                significant: matches!(d.verdict, Verdict::Better | Verdict::Worse),
            });
        }
    }
    entries
}

/// The x range of a forest plot: the noise band around 1 and every plottable ratio and CI end,
/// clipped to 1/[`FOREST_CLIP`] … [`FOREST_CLIP`], then padded multiplicatively (a log axis).
fn forest_range(noise: f64, entries: &[ForestEntry]) -> (f64, f64) {
    let mut lo = 1.0 - noise;
    let mut hi = 1.0 + noise;
    for e in entries {
        for x in [e.r, e.lo, e.hi] {
            if plottable(x) {
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
    }
    (lo.max(1.0 / FOREST_CLIP) / 1.08, hi.min(FOREST_CLIP) * 1.08)
}

/// The y of entry `e` in a forest plot of `n` rows and `k` compared runs: its row's centre, the
/// runs spread over 60 % of the row when there are several.
fn forest_y(e: &ForestEntry, n: usize, k: usize) -> f64 {
    (n - 1 - e.row) as f64
        + 0.5
        + if k > 1 {
            0.6 * ((e.col - 1) as f64 / (k - 1) as f64 - 0.5)
        } else {
            0.0
        }
}

type ForestChart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogAxis, Categories>>;

/// The forest plot's frame: the mesh with the row `names` (top row first) and the x labels, the
/// noise band around 1 and the line at 1.
fn draw_forest_frame(chart: &mut ForestChart, names: &[String], noise: f64) -> Result<()> {
    let n = names.len();
    let ylabel = |y: &f64| -> String {
        let i = y.floor() as usize;
        n.checked_sub(i + 1)
            .and_then(|k| names.get(k).cloned())
            .unwrap_or_default()
    };
    let xlabel = |x: &f64| {
        let t = format!("{x:.2}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    house_mesh(&mut chart.configure_mesh())
        .y_label_formatter(&ylabel)
        .x_label_formatter(&xlabel)
        .x_desc("normalised ratio to the baseline, log scale (> 1 = worse; ▶ ◀ beyond the edge)")
        .draw()
        .map_err(pe)?;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(1.0 - noise, 0.0), (1.0 + noise, n as f64)],
            RGBColor(225, 225, 225).filled(),
        )))
        .map_err(pe)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1.0, 0.0), (1.0, n as f64)],
            BLACK.stroke_width(1),
        )))
        .map_err(pe)?;
    Ok(())
}

/// Entry `e` at height `y`: its CI (clipped to the `edges`) and its dot — filled when
/// significant —, or beyond the edges a triangle there with the ratio written beside it.
fn draw_forest_entry(
    chart: &mut ForestChart,
    e: &ForestEntry,
    y: f64,
    (edge_lo, edge_hi): (f64, f64),
) -> Result<()> {
    let c = rgb(e.col);
    let clip = |x: f64| x.clamp(edge_lo, edge_hi);
    if plottable(e.lo) && plottable(e.hi) {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(clip(e.lo), y), (clip(e.hi), y)],
                c.stroke_width(2),
            )))
            .map_err(pe)?;
    }
    if !plottable(e.r) {
        return Ok(());
    }
    // Beyond the axis: a triangle at the edge and the ratio written beside it.
    if e.r > edge_hi || e.r < edge_lo {
        let right = e.r > edge_hi;
        // The label sits inside the plot, ending near the edge it points at.
        let x = if right { edge_hi / 1.45 } else { edge_lo };
        let marker = if right { "▶" } else { "◀" };
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{marker} {}×", crate::units::sig(e.r)),
                (x, y),
                ("sans-serif", 12).into_font().color(&c),
            )))
            .map_err(pe)?;
        return Ok(());
    }
    let style = if e.significant {
        c.filled()
    } else {
        WHITE.filled()
    };
    chart
        .draw_series(std::iter::once(Circle::new((e.r, y), 4, style)))
        .map_err(pe)?;
    chart
        .draw_series(std::iter::once(Circle::new((e.r, y), 4, c.stroke_width(2))))
        .map_err(pe)?;
    Ok(())
}

/// A forest plot on a log axis (ratios are multiplicative: 0.5 and 2 are as far from 1), clipped
/// to 1/[`FOREST_CLIP`] … [`FOREST_CLIP`] with the clipped ratios marked at the edge.
pub fn forest(cmp: &Comparison, rows: &[&compare::Row]) -> Result<Figure> {
    let k = cmp.columns.len() - 1;
    let entries = forest_entries(rows);
    let (lo, hi) = forest_range(cmp.noise, &entries);
    let edges = (lo * 1.04, hi / 1.04);
    let n = rows.len();
    let names: Vec<String> = rows
        .iter()
        .map(|r| compare::render::row_name(cmp, r))
        .collect();
    let label_w = names.iter().map(|s| s.chars().count()).max().unwrap_or(10) as u32 * 7 + 16;
    let height = 70 + 22 * n as u32;
    let svg = svg_chart((1260, height), |root| {
        let mut chart = chart_on(root, 10, 36, label_w)
            .build_cartesian_2d(LogAxis(lo, hi), Categories(n))
            .map_err(pe)?;
        draw_forest_frame(&mut chart, &names, cmp.noise)?;
        for e in &entries {
            draw_forest_entry(&mut chart, e, forest_y(e, n, k), edges)?;
        }
        Ok(())
    })?;
    Ok(Figure {
        title: "Ratio to the baseline per metric (filled dot = significant difference, hollow = ~)"
            .into(),
        svg,
        wide: true,
    })
}

/// A `curve` parameter: `[{size_bytes, ns_per_load}, ...]`, sorted by size.
pub fn curve_of(b: &crate::record::BenchmarkResult) -> Option<Vec<(f64, f64)>> {
    let arr = b.fact("curve")?.as_array()?;
    let mut pts: Vec<(f64, f64)> = arr
        .iter()
        .map(|p| {
            Some((
                p.get("size_bytes")?.as_f64()?,
                p.get("ns_per_load")?.as_f64()?,
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    pts.retain(|(s, v)| *s > 0.0 && v.is_finite());
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    (!pts.is_empty()).then_some(pts)
}

/// Latency-vs-size curves (log x), one line per run, for benchmarks with a `curve` parameter.
pub fn curves(runs: &[(String, RunRecord)]) -> Result<Vec<Figure>> {
    let mut ids: Vec<String> = Vec::new();
    for (_, r) in runs {
        for b in &r.benchmarks {
            if curve_of(b).is_some() && !ids.contains(&b.id) {
                ids.push(b.id.clone());
            }
        }
    }
    let mut figs = Vec::new();
    for id in ids {
        let series: Vec<Option<Vec<(f64, f64)>>> = runs
            .iter()
            .map(|(_, r)| r.benchmark(&id).and_then(curve_of))
            .collect();
        let all: Vec<(f64, f64)> = series.iter().flatten().flatten().copied().collect();
        let xmin = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let xmax = all.iter().map(|p| p.0).fold(0.0, f64::max).max(xmin * 2.0);
        // Log y as well: L1 (~1 ns) and RAM (~100 ns) differ by two orders of magnitude, and on
        // a linear axis the cache levels flatten into one line at the bottom.
        let ymin = all
            .iter()
            .map(|p| p.1)
            .filter(|y| *y > 0.0)
            .fold(f64::INFINITY, f64::min);
        let ymax = all.iter().map(|p| p.1).fold(0.0, f64::max);
        let (ylo, yhi) = if ymin.is_finite() && ymax > 0.0 {
            (ymin / 1.5, ymax * 1.5)
        } else {
            (0.1, 1000.0)
        };
        let svg = svg_chart((1260, 400), |root| {
            let mut chart = chart_on(root, 10, 40, 95)
                .build_cartesian_2d(
                    Log2Bytes(xmin.log2() - 0.3, xmax.log2() + 0.3),
                    LogAxis(ylo, yhi),
                )
                .map_err(pe)?;
            let xfmt = |x: &f64| pow2_bytes(*x);
            let yfmt = |y: &f64| crate::units::format_value(*y, Unit::Nanoseconds);
            house_mesh(&mut chart.configure_mesh())
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .x_desc("working-set size (log scale, powers of two)")
                .y_desc("latency per load (log scale)")
                .draw()
                .map_err(pe)?;
            for (i, s) in series.iter().enumerate() {
                let Some(pts) = s else { continue };
                let pts: Vec<(f64, f64)> = pts
                    .iter()
                    .filter(|(_, y)| *y > 0.0)
                    .map(|(x, y)| (x.log2(), *y))
                    .collect();
                line_with_dots(&mut chart, &pts, rgb(i), 2)?;
            }
            Ok(())
        })?;
        figs.push(Figure {
            title: format!("{id}: latency vs working-set size (ns, log-log)"),
            svg,
            wide: true,
        });
    }
    Ok(figs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::BenchmarkResult;

    /// The x and font size of every `<text>` whose content is `label` in `svg`.
    fn texts(svg: &str, label: &str) -> Vec<(f64, String)> {
        svg.match_indices(&format!(">\n{label}\n</text>"))
            .map(|(at, _)| {
                let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
                let attr = |name: &str| {
                    let v = tag.split(&format!(" {name}=\"")).nth(1).unwrap();
                    v[..v.find('"').unwrap()].to_string()
                };
                (attr("x").parse().unwrap(), attr("font-size"))
            })
            .collect()
    }

    /// The legend is drawn beside the plot, so it covers no data (fs/read_latency's legend
    /// covered the points at 2–4 MiB), every key at the house font size; many keys wrap into
    /// columns that stay inside the chart.
    #[test]
    fn the_legend_sits_beside_the_plot_not_over_it() {
        for n in [2usize, 40] {
            let keys: Vec<(String, ShapeStyle)> = (0..n)
                .map(|i| (format!("run{i}: random_block"), rgb(i).stroke_width(2)))
                .collect();
            let mut plot_w = 0;
            let svg = svg_chart((1260, 420), |root| {
                let plot = legend_beside(root, &keys)?;
                plot_w = plot.dim_in_pixel().0;
                Ok(())
            })
            .unwrap();
            assert!((840..1260).contains(&plot_w), "{n} keys: plot {plot_w} px");
            // The size plotters writes for the house font (16 px), as on the axes' labels.
            let house = svg_chart((100, 40), |root| {
                root.draw(&Text::new("x", (0, 0), (FONT, 16))).map_err(pe)
            })
            .unwrap();
            let house = texts(&house, "x")[0].1.clone();
            let drawn: Vec<&(String, ShapeStyle)> = keys
                .iter()
                .filter(|(label, _)| {
                    let t = texts(&svg, label);
                    for (x, size) in &t {
                        assert!(*x > plot_w as f64 && *x < 1260.0 - 100.0, "{label} at {x}");
                        assert_eq!(*size, house, "{label}: the house font size");
                    }
                    t.len() == 1
                })
                .collect();
            if drawn.len() < n {
                // The rest are counted, inside the chart too.
                let more = format!("… {} more", n - drawn.len());
                let t = texts(&svg, &more);
                assert_eq!(t.len(), 1, "{more}");
                assert!(t[0].0 > plot_w as f64 && t[0].0 < 1260.0 - 100.0);
            }
            assert!(drawn.len() >= n.min(10), "{n} keys: {} drawn", drawn.len());
        }
    }

    /// A log axis always has numbers to read: within one decade (fs/read_latency's 40–150 µs),
    /// around 1 (a forest plot's ratios), over several decades, and narrower than one digit.
    #[test]
    fn log_axes_have_readable_ticks_whatever_their_range() {
        assert_eq!(
            log_ticks(1.0, 10_000.0, 10),
            vec![1.0, 10.0, 100.0, 1000.0, 10_000.0]
        );
        assert_eq!(
            log_ticks(40_000.0, 150_000.0, 10),
            vec![
                40_000.0, 50_000.0, 60_000.0, 70_000.0, 80_000.0, 90_000.0, 100_000.0
            ]
        );
        let t = log_ticks(0.45, 2.2, 10);
        assert!(
            t.len() == 3
                && [0.5, 1.0, 2.0]
                    .iter()
                    .zip(&t)
                    .all(|(a, b)| (a - b).abs() < 1e-12),
            "{t:?}"
        );
        let narrow = log_ticks(0.93, 1.08, 10);
        assert!(narrow.len() >= 3 && narrow.contains(&1.0), "{narrow:?}");
        // A forest plot's 0.7–1.5: numbers on both sides of 1.
        let forest = log_ticks(0.7, 1.5, 12);
        assert!(
            forest.iter().any(|t| *t > 1.1) && forest.iter().any(|t| *t < 0.9),
            "{forest:?}"
        );
        assert!(log_ticks(0.8, 1e9, 6).len() <= 6);
        assert!(log_ticks(0.0, 1.0, 6).is_empty());
    }

    #[test]
    fn ticks_are_round_numbers_whatever_the_platform_powers_give() {
        assert_eq!(round_tick(1.000_000_000_000_000_2), 1.0);
        assert_eq!(round_tick(0.950_000_000_000_000_2), 0.95);
        assert_eq!(round_tick(40_000.000_000_000_01), 40_000.0);
    }

    #[test]
    fn power_of_two_sizes_are_named() {
        assert_eq!(pow2_bytes(9.0), "512 B");
        assert_eq!(pow2_bytes(12.0), "4 KiB");
        assert_eq!(pow2_bytes(24.0), "16 MiB");
        assert_eq!(pow2_bytes(31.0), "2 GiB");
    }

    #[test]
    fn curve_param_shape_is_checked() {
        let b = |curve: Option<serde_json::Value>, measured: bool| {
            let mut m = serde_json::Map::new();
            if let Some(c) = curve {
                m.insert("curve".into(), c);
            }
            let (params, measured) = if measured {
                (serde_json::Map::new(), m)
            } else {
                (m, serde_json::Map::new())
            };
            crate::record::BenchmarkResult {
                id: "mem/x".into(),
                suite: "mem".into(),
                title: String::new(),
                params,
                measured,
                metrics: vec![],
                warnings: vec![],
                error: None,
                wall_s: 0.0,
                run_facts: vec![],
                adaptive: None,
            }
        };
        assert!(curve_of(&b(None, true)).is_none());
        let good = serde_json::json!([{"size_bytes": 8192, "ns_per_load": 4.0},
                                      {"size_bytes": 1024, "ns_per_load": 1.0}]);
        // In `measured` (this record format) and in `params` (older records) alike.
        for in_measured in [true, false] {
            assert_eq!(
                curve_of(&b(Some(good.clone()), in_measured)).unwrap(),
                vec![(1024.0, 1.0), (8192.0, 4.0)]
            );
        }
        assert!(curve_of(&b(Some(serde_json::json!([{"size": 1}])), true)).is_none());
    }

    // ---- Pins: the SVG/HTML of every chart kind for a fixed input, byte for byte. ----
    // Golden files in tests/fixtures/report_pins/; `OSGAUGE_BLESS=1 cargo test --lib report`
    // rewrites them after an intended change of a chart (review the diff).

    fn metric(
        name: &str,
        unit: &str,
        better: &str,
        per_run: &[(f64, f64, f64, f64)],
    ) -> serde_json::Value {
        // per run: (mean, p50, p99, max)
        let runs: Vec<serde_json::Value> = per_run
            .iter()
            .map(|&(mean, p50, p99, max)| {
                serde_json::json!({"summary": {"count": 100, "mean": mean, "sd": mean / 10.0,
                    "min": p50 / 2.0, "p50": p50, "p90": (p50 + p99) / 2.0, "p99": p99,
                    "p999": max, "max": max, "cv": 0.1}})
            })
            .collect();
        let c = per_run.iter().map(|r| r.1).fold(0.0, f64::max);
        serde_json::json!({"name": name, "unit": unit, "better": better, "description": "pin",
            "runs": runs, "summary": {"runs": per_run.len(), "center": c,
            "ci95": [c * 0.9, c * 1.1], "p99": null, "min": c * 0.9, "max": c * 1.1, "cv": 0.05}})
    }

    fn bench(
        id: &str,
        params: serde_json::Value,
        metrics: Vec<serde_json::Value>,
        facts: serde_json::Value,
    ) -> BenchmarkResult {
        serde_json::from_value(
            serde_json::json!({"id": id, "suite": id.split('/').next().unwrap(),
            "title": id, "params": params, "metrics": metrics, "warnings": [], "error": null,
            "wall_s": 1.0, "run_facts": facts}),
        )
        .unwrap()
    }

    fn pin_runs() -> Vec<(String, RunRecord)> {
        let base: RunRecord = serde_json::from_str(
            &std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cpu-a.json"),
            )
            .unwrap(),
        )
        .unwrap();
        (0..2)
            .map(|k| {
                let s = 1.0 + 0.5 * k as f64;
                let mut r = base.clone();
                r.benchmarks.clear();
                let lat: Vec<_> = [("seq_byte", 1.0), ("random_block", 3.0)]
                    .iter()
                    .flat_map(|(n, f)| {
                        ["4KiB", "1MiB", "64MiB"].iter().enumerate().map(move |(i, sz)| {
                            let v = f * s * 1000.0 * (i + 1) as f64;
                            metric(&format!("{n}_{sz}"), "ns", "lower", &[(v, v, v * 2.0, v * 3.0)])
                        })
                    })
                    .collect();
                r.benchmarks.push(bench("fs/read_latency", serde_json::json!({}), lat, serde_json::json!([])));
                let cont: Vec<_> = [1, 2, 4, 8]
                    .iter()
                    .map(|t| {
                        let v = s * 5000.0 * *t as f64;
                        metric(&format!("t{t}"), "ns", "lower", &[(v, v, v, v)])
                    })
                    .collect();
                r.benchmarks.push(bench("fs/contention", serde_json::json!({}), cont, serde_json::json!([])));
                for (t, v) in [("1t", 300.0), ("4t", 900.0)] {
                    let ms = vec![
                        metric("mb_per_s", "MB/s", "higher", &[(v * s, v * s, v * s, v * s)]),
                        metric("mb_per_s_buffered", "MB/s", "higher", &[(v * 2.0, v * 2.0, v * 2.0, v * 2.0)]),
                    ];
                    r.benchmarks.push(bench(&format!("fs/seq_{t}"), serde_json::json!({}), ms, serde_json::json!([])));
                }
                let curve: Vec<_> = (6..14)
                    .map(|e| serde_json::json!({"size_bytes": 1u64 << e, "rtt_p50_us": 20.0 * s + e as f64,
                        "rtt_p99_us": 40.0 * s + 3.0 * e as f64}))
                    .collect();
                r.benchmarks.push(bench("net/tcp_rtt_sweep", serde_json::json!({"rtt_curve": curve}), vec![], serde_json::json!([])));
                let series: Vec<_> = (0..50).map(|i| serde_json::json!([i as f64 * 0.1, (i % 7) as f64 * 10.0 * s])).collect();
                let jitter = serde_json::json!({"series": series, "stalls": [{"at_s": 2.0, "excess_us": 900.0, "sender": false},
                    {"at_s": 3.5, "excess_us": 700.0, "sender": true}], "stall_threshold_us": 500.0, "period_us": 1000.0,
                    "dev_p50_us": 12.0, "dev_p99_us": 80.0, "dev_p999_us": 400.0, "dev_max_us": 900.0 * s, "stall_period_s": 1.5});
                r.benchmarks.push(bench("net/udp_stream", serde_json::json!({}), vec![], serde_json::json!([{"jitter": jitter}])));
                let mcurve: Vec<_> = (10..28)
                    .map(|e| serde_json::json!({"size_bytes": 1u64 << e, "ns_per_load": s * (1.0 + e as f64).powf(1.5)}))
                    .collect();
                r.benchmarks.push(bench("mem/latency_random", serde_json::json!({"curve": mcurve}), vec![], serde_json::json!([])));
                for load in ["none", "burn"] {
                    let f = if load == "none" { 1.0 } else { 4.0 };
                    let ms = vec![
                        metric("latency", "ns", "lower", &[(5e4 * f * s, 4e4 * f, 2e5 * f, 9e5 * f), (6e4 * f, 4.5e4 * f * s, 3e5 * f, 1e6 * f)]),
                        serde_json::json!({"name": "deadlines_met", "unit": "%", "better": "higher", "description": "pin",
                            "runs": [{"summary": {"count": 1, "mean": 100.0 - f, "sd": 0.0, "min": 100.0 - f, "p50": 100.0 - f,
                            "p90": 100.0 - f, "p99": 100.0 - f, "p999": 100.0 - f, "max": 100.0 - f, "cv": 0.0}}],
                            "summary": {"runs": 1, "center": 100.0 - f, "ci95": [95.0 - f, 100.0], "p99": null,
                            "min": 100.0 - f, "max": 100.0 - f, "cv": 0.0}}),
                    ];
                    r.benchmarks.push(bench(&format!("interactivity/audio/{load}"), serde_json::json!({}), ms, serde_json::json!([])));
                }
                (format!("sys{k}"), r)
            })
            .collect()
    }

    fn pinned(name: &str, got: &str) {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report_pins")
            .join(name);
        if std::env::var_os("OSGAUGE_BLESS").is_some() {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, got).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            got == want,
            "{name}: the chart output changed (OSGAUGE_BLESS=1 rewrites {} after an intended change)",
            p.display()
        );
    }

    #[test]
    fn charts_render_byte_for_byte_as_pinned() {
        let runs = pin_runs();
        let net = super::super::net::section(&runs).unwrap().into_string();
        assert!(net.matches("<svg").count() == 3, "net figures");
        pinned("net.golden", &net);
        let fs = super::super::fs::section(&runs).unwrap().into_string();
        assert!(fs.matches("<svg").count() == 4, "fs figures");
        pinned("fs.golden", &fs);
        let grouped: String = grouped_suites(&runs)
            .unwrap()
            .into_iter()
            .flat_map(|(s, figs)| {
                figs.into_iter()
                    .map(move |f| format!("{s}\n{}\n{}\n", f.title, f.svg))
            })
            .collect();
        assert!(grouped.matches("<svg").count() >= 4, "grouped figures");
        pinned("grouped.golden", &grouped);
        let curves: String = curves(&runs)
            .unwrap()
            .into_iter()
            .map(|f| format!("{}\n{}\n", f.title, f.svg))
            .collect();
        assert_eq!(curves.matches("<svg").count(), 1, "curve figures");
        pinned("curves.golden", &curves);
    }

    fn entry(row: usize, col: usize, r: f64, lo: f64, hi: f64) -> ForestEntry {
        ForestEntry {
            row,
            col,
            r,
            lo,
            hi,
            significant: false,
        }
    }

    /// The forest plot's axis holds the noise band and every plottable ratio and CI end, padded
    /// by 8 % either way; ratios beyond [`FOREST_CLIP`] set no wider range, and a ratio that is
    /// not plottable (infinite, zero) sets none.
    #[test]
    fn the_forest_range_holds_the_band_and_the_ratios_within_the_clip() {
        let near =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-12 && (a.1 - b.1).abs() < 1e-12;
        assert!(near(forest_range(0.05, &[]), (0.95 / 1.08, 1.05 * 1.08)));
        let es = [
            entry(0, 1, 1.5, 1.2, 1.8),
            entry(1, 1, 0.0, f64::INFINITY, 0.9),
        ];
        assert!(near(forest_range(0.05, &es), (0.9 / 1.08, 1.8 * 1.08)));
        let wild = [
            entry(0, 1, 100.0, 50.0, 200.0),
            entry(1, 1, 0.001, 0.0001, 0.01),
        ];
        let clip = (1.0 / FOREST_CLIP / 1.08, FOREST_CLIP * 1.08);
        assert!(near(forest_range(0.05, &wild), clip));
    }

    /// Each row's runs spread over 60 % of the row around its centre, the first row on top;
    /// a single compared run sits at the centre.
    #[test]
    fn forest_rows_run_top_down_with_their_runs_spread_within() {
        let e = |row, col| entry(row, col, 1.0, 1.0, 1.0);
        assert_eq!(forest_y(&e(0, 1), 3, 1), 2.5);
        assert_eq!(forest_y(&e(2, 1), 3, 1), 0.5);
        assert!((forest_y(&e(0, 1), 3, 3) - 2.2).abs() < 1e-12);
        assert!((forest_y(&e(0, 2), 3, 3) - 2.5).abs() < 1e-12);
        assert!((forest_y(&e(0, 3), 3, 3) - 2.8).abs() < 1e-12);
    }
}
