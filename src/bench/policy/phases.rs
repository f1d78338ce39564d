//! The phases of one policy-study cell's run ([`super::Cell`]): spawn the children (each sets
//! its policy and blocks), release them together under a high-priority watchdog and reap them,
//! match their reports to the reaped usage, and turn that into the cell's figures.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, PipeReader, PipeWriter};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::work::WorkSize;
use super::{
    CHILD_SUBCOMMAND, Cell, ChildLine, ProcFigures, SWITCH_GAP_BOUND, SwitchGap, WATCHDOG_PRIORITY,
    WATCHDOG_TICK_NS, child_error, cpu_time_figure, run_figures, wait_ready,
};
use crate::bench::RunOutput;
use crate::platform::clock::{now_ns, sleep_until_ns};
use crate::platform::process as pp;
use crate::platform::sched;
use crate::record::BenchError;
use crate::timing::RunContext;

/// Children started, each blocked on the go pipe after setting its policy.
pub(super) struct Spawned {
    set: pp::ChildSet,
    pids: Vec<u32>,
    go_w: PipeWriter,
    res_r: PipeReader,
}

/// What the released children left: their report lines, reaped usage, the release time, and the
/// watchdog's lateness and note.
pub(super) struct Released {
    lines: Vec<String>,
    usage: Vec<pp::ChildUsage>,
    t_go: u64,
    late_max_ns: u64,
    pub(super) watchdog_note: Option<String>,
}

/// The children's reports matched to their reaped usage.
pub(super) struct Collected {
    procs: Vec<ProcFigures>,
    applied: sched::SchedReadback,
    /// Switches before the release (exec, start-up, policy, the wait), kept apart as a fact so
    /// the totals can be checked against a whole-process counter (perf stat).
    startup_switches: Option<u64>,
    /// Cross-check of the reaped counters against each child's own reading.
    gap: Option<SwitchGap>,
    check_missing: Option<String>,
    total_missing: Option<String>,
}

impl Cell {
    /// Spawn every child (each applies its policy and blocks on the go pipe).
    pub(super) fn spawn(
        &self,
        ctx: &RunContext,
        dir: &Path,
        size: &WorkSize,
    ) -> Result<Spawned, BenchError> {
        let exe = pp::osgauge_exe()
            .map_err(|e| BenchError::failed(format!("finding the osgauge executable: {e}")))?;
        let json = self.spec_json(size, dir);
        let (go_r, go_w) = std::io::pipe().map_err(|e| BenchError::os("pipe", e))?;
        let (res_r, res_w) = std::io::pipe().map_err(|e| BenchError::os("pipe", e))?;
        let mut set = pp::ChildSet::new();
        let mut pids = Vec::with_capacity(self.procs as usize);
        for k in 0..self.procs {
            if let Err(e) = ctx.check() {
                set.kill_and_reap();
                return Err(e);
            }
            let mut cmd = Command::new(&exe);
            cmd.arg(CHILD_SUBCOMMAND)
                .arg(&json)
                .stdin(Stdio::from(
                    go_r.try_clone().map_err(|e| BenchError::os("dup", e))?,
                ))
                .stdout(Stdio::from(
                    res_w.try_clone().map_err(|e| BenchError::os("dup", e))?,
                ))
                .stderr(Stdio::null());
            match set.spawn(cmd) {
                Ok(pid) => pids.push(pid),
                Err(e) => {
                    set.kill_and_reap();
                    return Err(BenchError::failed(format!(
                        "starting child {} of {}: {e}",
                        k + 1,
                        self.procs
                    )));
                }
            }
        }
        Ok(Spawned {
            set,
            pids,
            go_w,
            res_r,
        })
    }

