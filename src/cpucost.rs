//! The CPU cost of I/O: system-wide CPU time used during a test minus an idle baseline measured
//! just before it (netperf's *service demand*), and this process's own CPU beside it. One helper
//! for every suite that reports a CPU cost (network service demand, file-system CPU per GB); the
//! application model consumes the figures.
//!
//! Method: sample every CPU's cumulative busy and total time ([`platform::cputime`]) and this
//! process's user + system time, (1) over an idle window before the test — the *baseline* busy
//! rate in CPUs, i.e. what the rest of the machine was doing anyway — and (2) over the test itself.
//! The net cost is `busy_during − baseline_rate × test_wall`, never below zero. Both figures are
//! kept, so a reader can see how much of a cost was background.
//!
//! [`platform::cputime`]: crate::platform::cputime

use crate::platform::cputime::{self, SystemCpu};
use serde::{Deserialize, Serialize};
use std::io;
use std::time::{Duration, Instant};

/// One reading of the counters.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    pub at: Instant,
    pub system: SystemCpu,
    pub process_ns: u64,
}

impl CpuSample {
    pub fn now() -> io::Result<CpuSample> {
        Ok(CpuSample {
            at: Instant::now(),
            system: cputime::system_cpu()?,
            process_ns: cputime::process_cpu_ns()?,
        })
    }
}

/// Busy CPUs and wall time between two samples (pure).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub wall_s: f64,
    /// System-wide busy CPU-seconds in the window.
    pub busy_cpu_s: f64,
    /// System-wide CPU-seconds available in the window (busy + idle over all CPUs).
    pub total_cpu_s: f64,
    /// This process's CPU-seconds in the window.
    pub process_cpu_s: f64,
}

impl Window {
    pub fn between(a: &CpuSample, b: &CpuSample) -> Window {
        Window {
            wall_s: b.at.saturating_duration_since(a.at).as_secs_f64(),
            busy_cpu_s: b.system.busy_ns.saturating_sub(a.system.busy_ns) as f64 / 1e9,
            total_cpu_s: b.system.total_ns.saturating_sub(a.system.total_ns) as f64 / 1e9,
            process_cpu_s: b.process_ns.saturating_sub(a.process_ns) as f64 / 1e9,
        }
    }

    /// Average busy CPUs over the window (0 when the window is empty).
    pub fn busy_cpus(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.busy_cpu_s / self.wall_s
        } else {
            0.0
        }
    }
}

/// The CPU cost of one test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuCost {
    /// The idle window before the test.
    pub baseline: Window,
    /// The test itself.
    pub test: Window,
    /// System-wide busy CPU-seconds during the test minus the baseline rate × test wall, ≥ 0.
    pub net_cpu_s: f64,
    /// This process's CPU-seconds during the test (user + system), not baseline-corrected.
    pub process_cpu_s: f64,
    /// The largest error the system counters' granularity can put on `net_cpu_s`: one counter
    /// step per CPU ([`cputime::system_cpu_resolution_s`] × CPUs). 0 when unknown (a peer of an
    /// older version): no resolution check then.
    #[serde(default)]
    pub resolution_cpu_s: f64,
}

impl CpuCost {
    /// Pure: the cost from a baseline window and a test window.
    pub fn from_windows(baseline: Window, test: Window) -> CpuCost {
        let background = baseline.busy_cpus() * test.wall_s;
        CpuCost {
            baseline,
            test,
            net_cpu_s: (test.busy_cpu_s - background).max(0.0),
            process_cpu_s: test.process_cpu_s,
            resolution_cpu_s: 0.0,
        }
    }

    /// The same cost, knowing the counters' resolution: `per_cpu_s` per CPU step, over as many
    /// CPUs as the test window saw.
    pub fn with_resolution(mut self, per_cpu_s: f64) -> CpuCost {
        let cpus = if self.test.wall_s > 0.0 {
            (self.test.total_cpu_s / self.test.wall_s).round()
        } else {
            0.0
        };
        self.resolution_cpu_s = per_cpu_s * cpus.max(1.0);
        self
    }

    /// Net system CPU as a percentage of all CPUs over the test.
    pub fn pct_all_cpus(&self) -> f64 {
        if self.test.total_cpu_s > 0.0 {
            100.0 * self.net_cpu_s / self.test.total_cpu_s
        } else {
            0.0
        }
    }

    /// Service demand: µs of net system CPU per KiB (1024 bytes) moved; None for no bytes.
    pub fn us_per_kib(&self, bytes: u64) -> Option<f64> {
        (bytes > 0).then(|| self.net_cpu_s * 1e6 / (bytes as f64 / 1024.0))
    }

