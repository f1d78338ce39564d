//! The interactivity suite: a successor to Interbench. An emulated interactive task (audio, video,
//! x, gaming, custom) runs periodically in the measuring process while a background load runs in a
//! separate child process; each period records how late the task got the CPU, whether it met its
//! deadline, and how much of the CPU it wanted it got. Each cell `interactivity/<task>/<load>` is a
//! [`Benchmark`] whose `run` is one independent run of that cell, so the runner, the record and the
//! exports work unchanged.
//!
//! The tasks, their work emulation and the loads live in [`crate::workload`] (the latency suite runs
//! the same loads); here: the cells, their phases ([`phases`]) and the output ([`table`]).

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Interactive task latency under load (quick matrix: audio & video × none & burn; full matrix: `osgauge interactivity`)";

/// The summary's figures: per task, its latency without load and under the load that hurt it
/// most.
pub const HEADLINES: Headlines = Headlines::Picked(headline_picks);

pub mod table;

mod phases;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::bench::{Headlines, Pick};
use crate::platform::clock;
use crate::platform::cputime::{self, BusySample};
use crate::platform::sched::{self, Policy, SchedRequest};
use crate::record::{BenchError, BenchmarkResult};
use crate::timing::RunContext;
use crate::units::{Better, Unit};
use crate::workload::{accounting, background, load, task, work};
use load::LoadKind;
use task::Task;
use work::{Calibration, Work, WorkMode};

/// Task names in matrix order.
pub const TASKS: [&str; 5] = ["audio", "video", "x", "gaming", "custom"];
/// Tasks of the default matrix (custom only when asked for).
pub const DEFAULT_TASKS: [&str; 4] = ["audio", "video", "x", "gaming"];

/// [`HEADLINES`]: the cells are `interactivity/<task>/<load>`; per task in record order, the
/// `latency` of its `none` cell, then of the cell where it is highest.
fn headline_picks<'a>(cells: &[&'a BenchmarkResult]) -> Vec<Pick<'a>> {
    let part = |b: &BenchmarkResult, i: usize| b.id.split('/').nth(i).map(str::to_string);
    let mut tasks: Vec<String> = Vec::new();
    for b in cells {
        let task = part(b, 1).unwrap_or_default();
        if !tasks.contains(&task) {
            tasks.push(task);
        }
    }
    let mut out = Vec::new();
    for task in tasks {
        let measured: Vec<(String, &BenchmarkResult, &crate::record::MetricResult)> = cells
            .iter()
            .filter(|b| part(b, 1).as_ref() == Some(&task))
            .filter_map(|b| {
                let m = b.metrics.iter().find(|m| m.name == "latency")?;
                m.summary.as_ref()?;
                Some((part(b, 2).unwrap_or_default(), *b, m))
            })
            .collect();
        if let Some((_, bench, metric)) = measured.iter().find(|(l, _, _)| l == "none") {
            out.push(Pick {
                bench,
                metric,
                label: format!("{task} latency, no load"),
            });
        }
        let center = |m: &crate::record::MetricResult| m.summary.as_ref().map_or(0.0, |s| s.center);
        let worst = measured
            .iter()
            .filter(|(l, _, _)| l != "none")
            .max_by(|a, b| center(a.2).total_cmp(&center(b.2)));
        if let Some((load, bench, metric)) = worst {
            out.push(Pick {
                bench,
                metric,
                label: format!("{task} latency, worst ({load})"),
            });
        }
    }
    out
}

