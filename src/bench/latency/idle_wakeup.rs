//! `latency/idle_wakeup`: what waking a thread on an idle CPU costs, against the same wake-up on a
//! CPU kept busy by a lowest-priority spinner. The difference is the cost of leaving an idle
//! state — on a VM the host's halt exit, which here dominates other latency figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Facts, place_thread};
use crate::bench::{Benchmark, Estimate, Info, MetricSpec, RunOutput};
use crate::platform::clock::now_ns;
use crate::platform::sched::{Policy, SchedRequest};
use crate::record::{BenchError, RunRecord};
use crate::timing::RunContext;
use crate::units::{Better, Unit};

/// Pause between wake-ups, long enough for an idle CPU to enter an idle state.
pub const PAUSE: Duration = Duration::from_millis(2);

pub struct IdleWakeup {
    info: Info,
}

impl Default for IdleWakeup {
    fn default() -> Self {
        Self::new()
    }
}

impl IdleWakeup {
    pub fn new() -> IdleWakeup {
        IdleWakeup {
            info: Info {
                id: "latency/idle_wakeup".into(),
                suite: "latency",
                title: "Waking a thread on an idle CPU vs a busy one".into(),
                method: format!(
                    "A waker thread pinned to one CPU wakes a thread blocked on the second CPU \
                     (std park/unpark: a futex on Linux, a wait-on-address or event elsewhere) \
                     every {} ms; the wake-up time is the wakee's clock read minus the waker's, \
                     read just before it wakes it (same monotonic clock). Half of each run the \
                     second CPU is otherwise idle (it may enter an idle state between wake-ups); \
                     the other half a spinner at the lowest priority (SCHED_IDLE on Linux; \
                     refused elsewhere: unsupported) keeps it busy, so the wakee preempts a \
                     running thread instead. idle_exit = median(idle) − median(busy): the cost \
                     of leaving an idle state (on a VM, the host's halt exit); a difference of \
                     two medians, one value per run, which is ≤ 0 where leaving an idle state \
                     costs nothing measurable (no deep idle states, or idle polling). The two \
                     halves alternate within a run.",
                    PAUSE.as_millis()
                ),
                metrics: vec![
                    MetricSpec {
                        name: "idle",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "wake-up time of a thread on an otherwise idle CPU",
                    },
                    MetricSpec {
                        name: "busy",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "wake-up time of the same thread on a CPU kept busy by a lowest-priority spinner",
                    },
                    MetricSpec {
                        name: "idle_exit",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "median idle − median busy wake-up (a difference of two medians, may be ≤ 0): the cost of leaving an idle state",
                    },
                ],
            },
        }
    }
}

/// The second CPU and the waker's: the first two CPUs this process may use.
fn two_cpus() -> Result<(usize, usize), BenchError> {
    let cpus = crate::platform::allowed_cpus()
        .map_err(|e| BenchError::failed(format!("allowed CPUs unknown: {e}")))?;
    match cpus.as_slice() {
        [a, b, ..] => Ok((*a, *b)),
        _ => Err(BenchError::unsupported(
            "needs two CPUs (a waker and a CPU to wake); this process may use one",
        )),
    }
}

