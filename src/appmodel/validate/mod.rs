//! `osgauge model validate <profile>`: a synthetic application doing exactly the profile's
//! per-unit work (`app.rs`: receive over loopback TCP, write and read a temp file, copy memory,
//! compute, copy frames, send over loopback, ping-pong with a partner thread for the context
//! switches), run at rising offered rates and then flat out, measuring the achieved rate and this
//! process's CPU utilisation. The prediction it is judged against is made from a stored run's
//! suite figures (`--inputs RUN`, else the newest complete stored run) — the inputs a user's
//! `osgauge model` reads. Probes (`probe.rs`) that repeat the app's own operations
//! give a second prediction, shown beside as a diagnostic and never judged; without a stored
//! run nothing is judged. A law whose prediction is over half stated figures (the profile's own
//! `app_cpu_s`, assumed copy counts) agrees by construction and is not counted. Every buffer whose bytes the model counts as memory
//! traffic streams through a ring of ≥ 4 × the last-level cache (`work.rs`), so that traffic
//! really reaches memory. CPU is this process's own CPU time (`crate::cpucost`'s process
//! counter); other work is measured in an idle baseline first, and a shared machine's maximum
//! rate and bottleneck are shown but not judged.
//!
//! Not exercised: presenting to a display, a real NIC (loopback: both ends are this process),
//! memory traffic counters (memory utilisation is predicted only).

mod app;
pub mod disk;
mod probe;
pub mod report;
pub mod work;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::calc::{Prediction, fmt};
use super::inputs::{Inputs, Origin, Value};
use super::profile::Profile;
use crate::cpucost::CpuMeter;
use crate::platform::cputime;
use report::{StepRow, Validation, WorkingSet};

/// Set by Ctrl-C (SIGINT/SIGTERM/SIGHUP): the current step stops, files are removed, exit 130/143.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Why `model validate` came to no verdict.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// Something failed while measuring: an I/O error, a worker that panicked, no rate that
    /// could be predicted.
    #[error("model validate: {0}")]
    Failed(String),
    /// A stop signal (Ctrl-C, SIGTERM, SIGHUP) ended the run; its temporary files are removed.
    #[error("model validate interrupted; temporary files removed")]
    Interrupted,
}

/// Remove the temp folders of validate runs whose process is gone (killed before cleaning up).
fn remove_stale() {
    crate::tempfiles::remove_stale_in(&std::env::temp_dir(), &["validate"]);
}

fn failed(e: impl std::fmt::Display) -> ValidateError {
    ValidateError::Failed(e.to_string())
}

fn proc_cpu_s() -> Result<f64, ValidateError> {
    Ok(cputime::process_cpu_ns().map_err(failed)? as f64 / 1e9)
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

/// Validate the profile `p` (read from `path`) on every CPU of this machine, in a temp folder of
/// its own (removed before it returns; those of killed runs are removed first). `max_rate`: the
/// highest offered rate (default 1.25 × the prediction); `step_s`: seconds per step; `stored`: a
/// stored run's inputs, predicted from too.
pub fn run(
    p: Profile,
    path: &Path,
    max_rate: Option<f64>,
    step_s: f64,
    stored: Option<Inputs>,
) -> Result<Validation, ValidateError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    remove_stale();
    crate::platform::install_interrupt_handler(&INTERRUPTED).map_err(failed)?;
    let dir = crate::tempfiles::dir("validate").map_err(failed)?;
    let r = validate(p, path, cpus, dir.path(), max_rate, step_s, stored);
    drop(dir);
    if INTERRUPTED.load(Ordering::Relaxed) && crate::platform::interrupt_exit_code().is_some() {
        return Err(ValidateError::Interrupted);
    }
    r
}

/// The probes and the synthetic application of one validation, in its temp folder.
struct Rig<'a> {
    p: &'a Profile,
    cpus: usize,
    dir: &'a Path,
    /// Bytes of each ring the buffers stream through.
    ws: usize,
    step_s: f64,
}

