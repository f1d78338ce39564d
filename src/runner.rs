//! The runner: for each planned benchmark, warm-up then N independent runs, each bounded in time
//! and interruptible; per-run samples become summaries and histograms, runs become an across-run
//! summary. A benchmark that fails records its error and the others still run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Map, Value};

use crate::bench::{Benchmark, Info, RunOutput};
use crate::timing::RunContext;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::record::{
    AdaptiveOutcome, BenchError, BenchmarkResult, BoundKind, Config, Environments, ErrorKind,
    MetricBound, MetricResult, RunMetric, RunRecord, SCHEMA, Schedule, TimingCalibration, Tool,
};
use crate::stats;

/// Scale for HDR histograms of ns metrics: picoseconds, so sub-ns values keep 3 digits.
const NS_HISTOGRAM_SCALE: f64 = 1000.0;
/// Histogram scale of units whose values are often fractional (six decimal places kept).
const FRACTIONAL_HISTOGRAM_SCALE: f64 = 1e6;

/// Wall time of a run besides its benchmarks (machine record, timer calibration, environment
/// samples at start and end), s.
pub const RUN_OVERHEAD_S: f64 = 1.0;

/// Everything the runner needs, validated.
pub struct Plan {
    pub benchmarks: Vec<Box<dyn Benchmark>>,
    pub config: Config,
    pub label: Option<String>,
    /// The user's tags (`--tag`), kept in the record.
    pub tags: std::collections::BTreeMap<String, String>,
}

impl Plan {
    pub fn run_time(&self) -> Duration {
        Duration::from_millis(self.config.run_time_ms)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.config.timeout_ms)
    }

    /// How much longer than [`Plan::estimates`] the run may take when every window a benchmark
    /// extends only as needed runs to its cap, s (never past the time bounds).
    pub fn estimate_extension_s(&self) -> f64 {
        let e = crate::bench::Estimate {
            runs: self.config.runs,
            warmup: self.config.warmup_runs,
            run_time: self.run_time(),
        };
        let bound = self.timeout().as_secs_f64();
        self.benchmarks
            .iter()
            .zip(self.estimates())
            .map(|(b, t)| b.estimate_extension_s(&e).clamp(0.0, (bound - t).max(0.0)))
            .sum()
    }

    /// Each benchmark's expected wall time, s ([`Benchmark::estimate_s`]), never above its time
    /// bound.
    pub fn estimates(&self) -> Vec<f64> {
        let e = crate::bench::Estimate {
            runs: self.config.runs,
            warmup: self.config.warmup_runs,
            run_time: self.run_time(),
        };
        let bound = self.timeout().as_secs_f64();
        // A benchmark that warms itself takes no warm-up run.
        let without_warmup = crate::bench::Estimate { warmup: 0, ..e };
        self.benchmarks
            .iter()
            .map(|b| {
                let e = if b.warms_itself() {
                    &without_warmup
                } else {
                    &e
                };
                b.estimate_s(e).clamp(0.0, bound)
            })
            .collect()
    }
}

/// Each benchmark's expected seconds: the time per run an earlier run of the same work took
/// (`history`, by id: seconds per run including warm-up) times this plan's runs, else the
/// benchmark's own estimate ([`Plan::estimates`]); never above the time bound. Also returns how
/// many came from `history`.
pub fn estimates_with_history(
    plan: &Plan,
    history: &std::collections::HashMap<String, f64>,
) -> (Vec<f64>, usize) {
    let all_runs = f64::from(plan.config.runs + plan.config.warmup_runs);
    let bound = plan.timeout().as_secs_f64();
    let mut from_history = 0;
    let v = plan
        .benchmarks
        .iter()
        .zip(plan.estimates())
        .map(|(b, model)| match history.get(&b.info().id) {
            Some(per_run) => {
                from_history += 1;
                (per_run * all_runs).clamp(0.0, bound)
            }
            None => model,
        })
        .collect();
    (v, from_history)
}

/// What the runner reports while it works.
pub enum Event<'a> {
    Started {
        record: &'a RunRecord,
        total: usize,
    },
    /// One run (warm-up or measured) of benchmark `index` starts, in round `round` (0: warm-up).
    RunStarted {
        index: usize,
        info: &'a Info,
        round: u32,
    },
    /// That run ended after `wall_s` seconds; `finished` when it was the benchmark's last.
    RunFinished {
        index: usize,
        info: &'a Info,
        wall_s: f64,
        finished: bool,
    },
    /// A round ended: `record` holds every benchmark begun so far, summarised over the runs
    /// taken so far (what the store keeps should the process die now).
    RoundFinished {
        round: u32,
        record: &'a RunRecord,
    },
}

/// Run the plan in rounds (randomized multiple interleaved trials): round 0 holds every
/// benchmark's warm-up runs, then each round takes one measured run of every benchmark still
/// running, in a fresh random order drawn from the plan's seed, until each has its runs (or,
/// adaptive, its CI), its time bound, an error or Ctrl-C. So each benchmark's runs sample the
/// whole invocation rather than one stretch of it. `cancel` is set by the Ctrl-C handler; the
/// record comes back with `complete == false` if it was set before the end.
pub fn execute(plan: Plan, cancel: &AtomicBool, on_event: &mut dyn FnMut(Event)) -> RunRecord {
    let label = plan.label.clone();
    match execute_arms(plan, &[label], &mut |_, _| Ok(()), cancel, on_event) {
        Ok(mut v) | Err((_, mut v)) => v.pop().expect("one arm"),
    }
}

/// [`execute`] for several arms (settings of one machine, `osgauge ab`): in every round the
/// arms take their turns in a fresh random order, `switch(arm, round)` putting the machine into
/// the arm's setting before its runs, which are again in a fresh random order. One record per
/// arm, labelled `labels[arm]`; every run carries its round, so the arms' runs pair up by round.
/// A switch that fails ends every arm there: Err(its message, the records as far as they got).
pub fn execute_arms(
    plan: Plan,
    labels: &[Option<String>],
    switch: &mut dyn FnMut(usize, u32) -> Result<(), String>,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event),
) -> Result<Vec<RunRecord>, (String, Vec<RunRecord>)> {
    let (records, schedule) = start_records(&plan, labels);
    for r in &records {
        on_event(Event::Started {
            record: r,
            total: plan.benchmarks.len(),
        });
    }
    let mut arms = Arms::new(&plan, records, &schedule);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(schedule.seed);
    let (round, failed) = arms.run_rounds(&mut rng, switch, cancel, on_event);
    let interrupted = cancel.load(Ordering::Relaxed) || failed.is_some();
    let mut records = arms.finish(round, interrupted, failed.as_deref());
    let notes = crate::bench::registry::run_notes(&records, interrupted);
    for (r, notes) in records.iter_mut().zip(notes) {
        r.warnings = run_warnings(r, interrupted, notes);
    }
    match failed {
        Some(e) => Err((e, records)),
        None => Ok(records),
    }
}

/// Setup of [`execute_arms`]: the machine, the environment at the start and the timer
/// calibration, taken once and put into one empty record per arm (labelled `labels[arm]`); and
/// the plan's schedule, made interleaved with no rounds yet (seed and drift reference kept).
fn start_records(plan: &Plan, labels: &[Option<String>]) -> (Vec<RunRecord>, Schedule) {
    let machine = crate::platform::sysinfo::machine();
    let env_start = crate::platform::sysinfo::environment();
    let timing = crate::timing::calibrate();
    let mut config = plan.config.clone();
    let mut schedule = config.schedule.take().unwrap_or_else(|| Schedule {
        order: "interleaved".into(),
        seed: 0,
        rounds: Vec::new(),
        reference: None,
    });
    schedule.order = "interleaved".into();
    schedule.rounds.clear();
    let started = Utc::now();
    let records = labels
        .iter()
        .map(|label| RunRecord {
            schema: SCHEMA.to_string(),
            run_id: uuid::Uuid::now_v7(),
            label: label.clone(),
            tags: plan.tags.clone(),
            started,
            finished: None,
            complete: false,
            tool: Tool::current(),
            machine: machine.clone(),
            environment: Environments {
                start: env_start.clone(),
                end: None,
            },
            timing: timing.clone(),
            config: config.clone(),
            benchmarks: Vec::new(),
            reference: None,
            warnings: Vec::new(),
        })
        .collect();
    (records, schedule)
}

/// The arms of [`execute_arms`] on their way through the rounds: per arm its benchmarks'
/// tracks, its record and the schedule of the runs it took.
struct Arms<'p> {
    plan: &'p Plan,
    tracks: Vec<Vec<Track<'p>>>,
    records: Vec<RunRecord>,
    schedules: Vec<Schedule>,
    /// Index of the drift reference in the plan.
    reference: Option<usize>,
}

impl<'p> Arms<'p> {
    /// One arm per record, each with a fresh track for every benchmark of `plan`.
    fn new(plan: &'p Plan, records: Vec<RunRecord>, schedule: &Schedule) -> Self {
        let tracks = records
            .iter()
            .map(|_| {
                plan.benchmarks
                    .iter()
                    .map(|b| Track::new(b.as_ref()))
                    .collect()
            })
            .collect();
        let reference = plan
            .benchmarks
            .iter()
            .position(|b| Some(b.info().id.as_str()) == schedule.reference.as_deref());
        Arms {
            plan,
            tracks,
            schedules: vec![schedule.clone(); records.len()],
            records,
            reference,
        }
    }

