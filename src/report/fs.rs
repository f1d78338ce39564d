//! The fs suite's figures in the HTML report: read latency vs file size (log-log, as the seed's
//! figures), the contention curve, and disk bandwidth bars per thread count.

use anyhow::{Result, anyhow};
use maud::{Markup, html};
use plotters::prelude::*;

use super::charts::{FONT, bar_x, chart_on, house_mesh, legend_beside, pe, rgb, svg_chart};
use super::{Figure, figures, legend};
use crate::record::{MetricResult, RunRecord};
use crate::units::{Unit, format_value};

/// Median of the per-run medians of a metric, if measured.
fn center(m: &MetricResult) -> Option<f64> {
    m.summary
        .as_ref()
        .map(|s| s.center)
        .filter(|v| v.is_finite())
}

/// `pattern_variant_SIZE` → (series, bytes).
fn parse_latency_name(n: &str) -> Option<(String, u64)> {
    let (series, size) = n.rsplit_once('_')?;
    Some((series.to_string(), crate::units::parse_size(size).ok()?))
}

/// A series: label, colour index, dashed, points (x, y) with x already transformed.
type Series = (String, usize, bool, Vec<(f64, f64)>);

fn log_log(
    series: &[Series],
    x_desc: &str,
    y_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<String> {
    let pts: Vec<(f64, f64)> = series.iter().flat_map(|s| s.3.iter().copied()).collect();
    let xmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let ymin = pts
        .iter()
        .map(|p| p.1)
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let ymax = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    if !xmin.is_finite() || !ymin.is_finite() || ymax <= 0.0 {
        return Err(anyhow!("no points"));
    }
    svg_chart((1260, 420), |root| {
        let style = |c: usize, dashed: bool| rgb(c).stroke_width(if dashed { 1 } else { 2 });
        let keys: Vec<(String, ShapeStyle)> = series
            .iter()
            .map(|(label, c, dashed, _)| (label.clone(), style(*c, *dashed)))
            .collect();
        // The legend beside the plot, so it covers no point.
        let plot = legend_beside(root, &keys)?;
        let mut chart = chart_on(&plot, 10, 40, 95)
            .build_cartesian_2d(
                (xmin - 0.3)..(xmax + 0.3).max(xmin + 1.0),
                super::charts::LogAxis(ymin / 1.5, ymax * 1.5),
            )
            .map_err(pe)?;
        let yfmt = |y: &f64| format_value(*y, Unit::Nanoseconds);
        house_mesh(&mut chart.configure_mesh())
            .x_label_formatter(x_fmt)
            .y_label_formatter(&yfmt)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(pe)?;
        for (_, c, dashed, p) in series {
            chart
                .draw_series(LineSeries::new(p.clone(), style(*c, *dashed)))
                .map_err(pe)?;
            chart
                .draw_series(p.iter().map(|q| Circle::new(*q, 3, rgb(*c).filled())))
                .map_err(pe)?;
        }
        Ok(())
    })
}

/// Label whole powers of two only (the axis may put ticks between them).
fn pow2_label(k: &f64) -> String {
    if (k - k.round()).abs() > 0.01 {
        return String::new();
    }
    crate::units::format_size(2f64.powf(k.round()) as u64)
}

/// The fs section of the report ("" when no run has fs benchmarks).
pub fn section(runs: &[(String, RunRecord)]) -> Result<Markup> {
    let mut figs = Vec::new();
    figs.extend(read_latency_figure(runs));
    figs.extend(contention_figure(runs));
    figs.extend(bandwidth_figures(runs));
    if figs.is_empty() {
        return Ok(html! {});
    }
    let h = html! {
        section {
            "\n"
            h2 { "File system" } "\n"
            (legend(runs))
            (figures(&figs))
        } "\n"
    };
    Ok(h)
}

/// The series of fs/read_latency: per run, one line per access pattern (log2 file size, time
/// per block), random patterns dashed; a single run's lines each get their own colour.
fn read_latency_series(runs: &[(String, RunRecord)]) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for (i, (run, r)) in runs.iter().enumerate() {
        let Some(b) = r.benchmark("fs/read_latency") else {
            continue;
        };
        let mut by: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for m in &b.metrics {
            let (Some((s, bytes)), Some(v)) = (parse_latency_name(&m.name), center(m)) else {
                continue;
            };
            match by.iter_mut().find(|x| x.0 == s) {
                Some(x) => x.1.push(((bytes as f64).log2(), v)),
                None => by.push((s, vec![((bytes as f64).log2(), v)])),
            }
        }
        for (k, (s, mut p)) in by.into_iter().enumerate() {
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            let dashed = s.starts_with("random");
            // One colour per run and series (a single run still shows four distinct lines).
            let c = if runs.len() == 1 { k } else { i };
            series.push((format!("{run}: {s}"), c, dashed, p));
        }
    }
    series
}

