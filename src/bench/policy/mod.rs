//! The scheduling-policy study (seed 004): N child processes, each doing a fixed amount of work
//! (cpu, io, mixed, sleepy) under one scheduling policy, released together; per process wall,
//! user, system time and context switches; per run makespan, turnaround, fairness. One benchmark
//! per work × policy × process count (`policy/cpu/fifo/100`), runs are the unit, so the store,
//! `compare` and `report` treat it like every other suite. Children are `osgauge __policy_child`.

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Scheduling policies: 10 processes of cpu and io work under the default policy (full study: `osgauge policy`)";

/// The summary's figures: each cell's makespan.
pub const HEADLINES: Headlines = Headlines::Picked(headline_picks);

/// [`HEADLINES`]: per cell (`policy/<cell>`, record order) its `makespan`.
fn headline_picks<'a>(cells: &[&'a BenchmarkResult]) -> Vec<Pick<'a>> {
    cells
        .iter()
        .filter_map(|b| {
            let metric = b.metrics.iter().find(|m| m.name == "makespan")?;
            let cell = b.id.strip_prefix("policy/").unwrap_or(&b.id);
            Some(Pick {
                bench: b,
                metric,
                label: format!("{cell}: makespan"),
            })
        })
        .collect()
}

pub mod child;
pub mod work;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::bench::{Headlines, Pick};
use crate::platform::process as pp;
use crate::platform::sched::{self, Policy, SchedRequest};
use crate::record::{BenchError, BenchmarkResult};
use crate::timing::RunContext;
use crate::units::{Better, Unit};
use work::{WorkKind, WorkSize};

mod phases;

/// Hidden subcommand of a child.
pub const CHILD_SUBCOMMAND: &str = "__policy_child";
/// Default priority of FIFO/RR hogs; the watchdog runs at [`WATCHDOG_PRIORITY`], above any hog.
pub const DEFAULT_RT_PRIORITY: i32 = 50;
pub const WATCHDOG_PRIORITY: i32 = 99;
/// Watchdog tick (its wake-up lateness is recorded as the responsiveness figure).
pub const WATCHDOG_TICK_NS: u64 = 10_000_000;
/// Rough memory per child for the capacity check.
pub const CHILD_BYTES: u64 = 8 << 20;
/// Prefix of the study's temp folders (`osgauge-policy-<pid>-…`).
pub const DIR_PREFIX: &str = "osgauge-policy-";

/// Settings shared by every cell of one study.
#[derive(Debug)]
pub struct Study {
    /// Time one process should take alone.
    pub target: Duration,
    /// Base folder for the io temp folders.
    pub temp_base: PathBuf,
    /// Calibrated sizes per work kind (measured once, on first use).
    sizes: Mutex<Vec<(WorkKind, WorkSize, Duration)>>,
}

impl Study {
    pub fn new(target: Duration, temp_base: PathBuf) -> Study {
        Study {
            target,
            temp_base,
            sizes: Mutex::new(Vec::new()),
        }
    }

    /// The work size of `kind` (calibrated on first use) and the time it took alone.
    pub fn size(&self, kind: WorkKind) -> Result<(WorkSize, Duration), BenchError> {
        let mut s = self.sizes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, w, d)) = s.iter().find(|(k, _, _)| *k == kind) {
            return Ok((*w, *d));
        }
        let dir = temp_dir(&self.temp_base)
            .map_err(|e| BenchError::failed(format!("creating a temp folder: {e}")))?;
        let (w, d) = work::calibrate(kind, self.target, dir.path()).map_err(|e| {
            BenchError::failed(format!("calibrating the {} work: {e}", kind.name()))
        })?;
        s.push((kind, w, d));
        Ok((w, d))
    }
}

fn temp_dir(base: &Path) -> std::io::Result<tempfile::TempDir> {
    crate::tempfiles::dir_in("policy", base)
}

/// Remove study folders left in `base` by osgauge processes that no longer exist (any osgauge
/// command does this for the temp dir: [`crate::bench::registry::remove_leftovers`]).
pub fn remove_stale(base: &Path) -> Vec<PathBuf> {
    crate::tempfiles::remove_stale_in(base, &["policy"])
}

/// Jain's fairness index (Σx)² / (n Σx²): 1 when all equal, 1/n when one gets everything.
pub fn jain(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (n * s2)
}

