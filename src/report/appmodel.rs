//! HTML page of an application-model analysis (`osgauge model … --export-html`): per run, a
//! utilisation bar per resource at the target rate and the capacity-vs-rate lines U_r(X) with the
//! ceiling and the target marked; then every table of the terminal view. And the page of
//! `osgauge model validate … --export-html`: the steps, the CPU chart and the verdict.

use anyhow::Result;
use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::appmodel::Analysis;
use crate::appmodel::calc::{Prediction, fmt};
use crate::appmodel::render::sections;
use crate::appmodel::validate::report::Validation;

/// One per resource the model can list (CPU, one thread, memory, disk, receive, send, display).
const COLORS: [&str; 7] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
];

/// A number with one decimal, for SVG coordinates (numbers only, written by maud).
fn d1(x: f64) -> String {
    format!("{x:.1}")
}

fn bars(p: &Prediction, ceiling: f64) -> Markup {
    let w = 520.0;
    let row = 26.0;
    let left = 150.0;
    let h = row * p.resources.len() as f64 + 30.0;
    let scale = |u: f64| left + (u.min(1.5) / 1.5) * (w - left - 60.0);
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(w) height=(h) role="img" aria-label="utilisation at the target rate" {
            @for (i, r) in p.resources.iter().enumerate() {
                @let y = 10.0 + i as f64 * row;
                text x=(left - 6.0) y=(y + 14.0) font-size="12" text-anchor="end" { (r.title) }
                @match r.util_at_target {
                    Some(u) => {
                        @let color = if u > 1.0 {
                            "#d62728"
                        } else if u > ceiling {
                            "#ff7f0e"
                        } else {
                            "#2ca02c"
                        };
                        rect x=(left) y=(y) width=(d1(scale(u) - left)) height="18" fill=(color) {}
                        text x=(d1(scale(u) + 4.0)) y=(y + 14.0) font-size="12" { (d1(u * 100.0)) " %" }
                        @if let Some(sc) = r.s_contended {
                            @let uc = r.background + p.target_rate * sc;
                            rect x=(left) y=(d1(y + 18.0)) width=(d1(scale(uc) - left)) height="4" fill="#555" {
                                title { "every core copying at once: " (d1(uc * 100.0)) " %" }
                            }
                        }
                    }
                    None => {
                        text x=(left) y=(y + 14.0) font-size="12" fill="#888" { "missing input" }
                    }
                }
            }
            @for (u, label) in [(ceiling, "ceiling"), (1.0, "100 %")] {
                @let x = d1(scale(u));
                line x1=(x) y1="4" x2=(x) y2=(h - 16.0) stroke="#444" stroke-dasharray="4 3" {}
                text x=(x) y=(h - 4.0) font-size="10" text-anchor="middle" { (label) }
            }
        }
    }
}

