//! `latency/wakeup`: timer wake-up latency per CPU, cyclictest's measurement. One thread per
//! measured CPU, pinned and read back, sleeps to absolute times `start + k × interval` on the
//! monotonic clock; its latency is the clock read right after the sleep returns minus the intended
//! wake-up time.

use serde_json::{Map, Value, json};

use super::{
    Facts, LatencyOptions, cell_id, cell_info, cpu_metric, load_params, on_each_cpu, place_thread,
    start_load, stop_load, thread_facts,
};
use crate::bench::{Benchmark, Estimate, Info, MetricSpec, RunOutput};
use crate::platform::clock::{now_ns, sleep_until_ns};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};
use crate::workload::load::LoadKind;

pub struct Wakeup {
    info: Info,
    opts: LatencyOptions,
    cpus: Vec<usize>,
    /// The load beside the measurement.
    load: LoadKind,
}

/// What one CPU's thread measured in a run.
#[derive(Debug, Default)]
pub struct PerCpu {
    pub latencies_ns: Vec<f64>,
    /// Wake-ups at or above the attribution threshold (when tracing).
    pub late: Vec<crate::attribution::Late>,
    /// Periods that had already passed when the thread woke (skipped, not measured twice).
    pub missed: u64,
}

/// The next intended wake-up after a wake at `now`: the first period boundary after `next` that
/// has not passed yet (a wake-up later than a whole period skips the passed ones; the run counts
/// them as missed periods from its period count).
pub fn advance(next: u64, interval: u64, now: u64) -> u64 {
    let n = next + interval;
    if n > now {
        n
    } else {
        n + ((now - n) / interval + 1) * interval
    }
}

impl Wakeup {
    /// The same measurement without tracing, beside a traced one (`--attribute`): what tracing
    /// costs, p50 and p99, under the same settings.
    pub fn untraced(opts: &LatencyOptions, cpus: &[usize], load: LoadKind) -> Wakeup {
        let mut o = opts.clone();
        o.attribute_ns = None;
        let mut w = Wakeup::new(&o, cpus, load);
        w.info.id = cell_id("latency/wakeup_untraced", load);
        w.info.title = format!("{} — untraced, beside the traced run", w.info.title);
        w
    }

    pub fn new(opts: &LatencyOptions, cpus: &[usize], load: LoadKind) -> Wakeup {
        let mut metrics = vec![
            MetricSpec {
                name: "latency",
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "wake-up latency of every thread (actual − intended wake), all CPUs; a run's median is its p50",
            },
            MetricSpec {
                name: "latency_p99",
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "99th percentile of the run's wake-up latencies, all CPUs",
            },
            MetricSpec {
                name: "latency_p999",
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "99.9th percentile of the run's wake-up latencies, all CPUs",
            },
            MetricSpec {
                name: "latency_max",
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "largest wake-up latency of the run, all CPUs",
            },
            MetricSpec {
                name: "overflows",
                unit: Unit::Count,
                better: Better::Lower,
                description: "wake-ups at or above the histogram limit (cyclictest's overflows)",
            },
            MetricSpec {
                name: "missed_periods",
                unit: Unit::Count,
                better: Better::Lower,
                description: "periods that had passed when a thread woke (latency over a whole interval)",
            },
        ];
        for &c in cpus {
            metrics.push(MetricSpec {
                name: cpu_metric(c, ""),
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "wake-up latency of the thread pinned to this CPU (per run: p50, p99, p99.9, max in the record)",
            });
        }
        let interval = opts.interval;
        Wakeup {
            info: cell_info(
                "latency/wakeup",
                format!(
                    "Timer wake-up latency per CPU ({} period){}",
                    crate::units::format_time_ns(interval.as_nanos() as f64),
                    match opts.attribute_ns {
                        Some(a) => format!(
                            ", traced for attribution (spikes ≥ {}): tracing costs, see \
                             latency/wakeup_untraced",
                            crate::units::format_time_ns(a as f64)
                        ),
                        None => String::new(),
                    }
                ),
                format!(
                    "cyclictest's measurement: one thread per measured CPU (--cpus, default every \
                     CPU the run may use), pinned and read back, with the asked policy, priority \
                     and nice applied and read back (a refused policy fails the benchmark) and \
                     timer slack set to {} ns and read back (cyclictest leaves SCHED_OTHER threads \
                     the default 50 µs). Each thread sleeps to absolute times start + k × interval \
                     on the monotonic clock (clock_nanosleep TIMER_ABSTIME on Linux, \
                     mach_wait_until on macOS, a high-resolution waitable timer on Windows); its \
                     latency is the clock read right after the sleep returns minus the intended \
                     time (the one clock read, ~20 ns, is not subtracted, as in cyclictest). \
                     cyclictest also holds a CPU DMA-latency request of 0 µs (no deep idle \
                     states) by default; osgauge only with --cpu-dma-latency (read back as \
                     cpu_dma_latency_in_force_us), so by default it includes idle exits. A \
                     wake-up later than a whole period skips the passed periods (missed_periods) \
                     rather than measuring them twice. Per run: every latency of all CPUs \
                     (latency: the run's median is its p50), the run's p99, p99.9 and max, \
                     overflows at or above {} µs, and per CPU its own latencies. Runs are the \
                     unit of the CI.",
                    opts.timer_slack_ns, opts.histogram_limit_us,
                ),
                metrics,
                load,
            ),
            opts: opts.clone(),
            cpus: cpus.to_vec(),
            load,
        }
    }

