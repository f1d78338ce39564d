//! The policy study's charts (ids `policy/<work>/<policy>/<procs>`), as in seed 004 but with 95 %
//! CI whiskers: per workload, stacked user + system CPU time beside the makespan (wall), the
//! voluntary and involuntary context switches side by side, and the turnaround distribution.

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use super::Figure;
use super::charts::Categories;
use crate::record::{BenchmarkResult, RunRecord};
use crate::stats;
use maud::{Markup, html};

// The house font and sizes (`charts::house_mesh`), as on every other chart.
use super::charts::FONT;

fn pe<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a policy chart: {e:?}")
}

/// Median of per-run medians and its CI, of metric `name`.
fn center(b: &BenchmarkResult, name: &str) -> Option<(f64, Option<[f64; 2]>)> {
    let m = b.metrics.iter().find(|m| m.name == name)?;
    let s = m.summary.as_ref()?;
    Some((s.center, Some(s.ci95)))
}

/// Median over runs of a per-run statistic of metric `name`.
fn per_run(b: &BenchmarkResult, name: &str, f: fn(&crate::stats::Summary) -> f64) -> Option<f64> {
    let m = b.metrics.iter().find(|m| m.name == name)?;
    let v: Vec<f64> = m.runs.iter().map(|r| f(&r.summary)).collect();
    (!v.is_empty()).then(|| stats::median(&v))
}

/// A metric's median and CI per category (`None`: not measured there).
type PerCategory = Vec<Option<(f64, Option<[f64; 2]>)>>;

type Series<'a> = Vec<(&'static str, RGBColor, PerCategory)>;

/// Bars per category: `stacked` series stack, the others stand beside the stack.
fn bars(
    cats: &[String],
    stacked: &Series,
    beside: &Series,
    div: f64,
    axis: &str,
) -> Result<String> {
    let n = cats.len();
    let mut top: f64 = 0.0;
    for c in 0..n {
        let mut s = 0.0;
        for (_, _, v) in stacked {
            if let Some((x, ci)) = v[c] {
                s += x;
                top = top.max(s + ci.map_or(0.0, |c| c[1] - x));
            }
        }
        top = top.max(s);
        for (_, _, v) in beside {
            if let Some((x, ci)) = v[c] {
                top = top.max(ci.map_or(x, |c| c[1].max(x)));
            }
        }
    }
    let top = if top > 0.0 { top / div * 1.12 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(pe)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(60)
            .build_cartesian_2d(Categories(n), 0.0..top)
            .map_err(pe)?;
        let label = |x: &f64| cats.get(x.floor() as usize).cloned().unwrap_or_default();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(axis)
            .x_label_formatter(&label)
            .light_line_style(RGBColor(242, 242, 242))
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(pe)?;
        let groups = usize::from(!stacked.is_empty()) + beside.len();
        let w = 0.8 / groups.max(1) as f64;
        let whisker = |chart: &mut ChartContext<_, _>, xm: f64, lo: f64, hi: f64| -> Result<()> {
            if lo.is_finite() && hi.is_finite() {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(xm, lo / div), (xm, hi / div)],
                        BLACK.stroke_width(1),
                    )))
                    .map_err(pe)?;
            }
            Ok(())
        };
        for c in 0..n {
            let mut g = 0;
            if !stacked.is_empty() {
                let x0 = c as f64 + 0.1;
                let x1 = x0 + w * 0.92;
                let mut base = 0.0;
                for (_, col, v) in stacked {
                    let Some((x, ci)) = v[c] else { continue };
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x0, base / div), (x1, (base + x) / div)],
                            col.filled(),
                        )))
                        .map_err(pe)?;
                    if let Some([lo, hi]) = ci {
                        whisker(&mut chart, (x0 + x1) / 2.0, base + lo, base + hi)?;
                    }
                    base += x;
                }
                g = 1;
            }
            for (i, (_, col, v)) in beside.iter().enumerate() {
                let Some((x, ci)) = v[c] else { continue };
                let x0 = c as f64 + 0.1 + w * (g + i) as f64;
                let x1 = x0 + w * 0.92;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, x / div)],
                        col.filled(),
                    )))
                    .map_err(pe)?;
                if let Some([lo, hi]) = ci {
                    whisker(&mut chart, (x0 + x1) / 2.0, lo, hi)?;
                }
            }
        }
        root.present().map_err(pe)?;
    }
    Ok(svg)
}

