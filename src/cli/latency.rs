//! `osgauge latency` (timer wake-up latency per CPU, and the idle wake-up cost) and `osgauge noise`
//! (OS noise per CPU): the latency suite with its options.

use std::time::Duration;

use super::outputs::FileOutput;
use super::run::run_plan;
use super::{CliError, CpuList, Preset, RunOpts, parse_cpu_list, parse_run_time, thread_policy};
use crate::bench::latency::{LatencyOptions, cell_id};
use crate::bench::registry::SuiteOptions;
use crate::platform::sched::{Policy, SchedRequest};
use crate::workload::load::LoadKind;

pub const LATENCY_HELP: &str = "Examples:
  osgauge latency                                        every CPU, 1 ms period, 10 s in 5 runs
  osgauge latency --policy fifo --priority 90 --interval 200us --duration 60s
  osgauge latency --policy other --timer-slack 50us      as cyclictest leaves SCHED_OTHER threads
  osgauge latency --cpus 1 --export-json lat.json
  osgauge latency --load none,burn,write --duration 20s  a cell per load, the load running beside

--duration is the total measuring time, split into --runs runs (default 5); each run is one
point of the CI. Latency = actual wake − intended wake, per CPU and merged. --load runs the
interactivity suite's loads beside the measurement (one cell each, `latency/wakeup/<load>`),
each checked to have really run (achieved CPU against its target in the record). Method:
`osgauge list --long`.";

pub const NOISE_HELP: &str = "Examples:
  osgauge noise                                          every CPU, 10 s in 5 runs
  osgauge noise --duration 30s --threshold 2us --cpus 1
  osgauge noise --load burn                              OS noise while a burn load runs

--duration is the total measuring time, split into --runs runs (default 5). Every measured CPU is
kept busy at once (as osnoise does). --load runs a load beside it, one cell each
(`latency/noise/<load>`). Method: `osgauge list --long`.";

/// Options shared by `latency` and `noise`.
#[derive(clap::Args, Debug, Clone)]
pub struct Placement {
    /// CPUs to measure on, one thread each, e.g. 0 or 0,2-3 [default: every CPU the run may use]
    #[arg(long, value_parser = parse_cpu_list)]
    pub cpus: Option<CpuList>,
    /// Scheduling policy of the measuring threads (read back; a refused policy fails the run)
    #[arg(long, value_parser = thread_policy())]
    pub policy: Option<Policy>,
    /// Real-time priority for fifo/rr (1-99)
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: Option<i32>,
    /// Nice value of the measuring threads (-20..19; policies other/batch/idle)
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,
    /// Total measuring time, split into --runs runs, 100ms to 24h [default: 10s]
    #[arg(long, value_parser = parse_run_time)]
    pub duration: Option<Duration>,
    /// Loads run beside the measurement, one cell each: none, burn, write, read, ring, compile,
    /// memload, video, x (`osgauge interactivity --help`) [default: none]
    #[arg(long, value_enum, value_delimiter = ',')]
    pub load: Vec<LoadKind>,
    /// Directory for the write/read load files, kept in a per-process folder DIR/<pid>/ that is
    /// always removed [default: <cache dir>/loads]
    #[arg(long, value_name = "DIR")]
    pub load_dir: Option<std::path::PathBuf>,
}

impl Placement {
    fn sched(&self) -> Result<SchedRequest, CliError> {
        if self.priority.is_some() && !matches!(self.policy, Some(Policy::Fifo | Policy::Rr)) {
            return Err(CliError::Usage(
                "--priority needs --policy fifo or rr".into(),
            ));
        }
        if self.nice.is_some() && self.policy.is_some_and(Policy::is_realtime) {
            return Err(CliError::Usage(
                "--nice applies to other/batch/idle, not to real-time policies".into(),
            ));
        }
        if self.policy == Some(Policy::Deadline) {
            return Err(CliError::Usage(
                "--policy deadline: SCHED_DEADLINE admission control refuses the pinned threads this suite uses".into(),
            ));
        }
        Ok(SchedRequest {
            policy: self.policy,
            priority: self.priority.or(self
                .policy
                .filter(|p| matches!(p, Policy::Fifo | Policy::Rr))
                .map(|_| 50)),
            nice: self.nice,
            ..Default::default()
        })
    }

    /// Runs and run time from --duration (total) and --runs.
    fn split(&self, opts: &mut RunOpts) -> Result<(), CliError> {
        if opts.run_time.is_some() && self.duration.is_some() {
            return Err(CliError::Usage(
                "give --duration (the total) or --run-time (per run), not both".into(),
            ));
        }
        if opts.run_time.is_none() {
            let total = self.duration.unwrap_or(Duration::from_secs(10));
            let runs = opts.runs.unwrap_or(5).max(1);
            opts.runs = Some(runs);
            opts.run_time = Some(total / runs);
        }
        Ok(())
    }
}

