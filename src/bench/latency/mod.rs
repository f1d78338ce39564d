//! The latency suite: per-CPU timer wake-up latency (cyclictest's measurement), OS noise per CPU
//! (osnoise's measurement, portable: it needs only a clock) and the cost of waking an idle CPU.
//! Every measuring thread is pinned to one CPU, its policy, priority, nice and timer slack are set
//! through `platform` and read back, and a request the OS refused fails the benchmark: a figure is
//! never passed off as measured under a policy it did not run with.
//!
//! Any load of [`crate::workload::load`] can run beside the wake-up and noise tests (`--load`):
//! one cell per load, the same load child and verification the interactivity suite uses
//! ([`crate::workload::background`]); the load is a parameter of the cell and a suffix of its id
//! (`latency/wakeup/burn`; no load keeps `latency/wakeup`).

pub mod idle_wakeup;
pub mod noise;
pub mod wakeup;

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Benchmark, Info, MetricSpec, RunOutput};
use super::{Headline, Headlines};
use crate::platform::clock;
use crate::platform::sched::{self, Policy, SchedRequest};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::workload::background::{self, BackgroundLoad, LoadOptions};
use crate::workload::load::{LoadKind, LoadReport};

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Latency: per-CPU timer wake-up latency (cyclictest's measurement), OS noise per CPU (osnoise's), the cost of waking an idle CPU";

/// The figures the summary of a run shows first for this suite, in this order.
pub const HEADLINES: Headlines = Headlines::Listed(&[
    Headline::new("latency/wakeup", "latency", "timer wake-up latency, p50"),
    Headline::new(
        "latency/wakeup",
        "latency_p99",
        "timer wake-up latency, p99",
    ),
    Headline::new("latency/noise", "noise_pct", "OS noise (busy loop per CPU)")
        .when_busy("noise incl. other processes"),
    Headline::new(
        "latency/idle_wakeup",
        "idle_exit",
        "waking an idle CPU (idle − busy)",
    ),
]);

/// Options of the latency suite (`osgauge latency`, `osgauge noise`, and the short versions in
/// `osgauge run`).
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// CPUs to measure on (one thread each); None = every CPU this process may use.
    pub cpus: Option<Vec<usize>>,
    /// Period of the wake-up test.
    pub interval: Duration,
    /// Policy, priority and nice of the measuring threads (None policy: left as inherited).
    pub sched: SchedRequest,
    /// Timer slack asked for the wake-up threads, ns (Linux; 1 = none: cyclictest leaves
    /// SCHED_OTHER threads the default 50 µs).
    pub timer_slack_ns: u64,
    /// Wake-ups at or above this are overflows (cyclictest's histogram limit, `-h`), µs.
    pub histogram_limit_us: u64,
    /// Gaps of the noise loop above this are noise, ns (raised to 5 × the loop's own read cost).
    pub noise_threshold_ns: u64,
    /// Explain every wake-up at least this late (Linux tracefs), ns; None = no tracing.
    pub attribute_ns: Option<u64>,
    /// Spikes kept per run with their parts (the culprit totals cover every spike).
    pub attribute_top: usize,
    /// Hold a CPU DMA-latency (PM QoS) request of this many µs while measuring wake-ups, as
    /// cyclictest does at 0 by default: deep idle states are then not used.
    pub cpu_dma_latency_us: Option<u32>,
    /// Loads run beside the wake-up and noise tests, one cell each (`none`: no load).
    pub loads: Vec<LoadKind>,
    /// How those loads run (folder, threads, …).
    pub load: LoadOptions,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            cpus: None,
            interval: Duration::from_millis(1),
            sched: SchedRequest::default(),
            timer_slack_ns: 1,
            histogram_limit_us: 10_000,
            noise_threshold_ns: 1_000,
            attribute_ns: None,
            attribute_top: 10,
            cpu_dma_latency_us: None,
            loads: vec![LoadKind::None],
            load: LoadOptions::default(),
        }
    }
}