/// One half: `n` wake-ups of a thread on `target` from `waker`; with `spin`, a lowest-priority
/// spinner keeps `target` busy meanwhile. Returns the wake-up times, ns.
fn wakeups(
    waker: usize,
    target: usize,
    n: usize,
    spin: bool,
    ctx: &RunContext,
) -> Result<(Vec<f64>, Option<Facts>), BenchError> {
    let stamp = Arc::new(AtomicU64::new(0));
    let generation = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let spinner = spin.then(|| {
            let done = done.clone();
            s.spawn(move || -> Result<Facts, BenchError> {
                let idle = SchedRequest {
                    policy: Some(Policy::Idle),
                    ..Default::default()
                };
                let facts = place_thread(target, &idle, None).map_err(|e| {
                    BenchError::unsupported(format!(
                        "a lowest-priority spinner could not be set up: {}",
                        e.message
                    ))
                })?;
                while !done.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                Ok(facts)
            })
        });
        let (stamp2, gen2, done2) = (stamp.clone(), generation.clone(), done.clone());
        let wakee = s.spawn(move || -> Result<Vec<f64>, BenchError> {
            place_thread(target, &SchedRequest::default(), None)?;
            let mut seen = 0;
            let mut out = Vec::with_capacity(n);
            while out.len() < n && !done2.load(Ordering::Acquire) {
                std::thread::park_timeout(Duration::from_millis(100));
                let g = gen2.load(Ordering::Acquire);
                if g != seen {
                    let t = now_ns();
                    seen = g;
                    out.push(t.saturating_sub(stamp2.load(Ordering::Acquire)) as f64);
                }
            }
            Ok(out)
        });
        // The waker is a thread of its own: pinning the caller would pin the runner's thread.
        let wakee_handle = wakee.thread().clone();
        let (stamp, generation) = (&stamp, &generation);
        let waker_thread = s.spawn(move || {
            place_thread(waker, &SchedRequest::default(), None)?;
            for k in 1..=n as u64 {
                std::thread::sleep(PAUSE);
                ctx.check()?;
                stamp.store(now_ns(), Ordering::Release);
                generation.store(k, Ordering::Release);
                wakee_handle.unpark();
            }
            Ok::<(), BenchError>(())
        });
        let result = waker_thread
            .join()
            .unwrap_or_else(|_| Err(BenchError::failed("the waker panicked")));
        done.store(true, Ordering::Release);
        wakee.thread().unpark();
        let samples = wakee
            .join()
            .unwrap_or_else(|_| Err(BenchError::failed("the wakee panicked")));
        let spin_facts = match spinner {
            Some(h) => Some(
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::failed("the spinner panicked")))?,
            ),
            None => None,
        };
        result?;
        Ok((samples?, spin_facts))
    })
}

impl Benchmark for IdleWakeup {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("pause_ms".into(), json!(PAUSE.as_millis() as u64));
        m
    }

    /// A run is its run time of wake-ups (each a pause apart), half idle and half busy.
    fn estimate_s(&self, e: &Estimate) -> f64 {
        e.timed(0.05)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let (waker, target) = two_cpus()?;
        // Half the run time each, in alternating quarters.
        let per_quarter =
            ((ctx.run_time.as_secs_f64() / 4.0) / PAUSE.as_secs_f64()).max(5.0) as usize;
        let (mut idle, mut busy) = (Vec::new(), Vec::new());
        let mut spinner = None;
        for q in 0..4 {
            let spin = q % 2 == 1;
            let (s, f) = wakeups(waker, target, per_quarter, spin, ctx)?;
            if spin {
                busy.extend(s);
                spinner = spinner.or(f);
            } else {
                idle.extend(s);
            }
        }
        if idle.is_empty() || busy.is_empty() {
            return Err(BenchError::failed("no wake-up was measured"));
        }
        let exit = crate::stats::median(&idle) - crate::stats::median(&busy);
        let mut out = RunOutput::default()
            .fact("waker_cpu", waker)
            .fact("target_cpu", target);
        if let Some(f) = spinner {
            out = out.fact("spinner", Value::Object(f));
        }
        Ok(out
            .metric("idle", idle)
            .metric("busy", busy)
            .metric("idle_exit", vec![exit])
            .difference("idle_exit"))
    }

    /// `idle_exit` ≤ 0 in some run: said as what it is (the idle wake-up was not slower), not as
    /// a subtracted overhead that exceeded the measurement.
    fn finish(&self, runs: &mut [RunOutput]) -> Map<String, Value> {
        if let Some(note) = idle_exit_note(runs)
            && let Some(first) = runs.first_mut()
        {
            first.warnings.push(note);
        }
        Map::new()
    }
}