/// Settings shared by every cell of a matrix.
#[derive(Debug)]
pub struct Settings {
    /// Measuring time of one run; None = 5 × the runner's run time, at least 500 ms (when cells
    /// run inside `osgauge run` / `micro`).
    pub duration: Option<Duration>,
    /// Why `duration` is what it is, when the command did not choose it (said in the record).
    pub duration_reason: Option<&'static str>,
    pub work_mode: WorkMode,
    pub recalibrate: bool,
    /// Calibration cache file (None: calibrate every time, store nothing).
    pub cache_file: Option<PathBuf>,
    pub video_hz: f64,
    pub custom_cpu_pct: f64,
    pub custom_interval: Duration,
    pub policy: Option<Policy>,
    pub priority: Option<i32>,
    pub nice: Option<i32>,
    pub slice: Option<Duration>,
    /// Explain every period at least this late (Linux tracefs), ns; None = no tracing.
    pub attribute_ns: Option<u64>,
    /// Spikes kept per run with their parts.
    pub attribute_top: usize,
    pub load_nice: Option<i32>,
    /// CPUs every thread (task and load) is pinned to.
    pub cpus: Option<Vec<usize>>,
    pub load_threads: Option<usize>,
    /// Base of the per-process load folder `<load_dir>/<pid>/` (default `<cache dir>/loads`).
    pub load_dir: PathBuf,
    pub io_rate_mbps: Option<f64>,
    pub fsync: bool,
    /// Upper bound of the write/read file, bytes.
    pub max_file_bytes: u64,
    /// Upper bound of the memload buffer, bytes.
    pub max_mem_bytes: u64,
    #[doc(hidden)]
    pub calibration: OnceLock<Calibration>,
    #[doc(hidden)]
    pub mem_bytes: OnceLock<(u64, String)>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            duration: None,
            duration_reason: None,
            work_mode: WorkMode::Fixed,
            recalibrate: false,
            cache_file: work::default_cache_file(),
            video_hz: 60.0,
            custom_cpu_pct: 20.0,
            custom_interval: Duration::from_millis(10),
            policy: None,
            priority: None,
            nice: None,
            slice: None,
            attribute_ns: None,
            attribute_top: 10,
            load_nice: None,
            cpus: None,
            load_threads: None,
            load_dir: load::default_load_base(),
            io_rate_mbps: None,
            fsync: false,
            max_file_bytes: 256 << 20,
            max_mem_bytes: 1 << 30,
            calibration: OnceLock::new(),
            mem_bytes: OnceLock::new(),
        }
    }
}

impl Settings {
    /// The CPUs and policy a calibration was made under (part of its cache key): read back from
    /// the calling thread.
    fn placement_key(&self) -> String {
        let cpus = crate::platform::current_thread_affinity()
            .map(|c| format!("{c:?}"))
            .unwrap_or_else(|_| "unknown".into());
        let sched = sched::read_thread()
            .map(|r| {
                let mut v = r.policy;
                if let Some(p) = r.priority.filter(|&p| p > 0) {
                    v.push_str(&format!(" priority {p}"));
                }
                if let Some(n) = r.nice {
                    v.push_str(&format!(" nice {n}"));
                }
                v
            })
            .unwrap_or_else(|_| "unknown".into());
        format!("cpus {cpus} | policy {sched}")
    }

    /// Load threads: --load-threads, else the CPUs the run may use (pinning, affinity, cgroup quota).
    pub fn load_thread_count(&self) -> usize {
        background::thread_count(self.load_threads, self.cpus.as_deref())
    }

    /// memload size (see [`background::mem_bytes`]), chosen once per matrix.
    pub fn mem_bytes(&self) -> (u64, String) {
        self.mem_bytes
            .get_or_init(|| background::mem_bytes(self.max_mem_bytes))
            .clone()
    }

    /// Write/read file size in `dir` (see [`background::file_bytes_in`]).
    pub fn file_bytes_in(&self, dir: &std::path::Path) -> u64 {
        background::file_bytes_in(dir, self.max_file_bytes)
    }

