//! The phases of one interactivity cell's run ([`super::Cell`]): prepare (calibrate), start the
//! load, measure (traced with `--attribute`), stop and check the load, then the figures.

use std::time::Duration;

use serde_json::json;

use super::{
    Cell, Measured, accounting, busy_facts, calibration, measure, task_for, task_off_target,
};
use crate::bench::RunOutput;
use crate::platform::cputime::BusySample;
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::workload::load::{self, LoadKind};
use crate::workload::task::{self, Task};
use crate::workload::work::{self, Work, WorkMode};

impl Cell {
    /// Check the task fits a run, calibrate its work, and start the output with the calibration
    /// facts: (task, work, duration, output so far).
    pub(super) fn prepare(
        &self,
        ctx: &RunContext,
    ) -> Result<(Task, Work, Duration, RunOutput), BenchError> {
        let s = &self.settings;
        let duration = self.duration(ctx);
        let dur_ns = duration.as_nanos() as u64;
        let task = task_for(self.task, s, dur_ns)
            .ok_or_else(|| BenchError::failed(format!("unknown task {}", self.task)))?;
        let periods = task.periods_in(dur_ns);
        if periods > task::MAX_PERIODS_PER_RUN {
            return Err(BenchError::failed(format!(
                "{periods} periods of {} in a run of {duration:?}: more than the {} a run may \
                 keep; use a shorter duration",
                crate::units::format_time_ns(task.period_ns() as f64),
                task::MAX_PERIODS_PER_RUN
            )));
        }
        let step = work::cpu_clock_step_ns();
        if s.work_mode == WorkMode::Cputime && !work::cpu_clock_is_fine() {
            return Err(BenchError::unsupported(
                crate::platform::unsupported(&format!(
                    "--work cputime needs a thread CPU clock that advances in steps of at most \
                     {} µs; this one advances every {} µs (use --work fixed)",
                    work::FINE_CPU_CLOCK_NS / 1000,
                    step / 1000
                ))
                .to_string(),
            ));
        }
        let cal = calibration(self, &task, ctx)?;
        let work = Work {
            mode: s.work_mode,
            loops_per_us: cal.loops_per_us,
        };
        let mut out = RunOutput::default()
            .fact("work_loops_per_us", cal.loops_per_us)
            .fact("work_calibration_cached", cal.cached)
            .fact("work_calibration_spread", cal.spread)
            .fact("work_calibration_key", cal.key.clone())
            .fact("work_calibration_clock", cal.clock.clone())
            .fact("cpu_clock_step_ns", step);
        if let Some(q) = cal.quick_check {
            out = out.fact("work_calibration_quick_check", q);
        }
        if !ctx.warmup {
            // The duration this cell really ran (under `osgauge run` it follows the run time).
            out = out.fact("duration_s", duration.as_secs_f64());
        }
        if let Some(w) = &cal.warning {
            out.warnings.push(w.clone());
        }
        ctx.check()?;
        Ok((task, work, duration, out))
    }

    /// Measure the task on its own thread, traced when `--attribute` asks (a session that cannot
    /// start makes the cell unsupported here, never measured untraced instead): what it measured
    /// and the trace text with the events lost.
    pub(super) fn measure_traced(
        &self,
        ctx: &RunContext,
        task: Task,
        work: &Work,
        duration: Duration,
    ) -> Result<(Measured, Option<(String, u64)>), BenchError> {
        let s = &self.settings;
        let mut session = match s.attribute_ns {
            Some(_) => {
                let cpus = match &s.cpus {
                    Some(c) => c.clone(),
                    None => crate::platform::allowed_cpus()
                        .map_err(|e| BenchError::failed(format!("allowed CPUs unknown: {e}")))?,
                };
                Some(
                    crate::platform::tracefs::Session::start(&cpus)
                        .map_err(|why| BenchError::unsupported(format!("--attribute: {why}")))?,
                )
            }
            None => None,
        };
        let measured = std::thread::scope(|sc| {
            sc.spawn(|| {
                crate::platform::set_thread_name(crate::bench::MEASURING_THREAD);
                measure(self, task, work, duration, ctx)
            })
            .join()
            .unwrap_or_else(|_| Err(BenchError::failed("measuring thread panicked")))
        })?;
        let trace = match session.as_mut() {
            Some(t) => Some(
                t.stop_and_read()
                    .map_err(|e| BenchError::failed(format!("--attribute: {e}")))?,
            ),
            None => None,
        };
        drop(session);
        Ok((measured, trace))
    }