/// Turnaround distribution per category: min–max line, p50–p90 box, p99 mark (medians over runs).
fn distribution(cats: &[String], d: &[Option<[f64; 5]>]) -> Result<String> {
    let max = d.iter().flatten().map(|x| x[4]).fold(0.0_f64, f64::max);
    let (div, axis) = if max >= 1e9 {
        (1e9, "s")
    } else if max >= 1e6 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    };
    let n = cats.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(pe)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(60)
            .build_cartesian_2d(Categories(n), 0.0..(max / div * 1.08).max(1e-9))
            .map_err(pe)?;
        let label = |x: &f64| cats.get(x.floor() as usize).cloned().unwrap_or_default();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(format!("turnaround ({axis})"))
            .x_label_formatter(&label)
            .light_line_style(RGBColor(242, 242, 242))
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(pe)?;
        let col = RGBColor(60, 110, 180);
        for (c, v) in d.iter().enumerate() {
            let Some([min, p50, p90, p99, mx]) = v else {
                continue;
            };
            let xm = c as f64 + 0.5;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(xm, min / div), (xm, mx / div)],
                    col.stroke_width(1),
                )))
                .map_err(pe)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(xm - 0.2, p50 / div), (xm + 0.2, p90 / div)],
                    col.mix(0.5).filled(),
                )))
                .map_err(pe)?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(xm - 0.25, p99 / div), (xm + 0.25, p99 / div)],
                    RED.stroke_width(2),
                )))
                .map_err(pe)?;
        }
        root.present().map_err(pe)?;
    }
    Ok(svg)
}

/// The policy section of the report ("" when no run has policy cells).
pub fn section(runs: &[(String, RunRecord)]) -> Result<Markup> {
    let mut figs = Vec::new();
    for (name, r) in runs {
        let cells = policy_cells(r);
        for w in works(&cells) {
            let mine: Vec<&BenchmarkResult> = cells
                .iter()
                .filter(|b| b.id.split('/').nth(1) == Some(w))
                .copied()
                .collect();
            figs.extend(work_figures(name, w, &mine)?);
        }
    }
    // Which policy differences are significant (tables and grids), after the charts.
    let sig = super::policy_sig::section(runs);
    if figs.is_empty() {
        return Ok(sig);
    }
    Ok(html! {
        section {
            "\n"
            h2 { "Scheduling-policy study" } "\n"
            p.note { "Per workload: categories are policy/processes. Runs are the unit: each bar is the median over runs, whiskers its 95 % bootstrap CI; the section below tests which differences between policies are significant (Mann-Whitney, Benjamini-Hochberg)." } "\n"
            (super::figures(&figs))
        } "\n"
        (sig)
    })
}

/// The policy cells of run `r` that ran: ids `policy/<work>/<policy>/<procs>` without an error.
fn policy_cells(r: &RunRecord) -> Vec<&BenchmarkResult> {
    r.benchmarks
        .iter()
        .filter(|b| b.suite == "policy" && b.id.split('/').count() == 4 && b.error.is_none())
        .collect()
}

/// The workloads of `cells` (the id's second part), in order of first appearance.
fn works<'a>(cells: &[&'a BenchmarkResult]) -> Vec<&'a str> {
    let mut works: Vec<&str> = Vec::new();
    for b in cells {
        let w = b.id.split('/').nth(1).unwrap_or("");
        if !works.contains(&w) {
            works.push(w);
        }
    }
    works
}

/// The time unit for times up to `max_ns` nanoseconds: its divisor and name.
fn time_scale(max_ns: f64) -> (f64, &'static str) {
    if max_ns >= 1e9 {
        (1e9, "s")
    } else if max_ns >= 1e6 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    }
}