/// Idle-exit cost from which `system check` warns: at 10 µs it is a quarter or more of the
/// wake-up and round-trip figures osgauge measures on a quiet machine (timer wake-up p50, TCP
/// round trip, audio period start: tens of µs), so those would mostly measure leaving idle.
pub const DOMINATES_NS: f64 = 10_000.0;

/// A short measurement for `system check`: one run of `run_time` (half idle, half busy), as
/// (idle median, busy median, idle_exit) ns. Err: why it could not be measured here.
pub fn quick_measure(run_time: Duration) -> Result<(f64, f64, f64), String> {
    let timing = crate::timing::calibrate();
    let cancel = AtomicBool::new(false);
    let ctx = RunContext::new(
        0,
        false,
        run_time,
        std::time::Instant::now() + run_time * 4 + Duration::from_secs(5),
        &timing,
        &cancel,
    );
    let out = IdleWakeup::new().run(&ctx).map_err(|e| e.to_string())?;
    let get = |n: &str| {
        out.samples
            .iter()
            .find(|s| s.0 == n)
            .map(|s| crate::stats::median(&s.1))
    };
    match (get("idle"), get("busy"), get("idle_exit")) {
        (Some(i), Some(b), Some(x)) => Ok((i, b, x)),
        _ => Err("no wake-up was measured".into()),
    }
}

/// The `system check` finding for a measured idle exit: a warning from [`DOMINATES_NS`], else
/// information.
pub fn finding(
    idle_ns: f64,
    busy_ns: f64,
    exit_ns: f64,
    run_time: Duration,
) -> crate::system::Finding {
    use crate::units::format_time_ns;
    let measured = format!(
        "waking a thread on an idle CPU costs {} more than on a busy one (idle {}, busy {}; \
         difference of the medians, {} ms measured)",
        format_time_ns(exit_ns.max(0.0)),
        format_time_ns(idle_ns),
        format_time_ns(busy_ns),
        run_time.as_millis()
    );
    if exit_ns >= DOMINATES_NS {
        crate::system::Finding {
            level: crate::system::Level::Warning,
            topic: "idle_wakeup".into(),
            message: format!(
                "{measured}: at least {} it dominates wake-up and round-trip figures (timer \
                 wake-up, TCP round trip, audio and video periods), which can then be lower \
                 under load than on an idle machine",
                format_time_ns(DOMINATES_NS)
            ),
            fix: Some(
                "limit idle states while measuring (osgauge latency --cpu-dma-latency 0, or \
                 the kernel's idle= / cpuidle settings; on a VM the host's halt polling), or \
                 compare only runs made under the same idle conditions"
                    .into(),
            ),
        }
    } else {
        crate::system::Finding {
            level: crate::system::Level::Info,
            topic: "idle_wakeup".into(),
            message: measured,
            fix: None,
        }
    }
}

/// The note for runs whose `idle_exit` (median idle − median busy) is ≤ 0, if any.
fn idle_exit_note(runs: &[RunOutput]) -> Option<String> {
    let exits: Vec<f64> = runs
        .iter()
        .filter_map(|o| o.samples.iter().find(|s| s.0 == "idle_exit"))
        .flat_map(|s| s.1.iter().copied())
        .collect();
    let at_most_zero = exits.iter().filter(|&&e| e <= 0.0).count();
    (at_most_zero > 0).then(|| {
        format!(
            "idle_exit: {at_most_zero} of {} run(s) ≤ 0 — idle_exit is the difference of two \
             medians (idle − busy wake-up), and there the wake-up on an idle CPU was not slower \
             than on a busy one: leaving an idle state costs nothing measurable here (no deep \
             idle state, idle polling, or within the runs' spread); not a measurement error",
            exits.len()
        )
    })
}

/// How long the idle-exit cost is measured after a run that has wake-up figures but no
/// latency/idle_wakeup of its own.
pub const IDLE_EXIT_AFTER: std::time::Duration = std::time::Duration::from_millis(400);