    /// The cell's figures: attribution of late periods, the task's latency, deadlines and CPU,
    /// the load's CPU and scheduling, and how busy the machine was.
    pub(super) fn figures(
        &self,
        mut out: RunOutput,
        task: Task,
        measured: Measured,
        trace: Option<(String, u64)>,
        report: Option<&load::LoadReport>,
        (before, after, wall): (&BusySample, &BusySample, u64),
    ) -> Result<RunOutput, BenchError> {
        let s = &self.settings;
        for (k, v) in measured.facts {
            out.facts.insert(k, v);
        }
        out.warnings.extend(measured.warnings);
        let run = measured.run;
        if let (Some((text, lost)), Some(threshold)) = (trace, s.attribute_ns) {
            let a = attribution_facts(&run, &text, lost, threshold, s.attribute_top);
            out.facts.insert("attribution".into(), a);
        }
        let (mut out, task_cpu, frames_total) = task_figures(out, task, run)?;
        // A task that got all the CPU it asked for but used far from its target did other work
        // than its name says (the calibrated loop ran faster or slower than at calibration):
        // the cell is marked, never shown as a clean cell of that task.
        let desired = out
            .samples
            .iter()
            .find(|(n, _)| *n == "desired_cpu")
            .and_then(|(_, v)| v.first().copied());
        if let Some(w) = task_off_target(
            task.name(),
            task_cpu,
            task.target_cpu_pct(frames_total),
            desired,
            self.settings.work_mode,
        ) {
            out.facts.insert("task_cpu_off_target".into(), json!(true));
            out.warnings.push(w);
        }
        if let Some(r) = report {
            out = crate::workload::background::report_figures(r, out);
        }
        let (busy, pressure, steal) = busy_facts(before, after, wall);
        for (k, v) in busy {
            out.facts.insert(k, v);
        }
        let cpus = crate::platform::allowed_cpus()
            .map(|c| c.len())
            .unwrap_or(1);
        out.warnings.extend(busy_warnings(
            steal,
            pressure,
            self.load == LoadKind::None,
            before.loadavg1,
            cpus,
        ));
        Ok(out)
    }
}

/// The `attribution` fact of a traced run: each late period located on the CPU the trace shows
/// it waiting on, summarised against `threshold_ns` (top `top` causes); late periods whose CPU
/// no event shows (no switch to the task recorded) are counted as `not_located`.
fn attribution_facts(
    run: &task::TaskRun,
    text: &str,
    lost: u64,
    threshold_ns: u64,
    top: usize,
) -> serde_json::Value {
    use crate::attribution::{Late, cpus_of, parse, summary};
    let events = parse(text);
    let starts: Vec<u64> = run.acc.late.iter().map(|&(_, start)| start).collect();
    let late: Vec<Late> = run
        .acc
        .late
        .iter()
        .zip(cpus_of(&events, run.tid, &starts))
        .filter_map(|(&(intended, start), cpu)| {
            Some(Late {
                cpu: cpu?,
                tid: run.tid,
                intended_ns: intended,
                actual_ns: start,
            })
        })
        .collect();
    let unlocated = run.acc.late.len() - late.len();
    let mut a = summary(
        text,
        lost,
        late,
        threshold_ns,
        top,
        crate::platform::cputime::task_clock_excludes_steal(),
    );
    // Late periods whose CPU no event shows (no switch to the task recorded): counted.
    a["not_located"] = json!(unlocated);
    a
}

/// The task's own figures in `out`: its target CPU, then latency and desired CPU (periodic:
/// also deadlines met and dropped frames; gaming: per burst), then the CPU it used. Returns the
/// output, the task's CPU (% of one CPU over the span its frames cover) and its frames (or
/// bursts); a run with no period (or burst) is an error.
fn task_figures(
    mut out: RunOutput,
    task: Task,
    run: task::TaskRun,
) -> Result<(RunOutput, f64, u64), BenchError> {
    let frames_total = if task.periodic() {
        run.acc.frames
    } else {
        run.bursts.len() as u64
    };
    out.facts.insert(
        "target_cpu_pct".into(),
        json!(task.target_cpu_pct(frames_total)),
    );
    // Span: the periods the frames cover (or the wall time, if the last frame ran past them).
    let span = if task.periodic() {
        run.wall_ns.max(frames_total * task.period_ns())
    } else {
        run.wall_ns
    };
    let task_cpu = 100.0 * run.cpu_ns as f64 / span.max(1) as f64;
    if task.periodic() {
        let mut a = run.acc;
        if a.latencies_ns.is_empty() {
            return Err(BenchError::failed("no period ran (duration too short?)"));
        }
        if a.latencies_not_kept > 0 {
            return Err(BenchError::failed(format!(
                "{} periods ran, more than the {} a run may keep",
                a.ran,
                task::MAX_PERIODS_PER_RUN
            )));
        }
        out.facts
            .insert("desired_cpu_from".into(), json!(run.obtained_from));
        out = out
            .metric("latency", std::mem::take(&mut a.latencies_ns))
            .metric("deadlines_met", vec![a.deadlines_met_pct().unwrap_or(0.0)])
            .metric("desired_cpu", vec![a.desired_cpu_pct().unwrap_or(0.0)])
            .metric("dropped_frames", vec![a.dropped as f64]);
        out.facts.insert("periods".into(), json!(a.frames));
    } else {
        if run.bursts.is_empty() {
            return Err(BenchError::failed("no burst ran (duration too short?)"));
        }
        let lat: Vec<f64> = run.bursts.iter().map(|b| b.waited_ns() as f64).collect();
        out = out.metric("latency", lat).metric(
            "desired_cpu",
            vec![accounting::burst_cpu_share_pct(&run.bursts)],
        );
        out.facts.insert("bursts".into(), json!(run.bursts.len()));
        out.facts
            .insert("burst_cpu_from".into(), json!(run.burst_cpu_from));
    }
    Ok((
        out.metric("task_cpu", vec![task_cpu]),
        task_cpu,
        frames_total,
    ))
}