/// What a child reports on its result line.
#[derive(Debug, serde::Deserialize)]
struct ChildLine {
    pid: u32,
    #[serde(default)]
    start: u64,
    #[serde(default)]
    end: u64,
    #[serde(default)]
    applied: Option<sched::SchedReadback>,
    #[serde(default)]
    error: Option<String>,
    /// The line a child sends once its policy is set and it waits for the release.
    #[serde(default)]
    ready: bool,
    /// The child's own usage at its release (start-up), subtracted from the reaped figures.
    #[serde(default)]
    before: Option<Before>,
    /// The child's own context-switch counters, read just before its result line.
    #[serde(default)]
    switches: Option<pp::OwnSwitches>,
}

#[derive(Debug, Default, Clone, serde::Deserialize)]
struct Before {
    user: u64,
    sys: u64,
    vol: Option<u64>,
    invol: Option<u64>,
    /// Own total switches at the release (macOS / Windows: the only figure there).
    #[serde(default)]
    csw: Option<u64>,
}

fn child_error(c: &ChildLine) -> Option<BenchError> {
    let e = c.error.as_ref()?;
    Some(if let Some(i) = e.find("unsupported on ") {
        BenchError::unsupported(e[i..].to_string())
    } else {
        BenchError::failed(format!("child {}: {e}", c.pid))
    })
}

/// Wait until `n` children said they are ready (policy set, waiting for the release); fails on a
/// child's error line, a child that ended, Ctrl-C or the time bound.
fn wait_ready(
    lines: &std::sync::mpsc::Receiver<String>,
    set: &mut pp::ChildSet,
    n: usize,
    ctx: &RunContext,
) -> Result<(), BenchError> {
    use std::sync::mpsc::RecvTimeoutError;
    let mut ready = 0;
    while ready < n {
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(l) => {
                let c: ChildLine = serde_json::from_str(&l).map_err(|_| {
                    BenchError::failed(format!("unexpected line from a child: {l}"))
                })?;
                if let Some(e) = child_error(&c) {
                    return Err(e);
                }
                if !c.ready {
                    return Err(BenchError::failed(format!(
                        "child {} reported before the release",
                        c.pid
                    )));
                }
                ready += 1;
            }
            Err(RecvTimeoutError::Timeout) => {
                ctx.check()?;
                let ended = set.reap().map_err(|e| BenchError::os("wait4", e))?;
                if let Some(u) = ended.first() {
                    // Its last words (an error line) may still be in the pipe.
                    if let Ok(l) = lines.recv_timeout(Duration::from_millis(500))
                        && let Ok(c) = serde_json::from_str::<ChildLine>(&l)
                        && let Some(e) = child_error(&c)
                    {
                        return Err(e);
                    }
                    return Err(BenchError::failed(format!(
                        "child {} ended ({}) before the release",
                        u.pid,
                        u.code.map_or("killed".into(), |c| format!("exit {c}"))
                    )));
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(BenchError::failed(
                    "the children closed their output before all were ready",
                ));
            }
        }
    }
    Ok(())
}

/// One process's figures in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcFigures {
    pub turnaround_ns: f64,
    pub wall_ns: f64,
    pub user_ns: f64,
    pub sys_ns: f64,
    pub voluntary: Option<u64>,
    pub involuntary: Option<u64>,
    /// All switches (voluntary + involuntary where split, the OS's total elsewhere).
    pub switches: Option<u64>,
}

/// Per-run figures from per-process ones (pure).
#[derive(Debug, Clone, PartialEq)]
pub struct RunFigures {
    pub makespan_ns: f64,
    pub turnarounds: Vec<f64>,
    pub turnaround_p99_ns: f64,
    pub user_ns: f64,
    pub sys_ns: f64,
    pub voluntary: Option<u64>,
    pub involuntary: Option<u64>,
    pub switches: Option<u64>,
    pub fairness_pct: f64,
}