fn validate(
    p: Profile,
    path: &Path,
    cpus: usize,
    dir: &Path,
    max_rate: Option<f64>,
    step_s: f64,
    stored: Option<Inputs>,
) -> Result<Validation, ValidateError> {
    synthetic_can_run(&p)?;
    let mut p = p;
    let llc = crate::platform::cache::llc();
    let ws = (4 * llc.bytes) as usize;
    let mut notes = setup_notes(&mut p, &llc, ws);
    for n in &notes {
        crate::outln!("note: {n}");
    }
    crate::outln!(
        "validate: measuring the inputs with probes (loopback TCP, temp file, copies, ping-pong) …"
    );
    let rig = Rig {
        p: &p,
        cpus,
        dir,
        ws,
        step_s,
    };
    let base = idle_baseline()?;
    // Probed five times — before the steps, between them and after each flat-out run — and judged on the
    // median of each input: on a shared host the core speed swings ~2× from moment to moment,
    // and one probe may catch a slow or a fast moment that the steps do not see.
    let mut probes = vec![rig.probe()?];
    let stored = stored.map(|r| with_loopback_traffic(r, &p));
    let pred = first_prediction(&p, &probes[0], stored.as_ref(), &mut notes);
    let busy = base > 0.25;
    show_baseline(base, busy);
    let Some(x_pred) = pred.x_max else {
        return Err(failed(
            "no maximum rate could be predicted (nothing limits the profile's work)",
        ));
    };
    let top = max_rate.unwrap_or(1.25 * x_pred);
    let raw = rig.steps(top, &pred, &mut probes)?;
    let flat = &raw[raw.len() - FLAT_OUT_RUNS..];
    let sat = median_run(flat, |s| s.achieved).clone();
    let from_stored = stored.is_some();
    let a = judged_analysis(&p, &probes, stored, &mut notes);
    // The judged prediction: the stored run's suite figures — the inputs a user's `osgauge
    // model` reads. The probes' prediction is a diagnostic beside it, never judged.
    let pred: Prediction = a.predictions[usize::from(from_stored)].clone();
    let probes_pred = &a.predictions[0];
    let Some(x_pred) = pred.x_max else {
        return Err(failed(format!(
            "no maximum rate could be predicted from \"{}\"",
            pred.name
        )));
    };
    show_judged_prediction(&pred, probes_pred, x_pred, &p.unit, from_stored);
    let disk_mb = p.demand.disk_write_mb + p.demand.disk_read_mb;
    let steps: Vec<StepRow> = raw
        .iter()
        .map(|st| StepRow::new(st, &pred, disk_mb))
        .collect();
    // The maximum rate: the median flat-out run (an offered step can only reach its offer).
    let measured_max = sat.achieved;
    show_max_rate(x_pred, measured_max, &p.unit, flat);
    let cpu_ok = judge_cpu(&pred, &steps, &p.unit, &mut notes);
    if from_stored {
        show_stored(probes_pred, &p.unit, &sat);
    }
    let verdict = verdict(&pred, x_pred, &sat, cpu_ok, busy, from_stored);
    crate::outln!("{}", verdict.text);
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
    })
}

/// Refuses a profile the synthetic application cannot reproduce: disk_io "stream" or "relay"
/// (it writes direct or buffered files only) and triad memory traffic (it copies only); those
/// are checked against a real application.
fn synthetic_can_run(p: &Profile) -> Result<(), ValidateError> {
    if ["stream", "relay"].contains(&p.demand.disk_io.as_str()) {
        return Err(failed(format!(
            "the synthetic application writes direct or buffered files only; a profile with \
             disk_io = \"{}\" is checked against a real application (`osgauge model check`)",
            p.demand.disk_io
        )));
    }
    if p.demand.app_mem_triad_mb > 0.0 {
        return Err(failed(
            "the synthetic application moves its memory traffic with a copy kernel only; a \
             profile with app_mem_triad_mb is checked against a real application (`osgauge \
             model check`)",
        ));
    }
    Ok(())
}

/// Says how much other work the idle baseline `base` (CPUs) saw, and that on a `busy` (shared)
/// machine the results are shown but not judged.
fn show_baseline(base: f64, busy: bool) {
    crate::outln!(
        "Other work on this machine during a 0.5 s idle baseline: {:.2} CPUs{}",
        base,
        if busy {
            " — the machine is SHARED: the maximum rate and bottleneck are shown but not judged (CPU per unit is this process's own)."
        } else {
            "."
        }
    );
}

