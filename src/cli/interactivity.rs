//! `osgauge interactivity`: its arguments, the plan of cells (task × load), the scheduling
//! settings each task asks for, and the run.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::run::{execute_and_keep, print_warnings, runs_text};
use super::*;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    Table,
    Interbench,
}

#[derive(Args, Debug, Clone)]
pub struct InteractivityArgs {
    /// Tasks: audio, video, x, gaming, custom [default: audio,video,x,gaming]
    #[arg(long, value_delimiter = ',', value_parser = ["audio", "video", "x", "gaming", "custom"])]
    pub task: Vec<String>,
    /// Loads [default: all]
    #[arg(long, value_enum, value_delimiter = ',')]
    pub load: Vec<crate::workload::load::LoadKind>,
    /// Measuring time of one cell, split into --runs runs of at least 100ms each (one run's:
    /// --run-time) [default: 9s, 3 runs of 3s]
    #[arg(long, value_parser = parse_run_time)]
    pub duration: Option<Duration>,
    /// Frame rate of the video task (and video load)
    #[arg(long, default_value_t = 60.0, value_parser = parse_hz)]
    pub video_hz: f64,
    /// CPU percent of the custom task
    #[arg(long, default_value_t = 20.0, value_parser = parse_pct)]
    pub custom_cpu: f64,
    /// Period of the custom task (50µs to 10s)
    #[arg(long, default_value = "10ms", value_parser = parse_custom_interval)]
    pub custom_interval: Duration,
    /// Work emulation: fixed (calibrated loops) or cputime (burn by the thread's CPU clock)
    #[arg(long, value_enum, default_value_t = crate::workload::work::WorkMode::Fixed)]
    pub work: crate::workload::work::WorkMode,
    /// Measure the work calibration again instead of using the cached value
    #[arg(long)]
    pub recalibrate: bool,
    /// Scheduling policy of the measured task (read back and recorded)
    #[arg(long, value_parser = thread_policy())]
    pub policy: Option<crate::platform::sched::Policy>,
    /// Real-time priority for fifo/rr (1-99)
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: Option<i32>,
    /// Nice value of the measured task (-20..19)
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,
    /// Explain every period at least this late: what held the CPU (tasks, IRQs, softirqs, the
    /// wake-up path, host steal on a VM, unexplained), from Linux tracefs (root), e.g. 2ms
    #[arg(long, value_name = "THRESHOLD", value_parser = latency::parse_attribute)]
    pub attribute: Option<Duration>,
    /// Spikes shown and kept per run with --attribute
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub attribute_top: u64,
    /// EEVDF custom slice of the measured task, 100µs to 100ms, e.g. 1ms (Linux ≥ 6.12; policies other/batch)
    #[arg(long, value_parser = parse_slice)]
    pub slice: Option<Duration>,
    /// Nice value of the load's threads
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub load_nice: Option<i32>,
    /// CPUs every thread (task and load) is pinned to, e.g. 0 or 0,2-3
    #[arg(long, value_parser = parse_cpu_list, conflicts_with = "uniprocessor")]
    pub cpus: Option<CpuList>,
    /// Pin every thread, the load's too, to one CPU (the first this process may use)
    #[arg(long)]
    pub uniprocessor: bool,
    /// Threads of the burn/ring loads [default: the CPUs the run may use]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub load_threads: Option<u32>,
    /// Directory for the write/read load files, kept in a per-process folder DIR/<pid>/ that is
    /// always removed [default: <cache dir>/loads]
    #[arg(long, value_name = "DIR")]
    pub load_dir: Option<PathBuf>,
    /// Rate limit of the write load, MB/s (0.01 to 1000000)
    #[arg(long, value_name = "MB/s", value_parser = parse_io_rate)]
    pub io_rate: Option<f64>,
    /// Upper bound of the write/read load file, MiB (the file is 5 % of free space up to this)
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(8..=65536))]
    pub file_mb: u64,
    /// fsync the write load's file after every pass
    #[arg(long)]
    pub fsync: bool,
    /// Output: osgauge's table or Interbench's layout
    #[arg(long, value_enum, default_value_t = TableFormat::Table)]
    pub format: TableFormat,
    #[command(flatten)]
    pub opts: RunOpts,
}

/// `--io-rate`: a finite rate from 0.01 to 1e6 MB/s (1 TB/s).
pub(super) fn parse_io_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=1e6).contains(&v) => Ok(v),
        Ok(_) => Err(format!(
            "'{s}' is not a rate: give MB/s from 0.01 to 1000000"
        )),
        Err(_) => Err(format!("'{s}' is not a number of MB/s")),
    }
}