pub fn run_figures(procs: &[ProcFigures]) -> RunFigures {
    let mut t: Vec<f64> = procs.iter().map(|p| p.turnaround_ns).collect();
    t.sort_by(f64::total_cmp);
    let shares: Vec<f64> = procs
        .iter()
        .map(|p| (p.user_ns + p.sys_ns) / p.turnaround_ns.max(1.0))
        .collect();
    let sum_opt = |f: fn(&ProcFigures) -> Option<u64>| -> Option<u64> {
        procs.iter().map(f).sum::<Option<u64>>()
    };
    RunFigures {
        makespan_ns: t.last().copied().unwrap_or(0.0),
        turnaround_p99_ns: if t.is_empty() {
            0.0
        } else {
            crate::stats::percentile(&t, 0.99)
        },
        turnarounds: t,
        user_ns: procs.iter().map(|p| p.user_ns).sum(),
        sys_ns: procs.iter().map(|p| p.sys_ns).sum(),
        voluntary: sum_opt(|p| p.voluntary),
        involuntary: sum_opt(|p| p.involuntary),
        switches: sum_opt(|p| p.switches),
        fairness_pct: 100.0 * jain(&shares),
    }
}

/// A run's user or system time (ns, summed over its processes, start-up subtracted) as a figure,
/// or why it is not one: below one step of the user/system split (`resolution_s`, described by
/// `why`) it is the tick sampling's noise — 0 ns in one run and 1.2 ms in the next for the same
/// work — not a measurement.
pub fn cpu_time_figure(ns: f64, resolution_s: f64, why: &str) -> Result<f64, String> {
    let step_ns = resolution_s * 1e9;
    if ns >= step_ns && ns > 0.0 {
        Ok(ns)
    } else {
        Err(format!(
            "below the counters' resolution: {} in the run, under {why} ({}) that splits CPU \
             time between user and system",
            crate::units::format_value(ns, Unit::Nanoseconds),
            crate::units::format_value(step_ns, Unit::Nanoseconds),
        ))
    }
}

/// Largest allowed difference per counter between a child's reaped (`wait4`) switches and its own
/// `/proc/self/status` reading just before its result line: what the exit path can add (writing
/// the line, exit, a preemption or two on a loaded machine). Beyond it the record gets a warning.
pub const SWITCH_GAP_BOUND: i64 = 10;

/// Reaped minus own-reading switches of one child (or the widest over a run), per counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchGap {
    pub vol: i64,
    pub invol: i64,
}

impl SwitchGap {
    /// `reaped` and `own` are (voluntary, involuntary), both counted from the child's start.
    pub fn of(reaped: (u64, u64), own: (u64, u64)) -> SwitchGap {
        SwitchGap {
            vol: reaped.0 as i64 - own.0 as i64,
            invol: reaped.1 as i64 - own.1 as i64,
        }
    }
    /// Keep, per counter, the difference of larger magnitude.
    pub fn widest(self, o: SwitchGap) -> SwitchGap {
        let w = |a: i64, b: i64| if b.abs() > a.abs() { b } else { a };
        SwitchGap {
            vol: w(self.vol, o.vol),
            invol: w(self.invol, o.invol),
        }
    }
    /// A warning when the reaped counters are below the own reading (impossible for one task)
    /// or above it by more than [`SWITCH_GAP_BOUND`].
    pub fn warning(self) -> Option<String> {
        let bad = |g: i64| !(0..=SWITCH_GAP_BOUND).contains(&g);
        (bad(self.vol) || bad(self.invol)).then(|| {
            format!(
                "context-switch cross-check: wait4 minus /proc/self/status differs by {} voluntary, {} involuntary for one child (expected 0..={SWITCH_GAP_BOUND}: the exit path)",
                self.vol, self.invol
            )
        })
    }
}

/// One cell of the study.
pub struct Cell {
    info: Info,
    study: Arc<Study>,
    work: WorkKind,
    policy: SchedRequest,
    procs: u32,
}