    /// One CPU's thread: place it, then sleep and measure until the run time is up.
    fn measure_cpu(&self, cpu: usize, ctx: &RunContext) -> Result<(PerCpu, Facts), BenchError> {
        let facts = place_thread(cpu, &self.opts.sched, Some(self.opts.timer_slack_ns))?;
        let interval = self.opts.interval.as_nanos() as u64;
        let periods = (ctx.run_time.as_nanos() as u64 / interval).max(1);
        let mut out = PerCpu {
            latencies_ns: Vec::with_capacity(periods as usize),
            late: Vec::new(),
            missed: 0,
        };
        let tid = crate::platform::tracefs::current_tid();
        let start = now_ns() + interval;
        let end = start + periods * interval;
        let mut next = start;
        while next < end {
            sleep_until_ns(next).map_err(|e| crate::bench::os_err("sleep until", e))?;
            let now = now_ns();
            let lat = now.saturating_sub(next);
            out.latencies_ns.push(lat as f64);
            if self.opts.attribute_ns.is_some_and(|a| lat >= a) {
                out.late.push(crate::attribution::Late {
                    cpu,
                    tid,
                    intended_ns: next,
                    actual_ns: now,
                });
            }
            next = advance(next, interval, now);
            if out.latencies_ns.len().is_multiple_of(64) {
                ctx.check()?;
            }
        }
        // The periods of the run that got no wake-up of their own (a skip at the end may pass
        // boundaries beyond the run: those are not its periods).
        out.missed = periods.saturating_sub(out.latencies_ns.len() as u64);
        Ok((out, facts))
    }
}