impl LatencyOptions {
    /// The CPUs to measure on: as asked (each must be allowed), else every allowed CPU.
    pub fn measured_cpus(&self) -> Result<Vec<usize>, String> {
        let allowed =
            crate::platform::allowed_cpus().map_err(|e| format!("allowed CPUs unknown: {e}"))?;
        match &self.cpus {
            None => Ok(allowed),
            Some(c) => {
                if let Some(bad) = c.iter().find(|x| !allowed.contains(x)) {
                    return Err(format!(
                        "--cpus: CPU {bad} is not one this process may use ({allowed:?})"
                    ));
                }
                Ok(c.clone())
            }
        }
    }

    /// The settings as asked, and the CPUs a benchmark measures (`cpus`), for the record.
    pub fn params(&self, cpus: &[usize]) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("cpus_asked".into(), json!(self.cpus));
        m.insert("cpus".into(), json!(cpus));
        m.insert(
            "policy".into(),
            json!(self.sched.policy.map(Policy::name).unwrap_or("inherited")),
        );
        m.insert("priority".into(), json!(self.sched.priority));
        m.insert("nice".into(), json!(self.sched.nice));
        m.insert("attribute_ns".into(), json!(self.attribute_ns));
        m.insert("cpu_dma_latency_us".into(), json!(self.cpu_dma_latency_us));
        m
    }
}

/// Every benchmark of the suite with `opts`: the wake-up and noise tests once per load.
pub fn benchmarks(opts: &LatencyOptions) -> Vec<Box<dyn Benchmark>> {
    let cpus = opts.measured_cpus().unwrap_or_default();
    let mut v: Vec<Box<dyn Benchmark>> = Vec::new();
    for &load in &opts.loads {
        v.push(Box::new(wakeup::Wakeup::new(opts, &cpus, load)));
        if opts.attribute_ns.is_some() {
            v.push(Box::new(wakeup::Wakeup::untraced(opts, &cpus, load)));
        }
    }
    for &load in &opts.loads {
        v.push(Box::new(noise::Noise::new(opts, &cpus, load)));
    }
    v.push(Box::new(idle_wakeup::IdleWakeup::new()));
    v
}

/// The id of benchmark `base` (e.g. `latency/wakeup`) under `load`: `base` itself without a load,
/// `<base>/<load>` with one.
pub fn cell_id(base: &str, load: LoadKind) -> String {
    match load {
        LoadKind::None => base.to_string(),
        l => format!("{base}/{}", l.name()),
    }
}

/// The title of a benchmark under `load`.
pub fn cell_title(title: String, load: LoadKind) -> String {
    match load {
        LoadKind::None => title,
        l => format!("{title}, beside the {} load", l.name()),
    }
}

/// A latency cell's [`Info`] (`latency/wakeup`, `latency/noise`, with or without a load beside
/// it): its id and title name the load; beside a load it also says what the load is in its
/// method and measures the load's CPU share.
pub fn cell_info(
    base: &str,
    title: String,
    method: String,
    mut metrics: Vec<MetricSpec>,
    load: LoadKind,
) -> Info {
    let method = if load == LoadKind::None {
        method
    } else {
        metrics.push(crate::workload::background::LOAD_CPU);
        method + LOAD_METHOD
    };
    Info {
        id: cell_id(base, load),
        suite: "latency",
        title: cell_title(title, load),
        method,
        metrics,
    }
}

/// What the method text says about a load beside the measurement.
pub const LOAD_METHOD: &str = " With --load, each load runs in a child process (`osgauge __load`, \
the interactivity suite's loads), started and running (every load thread's scheduling read back) \
before measuring starts, then stopped, checked and reaped, its files deleted: a load that failed, \
ended early or did not really run fails the run (its figures were not measured under it); what \
it achieved is recorded per run (load_achieved, load_achieved_cpu_pct against load_target_pct, \
load_cpu). The loads' work is calibrated once in a thread placed as theirs and cached.";

/// The parameters of a cell's load.
pub fn load_params(m: &mut Map<String, Value>, load: LoadKind) {
    m.insert("load".into(), json!(load.name()));
    m.insert("load_description".into(), json!(load.description()));
}