/// The comparison's first line: the predicted maximum rate `x_pred` against the `measured` one,
/// the median of the `flat` (flat-out) runs, each of which is listed.
fn show_max_rate(x_pred: f64, measured: f64, unit: &str, flat: &[app::Step]) {
    crate::outln!("\nComparison (prediction from the median probes vs the synthetic application):");
    crate::outln!(
        "  maximum rate: predicted {:.2}, measured {:.2} {}/s (the median of {FLAT_OUT_RUNS} flat-out runs: {}): {}",
        x_pred,
        measured,
        unit,
        flat.iter()
            .map(|s| format!("{:.2}", s.achieved))
            .collect::<Vec<_>>()
            .join(", "),
        ratio_text(measured, x_pred)
    );
}

/// The prediction from the first probe (it sets the offered rates), printed; with a stored run
/// its note is said and kept first.
fn first_prediction(
    p: &Profile,
    probe: &Inputs,
    stored: Option<&Inputs>,
    notes: &mut Vec<String>,
) -> Prediction {
    if let Some(r) = stored {
        notes.push(format!(
            "predicted from the stored run \"{}\" (its suite figures, the loopback traffic statements where it measured none): the verdict judges this prediction; the probes' is a diagnostic beside it",
            r.name
        ));
        crate::outln!("note: {}", notes.last().map_or("", |s| s.as_str()));
    }
    let mut ins = vec![probe.clone()];
    ins.extend(stored.cloned());
    let a = super::analyse(p, ins, None);
    let pred: Prediction = a.predictions[0].clone();
    crate::outln!("The prediction from the first probe (it sets the offered rates):");
    crate::out!("{}", super::render::text(&a));
    pred
}

/// The analysis judged: the median of the probes, input by input, then the stored run (when
/// there is one; else a note says the probes' prediction is a diagnostic only).
fn judged_analysis(
    p: &Profile,
    probes: &[Inputs],
    stored: Option<Inputs>,
    notes: &mut Vec<String>,
) -> super::Analysis {
    let (median, spread) = probe::median_of(probes);
    let spread_note = spread_note(probes.len(), &spread);
    crate::outln!("note: {spread_note}");
    notes.push(spread_note);
    let from_stored = stored.is_some();
    let mut ins = vec![median];
    ins.extend(stored);
    let a = super::analyse(p, ins, None);
    if !from_stored {
        let n = "no stored run to predict from (--inputs RUN): the probes' prediction below is a DIAGNOSTIC and is not judged — run `osgauge micro …` (the TO MEASURE line above) and validate with --inputs".to_string();
        crate::outln!("note: {n}");
        notes.push(n);
    }
    a
}

/// The judged prediction's maximum rate, bottleneck and CPU per unit; with a stored run, the
/// probes' beside it.
fn show_judged_prediction(
    pred: &Prediction,
    probes_pred: &Prediction,
    x_pred: f64,
    unit: &str,
    from_stored: bool,
) {
    crate::outln!(
        "The judged prediction ({}): maximum rate {:.2} {}/s, bottleneck {}; CPU per unit {}",
        if from_stored {
            pred.name.as_str()
        } else {
            "the median probes — diagnostic only"
        },
        x_pred,
        unit,
        pred.bottleneck.as_deref().unwrap_or("—"),
        pred.resource("cpu")
            .map_or("—".into(), |r| format!("{} CPU-s", fmt(r.demand)))
    );
    if from_stored {
        crate::outln!(
            "The probes' prediction beside it (diagnostic, not judged): maximum rate {} {}/s, bottleneck {}; CPU per unit {}",
            probes_pred.x_max.map_or("—".into(), |x| format!("{x:.2}")),
            unit,
            probes_pred.bottleneck.as_deref().unwrap_or("—"),
            probes_pred
                .resource("cpu")
                .map_or("—".into(), |r| format!("{} CPU-s", fmt(r.demand)))
        );
    }
}