    /// Measure: round after round, each arm in a fresh random order switched in and taking its
    /// runs of the round, until no benchmark has a run left, Ctrl-C, or a switch fails. The
    /// round it stopped in, and the failed switch's message.
    fn run_rounds(
        &mut self,
        rng: &mut rand_chacha::ChaCha8Rng,
        switch: &mut dyn FnMut(usize, u32) -> Result<(), String>,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(Event),
    ) -> (u32, Option<String>) {
        let plan = self.plan;
        let mut round: u32 = if plan.config.warmup_runs > 0 { 0 } else { 1 };
        loop {
            if cancel.load(Ordering::Relaxed) {
                return (round, None);
            }
            let orders: Vec<Vec<usize>> = self
                .tracks
                .iter()
                .map(|tracks| round_order(tracks, plan, round, self.reference))
                .collect();
            if orders.iter().all(Vec::is_empty) {
                if round == 0 {
                    // Nothing to warm up (no reference, every benchmark warms itself): measure.
                    round = 1;
                    continue;
                }
                return (round, None);
            }
            let mut arm_order: Vec<usize> = (0..self.tracks.len()).collect();
            arm_order.shuffle(rng);
            for &a in &arm_order {
                let mut order = orders[a].clone();
                if order.is_empty() {
                    continue;
                }
                order.shuffle(rng);
                if cancel.load(Ordering::Relaxed) {
                    return (round, None);
                }
                // A setting switched between arms must not meet what a benchmark kept from a
                // run under the other arm's setting.
                if self.tracks.len() > 1 {
                    for b in &plan.benchmarks {
                        b.release();
                    }
                }
                if let Err(e) = switch(a, round) {
                    return (round, Some(e));
                }
                self.run_arm(a, &order, round, cancel, on_event);
            }
            round += 1;
        }
    }

    /// Arm `a`'s runs of `round` (benchmarks in `order`, until Ctrl-C), then its record brought
    /// up to date with the runs taken so far.
    fn run_arm(
        &mut self,
        a: usize,
        order: &[usize],
        round: u32,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(Event),
    ) {
        let plan = self.plan;
        let tracks = &mut self.tracks[a];
        let mut ran = Vec::new();
        for &i in order {
            if cancel.load(Ordering::Relaxed) {
                break;
            }
            let info = tracks[i].bench.info();
            on_event(Event::RunStarted {
                index: i,
                info,
                round,
            });
            let t0 = Instant::now();
            tracks[i].step(plan, &self.records[a].timing, cancel, round);
            ran.push(info.id.clone());
            on_event(Event::RunFinished {
                index: i,
                info,
                wall_s: t0.elapsed().as_secs_f64(),
                finished: !tracks[i].active(plan, round + 1),
            });
        }
        self.schedules[a].rounds.push(ran);
        let (benchmarks, reference_result) = split_reference(
            tracks.iter().map(|t| t.begun().then(|| t.result(plan))),
            self.reference,
        );
        let record = &mut self.records[a];
        record.benchmarks = benchmarks;
        record.reference = reference_result;
        record.config.schedule = Some(self.schedules[a].clone());
        on_event(Event::RoundFinished {
            round,
            record: &*record,
        });
    }

    /// Assemble: each arm's final record (its benchmarks' results, the environment at the end,
    /// whether complete), the benchmarks cut short by an interruption or a failed switch
    /// (`failed`) said so first ([`cut_short`]).
    fn finish(mut self, round: u32, interrupted: bool, failed: Option<&str>) -> Vec<RunRecord> {
        let plan = self.plan;
        for (a, tracks) in self.tracks.iter_mut().enumerate() {
            if interrupted {
                for t in tracks.iter_mut() {
                    cut_short(t, plan, round, failed);
                }
            }
            let record = &mut self.records[a];
            let (benchmarks, reference_result) = split_reference(
                tracks.iter_mut().map(|t| t.begun().then(|| t.finish(plan))),
                self.reference,
            );
            record.benchmarks = benchmarks;
            record.reference = reference_result;
            record.config.schedule = Some(self.schedules[a].clone());
            record.environment.end = Some(crate::platform::sysinfo::environment());
            record.finished = Some(Utc::now());
            record.complete = !interrupted
                && record.benchmarks.len() + usize::from(self.reference.is_some())
                    == plan.benchmarks.len();
        }
        self.records
    }
}

/// A begun benchmark whose runs an interruption (`failed`: a switch that failed, else Ctrl-C)
/// cut short in `round`: without a finished run it has the interruption as its error; with some,
/// they are its figures, with a warning that says how many of the planned runs they are.
fn cut_short(t: &mut Track, plan: &Plan, round: u32, failed: Option<&str>) {
    let cut = t
        .error
        .as_ref()
        .is_some_and(|e| e.kind == ErrorKind::Interrupted)
        || (t.error.is_none() && t.active(plan, round));
    if !(t.begun() && cut) {
        return;
    }
    let why = format!(
        "{} after {} of {} runs",
        failed.unwrap_or("interrupted by the user"),
        t.outputs.len(),
        plan.config.runs
    );
    if t.outputs.is_empty() {
        t.error = Some(BenchError {
            kind: ErrorKind::Interrupted,
            message: why,
        });
    } else {
        // Its finished runs are measurements: kept as its figures, with fewer runs, and said so.
        t.error = None;
        t.warnings
            .push(format!("{why}: its figures are of these runs"));
    }
}

/// The results of the benchmarks begun (in plan order), the drift reference's apart.
fn split_reference(
    results: impl Iterator<Item = Option<BenchmarkResult>>,
    reference: Option<usize>,
) -> (Vec<BenchmarkResult>, Option<BenchmarkResult>) {
    let mut benchmarks = Vec::new();
    let mut found = None;
    for (i, r) in results.enumerate() {
        match r {
            Some(r) if Some(i) == reference => found = Some(r),
            Some(r) => benchmarks.push(r),
            None => {}
        }
    }
    (benchmarks, found)
}

/// The benchmarks of one arm that take a run in `round`, in plan order. The drift reference
/// follows the others: it runs while any of them does, whatever the adaptive rule says of it.
fn round_order(tracks: &[Track], plan: &Plan, round: u32, reference: Option<usize>) -> Vec<usize> {
    // In the warm-up round the reference warms up when any benchmark will be measured, also when
    // every one of them warms itself (takes no warm-up run).
    let others_active = tracks.iter().enumerate().any(|(i, t)| {
        Some(i) != reference && (t.active(plan, round) || (round == 0 && t.active(plan, 1)))
    });
    (0..tracks.len())
        .filter(|&i| {
            if Some(i) == reference {
                others_active
                    && tracks[i].error.is_none()
                    && (round > 0 || tracks[i].attempts < plan.config.warmup_runs)
            } else {
                tracks[i].active(plan, round)
            }
        })
        .collect()
}

/// A fresh random seed for the run order (recorded; `--seed` repeats an order).
pub fn new_seed() -> u64 {
    rand::random::<u64>() >> 11
}

/// One benchmark's way through the rounds: its warm-up and measured runs so far, the time they
/// took (its time bound counts only its own runs), and what ended it.
struct Track<'p> {
    bench: &'p dyn Benchmark,
    /// Runs attempted, warm-up included.
    attempts: u32,
    /// Time its own runs took.
    spent: Duration,
    outputs: Vec<RunOutput>,
    /// The round of each measured output.
    rounds: Vec<u32>,
    warnings: Vec<String>,
    error: Option<BenchError>,
    /// The adaptive rule said stop.
    stopped: bool,
}

impl<'p> Track<'p> {
    fn new(bench: &'p dyn Benchmark) -> Self {
        Track {
            bench,
            attempts: 0,
            spent: Duration::ZERO,
            outputs: Vec::new(),
            rounds: Vec::new(),
            warnings: Vec::new(),
            error: None,
            stopped: false,
        }
    }

    fn max_runs(plan: &Plan) -> u32 {
        let min_runs = plan.config.runs;
        plan.config
            .adaptive
            .as_ref()
            .map_or(min_runs, |a| a.max_runs.max(min_runs))
    }

    /// Its warm-up runs: the plan's, or none for a benchmark that warms itself in every run.
    fn warmups(&self, plan: &Plan) -> u32 {
        if self.bench.warms_itself() {
            0
        } else {
            plan.config.warmup_runs
        }
    }

    fn begun(&self) -> bool {
        self.attempts > 0
    }

    /// Whether it has a run to take in `round` (round 0: its warm-up runs).
    fn active(&self, plan: &Plan, round: u32) -> bool {
        if self.error.is_some() || self.stopped {
            return false;
        }
        if round == 0 {
            return self.attempts < self.warmups(plan);
        }
        (self.outputs.len() as u32) < Self::max_runs(plan)
    }

    /// Its runs of `round`: every warm-up run in round 0, else one measured run.
    fn step(&mut self, plan: &Plan, timing: &TimingCalibration, cancel: &AtomicBool, round: u32) {
        let n = if round == 0 {
            self.warmups(plan).saturating_sub(self.attempts)
        } else {
            1
        };
        for _ in 0..n {
            if self.error.is_some() || cancel.load(Ordering::Relaxed) {
                break;
            }
            self.one_run(plan, timing, cancel, round);
        }
        // What it kept between runs goes as soon as it has no run left to take.
        if !self.active(plan, round + 1) {
            self.bench.release();
        }
    }

