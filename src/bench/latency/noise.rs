//! `latency/noise`: OS noise per CPU, osnoise's measurement made portable. One pinned thread per
//! measured CPU spins reading the monotonic clock; every gap between two consecutive reads above
//! the threshold is time the OS (interrupts, softirqs, other threads, the hypervisor) took away.

use serde_json::{Map, Value, json};

use super::{
    LatencyOptions, cell_info, cpu_metric, load_params, on_each_cpu, place_thread, start_load,
    stop_load, thread_facts,
};
use crate::bench::{Benchmark, Estimate, Info, MetricSpec, RunOutput};
use crate::platform::clock::now_ns;
use crate::platform::cpu_events::{cpu_interrupts, thread_involuntary_switches};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};
use crate::workload::load::LoadKind;

/// The threshold is never below this many times the loop's own clock-read cost.
pub const MIN_THRESHOLD_READS: u64 = 5;

pub struct Noise {
    info: Info,
    opts: LatencyOptions,
    cpus: Vec<usize>,
    /// The load beside the measurement.
    load: LoadKind,
}

/// What one CPU's loop saw.
#[derive(Debug, Default, Clone)]
pub struct Gaps {
    /// Gaps above the threshold, ns.
    pub gaps_ns: Vec<f64>,
    /// Time the loop ran, ns.
    pub runtime_ns: u64,
    /// The loop's own cost per clock read (the smallest step seen), ns.
    pub read_ns: u64,
    /// The threshold applied, ns.
    pub threshold_ns: u64,
}

impl Gaps {
    /// Share of the runtime that was noise, %.
    pub fn noise_pct(&self) -> f64 {
        100.0 * self.gaps_ns.iter().sum::<f64>() / (self.runtime_ns.max(1)) as f64
    }
    pub fn per_s(&self) -> f64 {
        self.gaps_ns.len() as f64 / (self.runtime_ns.max(1) as f64 / 1e9)
    }
    pub fn max(&self) -> f64 {
        self.gaps_ns.iter().copied().fold(0.0, f64::max)
    }
}

/// The threshold for a loop whose clock read costs `read_ns`: the asked one, raised to
/// [`MIN_THRESHOLD_READS`] reads.
pub fn threshold(asked_ns: u64, read_ns: u64) -> u64 {
    asked_ns.max(MIN_THRESHOLD_READS * read_ns)
}

