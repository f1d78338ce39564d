//! Interactivity tables: one per task, rows = loads. Figures come from the run record:
//! mean, SD and p99 are the median over runs of each run's value; max is the largest over all
//! runs; % figures and dropped frames are the median over runs.

use crate::record::{BenchmarkResult, MetricResult, RunRecord};
use crate::stats;
use crate::units::format_time_ns;

/// One row's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellFigures {
    pub task: String,
    pub load: String,
    pub runs: usize,
    pub mean_ns: Option<f64>,
    pub sd_ns: Option<f64>,
    pub p99_ns: Option<f64>,
    pub max_ns: Option<f64>,
    pub desired_cpu: Option<f64>,
    pub deadlines_met: Option<f64>,
    pub dropped: Option<f64>,
    pub task_cpu: Option<f64>,
    pub target_cpu: Option<f64>,
    pub error: Option<String>,
}

fn metric<'a>(b: &'a BenchmarkResult, name: &str) -> Option<&'a MetricResult> {
    b.metrics.iter().find(|m| m.name == name)
}

fn median_of(m: Option<&MetricResult>, f: impl Fn(&stats::Summary) -> f64) -> Option<f64> {
    let v: Vec<f64> = m?.runs.iter().map(|r| f(&r.summary)).collect();
    (!v.is_empty()).then(|| stats::median(&v))
}

