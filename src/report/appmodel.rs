//! HTML page of an application-model analysis (`osgauge model … --export-html`): per run, a
//! utilisation bar per resource at the target rate and the capacity-vs-rate lines U_r(X) with the
//! ceiling and the target marked; then every table of the terminal view. And the page of
//! `osgauge model validate … --export-html`: the steps, the CPU chart and the verdict.

use anyhow::Result;

use super::esc;
use crate::appmodel::Analysis;
use crate::appmodel::calc::{Prediction, fmt};
use crate::appmodel::render::sections;
use crate::appmodel::validate::report::Validation;

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn bars(p: &Prediction, ceiling: f64) -> String {
    let w = 520.0;
    let row = 26.0;
    let left = 150.0;
    let h = row * p.resources.len() as f64 + 30.0;
    let scale = |u: f64| left + (u.min(1.5) / 1.5) * (w - left - 60.0);
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' role='img' aria-label='utilisation at the target rate'>"
    );
    for (i, r) in p.resources.iter().enumerate() {
        let y = 10.0 + i as f64 * row;
        s.push_str(&format!(
            "<text x='{}' y='{}' font-size='12' text-anchor='end'>{}</text>",
            left - 6.0,
            y + 14.0,
            esc(r.title)
        ));
        match r.util_at_target {
            Some(u) => {
                let color = if u > 1.0 {
                    "#d62728"
                } else if u > ceiling {
                    "#ff7f0e"
                } else {
                    "#2ca02c"
                };
                s.push_str(&format!(
                    "<rect x='{left}' y='{y}' width='{:.1}' height='18' fill='{color}'/><text x='{:.1}' y='{}' font-size='12'>{:.1} %</text>",
                    scale(u) - left,
                    scale(u) + 4.0,
                    y + 14.0,
                    u * 100.0
                ));
                if let Some(sc) = r.s_contended {
                    let uc = r.background + p.target_rate * sc;
                    s.push_str(&format!(
                        "<rect x='{left}' y='{:.1}' width='{:.1}' height='4' fill='#555'><title>every core copying at once: {:.1} %</title></rect>",
                        y + 18.0,
                        scale(uc) - left,
                        uc * 100.0
                    ));
                }
            }
            None => s.push_str(&format!(
                "<text x='{left}' y='{}' font-size='12' fill='#888'>missing input</text>",
                y + 14.0
            )),
        }
    }
    for (u, label) in [(ceiling, "ceiling"), (1.0, "100 %")] {
        let x = scale(u);
        s.push_str(&format!(
            "<line x1='{x:.1}' y1='4' x2='{x:.1}' y2='{}' stroke='#444' stroke-dasharray='4 3'/><text x='{x:.1}' y='{}' font-size='10' text-anchor='middle'>{label}</text>",
            h - 16.0,
            h - 4.0
        ));
    }
    s.push_str("</svg>");
    s
}