/// The bottleneck line, then the verdict on the maximum rate and the CPU per unit: not judged on
/// a shared machine, without a stored run, or when the stored run lacks inputs.
fn verdict(
    pred: &Prediction,
    x_pred: f64,
    sat: &app::Step,
    cpu_ok: bool,
    busy: bool,
    from_stored: bool,
) -> report::Verdict {
    let measured_max = sat.achieved;
    let bottleneck = pred.bottleneck.clone().unwrap_or_default();
    crate::outln!(
        "  bottleneck: predicted {bottleneck}; flat out this process used {:.1} % of all CPUs",
        sat.cpu_util * 100.0
    );
    crate::outln!(
        "  memory, disk and network utilisations are predicted only (no counter measures them here)."
    );
    let refused = |r: &str| {
        super::construction::basis(pred, r)
            .filter(|b| b.by_construction())
            .map(|b| b.text())
    };
    let incomplete = from_stored && pred.upper_bound;
    let mut verdict = report::judge_counted(
        busy || !from_stored || incomplete,
        x_pred,
        measured_max,
        cpu_ok,
        &bottleneck,
        &demand_parts(pred, &bottleneck),
        sat.cpu_util,
        refused(&bottleneck),
        refused("cpu"),
    );
    if incomplete {
        verdict.text = format!(
            "NOT JUDGED: the stored run \"{}\" lacks inputs the profile reads ({}), so its prediction is only an upper bound; beside it the maximum rate is {:+.1} %.",
            pred.name,
            pred.missing
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            (measured_max / x_pred - 1.0) * 100.0
        );
    } else if !from_stored {
        verdict.text = format!(
            "NOT JUDGED: no stored run to predict from (--inputs RUN): the probes' prediction is a diagnostic only; beside it the maximum rate is {:+.1} %, the CPU per unit {}.",
            (measured_max / x_pred - 1.0) * 100.0,
            if cpu_ok {
                "within 15 %"
            } else {
                "off by > 15 %"
            }
        );
    }
    verdict
}

/// What the run does beyond the profile's words, said before it starts: the rings' size, how
/// the context switches are made, and the loopback throughput in place of a stated NIC
/// (removed from `p`).
fn setup_notes(p: &mut Profile, llc: &crate::platform::cache::Llc, ws: usize) -> Vec<String> {
    let mut notes = Vec::new();
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
    notes
}

/// Other work on this machine, CPUs busy during a 0.5 s idle baseline.
fn idle_baseline() -> Result<f64, ValidateError> {
    let meter = CpuMeter::start(Duration::from_millis(500)).map_err(failed)?;
    Ok(meter.peek().map_err(failed)?.baseline.busy_cpus())
}

/// A stored run's inputs for the app, which runs over loopback: the same loopback traffic
/// statements as the probes where the run measured none (and the profile states none).
fn with_loopback_traffic(mut r: Inputs, p: &Profile) -> Inputs {
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
    r
}

/// The median run: the middle one by `rate` (of an even count, the upper middle). The maximum
/// rate measured is the median flat-out run's — a real run, whose CPU goes with it.
pub fn median_run<T>(runs: &[T], rate: impl Fn(&T) -> f64) -> &T {
    let mut by_rate: Vec<&T> = runs.iter().collect();
    by_rate.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    by_rate[runs.len() / 2]
}

fn spread_note(n: usize, spread: &[(String, f64, f64)]) -> String {
    format!(
        "inputs judged: the median of {n} probes (before the steps, between them, and after each flat-out run); their spread, max/min: {}",
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
    )
}

impl Rig<'_> {
    /// Fresh inputs, measured the way the app does the same work.
    fn probe(&self) -> Result<Inputs, ValidateError> {
        probe::probe(self.p, self.cpus, self.dir, self.ws)
    }

    /// The synthetic application at four rising offered rates up to `top` (a probe after the
    /// second), then flat out [`FLAT_OUT_RUNS`] times, each followed by a probe; each step
    /// printed against `pred` as it ends.
    fn steps(
        &self,
        top: f64,
        pred: &Prediction,
        probes: &mut Vec<Inputs>,
    ) -> Result<Vec<app::Step>, ValidateError> {
        let (p, cpus, dir, ws, step_s) = (self.p, self.cpus, self.dir, self.ws, self.step_s);
        let disk_mb = p.demand.disk_write_mb + p.demand.disk_read_mb;
        let mut raw = Vec::new();
        crate::outln!(
            "\nvalidate: the synthetic application on {cpus} worker thread(s), {step_s} s per step"
        );
        crate::outln!(
            "  offered ({u}/s)  achieved ({u}/s)  CPU (this process)  − pacing  CPU predicted  achieved MB/s (per-unit MB × rate)",
            u = p.unit
        );
        let null = app::null_profile(p);
        for (k, f) in [0.25, 0.5, 0.75, 1.0].into_iter().enumerate() {
            let r = (top * f / 1.25).max(0.01);
            // Long enough for ~20 units, within [step_s, 4 × step_s].
            let secs = (20.0 / r).clamp(step_s, 4.0 * step_s);
            // The harness's own pacing first: the same offered rate, no work per unit.
            let pacing = app::run_app(&null, cpus, Some(r), secs.min(1.0), dir, ws)?;
            let mut st = app::run_app(p, cpus, Some(r), secs, dir, ws)?;
            st.pacing_cpu_util = Some(pacing.cpu_util);
            show(&StepRow::new(&st, pred, disk_mb));
            raw.push(st);
            if INTERRUPTED.load(Ordering::Relaxed) {
                return Err(failed("interrupted"));
            }
            if k == 1 {
                probes.push(self.probe()?);
            }
        }
        // Flat out three times, each followed by a probe: the measured maximum rate is the median of
        // the three, set against the median of the probes around them (a shared host's memory
        // bandwidth and core speed drift by ±15 % between moments).
        for _ in 0..FLAT_OUT_RUNS {
            let st = app::run_app(p, cpus, None, step_s, dir, ws)?;
            show(&StepRow::new(&st, pred, disk_mb));
            raw.push(st);
            if INTERRUPTED.load(Ordering::Relaxed) {
                return Err(failed("interrupted"));
            }
            probes.push(self.probe()?);
        }
        Ok(raw)
    }
}