    /// Release the children together and reap them, under a watchdog that kills them all at the
    /// run's time bound (ten times the ideal, all work spread over the CPUs, + 10 s).
    pub(super) fn release_and_reap(
        &self,
        ctx: &RunContext,
        spawned: Spawned,
        alone: Duration,
    ) -> Result<Released, BenchError> {
        let Spawned {
            mut set,
            pids,
            go_w,
            res_r,
        } = spawned;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let bound = Instant::now() + Duration::from_secs_f64(time_bound_s(alone, self.procs, cpus));
        let deadline = bound.min(ctx.deadline);
        let done = AtomicBool::new(false);
        let expired = AtomicBool::new(false);
        let late_max = AtomicU64::new(0);
        let group = set.group();
        let rt = self.policy.effective_policy().is_realtime();
        let (lines, outcome, t_go, watchdog_note) = std::thread::scope(|s| {
            let (line_tx, line_rx) = std::sync::mpsc::channel::<String>();
            let reader = s.spawn(move || forward_lines(res_r, line_tx));
            // Every child has set its policy and waits on the go pipe before the release, so no
            // start-up is inside a turnaround.
            if let Err(e) = wait_ready(&line_rx, &mut set, self.procs as usize, ctx) {
                set.kill_and_reap();
                drop(go_w);
                let _ = reader.join();
                return (Vec::new(), Err(e), 0, None);
            }
            let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
            let dog = Watchdog {
                done: &done,
                expired: &expired,
                late_max: &late_max,
                ctx,
                deadline,
                group,
            };
            let watchdog = s.spawn(move || dog.run(ready_tx));
            let prio = ready_rx.recv().unwrap_or(Err("watchdog ended".into()));
            let note = match release_note(&prio, rt) {
                Ok(note) => note,
                Err(e) => {
                    done.store(true, Ordering::Release);
                    set.kill_and_reap();
                    let _ = watchdog.join();
                    return (Vec::new(), Err(e), 0, None);
                }
            };
            // Release everybody.
            let t_go = now_ns();
            drop(go_w);
            let outcome = reap_all(&mut set, pids.len(), ctx, &expired, deadline);
            done.store(true, Ordering::Release);
            let _ = watchdog.join();
            let _ = reader.join();
            let lines: Vec<String> = line_rx.try_iter().collect();
            (lines, outcome, t_go, note)
        });
        let usage = outcome?;
        Ok(Released {
            lines,
            usage,
            t_go,
            late_max_ns: late_max.load(Ordering::Relaxed),
            watchdog_note,
        })
    }

    /// The cell's figures from the collected children: makespan, turnaround, CPU time,
    /// fairness, switches, and the facts read back.
    pub(super) fn figures(
        &self,
        c: &Collected,
        r: &Released,
        size: &WorkSize,
        alone: Duration,
    ) -> Result<RunOutput, BenchError> {
        let applied = &c.applied;
        let mut out = RunOutput::default();
        let requested = self.policy.effective_policy().name();
        if applied.policy != requested && applied.downgraded.is_none() {
            return Err(BenchError::failed(format!(
                "policy {requested} requested, {} read back",
                applied.policy
            )));
        }
        if let Some(d) = &applied.downgraded {
            out.warnings.push(format!("policy downgraded: {d}"));
        }
        for (k, v) in applied.facts() {
            out.facts.insert(k, v);
        }
        let f = run_figures(&c.procs);
        let mut out = out
            .metric("makespan", vec![f.makespan_ns])
            .metric("turnaround", f.turnarounds.clone())
            .metric("turnaround_p99", vec![f.turnaround_p99_ns]);
        // User and system time below the split's resolution (after the start-up is subtracted)
        // are noise of the tick sampling: not measured, by the rule of the CPU costs.
        let (res_s, res_why) = crate::platform::cputime::user_sys_split_resolution();
        out = out.fact("user_sys_resolution_ns", (res_s * 1e9).round() as u64);
        for (name, v) in [("user", f.user_ns), ("sys", f.sys_ns)] {
            out = match cpu_time_figure(v, res_s, &res_why) {
                Ok(v) => out.metric(name, vec![v]),
                Err(why) => out.not_measured(name, why),
            };
        }
        let mut out = out
            .metric("fairness", vec![f.fairness_pct])
            .metric("watchdog_late_max", vec![r.late_max_ns as f64])
            .fact("work_units_cpu", size.cpu_units)
            .fact("work_units_io", size.io_units)
            .fact("work_bursts", size.bursts)
            .fact("work_alone_ns", alone.as_nanos() as u64)
            .fact(
                "startup_switches",
                c.startup_switches.map(Value::from).unwrap_or(Value::Null),
            )
            .fact(
                "wall_mean_ns",
                c.procs.iter().map(|p| p.wall_ns).sum::<f64>() / c.procs.len() as f64,
            );
        match (f.voluntary, f.involuntary) {
            (Some(v), Some(i)) => {
                out = out
                    .metric("voluntary", vec![v as f64])
                    .metric("involuntary", vec![i as f64])
            }
            _ => {
                let why = pp::split_unsupported().unwrap_or_else(|| {
                    format!(
                        "unsupported on {}: no voluntary/involuntary split per process",
                        crate::platform::OS_NAME
                    )
                });
                out = out
                    .not_measured("voluntary", why.clone())
                    .not_measured("involuntary", why);
            }
        }
        out = match f.switches {
            Some(t) => out.metric("switches", vec![t as f64]),
            None => out.not_measured(
                "switches",
                c.total_missing
                    .clone()
                    .unwrap_or_else(|| "no switch counts".into()),
            ),
        };
        match c.gap {
            Some(g) => {
                if let Some(w) = g.warning() {
                    out.warnings.push(w);
                }
                out = out
                    .fact("switch_check_vol_gap_max", g.vol)
                    .fact("switch_check_invol_gap_max", g.invol)
                    .fact("switch_check_bound", SWITCH_GAP_BOUND);
            }
            None => {
                out = out.fact(
                    "switch_check",
                    c.check_missing
                        .clone()
                        .unwrap_or_else(|| "no children".into()),
                )
            }
        }
        Ok(out)
    }
}