fn lines(p: &Prediction, ceiling: f64) -> String {
    // (colour, title, F, S, dashed): one line per resource with a service demand; the CPU's
    // contended end (every core moving memory at once) dashed in the CPU's colour, drawn last so
    // it shows over a line it meets.
    let with_s: Vec<_> = p.resources.iter().filter(|r| r.s.is_some()).collect();
    let mut series: Vec<(&str, &str, f64, f64, bool)> = Vec::new();
    for (k, res) in with_s.iter().enumerate() {
        let c = COLORS[k % COLORS.len()];
        series.push((c, res.title, res.background, res.s.unwrap_or(0.0), false));
    }
    for (k, res) in with_s.iter().enumerate() {
        if let Some(sc) = res.s_contended.filter(|x| *x > 0.0) {
            series.push((
                COLORS[k % COLORS.len()],
                res.title,
                res.background,
                sc,
                true,
            ));
        }
    }
    // The plot is 300 high; the legend goes below it, a row per line.
    let (w, plot_h, l, b, t, r) = (560.0, 300.0, 50.0, 40.0, 10.0, 130.0);
    let h = plot_h + 16.0 * series.len() as f64 + 4.0;
    let xmax = p.x_max.unwrap_or(p.target_rate).max(p.target_rate) * 1.25;
    let px = |x: f64| l + x / xmax * (w - l - r);
    let py = |u: f64| plot_h - b - (u.min(1.2) / 1.2) * (plot_h - b - t);
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' role='img' aria-label='utilisation versus rate'>"
    );
    s.push_str(&format!(
        "<line x1='{l}' y1='{}' x2='{}' y2='{}' stroke='#000'/><line x1='{l}' y1='{t}' x2='{l}' y2='{}' stroke='#000'/>",
        plot_h - b, w - r, plot_h - b, plot_h - b
    ));
    for k in 0..=4 {
        let x = xmax * k as f64 / 4.0;
        s.push_str(&format!(
            "<text x='{:.1}' y='{}' font-size='10' text-anchor='middle'>{}</text>",
            px(x),
            plot_h - b + 14.0,
            fmt(x)
        ));
    }
    for u in [0.0, 0.5, 1.0] {
        s.push_str(&format!(
            "<text x='{}' y='{:.1}' font-size='10' text-anchor='end'>{:.0} %</text>",
            l - 4.0,
            py(u) + 3.0,
            u * 100.0
        ));
    }
    s.push_str(&format!(
        "<text x='{:.1}' y='{}' font-size='11' text-anchor='middle'>rate ({}/s)</text>",
        (l + w - r) / 2.0,
        plot_h - 6.0,
        esc(&p.unit)
    ));
    for (u, label) in [(ceiling, "ceiling"), (1.0, "capacity")] {
        s.push_str(&format!(
            "<line x1='{l}' y1='{y:.1}' x2='{}' y2='{y:.1}' stroke='#444' stroke-dasharray='4 3'/><text x='{}' y='{:.1}' font-size='10'>{label}</text>",
            w - r, w - r + 4.0, py(u) + 3.0, y = py(u)
        ));
    }
    let xt = px(p.target_rate);
    s.push_str(&format!(
        "<line x1='{xt:.1}' y1='{t}' x2='{xt:.1}' y2='{}' stroke='#888' stroke-dasharray='2 2'/><text x='{xt:.1}' y='{}' font-size='10' text-anchor='middle'>target</text>",
        plot_h - b, t + 8.0
    ));
    for (k, (c, title, bg, sv, dashed)) in series.iter().enumerate() {
        let x_end = if *sv > 0.0 {
            ((1.2 - bg) / sv).min(xmax)
        } else {
            xmax
        };
        let dash = if *dashed {
            " stroke-dasharray='6 3'"
        } else {
            ""
        };
        let ly = plot_h + 12.0 + 16.0 * k as f64;
        s.push_str(&format!(
            "<line x1='{:.1}' y1='{:.1}' x2='{:.1}' y2='{:.1}' stroke='{c}' stroke-width='2'{dash}/>\
             <line x1='{l}' y1='{:.1}' x2='{}' y2='{:.1}' stroke='{c}' stroke-width='2'{dash}/><text x='{}' y='{:.1}' font-size='11' fill='{c}'>{}{}</text>",
            px(0.0), py(*bg), px(x_end), py(bg + x_end * sv),
            ly - 4.0, l + 24.0, ly - 4.0, l + 30.0, ly,
            esc(title),
            if *dashed { " with every core copying at once" } else { "" }
        ));
    }
    s.push_str("</svg>");
    s
}

