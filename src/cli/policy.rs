//! `osgauge policy`: the scheduling-policy study (see `crate::bench::policy`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::outputs::FileOutput;
use super::run::{execute_and_keep, print_warnings};
use super::{CliError, RunOpts, parse_duration, parse_slice};
use crate::bench::policy::work::WorkKind;
use crate::platform::sched::{self, Policy, SchedRequest};

pub const AFTER_HELP: &str = "Examples:
  osgauge policy                                   the seed's matrix: cpu,io,mixed × other,fifo,rr × 10,100,1000
  osgauge policy --work cpu,io --policy other,batch,idle,fifo,rr,deadline --procs 10,100 --runs 9
  osgauge policy --policy other --nice 0,10,19     nice levels as the variable
  osgauge policy --work sleepy --policy other --slice 1ms --procs 10
  osgauge policy --policy deadline --dl-runtime 2ms --dl-period 10ms --procs 10
  osgauge policy --export-html policy.html         stacked time and context-switch charts with CIs
  osgauge policy --work cpu --procs 10 --runs 9 --export-significance sig.json
                                                   which policy differences are significant (.csv: CSV)

Policies: other batch idle fifo rr deadline (Linux; nice with other/batch/idle), Windows priority
classes other idle below-normal above-normal high realtime (REALTIME without privilege is granted
as HIGH: read back and marked), macOS other qos-interactive qos-initiated qos-utility qos-background
time-constraint. Real-time policies are refused when RT throttling is off.
The default study (27 cells, 5 runs + 1 warm-up, 5 ms of work per process) takes about 10–15
minutes on a 2-CPU machine, most of it in the 1000-process cells. Method: `osgauge list --long`.";

#[derive(Args, Debug, Clone)]
pub struct PolicyArgs {
    /// Workloads, comma-separated: cpu (digits of π), io (small files), mixed, sleepy
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "cpu,io,mixed"
    )]
    pub work: Vec<WorkKind>,
    /// Policies, comma-separated (see below)
    #[arg(long, value_delimiter = ',', value_parser = crate::bench::policy::parse_policy, default_value = "other,fifo,rr")]
    pub policy: Vec<Policy>,
    /// Simultaneous processes, comma-separated, 1..=10000
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=10000), default_value = "10,100,1000")]
    pub procs: Vec<u32>,
    /// Nice levels, comma-separated (-20..19): one cell per level for other/batch/idle
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Vec<i32>,
    /// Real-time priority of fifo/rr processes, 1..98 (the watchdog runs at 99); Windows: thread priority -15..15
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-15..=98))]
    pub priority: Option<i32>,
    /// EEVDF custom slice for other/batch (Linux ≥ 6.12), 100µs..100ms
    #[arg(long, value_parser = parse_slice)]
    pub slice: Option<Duration>,
    /// SCHED_DEADLINE runtime per period (macOS time-constraint: computation) [default: 1ms]
    #[arg(long, value_parser = parse_duration)]
    pub dl_runtime: Option<Duration>,
    /// SCHED_DEADLINE relative deadline [default: the period]
    #[arg(long, value_parser = parse_duration)]
    pub dl_deadline: Option<Duration>,
    /// SCHED_DEADLINE period [default: 100ms]
    #[arg(long, value_parser = parse_duration)]
    pub dl_period: Option<Duration>,
    /// Write which policy differences are significant (every pair's medians, ratio, p, BH q,
    /// verdict) as JSON, or CSV when FILE ends in .csv
    #[arg(long, value_name = "FILE")]
    pub export_significance: Option<PathBuf>,
    /// Work per process: the time one process takes alone (calibrated once), 1ms..10s
    #[arg(long, value_parser = parse_duration, default_value = "5ms")]
    pub work_time: Duration,
    #[command(flatten)]
    pub opts: RunOpts,
}

fn dedup<T: PartialEq + Copy>(v: &[T]) -> Vec<T> {
    let mut out = Vec::new();
    for x in v {
        if !out.contains(x) {
            out.push(*x);
        }
    }
    out
}

