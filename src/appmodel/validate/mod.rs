//! `osgauge model validate <profile>`: a synthetic application doing exactly the profile's
//! per-unit work (`app.rs`: receive over loopback TCP, write and read a temp file, copy memory,
//! compute, copy frames, send over loopback, ping-pong with a partner thread for the context
//! switches), run at rising offered rates and then flat out, measuring the achieved rate and this
//! process's CPU utilisation. The prediction it is compared with is made from a fresh measurement
//! of the inputs by probes (`probe.rs`) that do the same work the same way (the network and
//! file-system suites may not be present). Every buffer whose bytes the model counts as memory
//! traffic streams through a ring of ≥ 4 × the last-level cache (`work.rs`), so that traffic
//! really reaches memory. CPU is this process's own CPU time (`crate::cpucost`'s process
//! counter); other work is measured in an idle baseline first, and a shared machine's maximum
//! rate and bottleneck are shown but not judged.
//!
//! Not exercised: presenting to a display, a real NIC (loopback: both ends are this process),
//! memory traffic counters (memory utilisation is predicted only).

mod app;
mod probe;
pub mod report;
pub mod work;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::calc::{Prediction, fmt};
use super::inputs::{Inputs, Origin, Value};
use super::profile::Profile;
use crate::cli::CliError;
use crate::cpucost::CpuMeter;
use crate::platform::cputime;
use report::{StepRow, Validation, WorkingSet};