/// `osgauge latency`.
#[derive(clap::Args, Debug, Clone)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub place: Placement,
    /// Period of the timer wake-ups, 50µs to 1s [default: 1ms]
    #[arg(long, value_parser = parse_interval)]
    pub interval: Option<Duration>,
    /// Timer slack of the measuring threads (Linux), 1ns to 10ms [default: 1ns, i.e. none]
    #[arg(long, value_parser = parse_slack)]
    pub timer_slack: Option<Duration>,
    /// Wake-ups at or above this count as overflows (cyclictest's -h limit), µs [default: 10000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub histogram_limit: Option<u64>,
    /// Explain every wake-up at least this late: what held the CPU (tasks, IRQs, softirqs, the
    /// wake-up path, host steal on a VM, unexplained), from Linux tracefs (root), e.g. 100us
    #[arg(long, value_name = "THRESHOLD", value_parser = parse_attribute)]
    pub attribute: Option<Duration>,
    /// Spikes shown and kept per run with --attribute (the culprit totals cover all)
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub attribute_top: u64,
    /// Hold a CPU DMA-latency (PM QoS) request of US µs while measuring, keeping the CPUs out of
    /// deeper idle states, as cyclictest does at 0 by default (Linux)
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub cpu_dma_latency: Option<u32>,
    /// Measure the idle wake-up cost too (latency/idle_wakeup)
    #[arg(long)]
    pub idle_wakeup: bool,
    /// Write the per-CPU histogram in cyclictest's -h layout (1 µs buckets up to
    /// --histogram-limit) to FILE, for the plotting scripts that read cyclictest's
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub opts: RunOpts,
}

/// `osgauge noise`.
#[derive(clap::Args, Debug, Clone)]
pub struct NoiseArgs {
    #[command(flatten)]
    pub place: Placement,
    /// Gaps above this are noise, 10ns to 1ms (raised to 5 × the loop's clock-read cost) [default: 1us]
    #[arg(long, value_parser = parse_threshold)]
    pub threshold: Option<Duration>,
    #[command(flatten)]
    pub opts: RunOpts,
}

pub(super) fn parse_attribute(s: &str) -> Result<Duration, String> {
    ranged(
        s,
        Duration::from_micros(1),
        Duration::from_secs(1),
        "--attribute",
    )
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    ranged(
        s,
        Duration::from_micros(50),
        Duration::from_secs(1),
        "--interval",
    )
}

fn parse_slack(s: &str) -> Result<Duration, String> {
    ranged(
        s,
        Duration::from_nanos(1),
        Duration::from_millis(10),
        "--timer-slack",
    )
}

fn parse_threshold(s: &str) -> Result<Duration, String> {
    ranged(
        s,
        Duration::from_nanos(10),
        Duration::from_millis(1),
        "--threshold",
    )
}

fn ranged(s: &str, lo: Duration, hi: Duration, flag: &str) -> Result<Duration, String> {
    let d = crate::units::parse_duration(s)?;
    if d < lo || d > hi {
        return Err(format!(
            "{flag} {s}: must be from {} to {}",
            crate::units::format_time_ns(lo.as_nanos() as f64),
            crate::units::format_time_ns(hi.as_nanos() as f64)
        ));
    }
    Ok(d)
}

/// The options as asked; the loads' folder base cleaned of what dead processes left and checked.
fn options(place: &Placement, sched: SchedRequest) -> Result<LatencyOptions, CliError> {
    let mut loads: Vec<LoadKind> = Vec::new();
    for l in &place.load {
        if !loads.contains(l) {
            loads.push(*l);
        }
    }
    if loads.is_empty() {
        loads.push(LoadKind::None);
    }
    let mut lo = LatencyOptions {
        cpus: place.cpus.clone().map(|c| c.0),
        sched,
        loads,
        ..Default::default()
    };
    if let Some(d) = &place.load_dir {
        lo.load.dir = d.clone();
    }
    if lo.loads.iter().any(|&l| l != LoadKind::None) {
        // What dead osgauge processes left there goes at every start with a load.
        crate::workload::load::remove_stale(&lo.load.dir, &[&lo.load.dir]);
        crate::workload::background::check_load_dir(
            &lo.load.dir,
            place.load_dir.is_some(),
            &lo.loads,
        )
        .map_err(CliError::Usage)?;
    }
    Ok(lo)
}