    /// How a cell's `load` runs.
    pub fn load_options(&self, load: LoadKind) -> background::LoadOptions {
        background::LoadOptions {
            threads: self.load_threads,
            cpus: self.cpus.clone(),
            nice: self.load_nice,
            dir: self.load_dir.clone(),
            io_rate_mbps: self.io_rate_mbps,
            fsync: self.fsync,
            max_file_bytes: self.max_file_bytes,
            mem: (load == LoadKind::Memload).then(|| self.mem_bytes()),
            max_mem_bytes: self.max_mem_bytes,
            video_hz: self.video_hz,
        }
    }
}

/// Parse a task name into the task for a run (the same in every run: runs are repeats).
pub fn task_for(name: &str, s: &Settings, duration_ns: u64) -> Option<Task> {
    Some(match name {
        "audio" => Task::Audio,
        "video" => Task::Video { hz: s.video_hz },
        "x" => Task::x_for(duration_ns),
        "gaming" => Task::Gaming,
        "custom" => Task::Custom {
            cpu_pct: s.custom_cpu_pct,
            interval_ns: s.custom_interval.as_nanos() as u64,
        },
        _ => return None,
    })
}

/// One cell of the matrix.
pub struct Cell {
    info: Info,
    task: &'static str,
    load: LoadKind,
    settings: Arc<Settings>,
}

pub const METHOD: &str = "The task runs in a thread of the measuring process; the load runs in a \
separate child process (`osgauge __load`), started and running before measuring starts and stopped, \
reaped and its files deleted afterwards. Each period the task sleeps with an absolute-time sleep \
until its intended start; latency = actual start − intended start (ns). A period whose deadline has \
passed before the previous one finished is dropped: counted in dropped_frames and as a missed \
deadline, never added to the latency. deadlines_met = periods finished by their deadline / all \
periods; desired_cpu = CPU obtained by the deadlines / CPU wanted, over all periods: a period whose \
work was done by its deadline obtained all it wanted, one that was not obtained the CPU time its \
thread got between its start and its deadline (thread CPU clock, read by the work loop within \
~0.1 ms of work after the deadline), at most what it wanted, a dropped one 0. Where the thread CPU \
clock is coarse (Windows: one step per scheduler tick; params.cpu_clock_step_ns) the CPU by the \
deadline cannot be read and the work done by the deadline (share of the period's loop iterations \
× its work wanted) stands in; params.desired_cpu_from says which. Gaming has no periods: latency = \
time each 100 ms burst spent off the CPU (wall − the thread's CPU time), desired_cpu = CPU time \
obtained / wall time of the bursts (clock readings, independent of the work calibration). Work is \
calibrated loop iterations (--work fixed, default; calibrated in a thread on the task's CPUs and \
policy, cached with them as key, a cached value checked by a quick measurement) or the thread's CPU \
clock (--work cputime). The x task samples its 0..100 ms ramp with the same steps in every run, \
so runs are repeats. A run keeps counters and one latency per period, at most 1 000 000 periods \
(longer runs are refused). task_cpu is the CPU time the \
task thread really used (thread CPU clock) in % of one CPU, to compare with its target (params). \
The latency metric keeps every period's sample (mean, true SD, percentiles, max and an HDR \
histogram per run); the others are one value per run. Across runs: median with 95 % CI.";

impl Cell {
    pub fn new(task: &'static str, load: LoadKind, settings: Arc<Settings>) -> Cell {
        let mut metrics = vec![MetricSpec {
            name: "latency",
            unit: Unit::Nanoseconds,
            better: Better::Lower,
            description: "per period: actual start − intended start (gaming: time each burst spent off the CPU, wall − thread CPU time)",
        }];
        if task != "gaming" {
            metrics.push(MetricSpec {
                name: "deadlines_met",
                unit: Unit::Percent,
                better: Better::Higher,
                description: "periods finished by their deadline, % of all periods (dropped included)",
            });
        }
        metrics.push(MetricSpec {
            name: "desired_cpu",
            unit: Unit::Percent,
            better: Better::Higher,
            description: if task == "gaming" {
                "CPU time obtained, % of the bursts' wall time"
            } else {
                "CPU obtained by each period's deadline, % of the CPU wanted (dropped periods obtain 0)"
            },
        });
        if task != "gaming" {
            metrics.push(MetricSpec {
                name: "dropped_frames",
                unit: Unit::Count,
                better: Better::Lower,
                description: "periods skipped because their deadline passed before they could start",
            });
        }
        metrics.push(MetricSpec {
            name: "task_cpu",
            unit: Unit::Percent,
            better: Better::Neutral,
            description: "CPU time the task thread really used, % of one CPU (target: params.target_cpu_pct)",
        });
        if load != LoadKind::None {
            metrics.push(background::LOAD_CPU);
        }
        Cell {
            info: Info {
                id: format!("interactivity/{task}/{}", load.name()),
                suite: "interactivity",
                title: format!("{task} task under {} load", load.name()),
                method: METHOD.to_string(),
                metrics,
            },
            task,
            load,
            settings,
        }
    }

