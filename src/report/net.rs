//! The network section of the HTML report: TCP round trip vs message size (`net/tcp_rtt_sweep`'s
//! `rtt_curve` param, one line per run record), and per record the UDP stream's inter-arrival
//! deviation over time with stalls marked (`net/udp_stream`'s per-run `jitter` fact; the run with
//! the largest deviation is drawn) and its distribution in the caption.

use anyhow::Result;
use maud::{Markup, html};
use plotters::prelude::*;
use serde_json::Value;

use super::Figure;
use super::charts::{chart_on, house_mesh, line_with_dots, pe, rgb, svg_chart};
use crate::record::RunRecord;

fn size_label(log2: f64) -> String {
    let b = 2f64.powf(log2).round() as u64;
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// (size bytes, p50 µs, p99 µs) of a record's round-trip sweep.
pub fn rtt_curve(r: &RunRecord) -> Option<Vec<(f64, f64, Option<f64>)>> {
    let b = r.benchmark("net/tcp_rtt_sweep")?;
    let pts: Vec<_> = b
        .fact("rtt_curve")?
        .as_array()?
        .iter()
        .filter_map(|p| {
            Some((
                p.get("size_bytes")?.as_f64()?,
                p.get("rtt_p50_us")?.as_f64()?,
                p.get("rtt_p99_us").and_then(Value::as_f64),
            ))
        })
        .filter(|p| p.0 > 0.0 && p.1 > 0.0)
        .collect();
    (!pts.is_empty()).then_some(pts)
}

/// The `jitter` fact of the run with the largest deviation.
pub fn worst_jitter(r: &RunRecord) -> Option<&Value> {
    let b = r.benchmark("net/udp_stream")?;
    b.run_facts
        .iter()
        .filter_map(|f| f.get("jitter"))
        .filter(|j| j.get("series").and_then(Value::as_array).is_some())
        .max_by(|a, b| {
            let m = |v: &Value| v.get("dev_max_us").and_then(Value::as_f64).unwrap_or(0.0);
            m(a).total_cmp(&m(b))
        })
}

fn rtt_figure(runs: &[(String, RunRecord)]) -> Result<Option<Figure>> {
    let curves: Vec<_> = runs.iter().map(|(_, r)| rtt_curve(r)).collect();
    let all: Vec<(f64, f64)> = curves
        .iter()
        .flatten()
        .flatten()
        .flat_map(|p| [Some((p.0, p.1)), p.2.map(|y| (p.0, y))])
        .flatten()
        .filter(|p| p.1 > 0.0)
        .collect();
    if all.is_empty() {
        return Ok(None);
    }
    let xmin = all.iter().map(|p| p.0.log2()).fold(f64::INFINITY, f64::min);
    let xmax = all
        .iter()
        .map(|p| p.0.log2())
        .fold(f64::NEG_INFINITY, f64::max);
    let ymin = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let ymax = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let svg = svg_chart((1260, 400), |root| {
        let mut chart = chart_on(root, 10, 40, 80)
            .build_cartesian_2d(
                (xmin - 0.5)..(xmax + 0.5),
                super::charts::LogAxis(ymin / 1.5, ymax * 1.5),
            )
            .map_err(pe)?;
        house_mesh(&mut chart.configure_mesh())
            .x_label_formatter(&|x| size_label(x.round()))
            .x_labels(((xmax - xmin) as usize + 2).min(24))
            .y_label_formatter(&|y| format!("{} µs", crate::units::sig(*y)))
            .x_desc("message size (log scale)")
            .y_desc("round trip (log scale)")
            .draw()
            .map_err(pe)?;
        for (i, c) in curves.iter().enumerate() {
            let Some(c) = c else { continue };
            let p50: Vec<(f64, f64)> = c.iter().map(|p| (p.0.log2(), p.1)).collect();
            line_with_dots(&mut chart, &p50, rgb(i), 2)?;
            let p99: Vec<(f64, f64)> = c
                .iter()
                .filter_map(|p| p.2.filter(|y| *y > 0.0).map(|y| (p.0.log2(), y)))
                .collect();
            chart
                .draw_series(LineSeries::new(
                    p99.clone(),
                    rgb(i).mix(0.5).stroke_width(1),
                ))
                .map_err(pe)?;
            chart
                .draw_series(p99.iter().map(|p| Cross::new(*p, 4, rgb(i).mix(0.7))))
                .map_err(pe)?;
        }
        Ok(())
    })?;
    Ok(Some(Figure {
        title: "net/tcp_rtt_sweep: TCP round trip vs message size — p50 (solid, dots) and p99 \
                (thin, crosses), median over runs, µs, log-log"
            .into(),
        svg,
        wide: true,
    }))
}

fn jitter_figure(i: usize, name: &str, j: &Value) -> Result<Figure> {
    let f = |k: &str| j.get(k).and_then(Value::as_f64);
    let series: Vec<(f64, f64)> = j["series"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    let stalls: Vec<(f64, f64, bool)> = j["stalls"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    Some((
                        s.get("at_s")?.as_f64()?,
                        s.get("excess_us")?.as_f64()?,
                        s.get("sender")?.as_bool()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let threshold = f("stall_threshold_us").unwrap_or(0.0);
    let tmax = series
        .iter()
        .map(|p| p.0)
        .chain(stalls.iter().map(|s| s.0))
        .fold(0.0, f64::max)
        .max(1e-3);
    let ymax = series
        .iter()
        .map(|p| p.1)
        .chain(stalls.iter().map(|s| s.1))
        .fold(threshold, f64::max)
        .max(1.0);
    let svg = svg_chart((1260, 360), |root| {
        let mut chart = chart_on(root, 10, 40, 80)
            .build_cartesian_2d(0.0..tmax * 1.02, 0.0..ymax * 1.1)
            .map_err(pe)?;
        house_mesh(&mut chart.configure_mesh())
            .x_desc("time since the first datagram (s)")
            .y_desc("largest |inter-arrival − period| per bin (µs)")
            .draw()
            .map_err(pe)?;
        chart
            .draw_series(LineSeries::new(series, rgb(i).stroke_width(1)))
            .map_err(pe)?;
        if threshold > 0.0 {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, threshold), (tmax * 1.02, threshold)],
                    RGBColor(150, 150, 150).stroke_width(1),
                ))
                .map_err(pe)?;
        }
        chart
            .draw_series(stalls.iter().map(|s| {
                let c = if s.2 {
                    RGBColor(120, 120, 120)
                } else {
                    RGBColor(213, 0, 0)
                };
                TriangleMarker::new((s.0, s.1), 7, c.filled())
            }))
            .map_err(pe)?;
        Ok(())
    })?;
    let period = f("stall_period_s")
        .map(|p| format!("; stalls recur every {} s", crate::units::sig(p)))
        .unwrap_or_default();
    Ok(Figure {
        title: format!(
            "{name}: net/udp_stream inter-arrival deviation over time (the run with the largest \
             deviation; period {} µs). Distribution: p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs. \
             Stalls (gaps over {} µs beyond the period): red = path/receiver, grey = the sender \
             was late{period}; grey line = stall threshold.",
            crate::units::sig(f("period_us").unwrap_or(f64::NAN)),
            crate::units::sig(f("dev_p50_us").unwrap_or(f64::NAN)),
            crate::units::sig(f("dev_p99_us").unwrap_or(f64::NAN)),
            crate::units::sig(f("dev_p999_us").unwrap_or(f64::NAN)),
            crate::units::sig(f("dev_max_us").unwrap_or(f64::NAN)),
            crate::units::sig(threshold),
        ),
        svg,
        wide: true,
    })
}

/// The report's network section (empty when no record has network results).
pub fn section(runs: &[(String, RunRecord)]) -> Result<Markup> {
    let mut figs = Vec::new();
    if let Some(f) = rtt_figure(runs)? {
        figs.push(f);
    }
    for (i, (name, r)) in runs.iter().enumerate() {
        if let Some(j) = worst_jitter(r) {
            figs.push(jitter_figure(i, name, j)?);
        }
    }
    if figs.is_empty() {
        return Ok(html! {});
    }
    Ok(html! {
        section {
            "\n"
            h2 { "Network: round trip vs size, UDP jitter" } "\n"
            (super::legend(runs))
            (super::figures(&figs))
        } "\n"
    })
}