/// Start `load` beside a run (nothing for `none`): the loads' work calibration first (its facts
/// and warning into `out`), then the load child, running when this returns.
pub fn start_load(
    load: LoadKind,
    opts: &LatencyOptions,
    ctx: &RunContext,
    out: &mut RunOutput,
) -> Result<BackgroundLoad, BenchError> {
    // Only the CPU loads run the calibrated work loop (burn, and compile's burn threads; video
    // and x where the thread CPU clock is coarse): the others get no calibration to wait for.
    let work = if matches!(
        load,
        LoadKind::Burn | LoadKind::Compile | LoadKind::Video | LoadKind::X
    ) {
        background::calibrate_load_work(&opts.load, ctx, out)?
    } else {
        // Not used by these loads (write, read, ring, memload) — nor by none.
        crate::workload::work::Work {
            mode: crate::workload::work::WorkMode::Fixed,
            loops_per_us: 1.0,
        }
    };
    BackgroundLoad::start(
        load,
        &opts.load,
        ctx,
        out,
        work,
        ctx.run_time.as_nanos() as u64,
    )
}

/// Stop the load started by [`start_load`], check it and add its figures to `out`.
pub fn stop_load(
    load: BackgroundLoad,
    ctx: &RunContext,
    out: RunOutput,
) -> Result<RunOutput, BenchError> {
    let mut out = out;
    let report: Option<LoadReport> = load.stop(ctx, &mut out)?;
    Ok(match report {
        Some(r) => background::report_figures(&r, out),
        None => out,
    })
}

/// Metric name `cpu<N><suffix>` as a `'static str` (names are declared once per benchmark).
pub fn cpu_metric(cpu: usize, suffix: &str) -> &'static str {
    Box::leak(format!("cpu{cpu}{suffix}").into_boxed_str())
}

/// Put the calling thread on `cpu` with `sched` and `slack_ns` of timer slack, and read back what
/// it got. A pin that did not hold, or a policy the OS refused, is an error: the thread would
/// measure something other than what was asked.
pub fn place_thread(
    cpu: usize,
    sched: &SchedRequest,
    slack_ns: Option<u64>,
) -> Result<Map<String, Value>, BenchError> {
    sched::set_thread_affinity(&[cpu])
        .map_err(|e| BenchError::failed(format!("pinning a thread to CPU {cpu}: {e}")))?;
    let on = crate::platform::current_thread_affinity()
        .map_err(|e| BenchError::failed(format!("reading a thread's affinity back: {e}")))?;
    if on != [cpu] {
        return Err(BenchError::failed(format!(
            "pinned to CPU {cpu} but the affinity read back is {on:?}"
        )));
    }
    if sched.policy.is_some() || sched.nice.is_some() || sched.priority.is_some() {
        sched::apply_thread(sched).map_err(|e| {
            let what = sched.policy.map(Policy::name).unwrap_or("nice");
            if sched.policy.is_some_and(Policy::is_realtime) {
                let why = crate::platform::sysinfo::environment()
                    .realtime
                    .reason
                    .unwrap_or_else(|| e.to_string());
                BenchError::unsupported(format!(
                    "policy {what} refused ({why}): nothing is measured under another policy"
                ))
            } else {
                BenchError::failed(format!("setting policy {what}: {e}"))
            }
        })?;
    }
    let mut facts = Map::new();
    if let Some(ns) = slack_ns {
        // After the policy: a policy change can reset the slack.
        if let Err(e) = clock::set_timer_slack_ns(ns) {
            facts.insert("timer_slack_note".into(), json!(e.to_string()));
        }
        facts.insert("timer_slack_ns".into(), json!(clock::timer_slack_ns().ok()));
    }
    let back = sched::read_thread()
        .map_err(|e| BenchError::failed(format!("reading the policy back: {e}")))?;
    // Linux reads the policy back in the request's own names; elsewhere the read-back (a
    // priority class, a QoS) is recorded as it is.
    if let Some(p) = sched.policy
        && crate::platform::sched::READ_BACK_IN_REQUEST_NAMES
    {
        let got = back.policy.to_ascii_lowercase();
        if !got.contains(p.name()) {
            return Err(BenchError::failed(format!(
                "policy {} asked, {} read back",
                p.name(),
                back.policy
            )));
        }
    }
    if let (Some(want), Some(got)) = (sched.priority, back.priority)
        && sched.policy.is_some_and(Policy::is_realtime)
        && want != got
    {
        return Err(BenchError::failed(format!(
            "priority {want} asked, {got} read back"
        )));
    }
    facts.insert("cpu".into(), json!(cpu));
    facts.insert(
        "sched".into(),
        serde_json::to_value(&back).unwrap_or_default(),
    );
    Ok(facts)
}