pub(super) fn parse_hz(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (1.0..=2000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}': expected a frame rate between 1 and 2000 Hz"
        )),
    }
}

/// The custom task's period: at least 50 µs (shorter periods measure the timer, not the
/// scheduler, and multiply the periods a run keeps), at most 10 s.
pub(super) fn parse_custom_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_micros(50) || d > Duration::from_secs(10) {
        return Err(format!("'{s}': expected a period between 50µs and 10s"));
    }
    Ok(d)
}

/// The plan of an interactivity run, printed before it starts: the cells by name (and that
/// every load runs when none was chosen), runs and time per run.
pub(super) fn interactivity_plan_text(
    tasks: &[&str],
    loads: &[crate::workload::load::LoadKind],
    every_load: bool,
    runs: &str,
    per_run: Duration,
) -> String {
    let names: Vec<&str> = loads.iter().map(|l| l.name()).collect();
    format!(
        "{} cell(s): task {} × load {}{}; {runs} of {}, in rounds of random order with the drift reference",
        tasks.len() * loads.len(),
        tasks.join(", "),
        names.join(", "),
        if every_load {
            " (every load: no --load given)"
        } else {
            ""
        },
        crate::units::format_time_ns(per_run.as_nanos() as f64)
    )
}

/// `interactivity --task/--load`: the cells' tasks and loads, each once, in the order given
/// (none given: the defaults).
pub(super) fn interactivity_cells(
    a: &InteractivityArgs,
) -> Result<(Vec<&'static str>, Vec<crate::workload::load::LoadKind>), CliError> {
    use crate::bench::interactivity as ia;
    let tasks: Vec<&'static str> = if a.task.is_empty() {
        ia::DEFAULT_TASKS.to_vec()
    } else {
        let mut v: Vec<&'static str> = Vec::new();
        for t in &a.task {
            let t = ia::TASKS
                .iter()
                .find(|x| **x == t)
                .copied()
                .ok_or_else(|| CliError::Usage(format!("unknown task {t}")))?;
            if !v.contains(&t) {
                v.push(t);
            }
        }
        v
    };
    let loads = if a.load.is_empty() {
        crate::workload::load::LoadKind::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for l in &a.load {
            if !v.contains(l) {
                v.push(*l);
            }
        }
        v
    };
    Ok((tasks, loads))
}

/// `interactivity --policy/--priority/--slice/--nice/--cpus/--uniprocessor`: the options checked
/// against each other; the CPUs every thread is pinned to.
pub(super) fn interactivity_sched(a: &InteractivityArgs) -> Result<Option<Vec<usize>>, CliError> {
    use crate::platform::sched::Policy;
    let policy = a.policy;
    if a.priority.is_some() && !matches!(policy, Some(Policy::Fifo | Policy::Rr)) {
        return Err(CliError::Usage(
            "--priority needs --policy fifo or rr".into(),
        ));
    }
    if a.slice.is_some() && !matches!(policy, None | Some(Policy::Other | Policy::Batch)) {
        return Err(CliError::Usage(
            "--slice applies to the fair policies (other, batch)".into(),
        ));
    }
    if a.nice.is_some() && policy.is_some_and(Policy::is_realtime) {
        return Err(CliError::Usage(
            "--nice applies to other/batch/idle, not to real-time policies".into(),
        ));
    }
    let cpus = if a.uniprocessor {
        let first = crate::platform::allowed_cpus()
            .ok()
            .and_then(|c| c.first().copied())
            .ok_or_else(|| {
                CliError::Usage("--uniprocessor: cannot read this process's CPUs".into())
            })?;
        Some(vec![first])
    } else {
        a.cpus.clone().map(|c| c.0)
    };
    if policy == Some(Policy::Deadline) && cpus.is_some() {
        return Err(CliError::Usage(
            "--policy deadline cannot be combined with --cpus/--uniprocessor: SCHED_DEADLINE admission control refuses pinned threads".into(),
        ));
    }
    Ok(cpus)
}