/// Set by Ctrl-C (SIGINT/SIGTERM/SIGHUP): the current step stops, files are removed, exit 130/143.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Where to write the validation (each optional).
#[derive(Debug, Default, Clone)]
pub struct Exports {
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

/// Remove the temp folders of validate runs whose process is gone (killed before cleaning up).
fn remove_stale() {
    crate::tempfiles::remove_stale_in(&std::env::temp_dir(), &["validate"]);
}

fn other(e: impl std::fmt::Display) -> CliError {
    CliError::Other(anyhow::anyhow!("model validate: {e}"))
}

fn proc_cpu_s() -> Result<f64, CliError> {
    Ok(cputime::process_cpu_ns().map_err(other)? as f64 / 1e9)
}

/// Flat-out runs, each followed by a probe; the maximum rate measured is their median.
pub const FLAT_OUT_RUNS: usize = 3;

fn ratio_text(measured: f64, predicted: f64) -> String {
    deviation_text(measured / predicted - 1.0, false)
}

/// A deviation; `range`: it is from the nearer end of a predicted range (0: inside it).
fn deviation_text(r: f64, range: bool) -> String {
    if range && r == 0.0 {
        return "inside the predicted range (agrees)".into();
    }
    format!(
        "{:+.1} %{} ({})",
        r * 100.0,
        if range { " from the nearer end" } else { "" },
        if r.abs() <= report::TOLERANCE {
            "agrees within 15 %"
        } else {
            "DISAGREES (> 15 %)"
        }
    )
}

pub fn run_cli(
    path: &Path,
    max_rate: Option<f64>,
    step_s: f64,
    exports: &Exports,
    run: Option<Inputs>,
) -> Result<i32, CliError> {
    let p = Profile::load(path).map_err(|e| CliError::Usage(e.0))?;
    if !(0.2..=60.0).contains(&step_s) {
        return Err(CliError::Usage("--step-s: from 0.2 to 60 seconds".into()));
    }
    if let Some(m) = max_rate
        && !(m.is_finite() && m > 0.0)
    {
        return Err(CliError::Usage("--max-rate: a rate above 0".into()));
    }
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    for (p, flag) in [
        (&exports.json, "--export-json"),
        (&exports.markdown, "--export-markdown"),
        (&exports.html, "--export-html"),
    ] {
        if let Some(p) = p {
            crate::export::check_writable(p)
                .map_err(|e| CliError::Usage(format!("{flag}: {e}")))?;
            outputs.push((flag, p));
        }
    }
    crate::export::check_distinct(&outputs).map_err(CliError::Usage)?;
    crate::export::claim_stdout(outputs.iter().map(|(_, p)| *p));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    remove_stale();
    crate::platform::install_interrupt_handler(&INTERRUPTED).map_err(other)?;
    let dir = crate::tempfiles::dir("validate").map_err(other)?;
    let r = validate(p, path, cpus, dir.path(), max_rate, step_s, run);
    drop(dir);
    match crate::platform::interrupt_exit_code() {
        Some(code) if INTERRUPTED.load(Ordering::Relaxed) => {
            crate::errln!("osgauge: model validate interrupted; temporary files removed");
            Ok(code)
        }
        _ => {
            let v = r?;
            write_exports(&v, exports)?;
            Ok(v.exit_code)
        }
    }
}

/// Every export asked for, each on its own (one failure does not stop the others).
fn write_exports(v: &Validation, ex: &Exports) -> Result<(), CliError> {
    let mut outs: Vec<crate::export::Output> = Vec::new();
    if let Some(p) = &ex.json {
        outs.push(("--export-json", p, report::json(v)));
    }
    if let Some(p) = &ex.markdown {
        outs.push(("--export-markdown", p, Ok(report::markdown(v))));
    }
    if let Some(p) = &ex.html {
        outs.push(("--export-html", p, Ok(report::html(v))));
    }
    crate::export::write_each(outs).map_err(CliError::Other)
}

fn validate(
    p: Profile,
    path: &Path,
    cpus: usize,
    dir: &Path,
    max_rate: Option<f64>,
    step_s: f64,
    run: Option<Inputs>,
) -> Result<Validation, CliError> {
    let mut p = p;
    let mut notes = Vec::new();
    let llc = crate::platform::cache::llc();
    let ws = (4 * llc.bytes) as usize;
    notes.push(format!(
        "every buffer the model counts as memory traffic streams through a ring of {} MiB = 4 × the last-level cache ({} MiB, {})",
        ws >> 20,
        llc.bytes >> 20,
        llc.source
    ));
    if p.demand.context_switches > 0.0 {
        let rt = app::round_trips(p.demand.context_switches);
        notes.push(format!(
            "the profile's {} context switches per unit: {rt} ping-pong round trip(s) with a partner thread over two pipes (2 switches per round trip), the pair bound to the worker's CPU so they are same-CPU switches (a cross-CPU wake-up of an idle partner costs ~10× more here, and a busy app mostly avoids it), costed by the probe's per-switch CPU of the same bound ping-pong",
            fmt(p.demand.context_switches)
        ));
    }
    if p.capacity.remove("net_link_mb_s").is_some() {
        notes.push(
            "the profile's stated NIC capacity is replaced by the loopback throughput the probe measures (the app runs over loopback)".into(),
        );
    }
    for n in &notes {
        crate::outln!("note: {n}");
    }
    crate::outln!(
        "validate: measuring the inputs with probes (loopback TCP, temp file, copies, ping-pong) …"
    );
    let meter = CpuMeter::start(Duration::from_millis(500)).map_err(other)?;
    let base = meter.peek().map_err(other)?.baseline.busy_cpus();
    // Probed five times — before the steps, between them and after each flat-out run — and judged on the
    // median of each input: on a shared host the core speed swings ~2× from moment to moment,
    // and one probe may catch a slow or a fast moment that the steps do not see.
    let mut probes = vec![probe::probe(&p, cpus, dir, ws)?];
    let mut ins = vec![probes[0].clone()];
    let mut stored_run = None;
    if let Some(mut r) = run {
        // The app runs over loopback: the run's inputs get the same loopback traffic statements
        // where the run measured none.
        for (k, v, why) in probe::LOOPBACK_TRAFFIC {
            if !r.values.contains_key(*k) && !p.assumptions.contains_key(*k) {
                r.values.insert(
                    k.to_string(),
                    Value {
                        value: *v,
                        origin: Origin::Assumed,
                        source: why.to_string(),
                    },
                );
            }
        }
        notes.push(format!(
            "also predicted from the stored run \"{}\" (its suite figures, the loopback traffic statements where it measured none); the verdict judges the probes' prediction",
            r.name
        ));
        crate::outln!("note: {}", notes.last().map_or("", |s| s.as_str()));
        ins.push(r.clone());
        stored_run = Some(r);
    }
    let a = super::analyse(&p, ins, None);
    let pred: Prediction = a.predictions[0].clone();
    crate::outln!("The prediction from the first probe (it sets the offered rates):");
    crate::out!("{}", super::render::text(&a));
    let busy = base > 0.25;
    crate::outln!(
        "Other work on this machine during a 0.5 s idle baseline: {:.2} CPUs{}",
        base,
        if busy {
            " — the machine is SHARED: the maximum rate and bottleneck are shown but not judged (CPU per unit is this process's own)."
        } else {
            "."
        }
    );
    let Some(x_pred) = pred.x_max else {
        return Err(other(
            "no maximum rate could be predicted (nothing limits the profile's work)",
        ));
    };
    let top = max_rate.unwrap_or(1.25 * x_pred);
    let disk_mb = p.demand.disk_write_mb + p.demand.disk_read_mb;
    let mut raw = Vec::new();
    crate::outln!(
        "\nvalidate: the synthetic application on {cpus} worker thread(s), {step_s} s per step"
    );
    crate::outln!(
        "  offered ({u}/s)  achieved ({u}/s)  CPU (this process)  − pacing  CPU predicted  achieved MB/s (per-unit MB × rate)",
        u = p.unit
    );
    let show = |r: &StepRow| {
        crate::outln!(
            "  {:>14}  {:>15.2}  {:>17.1} %  {:>8}  {:>14}  {}",
            r.offered.map_or("flat out".into(), |o| format!("{o:.2}")),
            r.achieved,
            r.cpu_measured_pct,
            r.cpu_pacing_pct.map_or("—".into(), |x| format!("{x:.1} %")),
            r.cpu_predicted_text(),
            r.achieved_mb_s
                .iter()
                .map(|(k, v)| format!("{k} {v:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let null = app::null_profile(&p);
    for (k, f) in [0.25, 0.5, 0.75, 1.0].into_iter().enumerate() {
        let r = (top * f / 1.25).max(0.01);
        // Long enough for ~20 units, within [step_s, 4 × step_s].
        let secs = (20.0 / r).clamp(step_s, 4.0 * step_s);
        // The harness's own pacing first: the same offered rate, no work per unit.
        let pacing = app::run_app(&null, cpus, Some(r), secs.min(1.0), dir, ws)?;
        let mut st = app::run_app(&p, cpus, Some(r), secs, dir, ws)?;
        st.pacing_cpu_util = Some(pacing.cpu_util);
        show(&StepRow::new(&st, &pred, disk_mb));
        raw.push(st);
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Err(other("interrupted"));
        }
        if k == 1 {
            probes.push(probe::probe(&p, cpus, dir, ws)?);
        }
    }
    // Flat out three times, each followed by a probe: the measured maximum rate is the median of
    // the three, set against the median of the probes around them (a shared host's memory
    // bandwidth and core speed drift by ±15 % between moments).
    for _ in 0..FLAT_OUT_RUNS {
        let st = app::run_app(&p, cpus, None, step_s, dir, ws)?;
        show(&StepRow::new(&st, &pred, disk_mb));
        raw.push(st);
        if INTERRUPTED.load(Ordering::Relaxed) {
            return Err(other("interrupted"));
        }
        probes.push(probe::probe(&p, cpus, dir, ws)?);
    }
    let flat = &raw[raw.len() - FLAT_OUT_RUNS..];
    let mut by_rate: Vec<&app::Step> = flat.iter().collect();
    by_rate.sort_by(|a, b| a.achieved.total_cmp(&b.achieved));
    let sat = by_rate[FLAT_OUT_RUNS / 2].clone();
    // The judged prediction: the median of the probes, input by input.
    let (median, spread) = probe::median_of(&probes);
    let spread_note = format!(
        "inputs judged: the median of {} probes (before the steps, between them, and after each flat-out run); their spread, max/min: {}",
        probes.len(),
        if spread.is_empty() {
            "—".to_string()
        } else {
            spread
                .iter()
                .map(|(k, lo, hi)| {
                    format!("{k} ×{:.2}", if *lo > 0.0 { hi / lo } else { f64::NAN })
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    crate::outln!("note: {spread_note}");
    notes.push(spread_note);
    let mut ins = vec![median];
    ins.extend(stored_run);
    let a = super::analyse(&p, ins, None);
    let pred: Prediction = a.predictions[0].clone();
    let Some(x_pred) = pred.x_max else {
        return Err(other(
            "no maximum rate could be predicted from the median probes",
        ));
    };
    crate::outln!(
        "The prediction from the median probes: maximum rate {:.2} {}/s, bottleneck {}; CPU per unit {}",
        x_pred,
        p.unit,
        pred.bottleneck.as_deref().unwrap_or("—"),
        pred.resource("cpu")
            .map_or("—".into(), |r| format!("{} CPU-s", fmt(r.demand)))
    );
    let steps: Vec<StepRow> = raw
        .iter()
        .map(|st| StepRow::new(st, &pred, disk_mb))
        .collect();
    // The maximum rate: the median flat-out run (an offered step can only reach its offer).
    let measured_max = sat.achieved;
    crate::outln!("\nComparison (prediction from the median probes vs the synthetic application):");
    crate::outln!(
        "  maximum rate: predicted {:.2}, measured {:.2} {}/s (the median of {FLAT_OUT_RUNS} flat-out runs: {}): {}",
        x_pred,
        measured_max,
        p.unit,
        flat.iter()
            .map(|s| format!("{:.2}", s.achieved))
            .collect::<Vec<_>>()
            .join(", "),
        ratio_text(measured_max, x_pred)
    );
    let mut cpu_ok = pred.resource("cpu").and_then(|r| r.s).unwrap_or(0.0) > 0.0;
    let mut devs = Vec::new();
    for st in &steps {
        match st.cpu_agrees {
            Some(_) => {
                devs.push(st.cpu_deviation());
                crate::outln!(
                    "  CPU utilisation at {:.2} {}/s ({}): predicted {}, measured {:.1} %{}: {}",
                    st.achieved,
                    p.unit,
                    st.offered
                        .map_or("flat out".to_string(), |o| format!("offered {o:.2}")),
                    st.cpu_predicted_text(),
                    st.cpu_work_pct(),
                    st.cpu_pacing_pct.map_or(String::new(), |x| format!(
                        " ({:.1} % − {x:.1} % the harness's pacing)",
                        st.cpu_measured_pct
                    )),
                    deviation_text(st.cpu_deviation(), st.cpu_predicted_contended_pct.is_some())
                );
            }
            None => cpu_ok = false,
        }
    }
    // The utilisation law is judged on the median deviation over the steps: one step caught in
    // a slow or fast moment of a shared host does not decide it, a law that is off shifts them all.
    if let Some(m) = report::median_deviation(&devs) {
        let beyond = steps.iter().filter(|s| s.cpu_agrees == Some(false)).count();
        let line = format!(
            "CPU utilisation over the {} steps: median deviation {:+.1} % ({beyond} step(s) beyond 15 %)",
            devs.len(),
            m * 100.0
        );
        crate::outln!("  {line}");
        notes.push(line);
        cpu_ok &= m.abs() <= report::TOLERANCE;
    }
    let bottleneck = pred.bottleneck.clone().unwrap_or_default();
    let b_inputs = pred
        .resource(&bottleneck)
        .map(|r| {
            r.parts
                .iter()
                .map(|x| format!("{}{}", x.label, if x.assumed { " [assumed]" } else { "" }))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default();
    let sat_cpu = sat.cpu_util;
    if let Some(rp) = a.predictions.get(1) {
        crate::outln!(
            "  from the run \"{}\": maximum rate {} {}/s (bottleneck {}){}; CPU at the flat-out rate {:.1} % predicted vs {:.1} % measured",
            rp.name,
            rp.x_max.map_or("—".into(), |x| format!("{x:.2}")),
            p.unit,
            rp.bottleneck.as_deref().unwrap_or("—"),
            rp.x_max.map_or(String::new(), |x| format!(
                ": {}",
                ratio_text(measured_max, x)
            )),
            rp.resource("cpu").and_then(|r| r.s).unwrap_or(0.0) * sat.achieved * 100.0,
            sat.cpu_util * 100.0
        );
    }
    crate::outln!(
        "  bottleneck: predicted {bottleneck}; flat out this process used {:.1} % of all CPUs",
        sat_cpu * 100.0
    );
    crate::outln!(
        "  memory, disk and network utilisations are predicted only (no counter measures them here)."
    );
    let verdict = report::judge(
        busy,
        x_pred,
        measured_max,
        cpu_ok,
        &bottleneck,
        &b_inputs,
        sat_cpu,
    );
    crate::outln!("{}", verdict.text);
    let exit_code = verdict.exit_code();
    Ok(Validation {
        schema: "osgauge.appmodel.validate/1",
        profile_path: path.display().to_string(),
        working_set: WorkingSet {
            llc_bytes: llc.bytes,
            llc_source: llc.source,
            ring_bytes: ws,
        },
        background_cpus: base,
        shared_machine: busy,
        notes,
        analysis: a,
        steps,
        verdict,
        exit_code,
    })
}