    /// This process's µs of CPU per KiB moved; None for no bytes.
    pub fn process_us_per_kib(&self, bytes: u64) -> Option<f64> {
        (bytes > 0).then(|| self.process_cpu_s * 1e6 / (bytes as f64 / 1024.0))
    }

    /// Net system CPU-seconds per GB (10^9 bytes) moved; None for no bytes.
    pub fn cpu_s_per_gb(&self, bytes: u64) -> Option<f64> {
        (bytes > 0).then(|| self.net_cpu_s / (bytes as f64 / 1e9))
    }
}

/// Above this share of all CPUs busy in the idle baseline, a system-wide cost net of it means
/// nothing (the test cannot use more than what is left): the cost is not measured.
pub const MAX_BASELINE_SHARE: f64 = 0.5;

/// A net cost below this many counter steps (one step per CPU) is not measured: its error could
/// exceed 1/this (10 %). A coarse counter (USER_HZ ticks of 10 ms) once turned a short file
/// write's cost into a plain 0 CPU·s/GB.
pub const MIN_RESOLUTION_STEPS: f64 = 10.0;

impl CpuCost {
    /// Why the system-wide net cost is meaningless for this test (a baseline that already used
    /// over [`MAX_BASELINE_SHARE`] of all CPUs), or Ok.
    pub fn usable(&self) -> Result<(), String> {
        let b = &self.baseline;
        if self.baseline_busy() {
            return Err(format!(
                "machine busy: the idle baseline already used {:.2} of {:.0} CPUs, so the \
                 system-wide cost net of it is meaningless (process-only figure beside it)",
                b.busy_cpus(),
                self.baseline_cpus()
            ));
        }
        let floor = self.floor_cpu_s();
        if self.below_resolution() {
            return Err(format!(
                "below the counters' resolution: the test's net CPU was {:.1} ms, and the system \
                 counters step by {:.1} ms over all CPUs, so at least {:.0} ms is needed for a \
                 figure within 10 %; move more bytes (a larger size or a longer run)",
                self.net_cpu_s * 1e3,
                self.resolution_cpu_s * 1e3,
                floor * 1e3
            ));
        }
        Ok(())
    }

    /// Service demand in µs per KiB, or why it is not measured (busy baseline, no bytes).
    pub fn checked_us_per_kib(&self, bytes: u64) -> Result<f64, String> {
        self.usable()?;
        self.us_per_kib(bytes)
            .ok_or_else(|| "no bytes moved".to_string())
    }

    /// CPU-seconds per GB, or why it is not measured (busy baseline, no bytes).
    pub fn checked_cpu_s_per_gb(&self, bytes: u64) -> Result<f64, String> {
        self.usable()?;
        self.cpu_s_per_gb(bytes)
            .ok_or_else(|| "no bytes moved".to_string())
    }
}

/// A window is extended until its net CPU reaches this many times the resolution floor
/// ([`MIN_RESOLUTION_STEPS`] counter steps): the margin keeps a window that stops just past the
/// floor from reading below it in its final sample.
pub const EXTEND_MARGIN: f64 = 1.25;

impl CpuCost {
    /// CPUs the baseline window saw (0 for an empty window).
    fn baseline_cpus(&self) -> f64 {
        let b = &self.baseline;
        if b.wall_s > 0.0 {
            b.total_cpu_s / b.wall_s
        } else {
            0.0
        }
    }

    /// The idle baseline already used over [`MAX_BASELINE_SHARE`] of all CPUs.
    pub fn baseline_busy(&self) -> bool {
        let cpus = self.baseline_cpus();
        cpus > 0.0 && self.baseline.busy_cpus() > MAX_BASELINE_SHARE * cpus
    }

    /// The least net CPU a measured cost needs: [`MIN_RESOLUTION_STEPS`] counter steps (0 when
    /// the resolution is unknown).
    fn floor_cpu_s(&self) -> f64 {
        MIN_RESOLUTION_STEPS * self.resolution_cpu_s
    }

    /// The net CPU is under the floor: not measured, "below the counters' resolution".
    pub fn below_resolution(&self) -> bool {
        self.net_cpu_s < self.floor_cpu_s()
    }