pub fn run_latency(a: LatencyArgs) -> Result<i32, CliError> {
    let mut opts = a.opts.clone();
    a.place.split(&mut opts)?;
    let mut lo = options(&a.place, a.place.sched()?)?;
    lo.measured_cpus().map_err(CliError::Usage)?;
    if a.histogram.is_some() && lo.loads.len() > 1 {
        return Err(CliError::Usage(
            "--histogram writes one cell's histogram: give one --load with it".into(),
        ));
    }
    if let Some(i) = a.interval {
        lo.interval = i;
    }
    if let Some(s) = a.timer_slack {
        lo.timer_slack_ns = s.as_nanos() as u64;
    }
    if let Some(h) = a.histogram_limit {
        lo.histogram_limit_us = h;
    }
    lo.attribute_ns = a.attribute.map(|d| d.as_nanos() as u64);
    lo.cpu_dma_latency_us = a.cpu_dma_latency;
    lo.attribute_top = a.attribute_top as usize;
    let top = lo.attribute_top;
    let loads = lo.loads.clone();
    let mut select = Vec::new();
    for &l in &loads {
        select.push(cell_id("latency/wakeup", l));
        if a.attribute.is_some() {
            select.push(cell_id("latency/wakeup_untraced", l));
        }
    }
    if a.idle_wakeup {
        select.push("latency/idle_wakeup".into());
    }
    let suite_opts = SuiteOptions {
        latency: lo,
        ..Default::default()
    };
    let mut own = Vec::new();
    if let Some(p) = &a.histogram {
        opts.check_outputs_with(&[("--histogram", p)])?;
        let id = cell_id("latency/wakeup", loads[0]);
        own.push(FileOutput::histogram(
            p,
            id,
            suite_opts.latency.histogram_limit_us,
        ));
    }
    super::run::run_plan_then(
        "latency",
        Preset::Standard,
        select,
        opts,
        &suite_opts,
        own,
        |record| {
            for &load in &loads {
                let Some(b) = record.benchmark(&cell_id("latency/wakeup", load)) else {
                    continue;
                };
                if let Some(l) = crate::attribution::steal_text(&b.run_facts) {
                    if loads.len() > 1 {
                        crate::outln!("{}: {l}", b.id);
                    } else {
                        crate::outln!("{l}");
                    }
                }
                for l in attribution_lines(b, top) {
                    crate::outln!("{l}");
                }
                if let Some(l) = record
                    .benchmark(&cell_id("latency/wakeup_untraced", load))
                    .and_then(|u| tracing_cost(b, u))
                {
                    crate::outln!("{l}");
                }
            }
        },
    )
}

pub fn run_noise(a: NoiseArgs) -> Result<i32, CliError> {
    let mut opts = a.opts.clone();
    a.place.split(&mut opts)?;
    let mut lo = options(&a.place, a.place.sched()?)?;
    lo.measured_cpus().map_err(CliError::Usage)?;
    if let Some(t) = a.threshold {
        lo.noise_threshold_ns = t.as_nanos() as u64;
    }
    let suite_opts = SuiteOptions {
        latency: lo,
        ..Default::default()
    };
    run_plan(
        "noise",
        Preset::Standard,
        suite_opts
            .latency
            .loads
            .iter()
            .map(|&l| cell_id("latency/noise", l))
            .collect(),
        opts,
        &suite_opts,
    )
}

/// The terminal's attribution: the culprits over every run, then one line per top spike.
pub fn attribution_lines(b: &crate::record::BenchmarkResult, top: usize) -> Vec<String> {
    use crate::attribution::{Part, part_text, recorded, top_culprits};
    let Some(r) = recorded(b) else {
        return Vec::new();
    };
    let (spikes, count, lost, threshold) = (r.spikes, r.count, r.lost, r.threshold_ns);
    let runs = r.runs;
    let mut out = vec![
        String::new(),
        format!(
            "Attribution (tracefs): {count} wake-up(s) at least {} late in {} run(s){}",
            crate::units::format_time_ns(threshold),
            runs,
            if lost > 0 {
                format!(
                    "; the trace ring lost {lost} event(s): spikes before them may be unexplained"
                )
            } else {
                String::new()
            }
        ),
    ];
    if let Some(why) = &r.steal_split {
        out.push(format!(
            "  host steal not separated from the tasks' time: {why}"
        ));
    }
    let culprits: Vec<Part> = top_culprits(&spikes, 5);
    if !culprits.is_empty() {
        out.push(format!(
            "  culprits (top spikes): {}",
            culprits
                .iter()
                .map(part_text)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for s in spikes.iter().take(top) {
        out.push(format!(
            "  cpu{} {}: {}",
            s.cpu,
            crate::units::format_time_ns(s.latency_ns as f64),
            s.parts.iter().map(part_text).collect::<Vec<_>>().join(", ")
        ));
    }
    out
}

/// "tracing cost: p50 12 µs traced vs 11 µs untraced, p99 …", from the medians of both runs'
/// figures; None when either side has none.
pub fn tracing_cost(
    traced: &crate::record::BenchmarkResult,
    untraced: &crate::record::BenchmarkResult,
) -> Option<String> {
    let center = |b: &crate::record::BenchmarkResult, m: &str| {
        b.metrics
            .iter()
            .find(|x| x.name == m)
            .and_then(|x| x.summary.as_ref())
            .map(|s| s.center)
    };
    let t = crate::units::format_time_ns;
    Some(format!(
        "  tracing cost (same settings, untraced run after the traced one): p50 {} traced vs {} \
         untraced, p99 {} vs {}",
        t(center(traced, "latency")?),
        t(center(untraced, "latency")?),
        t(center(traced, "latency_p99")?),
        t(center(untraced, "latency_p99")?)
    ))
}