impl Benchmark for Wakeup {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = self.opts.params(&self.cpus);
        m.insert(
            "interval_ns".into(),
            json!(self.opts.interval.as_nanos() as u64),
        );
        m.insert(
            "timer_slack_asked_ns".into(),
            json!(self.opts.timer_slack_ns),
        );
        m.insert(
            "histogram_limit_us".into(),
            json!(self.opts.histogram_limit_us),
        );
        load_params(&mut m, self.load);
        m
    }

    /// Every CPU measures at once for the run time, after one interval.
    fn estimate_s(&self, e: &Estimate) -> f64 {
        e.timed(self.opts.interval.as_secs_f64() + crate::bench::DEFAULT_SETUP_S)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        if self.cpus.is_empty() {
            return Err(BenchError::failed("no CPU to measure on"));
        }
        let mut out = RunOutput::default();
        // The load (none by default): running before measuring starts, stopped and checked after.
        let load = start_load(self.load, &self.opts, ctx, &mut out)?;
        ctx.check()?;
        // Tracing (--attribute) runs around the measurement; a session that cannot start makes
        // the benchmark unsupported here, with the reason — never measured untraced instead.
        let mut session = match self.opts.attribute_ns {
            Some(_) => Some(
                crate::platform::tracefs::Session::start(&self.cpus)
                    .map_err(|why| BenchError::unsupported(format!("--attribute: {why}")))?,
            ),
            None => None,
        };
        // A PM QoS request (--cpu-dma-latency) held while measuring; refused: unsupported here.
        let qos = match self.opts.cpu_dma_latency_us {
            Some(us) => Some(
                crate::platform::pmqos::DmaLatency::hold(us)
                    .map_err(|why| BenchError::unsupported(format!("--cpu-dma-latency: {why}")))?,
            ),
            None => None,
        };
        let steal_before = crate::platform::cputime::cpu_steal_ns(&self.cpus);
        let measuring = std::time::Instant::now();
        let results = on_each_cpu(&self.cpus, |c| self.measure_cpu(c, ctx))?;
        let measured_ns = measuring.elapsed().as_nanos() as u64;
        let steal_after = crate::platform::cputime::cpu_steal_ns(&self.cpus);
        let qos_in_force = qos.as_ref().map(|q| q.in_force_us);
        drop(qos);
        let trace = match session.as_mut() {
            Some(s) => Some(
                s.stop_and_read()
                    .map_err(|e| BenchError::failed(format!("--attribute: {e}")))?,
            ),
            None => None,
        };
        drop(session);
        let mut out = stop_load(load, ctx, out)?;
        let mut all = Vec::new();
        let mut missed = 0;
        let mut threads = Vec::new();
        let mut late = Vec::new();
        for (&cpu, (m, facts)) in self.cpus.iter().zip(results) {
            missed += m.missed;
            late.extend(m.late);
            all.extend_from_slice(&m.latencies_ns);
            threads.push(facts);
            out = out.metric(cpu_metric(cpu, ""), m.latencies_ns);
        }
        let limit = self.opts.histogram_limit_us as f64 * 1e3;
        let overflows = all.iter().filter(|&&v| v >= limit).count();
        let s = crate::stats::summarize(&all)
            .ok_or_else(|| BenchError::failed("no wake-up was measured"))?;
        for (k, v) in thread_facts(threads) {
            out.facts.insert(k, v);
        }
        if let Some(v) = qos_in_force {
            out.facts
                .insert("cpu_dma_latency_in_force_us".into(), json!(v));
        }
        out.facts.insert(
            "steal".into(),
            crate::attribution::steal_fact(&self.cpus, &steal_before, &steal_after, measured_ns),
        );
        if let Some((text, lost)) = trace {
            out.facts.insert(
                "attribution".into(),
                crate::attribution::summary(
                    &text,
                    lost,
                    late,
                    self.opts.attribute_ns.unwrap_or(0),
                    self.opts.attribute_top,
                    crate::platform::cputime::task_clock_excludes_steal(),
                ),
            );
        }
        Ok(out
            .metric("latency", all)
            .metric("latency_p99", vec![s.p99])
            .metric("latency_p999", vec![s.p999])
            .metric("latency_max", vec![s.max])
            .metric("overflows", vec![overflows as f64])
            .metric("missed_periods", vec![missed as f64]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;
    use std::time::Instant;

    #[test]
    fn a_late_wake_skips_the_periods_that_passed() {
        // On time: the next boundary.
        assert_eq!(advance(1000, 100, 1010), 1100);
        // Woke at 1250, past 1100 and 1200: the next is 1300.
        assert_eq!(advance(1000, 100, 1250), 1300);
        // Exactly on the next boundary: it has passed too.
        assert_eq!(advance(1000, 100, 1100), 1200);
    }

    #[test]
    fn a_short_run_measures_every_cpu_and_reads_its_placement_back() {
        let cpus = crate::platform::allowed_cpus().unwrap();
        let opts = LatencyOptions {
            interval: Duration::from_micros(500),
            ..Default::default()
        };
        let b = Wakeup::new(&opts, &cpus, LoadKind::None);
        let timing = crate::timing::calibrate();
        let cancel = AtomicBool::new(false);
        let ctx = RunContext::new(
            0,
            false,
            Duration::from_millis(50),
            Instant::now() + Duration::from_secs(10),
            &timing,
            &cancel,
        );
        let out = b.run(&ctx).unwrap();
        let get = |n: &str| out.samples.iter().find(|s| s.0 == n).unwrap().1.clone();
        let all = get("latency");
        let per_cpu: usize = cpus.iter().map(|&c| get(&format!("cpu{c}")).len()).sum();
        assert_eq!(
            all.len(),
            per_cpu,
            "every CPU's wake-ups are in the merged figure"
        );
        // 50 ms at 0.5 ms: 100 periods per CPU; no period is measured twice, and the ones
        // without a wake-up of their own are the missed ones.
        for &c in &cpus {
            let n = get(&format!("cpu{c}")).len();
            assert!(
                (1..=100).contains(&n),
                "cpu{c}: {n} wake-ups in 100 periods"
            );
        }
        let missed = get("missed_periods")[0] as usize;
        assert_eq!(all.len() + missed, 100 * cpus.len());
        assert!(all.iter().all(|&v| v >= 0.0));
        let max = get("latency_max")[0];
        assert_eq!(max, all.iter().copied().fold(0.0, f64::max));
        assert!(get("latency_p99")[0] <= max);
        let threads = out.facts["threads"].as_array().unwrap();
        assert_eq!(threads.len(), cpus.len());
        for (t, c) in threads.iter().zip(&cpus) {
            assert_eq!(t["cpu"], *c);
        }
    }
}