/// The busy-machine warnings of a run, in this order: CPU steal above 2 %, CPU pressure above
/// 10 % in a cell without load, a load average (before the run) above 1.5 × the `cpus` allowed.
fn busy_warnings(
    steal: f64,
    pressure: f64,
    no_load: bool,
    loadavg1_before: Option<f64>,
    cpus: usize,
) -> Vec<String> {
    let mut w = Vec::new();
    if steal > 2.0 {
        w.push(
            "busy machine: CPU steal > 2 % during a run (the hypervisor ran other guests; \
             figures per run in run_facts[].steal_pct)"
                .to_string(),
        );
    }
    if no_load && pressure > 10.0 {
        w.push(
            "busy machine: CPU pressure > 10 % during a run without load (other processes \
             competed; run_facts[].cpu_pressure_some_pct)"
                .to_string(),
        );
    }
    if let Some(l) = loadavg1_before
        && l > cpus as f64 * 1.5
    {
        w.push(format!(
            "busy machine: load average above 1.5 × {cpus} CPU(s) before a run \
             (run_facts[].loadavg1_before)"
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::accounting::Burst;

    /// Gaming: a latency per burst (time off the CPU while it wanted it), the CPU share the
    /// bursts got, then the task's CPU over the run's wall time; metrics in that order.
    #[test]
    fn gaming_figures_are_per_burst() {
        let run = task::TaskRun {
            bursts: vec![
                Burst {
                    cpu_ns: 60,
                    wall_ns: 100,
                },
                Burst {
                    cpu_ns: 100,
                    wall_ns: 100,
                },
            ],
            burst_cpu_from: "test",
            cpu_ns: 160,
            wall_ns: 400,
            ..Default::default()
        };
        let (out, task_cpu, frames) =
            task_figures(RunOutput::default(), Task::Gaming, run).unwrap();
        assert_eq!(frames, 2);
        assert_eq!(task_cpu, 40.0);
        let names: Vec<&str> = out.samples.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["latency", "desired_cpu", "task_cpu"]);
        assert_eq!(out.samples[0].1, [40.0, 0.0]);
        assert_eq!(out.samples[1].1, [80.0]);
        assert_eq!(out.facts["bursts"], json!(2));
        assert_eq!(out.facts["burst_cpu_from"], json!("test"));
    }

    /// A run in which no period (or burst) ran has no figures: it fails, never shows zeros.
    #[test]
    fn a_run_without_frames_fails() {
        for t in [Task::Audio, Task::Gaming] {
            let e = task_figures(RunOutput::default(), t, task::TaskRun::default());
            assert!(e.is_err(), "{t:?}");
        }
    }

    /// Each busy-machine warning on its own threshold, in order; CPU pressure only counts in a
    /// cell without load (a load is pressure by design).
    #[test]
    fn busy_warnings_follow_their_thresholds() {
        assert!(busy_warnings(2.0, 10.0, true, Some(3.0), 2).is_empty());
        assert!(busy_warnings(0.0, 50.0, false, None, 2).is_empty());
        let w = busy_warnings(2.5, 10.5, true, Some(3.5), 2);
        assert_eq!(w.len(), 3);
        assert!(w[0].contains("steal"), "{w:?}");
        assert!(w[1].contains("pressure"), "{w:?}");
        assert!(w[2].contains("1.5 × 2 CPU(s)"), "{w:?}");
    }
}