/// Spin for `ns`, reading `clock`, collecting gaps above the threshold. `clock` is a parameter so
/// the detection is tested with a synthetic clock.
pub fn spin(
    ns: u64,
    asked_threshold_ns: u64,
    mut clock: impl FnMut() -> u64,
    mut check: impl FnMut() -> bool,
) -> Gaps {
    // The read cost: the smallest step over a short calibration.
    let mut read_ns = u64::MAX;
    let mut prev = clock();
    for _ in 0..10_000 {
        let t = clock();
        let d = t - prev;
        if d > 0 {
            read_ns = read_ns.min(d);
        }
        prev = t;
    }
    let read_ns = if read_ns == u64::MAX { 1 } else { read_ns };
    let thr = threshold(asked_threshold_ns, read_ns);
    let start = clock();
    let end = start + ns;
    let mut gaps = Vec::new();
    let mut prev = start;
    let mut n: u32 = 0;
    loop {
        let t = clock();
        let d = t - prev;
        if d > thr {
            gaps.push(d as f64);
        }
        prev = t;
        if t >= end {
            break;
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(1 << 16) && !check() {
            break;
        }
    }
    Gaps {
        gaps_ns: gaps,
        runtime_ns: prev - start,
        read_ns,
        threshold_ns: thr,
    }
}

impl Noise {
    pub fn new(opts: &LatencyOptions, cpus: &[usize], load: LoadKind) -> Noise {
        let mut metrics = vec![
            MetricSpec {
                name: "noise_pct",
                unit: Unit::Percent,
                better: Better::Lower,
                description: "share of the loops' runtime lost to gaps above the threshold, all CPUs",
            },
            MetricSpec {
                name: "availability_pct",
                unit: Unit::Percent,
                better: Better::Higher,
                description: "100 % − noise: the share of the runtime the loops had, all CPUs",
            },
            MetricSpec {
                name: "gaps_per_s",
                unit: Unit::OpsPerSecond,
                better: Better::Lower,
                description: "gaps above the threshold per second of runtime, per CPU (mean of the CPUs)",
            },
            MetricSpec {
                name: "gap",
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "duration of each gap above the threshold, all CPUs",
            },
            MetricSpec {
                name: "gap_max",
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "the largest single gap of the run, all CPUs",
            },
        ];
        for &c in cpus {
            metrics.push(MetricSpec {
                name: cpu_metric(c, ".noise_pct"),
                unit: Unit::Percent,
                better: Better::Lower,
                description: "noise share of this CPU's loop",
            });
            metrics.push(MetricSpec {
                name: cpu_metric(c, ".gap_max"),
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "the largest gap of this CPU's loop",
            });
        }
        Noise {
            info: cell_info(
                "latency/noise",
                "OS noise per CPU (busy loop reading the clock)".into(),
                format!(
                    "osnoise's measurement, portable: one thread per measured CPU, pinned and read \
                     back with the asked policy (a refused policy fails the benchmark), spins \
                     reading the monotonic clock for the run time. A gap between two consecutive \
                     reads above the threshold ({} ns, raised to {MIN_THRESHOLD_READS} × the \
                     loop's own read cost; both recorded per thread) is noise: time interrupts, \
                     softirqs, other threads or the hypervisor took from the loop. A gap \
                     includes one read (~20 ns). Per run: noise % of the runtime and \
                     availability (100 % − noise) over all CPUs, gaps per second (mean of the \
                     CPUs), every gap's duration, the largest gap; per CPU its noise % and \
                     largest gap. All measured CPUs are kept busy at once, as osnoise does. \
                     Per thread, over the same window: its gaps per second beside the CPU's \
                     interrupts per second (/proc/interrupts) and the thread's preemptions per \
                     second (involuntary switches) where the OS gives them — interrupts that \
                     land while the loop is preempted, or cost less than the threshold, make no \
                     gap of their own.",
                    opts.noise_threshold_ns,
                ),
                metrics,
                load,
            ),
            opts: opts.clone(),
            cpus: cpus.to_vec(),
            load,
        }
    }
}

impl Benchmark for Noise {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = self.opts.params(&self.cpus);
        m.insert(
            "threshold_asked_ns".into(),
            json!(self.opts.noise_threshold_ns),
        );
        load_params(&mut m, self.load);
        m
    }

    fn estimate_s(&self, e: &Estimate) -> f64 {
        e.timed(crate::bench::DEFAULT_SETUP_S)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        if self.cpus.is_empty() {
            return Err(BenchError::failed("no CPU to measure on"));
        }
        let ns = ctx.run_time.as_nanos() as u64;
        let thr = self.opts.noise_threshold_ns;
        let mut out = RunOutput::default();
        // The load (none by default): running before measuring starts, stopped and checked after.
        let load = start_load(self.load, &self.opts, ctx, &mut out)?;
        ctx.check()?;
        let results = on_each_cpu(&self.cpus, |c| {
            let mut facts = place_thread(c, &self.opts.sched, None)?;
            let before = (cpu_interrupts(c), thread_involuntary_switches());
            let g = spin(ns, thr, now_ns, || ctx.check().is_ok());
            let after = (cpu_interrupts(c), thread_involuntary_switches());
            ctx.check()?;
            // What can make a gap, counted over the same window: the CPU's interrupts and this
            // thread's preemptions (where the OS gives them).
            let per_s = |n: u64| n as f64 * 1e9 / g.runtime_ns.max(1) as f64;
            if let (Some(a), Some(b)) = (before.0, after.0) {
                facts.insert("interrupts_per_s".into(), json!(per_s(b.saturating_sub(a))));
            }
            if let (Some(a), Some(b)) = (before.1, after.1) {
                facts.insert(
                    "preemptions_per_s".into(),
                    json!(per_s(b.saturating_sub(a))),
                );
            }
            facts.insert("gaps_per_s".into(), json!(g.per_s()));
            Ok((g, facts))
        })?;
        let mut out = stop_load(load, ctx, out)?;
        let mut threads = Vec::new();
        let (mut all, mut lost, mut runtime, mut per_s) = (Vec::new(), 0.0, 0u64, 0.0);
        for (&cpu, (g, mut facts)) in self.cpus.iter().zip(results) {
            facts.insert("read_ns".into(), json!(g.read_ns));
            facts.insert("threshold_ns".into(), json!(g.threshold_ns));
            threads.push(facts);
            out = out
                .metric(cpu_metric(cpu, ".noise_pct"), vec![g.noise_pct()])
                .metric(cpu_metric(cpu, ".gap_max"), vec![g.max()]);
            lost += g.gaps_ns.iter().sum::<f64>();
            runtime += g.runtime_ns;
            per_s += g.per_s();
            all.extend_from_slice(&g.gaps_ns);
        }
        let noise = 100.0 * lost / runtime.max(1) as f64;
        let max = all.iter().copied().fold(0.0, f64::max);
        for (k, v) in thread_facts(threads) {
            out.facts.insert(k, v);
        }
        out = out
            .metric("noise_pct", vec![noise])
            .metric("availability_pct", vec![100.0 - noise])
            .metric("gaps_per_s", vec![per_s / self.cpus.len() as f64])
            .metric("gap_max", vec![max]);
        // No gap above the threshold: the gap distribution has no sample (said, not invented).
        Ok(if all.is_empty() {
            out.not_measured("gap", "no gap above the threshold in this run")
        } else {
            out.metric("gap", all)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_above_the_threshold_are_noise_and_the_read_cost_raises_it() {
        // A synthetic clock: 20 ns per read, with a 50 µs gap every 10 000 reads after the
        // calibration.
        let mut t = 0u64;
        let mut k = 0u64;
        let clock = || {
            k += 1;
            t += if k > 10_001 && k.is_multiple_of(10_000) {
                50_000
            } else {
                20
            };
            t
        };
        let g = spin(100_000_000, 1_000, clock, || true);
        assert_eq!(g.read_ns, 20);
        assert_eq!(g.threshold_ns, 1_000);
        assert!(!g.gaps_ns.is_empty() && g.gaps_ns.iter().all(|&d| d == 50_000.0));
        // 50 µs every 10 000 × 20 ns + 50 µs = 250 µs: 20 % noise, 4000 gaps per second.
        assert!((g.noise_pct() - 20.0).abs() < 0.5, "{}", g.noise_pct());
        assert!((g.per_s() - 4000.0).abs() < 100.0, "{}", g.per_s());
        assert_eq!(g.max(), 50_000.0);
        // A slow clock read raises the threshold to 5 reads.
        assert_eq!(threshold(1_000, 400), 2_000);
        assert_eq!(threshold(1_000, 100), 1_000);
    }

    #[test]
    fn a_cancelled_loop_stops() {
        let mut t = 0u64;
        let g = spin(
            u64::MAX / 2,
            1_000,
            || {
                t += 10;
                t
            },
            || false,
        );
        assert!(g.runtime_ns < 10_000_000, "{}", g.runtime_ns);
    }
}