    /// Whether more of the same work in this window would turn a cost below the counters'
    /// resolution into a measured one: the baseline was quiet, the resolution is known, and the
    /// net CPU is still under [`EXTEND_MARGIN`] × the floor.
    pub fn wants_more(&self) -> bool {
        let floor = self.floor_cpu_s();
        !self.baseline_busy() && floor > 0.0 && self.net_cpu_s < EXTEND_MARGIN * floor
    }
}

/// How long a benchmark may extend a CPU-cost window past its timed part (repeating the same
/// work, for the cost only): 10 × the run's measuring time, at least 1 s.
pub fn max_extension(run_time: Duration) -> Duration {
    (run_time * 10).max(Duration::from_secs(1))
}

/// Until when a window that ends its timed part `now` may be extended: [`max_extension`], but
/// never past half the time left before the benchmark's `deadline` shared among the
/// `windows_left` windows still to come (this one included), so that extending never makes a
/// later run time out (the default deadline has room for them: `cli`'s default `--timeout`).
pub fn extend_until(
    now: Instant,
    run_time: Duration,
    deadline: Instant,
    windows_left: u32,
) -> Instant {
    let share = deadline.saturating_duration_since(now) / (2 * windows_left.max(1));
    now + max_extension(run_time).min(share)
}

/// Measures the idle baseline, then a test.
pub struct CpuMeter {
    baseline: Window,
    start: CpuSample,
}

/// How the cost is measured, for a benchmark's method text.
pub fn method() -> String {
    format!(
        "system-wide CPU during the test minus an idle baseline measured just before it \
         (service demand); a window with less net CPU than 12.5 counter steps is extended over \
         more of the same work (TCP streams send on; file passes repeat, except at the quick preset; paced UDP streams do not) for up to 10 × the run \
         time (at least 1 s), and one still under 10 steps is not measured; system counters: {}; \
         this process's own CPU beside it: {}",
        cputime::SYSTEM_CPU_SOURCE,
        cputime::PROCESS_CPU_SOURCE
    )
}

impl CpuMeter {
    /// Measures the baseline by sleeping `idle` (the caller must be doing nothing meanwhile), then
    /// starts the test window.
    pub fn start(idle: Duration) -> io::Result<CpuMeter> {
        let a = CpuSample::now()?;
        std::thread::sleep(idle);
        let b = CpuSample::now()?;
        Ok(CpuMeter {
            baseline: Window::between(&a, &b),
            start: b,
        })
    }

    /// Restarts the test window now, keeping the baseline (for setup done after `start`).
    pub fn restart(&mut self) -> io::Result<()> {
        self.start = CpuSample::now()?;
        Ok(())
    }