/// Match the children's report lines to their reaped usage: each child's figures, the policy
/// they read back (all the same), and the switch counters' cross-check.
pub(super) fn collect(r: &Released, n: u32) -> Result<Collected, BenchError> {
    let by_pid = reports_by_pid(&r.lines)?;
    let mut procs = Vec::new();
    let mut applied: Option<sched::SchedReadback> = None;
    let mut tally = SwitchTally {
        startup: Some(0),
        gap: None,
        check_missing: None,
        total_missing: None,
    };
    for u in &r.usage {
        let c = by_pid.get(&u.pid).ok_or_else(|| {
            BenchError::failed(format!(
                "child {} ended ({}) without reporting",
                u.pid,
                u.code.map_or("killed".into(), |c| format!("exit {c}"))
            ))
        })?;
        if u.code != Some(0) {
            return Err(BenchError::failed(format!(
                "child {} exited with {:?}",
                u.pid, u.code
            )));
        }
        let a = c.applied.clone().unwrap_or_default();
        if let Some(prev) = &applied
            && prev.policy != a.policy
        {
            return Err(BenchError::failed(format!(
                "children disagree on the policy read back: {} and {}",
                prev.policy, a.policy
            )));
        }
        applied = Some(a);
        let b = c.before.clone().ok_or_else(|| {
            BenchError::failed(format!("child {} did not report its start-up usage", u.pid))
        })?;
        procs.push(tally.child(u, c, &b, r.t_go));
    }
    if procs.len() != n as usize {
        return Err(BenchError::failed(format!(
            "{} of {} children reported",
            procs.len(),
            n
        )));
    }
    Ok(Collected {
        procs,
        applied: applied.unwrap_or_default(),
        startup_switches: tally.startup,
        gap: tally.gap,
        check_missing: tally.check_missing,
        total_missing: tally.total_missing,
    })
}

/// The children's result lines by pid (their ready lines left out); a line that is not a
/// report, or a child's error, fails.
fn reports_by_pid(lines: &[String]) -> Result<HashMap<u32, ChildLine>, BenchError> {
    let mut by_pid = HashMap::new();
    for l in lines {
        let c: ChildLine = serde_json::from_str(l)
            .map_err(|_| BenchError::failed(format!("unexpected line from a child: {l}")))?;
        if let Some(e) = child_error(&c) {
            return Err(e);
        }
        if !c.ready {
            by_pid.insert(c.pid, c);
        }
    }
    Ok(by_pid)
}

/// The switch counts over the children, child by child (see [`Collected`]).
struct SwitchTally {
    /// Switches before the release, summed (None once a child has none).
    startup: Option<u64>,
    gap: Option<SwitchGap>,
    check_missing: Option<String>,
    total_missing: Option<String>,
}

impl SwitchTally {
    /// One child's figures from its usage `u`, its report `c` and its start-up usage `b`
    /// (subtracted), turnaround from the release `t_go`; its switches counted in the tally.
    fn child(
        &mut self,
        u: &pp::ChildUsage,
        c: &ChildLine,
        b: &super::Before,
        t_go: u64,
    ) -> ProcFigures {
        let minus = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        self.startup = self.startup.and_then(|s| Some(s + b.vol? + b.invol?));
        let own = c.switches.clone().unwrap_or_default();
        self.cross_check(u, &own);
        let voluntary = minus(u.voluntary, b.vol);
        let involuntary = minus(u.involuntary, b.invol);
        let switches = match (voluntary, involuntary, own.total, b.csw) {
            (Some(v), Some(i), _, _) => Some(v + i),
            (_, _, Some(end), Some(start)) => Some(end.saturating_sub(start)),
            _ => {
                self.total_missing
                    .get_or_insert_with(|| why_own(&own, u.pid));
                None
            }
        };
        ProcFigures {
            turnaround_ns: c.end.saturating_sub(t_go) as f64,
            wall_ns: c.end.saturating_sub(c.start) as f64,
            user_ns: u.user_ns.saturating_sub(b.user) as f64,
            sys_ns: u.sys_ns.saturating_sub(b.sys) as f64,
            voluntary,
            involuntary,
            switches,
        }
    }

