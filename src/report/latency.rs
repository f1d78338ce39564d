//! The latency section of the HTML report: per record the wake-up latency histogram of every CPU
//! (each `latency/wakeup` cell's — one per load — per-run histograms merged, 1 µs buckets, log-log as real-time users plot
//! cyclictest's), and, where the run was traced (`--attribute`), the culprits over all spikes and
//! the top spikes with what held the CPU, each part's share drawn as a bar.

use anyhow::Result;
use maud::{Markup, html};
use plotters::prelude::*;

use super::Figure;
use super::charts::{chart_on, house_mesh, pe, rgb, svg_chart};
use crate::attribution::{Part, PartKind, Spike, part_text, recorded, top_culprits};
use crate::record::{BenchmarkResult, RunRecord};

/// Histogram buckets drawn, µs (wake-ups beyond are counted in the caption).
const LIMIT_US: u64 = 20_000;

/// A tick's number without trailing zeros: "1", "50", "0.5" (counts and whole microseconds read
/// as such, not "1.000").
fn round_label(v: f64) -> String {
    let s = crate::units::sig(v);
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn histogram_figure(name: &str, b: &BenchmarkResult) -> Result<Option<Figure>> {
    let cols = crate::export::cyclictest::columns(b, LIMIT_US);
    let pts: Vec<Vec<(f64, f64)>> = cols
        .iter()
        .map(|(_, c)| {
            c.counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(us, n)| (us as f64 + 0.5, *n as f64))
                .collect()
        })
        .collect();
    let all: Vec<&(f64, f64)> = pts.iter().flatten().collect();
    if all.is_empty() {
        return Ok(None);
    }
    let xmax = all.iter().map(|p| p.0).fold(1.0, f64::max) * 1.5;
    let ymax = all.iter().map(|p| p.1).fold(1.0, f64::max) * 2.0;
    let svg = svg_chart((1260, 360), |root| {
        let keys: Vec<(String, ShapeStyle)> = cols
            .iter()
            .enumerate()
            .map(|(i, (cpu, _))| (cpu.clone(), rgb(i).stroke_width(2)))
            .collect();
        // The legend beside the plot (the house font; it covers no data).
        let plot = super::charts::legend_beside(root, &keys)?;
        let mut chart = chart_on(&plot, 10, 40, 80)
            .build_cartesian_2d(
                super::charts::LogAxis(0.5, xmax),
                super::charts::LogAxis(0.8, ymax),
            )
            .map_err(pe)?;
        house_mesh(&mut chart.configure_mesh())
            .x_label_formatter(&|x| format!("{} µs", round_label(*x)))
            .y_label_formatter(&|y| round_label(*y))
            .x_desc("wake-up latency (1 µs buckets drawn at their middle, log scale)")
            .y_desc("wake-ups (log scale)")
            .draw()
            .map_err(pe)?;
        for (i, p) in pts.iter().enumerate() {
            chart
                .draw_series(LineSeries::new(p.clone(), rgb(i).stroke_width(1)))
                .map_err(pe)?;
        }
        Ok(())
    })?;
    let over: u64 = cols.iter().map(|(_, c)| c.overflows).sum();
    let maxes: Vec<String> = cols
        .iter()
        .map(|(cpu, c)| format!("{cpu} max {} µs", c.max_us.floor()))
        .collect();
    Ok(Some(Figure {
        title: format!(
            "{name}: {} histogram per CPU, all runs ({}{})",
            b.id,
            maxes.join(", "),
            if over > 0 {
                format!("; {over} wake-up(s) over {} ms not drawn", LIMIT_US / 1000)
            } else {
                String::new()
            }
        ),
        svg,
        wide: true,
    }))
}

fn css(kind: PartKind) -> &'static str {
    match kind {
        PartKind::Task => "#4682b4",
        PartKind::Irq => "#d2691e",
        PartKind::Softirq => "#e6a23c",
        PartKind::Timer => "#8fbc8f",
        PartKind::WakeupPath => "#9370db",
        PartKind::OwnWork => "#2e8b57",
        PartKind::Unexplained => "#b0b0b0",
        PartKind::Steal => "#cd5c5c",
    }
}