pub fn figures(b: &BenchmarkResult) -> CellFigures {
    let mut parts = b.id.splitn(3, '/').skip(1);
    let task = parts.next().unwrap_or("").to_string();
    let load = parts.next().unwrap_or("").to_string();
    let lat = metric(b, "latency");
    CellFigures {
        task,
        load,
        runs: lat.map(|m| m.runs.len()).unwrap_or(0),
        mean_ns: median_of(lat, |s| s.mean),
        sd_ns: median_of(lat, |s| s.sd),
        p99_ns: median_of(lat, |s| s.p99),
        max_ns: lat.and_then(|m| m.runs.iter().map(|r| r.summary.max).reduce(f64::max)),
        desired_cpu: median_of(metric(b, "desired_cpu"), |s| s.p50),
        deadlines_met: median_of(metric(b, "deadlines_met"), |s| s.p50),
        dropped: median_of(metric(b, "dropped_frames"), |s| s.p50),
        task_cpu: median_of(metric(b, "task_cpu"), |s| s.p50),
        // The same in every run: in params; else the median of the runs' own targets.
        target_cpu: b
            .fact("target_cpu_pct")
            .and_then(|v| v.as_f64())
            .or_else(|| {
                let v: Vec<f64> = b
                    .run_facts
                    .iter()
                    .filter_map(|f| f.get("target_cpu_pct")?.as_f64())
                    .collect();
                (!v.is_empty()).then(|| crate::stats::median(&v))
            }),
        error: b
            .error
            .as_ref()
            .map(|e| format!("{}: {}", e.kind.as_str(), e.message)),
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

fn pct(v: f64) -> String {
    if (99.95..100.0).contains(&v) {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

fn group(record: &RunRecord) -> Vec<(String, Vec<CellFigures>)> {
    let mut out: Vec<(String, Vec<CellFigures>)> = Vec::new();
    for b in record
        .benchmarks
        .iter()
        .filter(|b| b.suite == "interactivity")
    {
        let f = figures(b);
        match out.iter_mut().find(|(t, _)| *t == f.task) {
            Some((_, v)) => v.push(f),
            None => out.push((f.task.clone(), vec![f])),
        }
    }
    out
}

/// The first and last columns left-aligned, the figures between them right-aligned.
fn render_grid(header: &[&str], rows: &[Vec<String>]) -> String {
    use crate::output::grid::{Align, Grid};
    let n = header.len();
    let align: Vec<Align> = (0..n)
        .map(|i| {
            if i == 0 || i + 1 == n {
                Align::Left
            } else {
                Align::Right
            }
        })
        .collect();
    let all: Vec<Vec<&str>> = std::iter::once(header.to_vec())
        .chain(rows.iter().map(|r| r.iter().map(String::as_str).collect()))
        .collect();
    Grid {
        align: &align,
        ..Default::default()
    }
    .render(&all)
}

/// osgauge's own table.
pub fn render(record: &RunRecord) -> String {
    let mut s = String::new();
    for (task, cells) in group(record) {
        s.push_str(&format!("\n{task}\n"));
        let rows: Vec<Vec<String>> = cells
            .iter()
            .map(|c| {
                vec![
                    c.load.clone(),
                    match (c.mean_ns, c.sd_ns) {
                        (Some(m), Some(sd)) => {
                            format!("{} ± {}", format_time_ns(m), format_time_ns(sd))
                        }
                        _ => "—".into(),
                    },
                    opt(c.p99_ns, format_time_ns),
                    opt(c.max_ns, format_time_ns),
                    opt(c.desired_cpu, pct),
                    opt(c.deadlines_met, pct),
                    opt(c.dropped, |d| format!("{d:.0}")),
                    match (c.task_cpu, c.target_cpu) {
                        (Some(u), Some(t)) => format!("{u:.1}/{t:.1}"),
                        (Some(u), None) => format!("{u:.1}"),
                        _ => "—".into(),
                    },
                    c.runs.to_string(),
                    c.error.clone().unwrap_or_default(),
                ]
            })
            .collect();
        s.push_str(&render_grid(
            &[
                "load",
                "latency mean ± SD",
                "p99",
                "max",
                "% desired CPU",
                "% deadlines",
                "dropped",
                "CPU % used/target",
                "runs",
                "note",
            ],
            &rows,
        ));
    }
    if !s.is_empty() {
        s.push_str(
            "\nmean, SD (true SD), p99: median over runs of each run's value; max: largest over all \
             runs; %, dropped: median over runs. CPU % used: the task thread's CPU clock.\n",
        );
    }
    s
}

/// Interbench's table layout (latency in ms), for old habits. The SD printed here is the true SD,
/// not Interbench's root-mean-square figure, and dropped frames are not folded into latency.
pub fn render_interbench(record: &RunRecord) -> String {
    let mut s = String::new();
    for (task, cells) in group(record) {
        let name = match task.as_str() {
            "x" => "X".to_string(),
            t => {
                let mut c = t.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect())
                    .unwrap_or_default()
            }
        };
        s.push_str(&format!(
            "\n--- Benchmarking simulated cpu of {name} in the presence of simulated ---\n"
        ));
        s.push_str("Load\tLatency +/- SD (ms)  Max Latency   % Desired CPU  % Deadlines Met\n");
        for c in cells {
            let ms = |v: Option<f64>| v.map(|x| x / 1e6).unwrap_or(f64::NAN);
            let mut load = c.load.clone();
            if let Some(f) = load.get_mut(0..1) {
                f.make_ascii_uppercase();
            }
            s.push_str(&format!(
                "{load}\t{:>7.3} +/- {:<9.3}{:>9.3}\t{:>10}\t{:>10}\n",
                ms(c.mean_ns),
                ms(c.sd_ns),
                ms(c.max_ns),
                c.desired_cpu
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or("-".into()),
                c.deadlines_met
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or("-".into()),
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BenchmarkResult, MetricResult, RunMetric};
    use crate::units::{Better, Unit};

    fn metric(name: &str, unit: Unit, runs: &[&[f64]]) -> MetricResult {
        MetricResult {
            name: name.into(),
            unit,
            better: Better::Lower,
            description: String::new(),
            runs: runs
                .iter()
                .map(|s| RunMetric {
                    summary: stats::summarize(s).unwrap(),
                    histogram: None,
                    histogram_scale: None,
                    histogram_offset: None,
                    round: None,
                })
                .collect(),
            summary: None,
            not_measured: None,
            bound: None,
        }
    }

    #[test]
    fn figures_take_medians_over_runs_and_max_over_all() {
        let b = BenchmarkResult {
            id: "interactivity/audio/burn".into(),
            suite: "interactivity".into(),
            title: String::new(),
            params: serde_json::Map::new(),
            measured: Default::default(),
            metrics: vec![
                metric(
                    "latency",
                    Unit::Nanoseconds,
                    &[&[1.0, 3.0], &[2.0, 4.0], &[10.0, 30.0]],
                ),
                metric(
                    "deadlines_met",
                    Unit::Percent,
                    &[&[100.0], &[90.0], &[80.0]],
                ),
            ],
            warnings: vec![],
            error: None,
            wall_s: 0.0,
            run_facts: Vec::new(),
            adaptive: None,
        };
        let f = figures(&b);
        assert_eq!(f.task, "audio");
        assert_eq!(f.load, "burn");
        assert_eq!(f.runs, 3);
        assert_eq!(f.mean_ns, Some(3.0));
        assert_eq!(f.max_ns, Some(30.0));
        assert_eq!(f.deadlines_met, Some(90.0));
        assert_eq!(f.desired_cpu, None);
    }
}