fn lines(p: &Prediction, ceiling: f64) -> Markup {
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
    let xt = d1(px(p.target_rate));
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(w) height=(h) role="img" aria-label="utilisation versus rate" {
            line x1=(l) y1=(plot_h - b) x2=(w - r) y2=(plot_h - b) stroke="#000" {}
            line x1=(l) y1=(t) x2=(l) y2=(plot_h - b) stroke="#000" {}
            @for k in 0..=4 {
                @let x = xmax * k as f64 / 4.0;
                text x=(d1(px(x))) y=(plot_h - b + 14.0) font-size="10" text-anchor="middle" { (fmt(x)) }
            }
            @for u in [0.0, 0.5, 1.0] {
                text x=(l - 4.0) y=(d1(py(u) + 3.0)) font-size="10" text-anchor="end" { (format!("{:.0}", u * 100.0)) " %" }
            }
            text x=(d1((l + w - r) / 2.0)) y=(plot_h - 6.0) font-size="11" text-anchor="middle" { "rate (" (p.unit) "/s)" }
            @for (u, label) in [(ceiling, "ceiling"), (1.0, "capacity")] {
                @let y = d1(py(u));
                line x1=(l) y1=(y) x2=(w - r) y2=(y) stroke="#444" stroke-dasharray="4 3" {}
                text x=(w - r + 4.0) y=(d1(py(u) + 3.0)) font-size="10" { (label) }
            }
            line x1=(xt) y1=(t) x2=(xt) y2=(plot_h - b) stroke="#888" stroke-dasharray="2 2" {}
            text x=(xt) y=(t + 8.0) font-size="10" text-anchor="middle" { "target" }
            @for (k, (c, title, bg, sv, dashed)) in series.iter().enumerate() {
                @let x_end = if *sv > 0.0 { ((1.2 - bg) / sv).min(xmax) } else { xmax };
                @let dash = dashed.then_some("6 3");
                @let ly = plot_h + 12.0 + 16.0 * k as f64;
                line x1=(d1(px(0.0))) y1=(d1(py(*bg))) x2=(d1(px(x_end))) y2=(d1(py(bg + x_end * sv)))
                    stroke=(c) stroke-width="2" stroke-dasharray=[dash] {}
                line x1=(l) y1=(d1(ly - 4.0)) x2=(l + 24.0) y2=(d1(ly - 4.0))
                    stroke=(c) stroke-width="2" stroke-dasharray=[dash] {}
                text x=(l + 30.0) y=(d1(ly)) font-size="11" fill=(c) {
                    (title) @if *dashed { " with every core copying at once" }
                }
            }
        }
    }
}

const PAGE_CSS: &str = "body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left}.note{font-size:13px;margin:2px 0}.warn{color:#b00}";

/// The whole page.
pub fn page(a: &Analysis) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "osgauge model: " (a.profile.name) }
                // CSS: a constant of this file.
                style { (PreEscaped(PAGE_CSS)) }
            }
            body {
                h1 { "Application model: " (a.profile.name) }
                @if let Some(s) = &a.published {
                    p.warn { b { "Published figures, not measured by osgauge:" } " " (s.title) " — " (s.note) }
                }
                @for p in &a.predictions {
                    h2 { (p.name) " (" (p.os) ")" }
                    @if p.upper_bound {
                        p.warn {
                            "Inputs missing: the maximum rate is an upper bound."
                            @if let Some(cmd) = &p.to_measure {
                                " To measure every input this profile reads: " code { (cmd) } ", then "
                                code { (crate::appmodel::inputs::model_command(&a.profile.file)) } "."
                            }
                        }
                    }
                    p { "Utilisation at the target rate (" (fmt(p.target_rate)) " " (p.unit) "/s):" }
                    (bars(p, a.profile.ceiling))
                    p { "Utilisation of each resource versus rate (capacity-vs-rate lines):" }
                    (lines(p, a.profile.ceiling))
                }
                @for t in sections(a) {
                    h3 { (t.title) }
                    table {
                        tr { @for c in &t.header { th { (c) } } }
                        @for r in &t.rows { tr { @for c in r { td { (c) } } } }
                    }
                    @for n in &t.notes { p.note { (n) } }
                }
            }
        }
        "\n"
    }
    .into_string()
}

const VALIDATE_CSS: &str = "body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}";