/// The suite's notes on a run (the registry's `RunNotes`): per record, [`idle_wakeup_note`]; when
/// a record needs it ([`needs_idle_exit`]) and the run was not interrupted, the idle exit is
/// measured once, for [`IDLE_EXIT_AFTER`], after the run.
pub fn run_notes(records: &[RunRecord], interrupted: bool) -> Vec<Option<String>> {
    let after = (!interrupted && records.iter().any(needs_idle_exit))
        .then(|| quick_measure(IDLE_EXIT_AFTER).ok().map(|m| m.2))
        .flatten();
    records.iter().map(|r| idle_wakeup_note(r, after)).collect()
}

/// The record holds a figure an idle exit can dominate but no latency/idle_wakeup result.
pub fn needs_idle_exit(record: &RunRecord) -> bool {
    record.benchmark("latency/idle_wakeup").is_none()
        && WAKEUP_BOUND
            .iter()
            .any(|(b, _)| record.benchmark(b).is_some_and(|r| r.error.is_none()))
}

/// The figures an idle wake-up can dominate: (benchmark, metric) of wake-up and round-trip
/// latencies.
const WAKEUP_BOUND: &[(&str, &str)] = &[
    ("net/tcp_rtt_64b", "rtt_p50_us"),
    ("net/tcp_rtt_1b", "rtt_p50_us"),
    ("latency/wakeup", "latency"),
    ("interactivity/audio/none", "latency"),
    ("interactivity/video/none", "latency"),
];