/// The whole page.
pub fn page(a: &Analysis) -> String {
    let mut h = String::from("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>");
    h.push_str(&format!(
        "<title>osgauge model: {}</title>",
        esc(&a.profile.name)
    ));
    h.push_str("<style>body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left}.note{font-size:13px;margin:2px 0}.warn{color:#b00}</style></head><body>");
    h.push_str(&format!(
        "<h1>Application model: {}</h1>",
        esc(&a.profile.name)
    ));
    if let Some(s) = &a.published {
        h.push_str(&format!(
            "<p class='warn'><b>Published figures, not measured by osgauge:</b> {} — {}</p>",
            esc(&s.title),
            esc(&s.note)
        ));
    }
    for p in &a.predictions {
        h.push_str(&format!("<h2>{} ({})</h2>", esc(&p.name), esc(&p.os)));
        if p.upper_bound {
            h.push_str("<p class='warn'>Inputs missing: the maximum rate is an upper bound.");
            if let Some(cmd) = &p.to_measure {
                h.push_str(&format!(
                    " To measure every input this profile reads: <code>{}</code>, then \
                     <code>{}</code>.",
                    esc(cmd),
                    esc(&crate::appmodel::inputs::model_command(&a.profile.file))
                ));
            }
            h.push_str("</p>");
        }
        h.push_str(&format!(
            "<p>Utilisation at the target rate ({} {}/s):</p>{}",
            fmt(p.target_rate),
            esc(&p.unit),
            bars(p, a.profile.ceiling)
        ));
        h.push_str("<p>Utilisation of each resource versus rate (capacity-vs-rate lines):</p>");
        h.push_str(&lines(p, a.profile.ceiling));
    }
    for t in sections(a) {
        h.push_str(&format!("<h3>{}</h3><table><tr>", esc(&t.title)));
        for c in &t.header {
            h.push_str(&format!("<th>{}</th>", esc(c)));
        }
        h.push_str("</tr>");
        for r in &t.rows {
            h.push_str("<tr>");
            for c in r {
                h.push_str(&format!("<td>{}</td>", esc(c)));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
        for n in &t.notes {
            h.push_str(&format!("<p class='note'>{}</p>", esc(n)));
        }
    }
    h.push_str("</body></html>\n");
    h
}

/// `model validate`'s HTML page: the prediction from the probes, every step, the CPU chart and
/// the verdict, with the exit status the command gave it.
pub fn validate_page(v: &Validation, exit_code: i32) -> String {
    let mut rows = String::new();
    for s in &v.steps {
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{:.1}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&s.offered_text()),
            s.duration_s,
            s.achieved,
            s.cpu_measured_pct,
            s.cpu_pacing_pct.map_or("—".into(), |x| format!("{x:.1}")),
            esc(&s.cpu_predicted_text()),
            s.cpu_agrees.map_or("—", |b| if b { "yes" } else { "NO" }),
            esc(&s.achieved_mb_s_text())
        ));
    }
    let mut res = String::new();
    if let Some(pr) = v.analysis.predictions.first() {
        for rc in &pr.resources {
            res.push_str(&format!(
                "<tr><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td></tr>\n",
                esc(rc.title),
                fmt(rc.demand),
                esc(rc.unit),
                rc.capacity
                    .map_or("—".into(), |c| esc(&format!("{} {}/s", fmt(c), rc.unit))),
                rc.x_sat.map_or("—".into(), |x| format!("{x:.2}"))
            ));
        }
    }
    let notes: String = v
        .notes
        .iter()
        .map(|n| format!("<li>{}</li>", esc(n)))
        .collect();
    let vd = &v.verdict;
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>model validate: {name}</title>\n<style>body{{font-family:sans-serif;max-width:70em;margin:auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}</style></head><body>\n<h1>model validate: {name}</h1>\n<p>Working set per ring: {ring} MiB (LLC {llc} MiB: {llcs}). Other work during the idle baseline: {bg:.2} CPUs{shared}.</p>\n<ul>{notes}</ul>\n<h2>Prediction (from the probes)</h2>\n<table><tr><th>resource</th><th>demand per {unit}</th><th>capacity</th><th>saturates at ({unit}/s)</th></tr>\n{res}</table>\n<h2>Steps</h2>\n<table><tr><th>offered ({unit}/s)</th><th>s</th><th>achieved ({unit}/s)</th><th>CPU measured %</th><th>− pacing %</th><th>CPU predicted %</th><th>CPU agrees</th><th>achieved MB/s (per-unit MB × rate)</th></tr>\n{rows}</table>\n<p>CPU utilisation against the achieved rate, predicted and measured:</p>\n{chart}\n<h2>Verdict</h2>\n<p>Maximum rate: predicted {xp:.2}, measured {xm:.2} {unit}/s. Bottleneck predicted: {bn}; flat out this process used {fo:.1} % of all CPUs.</p>\n<p><b>{text}</b> (exit status {code})</p>\n</body></html>\n",
        name = esc(&v.analysis.profile.name),
        ring = v.working_set.ring_bytes >> 20,
        llc = v.working_set.llc_bytes >> 20,
        llcs = esc(&v.working_set.llc_source),
        bg = v.background_cpus,
        shared = if v.shared_machine {
            " (shared machine)"
        } else {
            ""
        },
        unit = esc(&v.analysis.profile.unit),
        xp = vd.x_predicted,
        xm = vd.x_measured,
        bn = esc(&vd.bottleneck),
        fo = vd.flat_out_cpu_pct,
        text = esc(&vd.text),
        code = exit_code,
        chart = match validate_cpu_chart(v) {
            Ok(svg) => svg,
            Err(e) => format!("<p>(no chart: {})</p>", esc(&e.to_string())),
        },
    )
}