pub const METHOD: &str = "N child processes (osgauge re-executed) each set their own scheduling policy \
(read back: every child must report the requested one), then wait on one shared pipe; the parent \
releases them all at once by closing it once every child has said it is ready (so no start-up \
is inside a turnaround). Each does the same fixed work, calibrated once so one \
process alone takes the study's --work-time: cpu = digits of π (spigot, checked), io = write and read \
back 4 KiB files in a rotating series of 8 in its own temp folder (removed on every exit path), \
mixed = half of each, sleepy = π bursts with 1 ms sleeps. Each child stamps its own start and \
finish (monotonic clock) and its own usage at the release; the parent reaps every child with its \
resource usage and subtracts the start-up part (exec, policy, waiting), so user/system time and \
switches are those of the work and the exit. Per run: makespan \
(release → last finish), turnaround of each process (release → its finish), total user and system \
time (each not measured in a run where it is below one step of the user/system split: one \
scheduler tick on Linux, read back as user_sys_resolution_ns) and voluntary/involuntary context \
switches of all children, and Jain's fairness index of the CPU shares (CPU time / turnaround per process). A watchdog thread at a priority above the hogs \
(SCHED_FIFO 99 on Linux) wakes every 10 ms, kills the process group at the run's time bound or on \
Ctrl-C, and records its own worst wake-up lateness (how responsive the machine stayed). Real-time \
policies are refused unless RT throttling (or the deadline server) leaves CPU time to normal tasks.";

/// How the switch counts are checked (part of every cell's method).
pub const SWITCH_CHECK_METHOD: &str = "Linux cross-check: each child reads its own \
/proc/self/status counters as the last thing before its result line; the parent sets them beside \
the child's wait4 counters and records, per run, the widest difference per counter \
(switch_check_vol_gap_max, switch_check_invol_gap_max; expected 0..=10, the exit path; outside \
that a warning). Reconciliation with perf stat -e context-switches (which counts the whole \
command): parent_switches_total (getrusage RUSAGE_SELF, all threads of this process) + \
children_switches_total (RUSAGE_CHILDREN: every reaped child, start-up included) since the start, \
and the same over this run (parent_switches_run, children_switches_run). perf counts about one \
switch fewer per child: an inherited counter is folded into the parent's at exit, before the \
dying task's last switch, which wait4 still counts (the voluntary gap of 1 above).";

impl Cell {
    pub fn new(study: Arc<Study>, work: WorkKind, policy: SchedRequest, procs: u32) -> Cell {
        let mut label = policy.effective_policy().name().to_string();
        if let Some(n) = policy.nice {
            label = format!("{label}-nice{n}");
        }
        let id = format!("policy/{}/{label}/{procs}", work.name());
        let m = |name, unit, better, description| MetricSpec {
            name,
            unit,
            better,
            description,
        };
        Cell {
            info: Info {
                id,
                suite: "policy",
                title: format!("{} × {procs} processes under {label}", work.name()),
                method: format!(
                    "{METHOD} Per-process usage: {}. Own counters: {}. {SWITCH_CHECK_METHOD}",
                    pp::usage_method(),
                    pp::OWN_SWITCHES_METHOD
                ),
                metrics: vec![
                    m(
                        "makespan",
                        Unit::Nanoseconds,
                        Better::Lower,
                        "release of all processes → the last one finished",
                    ),
                    m(
                        "turnaround",
                        Unit::Nanoseconds,
                        Better::Lower,
                        "per process: release → its finish (a run's median is its p50)",
                    ),
                    m(
                        "turnaround_p99",
                        Unit::Nanoseconds,
                        Better::Lower,
                        "99th percentile of the run's turnarounds",
                    ),
                    m(
                        "user",
                        Unit::Nanoseconds,
                        Better::Lower,
                        "user CPU time of all processes",
                    ),
                    m(
                        "sys",
                        Unit::Nanoseconds,
                        Better::Lower,
                        "system CPU time of all processes",
                    ),
                    m(
                        "voluntary",
                        Unit::Count,
                        Better::Neutral,
                        "voluntary context switches of all processes",
                    ),
                    m(
                        "involuntary",
                        Unit::Count,
                        Better::Neutral,
                        "involuntary context switches (preemptions) of all processes",
                    ),
                    m(
                        "switches",
                        Unit::Count,
                        Better::Neutral,
                        "all context switches of all processes: voluntary + involuntary where the OS splits them (wait4), else the total each child reads itself (release → its result line)",
                    ),
                    m(
                        "fairness",
                        Unit::Percent,
                        Better::Higher,
                        "Jain's index of the CPU shares (CPU time / turnaround), 100 % = equal",
                    ),
                    m(
                        "watchdog_late_max",
                        Unit::Nanoseconds,
                        Better::Lower,
                        "worst wake-up lateness of the 10 ms watchdog thread during the run",
                    ),
                ],
            },
            study,
            work,
            policy,
            procs,
        }
    }

