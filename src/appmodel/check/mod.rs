//! `osgauge model check <profile> [RUN]`: the application model against a real application
//! osgauge did not write. The profile names the application (`app.check`, see
//! [`apps::Kind`]) and states its per-unit demands from first principles; the prediction comes
//! from a stored run's suite figures (the same inputs `osgauge model` uses — never from probes);
//! the application is driven at rising offered rates and flat out, each step measured with the
//! CPU-cost meter of the suites ([`crate::cpucost::CpuMeter`]: system-wide CPU net of idle windows
//! before and after) and the application's own processes' CPU (reaped children), plus the
//! resources it should load where a counter exists (disk bytes from the block layer, loopback
//! bytes). Memory traffic has no counter read here: said, not filled in.
//!
//! Judged: the maximum rate (bottleneck law) and the CPU per unit (utilisation law), each only
//! when its prediction is not dominated by stated figures ([`super::construction`]); the verdict
//! names the law or input that is off.

pub mod apps;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::Analysis;
use super::calc::{Prediction, fmt};
use super::construction::{self, Basis};
use super::inputs::Inputs;
use super::profile::Profile;
use super::validate::report::{TOLERANCE, deviation};
use crate::cpucost::CpuMeter;
use crate::platform::counters;
use apps::{Kind, Offer};

/// Flat-out runs; the maximum rate measured is their median.
pub const FLAT_OUT_RUNS: usize = 3;
/// Idle window before and after each step for the CPU meter.
const IDLE: Duration = Duration::from_millis(300);
/// Busy CPUs at idle above which the machine is shared and the verdict is not judged.
pub const SHARED_CPUS: f64 = 0.25;

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The application cannot run here (not installed): the reason.
    #[error("model check: NOT RUN: {0}")]
    NotRun(String),
    #[error("model check: {0}")]
    Failed(String),
}

fn failed(e: impl std::fmt::Display) -> CheckError {
    CheckError::Failed(e.to_string())
}

/// One step as measured.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    pub offer: Offer,
    pub offer_text: String,
    /// Units per second achieved.
    pub achieved: f64,
    pub units: Option<f64>,
    pub wall_s: f64,
    /// Busy CPUs of other work in the idle windows around the step.
    pub background_cpus: f64,
    /// System-wide CPU-seconds per unit, net of the idle windows (None: not measurable, `cpu_why`).
    pub cpu_s_per_unit: Option<f64>,
    pub cpu_why: Option<String>,
    /// The application's own processes' CPU-seconds per unit.
    pub process_cpu_s_per_unit: Option<f64>,
    /// MB per unit the disks wrote / read, and loopback carried, during the step.
    pub disk_write_mb_per_unit: Option<f64>,
    pub disk_read_mb_per_unit: Option<f64>,
    pub loopback_mb_per_unit: Option<f64>,
    /// The application's busiest thread's CPU-seconds per unit (None: not measured, `thread_why`).
    pub thread_cpu_s_per_unit: Option<f64>,
    pub thread_why: Option<String>,
    pub note: Option<String>,
}

/// One law judged (or refused).
#[derive(Debug, Clone, Serialize)]
pub struct LawCheck {
    pub law: String,
    pub unit: String,
    pub predicted: Option<f64>,
    /// The upper end when the prediction is a range (memory contention).
    pub predicted_hi: Option<f64>,
    pub measured: Option<f64>,
    pub deviation: Option<f64>,
    pub agrees: Option<bool>,
    /// False: by construction (its prediction is > 50 % stated) or nothing measured.
    pub counts: bool,
    pub basis: Option<Basis>,
    pub text: String,
}

impl LawCheck {
    /// A law's check from its figures: it agrees within [`TOLERANCE`], and counts unless its
    /// prediction is by construction or nothing was measured.
    #[allow(clippy::too_many_arguments)]
    fn new(
        law: &str,
        unit: String,
        predicted: Option<f64>,
        predicted_hi: Option<f64>,
        measured: Option<f64>,
        deviation: Option<f64>,
        basis: Option<Basis>,
        text: String,
    ) -> LawCheck {
        let by_constr = basis.as_ref().is_some_and(|b| b.by_construction());
        let agrees = deviation.map(|d| d.abs() <= TOLERANCE);
        LawCheck {
            law: law.into(),
            unit,
            predicted,
            predicted_hi,
            measured,
            deviation,
            agrees,
            counts: !by_constr && agrees.is_some(),
            basis,
            text,
        }
    }
}