/// Facts read back by one measuring thread.
pub type Facts = Map<String, Value>;

/// Run `f(cpu)` on a thread of its own for every CPU at once (each places itself), and collect
/// the results in CPU order; the first error (or a panic) fails the whole.
pub fn on_each_cpu<T: Send>(
    cpus: &[usize],
    f: impl Fn(usize) -> Result<T, BenchError> + Sync,
) -> Result<Vec<T>, BenchError> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = cpus
            .iter()
            .map(|&c| {
                s.spawn(move || {
                    crate::platform::set_thread_name(crate::bench::MEASURING_THREAD);
                    f(c)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::failed("a measuring thread panicked")))
            })
            .collect()
    })
}

/// Facts of every thread, as one fact `threads: [{cpu, sched, timer_slack_ns}, …]`, plus the
/// values all threads agree on at the top level (`policy_applied`, `timer_slack_applied_ns`).
pub fn thread_facts(threads: Vec<Map<String, Value>>) -> Map<String, Value> {
    let mut m = Map::new();
    let first_policy = threads
        .first()
        .and_then(|t| t.get("sched"))
        .and_then(|s| s.get("policy"))
        .cloned();
    if threads
        .iter()
        .all(|t| t.get("sched").and_then(|s| s.get("policy")) == first_policy.as_ref())
        && let Some(p) = first_policy
    {
        m.insert("policy_applied".into(), p);
    }
    let slack = threads
        .first()
        .and_then(|t| t.get("timer_slack_ns"))
        .cloned();
    if threads
        .iter()
        .all(|t| t.get("timer_slack_ns") == slack.as_ref())
        && let Some(s) = slack
    {
        m.insert("timer_slack_applied_ns".into(), s);
    }
    m.insert(
        "threads".into(),
        Value::Array(threads.into_iter().map(Value::Object).collect()),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_asked_must_be_allowed_and_default_to_all() {
        let all = crate::platform::allowed_cpus().unwrap();
        let o = LatencyOptions::default();
        assert_eq!(o.measured_cpus().unwrap(), all);
        let o = LatencyOptions {
            cpus: Some(vec![10_000]),
            ..Default::default()
        };
        let e = o.measured_cpus().unwrap_err();
        assert!(
            e.contains("CPU 10000 is not one this process may use"),
            "{e}"
        );
    }

    #[test]
    fn thread_facts_lift_what_every_thread_agrees_on() {
        let t = |cpu: u64, pol: &str, slack: u64| {
            json!({"cpu": cpu, "sched": {"policy": pol}, "timer_slack_ns": slack})
                .as_object()
                .unwrap()
                .clone()
        };
        let m = thread_facts(vec![t(0, "SCHED_FIFO", 1), t(1, "SCHED_FIFO", 1)]);
        assert_eq!(m["policy_applied"], "SCHED_FIFO");
        assert_eq!(m["timer_slack_applied_ns"], 1);
        assert_eq!(m["threads"].as_array().unwrap().len(), 2);
        let m = thread_facts(vec![t(0, "SCHED_FIFO", 1), t(1, "SCHED_OTHER", 50_000)]);
        assert!(m.get("policy_applied").is_none() && m.get("timer_slack_applied_ns").is_none());
    }

    #[test]
    fn a_thread_is_pinned_and_read_back() {
        let cpu = crate::platform::allowed_cpus().unwrap()[0];
        let f = std::thread::spawn(move || place_thread(cpu, &SchedRequest::default(), Some(1)))
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(f["cpu"], cpu);
        assert!(f["sched"]["policy"].is_string(), "{f:?}");
        if cfg!(target_os = "linux") {
            assert_eq!(f["timer_slack_ns"], 1, "{f:?}");
        }
    }
}