/// Policy specs from the arguments (exit 2 on contradictions).
pub fn specs(a: &PolicyArgs) -> Result<Vec<SchedRequest>, CliError> {
    let usage = |m: &str| CliError::Usage(m.to_string());
    let policies = dedup(&a.policy);
    let fair = |p: Policy| matches!(p, Policy::Other | Policy::Batch | Policy::Idle);
    if !a.nice.is_empty() && !policies.iter().any(|&p| fair(p)) {
        return Err(usage("--nice applies to other, batch or idle"));
    }
    if a.slice.is_some()
        && !policies
            .iter()
            .any(|&p| matches!(p, Policy::Other | Policy::Batch))
    {
        return Err(usage(
            "--slice applies to the fair policies other and batch",
        ));
    }
    if a.priority.is_some()
        && !policies
            .iter()
            .any(|&p| matches!(p, Policy::Fifo | Policy::Rr) || !sched::PRIORITY_ONLY_FOR_REALTIME)
    {
        return Err(usage("--priority needs --policy fifo or rr"));
    }
    if sched::PRIORITY_ONLY_FOR_REALTIME && a.priority.is_some_and(|p| p < 1) {
        return Err(usage(
            "--priority: Linux real-time priorities are 1..98 here",
        ));
    }
    let dl = a.dl_runtime.is_some() || a.dl_deadline.is_some() || a.dl_period.is_some();
    if dl
        && !policies
            .iter()
            .any(|&p| matches!(p, Policy::Deadline | Policy::TimeConstraint))
    {
        return Err(usage(
            "--dl-runtime/--dl-deadline/--dl-period need --policy deadline (or time-constraint)",
        ));
    }
    let runtime = a.dl_runtime.unwrap_or(Duration::from_millis(1));
    let period = a.dl_period.unwrap_or(Duration::from_millis(100));
    let deadline = a.dl_deadline.unwrap_or(period);
    if !(runtime <= deadline && deadline <= period) {
        return Err(usage(
            "deadline parameters need runtime ≤ deadline ≤ period",
        ));
    }
    let mut out = Vec::new();
    for p in policies {
        let mut s = SchedRequest::new(p);
        match p {
            Policy::Fifo | Policy::Rr => {
                s.priority = Some(
                    a.priority
                        .unwrap_or(crate::bench::policy::DEFAULT_RT_PRIORITY),
                )
            }
            Policy::Deadline | Policy::TimeConstraint => {
                s.runtime_ns = Some(runtime.as_nanos() as u64);
                s.deadline_ns = Some(deadline.as_nanos() as u64);
                s.period_ns = Some(period.as_nanos() as u64);
            }
            Policy::Other | Policy::Batch => s.slice_ns = a.slice.map(|d| d.as_nanos() as u64),
            _ if !sched::PRIORITY_ONLY_FOR_REALTIME => s.priority = a.priority,
            _ => {}
        }
        if fair(p) && !a.nice.is_empty() {
            for &n in &dedup(&a.nice) {
                out.push(SchedRequest {
                    nice: Some(n),
                    ..s.clone()
                });
            }
        } else {
            out.push(s);
        }
    }
    Ok(out)
}

pub fn run_policy(a: PolicyArgs) -> Result<i32, CliError> {
    let opts = a.opts.clone();
    let sig_out = a.export_significance.clone();
    match &sig_out {
        Some(p) => opts.check_outputs_with(&[("--export-significance", p)])?,
        None => opts.check_outputs()?,
    }
    if a.work_time < Duration::from_millis(1) || a.work_time > Duration::from_secs(10) {
        return Err(CliError::Usage("--work-time: expected 1ms..10s".into()));
    }
    let specs = specs(&a)?;
    let works = dedup(&a.work);
    let procs = dedup(&a.procs);
    let base = std::env::temp_dir();
    for d in crate::bench::policy::remove_stale(&base) {
        crate::errln!("osgauge: removed {} left by a killed run", d.display());
    }
    // Refuse real-time cells up front, with the reason.
    if specs.iter().any(|s| s.effective_policy().is_realtime())
        && let Err(why) = crate::platform::sched::rt_safety()
    {
        return Err(CliError::Other(anyhow::anyhow!(why)));
    }
    let max = procs.iter().copied().max().unwrap_or(1);
    crate::platform::process::capacity_decision(
        u64::from(max),
        crate::platform::process::process_limit(),
        crate::platform::process::user_process_count(),
        crate::platform::memory::available_bytes(),
        crate::bench::policy::CHILD_BYTES,
    )
    .map_err(|e| CliError::Other(anyhow::anyhow!(e)))?;
    let study = Arc::new(crate::bench::policy::Study::new(a.work_time, base));
    let benchmarks = crate::bench::policy::matrix(study, &works, &specs, &procs);
    let selection: Vec<String> = benchmarks.iter().map(|b| b.info().id.clone()).collect();
    let (runs, most_runs, adaptive) = opts.runs_plan(5)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // ~3 ms to start each process, its work spread over the CPUs (as `Cell::estimate_s`).
    let per_run = |n: u32| f64::from(n) * (a.work_time.as_secs_f64() / cpus + 0.003) + 0.05;
    // The bound of one run (see `policy::Cell::run`) for every run, + 60 s for the calibration.
    let max_cell = per_run(max) * 10.0 + 10.0 + 0.05 * f64::from(max);
    let timeout = opts.timeout.unwrap_or(Duration::from_secs_f64(
        max_cell * f64::from(most_runs + opts.warmup) + 60.0,
    ));
    let plan = opts.plan(
        benchmarks,
        "policy",
        selection,
        (runs, a.work_time, timeout),
        adaptive,
    )?;
    let preface = format!(
        "{} cell(s) ({} work × {} policy × {} process count) and the drift reference, in rounds of random order, {}",
        plan.benchmarks.len() - 1,
        works.len(),
        specs.len(),
        procs.len(),
        super::run::runs_text(&plan)
    );
    let own = sig_out
        .as_deref()
        .map(FileOutput::significance)
        .into_iter()
        .collect();
    execute_and_keep(plan, &opts, &preface, own, |record| {
        crate::out!("{}", crate::output::render_tables(record));
        crate::outln!(
            "median of {} (95 % bootstrap CI). Method: `osgauge list --long`.",
            crate::output::runs_kept_text(record)
        );
        // Which policies differ within each workload × process count (compare cannot: the
        // policy is part of the benchmark id).
        if let Some(an) = crate::export::pairwise::analyse(record) {
            let table = crate::export::pairwise::render(&an.rows, |m| an.unit(m));
            crate::outln!();
            crate::out!("{table}");
            for n in &an.notes {
                crate::outln!("note: {n}");
            }
        }
        print_warnings(record, opts.quiet, opts.verbose);
    })
}