    fn one_run(
        &mut self,
        plan: &Plan,
        timing: &TimingCalibration,
        cancel: &AtomicBool,
        round: u32,
    ) {
        let info = self.bench.info();
        let timeout_error = |done: usize| {
            BenchError::timeout(format!(
                "time bound of {} reached after {done} of {} runs; finished runs are kept",
                crate::units::format_time_ns(plan.config.timeout_ms as f64 * 1e6),
                plan.config.runs
            ))
        };
        // The bound holds between runs too: a run is not started past it.
        let left = plan.timeout().saturating_sub(self.spent);
        if left.is_zero() {
            self.error = Some(timeout_error(self.outputs.len()));
            return;
        }
        let started = Instant::now();
        let deadline = started + left;
        let warmup = round == 0;
        let run_index = if warmup {
            self.attempts
        } else {
            self.outputs.len() as u32
        };
        let total = self.warmups(plan) + Self::max_runs(plan);
        let ctx = RunContext::new(run_index, warmup, plan.run_time(), deadline, timing, cancel)
            .with_runs_left(total.saturating_sub(self.attempts));
        self.attempts += 1;
        // A panic inside a benchmark is a bug, but it must not take the other benchmarks down.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.bench.run(&ctx)))
                .unwrap_or_else(|p| {
                    Err(BenchError::failed(format!("panicked: {}", panic_text(&p))))
                });
        self.spent += started.elapsed();
        match outcome {
            Ok(mut out) => {
                for w in std::mem::take(&mut out.warnings) {
                    if !self.warnings.contains(&w) {
                        self.warnings.push(w);
                    }
                }
                if warmup {
                    return;
                }
                if let Some((name, _)) = out
                    .samples
                    .iter()
                    .find(|(name, _)| !info.metrics.iter().any(|m| m.name == *name))
                {
                    self.error = Some(BenchError::failed(format!(
                        "benchmark returned undeclared metric '{name}'"
                    )));
                    return;
                }
                self.outputs.push(out);
                self.rounds.push(round);
                if let Some(a) = plan.config.adaptive.as_ref() {
                    let width = headline_half_width(info, &self.outputs).and_then(|(_, w)| w);
                    if stop_rule(
                        self.outputs.len() as u32,
                        plan.config.runs,
                        Self::max_runs(plan),
                        width,
                        a.ci_width,
                    ) != Stop::Continue
                    {
                        self.stopped = true;
                    }
                }
            }
            Err(e) => {
                self.error = Some(if e.kind == ErrorKind::Timeout {
                    timeout_error(self.outputs.len())
                } else {
                    e
                });
            }
        }
    }

    /// The result over the runs taken so far (the outputs are left as they are).
    fn result(&self, plan: &Plan) -> BenchmarkResult {
        assemble(
            self.bench,
            plan,
            self.outputs.clone(),
            &self.rounds,
            self.warnings.clone(),
            self.error.clone(),
            self.spent,
        )
    }

    /// The final result (the outputs are handed over).
    fn finish(&mut self, plan: &Plan) -> BenchmarkResult {
        assemble(
            self.bench,
            plan,
            std::mem::take(&mut self.outputs),
            &self.rounds,
            std::mem::take(&mut self.warnings),
            self.error.take(),
            self.spent,
        )
    }
}

/// Warm-up plus N runs of one benchmark back to back, within its time bound (the rounds of
/// [`execute`] with this benchmark alone).
pub fn run_benchmark(
    bench: &dyn Benchmark,
    plan: &Plan,
    timing: &TimingCalibration,
    cancel: &AtomicBool,
) -> BenchmarkResult {
    let mut t = Track::new(bench);
    let mut round = if t.warmups(plan) > 0 { 0 } else { 1 };
    while t.active(plan, round) && !cancel.load(Ordering::Relaxed) {
        t.step(plan, timing, cancel, round);
        round += 1;
    }
    if cancel.load(Ordering::Relaxed) && t.error.is_none() && t.active(plan, round) {
        t.error = Some(BenchError::interrupted());
    }
    t.finish(plan)
}

/// A benchmark's result from its measured runs (`rounds`: the round of each).
fn assemble(
    bench: &dyn Benchmark,
    plan: &Plan,
    mut outputs: Vec<RunOutput>,
    rounds: &[u32],
    mut warnings: Vec<String>,
    error: Option<BenchError>,
    spent: Duration,
) -> BenchmarkResult {
    let info = bench.info();
    let mut params = bench.params();
    let adaptive_outcome = adaptive_outcome(info, plan, &outputs, &mut warnings);

    // Figures that depend on every run (e.g. cache levels detected once on the pooled curve).
    let derived = bench.finish(&mut outputs);
    for w in outputs
        .iter_mut()
        .flat_map(|o| std::mem::take(&mut o.warnings))
    {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    let run_facts: Vec<Map<String, Value>> = outputs
        .iter_mut()
        .map(|o| std::mem::take(&mut o.facts))
        .collect();
    merge_facts(&mut params, &run_facts);
    for (k, v) in derived {
        params.insert(k, v);
    }
    let metrics = metric_results(info, outputs, rounds, &mut warnings);
    let mut result = BenchmarkResult {
        id: info.id.clone(),
        suite: info.suite.to_string(),
        title: info.title.clone(),
        params,
        measured: Map::new(),
        metrics,
        warnings,
        error,
        wall_s: spent.as_secs_f64(),
        run_facts,
        adaptive: adaptive_outcome,
    };
    result.separate_measured();
    result
}

/// How the adaptive rule ended, judged on the runs as measured (before `finish`); a warning
/// when it stopped before its CI width.
fn adaptive_outcome(
    info: &Info,
    plan: &Plan,
    outputs: &[RunOutput],
    warnings: &mut Vec<String>,
) -> Option<AdaptiveOutcome> {
    let min_runs = plan.config.runs;
    let max_runs = plan
        .config
        .adaptive
        .as_ref()
        .map_or(min_runs, |a| a.max_runs.max(min_runs));
    plan.config.adaptive.as_ref().map(|a| {
        let (metric, width) = match headline_half_width(info, outputs) {
            Some((m, w)) => (m.to_string(), w),
            None => (
                info.metrics.first().map(|m| m.name).unwrap_or("").to_string(),
                None,
            ),
        };
        let runs = outputs.len() as u32;
        let reached = runs >= min_runs && width.is_some_and(|w| w <= a.ci_width);
        if !reached {
            let width_text = width.map_or("not computable".to_string(), |w| {
                format!("±{:.1} %", w * 100.0)
            });
            warnings.push(if runs >= max_runs {
                format!(
                    "stopped at the cap of {max_runs} runs (--max-runs) before its 95 % CI reached ±{:.1} %: {metric} is {width_text}",
                    a.ci_width * 100.0
                )
            } else {
                format!(
                    "stopped after {runs} runs before its 95 % CI reached ±{:.1} % (see its error): {metric} is {width_text}",
                    a.ci_width * 100.0
                )
            });
        }
        AdaptiveOutcome {
            metric,
            target_pct: a.ci_width * 100.0,
            half_width_pct: width.map(|w| w * 100.0),
            runs,
            reached,
        }
    })
}

/// Each declared metric's result over the measured runs: samples per run, why it was not
/// measured (and in how many runs), its bound, and its summary when enough runs measured it.
fn metric_results(
    info: &Info,
    outputs: Vec<RunOutput>,
    rounds: &[u32],
    warnings: &mut Vec<String>,
) -> Vec<MetricResult> {
    let mut per_metric: Vec<Vec<(Vec<f64>, Option<u32>)>> = vec![Vec::new(); info.metrics.len()];
    let mut reasons: Vec<Option<String>> = vec![None; info.metrics.len()];
    let mut unmeasured_runs = vec![0usize; info.metrics.len()];
    let mut bounds: Vec<Option<MetricBound>> = vec![None; info.metrics.len()];
    let mut difference = vec![false; info.metrics.len()];
    for (r, out) in outputs.into_iter().enumerate() {
        let round = rounds.get(r).copied();
        for name in out.differences {
            if let Some(k) = info.metrics.iter().position(|m| m.name == name) {
                difference[k] = true;
            }
        }
        for (name, kind, why) in out.bounds {
            if let Some(k) = info.metrics.iter().position(|m| m.name == name) {
                add_bound(&mut bounds[k], kind, why, warnings);
            }
        }
        for (name, samples) in out.samples {
            if let Some(k) = info.metrics.iter().position(|m| m.name == name) {
                per_metric[k].push((samples, round));
            }
        }
        for (name, why) in out.not_measured {
            if let Some(k) = info.metrics.iter().position(|m| m.name == name) {
                unmeasured_runs[k] += 1;
                reasons[k].get_or_insert(why);
            }
        }
    }

    info.metrics
        .iter()
        .zip(per_metric)
        .zip(reasons)
        .zip(unmeasured_runs)
        .zip(bounds)
        .zip(difference)
        .map(|(((((spec, runs), why), missed), bound), difference)| {
            let measured = runs.len();
            let mut m = summarize_metric(spec, runs, difference, warnings);
            m.not_measured = why;
            m.bound = bound;
            if let Some(w) =
                too_few_measured(measured, measured + missed, m.not_measured.as_deref())
            {
                // The k runs that did measure stay in `runs`; no figure is made of them.
                m.summary = None;
                m.not_measured = Some(w);
            }
            m
        })
        .collect()
}

/// The fewest runs per side for which the two-sided Mann-Whitney U test `compare` uses can reach
/// p < 0.05 (4 vs 4 fully separated: p = 2/70 ≈ 0.029; 3 vs 3: p = 0.1). The minimum of adaptive
/// runs.
pub const MIN_SIGNIFICANT_RUNS: u32 = 4;

/// The adaptive stopping rule's decision after a measured run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Run again.
    Continue,
    /// The CI half-width is within the target (and the minimum is done).
    Reached,
    /// `max_runs` done without reaching it.
    Cap,
}