    fn spec_json(&self, size: &WorkSize, dir: &Path) -> String {
        serde_json::json!({
            "work": size,
            "dir": dir,
            "policy": self.policy,
            "parent": std::process::id(),
        })
        .to_string()
    }

    /// Refusals that apply before anything starts.
    fn preflight(&self) -> Result<Vec<String>, BenchError> {
        let mut notes = Vec::new();
        if self.policy.effective_policy().is_realtime() {
            let why = sched::rt_safety().map_err(BenchError::failed)?;
            notes.push(why);
        }
        pp::capacity_decision(
            u64::from(self.procs),
            pp::process_limit(),
            pp::user_process_count(),
            crate::platform::memory::available_bytes(),
            CHILD_BYTES,
        )
        .map_err(BenchError::failed)?;
        Ok(notes)
    }
}

impl Benchmark for Cell {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("work".into(), self.work.name().into());
        m.insert(
            "policy".into(),
            serde_json::to_value(&self.policy).unwrap_or_default(),
        );
        m.insert("procs".into(), self.procs.into());
        m.insert(
            "work_time_ms".into(),
            (self.study.target.as_secs_f64() * 1000.0).into(),
        );
        m
    }

    /// A run starts `procs` processes (~3 ms each) whose work spreads over the CPUs.
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let per_run =
            f64::from(self.procs) * (self.study.target.as_secs_f64() / cpus + 0.003) + 0.05;
        e.all_runs() * per_run
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let notes = self.preflight()?;
        let (size, alone) = self.study.size(self.work)?;
        let dir = temp_dir(&self.study.temp_base)
            .map_err(|e| BenchError::failed(format!("creating a temp folder: {e}")))?;
        // This process's and its reaped children's switches so far (to set beside perf stat).
        let command_before = pp::command_switches();
        let spawned = self.spawn(ctx, dir.path(), &size)?;
        let released = self.release_and_reap(ctx, spawned, alone);
        drop(dir);
        let released = released?;
        let command_after = pp::command_switches();
        let collected = phases::collect(&released, self.procs)?;
        let mut out = self.figures(&collected, &released, &size, alone)?;
        match (command_before, command_after) {
            (Ok((s0, c0)), Ok((s1, c1))) => {
                out = out
                    .fact("parent_switches_run", s1.saturating_sub(s0))
                    .fact("children_switches_run", c1.saturating_sub(c0))
                    .fact("parent_switches_total", s1)
                    .fact("children_switches_total", c1);
            }
            (Err(e), _) | (_, Err(e)) => out = out.fact("command_switches", e),
        }
        for n in notes {
            out = out.fact("rt_safety", n);
        }
        if let Some(n) = released.watchdog_note {
            out.warnings.push(n);
        }
        Ok(out)
    }
}

/// The matrix of cells, in work × policy × procs order.
pub fn matrix(
    study: Arc<Study>,
    works: &[WorkKind],
    policies: &[SchedRequest],
    procs: &[u32],
) -> Vec<Box<dyn Benchmark>> {
    let mut v: Vec<Box<dyn Benchmark>> = Vec::new();
    for &w in works {
        for p in policies {
            for &n in procs {
                v.push(Box::new(Cell::new(study.clone(), w, p.clone(), n)));
            }
        }
    }
    v
}

/// The `run` presets' cells: 10 processes of cpu and of io work under the default policy, 5 ms
/// of work each.
pub fn quick_benchmarks() -> Vec<Box<dyn Benchmark>> {
    let study = Arc::new(Study::new(Duration::from_millis(5), std::env::temp_dir()));
    matrix(
        study,
        &[WorkKind::Cpu, WorkKind::Io],
        &[SchedRequest::new(Policy::Other)],
        &[10],
    )
}