/// 1: read latency vs file size (log-log), if any run has fs/read_latency.
fn read_latency_figure(runs: &[(String, RunRecord)]) -> Option<Figure> {
    let series = read_latency_series(runs);
    if series.is_empty() {
        return None;
    }
    let svg = log_log(
        &series,
        "file size (log scale)",
        "time per block (log scale)",
        &pow2_label,
    )
    .ok()?;
    Some(Figure {
        title: "fs/read_latency: time per block vs file size, cache bypassed (log-log; solid \
                = backwards sequential, thin = random)"
            .into(),
        svg,
        wide: true,
    })
}

/// The series of fs/contention: one line per run of (log2 thread count, time per block), from
/// its `t<N>` metrics.
fn contention_series(runs: &[(String, RunRecord)]) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for (i, (run, r)) in runs.iter().enumerate() {
        let Some(b) = r.benchmark("fs/contention") else {
            continue;
        };
        let mut p: Vec<(f64, f64)> = b
            .metrics
            .iter()
            .filter_map(|m| {
                let t: f64 = m.name.strip_prefix('t')?.parse().ok()?;
                Some((t.log2(), center(m)?))
            })
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !p.is_empty() {
            series.push((run.clone(), i, false, p));
        }
    }
    series
}

/// 2: the contention curve: time per block vs thread count, if any run has fs/contention.
fn contention_figure(runs: &[(String, RunRecord)]) -> Option<Figure> {
    let series = contention_series(runs);
    let tfmt = |k: &f64| {
        if (k - k.round()).abs() > 0.01 {
            String::new()
        } else {
            format!("{}", 2f64.powf(k.round()) as u64)
        }
    };
    if series.is_empty() {
        return None;
    }
    let svg = log_log(
        &series,
        "threads, each reading its own file (log scale)",
        "time per block (log scale)",
        &tfmt,
    )
    .ok()?;
    Some(Figure {
        title: "fs/contention: time per block vs thread count, cache bypassed".into(),
        svg,
        wide: true,
    })
}

/// 3: bandwidth bars of the fs/seq_* benchmarks, cache bypassed and buffered: one chart for
/// each that has a value.
fn bandwidth_figures(runs: &[(String, RunRecord)]) -> Vec<Figure> {
    let mut figs = Vec::new();
    for (metric, what) in [
        ("mb_per_s", "cache bypassed"),
        ("mb_per_s_buffered", "buffered"),
    ] {
        let mut cats: Vec<String> = Vec::new();
        for (_, r) in runs {
            for b in &r.benchmarks {
                if let Some(rest) = b.id.strip_prefix("fs/seq_")
                    && !cats.iter().any(|c| c == rest)
                {
                    cats.push(rest.to_string());
                }
            }
        }
        let values: Vec<Vec<Option<f64>>> = cats
            .iter()
            .map(|c| {
                runs.iter()
                    .map(|(_, r)| {
                        let b = r.benchmark(&format!("fs/seq_{c}"))?;
                        center(b.metrics.iter().find(|m| m.name == metric)?)
                    })
                    .collect()
            })
            .collect();
        if values.iter().flatten().any(|v| v.is_some())
            && let Ok(svg) = bars(&cats, &values, runs.len())
        {
            figs.push(Figure {
                title: format!(
                    "Disk bandwidth per thread count, {what} (MB/s = 10^6 B/s; write time \
                     includes fsync and close)"
                ),
                svg,
                wide: false,
            });
        }
    }
    figs
}

fn bars(cats: &[String], values: &[Vec<Option<f64>>], nruns: usize) -> Result<String> {
    let max = values
        .iter()
        .flatten()
        .flatten()
        .fold(0.0_f64, |a, b| a.max(*b));
    let top = if max > 0.0 { max * 1.12 } else { 1.0 };
    let n = cats.len();
    svg_chart((640, 300), |root| {
        let mut chart = chart_on(root, 8, 34, 56)
            .build_cartesian_2d(0.0..n as f64, 0.0..top)
            .map_err(pe)?;
        let label = |x: &f64| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.01 {
                cats.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        house_mesh(&mut chart.configure_mesh())
            .disable_x_mesh()
            .x_labels(2 * n + 1)
            .y_desc("MB/s")
            .x_label_formatter(&label)
            .label_style((FONT, 14))
            .light_line_style(RGBColor(242, 242, 242))
            .draw()
            .map_err(pe)?;
        for (c, row) in values.iter().enumerate() {
            for (i, v) in row.iter().enumerate() {
                let Some(v) = v else { continue };
                let (x0, x1) = bar_x(c, i, nruns);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, *v)],
                        rgb(i).filled(),
                    )))
                    .map_err(pe)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_metric_names_parse_to_series_and_size() {
        assert_eq!(
            parse_latency_name("seq_byte_32KiB"),
            Some(("seq_byte".into(), 32 << 10))
        );
        assert_eq!(
            parse_latency_name("random_block_64MiB"),
            Some(("random_block".into(), 64 << 20))
        );
        assert_eq!(parse_latency_name("nonsense"), None);
    }
}