/// When waking an idle CPU (latency/idle_wakeup's `idle_exit`) is at least a quarter of a
/// wake-up or round-trip figure of the same run, say so: those figures then measure mostly the
/// idle exit (on a VM, the host's halt exit), and can be lower under load than idle. Without
/// latency/idle_wakeup in the record, `after` is the idle exit measured briefly after the run.
pub fn idle_wakeup_note(record: &RunRecord, after: Option<f64>) -> Option<String> {
    let center_ns = |b: &str, m: &str| -> Option<f64> {
        let m = record.benchmark(b)?.metrics.iter().find(|x| x.name == m)?;
        let c = m.summary.as_ref()?.center;
        Some(match m.unit {
            crate::units::Unit::Microseconds => c * 1e3,
            _ => c,
        })
    };
    let (exit, source) = match center_ns("latency/idle_wakeup", "idle_exit") {
        Some(x) => (x, "latency/idle_wakeup idle_exit".to_string()),
        None => (
            after?,
            format!(
                "measured for {} ms after the run",
                IDLE_EXIT_AFTER.as_millis()
            ),
        ),
    };
    if exit <= 0.0 {
        return None;
    }
    let hit: Vec<String> = WAKEUP_BOUND
        .iter()
        .filter_map(|(b, m)| {
            let v = center_ns(b, m)?;
            (v > 0.0 && exit >= 0.25 * v).then(|| format!("{b} ({:.0} %)", 100.0 * exit / v))
        })
        .collect();
    (!hit.is_empty()).then(|| {
        format!(
            "idle wake-up: waking an idle CPU costs {} here ({source}), at least a quarter \
             of {}: these figures largely measure leaving an idle state (on a VM, \
             the host's halt exit) and can be lower under load than on an idle machine",
            crate::units::format_time_ns(exit),
            hit.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_idle_exit_that_dominates_is_a_warning_with_its_figures() {
        let t = Duration::from_millis(400);
        let w = finding(52_000.0, 14_000.0, 38_000.0, t);
        assert_eq!(w.level, crate::system::Level::Warning);
        assert!(
            w.message.contains("38") && w.message.contains("400 ms"),
            "{}",
            w.message
        );
        assert!(w.fix.is_some());
        let i = finding(6_000.0, 4_000.0, 2_000.0, t);
        assert_eq!(i.level, crate::system::Level::Info);
        // A difference ≤ 0 is shown as no extra cost, never as a negative time.
        let z = finding(4_000.0, 5_000.0, -1_000.0, t);
        assert_eq!(z.level, crate::system::Level::Info);
        assert!(!z.message.contains('-'), "{}", z.message);
    }

    #[test]
    fn an_idle_exit_at_or_below_zero_is_stated_as_a_difference_of_medians() {
        let run = |e: f64| RunOutput::default().metric("idle_exit", vec![e]);
        assert_eq!(idle_exit_note(&[run(3000.0), run(10.0)]), None);
        let n = idle_exit_note(&[run(3000.0), run(0.0), run(-250.0)]).unwrap();
        assert!(n.starts_with("idle_exit: 2 of 3 run(s) ≤ 0"), "{n}");
        assert!(n.contains("difference of two medians"), "{n}");
        let mut runs = vec![run(-1.0), run(-2.0)];
        IdleWakeup::new().finish(&mut runs);
        assert_eq!(runs[0].warnings.len(), 1);
        assert!(runs[1].warnings.is_empty());
    }

    /// Why the benchmark must refuse on this machine, decided before it runs: one CPU for this
    /// process, or no lowest-priority class for a thread (probed on a scratch thread, the way
    /// the benchmark's spinner asks for it). None: it must measure.
    fn expected_refusal() -> Option<String> {
        let cpus = crate::platform::allowed_cpus().unwrap();
        let [_, target, ..] = cpus.as_slice() else {
            return Some("needs two CPUs".to_string());
        };
        let target = *target;
        let idle = SchedRequest {
            policy: Some(Policy::Idle),
            ..Default::default()
        };
        std::thread::spawn(move || place_thread(target, &idle, None))
            .join()
            .unwrap()
            .err()
            .map(|_| "a lowest-priority spinner could not be set up".to_string())
    }

    #[test]
    fn a_short_run_measures_both_halves_or_says_why_not() {
        let refusal = expected_refusal();
        // SCHED_IDLE needs no privilege on Linux: only one CPU may make it refuse there.
        if cfg!(target_os = "linux") {
            assert!(
                refusal.is_none() || crate::platform::allowed_cpus().unwrap().len() < 2,
                "{refusal:?}"
            );
        }
        let b = IdleWakeup::new();
        let timing = crate::timing::calibrate();
        let cancel = AtomicBool::new(false);
        let ctx = RunContext::new(
            0,
            false,
            Duration::from_millis(80),
            Instant::now() + Duration::from_secs(20),
            &timing,
            &cancel,
        );
        let before = crate::platform::current_thread_affinity().unwrap();
        let r = b.run(&ctx);
        // The caller (the runner's thread) is never pinned by the benchmark.
        assert_eq!(crate::platform::current_thread_affinity().unwrap(), before);
        match r {
            Ok(out) => {
                assert_eq!(refusal, None, "measured although it should have refused");
                let get = |n: &str| out.samples.iter().find(|s| s.0 == n).unwrap().1.clone();
                let (idle, busy) = (get("idle"), get("busy"));
                // Each half is two quarters of max(20 ms / PAUSE, 5) wake-ups; on a loaded
                // machine the wakee can sleep through a wake-up (two generations between its
                // looks count once), so a half has at least one sample and never more than it
                // was sent — never a fixed count.
                let sent = 2 * ((0.020 / PAUSE.as_secs_f64()).max(5.0) as usize);
                for (half, v) in [("idle", &idle), ("busy", &busy)] {
                    assert!(
                        !v.is_empty() && v.len() <= sent,
                        "{half}: {} samples of {sent} wake-ups",
                        v.len()
                    );
                }
                let exit = get("idle_exit")[0];
                let want = crate::stats::median(&idle) - crate::stats::median(&busy);
                assert_eq!(exit, want);
                if cfg!(target_os = "linux") {
                    assert_eq!(out.facts["spinner"]["sched"]["policy"], "idle");
                }
            }
            Err(e) => {
                // Refused exactly where the machine does not allow it, saying why.
                let why =
                    refusal.unwrap_or_else(|| panic!("refused on a machine that allows it: {e}"));
                assert_eq!(e.kind, crate::record::ErrorKind::Unsupported, "{e}");
                assert!(e.message.contains(&why), "{e} (expected: {why})");
            }
        }
    }
}