/// One spike's parts as a bar of shares, with the parts named.
fn spike_row(s: &Spike) -> Markup {
    let total = s.latency_ns.max(1) as f64;
    html! {
        tr {
            td { "cpu" (s.cpu) }
            td.num { (crate::units::format_time_ns(s.latency_ns as f64)) }
            td style="width:40%" {
                div style="width:100%;white-space:nowrap;font-size:0" {
                    @for p in &s.parts {
                        i style={
                            "display:inline-block;height:10px;width:"
                            (format!("{:.2}", 100.0 * p.ns as f64 / total))
                            "%;background:" (css(p.kind))
                        } title=(part_text(p)) {}
                    }
                }
            }
            td { (s.parts.iter().map(part_text).collect::<Vec<_>>().join(", ")) }
        } "\n"
    }
}

fn attribution_html(name: &str, b: &BenchmarkResult) -> Option<Markup> {
    let rec = recorded(b)?;
    let spikes = rec.spikes;
    let culprits: Vec<Part> = top_culprits(&spikes, 10);
    let (count, lost) = (rec.count, rec.lost);
    Some(html! {
        h3 { (name) ": what held the CPU (tracefs)" } "\n"
        p.note {
            (count) " late wake-up(s) in " (rec.runs) " run(s); the top ones of each run are kept. Each part is charged to the innermost IRQ/softirq/timer interrupt, else the running task, else the wake-up path; unexplained time (idle exit, the VM's host) is shown, never hidden."
            @if lost > 0 { " The trace ring lost " (lost) " event(s)." }
            " "
            @match &rec.steal_split {
                None => "A task's time is split into its own run time and host (steal): its wall time on the CPU less the run time the scheduler's task clock counted (sched_stat_runtime), prorated where a runtime stretch reaches outside the spike (estimated).",
                Some(why) => { "Host steal is not separated from the tasks' time: " (why) "." }
            }
            @if let Some(t) = crate::attribution::steal_text(&b.run_facts) { " " (t) "." }
        } "\n"
        table.res {
            tr { th { "culprit (top spikes)" } th { "total" } } "\n"
            @for p in &culprits {
                tr {
                    td { i style={ "display:inline-block;width:10px;height:10px;background:" (css(p.kind)) } {} " " (part_text(p)) }
                    td.num { (crate::units::format_time_ns(p.ns as f64)) }
                } "\n"
            }
        } "\n"
        table.res {
            tr { th { "CPU" } th { "late by" } th { "shares" } th { "parts" } } "\n"
            @for s in spikes.iter().take(20) { (spike_row(s)) }
        } "\n"
    })
}

/// The report's latency section (empty when no record has latency results).
pub fn section(runs: &[(String, RunRecord)]) -> Result<Markup> {
    let mut figs = Vec::new();
    let mut attr = Vec::new();
    for (name, r) in runs {
        // One wake-up cell per load (`latency/wakeup`, `latency/wakeup/<load>`): each named with
        // its load when the run has cells under a load.
        let cells: Vec<&BenchmarkResult> = r
            .benchmarks
            .iter()
            .filter(|b| b.id == "latency/wakeup" || b.id.starts_with("latency/wakeup/"))
            .collect();
        for b in &cells {
            let name = match b.params.get("load").and_then(|l| l.as_str()) {
                Some(l) if cells.len() > 1 || l != "none" => format!("{name} (load {l})"),
                _ => name.clone(),
            };
            if let Some(f) = histogram_figure(&name, b)? {
                figs.push(f);
            }
            if let Some(a) = attribution_html(&name, b) {
                attr.push(a);
            }
        }
    }
    if figs.is_empty() && attr.is_empty() {
        return Ok(html! {});
    }
    Ok(html! {
        section {
            "\n"
            h2 { "Latency: wake-up histograms per CPU, spike attribution" } "\n"
            (super::figures(&figs))
            @for a in &attr { (a) }
        } "\n"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_row_names_every_part_and_escapes_names() {
        let s = Spike {
            cpu: 1,
            at_ns: 0,
            latency_ns: 4_000_000,
            parts: vec![
                Part {
                    kind: PartKind::Task,
                    name: "<script>x</script>".into(),
                    pid: Some(7),
                    prio: Some(49),
                    ns: 3_000_000,
                    estimated: false,
                    steal_unseparated_ns: None,
                },
                Part {
                    kind: PartKind::Unexplained,
                    name: String::new(),
                    pid: None,
                    prio: None,
                    ns: 1_000_000,
                    estimated: false,
                    steal_unseparated_ns: None,
                },
            ],
        };
        let row = spike_row(&s).into_string();
        assert!(
            row.contains("width:75.00%") && row.contains("width:25.00%"),
            "{row}"
        );
        assert!(
            !row.contains("<script>") && row.contains("&lt;script&gt;"),
            "{row}"
        );
        assert!(row.contains("unexplained"));
    }
}