/// A counter against the profile's demand (shown, not judged).
#[derive(Debug, Clone, Serialize)]
pub struct CounterRow {
    pub resource: String,
    pub profile_mb_per_unit: f64,
    pub measured_mb_per_unit: Option<f64>,
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub schema: &'static str,
    pub profile_path: String,
    pub app: Kind,
    pub inputs: String,
    pub background_cpus: f64,
    pub shared_machine: bool,
    /// Why the prediction is only an upper bound (inputs missing), when it is.
    pub incomplete: Option<String>,
    pub analysis: Analysis,
    pub steps: Vec<StepRow>,
    pub counters: Vec<CounterRow>,
    pub checks: Vec<LawCheck>,
    pub judged: bool,
    pub agrees: bool,
    pub off: Option<String>,
    pub verdict: String,
}

impl CheckReport {
    /// A quiet machine's counted check disagrees.
    pub fn disagrees(&self) -> bool {
        self.judged && self.off.is_some()
    }
}

/// The application the profile names, or why none.
pub fn kind_of(p: &Profile) -> Result<Kind, CheckError> {
    let Some(name) = &p.check else {
        return Err(failed(format!(
            "the profile names no real application (app.check = one of {})",
            Kind::ALL
                .iter()
                .map(|k| format!("\"{}\"", k.name()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    Kind::from_name(name).ok_or_else(|| failed(format!("app.check: unknown application {name:?}")))
}

/// Run the check of `p` (read from `path`) against the stored inputs `inp`.
pub fn run(
    p: &Profile,
    path: &Path,
    inp: Inputs,
    step_s: Option<f64>,
) -> Result<CheckReport, CheckError> {
    let kind = kind_of(p)?;
    kind.available().map_err(CheckError::NotRun)?;
    let a = super::analyse(p, vec![inp], None);
    let pred = a.predictions[0].clone();
    crate::out!("{}", super::render::text(&a));
    // Inputs missing: the prediction is an upper bound — the application is still run and
    // measured, but nothing is judged.
    let incomplete = incomplete_note(&pred);
    if let Some(n) = &incomplete {
        crate::outln!("note: {n}");
    }
    let Some(x_pred) = pred.x_max else {
        return Err(failed("no maximum rate could be predicted"));
    };
    let steps = run_steps(kind, p, &pred, x_pred, step_s)?;
    let background =
        crate::stats::median(&steps.iter().map(|s| s.background_cpus).collect::<Vec<_>>());
    let shared = background > SHARED_CPUS;
    let counters = counter_rows(p, &steps);
    let mut checks = vec![max_rate_check(&pred, &steps), cpu_check(&pred, &steps)];
    checks.extend(thread_check(&pred, &steps));
    let (off, mut verdict) = verdict(&checks, shared || incomplete.is_some(), background, &pred);
    if let Some(n) = &incomplete {
        verdict = format!("NOT JUDGED: {n}; figures shown for information.");
    }
    show_outcome(&checks, &counters, &verdict);
    let judged = !shared && incomplete.is_none() && checks.iter().any(|c| c.counts);
    Ok(CheckReport {
        schema: "osgauge.appmodel.check/1",
        profile_path: path.display().to_string(),
        app: kind,
        inputs: pred.name.clone(),
        background_cpus: background,
        shared_machine: shared,
        incomplete,
        analysis: a,
        steps,
        counters,
        checks,
        judged,
        agrees: judged && off.is_none(),
        off: if judged { off } else { None },
        verdict,
    })
}

/// Why a prediction that is only an upper bound (its inputs lack figures the profile reads) is
/// not judged: the missing figures and how to measure them; `None` for a full prediction.
fn incomplete_note(pred: &Prediction) -> Option<String> {
    pred.upper_bound.then(|| {
        format!(
            "the inputs \"{}\" lack figures the profile reads ({}), so the prediction is only an upper bound{}",
            pred.name,
            pred.missing
                .iter()
                .map(|(k, why)| format!("{k}: {why}"))
                .collect::<Vec<_>>()
                .join("; "),
            pred.to_measure
                .as_ref()
                .map_or(String::new(), |c| format!(" — measure them with `{c}`"))
        )
    })
}

/// Runs the application `kind` at each offered rate around the predicted maximum `x_pred` (the
/// last ones flat out) in a temporary folder, each row printed as it is measured.
fn run_steps(
    kind: Kind,
    p: &Profile,
    pred: &Prediction,
    x_pred: f64,
    step_s: Option<f64>,
) -> Result<Vec<StepRow>, CheckError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    crate::tempfiles::remove_stale_in(&std::env::temp_dir(), &["check"]);
    let dir = crate::tempfiles::dir("check").map_err(failed)?;
    let mut steps = Vec::new();
    crate::outln!(
        "\ncheck: {} ({}), predicted from \"{}\"; {} s per step",
        kind.name(),
        kind.programs().join(" + "),
        pred.name,
        kind.step_s(step_s)
    );
    crate::outln!(
        "  {:>16}  {:>12}  {:>14}  {:>14}  {:>14}  {:>12}  {:>12}  {:>12}",
        "offered",
        format!("{}/s", p.unit),
        "CPU-s/unit sys",
        "CPU-s/unit app",
        "1-thread CPU-s",
        "disk MB/unit",
        "lo MB/unit",
        "background"
    );
    for offer in kind.offers(x_pred, cpus, FLAT_OUT_RUNS) {
        let row = step(kind, offer, kind.step_s(step_s), dir.path(), cpus, &p.unit)?;
        show(&row, pred);
        steps.push(row);
    }
    drop(dir);
    Ok(steps)
}

/// The checks' lines, the profile's traffic against the counters, and the verdict.
fn show_outcome(checks: &[LawCheck], counters: &[CounterRow], verdict: &str) {
    for c in checks {
        crate::outln!("  {}", c.text);
    }
    for c in counters {
        crate::outln!(
            "  {}: profile {} MB/unit, measured {} ({})",
            c.resource,
            fmt(c.profile_mb_per_unit),
            c.measured_mb_per_unit
                .map_or("— not measurable here".into(), |m| format!(
                    "{} MB/unit",
                    fmt(m)
                )),
            c.source
        );
    }
    crate::outln!("{verdict}");
}

struct Reading {
    disk: Option<counters::DiskBytes>,
    lo: Option<u64>,
    kids: Option<u64>,
}

fn read_counters() -> Reading {
    Reading {
        disk: counters::disk_bytes().ok(),
        lo: counters::loopback_bytes().ok(),
        kids: counters::children_cpu_ns().ok(),
    }
}

fn step(
    kind: Kind,
    offer: Offer,
    secs: f64,
    dir: &Path,
    cpus: usize,
    unit: &str,
) -> Result<StepRow, CheckError> {
    let meter = CpuMeter::start(IDLE).map_err(failed)?;
    let r0 = read_counters();
    let done = kind.run(offer, secs, dir, cpus).map_err(failed)?;
    let r1 = read_counters();
    let cost = meter.stop().map_err(failed)?;
    // Outside the CPU window: the check's clean-up, not the application's work.
    if let Some(f) = &done.leftover {
        let _ = std::fs::remove_file(f);
    }
    let wall = cost.test.wall_s;
    // Units of the whole window: the application's own count, or (a rate over its own timed
    // loop) that rate × the window, its set-up being CPU work of the same kind.
    let achieved = done.rate;
    let units = done.units.unwrap_or(achieved * wall);
    let per_unit = |x: f64| (units > 0.0).then(|| x / units);
    let (cpu, why) = match cost.usable() {
        Ok(()) => (per_unit(cost.net_cpu_s), None),
        Err(w) => (None, Some(w)),
    };
    let kids = match (r0.kids, r1.kids) {
        (Some(a), Some(b)) => per_unit(b.saturating_sub(a) as f64 / 1e9),
        _ => None,
    };
    let mb = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => per_unit(b.saturating_sub(a) as f64 / 1e6),
        _ => None,
    };
    Ok(StepRow {
        offer,
        offer_text: offer.text(unit),
        achieved,
        units: Some(units),
        wall_s: wall,
        background_cpus: cost.background_cpus(),
        cpu_s_per_unit: cpu,
        cpu_why: why,
        process_cpu_s_per_unit: kids,
        disk_write_mb_per_unit: mb(r0.disk.map(|d| d.written), r1.disk.map(|d| d.written)),
        disk_read_mb_per_unit: mb(r0.disk.map(|d| d.read), r1.disk.map(|d| d.read)),
        loopback_mb_per_unit: mb(r0.lo, r1.lo),
        thread_cpu_s_per_unit: done.thread_cpu_s.as_ref().ok().and_then(|c| per_unit(*c)),
        thread_why: done.thread_cpu_s.err(),
        note: done.note,
    })
}

fn opt(v: Option<f64>) -> String {
    v.map_or("—".into(), fmt)
}

fn show(r: &StepRow, pred: &Prediction) {
    let _ = pred;
    crate::outln!(
        "  {:>16}  {:>12.2}  {:>14}  {:>14}  {:>14}  {:>12}  {:>12}  {:>9.2} CPUs{}",
        r.offer_text,
        r.achieved,
        opt(r.cpu_s_per_unit),
        opt(r.process_cpu_s_per_unit),
        opt(r.thread_cpu_s_per_unit),
        opt(r.disk_write_mb_per_unit),
        opt(r.loopback_mb_per_unit),
        r.background_cpus,
        r.note
            .as_ref()
            .map_or(String::new(), |n| format!("  ({n})"))
    );
}

/// Profile demand vs what the counters saw, over all steps (units-weighted).
fn counter_rows(p: &Profile, steps: &[StepRow]) -> Vec<CounterRow> {
    let mean = |f: &dyn Fn(&StepRow) -> Option<f64>| {
        let mut num = 0.0;
        let mut den = 0.0;
        for s in steps {
            if let (Some(v), Some(u)) = (f(s), s.units) {
                num += v * u;
                den += u;
            }
        }
        (den > 0.0).then(|| num / den)
    };
    let d = &p.demand;
    let mut rows = Vec::new();
    if d.disk_write_mb > 0.0 || d.disk_read_mb > 0.0 {
        rows.push(CounterRow {
            resource: "disk written".into(),
            profile_mb_per_unit: d.disk_write_mb,
            measured_mb_per_unit: mean(&|s| s.disk_write_mb_per_unit),
            source: format!(
                "{}; writes the page cache has not yet written back are not in it",
                counters::DISK_COUNTER
            ),
        });
        rows.push(CounterRow {
            resource: "disk read".into(),
            profile_mb_per_unit: d.disk_read_mb,
            measured_mb_per_unit: mean(&|s| s.disk_read_mb_per_unit),
            source: counters::DISK_COUNTER.into(),
        });
    }
    if d.net_rx_mb > 0.0 || d.net_tx_mb > 0.0 {
        rows.push(CounterRow {
            resource: "loopback".into(),
            profile_mb_per_unit: d.net_rx_mb + d.net_tx_mb,
            measured_mb_per_unit: mean(&|s| s.loopback_mb_per_unit),
            source: format!(
                "{} (payload + TCP/IP headers, both directions)",
                counters::LOOPBACK_COUNTER
            ),
        });
    }
    if d.app_mem_mb > 0.0 {
        rows.push(CounterRow {
            resource: "memory traffic".into(),
            profile_mb_per_unit: d.app_mem_mb,
            measured_mb_per_unit: None,
            source: "no memory-controller counter is read (on the reference VM perf has no hardware events at all: event sources breakpoint, msr, software, tracepoint, uprobe; `perf stat -e cycles` is not supported)".into(),
        });
    }
    rows
}

fn flat_out(steps: &[StepRow]) -> Vec<&StepRow> {
    steps.iter().filter(|s| s.offer == Offer::FlatOut).collect()
}

/// The bottleneck law: the predicted maximum rate vs the median flat-out run.
fn max_rate_check(pred: &Prediction, steps: &[StepRow]) -> LawCheck {
    let flat = flat_out(steps);
    let measured = (!flat.is_empty())
        .then(|| crate::stats::median(&flat.iter().map(|s| s.achieved).collect::<Vec<_>>()));
    let bn = pred.bottleneck.clone().unwrap_or_default();
    let basis = construction::basis(pred, &bn);
    let x = pred.x_max;
    let dev = match (measured, x) {
        (Some(m), Some(x)) if x > 0.0 => Some(m / x - 1.0),
        _ => None,
    };
    let text = format!(
        "maximum rate (bottleneck law, bottleneck {bn}): predicted {}, measured {} (median of {} flat-out runs: {}){}{}",
        opt(x),
        opt(measured),
        flat.len(),
        flat.iter()
            .map(|s| format!("{:.2}", s.achieved))
            .collect::<Vec<_>>()
            .join(", "),
        deviation_text(dev),
        basis
            .as_ref()
            .map_or(String::new(), |b| format!(" — {}", b.text()))
    );
    LawCheck::new(
        "maximum rate (bottleneck law)",
        format!("{}/s", pred.unit),
        x,
        None,
        measured,
        dev,
        basis,
        text,
    )
}

/// ": +4.2 % (agrees within 15 %)" or ": −31.0 % (DISAGREES, > 15 %)"; empty when not computed.
fn deviation_text(dev: Option<f64>) -> String {
    dev.map_or(String::new(), |d| {
        format!(
            ": {:+.1} %{}",
            d * 100.0,
            if d.abs() <= TOLERANCE {
                " (agrees within 15 %)"
            } else {
                " (DISAGREES, > 15 %)"
            }
        )
    })
}

/// The utilisation law: CPU-seconds per unit, system-wide net of the idle windows, median over
/// the steps whose cost could be measured, against the predicted CPU demand (a range where every
/// core copying at once slows each).
fn cpu_check(pred: &Prediction, steps: &[StepRow]) -> LawCheck {
    let cpu = pred.resource("cpu");
    let lo = cpu.map(|r| r.demand);
    let hi = cpu.and_then(|r| match (r.s, r.s_contended, r.capacity) {
        (Some(s), Some(sc), Some(n)) => Some(r.demand + (sc - s) * n),
        _ => None,
    });
    let vals: Vec<f64> = steps.iter().filter_map(|s| s.cpu_s_per_unit).collect();
    let measured = (!vals.is_empty()).then(|| crate::stats::median(&vals));
    let basis = construction::basis(pred, "cpu");
    let dev = match (measured, lo) {
        (Some(m), Some(l)) if l > 0.0 => Some(deviation(m, l, hi.unwrap_or(l))),
        _ => None,
    };
    let not_measured = steps.len() - vals.len();
    let text = format!(
        "CPU per unit (utilisation law): predicted {}{} CPU-s, measured {} CPU-s system-wide (median of {} step(s){}){}{}",
        opt(lo),
        hi.map_or(String::new(), |h| format!(" … {}", fmt(h))),
        opt(measured),
        vals.len(),
        if not_measured > 0 {
            format!(
                "; {not_measured} not measurable: {}",
                steps
                    .iter()
                    .find_map(|s| s.cpu_why.clone())
                    .unwrap_or_default()
            )
        } else {
            String::new()
        },
        deviation_text(dev),
        basis
            .as_ref()
            .map_or(String::new(), |b| format!(" — {}", b.text()))
    );
    LawCheck::new(
        "CPU per unit (utilisation law)",
        "CPU-s".into(),
        lo,
        hi,
        measured,
        dev,
        basis,
        text,
    )
}

/// The one-thread law, where the profile states a serial stage: the predicted CPU-seconds per
/// unit on that thread (the sum of the suite's own-thread costs of its activities) against the
/// application's busiest thread's CPU per unit, median over the steps where it was measured.
/// None: no serial stage (no "thread" resource).
fn thread_check(pred: &Prediction, steps: &[StepRow]) -> Option<LawCheck> {
    let r = pred.resource("thread")?;
    let predicted = Some(r.demand).filter(|d| *d > 0.0);
    let vals: Vec<f64> = steps
        .iter()
        .filter_map(|s| s.thread_cpu_s_per_unit)
        .collect();
    let measured = (!vals.is_empty()).then(|| crate::stats::median(&vals));
    let basis = construction::basis(pred, "thread");
    let dev = match (measured, predicted) {
        (Some(m), Some(p)) => Some(m / p - 1.0),
        _ => None,
    };
    let why = steps.iter().find_map(|s| s.thread_why.clone());
    let text = format!(
        "one-thread CPU per unit (one-thread law): predicted {} CPU-s on the thread ({}), measured {} CPU-s on the application's busiest thread (median of {} step(s){}){}{}",
        opt(predicted),
        r.parts
            .iter()
            .map(|p| p.label.clone())
            .collect::<Vec<_>>()
            .join("; "),
        opt(measured),
        vals.len(),
        why.map_or(String::new(), |w| format!("; {w}")),
        deviation_text(dev),
        basis
            .as_ref()
            .map_or(String::new(), |b| format!(" — {}", b.text()))
    );
    Some(LawCheck::new(
        "one-thread CPU per unit (one-thread law)",
        "CPU-s".into(),
        predicted,
        None,
        measured,
        dev,
        basis,
        text,
    ))
}

/// The law or input that is off (None: every counted check agrees), and the verdict sentence.
pub fn verdict(
    checks: &[LawCheck],
    shared: bool,
    background: f64,
    pred: &Prediction,
) -> (Option<String>, String) {
    let refused: Vec<&LawCheck> = checks
        .iter()
        .filter(|c| c.basis.as_ref().is_some_and(|b| b.by_construction()))
        .collect();
    let counted: Vec<&LawCheck> = checks.iter().filter(|c| c.counts).collect();
    let off = counted.iter().find(|c| c.agrees == Some(false)).map(|c| {
        let parts = |r: &str| {
            pred.resource(r)
                .map(|r| {
                    r.parts
                        .iter()
                        .map(|p| p.label.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default()
        };
        let d = c.deviation.unwrap_or(0.0);
        if c.law.starts_with("one-thread") {
            format!(
                "the one-thread law: the application's busiest thread used {:+.0} % CPU per unit against the sum of the suite's own-thread costs ({}) — {}",
                d * 100.0,
                parts("thread"),
                if d > 0.0 {
                    "the thread does work per unit the profile does not count, or its activities slow each other when one thread alternates them (caches and TLB shared, which costs measured apart do not see)"
                } else {
                    "an own-thread cost measured by the suite is higher than this application pays, or the application spreads the stage over more threads than stated"
                }
            )
        } else if c.law.starts_with("CPU") {
            format!(
                "the utilisation law: the CPU per unit measured is {:+.0} % from the sum of the measured per-MB costs ({}) — {}",
                d * 100.0,
                parts("cpu"),
                if d > 0.0 {
                    "the application does work per unit the profile does not count (a per-request or per-connection cost, its own logic) or a copy count is low"
                } else {
                    "a per-MB cost measured by the suite is higher than this application pays (e.g. a cheaper path such as sendfile, or larger transfers)"
                }
            )
        } else {
            let bn = pred.bottleneck.as_deref().unwrap_or("—");
            format!(
                "the bottleneck law at {bn} ({}): the application reaches {:+.0} % of the predicted maximum — {}",
                parts(bn),
                d * 100.0,
                if d < 0.0 {
                    "a demand the profile lacks or underestimates, or the capacity this application gets is lower than the suite measured"
                } else {
                    "the bottleneck's demand is overestimated or its capacity is higher for this application than the suite measured"
                }
            )
        }
    });
    let refused_text = if refused.is_empty() {
        String::new()
    } else {
        format!(
            " Not counted (by construction): {}.",
            refused
                .iter()
                .map(|c| c.law.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let text = if shared {
        format!(
            "NOT JUDGED: the machine was shared ({background:.2} CPUs busy in the idle windows around the steps); figures shown for information.{refused_text}"
        )
    } else if counted.is_empty() {
        format!(
            "NO VERDICT: no check counts (each is by construction or was not measured).{refused_text}"
        )
    } else if let Some(o) = &off {
        format!("DISAGREES (> 15 %): off is {o}.{refused_text}")
    } else {
        format!(
            "AGREES within 15 % on {} counted check(s): {}.{refused_text}",
            counted.len(),
            counted
                .iter()
                .map(|c| c.law.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    (if shared { None } else { off }, text)
}

/// JSON of the report, with the exit code.
pub fn json(r: &CheckReport, exit_code: i32) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(flatten)]
        r: &'a CheckReport,
        exit_code: i32,
    }
    Ok(serde_json::to_string_pretty(&Out { r, exit_code })? + "\n")
}

/// One law over interleaved rounds: each judged round's deviation, and their median.
#[derive(Debug, Clone, Serialize)]
pub struct RoundsLaw {
    pub law: String,
    /// measured / predicted − 1 of each round where this law counted (a judged round).
    pub deviations: Vec<f64>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub agrees: Option<bool>,
}

/// Interleaved rounds (`model check --measure --rounds N`): in each round the inputs are
/// measured afresh and the application runs right after, so a prediction and its measurement
/// share one window of this machine's speed (which drifts by up to 2× from minute to minute on a
/// shared VM). Each law is judged on the median of the judged rounds' deviations.
#[derive(Debug, Clone, Serialize)]
pub struct RoundsSummary {
    pub rounds: usize,
    /// Rounds judged (a quiet machine, complete inputs, some law counted).
    pub judged_rounds: usize,
    pub laws: Vec<RoundsLaw>,
    pub off: Option<String>,
    pub verdict: String,
}

impl RoundsSummary {
    pub fn disagrees(&self) -> bool {
        self.off.is_some()
    }
}

/// The rounds' laws, in the order the first round lists them (pure). Each round: whether it was
/// judged ([`CheckReport::judged`]) and its law checks.
pub fn rounds_summary(rounds: &[(bool, &[LawCheck])]) -> RoundsSummary {
    let judged: Vec<&[LawCheck]> = rounds.iter().filter(|r| r.0).map(|r| r.1).collect();
    let mut laws: Vec<RoundsLaw> = Vec::new();
    for name in rounds
        .first()
        .map(|r| r.1.iter().map(|c| c.law.clone()).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        let deviations: Vec<f64> = judged
            .iter()
            .filter_map(|checks| checks.iter().find(|c| c.law == name))
            .filter(|c| c.counts)
            .filter_map(|c| c.deviation)
            .collect();
        let median = (!deviations.is_empty()).then(|| crate::stats::median(&deviations));
        laws.push(RoundsLaw {
            law: name,
            min: deviations.iter().copied().reduce(f64::min),
            max: deviations.iter().copied().reduce(f64::max),
            agrees: median.map(|m| m.abs() <= TOLERANCE),
            median,
            deviations,
        });
    }
    let pct = |d: f64| format!("{:+.1} %", d * 100.0);
    let off = laws.iter().find(|l| l.agrees == Some(false)).map(|l| {
        format!(
            "{}: median {} over {} judged round(s) ({})",
            l.law,
            pct(l.median.unwrap_or(0.0)),
            l.deviations.len(),
            l.deviations
                .iter()
                .map(|d| pct(*d))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    let counted: Vec<&RoundsLaw> = laws.iter().filter(|l| l.median.is_some()).collect();
    let verdict = if judged.is_empty() {
        format!(
            "NOT JUDGED: none of the {} round(s) was judged (a shared machine or incomplete inputs: see each round).",
            rounds.len()
        )
    } else if let Some(o) = &off {
        format!(
            "DISAGREES (> 15 %) over {} judged of {} round(s): off is {o}.",
            judged.len(),
            rounds.len()
        )
    } else if counted.is_empty() {
        "NO VERDICT: no law counted in any judged round.".to_string()
    } else {
        format!(
            "AGREES within 15 % over {} judged of {} round(s): {}.",
            judged.len(),
            rounds.len(),
            counted
                .iter()
                .map(|l| format!(
                    "{} median {} (range {} … {})",
                    l.law,
                    pct(l.median.unwrap_or(0.0)),
                    pct(l.min.unwrap_or(0.0)),
                    pct(l.max.unwrap_or(0.0))
                ))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    RoundsSummary {
        rounds: rounds.len(),
        judged_rounds: judged.len(),
        laws,
        off: if judged.is_empty() { None } else { off },
        verdict,
    }
}

/// JSON of interleaved rounds: every round's report and the summary, with the exit code.
pub fn rounds_json(
    reports: &[CheckReport],
    s: &RoundsSummary,
    exit_code: i32,
) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct Out<'a> {
        schema: &'static str,
        rounds: &'a [CheckReport],
        summary: &'a RoundsSummary,
        exit_code: i32,
    }
    Ok(serde_json::to_string_pretty(&Out {
        schema: "osgauge.appmodel.check-rounds/1",
        rounds: reports,
        summary: s,
        exit_code,
    })? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law(name: &str, dev: Option<f64>, counts: bool) -> LawCheck {
        LawCheck {
            law: name.into(),
            unit: "MB/s".into(),
            predicted: Some(100.0),
            predicted_hi: None,
            measured: dev.map(|d| 100.0 * (1.0 + d)),
            deviation: dev,
            agrees: dev.map(|d| d.abs() <= TOLERANCE),
            counts,
            basis: None,
            text: String::new(),
        }
    }

    #[test]
    fn rounds_are_judged_on_the_median_of_the_judged_rounds() {
        let r1 = [law("rate", Some(-0.20), true), law("cpu", Some(0.02), true)];
        let r2 = [law("rate", Some(-0.05), true), law("cpu", Some(0.04), true)];
        let r3 = [law("rate", Some(-0.10), true), law("cpu", Some(0.30), true)];
        // A shared-machine round: not judged, its -90 % never counts.
        let shared = [law("rate", Some(-0.90), true), law("cpu", Some(0.9), true)];
        let s = rounds_summary(&[(true, &r1), (true, &r2), (false, &shared), (true, &r3)]);
        assert_eq!((s.rounds, s.judged_rounds), (4, 3));
        assert!((s.laws[0].median.unwrap() + 0.10).abs() < 1e-12);
        assert_eq!(s.laws[0].min, Some(-0.20));
        assert!((s.laws[1].median.unwrap() - 0.04).abs() < 1e-12);
        assert!(s.off.is_none(), "{}", s.verdict);
        assert!(s.verdict.starts_with("AGREES"), "{}", s.verdict);
        assert!(s.verdict.contains("-10.0 %"), "{}", s.verdict);

        // The median itself off: disagrees, named with each round's deviation.
        let r4 = [law("rate", Some(-0.30), true), law("cpu", None, false)];
        let s = rounds_summary(&[(true, &r1), (true, &r4)]);
        assert!(s.disagrees());
        assert!(
            s.off
                .as_deref()
                .unwrap()
                .starts_with("rate: median -25.0 %"),
            "{:?}",
            s.off
        );
        // A law that did not count in a round adds no deviation.
        assert_eq!(s.laws[1].deviations, vec![0.02]);
    }

    #[test]
    fn no_judged_round_is_not_judged_and_never_disagrees() {
        let r = [law("rate", Some(-0.5), true)];
        let s = rounds_summary(&[(false, &r), (false, &r)]);
        assert_eq!(s.judged_rounds, 0);
        assert!(!s.disagrees());
        assert!(s.verdict.starts_with("NOT JUDGED"), "{}", s.verdict);
    }
}