/// Run `name`'s charts of workload `w` from its cells `mine` (categories policy/processes):
/// CPU time and makespan, context switches where measured, the turnaround distribution where
/// measured.
fn work_figures(name: &str, w: &str, mine: &[&BenchmarkResult]) -> Result<Vec<Figure>> {
    let cats: Vec<String> = mine
        .iter()
        .map(|b| b.id.splitn(3, '/').nth(2).unwrap_or("").to_string())
        .collect();
    let get = |m: &str| mine.iter().map(|b| center(b, m)).collect::<Vec<_>>();
    let wide = cats.len() > 4;
    let mut figs = Vec::new();
    let max_t = mine
        .iter()
        .filter_map(|b| center(b, "makespan").map(|x| x.0))
        .chain(
            mine.iter()
                .filter_map(|b| Some(center(b, "user")?.0 + center(b, "sys")?.0)),
        )
        .fold(0.0_f64, f64::max);
    let (div, unit) = time_scale(max_t);
    let stacked: Series = vec![
        ("user", RGBColor(70, 130, 180), get("user")),
        ("sys", RGBColor(230, 140, 50), get("sys")),
    ];
    let beside: Series = vec![("wall", RGBColor(120, 120, 120), get("makespan"))];
    figs.push(Figure {
        title: format!(
            "{name} · {w}: time per policy/processes — stacked user (blue) + system (orange) CPU time of all processes, wall = makespan (grey); medians, 95 % CI whiskers"
        ),
        svg: bars(&cats, &stacked, &beside, div, unit)?,
        wide,
    });
    figs.extend(switch_figure(name, w, &cats, &get)?);
    figs.extend(turnaround_figure(name, w, &cats, mine)?);
    Ok(figs)
}

/// The context-switch chart: voluntary and involuntary side by side, or the total where the OS
/// gives no split (macOS, Windows); none when not measured. `get` gives a metric per category.
fn switch_figure(
    name: &str,
    w: &str,
    cats: &[String],
    get: &dyn Fn(&str) -> PerCategory,
) -> Result<Option<Figure>> {
    let (beside, what): (Series, &str) = if get("voluntary").iter().any(Option::is_some) {
        (
            vec![
                ("involuntary", RGBColor(200, 70, 70), get("involuntary")),
                ("voluntary", RGBColor(70, 160, 90), get("voluntary")),
            ],
            "involuntary (red), voluntary (green)",
        )
    } else if get("switches").iter().any(Option::is_some) {
        // macOS and Windows give a total only (the split is unsupported there).
        (
            vec![("switches", RGBColor(200, 70, 70), get("switches"))],
            "total (this OS gives no voluntary/involuntary split)",
        )
    } else {
        return Ok(None);
    };
    Ok(Some(Figure {
        title: format!(
            "{name} · {w}: context switches of all processes — {what}; medians, 95 % CI whiskers"
        ),
        svg: bars(cats, &Vec::new(), &beside, 1.0, "switches")?,
        wide: cats.len() > 4,
    }))
}

/// The turnaround distribution per process (min, p50, p90, p99, max: medians over runs) of each
/// cell in `mine`; none when no cell has one.
fn turnaround_figure(
    name: &str,
    w: &str,
    cats: &[String],
    mine: &[&BenchmarkResult],
) -> Result<Option<Figure>> {
    let dist: Vec<Option<[f64; 5]>> = mine
        .iter()
        .map(|b| {
            Some([
                per_run(b, "turnaround", |s| s.min)?,
                per_run(b, "turnaround", |s| s.p50)?,
                per_run(b, "turnaround", |s| s.p90)?,
                per_run(b, "turnaround", |s| s.p99)?,
                per_run(b, "turnaround", |s| s.max)?,
            ])
        })
        .collect();
    if !dist.iter().any(Option::is_some) {
        return Ok(None);
    }
    Ok(Some(Figure {
        title: format!(
            "{name} · {w}: turnaround distribution per process — line min…max, box p50…p90, red p99 (medians over runs)"
        ),
        svg: distribution(cats, &dist)?,
        wide: cats.len() > 4,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time axis takes the largest unit the longest time reaches: s from 1 s, ms from 1 ms,
    /// µs below.
    #[test]
    fn the_time_unit_is_the_largest_the_longest_time_reaches() {
        assert_eq!(time_scale(2.5e9), (1e9, "s"));
        assert_eq!(time_scale(1e9), (1e9, "s"));
        assert_eq!(time_scale(999e6), (1e6, "ms"));
        assert_eq!(time_scale(1e6), (1e6, "ms"));
        assert_eq!(time_scale(5e5), (1e3, "µs"));
        assert_eq!(time_scale(0.0), (1e3, "µs"));
    }
}