    fn duration(&self, ctx: &RunContext) -> Duration {
        let d = self
            .settings
            .duration
            .unwrap_or_else(|| (ctx.run_time * 5).max(Duration::from_millis(500)));
        if ctx.warmup {
            d.min(Duration::from_millis(300))
        } else {
            d
        }
    }

    fn sched_request(&self, task: &Task) -> SchedRequest {
        let s = &self.settings;
        let period = task.period_ns();
        let max_work = (0..101).map(|k| task.work_ns(k)).max().unwrap_or(period);
        // Budget: twice the work plus 0.5 ms (fixed work can run slower than calibrated, e.g. right
        // after a wake-up in a VM), at most 90 % of the period (admission control).
        let runtime = (max_work * 2 + 500_000).min(period * 9 / 10);
        SchedRequest {
            policy: s.policy,
            priority: s.priority,
            nice: s.nice,
            slice_ns: s.slice.map(|d| d.as_nanos() as u64),
            runtime_ns: Some(runtime),
            deadline_ns: Some(period),
            period_ns: Some(period),
        }
    }
}

/// What the measuring thread did and read back.
struct Measured {
    run: task::TaskRun,
    facts: Map<String, Value>,
    warnings: Vec<String>,
}

/// Put the calling thread where the task runs: its CPUs, then its policy (a refused real-time
/// policy is a warning), then timer slack; returns the facts read back and the warnings.
fn place_thread(cell: &Cell, task: &Task) -> Result<(Map<String, Value>, Vec<String>), BenchError> {
    let s = &cell.settings;
    let mut facts = Map::new();
    let mut warnings = Vec::new();
    if let Some(c) = &s.cpus {
        sched::set_thread_affinity(c).map_err(|e| crate::bench::os_err("set affinity", e))?;
    }
    let req = cell.sched_request(task);
    if (req.policy.is_some() || req.nice.is_some() || req.slice_ns.is_some())
        && let Err(e) = sched::apply_thread(&req)
    {
        let rt = req.policy.is_some_and(Policy::is_realtime);
        if rt && e.kind() == std::io::ErrorKind::PermissionDenied {
            let why = crate::platform::sysinfo::environment()
                .realtime
                .reason
                .unwrap_or_else(|| e.to_string());
            warnings.push(format!(
                "real-time policy {} not permitted ({why}); ran with the default policy",
                req.policy.map(Policy::name).unwrap_or("?")
            ));
            facts.insert("realtime_denied".into(), json!(why));
        } else {
            return Err(crate::bench::os_err("set scheduling policy", e));
        }
    }
    // Timer slack after the policy (a policy change can reset it).
    match clock::set_timer_slack_ns(1) {
        Ok(()) => {}
        Err(e) => {
            facts.insert("timer_slack_note".into(), json!(e.to_string()));
        }
    }
    facts.insert("timer_slack_ns".into(), json!(clock::timer_slack_ns().ok()));
    facts.insert(
        "task_sched".into(),
        serde_json::to_value(sched::read_thread().ok()).unwrap_or_default(),
    );
    facts.insert(
        "task_affinity".into(),
        json!(crate::platform::current_thread_affinity().ok()),
    );
    Ok((facts, warnings))
}