/// netperf's `-I` rule: never stop before `min_runs`; stop as soon as the relative half-width
/// `width` of the 95 % CI is within `target`; stop at `max_runs` in any case. `width` is `None`
/// when it cannot be computed (no samples yet).
pub fn stop_rule(done: u32, min_runs: u32, max_runs: u32, width: Option<f64>, target: f64) -> Stop {
    if done < min_runs {
        Stop::Continue
    } else if width.is_some_and(|w| w <= target) {
        Stop::Reached
    } else if done >= max_runs {
        Stop::Cap
    } else {
        Stop::Continue
    }
}

/// Half-width of the 95 % bootstrap CI of the median of per-run medians, as a fraction of that
/// median. A median of 0 with a CI of [0, 0] is exact (0); a median of 0 with a CI around it has
/// no relative width (`None`).
pub fn relative_half_width(per_run_medians: &[f64]) -> Option<f64> {
    if per_run_medians.is_empty() {
        return None;
    }
    let (lo, hi) = stats::bootstrap_median_ci(
        per_run_medians,
        0.95,
        stats::BOOTSTRAP_RESAMPLES,
        stats::BOOTSTRAP_SEED,
    );
    let center = stats::median(per_run_medians);
    let half = (hi - lo) / 2.0;
    if center == 0.0 {
        return (half == 0.0).then_some(0.0);
    }
    let w = half / center.abs();
    w.is_finite().then_some(w)
}

/// The metric the adaptive rule watches — the first declared metric that every measured run has
/// samples of — and its relative CI half-width.
fn headline_half_width(info: &Info, outputs: &[RunOutput]) -> Option<(&'static str, Option<f64>)> {
    info.metrics.iter().find_map(|spec| {
        let medians: Vec<f64> = outputs
            .iter()
            .map(|o| {
                o.samples
                    .iter()
                    .find(|(n, _)| *n == spec.name)
                    .and_then(|(_, v)| stats::summarize(v))
                    .map(|s| s.p50)
            })
            .collect::<Option<Vec<f64>>>()?;
        (!medians.is_empty()).then(|| (spec.name, relative_half_width(&medians)))
    })
}

/// `difference`: the metric is a difference of two measured figures, whose benchmark states a
/// value ≤ 0 itself (no generic "subtracted cost exceeded" warning).
fn summarize_metric(
    spec: &crate::bench::MetricSpec,
    runs: Vec<(Vec<f64>, Option<u32>)>,
    difference: bool,
    warnings: &mut Vec<String>,
) -> MetricResult {
    use crate::units::Unit;
    let scale = match spec.unit {
        Unit::Nanoseconds => NS_HISTOGRAM_SCALE,
        // Units whose values are often fractional (0.56 µs/KiB, 10.85 Gbit/s): a histogram of
        // integers needs them scaled up to keep their precision.
        Unit::Microseconds
        | Unit::MegabytesPerSecond
        | Unit::GigabitsPerSecond
        | Unit::GigabytesPerSecond
        | Unit::MicrosecondsPerKib
        | Unit::CpuSecondsPerGb => FRACTIONAL_HISTOGRAM_SCALE,
        _ => 1.0,
    };
    let mut run_metrics = Vec::new();
    let mut push_warning = |w: String| {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    };
    for (i, (samples, round)) in runs.iter().enumerate() {
        match stats::summarize(samples) {
            Some(summary) => {
                // HDR histograms hold positive integers: a run with samples ≤ 0 (a corrected or
                // derived figure whose subtracted cost exceeded the measurement) is recorded
                // shifted by an offset, and the record says so.
                // A time at or below 0, or any negative value, can only come from a subtraction;
                // a count or percentage of 0 (no dropped frames) is an ordinary value.
                let is_time = spec.unit == crate::units::Unit::Nanoseconds;
                let suspicious = samples
                    .iter()
                    .filter(|&&v| if is_time { v <= 0.0 } else { v < 0.0 })
                    .count();
                if suspicious > 0 && !difference {
                    push_warning(format!(
                        "{}: {suspicious} of {} samples {} 0 in run {} — the subtracted \
                         cost (harness overhead or a separately measured part) exceeded the \
                         measurement; its histogram is recorded with histogram_offset",
                        spec.name,
                        samples.len(),
                        if is_time { "≤" } else { "<" },
                        i + 1
                    ));
                }
                let offset = crate::record::histogram_offset(samples, scale);
                let histogram = crate::record::encode_histogram_offset(samples, scale, offset);
                if histogram.is_none() {
                    push_warning(format!(
                        "{}: run {} has no histogram (a sample is not a finite number); its \
                         summary is kept",
                        spec.name,
                        i + 1
                    ));
                }
                run_metrics.push(RunMetric {
                    summary,
                    histogram_scale: histogram.as_ref().map(|_| scale),
                    histogram_offset: histogram.as_ref().filter(|_| offset != 0.0).map(|_| offset),
                    histogram,
                    round: *round,
                });
            }
            None => push_warning(format!("{}: a run returned no usable samples", spec.name)),
        }
    }
    let summaries: Vec<_> = run_metrics.iter().map(|r| r.summary.clone()).collect();
    let summary = stats::across_runs(&summaries);
    if let Some(s) = &summary {
        if s.runs >= 3 && s.cv > 0.10 {
            warnings.push(format!(
                "{}: run-to-run CV {:.0} % — noisy; repeat on a quieter machine or with more runs",
                spec.name,
                s.cv * 100.0
            ));
        }
        if s.center <= 0.0 && spec.unit == crate::units::Unit::Nanoseconds && !difference {
            warnings.push(format!(
                "{}: median ≤ 0 after subtracting the harness overhead — the operation is cheaper \
                 than the measurement noise",
                spec.name
            ));
        }
    }
    MetricResult {
        name: spec.name.to_string(),
        unit: spec.unit,
        better: spec.better,
        description: spec.description.to_string(),
        runs: run_metrics,
        summary,
        not_measured: None,
        bound: None,
    }
}