/// `model validate`'s chart: CPU utilisation against the achieved rate — the predicted line
/// U = F + X·S (with the band up to the contended end where there is one), each step's measured
/// CPU less the harness's pacing (circles: offered rates; squares: flat out), and the predicted
/// maximum rate.
fn validate_cpu_chart(v: &Validation) -> Result<String> {
    use super::charts::{chart_on, house_legend, house_mesh, pe, rgb, svg_chart};
    use plotters::prelude::*;
    let pr = v
        .analysis
        .predictions
        .first()
        .ok_or_else(|| anyhow::anyhow!("no prediction"))?;
    let cpu = pr
        .resource("cpu")
        .ok_or_else(|| anyhow::anyhow!("no CPU demand"))?;
    let s = cpu
        .s
        .ok_or_else(|| anyhow::anyhow!("no CPU service demand"))?;
    let bg = cpu.background;
    let x_pred = v.verdict.x_predicted;
    let pts: Vec<(f64, f64, bool)> = v
        .steps
        .iter()
        .map(|st| (st.achieved, st.cpu_work_pct(), st.offered.is_none()))
        .collect();
    let xmax = pts.iter().map(|p| p.0).fold(x_pred, f64::max) * 1.15;
    if xmax.is_nan() || xmax <= 0.0 {
        return Err(anyhow::anyhow!("no rate to draw"));
    }
    let u = |x: f64, s: f64| (bg + x * s) * 100.0;
    let ymax = pts.iter().map(|p| p.1).fold(110.0, f64::max).min(250.0);
    let unit = &v.analysis.profile.unit;
    svg_chart((900, 420), |root| {
        let mut chart = chart_on(root, 10, 45, 70)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)
            .map_err(pe)?;
        house_mesh(&mut chart.configure_mesh())
            .x_desc(format!("achieved rate ({unit}/s)"))
            .y_desc("CPU utilisation, % of all CPUs")
            .draw()
            .map_err(pe)?;
        let blue = rgb(0);
        if let Some(sc) = cpu.s_contended {
            chart
                .draw_series(std::iter::once(Polygon::new(
                    vec![(0.0, u(0.0, s)), (xmax, u(xmax, s)), (xmax, u(xmax, sc))],
                    blue.mix(0.15),
                )))
                .map_err(pe)?
                .label("predicted range (every core copying at once)")
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 18, y + 5)], blue.mix(0.15).filled())
                });
        }
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, u(0.0, s)), (xmax, u(xmax, s))],
                blue.stroke_width(2),
            ))
            .map_err(pe)?
            .label("predicted U = F + X·S")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], blue.stroke_width(2))
            });
        let grey = RGBColor(90, 90, 90);
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, 100.0), (xmax, 100.0)],
                grey.stroke_width(1),
            ))
            .map_err(pe)?;
        let red = rgb(1);
        chart
            .draw_series(LineSeries::new(
                vec![(x_pred, 0.0), (x_pred, ymax)],
                red.stroke_width(1),
            ))
            .map_err(pe)?
            .label(format!("predicted maximum rate {x_pred:.2}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], red.stroke_width(1)));
        let black = RGBColor(0, 0, 0);
        chart
            .draw_series(
                pts.iter()
                    .filter(|p| !p.2)
                    .map(|p| Circle::new((p.0, p.1), 5, black.filled())),
            )
            .map_err(pe)?
            .label("measured at an offered rate (less the pacing)")
            .legend(move |(x, y)| Circle::new((x + 9, y), 5, black.filled()));
        chart
            .draw_series(pts.iter().filter(|p| p.2).map(|p| {
                EmptyElement::at((p.0, p.1)) + Rectangle::new([(-5, -5), (5, 5)], red.filled())
            }))
            .map_err(pe)?
            .label("measured flat out")
            .legend(move |(x, y)| Rectangle::new([(x + 4, y - 5), (x + 14, y + 5)], red.filled()));
        house_legend(&mut chart, Some(SeriesLabelPosition::UpperLeft))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page carries every step, the prediction's resources, the chart and the exit status.
    #[test]
    fn the_validate_page_shows_every_step_the_chart_and_the_verdict() {
        let v = crate::appmodel::validate::report::tests::sample();
        let h = validate_page(&v, 1);
        assert!(
            h.contains("<td>12.50</td>") && h.contains("<td>flat out</td>"),
            "{h}"
        );
        assert!(h.contains("Memory bandwidth"), "{h}");
        assert!(h.contains(&esc(&v.verdict.text)), "{h}");
        assert!(h.contains("(exit status 1)"), "{h}");
        // The chart: the predicted line and the measured points.
        assert!(
            h.contains("<svg") && h.contains("predicted U = F + X·S"),
            "{h}"
        );
    }
}