/// The work calibration, made once per matrix in a thread placed like the task (see
/// [`work::calibrate`]), stopped by Ctrl-C and the cell's deadline.
fn calibration(cell: &Cell, task: &Task, ctx: &RunContext) -> Result<Calibration, BenchError> {
    let s = &cell.settings;
    if let Some(c) = s.calibration.get() {
        return Ok(c.clone());
    }
    let stop = || ctx.check().is_err();
    let c = std::thread::scope(|sc| {
        // Named, so that tools (and a test) can see the calibration phase.
        let thread = std::thread::Builder::new().name("osgauge-calib".into());
        let handle = thread.spawn_scoped(sc, || {
            place_thread(cell, task)?;
            let key = format!("{} | {}", work::machine_key(), s.placement_key());
            work::calibrate(s.recalibrate, s.cache_file.as_deref(), &key, &stop).map_err(
                |e| match e {
                    work::CalibrationError::Stopped => {
                        ctx.check().err().unwrap_or_else(BenchError::interrupted)
                    }
                    work::CalibrationError::Failed(m) => BenchError::failed(m),
                },
            )
        });
        match handle {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(BenchError::failed("calibration thread panicked"))),
            Err(e) => Err(BenchError::os("spawn the calibration thread", e)),
        }
    })?;
    Ok(s.calibration.get_or_init(|| c).clone())
}

fn measure(
    cell: &Cell,
    task: Task,
    work: &Work,
    duration: Duration,
    ctx: &RunContext,
) -> Result<Measured, BenchError> {
    let (facts, warnings) = place_thread(cell, &task)?;
    let stop = || ctx.check().is_err();
    let run = task::run_task(
        task,
        work,
        duration.as_nanos() as u64,
        &stop,
        cell.settings.attribute_ns,
    )
    .map_err(|e| crate::bench::os_err("absolute sleep", e))?;
    ctx.check()?;
    Ok(Measured {
        run,
        facts,
        warnings,
    })
}