    /// Cross-check the reaped switch counters against the child's `own` reading (only where it
    /// ran one thread: its own counters count only its main task); the widest gap is kept, and
    /// the first reason a check could not be made.
    fn cross_check(&mut self, u: &pp::ChildUsage, own: &pp::OwnSwitches) {
        match (u.voluntary, u.involuntary, own.vol, own.invol) {
            (Some(rv), Some(ri), Some(ov), Some(oi)) if own.threads == Some(1) => {
                let g = SwitchGap::of((rv, ri), (ov, oi));
                self.gap = Some(self.gap.map_or(g, |w| w.widest(g)));
            }
            (Some(_), Some(_), Some(_), Some(_)) => {
                self.check_missing.get_or_insert_with(|| {
                    format!(
                        "child {} had {:?} threads: /proc/self/status counts only its main task",
                        u.pid, own.threads
                    )
                });
            }
            _ => {
                self.check_missing
                    .get_or_insert_with(|| why_own(own, u.pid));
            }
        }
    }
}

/// Why child `pid` has no own switch counters: its own reason, else the OS's, else that it
/// sent none.
fn why_own(own: &pp::OwnSwitches, pid: u32) -> String {
    own.why
        .clone()
        .or_else(pp::split_unsupported)
        .unwrap_or_else(|| format!("child {pid} sent no own counters"))
}

/// The run's time bound, s: ten times the ideal (`procs` × the work alone spread over `cpus`),
/// + 10 s, + 50 ms per process for the time they take to become ready (Wine included).
fn time_bound_s(alone: Duration, procs: u32, cpus: f64) -> f64 {
    let ideal = alone.as_secs_f64() * f64::from(procs) / cpus;
    ideal * 10.0 + 10.0 + 0.05 * f64::from(procs)
}

/// The children's result pipe, line by line into `tx` until it closes (or nobody listens).
fn forward_lines(res_r: PipeReader, tx: std::sync::mpsc::Sender<String>) {
    for l in BufReader::new(res_r).lines().map_while(Result::ok) {
        if tx.send(l).is_err() {
            break;
        }
    }
}

/// The watchdog of a release: ticks every [`WATCHDOG_TICK_NS`] at [`WATCHDOG_PRIORITY`] until
/// `done`, keeps its worst lateness in `late_max`, and at Ctrl-C or `deadline` sets `expired`
/// and kills the children's process `group`.
struct Watchdog<'a, 'r> {
    done: &'a AtomicBool,
    expired: &'a AtomicBool,
    late_max: &'a AtomicU64,
    ctx: &'a RunContext<'r>,
    deadline: Instant,
    group: Option<i32>,
}

impl Watchdog<'_, '_> {
    /// Run on the watchdog's thread: say through `ready` whether it got its priority, then tick.
    fn run(self, ready: std::sync::mpsc::Sender<Result<(), String>>) {
        let prio = sched::set_watchdog_priority(WATCHDOG_PRIORITY);
        let _ = ready.send(prio.map_err(|e| e.to_string()));
        let mut next = now_ns() + WATCHDOG_TICK_NS;
        while !self.done.load(Ordering::Acquire) {
            let _ = sleep_until_ns(next);
            let late = now_ns().saturating_sub(next);
            self.late_max.fetch_max(late, Ordering::Relaxed);
            next += WATCHDOG_TICK_NS;
            if self.ctx.check().is_err() || Instant::now() >= self.deadline {
                self.expired.store(true, Ordering::Release);
                if let Some(g) = self.group {
                    pp::kill_group(g);
                }
                break;
            }
        }
    }
}

/// Whether the children may be released given the watchdog's priority (`prio`): real-time
/// children (`rt`) only under a watchdog above them (else the refusal); others with a note when
/// the watchdog runs at normal priority.
fn release_note(prio: &Result<(), String>, rt: bool) -> Result<Option<String>, BenchError> {
    match (prio, rt) {
        (Err(e), true) => Err(BenchError::failed(format!(
            "cannot give the watchdog a priority above the real-time hogs ({e}); refusing to release them"
        ))),
        (Err(e), false) => Ok(Some(format!("watchdog at normal priority ({e})"))),
        (Ok(()), _) => Ok(None),
    }
}