/// `model validate`'s HTML page: the prediction from the probes, every step, the CPU chart and
/// the verdict, with the exit status the command gave it.
pub fn validate_page(v: &Validation, exit_code: i32) -> String {
    let vd = &v.verdict;
    let name = &v.analysis.profile.name;
    let unit = &v.analysis.profile.unit;
    let chart = validate_cpu_chart(v);
    html! {
        (DOCTYPE) "\n"
        html {
            head {
                meta charset="utf-8";
                title { "model validate: " (name) } "\n"
                // CSS: a constant of this file.
                style { (PreEscaped(VALIDATE_CSS)) }
            }
            body {
                "\n" h1 { "model validate: " (name) } "\n"
                p {
                    "Working set per ring: " (v.working_set.ring_bytes >> 20) " MiB (LLC " (v.working_set.llc_bytes >> 20)
                    " MiB: " (v.working_set.llc_source) "). Other work during the idle baseline: "
                    (format!("{:.2}", v.background_cpus)) " CPUs" @if v.shared_machine { " (shared machine)" } "."
                } "\n"
                ul { @for n in &v.notes { li { (n) } } } "\n"
                h2 { "Prediction (from the probes)" } "\n"
                table {
                    tr { th { "resource" } th { "demand per " (unit) } th { "capacity" } th { "saturates at (" (unit) "/s)" } } "\n"
                    @if let Some(pr) = v.analysis.predictions.first() {
                        @for rc in &pr.resources {
                            tr {
                                td { (rc.title) }
                                td { (fmt(rc.demand)) " " (rc.unit) }
                                td { @match rc.capacity { Some(c) => { (fmt(c)) " " (rc.unit) "/s" } None => { "—" } } }
                                td { @match rc.x_sat { Some(x) => { (format!("{x:.2}")) } None => { "—" } } }
                            } "\n"
                        }
                    }
                } "\n"
                h2 { "Steps" } "\n"
                table {
                    tr {
                        th { "offered (" (unit) "/s)" } th { "s" } th { "achieved (" (unit) "/s)" } th { "CPU measured %" }
                        th { "− pacing %" } th { "CPU predicted %" } th { "CPU agrees" } th { "achieved MB/s (per-unit MB × rate)" }
                    } "\n"
                    @for s in &v.steps {
                        tr {
                            td { (s.offered_text()) }
                            td { (format!("{:.1}", s.duration_s)) }
                            td { (format!("{:.2}", s.achieved)) }
                            td { (format!("{:.1}", s.cpu_measured_pct)) }
                            td { (s.cpu_pacing_pct.map_or("—".into(), |x| format!("{x:.1}"))) }
                            td { (s.cpu_predicted_text()) }
                            td { (s.cpu_agrees.map_or("—", |b| if b { "yes" } else { "NO" })) }
                            td { (s.achieved_mb_s_text()) }
                        } "\n"
                    }
                } "\n"
                p { "CPU utilisation against the achieved rate, predicted and measured:" } "\n"
                @match &chart {
                    // SVG written by plotters (it escapes every text it writes).
                    Ok(svg) => { (PreEscaped(svg)) }
                    Err(e) => { p { "(no chart: " (e) ")" } }
                } "\n"
                h2 { "Verdict" } "\n"
                p {
                    "Maximum rate: predicted " (format!("{:.2}", vd.x_predicted)) ", measured " (format!("{:.2}", vd.x_measured))
                    " " (unit) "/s. Bottleneck predicted: " (vd.bottleneck) "; flat out this process used "
                    (format!("{:.1}", vd.flat_out_cpu_pct)) " % of all CPUs."
                } "\n"
                p { b { (vd.text) } " (exit status " (exit_code) ")" } "\n"
            }
        }
        "\n"
    }
    .into_string()
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
        assert!(h.contains(&html! { (v.verdict.text) }.into_string()), "{h}");
        assert!(h.contains("(exit status 1)"), "{h}");
        // The chart: the predicted line and the measured points.
        assert!(
            h.contains("<svg") && h.contains("predicted U = F + X·S"),
            "{h}"
        );
    }

    /// Text from the profile and the run (names, units, notes, the verdict) is escaped on both
    /// pages: no element comes out of it.
    #[test]
    fn hostile_text_on_the_model_pages_stays_text() {
        const BAD: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";
        let mut v = crate::appmodel::validate::report::tests::sample();
        v.analysis.profile.name = BAD.into();
        v.analysis.profile.unit = BAD.into();
        v.notes.push(BAD.into());
        v.working_set.llc_source = BAD.into();
        v.verdict.text = BAD.into();
        v.verdict.bottleneck = BAD.into();
        for p in &mut v.analysis.predictions {
            p.name = BAD.into();
            p.os = BAD.into();
            p.unit = BAD.into();
            p.upper_bound = true;
            p.to_measure = Some(BAD.into());
        }
        for h in [validate_page(&v, 1), page(&v.analysis)] {
            let lower = h.to_lowercase();
            assert!(!lower.contains("<script") && !lower.contains("<img"), "{h}");
            assert!(h.contains(
                "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"
            ));
        }
    }
}