fn busy_facts(
    before: &BusySample,
    after: &BusySample,
    wall_ns: u64,
) -> (Map<String, Value>, f64, f64) {
    let mut m = Map::new();
    m.insert("loadavg1_before".into(), json!(before.loadavg1));
    m.insert("loadavg1_after".into(), json!(after.loadavg1));
    let pressure = match (before.cpu_some_total_us, after.cpu_some_total_us) {
        (Some(a), Some(b)) if wall_ns > 0 => {
            Some(100.0 * (b.saturating_sub(a)) as f64 * 1000.0 / wall_ns as f64)
        }
        _ => None,
    };
    let steal = match (
        before.steal_ticks,
        after.steal_ticks,
        before.total_ticks,
        after.total_ticks,
    ) {
        (Some(s0), Some(s1), Some(t0), Some(t1)) if t1 > t0 => {
            Some(100.0 * s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
        }
        _ => None,
    };
    m.insert("cpu_pressure_some_pct".into(), json!(pressure));
    m.insert("steal_pct".into(), json!(steal));
    (m, pressure.unwrap_or(0.0), steal.unwrap_or(0.0))
}

impl Benchmark for Cell {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let s = &self.settings;
        let mut m = Map::new();
        m.insert("task".into(), json!(self.task));
        m.insert("load".into(), json!(self.load.name()));
        m.insert("load_description".into(), json!(self.load.description()));
        m.insert(
            "duration_s".into(),
            json!(s.duration.map(|d| d.as_secs_f64())),
        );
        if let Some(why) = s.duration_reason {
            m.insert("duration_reason".into(), json!(why));
        }
        m.insert("work_mode".into(), json!(s.work_mode));
        m.insert("video_hz".into(), json!(s.video_hz));
        if self.task == "custom" {
            m.insert("custom_cpu_pct".into(), json!(s.custom_cpu_pct));
            m.insert(
                "custom_interval_ns".into(),
                json!(s.custom_interval.as_nanos() as u64),
            );
        }
        m.insert("policy".into(), json!(s.policy.map(Policy::name)));
        m.insert("priority".into(), json!(s.priority));
        m.insert("nice".into(), json!(s.nice));
        m.insert(
            "slice_ns".into(),
            json!(s.slice.map(|d| d.as_nanos() as u64)),
        );
        m.insert("load_nice".into(), json!(s.load_nice));
        m.insert("cpus".into(), json!(s.cpus));
        m.insert("sleep".into(), json!(clock::SLEEP_DESCRIPTION));
        m.insert("cpu_clock".into(), json!(clock::CPU_CLOCK_DESCRIPTION));
        m
    }

    /// Warm-up runs of at most 300 ms, measured runs of the cell's duration, each with its load
    /// started and stopped; plus the work calibration once (cached between runs).
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let d = self
            .settings
            .duration
            .unwrap_or_else(|| (e.run_time * 5).max(Duration::from_millis(500)))
            .as_secs_f64();
        const PER_RUN_S: f64 = 0.05;
        const CALIBRATION_S: f64 = 0.3;
        f64::from(e.warmup) * (d.min(0.3) + PER_RUN_S)
            + f64::from(e.runs) * (d + PER_RUN_S)
            + CALIBRATION_S
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let (task, work, duration, mut out) = self.prepare(ctx)?;
        ctx.check()?;
        let before = cputime::busy_sample();
        let t_before = clock::now_ns();
        // The load (its folder, its child): stopped, reaped and removed on every way out of this run.
        let load = background::BackgroundLoad::start(
            self.load,
            &self.settings.load_options(self.load),
            ctx,
            &mut out,
            work,
            duration.as_nanos() as u64,
        )?;
        ctx.check()?;
        let (measured, trace) = self.measure_traced(ctx, task, &work, duration)?;
        let report = load.stop(ctx, &mut out)?;
        let after = cputime::busy_sample();
        let wall = clock::now_ns() - t_before;
        self.figures(
            out,
            task,
            measured,
            trace,
            report.as_ref(),
            (&before, &after, wall),
        )
    }
}

/// The cells of a task × load matrix, in task-major order.
pub fn matrix(
    tasks: &[&'static str],
    loads: &[LoadKind],
    settings: Arc<Settings>,
) -> Vec<Box<dyn Benchmark>> {
    let mut v: Vec<Box<dyn Benchmark>> = Vec::new();
    for &t in tasks {
        for &l in loads {
            v.push(Box::new(Cell::new(t, l, settings.clone())));
        }
    }
    v
}

/// How the small matrix `osgauge run` includes is configured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InteractivityOptions {
    /// The quick preset: each run measures [`QUICK_DURATION`] (else 5 × the run time, at least
    /// 500 ms).
    pub quick: bool,
}

impl InteractivityOptions {
    pub fn quick() -> InteractivityOptions {
        InteractivityOptions { quick: true }
    }
}

/// A cell's measuring time per run at the quick preset: 6 audio periods of 50 ms, 18 video
/// frames at 60 Hz (the Windows tests under Wine run 300 ms cells too).
pub const QUICK_DURATION: Duration = Duration::from_millis(300);

/// The small matrix `osgauge run` includes: audio & video × none & burn.
pub fn quick_benchmarks(opts: &InteractivityOptions) -> Vec<Box<dyn Benchmark>> {
    matrix(
        &["audio", "video"],
        &[LoadKind::None, LoadKind::Burn],
        Arc::new(Settings {
            duration: opts.quick.then_some(QUICK_DURATION),
            duration_reason: opts.quick.then_some("quick preset"),
            ..Settings::default()
        }),
    )
}