/// One step's line as it ends.
fn show(r: &StepRow) {
    crate::outln!(
        "  {:>14}  {:>15.2}  {:>17.1} %  {:>8}  {:>14}  {}",
        r.offered_text(),
        r.achieved,
        r.cpu_measured_pct,
        r.cpu_pacing_pct.map_or("—".into(), |x| format!("{x:.1} %")),
        r.cpu_predicted_text(),
        r.achieved_mb_s_text()
    );
}

/// The utilisation law: each step's CPU against the prediction (printed), judged on the median
/// deviation over the steps — one step caught in a slow or fast moment of a shared host does
/// not decide it, a law that is off shifts them all. False too when the CPU has no predicted
/// demand or a step could not be judged.
fn judge_cpu(pred: &Prediction, steps: &[StepRow], unit: &str, notes: &mut Vec<String>) -> bool {
    let mut cpu_ok = pred.resource("cpu").and_then(|r| r.s).unwrap_or(0.0) > 0.0;
    let mut devs = Vec::new();
    for st in steps {
        match st.cpu_agrees {
            Some(_) => {
                devs.push(st.cpu_deviation());
                crate::outln!(
                    "  CPU utilisation at {:.2} {}/s ({}): predicted {}, measured {:.1} %{}: {}",
                    st.achieved,
                    unit,
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
    cpu_ok
}

/// What the demand of `resource` is made of: its parts' labels, assumed ones marked.
fn demand_parts(pred: &Prediction, resource: &str) -> String {
    pred.resource(resource)
        .map(|r| {
            r.parts
                .iter()
                .map(|x| format!("{}{}", x.label, if x.assumed { " [assumed]" } else { "" }))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

/// The probes' prediction beside the median flat-out run `sat` (a diagnostic, not judged).
fn show_stored(rp: &Prediction, unit: &str, sat: &app::Step) {
    crate::outln!(
        "  from the run \"{}\": maximum rate {} {}/s (bottleneck {}){}; CPU at the flat-out rate {:.1} % predicted vs {:.1} % measured",
        rp.name,
        rp.x_max.map_or("—".into(), |x| format!("{x:.2}")),
        unit,
        rp.bottleneck.as_deref().unwrap_or("—"),
        rp.x_max.map_or(String::new(), |x| format!(
            ": {}",
            ratio_text(sat.achieved, x)
        )),
        rp.resource("cpu").and_then(|r| r.s).unwrap_or(0.0) * sat.achieved * 100.0,
        sat.cpu_util * 100.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maximum_rate_measured_is_the_median_flat_out_run_with_its_cpu() {
        let run = |achieved: f64, cpu_util: f64| app::Step {
            offered: None,
            duration_s: 1.0,
            achieved,
            cpu_util,
            pacing_cpu_util: None,
        };
        let flat = [run(30.0, 0.9), run(10.0, 0.4), run(20.0, 0.7)];
        let sat = median_run(&flat, |s| s.achieved);
        assert_eq!((sat.achieved, sat.cpu_util), (20.0, 0.7));
        // Of an even count, the upper middle: a real run, never an average of two.
        assert_eq!(*median_run(&[4.0, 1.0, 3.0, 2.0], |x| *x), 3.0);
        assert_eq!(*median_run(&[5.0], |x| *x), 5.0);
    }
}