    /// Ends the test window.
    pub fn stop(&self) -> io::Result<CpuCost> {
        let end = CpuSample::now()?;
        Ok(
            CpuCost::from_windows(self.baseline, Window::between(&self.start, &end))
                .with_resolution(cputime::system_cpu_resolution_s()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(wall: f64, busy: f64, total: f64, proc_: f64) -> Window {
        Window {
            wall_s: wall,
            busy_cpu_s: busy,
            total_cpu_s: total,
            process_cpu_s: proc_,
        }
    }

    #[test]
    fn baseline_rate_is_subtracted_and_demand_is_per_kib() {
        // Background 0.1 CPUs; a 2 s test used 1.0 busy CPU-s on 2 CPUs (4 CPU-s available).
        let c = CpuCost::from_windows(w(0.5, 0.05, 1.0, 0.0), w(2.0, 1.0, 4.0, 0.6));
        assert!((c.net_cpu_s - 0.8).abs() < 1e-12);
        assert!((c.pct_all_cpus() - 20.0).abs() < 1e-9);
        // 1 GiB moved: 0.8 s / 1,048,576 KiB.
        let d = c.us_per_kib(1 << 30).unwrap();
        assert!((d - 0.8e6 / 1_048_576.0).abs() < 1e-9);
        assert!((c.process_us_per_kib(1 << 30).unwrap() - 0.6e6 / 1_048_576.0).abs() < 1e-9);
        assert!((c.cpu_s_per_gb(2_000_000_000).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(c.us_per_kib(0), None);
    }

    #[test]
    fn busier_baseline_than_test_is_zero_not_negative() {
        let c = CpuCost::from_windows(w(1.0, 1.5, 2.0, 0.0), w(1.0, 0.2, 2.0, 0.1));
        assert_eq!(c.net_cpu_s, 0.0);
        assert_eq!(w(0.0, 1.0, 0.0, 0.0).busy_cpus(), 0.0);
    }

    #[test]
    fn a_cost_below_the_counters_resolution_is_not_measured() {
        // 2 CPUs counting in 10 ms steps: 20 ms of error, so 200 ms are needed.
        let c = CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(0.1, 0.1, 0.2, 0.05))
            .with_resolution(0.01);
        assert!((c.resolution_cpu_s - 0.02).abs() < 1e-12);
        let why = c.checked_cpu_s_per_gb(1 << 26).unwrap_err();
        assert!(why.contains("below the counters' resolution"), "{why}");
        assert!(why.contains("100.0 ms") && why.contains("200 ms"), "{why}");
        // Enough CPU: measured, and the same figure as without the check.
        let c = CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(1.0, 0.5, 2.0, 0.4))
            .with_resolution(0.01);
        assert!((c.checked_cpu_s_per_gb(1_000_000_000).unwrap() - 0.5).abs() < 1e-12);
        // Unknown resolution (an older peer's report): no check.
        let c = CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(0.1, 0.001, 0.2, 0.0));
        assert!(c.checked_cpu_s_per_gb(1 << 20).is_ok());
        // An older peer's JSON without the field still loads.
        let mut v = serde_json::to_value(c).unwrap();
        v.as_object_mut().unwrap().remove("resolution_cpu_s");
        let back: CpuCost = serde_json::from_value(v).unwrap();
        assert_eq!(back.resolution_cpu_s, 0.0);
    }

    #[test]
    fn a_window_wants_more_work_only_while_below_the_floor_on_a_quiet_machine() {
        // 2 CPUs in 10 ms steps: floor 200 ms, extended to 250 ms.
        let cost = |net: f64| {
            CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(1.0, net, 2.0, 0.0))
                .with_resolution(0.01)
        };
        assert!(cost(0.1).wants_more());
        assert!(cost(0.21).wants_more(), "measured, but within the margin");
        assert!(!cost(0.26).wants_more());
        // A busy baseline: more work cannot help.
        let busy = CpuCost::from_windows(w(1.0, 1.5, 2.0, 0.0), w(1.0, 1.6, 2.0, 0.0))
            .with_resolution(0.01);
        assert!(!busy.wants_more());
        // Unknown resolution: nothing to reach.
        assert!(!CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(1.0, 0.0, 2.0, 0.0)).wants_more());
        assert_eq!(
            max_extension(Duration::from_millis(100)),
            Duration::from_secs(1)
        );
        assert_eq!(
            max_extension(Duration::from_millis(300)),
            Duration::from_secs(3)
        );
        let now = Instant::now();
        let far = now + Duration::from_secs(100);
        let run = Duration::from_millis(100);
        assert_eq!(extend_until(now, run, far, 1), now + Duration::from_secs(1));
        // 1 s left: half of it for the last window, a quarter each for two.
        let near = now + Duration::from_secs(1);
        assert_eq!(
            extend_until(now, run, near, 1),
            now + Duration::from_millis(500)
        );
        assert_eq!(
            extend_until(now, run, near, 2),
            now + Duration::from_millis(250)
        );
        assert_eq!(
            extend_until(now, run, near, 0),
            now + Duration::from_millis(500)
        );
        assert_eq!(extend_until(now, run, now, 1), now);
    }

    #[test]
    fn a_busy_baseline_makes_the_cost_unusable() {
        let quiet = CpuCost::from_windows(w(1.0, 0.1, 2.0, 0.0), w(1.0, 0.6, 2.0, 0.1));
        assert!((quiet.checked_us_per_kib(1024 * 1000).unwrap() - 500.0).abs() < 1e-9);
        assert_eq!(quiet.checked_cpu_s_per_gb(0).unwrap_err(), "no bytes moved");
        let busy = CpuCost::from_windows(w(1.0, 1.5, 2.0, 0.0), w(1.0, 2.0, 2.0, 0.1));
        assert!(
            busy.checked_us_per_kib(1024)
                .unwrap_err()
                .contains("machine busy")
        );
        assert!(
            busy.checked_cpu_s_per_gb(1 << 30)
                .unwrap_err()
                .contains("1.50 of 2 CPUs")
        );
    }

    #[test]
    fn meter_sees_this_process_spinning() {
        let m = CpuMeter::start(Duration::from_millis(50)).unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(120) {
            std::hint::black_box(0u64);
        }
        let c = m.stop().unwrap();
        assert!(c.test.wall_s >= 0.12);
        assert!(c.process_cpu_s > 0.0, "{c:?}");
        assert!(c.test.busy_cpu_s <= c.test.total_cpu_s + 1e-9);
    }
}
