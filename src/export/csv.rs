//! Summary CSV: one row per benchmark metric (a benchmark that produced nothing gets one row with
//! its error). Values are in the base unit named in the `unit` column.

use crate::record::RunRecord;

pub const HEADER: [&str; 17] = [
    "run_id",
    "label",
    "benchmark",
    "metric",
    "unit",
    "better",
    "runs",
    "median",
    "ci95_low",
    "ci95_high",
    "p99",
    "min_run",
    "max_run",
    "cv_runs",
    "error",
    "description",
    "bound",
];

/// A CSV cell for a number: its shortest exact text, empty when it is not finite.
pub fn num_cell(x: f64) -> String {
    if x.is_finite() {
        x.to_string()
    } else {
        String::new()
    }
}

fn bound_kind_name(k: crate::record::BoundKind) -> &'static str {
    match k {
        crate::record::BoundKind::AtLeast => "at_least",
        crate::record::BoundKind::AtMost => "at_most",
    }
}

pub fn render(record: &RunRecord) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    let run_id = record.run_id.to_string();
    let label = record.label.clone().unwrap_or_default();
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for b in &record.benchmarks {
        let err = b.error.as_ref().map(|e| e.to_string()).unwrap_or_default();
        for m in &b.metrics {
            let s = m.summary.as_ref();
            w.write_record([
                run_id.as_str(),
                label.as_str(),
                b.id.as_str(),
                m.name.as_str(),
                m.unit.symbol(),
                m.better.as_str(),
                &s.map(|s| s.runs).unwrap_or(0).to_string(),
                &opt(s.map(|s| s.center)),
                &opt(s.map(|s| s.ci95[0])),
                &opt(s.map(|s| s.ci95[1])),
                &opt(s.and_then(|s| s.p99)),
                &opt(s.map(|s| s.min)),
                &opt(s.map(|s| s.max)),
                &opt(s.map(|s| s.cv)),
                err.as_str(),
                m.description.as_str(),
                // "at_least: <why>" when the figure is a bound, not a measurement.
                &m.bound
                    .as_ref()
                    .map(|b| format!("{}: {}", bound_kind_name(b.kind), b.reason))
                    .unwrap_or_default(),
            ])?;
        }
        curve_rows(&mut w, &run_id, &label, b)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// A benchmark whose params carry a `curve` fact (`[{size_bytes, ns_per_load, ns_min_run,
/// ns_max_run, runs}]`, e.g. the mem latency curves) gets one extra row per point, metric
/// `curve@<size_bytes>`, so the whole curve is in the CSV.
fn curve_rows(
    w: &mut csv::Writer<Vec<u8>>,
    run_id: &str,
    label: &str,
    b: &crate::record::BenchmarkResult,
) -> anyhow::Result<()> {
    let Some(points) = b.fact("curve").and_then(|c| c.as_array()) else {
        return Ok(());
    };
    let num = |p: &serde_json::Value, k: &str| {
        p.get(k)
            .and_then(|v| v.as_f64())
            .map(|x| x.to_string())
            .unwrap_or_default()
    };
    for p in points {
        let Some(size) = p.get("size_bytes").and_then(|v| v.as_u64()) else {
            continue;
        };
        w.write_record([
            run_id,
            label,
            b.id.as_str(),
            &format!("curve@{size}"),
            "ns",
            "lower",
            &p.get("runs").and_then(|v| v.as_u64()).unwrap_or(0).to_string(),
            &num(p, "ns_per_load"),
            "",
            "",
            "",
            &num(p, "ns_min_run"),
            &num(p, "ns_max_run"),
            "",
            "",
            &format!("latency curve point: ns per load with a working set of {size} bytes (median over runs)"),
            "",
        ])?;
    }
    Ok(())
}