/// How far a task's measured CPU may stray from its target before its cell is marked: 5 points
/// or a quarter of the target, whichever is larger.
pub fn task_cpu_tolerance(target: f64) -> f64 {
    5.0_f64.max(0.25 * target)
}

/// The warning for a task that got (nearly) all the CPU it asked for — desired CPU ≥ 95 % — yet
/// used a CPU share off its target by more than [`task_cpu_tolerance`]: its fixed work loop ran
/// at another speed than at calibration, so the cell measured a lighter (or heavier) task than
/// its name. A task starved by a load (desired CPU below 95 %) is not this: that is the finding.
/// `--work cputime` spins on the thread's CPU clock, so its work is right by construction.
pub fn task_off_target(
    name: &str,
    task_cpu: f64,
    target: f64,
    desired: Option<f64>,
    mode: work::WorkMode,
) -> Option<String> {
    if mode != work::WorkMode::Fixed || desired.is_none_or(|d| d < 95.0) {
        return None;
    }
    ((task_cpu - target).abs() > task_cpu_tolerance(target)).then(|| {
        format!(
            "task '{name}' used {task_cpu:.1} % of a CPU against its target of {target:.1} % \
             while it got the CPU it asked for: its calibrated work loop ran at another speed \
             than at calibration, so this cell measured a {} task than '{name}' \
             (task_cpu_off_target); re-run with --recalibrate, or --work cputime where the OS \
             has a fine thread CPU clock",
            if task_cpu < target {
                "lighter"
            } else {
                "heavier"
            }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per task in record order: its cell without load, then its worst loaded cell; a task whose
    /// no-load cell was not measured shows only its worst.
    #[test]
    fn the_summary_shows_each_task_without_load_and_at_its_worst() {
        use crate::bench::testutil::result;
        let cells = [
            result("interactivity/audio/none", &[("latency", Some(50.0))]),
            result("interactivity/audio/burn", &[("latency", Some(500.0))]),
            result("interactivity/audio/memory", &[("latency", Some(700.0))]),
            result("interactivity/audio/io", &[("latency", None)]),
            result("interactivity/video/none", &[("latency", None)]),
            result(
                "interactivity/video/burn",
                &[("deadlines_met", Some(1.0)), ("latency", Some(900.0))],
            ),
        ];
        let refs: Vec<&BenchmarkResult> = cells.iter().collect();
        let Headlines::Picked(pick) = HEADLINES else {
            panic!("the interactivity suite picks its headlines from its cells")
        };
        let picks: Vec<(String, &str, String)> = pick(&refs)
            .into_iter()
            .map(|p| (p.bench.id.clone(), p.metric.name.as_str(), p.label))
            .collect();
        let want = [
            ("interactivity/audio/none", "audio latency, no load"),
            (
                "interactivity/audio/memory",
                "audio latency, worst (memory)",
            ),
            ("interactivity/video/burn", "video latency, worst (burn)"),
        ];
        assert_eq!(picks.len(), want.len(), "{picks:?}");
        for ((id, metric, label), (want_id, want_label)) in picks.iter().zip(want) {
            assert_eq!(
                (id.as_str(), *metric, label.as_str()),
                (want_id, "latency", want_label)
            );
        }
    }

    #[test]
    fn a_task_off_its_target_while_it_got_its_cpu_is_marked() {
        use work::WorkMode::{Cputime, Fixed};
        // The video cell: 25.9 % against 40 %, 100 % desired CPU.
        let w = task_off_target("video", 25.9, 40.0, Some(100.0), Fixed).unwrap();
        assert!(w.contains("25.9 %") && w.contains("lighter"), "{w}");
        // Within the tolerance (10 points for a 40 % target): clean.
        assert_eq!(
            task_off_target("video", 33.0, 40.0, Some(100.0), Fixed),
            None
        );
        // Starved by a load: the finding, not a wrong task.
        assert_eq!(
            task_off_target("video", 20.0, 40.0, Some(60.0), Fixed),
            None
        );
        // Spinning on the CPU clock: right by construction.
        assert_eq!(
            task_off_target("video", 25.0, 40.0, Some(100.0), Cputime),
            None
        );
        // Small targets get 5 points.
        assert!(task_off_target("audio", 11.0, 5.0, Some(100.0), Fixed).is_some());
        assert_eq!(task_cpu_tolerance(5.0), 5.0);
    }

    /// The quick preset's cells measure 300 ms per run and say why; the standard ones follow
    /// the run time and say nothing.
    #[test]
    fn quick_cells_measure_their_short_window_and_say_so() {
        for (opts, want, why) in [
            (
                InteractivityOptions::quick(),
                json!(0.3),
                json!("quick preset"),
            ),
            (InteractivityOptions::default(), Value::Null, Value::Null),
        ] {
            for b in quick_benchmarks(&opts) {
                let p = b.params();
                assert_eq!(p["duration_s"], want, "{}", b.info().id);
                assert_eq!(
                    p.get("duration_reason").cloned().unwrap_or(Value::Null),
                    why
                );
            }
        }
    }

    #[test]
    fn cells_declare_the_metrics_their_task_has() {
        let s = Arc::new(Settings {
            cache_file: None,
            ..Settings::default()
        });
        let audio = Cell::new("audio", LoadKind::Burn, s.clone());
        let names: Vec<_> = audio.info().metrics.iter().map(|m| m.name).collect();
        assert_eq!(
            names,
            [
                "latency",
                "deadlines_met",
                "desired_cpu",
                "dropped_frames",
                "task_cpu",
                "load_cpu"
            ]
        );
        let gaming = Cell::new("gaming", LoadKind::None, s);
        let names: Vec<_> = gaming.info().metrics.iter().map(|m| m.name).collect();
        assert_eq!(names, ["latency", "desired_cpu", "task_cpu"]);
        assert_eq!(gaming.info().id, "interactivity/gaming/none");
        let q = quick_benchmarks(&InteractivityOptions::default());
        let ids: Vec<_> = q.iter().map(|b| b.info().id.clone()).collect();
        assert_eq!(
            ids,
            [
                "interactivity/audio/none",
                "interactivity/audio/burn",
                "interactivity/video/none",
                "interactivity/video/burn"
            ]
        );
    }

    #[test]
    fn deadline_budget_fits_the_period() {
        let s = Arc::new(Settings {
            cache_file: None,
            policy: Some(Policy::Deadline),
            ..Settings::default()
        });
        let c = Cell::new("audio", LoadKind::None, s);
        let r = c.sched_request(&Task::Audio);
        assert_eq!(r.period_ns, Some(50_000_000));
        assert_eq!(r.runtime_ns, Some(5_500_000));
        let r = c.sched_request(&Task::X {
            stride: 1,
            offset: 0,
        });
        assert_eq!(r.runtime_ns, Some(90_000_000));
    }

    #[test]
    fn busy_figures_are_deltas_over_the_run() {
        let a = BusySample {
            loadavg1: Some(0.5),
            cpu_some_total_us: Some(1_000_000),
            steal_ticks: Some(10),
            total_ticks: Some(1000),
        };
        let b = BusySample {
            loadavg1: Some(0.7),
            cpu_some_total_us: Some(1_250_000),
            steal_ticks: Some(15),
            total_ticks: Some(1100),
        };
        // 250 ms of stall in a 1 s run: 25 %; 5 of 100 ticks stolen: 5 %.
        let (m, pressure, steal) = busy_facts(&a, &b, 1_000_000_000);
        assert!((pressure - 25.0).abs() < 1e-9);
        assert!((steal - 5.0).abs() < 1e-9);
        assert_eq!(m["loadavg1_after"], json!(0.7));
        let (_, p, s) = busy_facts(&BusySample::default(), &b, 1);
        assert_eq!((p, s), (0.0, 0.0));
    }
}