/// A run keeps one latency per period: bound the periods per run (and so its memory).
pub(super) fn check_periods(
    tasks: &[&'static str],
    settings: &crate::bench::interactivity::Settings,
    duration: Duration,
) -> Result<(), CliError> {
    use crate::bench::interactivity as ia;
    for &t in tasks {
        let dur_ns = duration.as_nanos() as u64;
        if let Some(task) = ia::task_for(t, settings, dur_ns)
            && task.periods_in(dur_ns) > crate::workload::task::MAX_PERIODS_PER_RUN
        {
            return Err(CliError::Usage(format!(
                "a run of {}: the {t} task would have {} periods of {} per run, more than the {} \
                 a run may keep (shorten --duration or --run-time, or lengthen the period)",
                crate::units::format_time_ns(duration.as_nanos() as f64),
                task.periods_in(dur_ns),
                crate::units::format_time_ns(task.period_ns() as f64),
                crate::workload::task::MAX_PERIODS_PER_RUN
            )));
        }
    }
    Ok(())
}

pub(super) fn run_interactivity(a: InteractivityArgs) -> Result<i32, CliError> {
    use crate::bench::interactivity::{self as ia, Settings};
    use std::sync::Arc;
    let opts = a.opts.clone();
    opts.check_outputs()?;
    let (tasks, loads) = interactivity_cells(&a)?;
    let policy = a.policy;
    let cpus = interactivity_sched(&a)?;
    let (runs, most_runs, adaptive) = opts.runs_plan(3)?;
    // --duration is the total of a cell (as for latency and noise), --run-time one run's.
    let duration = match (a.duration, opts.run_time) {
        (Some(_), Some(_)) => {
            return Err(CliError::Usage(
                "give --duration (one cell's total) or --run-time (per run), not both".into(),
            ));
        }
        (Some(total), None) => split_duration(total, runs, "per cell", Duration::from_millis(100))?,
        (None, Some(r)) => r,
        (None, None) => Duration::from_secs(3),
    };
    if duration < Duration::from_millis(100) {
        return Err(CliError::Usage("--run-time must be at least 100ms".into()));
    }
    let load_base = a
        .load_dir
        .clone()
        .unwrap_or_else(crate::workload::load::default_load_base);
    // What dead osgauge processes left there goes at every start, whatever this run's loads.
    crate::workload::load::remove_stale(&load_base, &[&load_base]);
    crate::workload::background::check_load_dir(&load_base, a.load_dir.is_some(), &loads)
        .map_err(CliError::Usage)?;
    let settings = Settings {
        duration: Some(duration),
        work_mode: a.work,
        recalibrate: a.recalibrate,
        video_hz: a.video_hz,
        custom_cpu_pct: a.custom_cpu,
        custom_interval: a.custom_interval,
        policy,
        priority: a.priority,
        nice: a.nice,
        slice: a.slice,
        attribute_ns: a.attribute.map(|d| d.as_nanos() as u64),
        attribute_top: a.attribute_top as usize,
        load_nice: a.load_nice,
        cpus,
        load_threads: a.load_threads.map(|n| n as usize),
        load_dir: load_base,
        io_rate_mbps: a.io_rate,
        fsync: a.fsync,
        max_file_bytes: a.file_mb << 20,
        ..Settings::default()
    };
    check_periods(&tasks, &settings, duration)?;
    let benchmarks = ia::matrix(&tasks, &loads, Arc::new(settings));
    let selection: Vec<String> = benchmarks.iter().map(|b| b.info().id.clone()).collect();
    let per_bench =
        (duration + Duration::from_secs(3)).as_secs_f64() * f64::from(most_runs + opts.warmup);
    let timeout = opts
        .timeout
        .unwrap_or(Duration::from_secs_f64(per_bench * 2.0 + 30.0));
    let plan = opts.plan(
        benchmarks,
        "interactivity",
        selection,
        (runs, duration, timeout),
        adaptive.clone(),
    )?;
    let preface = interactivity_plan_text(
        &tasks,
        &loads,
        a.load.is_empty(),
        &runs_text(&plan),
        duration,
    );
    execute_and_keep(plan, &opts, &preface, Vec::new(), |record| {
        match a.format {
            TableFormat::Table => crate::out!("{}", ia::table::render(record)),
            TableFormat::Interbench => crate::out!("{}", ia::table::render_interbench(record)),
        }
        for b in &record.benchmarks {
            let lines = latency::attribution_lines(b, a.attribute_top as usize);
            if !lines.is_empty() {
                crate::outln!("\n{}:", b.id);
                for l in lines.iter().skip(1) {
                    crate::outln!("{l}");
                }
            }
        }
        print_warnings(record, opts.quiet, opts.verbose);
    })
}