/// Parse a policy name of the common vocabulary (for the CLI).
pub fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cell's makespan, labelled by the cell, in record order.
    #[test]
    fn the_summary_shows_each_cells_makespan() {
        use crate::bench::testutil::result;
        let cells = [
            result(
                "policy/cpu/other/10",
                &[("turnaround", Some(2.0)), ("makespan", Some(3.0))],
            ),
            result("policy/io/other/10", &[("turnaround", Some(1.0))]),
        ];
        let refs: Vec<&BenchmarkResult> = cells.iter().collect();
        let Headlines::Picked(pick) = HEADLINES else {
            panic!("the policy suite picks its headlines from its cells")
        };
        let picks = pick(&refs);
        assert_eq!(picks.len(), 1);
        assert_eq!(picks[0].bench.id, "policy/cpu/other/10");
        assert_eq!(picks[0].metric.name, "makespan");
        assert_eq!(picks[0].label, "cpu/other/10: makespan");
    }

    #[test]
    fn jain_on_known_values() {
        assert!((jain(&[1.0, 1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+2+3)² / (3·14) = 36/42
        assert!((jain(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
        assert!(jain(&[]).is_nan());
    }

    #[test]
    fn a_cpu_time_below_the_split_resolution_is_not_measured() {
        assert_eq!(cpu_time_figure(5e6, 0.004, "one tick"), Ok(5e6));
        assert_eq!(cpu_time_figure(4e6, 0.004, "one tick"), Ok(4e6));
        for v in [0.0, -1.0, 1.2e6, 3.99e6] {
            let why = cpu_time_figure(v, 0.004, "one scheduler tick (250 Hz)").unwrap_err();
            assert!(
                why.starts_with("below the counters' resolution")
                    && why.contains("one scheduler tick (250 Hz)"),
                "{why}"
            );
        }
        // A resolution of 0 (none known) still refuses nothing measured above 0.
        assert!(cpu_time_figure(0.0, 0.0, "x").is_err());
        assert_eq!(cpu_time_figure(1.0, 0.0, "x"), Ok(1.0));
    }

    #[test]
    fn run_figures_sum_the_processes() {
        let p = |t: f64, u: f64, s: f64, v: u64, i: u64| ProcFigures {
            turnaround_ns: t,
            wall_ns: t,
            user_ns: u,
            sys_ns: s,
            voluntary: Some(v),
            involuntary: Some(i),
            switches: Some(v + i),
        };
        let f = run_figures(&[p(10.0, 4.0, 1.0, 3, 1), p(20.0, 8.0, 2.0, 5, 2)]);
        assert_eq!(f.makespan_ns, 20.0);
        assert_eq!(f.user_ns, 12.0);
        assert_eq!(f.sys_ns, 3.0);
        assert_eq!(f.voluntary, Some(8));
        assert_eq!(f.involuntary, Some(3));
        assert_eq!(f.switches, Some(11));
        // Both got half their turnaround as CPU: perfectly fair.
        assert!((f.fairness_pct - 100.0).abs() < 1e-9);
        let mut q = p(5.0, 1.0, 0.0, 0, 0);
        q.voluntary = None;
        assert_eq!(run_figures(&[q.clone()]).voluntary, None);
        // One process without a total: no total for the run (never a partial sum).
        q.switches = None;
        assert_eq!(run_figures(&[q, p(1.0, 1.0, 0.0, 1, 1)]).switches, None);
    }

    #[test]
    fn switch_gap_keeps_the_widest_and_warns_outside_the_bound() {
        let g = SwitchGap::of((12, 3), (10, 3));
        assert_eq!(g, SwitchGap { vol: 2, invol: 0 });
        assert_eq!(g.warning(), None);
        let w = g.widest(SwitchGap::of((5, 9), (5, 4)));
        assert_eq!(w, SwitchGap { vol: 2, invol: 5 });
        // The reaped counters below the own reading: impossible for one task, a warning.
        let neg = w.widest(SwitchGap::of((4, 0), (7, 0)));
        assert_eq!(neg.vol, -3);
        assert!(neg.warning().unwrap().contains("-3 voluntary"));
        let big = SwitchGap::of((10 + SWITCH_GAP_BOUND as u64 + 1, 0), (10, 0));
        assert!(big.warning().is_some());
        assert!(
            SwitchGap::of((10 + SWITCH_GAP_BOUND as u64, 0), (10, 0))
                .warning()
                .is_none()
        );
    }

    #[test]
    fn stale_folders_of_dead_processes_are_removed() {
        let base = tempfile::tempdir().unwrap();
        // A pid that cannot exist (beyond pid_max).
        let dead = base.path().join(format!("{DIR_PREFIX}4294967-x"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("f0"), b"x").unwrap();
        let mine = temp_dir(base.path()).unwrap();
        let gone = remove_stale(base.path());
        assert_eq!(gone, vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(mine.path().exists());
    }
}