/// Reap the released children until none runs: their usage (room for `n`), or the first wait
/// error, or (when the watchdog `expired` or at Ctrl-C) every child killed and the timeout.
fn reap_all(
    set: &mut pp::ChildSet,
    n: usize,
    ctx: &RunContext,
    expired: &AtomicBool,
    deadline: Instant,
) -> Result<Vec<pp::ChildUsage>, BenchError> {
    let mut usage = Vec::with_capacity(n);
    loop {
        match set.reap() {
            Ok(mut u) => usage.append(&mut u),
            Err(e) => break Err(BenchError::os("wait4", e)),
        }
        if set.running() == 0 {
            break Ok(usage);
        }
        if expired.load(Ordering::Acquire) || ctx.check().is_err() {
            set.kill_and_reap();
            break Err(ctx.check().err().unwrap_or_else(|| {
                BenchError::timeout(format!(
                    "the run passed its time bound ({:.0} s); the watchdog killed every child",
                    deadline
                        .saturating_duration_since(Instant::now())
                        .as_secs_f64()
                ))
            }));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten times the ideal (all the work spread over the CPUs) + 10 s + 50 ms per process.
    #[test]
    fn the_time_bound_is_ten_ideals_plus_start_up() {
        let b = time_bound_s(Duration::from_millis(100), 8, 2.0);
        assert!((b - (4.0 + 10.0 + 0.4)).abs() < 1e-9, "{b}");
    }

    /// Real-time children are never released under a watchdog that could not get above them;
    /// others are, with a note when the watchdog runs at normal priority.
    #[test]
    fn real_time_children_need_a_watchdog_above_them() {
        let refused: Result<(), String> = Err("EPERM".into());
        assert!(release_note(&refused, true).is_err());
        assert_eq!(
            release_note(&refused, false).unwrap().as_deref(),
            Some("watchdog at normal priority (EPERM)")
        );
        assert_eq!(release_note(&Ok(()), true).unwrap(), None);
    }

    fn released(lines: &[&str], usage: Vec<pp::ChildUsage>) -> Released {
        Released {
            lines: lines.iter().map(|l| l.to_string()).collect(),
            usage,
            t_go: 1000,
            late_max_ns: 0,
            watchdog_note: None,
        }
    }

    fn usage(pid: u32, vol: u64, invol: u64) -> pp::ChildUsage {
        pp::ChildUsage {
            pid,
            code: Some(0),
            user_ns: 500,
            sys_ns: 300,
            voluntary: Some(vol),
            involuntary: Some(invol),
            max_rss_bytes: None,
        }
    }

    /// Each reaped child matched to its report: start-up usage subtracted, turnaround from the
    /// release, start-up switches summed, the widest gap to the children's own counters kept.
    #[test]
    fn collect_matches_reports_to_reaped_usage() {
        let before = r#""before":{"user":100,"sys":50,"vol":2,"invol":1}"#;
        let r = released(
            &[
                r#"{"pid":7,"ready":true}"#,
                &format!(
                    r#"{{"pid":7,"start":900,"end":4000,{before},"switches":{{"vol":10,"invol":4,"threads":1}}}}"#
                ),
                &format!(
                    r#"{{"pid":8,"start":950,"end":3000,{before},"switches":{{"vol":20,"invol":3,"threads":1}}}}"#
                ),
            ],
            vec![usage(8, 21, 3), usage(7, 10, 6)],
        );
        let c = collect(&r, 2).unwrap();
        assert_eq!(c.procs.len(), 2);
        let p = &c.procs[0];
        assert_eq!(
            (p.turnaround_ns, p.wall_ns, p.user_ns, p.sys_ns),
            (2000.0, 2050.0, 400.0, 250.0)
        );
        assert_eq!(
            (p.voluntary, p.involuntary, p.switches),
            (Some(19), Some(2), Some(21))
        );
        assert_eq!(c.procs[1].switches, Some(13));
        assert_eq!(c.startup_switches, Some(6));
        assert_eq!(c.gap, Some(SwitchGap { vol: 1, invol: 2 }));
        assert_eq!((c.check_missing, c.total_missing), (None, None));
    }

    /// A child reaped without a report, or fewer reports than children, fails the run.
    #[test]
    fn collect_fails_on_a_missing_report() {
        let r = released(&[], vec![usage(7, 1, 1)]);
        assert!(collect(&r, 1).is_err());
        assert!(collect(&released(&[], vec![]), 1).is_err());
    }
}