/// Merge one run's bound into the metric's: the runs are counted; runs that disagree on the side
/// leave no side to print, so the figure is then not a measurement in either direction — kept as
/// the first side with a warning (cannot happen for the benchmarks that bound today: each bounds
/// one metric on one side).
fn add_bound(
    into: &mut Option<MetricBound>,
    kind: BoundKind,
    why: String,
    warnings: &mut Vec<String>,
) {
    match into {
        None => {
            *into = Some(MetricBound {
                kind,
                reason: why,
                runs: 1,
            })
        }
        Some(b) => {
            b.runs += 1;
            if b.kind != kind {
                let w = format!(
                    "runs bounded the same figure from both sides ({} and {}): it is a bound, \
                     not a measurement",
                    b.kind.symbol(),
                    kind.symbol()
                );
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
    }
}

/// The fewest runs a figure is made of when some runs of it were not measured (a CPU cost below
/// the counters' resolution, a busy baseline): at least [`MIN_MEASURED_RUNS`] and at least half
/// of the runs. Below that the figure is "not measured", never a median of one run in fifteen.
pub const MIN_MEASURED_RUNS: usize = 3;

/// Why a metric measured in only `measured` of `total` runs is not reported, or None when it is
/// (every run measured it, or enough did).
pub fn too_few_measured(measured: usize, total: usize, why: Option<&str>) -> Option<String> {
    if measured == total || measured == 0 {
        return None;
    }
    let needed = MIN_MEASURED_RUNS.max(total.div_ceil(2));
    (measured < needed).then(|| {
        format!(
            "only {measured} of {total} runs measured it (a figure needs at least {needed}: \
             {MIN_MEASURED_RUNS} and half the runs); the others: {}",
            why.unwrap_or("not measured")
        )
    })
}

/// Facts every measured run reported with the same value go into `params` (each run's own facts
/// stay in the record's `run_facts`).
fn merge_facts(params: &mut Map<String, Value>, run_facts: &[Map<String, Value>]) {
    let Some((first, rest)) = run_facts.split_first() else {
        return;
    };
    for (k, v) in first {
        if rest.iter().all(|f| f.get(k) == Some(v)) {
            params.insert(k.clone(), v.clone());
        }
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Run-wide warnings in plain language.
fn run_warnings(record: &RunRecord, interrupted: bool, suite_notes: Vec<String>) -> Vec<String> {
    let mut w = Vec::new();
    if interrupted {
        w.push("interrupted: the run is incomplete; finished benchmarks are kept".to_string());
    }
    if record.tool.profile == "debug" {
        w.push("this is a debug build: timings are not comparable; use --release".to_string());
    }
    if record.config.runs < 3 {
        w.push(format!(
            "only {} run(s) per benchmark: too few for a confidence interval (use --runs 5 or more)",
            record.config.runs
        ));
    }
    let findings = crate::system::check(&record.machine, &record.environment.start);
    for f in findings {
        if f.level == crate::system::Level::Warning {
            w.push(format!("{}: {}", f.topic, f.message));
        }
    }
    // What the suites say about the run (the latency suite: an idle exit that dominates
    // wake-up figures).
    w.extend(suite_notes);
    let failed: Vec<_> = record
        .benchmarks
        .iter()
        .filter_map(|b| {
            b.error
                .as_ref()
                .map(|e| format!("{} ({})", b.id, e.kind.as_str()))
        })
        .collect();
    if !failed.is_empty() {
        w.push(format!("not measured: {}", failed.join(", ")));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_needs_three_measured_runs_and_half_of_them() {
        // Every run measured it, or none did: nothing to add.
        assert_eq!(too_few_measured(5, 5, None), None);
        assert_eq!(too_few_measured(0, 15, Some("x")), None);
        // One run in fifteen (as the UDP service demand can be) is not a median.
        let w = too_few_measured(1, 15, Some("below the counters' resolution")).unwrap();
        assert!(
            w.starts_with("only 1 of 15 runs measured it (a figure needs at least 8")
                && w.ends_with("the others: below the counters' resolution"),
            "{w}"
        );
        // At least 3, and at least half.
        assert!(too_few_measured(2, 3, None).is_some());
        assert!(too_few_measured(2, 2, None).is_none());
        assert_eq!(too_few_measured(3, 5, None), None);
        assert!(too_few_measured(3, 7, None).is_some());
        assert_eq!(too_few_measured(4, 7, None), None);
    }

    /// A CPU cost that too few runs measured keeps its per-run reason readable: callers that
    /// accept "not usable" reasons (tests on a busy machine) see through the wrapper.
    #[test]
    fn a_wrapped_not_usable_reason_is_still_recognised() {
        let w = too_few_measured(
            1,
            2,
            Some("the background changed under the test: the idle baselines …"),
        )
        .unwrap();
        assert!(crate::cpucost::is_not_usable_reason(&w), "{w}");
        let other = too_few_measured(1, 2, Some("the peer refused")).unwrap();
        assert!(!crate::cpucost::is_not_usable_reason(&other), "{other}");
    }

    #[test]
    fn too_few_measured_runs_leave_no_summary_and_say_why() {
        // Only the first of 6 runs clears the counters: its value is kept, no figure is made.
        let p = plan(
            vec![fake("test/mostly_unmeasured", |ctx| {
                Ok(if ctx.run_index == 0 {
                    RunOutput::default().metric("t", vec![7.0])
                } else {
                    RunOutput::default().not_measured("t", "below the counters' resolution")
                })
            })],
            6,
            10,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        let m = &r.metrics[0];
        assert!(m.summary.is_none(), "{:?}", m.summary);
        assert_eq!(m.runs.len(), 1);
        assert_eq!(m.runs[0].summary.p50, 7.0);
        let why = m.not_measured.as_deref().unwrap();
        assert!(why.starts_with("only 1 of 6 runs measured it"), "{why}");
    }

    #[test]
    fn an_idle_exit_that_dominates_a_wakeup_figure_is_said() {
        use crate::bench::latency::idle_wakeup::{idle_wakeup_note, needs_idle_exit};
        let p = plan(
            vec![
                fake("latency/idle_wakeup", |_| {
                    Ok(RunOutput::default().metric("t", vec![12_000.0]))
                }),
                fake("net/tcp_rtt_64b", |_| {
                    Ok(RunOutput::default().metric("t", vec![40.0]))
                }),
            ],
            3,
            10,
        );
        let cancel = AtomicBool::new(false);
        let record_of = |exit_ns: f64| {
            let mut bs: Vec<BenchmarkResult> = p
                .benchmarks
                .iter()
                .map(|b| run_benchmark(b.as_ref(), &p, &timing(), &cancel))
                .collect();
            bs[0].metrics[0].name = "idle_exit".into();
            bs[0].metrics[0].summary.as_mut().unwrap().center = exit_ns;
            bs[1].metrics[0].name = "rtt_p50_us".into();
            bs[1].metrics[0].unit = crate::units::Unit::Microseconds;
            let mut r: RunRecord =
                serde_json::from_str(include_str!("../tests/fixtures/cpu-a.json")).unwrap();
            r.benchmarks = bs;
            r
        };
        // 12 µs against a 40 µs round trip: 30 %, said with the figure.
        let n = idle_wakeup_note(&record_of(12_000.0), None).unwrap();
        assert!(n.contains("net/tcp_rtt_64b (30 %)"), "{n}");
        assert!(n.contains("(latency/idle_wakeup idle_exit)"), "{n}");
        // 5 µs: 12.5 %, not a quarter: nothing said.
        assert!(idle_wakeup_note(&record_of(5_000.0), None).is_none());
        // The run's own figure wins over one measured after it.
        assert!(idle_wakeup_note(&record_of(5_000.0), Some(20_000.0)).is_none());
        // Without latency/idle_wakeup in the record: the figure measured after the run, said so.
        let mut r = record_of(12_000.0);
        r.benchmarks.remove(0);
        assert!(needs_idle_exit(&r));
        assert!(idle_wakeup_note(&r, None).is_none());
        let n = idle_wakeup_note(&r, Some(12_000.0)).unwrap();
        assert!(
            n.contains("measured for 400 ms after the run") && n.contains("(30 %)"),
            "{n}"
        );
        assert!(!needs_idle_exit(&record_of(12_000.0)));
    }

    #[test]
    fn a_bound_in_any_run_makes_the_figure_a_bound_and_says_so() {
        // Runs 2 and 4 of 5 ran out of steps: the median is a lower bound, printed ≥.
        let p = plan(
            vec![fake("test/ramp", |ctx| {
                let out = RunOutput::default().metric("t", vec![10.0 + ctx.run_index as f64]);
                Ok(if ctx.run_index % 2 == 1 {
                    out.bounded("t", BoundKind::AtLeast, "the last step passed")
                } else {
                    out
                })
            })],
            5,
            10,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        let m = &r.metrics[0];
        let b = m.bound.as_ref().expect("a bound");
        assert_eq!((b.kind, b.runs), (BoundKind::AtLeast, 2));
        assert_eq!(b.reason, "the last step passed");
        assert!(m.summary.is_some());
        let rows = crate::output::benchmark_rows(&r);
        assert!(rows[0].median.starts_with("≥ "), "{}", rows[0].median);
        assert!(rows[0].note.contains("2 of 5 runs"), "{}", rows[0].note);
        // A benchmark that bounds nothing has no bound.
        let p = plan(
            vec![fake("test/plain", |_| {
                Ok(RunOutput::default().metric("t", vec![1.0]))
            })],
            3,
            10,
        );
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.metrics[0].bound.is_none());
        assert!(!crate::output::benchmark_rows(&r)[0].median.contains('≥'));
    }

    use crate::bench::{MetricSpec, RunOutput};
    use crate::units::{Better, Unit};

    struct Fake {
        info: Info,
        behaviour: fn(&RunContext) -> Result<RunOutput, BenchError>,
    }

    impl Benchmark for Fake {
        fn info(&self) -> &Info {
            &self.info
        }
        fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
            (self.behaviour)(ctx)
        }
    }

    fn fake(
        id: &str,
        behaviour: fn(&RunContext) -> Result<RunOutput, BenchError>,
    ) -> Box<dyn Benchmark> {
        Box::new(Fake {
            info: Info {
                id: id.to_string(),
                suite: "test",
                title: id.to_string(),
                method: "synthetic".into(),
                metrics: vec![MetricSpec {
                    name: "t",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "synthetic",
                }],
            },
            behaviour,
        })
    }

    fn plan(benchmarks: Vec<Box<dyn Benchmark>>, runs: u32, timeout_s: u64) -> Plan {
        Plan {
            benchmarks,
            label: Some("t".into()),
            tags: Default::default(),
            config: Config {
                preset: "custom".into(),
                selection: vec![],
                runs,
                warmup_runs: 1,
                run_time_ms: 1,
                timeout_ms: timeout_s * 1000,
                bootstrap_seed: stats::BOOTSTRAP_SEED,
                command_line: vec![],
                adaptive: None,
                schedule: None,
                ab: None,
            },
        }
    }

    fn timing() -> TimingCalibration {
        TimingCalibration {
            clock: "t".into(),
            reported_resolution_ns: None,
            observed_resolution_ns: 1.0,
            timer_overhead_ns: 1.0,
            loop_overhead_ns: 0.0,
        }
    }

    #[test]
    fn runs_are_summarised_and_warmup_discarded() {
        let p = plan(
            vec![fake("test/ok", |ctx| {
                // Warm-up returns a wild value that must not appear in the result.
                let v = if ctx.warmup {
                    1e9
                } else {
                    100.0 + ctx.run_index as f64
                };
                Ok(RunOutput::default()
                    .metric("t", vec![v, v, v])
                    .fact("pinned", 0))
            })],
            5,
            10,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.error.is_none());
        let m = &r.metrics[0];
        assert_eq!(m.runs.len(), 5);
        let s = m.summary.as_ref().unwrap();
        assert_eq!(s.runs, 5);
        assert_eq!(s.center, 102.0);
        assert!(m.runs.iter().all(|r| r.histogram.is_some()));
        assert_eq!(r.params["pinned"], 0);
    }

    #[test]
    fn errors_are_recorded_not_fatal() {
        let p = plan(
            vec![
                fake("test/unsupported", |_| {
                    Err(BenchError::unsupported("unsupported on TestOS: no"))
                }),
                fake("test/panics", |_| panic!("bug")),
                fake("test/undeclared", |_| {
                    Ok(RunOutput::default().metric("nope", vec![1.0]))
                }),
            ],
            2,
            10,
        );
        let cancel = AtomicBool::new(false);
        for (b, kind, text) in [
            (0, ErrorKind::Unsupported, "unsupported on TestOS"),
            (1, ErrorKind::Failed, "panicked: bug"),
            (2, ErrorKind::Failed, "undeclared metric 'nope'"),
        ] {
            let r = run_benchmark(p.benchmarks[b].as_ref(), &p, &timing(), &cancel);
            let e = r.error.unwrap();
            assert_eq!(e.kind, kind);
            assert!(e.message.contains(text), "{}", e.message);
            assert!(r.metrics[0].summary.is_none());
        }
    }

    #[test]
    fn timeout_keeps_finished_runs() {
        let p = plan(
            vec![fake("test/slow", |ctx| {
                if ctx.run_index >= 2 && !ctx.warmup {
                    // Simulate a run that hits the bound.
                    return Err(BenchError::timeout("bound"));
                }
                Ok(RunOutput::default().metric("t", vec![5.0]))
            })],
            5,
            1,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        let e = r.error.unwrap();
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert!(e.message.contains("after 2 of 5 runs"), "{}", e.message);
        assert_eq!(r.metrics[0].runs.len(), 2);
    }

    #[test]
    fn facts_are_kept_per_run_and_only_agreed_ones_go_to_params() {
        let p = plan(
            vec![fake("test/facts", |ctx| {
                let steal = if ctx.warmup {
                    99.0
                } else {
                    ctx.run_index as f64
                };
                Ok(RunOutput::default()
                    .metric("t", vec![1.0])
                    .fact("steal_pct", steal)
                    .fact("pinned", 0))
            })],
            4,
            10,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.error.is_none());
        // One entry per measured run (the warm-up's 99 is nowhere), in order.
        let steal: Vec<f64> = r
            .run_facts
            .iter()
            .map(|f| f["steal_pct"].as_f64().unwrap())
            .collect();
        assert_eq!(steal, vec![0.0, 1.0, 2.0, 3.0]);
        // A fact that differs between runs is not presented as the benchmark's (last run's) value.
        assert!(!r.params.contains_key("steal_pct"));
        assert_eq!(r.params["pinned"], 0);
        // The record keeps them through JSON.
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["run_facts"][2]["steal_pct"], 2.0);
    }

    #[test]
    fn samples_at_or_below_zero_keep_their_histogram_and_say_why() {
        let p = plan(
            vec![fake("test/derived", |_| {
                Ok(RunOutput::default().metric("t", vec![-3.0, 0.0, 2.0, 4.0]))
            })],
            3,
            10,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        let m = &r.metrics[0];
        assert_eq!(m.runs.len(), 3);
        for run in &m.runs {
            let h = crate::record::decode_histogram(run.histogram.as_ref().unwrap()).unwrap();
            assert_eq!(h.len(), 4);
            let off = run.histogram_offset.unwrap();
            let scale = run.histogram_scale.unwrap();
            assert!((h.min() as f64 / scale + off - -3.0).abs() < 1e-2);
        }
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("2 of 4 samples ≤ 0") && w.contains("exceeded")),
            "{:?}",
            r.warnings
        );
        // A count of 0 (no dropped frames) is an ordinary value: histogram kept, no warning.
        let mut p = plan(
            vec![fake("test/count", |_| {
                Ok(RunOutput::default().metric("t", vec![0.0, 0.0, 1.0]))
            })],
            2,
            10,
        );
        let mut info = p.benchmarks[0].info().clone();
        info.metrics[0].unit = Unit::Count;
        p.benchmarks = vec![Box::new(Fake {
            info,
            behaviour: |_| Ok(RunOutput::default().metric("t", vec![0.0, 0.0, 1.0])),
        })];
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.metrics[0].runs[0].histogram.is_some());
        assert!(
            !r.warnings.iter().any(|w| w.contains("exceeded")),
            "{:?}",
            r.warnings
        );
        // A difference of two measured figures states its own ≤ 0: histogram kept, no generic
        // "subtracted cost exceeded" or "median ≤ 0" warning.
        let p = plan(
            vec![fake("test/difference", |_| {
                Ok(RunOutput::default().metric("t", vec![-3.0]).difference("t"))
            })],
            3,
            10,
        );
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.metrics[0].runs[0].histogram.is_some());
        assert!(r.metrics[0].summary.as_ref().unwrap().center < 0.0);
        assert!(
            !r.warnings
                .iter()
                .any(|w| w.contains("exceeded") || w.contains("median ≤ 0")),
            "{:?}",
            r.warnings
        );
    }

    struct Rewrites(Info);
    impl Benchmark for Rewrites {
        fn info(&self) -> &Info {
            &self.0
        }
        fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
            Ok(RunOutput::default().metric("t", vec![ctx.run_index as f64 + 1.0]))
        }
        fn finish(&self, runs: &mut [RunOutput]) -> Map<String, Value> {
            // Every run's value becomes the number of runs it was finished with.
            let n = runs.len() as f64;
            for r in runs.iter_mut() {
                r.samples = vec![("t", vec![n])];
            }
            let mut m = Map::new();
            m.insert("finished_runs".into(), runs.len().into());
            m
        }
    }

    #[test]
    fn finish_sees_every_measured_run_once() {
        let b = Rewrites(
            fake("test/finish", |_| Ok(RunOutput::default()))
                .info()
                .clone(),
        );
        let p = plan(vec![], 3, 10);
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(&b, &p, &timing(), &cancel);
        assert_eq!(r.params["finished_runs"], 3);
        let m = &r.metrics[0];
        assert_eq!(m.runs.len(), 3);
        assert!(m.runs.iter().all(|x| x.summary.p50 == 3.0));
    }

    #[test]
    fn a_run_is_not_started_past_the_bound() {
        // Runs that never call ctx.check(): the runner itself stops at the bound.
        let p = plan(
            vec![fake("test/sleepy", |_| {
                std::thread::sleep(Duration::from_millis(400));
                Ok(RunOutput::default().metric("t", vec![1.0]))
            })],
            10,
            1,
        );
        let cancel = AtomicBool::new(false);
        let t0 = Instant::now();
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        // Warm-up 0.4 s, runs end at 0.8 and 1.2 s; nothing starts after 1 s.
        assert!(
            t0.elapsed() < Duration::from_millis(2500),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::Timeout);
        assert_eq!(r.metrics[0].runs.len(), 2);
        assert_eq!(r.run_facts.len(), 2);
    }

    #[test]
    fn a_metric_a_run_could_not_measure_keeps_its_row_and_reason() {
        let p = plan(
            vec![fake("test/partial", |_| {
                Ok(RunOutput::default().not_measured("t", "unsupported on TestOS: no such fault"))
            })],
            2,
            10,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.error.is_none());
        let m = &r.metrics[0];
        assert!(m.summary.is_none());
        assert_eq!(
            m.not_measured.as_deref(),
            Some("unsupported on TestOS: no such fault")
        );
        let rows = crate::output::benchmark_rows(&r);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].median, "—");
        assert!(rows[0].note.contains("no such fault"), "{:?}", rows[0]);
    }

    #[test]
    fn stop_rule_keeps_the_minimum_stops_when_reached_and_at_the_cap() {
        // Below the minimum: run again however narrow the CI already is.
        assert_eq!(stop_rule(3, 4, 30, Some(0.0), 0.05), Stop::Continue);
        assert_eq!(stop_rule(4, 4, 30, Some(0.05), 0.05), Stop::Reached);
        assert_eq!(stop_rule(4, 4, 30, Some(0.051), 0.05), Stop::Continue);
        assert_eq!(stop_rule(4, 4, 30, None, 0.05), Stop::Continue);
        // At the cap: reached if it did, else Cap — never past it.
        assert_eq!(stop_rule(30, 4, 30, Some(0.2), 0.05), Stop::Cap);
        assert_eq!(stop_rule(30, 4, 30, None, 0.05), Stop::Cap);
        assert_eq!(stop_rule(30, 4, 30, Some(0.01), 0.05), Stop::Reached);
    }

    #[test]
    fn relative_half_width_is_of_the_bootstrap_ci_of_the_median() {
        let v = [100.0, 102.0, 98.0, 101.0, 99.0];
        let (lo, hi) = stats::bootstrap_median_ci(&v, 0.95, 10_000, stats::BOOTSTRAP_SEED);
        let w = relative_half_width(&v).unwrap();
        assert!((w - (hi - lo) / 2.0 / 100.0).abs() < 1e-12, "{w}");
        assert!(w > 0.0 && w < 0.05, "{w}");
        // Identical runs: exact. Zero median: exact at [0, 0], undefined around it.
        assert_eq!(relative_half_width(&[5.0; 4]), Some(0.0));
        assert_eq!(relative_half_width(&[0.0; 4]), Some(0.0));
        assert_eq!(relative_half_width(&[-1.0, 0.0, 0.0, 1.0, 2.0]), None);
        assert_eq!(relative_half_width(&[]), None);
    }

    #[test]
    fn the_minimum_of_adaptive_runs_is_the_fewest_that_can_reach_significance() {
        let n = MIN_SIGNIFICANT_RUNS as usize;
        let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
        assert!(stats::mann_whitney_u(&a, &b).1 < 0.05);
        let (a, b) = (&a[..n - 1], &b[..n - 1]);
        assert!(stats::mann_whitney_u(a, b).1 >= 0.05);
    }

    fn adaptive_plan(b: Box<dyn Benchmark>, min: u32, max: u32, width: f64) -> Plan {
        let mut p = plan(vec![b], min, 60);
        p.config.adaptive = Some(crate::record::AdaptiveConfig {
            ci_width: width,
            max_runs: max,
        });
        p
    }

    #[test]
    fn adaptive_runs_stop_once_the_ci_is_narrow_enough() {
        // Every run the same: the CI is exact after the minimum.
        let p = adaptive_plan(
            fake("test/steady", |_| {
                Ok(RunOutput::default().metric("t", vec![10.0]))
            }),
            4,
            30,
            0.05,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert_eq!(r.metrics[0].runs.len(), 4);
        let a = r.adaptive.as_ref().unwrap();
        assert!(a.reached && a.runs == 4 && a.metric == "t", "{a:?}");
        assert_eq!(a.half_width_pct, Some(0.0));
        assert!(
            r.warnings.iter().all(|w| !w.contains("cap")),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn adaptive_runs_say_when_they_stop_at_the_cap() {
        // Runs alternate between 1 and 100: the CI never narrows to 5 %.
        let p = adaptive_plan(
            fake("test/wild", |ctx| {
                let v = if ctx.run_index % 2 == 0 { 1.0 } else { 100.0 };
                Ok(RunOutput::default().metric("t", vec![v]))
            }),
            4,
            7,
            0.05,
        );
        let cancel = AtomicBool::new(false);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert_eq!(r.metrics[0].runs.len(), 7);
        let a = r.adaptive.as_ref().unwrap();
        assert!(!a.reached && a.runs == 7, "{a:?}");
        assert!(a.half_width_pct.unwrap() > 5.0, "{a:?}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("stopped at the cap of 7 runs") && w.contains("±5.0 %")),
            "{:?}",
            r.warnings
        );
        // In the record.
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["adaptive"]["reached"], false);
        // Without --ci-width: the fixed count, and no adaptive outcome.
        let p = plan(
            vec![fake("test/wild", |_| {
                Ok(RunOutput::default().metric("t", vec![1.0]))
            })],
            3,
            10,
        );
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert_eq!(r.metrics[0].runs.len(), 3);
        assert!(r.adaptive.is_none());
        assert!(serde_json::to_value(&r).unwrap().get("adaptive").is_none());
    }

    #[test]
    fn estimates_come_from_what_a_benchmark_does_or_an_earlier_run_of_it() {
        let p = plan(
            vec![
                fake("test/a", |_| Ok(RunOutput::default())),
                fake("test/b", |_| Ok(RunOutput::default())),
            ],
            4,
            2,
        );
        // The default: (runs + warm-up) × (run time + set-up).
        let model = 5.0 * (0.001 + crate::bench::DEFAULT_SETUP_S);
        let e = p.estimates();
        assert!((e[0] - model).abs() < 1e-12, "{e:?}");
        // An earlier run of test/b took 0.3 s per run: 5 runs here → 1.5 s.
        let mut h = std::collections::HashMap::new();
        h.insert("test/b".to_string(), 0.3);
        let (e, n) = estimates_with_history(&p, &h);
        assert_eq!(n, 1);
        assert!(
            (e[0] - model).abs() < 1e-12 && (e[1] - 1.5).abs() < 1e-12,
            "{e:?}"
        );
        // Never above the time bound (2 s).
        h.insert("test/a".to_string(), 100.0);
        let (e, n) = estimates_with_history(&p, &h);
        assert_eq!((e[0], n), (2.0, 2));
    }

    #[test]
    fn every_benchmark_estimates_a_finite_time_at_least_its_fixed_windows() {
        use crate::bench::Estimate;
        use crate::bench::registry::{SuiteOptions, suites_with};
        let quick = SuiteOptions::quick();
        let e = Estimate {
            runs: 5,
            warmup: 1,
            run_time: Duration::from_millis(100),
        };
        for opts in [quick, SuiteOptions::default()] {
            for suite in suites_with(&opts) {
                for b in &suite.benchmarks {
                    let t = b.estimate_s(&e);
                    assert!(t.is_finite() && t > 0.0, "{}: {t}", b.info().id);
                    let id = b.info().id.as_str();
                    // A frame loop runs at least half a second per run (0.3 s at the quick
                    // preset); an interactivity cell 5 × the run time (at least 0.5 s; 0.3 s at
                    // the quick preset), its warm-up at most 0.3 s, plus the calibration; the UDP
                    // ramp 8 steps of max(run time / 4, 50 ms).
                    let (frame_s, cell_s) = if opts.interactivity.quick {
                        (0.3, 0.3)
                    } else {
                        (0.5, 0.5)
                    };
                    assert_eq!(opts.frame.quick, opts.interactivity.quick);
                    if id.starts_with("frame/") {
                        assert!(t >= 6.0 * frame_s, "{id}: {t}");
                    }
                    if id.starts_with("interactivity/") {
                        let want = 0.35 + 5.0 * (cell_s + 0.05) + 0.3;
                        assert!((t - want).abs() < 1e-9, "{id}: {t} != {want}");
                    }
                    if id == "net/udp_max_rate" {
                        assert!(t >= 6.0 * 8.0 * 0.05, "{id}: {t}");
                    }
                    // The fs bandwidth benchmarks extend their CPU-cost windows, not at the
                    // quick preset: 2 windows × max(10 × run time, 1 s) per measured run; the
                    // TCP and UDP streams at every preset, 1 window each.
                    let x = b.estimate_extension_s(&e);
                    let bandwidth = id.starts_with("fs/seq_");
                    let stream =
                        matches!(id, "net/tcp_stream" | "net/tcp_stream_n" | "net/udp_stream");
                    match (bandwidth, opts.fs.quick) {
                        (true, false) => assert!((x - 5.0 * 2.0 * 1.0).abs() < 1e-9, "{id}: {x}"),
                        _ if stream => assert!((x - 5.0 * 1.0).abs() < 1e-9, "{id}: {x}"),
                        _ => assert_eq!(x, 0.0, "{id}"),
                    }
                }
            }
        }
        // Doing more costs more: a larger latency working set, longer runs.
        let small = crate::bench::mem::MemOptions {
            max_size: Some(64 << 20),
            ..Default::default()
        };
        let large = crate::bench::mem::MemOptions {
            max_size: Some(512 << 20),
            ..Default::default()
        };
        let lat = |m: crate::bench::mem::MemOptions| {
            let s = suites_with(&SuiteOptions {
                mem: m,
                ..Default::default()
            });
            s.iter()
                .flat_map(|s| s.benchmarks.iter())
                .find(|b| b.info().id == "mem/latency_random")
                .map(|b| b.estimate_s(&e))
                .unwrap()
        };
        assert!(lat(large) > lat(small));
    }

    #[test]
    fn cancel_interrupts() {
        let p = plan(
            vec![fake("test/x", |ctx| {
                ctx.check().map(|_| RunOutput::default())
            })],
            3,
            10,
        );
        let cancel = AtomicBool::new(true);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert_eq!(r.error.unwrap().kind, ErrorKind::Interrupted);
    }

    fn seeded(mut p: Plan, seed: u64, reference: Option<&str>) -> Plan {
        p.config.schedule = Some(Schedule {
            order: "interleaved".into(),
            seed,
            rounds: Vec::new(),
            reference: reference.map(str::to_string),
        });
        p
    }

    fn three() -> Vec<Box<dyn Benchmark>> {
        let ok = |ctx: &RunContext| {
            Ok(RunOutput::default().metric("t", vec![1.0 + ctx.run_index as f64]))
        };
        vec![fake("test/a", ok), fake("test/b", ok), fake("test/c", ok)]
    }

    #[test]
    fn runs_are_taken_in_rounds_of_random_order_that_the_seed_repeats() {
        let cancel = AtomicBool::new(false);
        let mut saved = Vec::new();
        let r = execute(seeded(plan(three(), 6, 10), 42, None), &cancel, &mut |ev| {
            if let Event::RoundFinished { round, record } = ev {
                saved.push((round, record.benchmarks.len()));
            }
        });
        let sched = r.config.schedule.clone().unwrap();
        assert_eq!(sched.seed, 42);
        // Warm-up round, then one round per measured run, each holding every benchmark once.
        assert_eq!(sched.rounds.len(), 7);
        for round in &sched.rounds {
            let mut ids = round.clone();
            ids.sort();
            assert_eq!(ids, ["test/a", "test/b", "test/c"]);
        }
        // The order changes between rounds (6 measured rounds of 3: the same order in all has
        // probability 6^-5 for a random shuffle; fixed by the seed, so this cannot flake).
        assert!(sched.rounds[1..].iter().any(|o| o != &sched.rounds[1]));
        // Each run knows its round; the store saw the record after every round.
        for b in &r.benchmarks {
            let rounds: Vec<u32> = b.metrics[0].runs.iter().map(|m| m.round.unwrap()).collect();
            assert_eq!(rounds, [1, 2, 3, 4, 5, 6], "{}", b.id);
        }
        assert_eq!(saved.len(), 7);
        assert!(saved.iter().all(|&(_, n)| n == 3));
        // The same seed gives the same order; another seed another one.
        let again = execute(seeded(plan(three(), 6, 10), 42, None), &cancel, &mut |_| {});
        assert_eq!(again.config.schedule.unwrap().rounds, sched.rounds);
        let other = execute(seeded(plan(three(), 6, 10), 43, None), &cancel, &mut |_| {});
        assert_ne!(other.config.schedule.unwrap().rounds, sched.rounds);
    }

    /// A benchmark that warms itself in every run.
    struct SelfWarming(Box<dyn Benchmark>);

    impl Benchmark for SelfWarming {
        fn info(&self) -> &Info {
            self.0.info()
        }
        fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
            self.0.run(ctx)
        }
        fn warms_itself(&self) -> bool {
            true
        }
    }

    /// A benchmark whose every run warms itself takes no warm-up run, alone or in rounds, and
    /// still its measured runs; the others keep theirs.
    #[test]
    fn a_benchmark_that_warms_itself_takes_no_warmup_run() {
        let cold = |ctx: &RunContext| {
            if ctx.warmup {
                return Err(BenchError::failed("a warm-up run was taken"));
            }
            Ok(RunOutput::default().metric("t", vec![1.0 + ctx.run_index as f64]))
        };
        let cancel = AtomicBool::new(false);
        let p = plan(vec![Box::new(SelfWarming(fake("test/self", cold)))], 4, 10);
        // Its estimate has no warm-up run either: 4 runs of 1 ms + set-up, not 5.
        let cold_estimate = plan(vec![fake("test/cold", cold)], 4, 10).estimates()[0];
        let warm_estimate = p.estimates()[0];
        assert!((warm_estimate / cold_estimate - 4.0 / 5.0).abs() < 1e-9);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.metrics[0].runs.len(), 4);
        let mut b = three();
        b.push(Box::new(SelfWarming(fake("test/self", cold))));
        let r = execute(seeded(plan(b, 3, 10), 5, None), &cancel, &mut |_| {});
        let sched = r.config.schedule.clone().unwrap();
        assert_eq!(sched.rounds.len(), 4, "a warm-up round and 3 measured");
        assert!(!sched.rounds[0].iter().any(|id| id == "test/self"));
        assert!(sched.rounds[1..].iter().all(|o| o.len() == 4));
        for b in &r.benchmarks {
            assert!(b.error.is_none(), "{}: {:?}", b.id, b.error);
            assert_eq!(b.metrics[0].runs.len(), 3, "{}", b.id);
        }
    }

    /// Only benchmarks that warm themselves (`micro mem/bandwidth_1t`): the warm-up round has
    /// nothing of theirs, yet they are measured, and the reference still warms up and runs
    /// beside them.
    #[test]
    fn benchmarks_that_all_warm_themselves_are_still_measured() {
        let cancel = AtomicBool::new(false);
        let ok = |ctx: &RunContext| {
            if ctx.warmup {
                return Err(BenchError::failed("a warm-up run was taken"));
            }
            Ok(RunOutput::default().metric("t", vec![1.0 + ctx.run_index as f64]))
        };
        // Without a reference: no warm-up round at all.
        let p = seeded(
            plan(vec![Box::new(SelfWarming(fake("test/self", ok)))], 3, 10),
            3,
            None,
        );
        let r = execute(p, &cancel, &mut |_| {});
        assert_eq!(r.benchmarks[0].metrics[0].runs.len(), 3);
        assert!(
            r.benchmarks[0].error.is_none(),
            "{:?}",
            r.benchmarks[0].error
        );
        // With a reference: it warms up alone in round 0, then runs in every measured round.
        let b: Vec<Box<dyn Benchmark>> = vec![
            Box::new(SelfWarming(fake("test/self", ok))),
            fake("test/ref", |_| {
                Ok(RunOutput::default().metric("t", vec![1.0]))
            }),
        ];
        let r = execute(
            seeded(plan(b, 3, 10), 3, Some("test/ref")),
            &cancel,
            &mut |_| {},
        );
        let sched = r.config.schedule.clone().unwrap();
        assert_eq!(sched.rounds.len(), 4, "{:?}", sched.rounds);
        assert_eq!(sched.rounds[0], ["test/ref"]);
        assert!(sched.rounds[1..].iter().all(|o| o.len() == 2));
        assert_eq!(r.benchmark("test/self").unwrap().metrics[0].runs.len(), 3);
        assert_eq!(r.reference.as_ref().unwrap().metrics[0].runs.len(), 3);
    }

    #[test]
    fn the_reference_runs_in_every_round_while_another_benchmark_runs() {
        let cancel = AtomicBool::new(false);
        let mut b = three();
        b.push(fake("test/ref", |_| {
            Ok(RunOutput::default().metric("t", vec![1.0]))
        }));
        let mut p = seeded(plan(b, 4, 10), 7, Some("test/ref"));
        p.config.adaptive = Some(crate::record::AdaptiveConfig {
            ci_width: 0.5,
            max_runs: 9,
        });
        let r = execute(p, &cancel, &mut |_| {});
        let runs = |id: &str| {
            let b = if id == "test/ref" {
                r.reference.as_ref()
            } else {
                r.benchmark(id)
            };
            b.unwrap().metrics[0].runs.len()
        };
        // test/ref's values never vary: the adaptive rule alone would stop it at 4 runs; it
        // keeps running as long as the others do.
        let most = ["test/a", "test/b", "test/c"]
            .map(runs)
            .into_iter()
            .max()
            .unwrap();
        assert_eq!(runs("test/ref"), most);
    }

    #[test]
    fn a_benchmark_that_fails_leaves_the_rounds_to_the_others() {
        let cancel = AtomicBool::new(false);
        let mut b = three();
        b.push(fake("test/bad", |ctx| {
            if ctx.run_index >= 2 && !ctx.warmup {
                Err(BenchError::failed("broke"))
            } else {
                Ok(RunOutput::default().metric("t", vec![1.0]))
            }
        }));
        let r = execute(seeded(plan(b, 5, 10), 1, None), &cancel, &mut |_| {});
        let bad = r.benchmark("test/bad").unwrap();
        assert_eq!(bad.metrics[0].runs.len(), 2);
        assert!(bad.error.as_ref().unwrap().message.contains("broke"));
        assert_eq!(r.benchmark("test/a").unwrap().metrics[0].runs.len(), 5);
        assert!(
            r.config.schedule.unwrap().rounds[4..]
                .iter()
                .all(|o| !o.contains(&"test/bad".to_string()))
        );
    }

    /// A benchmark that logs its runs (with their arm's switch) and its releases.
    struct Keeping {
        inner: Box<dyn Benchmark>,
        log: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
    }

    impl Benchmark for Keeping {
        fn info(&self) -> &Info {
            self.inner.info()
        }
        fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
            self.log.lock().unwrap().push("run");
            self.inner.run(ctx)
        }
        fn release(&self) {
            self.log.lock().unwrap().push("release");
        }
    }

    fn keeping(
        behaviour: fn(&RunContext) -> Result<RunOutput, BenchError>,
    ) -> (
        Box<dyn Benchmark>,
        std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
    ) {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let b = Keeping {
            inner: fake("test/keep", behaviour),
            log: log.clone(),
        };
        (Box::new(b), log)
    }

    /// What a benchmark keeps between its runs is released once it has no run left: after its
    /// last run, or its error; never between two runs it still takes.
    #[test]
    fn a_benchmark_is_released_after_its_last_run_or_its_error() {
        let cancel = AtomicBool::new(false);
        let (b, log) = keeping(|_| Ok(RunOutput::default().metric("t", vec![1.0])));
        let p = plan(vec![b], 3, 10);
        let r = run_benchmark(p.benchmarks[0].as_ref(), &p, &timing(), &cancel);
        assert!(r.error.is_none());
        assert_eq!(
            *log.lock().unwrap(),
            ["run", "run", "run", "run", "release"]
        );
        let (b, log) = keeping(|ctx| {
            if ctx.run_index >= 1 && !ctx.warmup {
                Err(BenchError::failed("broke"))
            } else {
                Ok(RunOutput::default().metric("t", vec![1.0]))
            }
        });
        let mut benches = three();
        benches.push(b);
        let r = execute(seeded(plan(benches, 4, 10), 3, None), &cancel, &mut |_| {});
        assert!(r.benchmark("test/keep").unwrap().error.is_some());
        assert_eq!(*log.lock().unwrap(), ["run", "run", "run", "release"]);
    }

    /// With two arms (`ab`), nothing kept from a run under one arm's setting meets the other's:
    /// every switch is preceded by a release.
    #[test]
    fn an_arm_switch_releases_what_benchmarks_kept() {
        let cancel = AtomicBool::new(false);
        let (b, log) = keeping(|_| Ok(RunOutput::default().metric("t", vec![1.0])));
        let p = seeded(plan(vec![b], 3, 10), 9, None);
        let switch_log = log.clone();
        let mut switch = move |_: usize, _: u32| {
            switch_log.lock().unwrap().push("switch");
            Ok(())
        };
        let labels = [Some("a".to_string()), Some("b".to_string())];
        execute_arms(p, &labels, &mut switch, &cancel, &mut |_| {}).unwrap();
        let log = log.lock().unwrap();
        assert_eq!(log.iter().filter(|x| **x == "switch").count(), 8);
        for (k, x) in log.iter().enumerate() {
            if *x == "switch" {
                assert_eq!(log[k - 1], "release", "{log:?}");
            }
        }
    }
}
