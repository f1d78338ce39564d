//! The CPU cost of I/O: system-wide CPU time used during a test minus an idle baseline measured
//! just before it (netperf's *service demand*), and this process's own CPU beside it. One helper
//! for every suite that reports a CPU cost (network service demand, file-system CPU per GB); the
//! application model consumes the figures.
//!
//! Method: sample every CPU's cumulative busy and total time ([`platform::cputime`]) and this
//! process's user + system time, (1) over an idle window before the test — the *baseline* busy
//! rate in CPUs, i.e. what the rest of the machine was doing anyway —, (2) over the test itself
//! and (3) over an idle window after it. The net cost is `busy_during − baseline_rate ×
//! test_wall`, never below zero, the rate being that of both idle windows together. Both figures
//! are kept, so a reader can see how much of a cost was background.
//!
//! Two cross-checks ([`CpuCost::cross_check`]): idle windows before and after that differ by
//! more than the counters' steps explain, by enough to move the net cost over 10 %, make it not
//! measured (the background changed under the test); a net system cost far above what this
//! process's own CPU plus the interrupt/softirq time explain is flagged with the figures.
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
    /// The part of `busy_cpu_s` spent in interrupts and softirqs (work charged to no process),
    /// where the OS splits it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_cpu_s: Option<f64>,
    /// CPU-seconds the hypervisor gave to others (in neither busy nor total), where reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_cpu_s: Option<f64>,
}

impl Window {
    pub fn between(a: &CpuSample, b: &CpuSample) -> Window {
        Window {
            wall_s: b.at.saturating_duration_since(a.at).as_secs_f64(),
            busy_cpu_s: b.system.busy_ns.saturating_sub(a.system.busy_ns) as f64 / 1e9,
            total_cpu_s: b.system.total_ns.saturating_sub(a.system.total_ns) as f64 / 1e9,
            process_cpu_s: b.process_ns.saturating_sub(a.process_ns) as f64 / 1e9,
            irq_cpu_s: match (a.system.irq_ns, b.system.irq_ns) {
                (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / 1e9),
                _ => None,
            },
            steal_cpu_s: match (a.system.steal_ns, b.system.steal_ns) {
                (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / 1e9),
                _ => None,
            },
        }
    }

    /// Average CPUs the window saw (0 when it is empty).
    pub fn cpus(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.total_cpu_s / self.wall_s
        } else {
            0.0
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
    /// The idle window after the test (None: not measured — an older peer, a meter without an
    /// idle time, or a cost read while the test still ran).
    #[serde(default)]
    pub baseline_after: Option<Window>,
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
            baseline_after: None,
            test,
            net_cpu_s: (test.busy_cpu_s - background).max(0.0),
            process_cpu_s: test.process_cpu_s,
            resolution_cpu_s: 0.0,
        }
    }

    /// Pure: the cost from idle windows before and after the test and the test window; the
    /// background rate is that of both idle windows together.
    pub fn from_windows_around(before: Window, test: Window, after: Window) -> CpuCost {
        let mut c = CpuCost::from_windows(before, test);
        c.baseline_after = Some(after);
        c.net_cpu_s = (test.busy_cpu_s - c.background_cpus() * test.wall_s).max(0.0);
        c
    }

    /// The background busy rate, CPUs: the idle windows' busy CPU-seconds over their wall time
    /// (the one before alone when there is no after window).
    pub fn background_cpus(&self) -> f64 {
        let b = &self.baseline;
        match &self.baseline_after {
            Some(a) if b.wall_s + a.wall_s > 0.0 => {
                (b.busy_cpu_s + a.busy_cpu_s) / (b.wall_s + a.wall_s)
            }
            _ => b.busy_cpus(),
        }
    }

    /// The test's interrupt + softirq CPU-seconds net of the idle windows' rate of it (None
    /// where the OS does not split it out).
    pub fn irq_net_cpu_s(&self) -> Option<f64> {
        let t = self.test.irq_cpu_s?;
        let mut busy = self.baseline.irq_cpu_s?;
        let mut wall = self.baseline.wall_s;
        if let Some(a) = &self.baseline_after {
            busy += a.irq_cpu_s?;
            wall += a.wall_s;
        }
        let rate = if wall > 0.0 { busy / wall } else { 0.0 };
        Some((t - rate * self.test.wall_s).max(0.0))
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

/// How each reason [`CpuCost::usable`] gives begins: every one is a state of the machine or of the
/// test's size (other work, a background that changed or gave way, too few counter steps), never
/// a fault of the benchmark — what a test accepts as "not measured here, said why".
pub const NOT_USABLE_REASONS: [&str; 4] = [
    "machine busy",
    "the background changed under the test",
    "background displaced",
    "below the counters' resolution",
];

/// Is `why` one of [`CpuCost::usable`]'s reasons (see [`NOT_USABLE_REASONS`])?
/// The runner's wrapper for a figure too few runs measured ("only 1 of 2 runs measured it …; the
/// others: <reason>") is looked through.
pub fn is_not_usable_reason(why: &str) -> bool {
    let why = why
        .split_once("; the others: ")
        .map_or(why, |(_, reason)| reason);
    NOT_USABLE_REASONS.iter().any(|r| why.starts_with(r))
}

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
        if let Some(why) = self.baselines_differ() {
            return Err(why);
        }
        if let Some(why) = self.displaced() {
            return Err(why);
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

/// A window that will not be extended is forecast by the same work's last window; it is skipped
/// only when even this many times the forecast could not reach the floor (a pass can take half
/// again as long from one run to the next on a busy machine).
pub const FORECAST_MARGIN: f64 = 1.5;

/// The shortest test window whose net CPU can reach the floor: a window holds at most its wall
/// time × the CPUs, and the floor is [`MIN_RESOLUTION_STEPS`] counter steps per CPU, so a window
/// shorter than that many steps of one CPU's counter (`per_cpu_step_s`) cannot be measured
/// however busy it keeps every CPU — whatever the number of CPUs.
pub fn min_measurable_window_s(per_cpu_step_s: f64) -> f64 {
    MIN_RESOLUTION_STEPS * per_cpu_step_s
}

/// Why a CPU-cost window that will not be extended cannot reach the floor, when the same work's
/// last window took `last_s` (even [`FORECAST_MARGIN`] × that is under
/// [`min_measurable_window_s`]); None when it might. The caller then measures the work without
/// the meter and its idle baselines, and says this reason instead of a figure. Pure.
pub fn cannot_reach_floor(last_s: f64, per_cpu_step_s: f64) -> Option<String> {
    let min = min_measurable_window_s(per_cpu_step_s);
    (per_cpu_step_s > 0.0 && last_s >= 0.0 && last_s * FORECAST_MARGIN < min).then(|| {
        format!(
            "below the counters' resolution: the window is not extended here (the quick preset \
             does not repeat the work), and the same work took {:.1} ms last time; a window \
             shorter than {:.0} ms ({MIN_RESOLUTION_STEPS:.0} steps of {:.0} ms per CPU) cannot \
             reach the resolution even with every CPU busy, so the CPU meter and its idle \
             baselines were not run",
            last_s * 1e3,
            min * 1e3,
            per_cpu_step_s * 1e3
        )
    })
}

/// A window is extended until its net CPU reaches this many times the resolution floor
/// ([`MIN_RESOLUTION_STEPS`] counter steps): the margin keeps a window that stops just past the
/// floor from reading below it in its final sample.
pub const EXTEND_MARGIN: f64 = 1.25;

impl CpuCost {
    /// CPUs the baseline window saw (0 for an empty window).
    fn baseline_cpus(&self) -> f64 {
        self.baseline.cpus()
    }

    /// The idle baseline before the test already used over [`MAX_BASELINE_SHARE`] of all CPUs.
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
        !self.baseline_busy()
            && self.displaced().is_none()
            && floor > 0.0
            && self.net_cpu_s < EXTEND_MARGIN * floor
    }

    /// Whether the net CPU could still reach the floor if the same work went on for `left_s`
    /// more seconds at the rate seen so far, counted generously (the net so far plus two counter
    /// steps, which the counters may not have taken yet). A window that cannot is not extended:
    /// going on to the cap would only spend time on a cost that stays below the resolution (a
    /// UDP stream at its default rate: 73 ms of the 200 ms needed after 1.1 s).
    pub fn could_reach_floor(&self, left_s: f64) -> bool {
        let wall = self.test.wall_s;
        if wall <= 0.0 {
            return true;
        }
        let generous = self.net_cpu_s.max(0.0) + 2.0 * self.resolution_cpu_s;
        generous / wall * (wall + left_s.max(0.0)) >= self.floor_cpu_s()
    }

    /// [`Self::wants_more`], and [`Self::could_reach_floor`] by `cap`: whether to extend the
    /// window now.
    pub fn wants_more_until(&self, cap: std::time::Instant) -> bool {
        let left = cap.saturating_duration_since(std::time::Instant::now());
        self.wants_more() && self.could_reach_floor(left.as_secs_f64())
    }
}

/// A net system cost above this many times what is known to explain it (this process's own CPU,
/// interrupt + softirq time, the other end's process where it shares the machine) is flagged:
/// more than half of it is work nothing known accounts for.
pub const MAX_UNEXPLAINED_RATIO: f64 = 2.0;

impl CpuCost {
    /// How much the background's change between the idle windows could move the net cost,
    /// CPU-seconds: the difference of their busy rates beyond what the counters' steps explain
    /// (one step per CPU in each window), over half the test's wall time (the net cost uses the
    /// rate of both windows, which lies between them). None without an after window.
    pub fn baseline_drift_cpu_s(&self) -> Option<f64> {
        let (b, a) = (&self.baseline, self.baseline_after.as_ref()?);
        if b.wall_s <= 0.0 || a.wall_s <= 0.0 {
            return None;
        }
        let steps = self.resolution_cpu_s * (1.0 / b.wall_s + 1.0 / a.wall_s);
        let d = ((a.busy_cpus() - b.busy_cpus()).abs() - steps).max(0.0);
        Some(d * self.test.wall_s / 2.0)
    }

    /// Why the idle windows before and after the test leave the net cost unknown: the background
    /// changed by more than the counters' steps explain, by enough to move the net cost over
    /// 1/[`MIN_RESOLUTION_STEPS`] (10 %, what the resolution rule asks of a figure). None when
    /// they agree or there is no after window.
    pub fn baselines_differ(&self) -> Option<String> {
        let drift = self.baseline_drift_cpu_s()?;
        let a = self.baseline_after.as_ref()?;
        (drift > self.net_cpu_s / MIN_RESOLUTION_STEPS).then(|| {
            format!(
                "the background changed under the test: the idle baselines before and after it \
                 used {:.3} and {:.3} CPUs ({:.0} and {:.0} ms windows), a change that could \
                 move the net CPU ({:.1} ms) by {:.1} ms, over the 10 % a figure allows",
                self.baseline.busy_cpus(),
                a.busy_cpus(),
                self.baseline.wall_s * 1e3,
                a.wall_s * 1e3,
                self.net_cpu_s * 1e3,
                drift * 1e3
            )
        })
    }

    /// The largest error the counters' steps put on `net_cpu_s`: one step per CPU over the test
    /// window, plus one per CPU over the idle windows scaled to the test's wall time.
    pub fn net_error_cpu_s(&self) -> f64 {
        let idle_s = self.baseline.wall_s + self.baseline_after.map_or(0.0, |a| a.wall_s);
        let rate_err = if idle_s > 0.0 {
            self.resolution_cpu_s / idle_s
        } else {
            0.0
        };
        self.resolution_cpu_s + rate_err * self.test.wall_s
    }

    /// Why a net system cost below this process's own CPU (by more than the counters' error and
    /// the test's steal time) is not measured: the process's CPU is part of the system's, so the
    /// background must have shrunk during the test — work the test displaced on a machine with
    /// no idle CPU to spare —, and the baseline no longer describes it. None otherwise.
    pub fn displaced(&self) -> Option<String> {
        let slack = self.net_error_cpu_s() + self.test.steal_cpu_s.unwrap_or(0.0);
        (self.net_cpu_s + slack < self.process_cpu_s).then(|| {
            format!(
                "background displaced: the system-wide net CPU ({:.1} ms ± {:.1} ms) is below \
                 this process's own ({:.1} ms), so other work gave way to the test (the idle \
                 baselines used {:.3} CPUs before, {} after) and its share is not known",
                self.net_cpu_s * 1e3,
                slack * 1e3,
                self.process_cpu_s * 1e3,
                self.baseline.busy_cpus(),
                self.baseline_after
                    .map_or("not measured".to_string(), |a| format!(
                        "{:.3} CPUs",
                        a.busy_cpus()
                    ))
            )
        })
    }

    /// CPU-seconds known to explain the net system cost: this process's own CPU, the test's net
    /// interrupt + softirq time (where known) and `outside_cpu_s` (the other end's process when
    /// it is another process on the same machine).
    pub fn explained_cpu_s(&self, outside_cpu_s: f64) -> f64 {
        self.process_cpu_s + self.irq_net_cpu_s().unwrap_or(0.0) + outside_cpu_s.max(0.0)
    }

    /// A net system cost that, even less the counters' error, is over
    /// [`MAX_UNEXPLAINED_RATIO`] × what is known to explain it ([`Self::explained_cpu_s`]): the
    /// warning, with the figures. None when it is explained.
    pub fn unexplained(&self, outside_cpu_s: f64) -> Option<String> {
        let explained = self.explained_cpu_s(outside_cpu_s);
        let net = self.net_cpu_s;
        if net - self.net_error_cpu_s() <= MAX_UNEXPLAINED_RATIO * explained {
            return None;
        }
        let ratio = if explained > 0.0 {
            format!("{:.1}×", net / explained)
        } else {
            "far above".to_string()
        };
        let irq = self
            .irq_net_cpu_s()
            .map_or("not known".to_string(), |i| format!("{:.1} ms", i * 1e3));
        Some(format!(
            "system-wide net CPU {:.1} ms (±{:.1} ms) is {ratio} what this process ({:.1} ms), \
             interrupts + softirqs ({irq}) and the other end's process ({:.1} ms) explain: work \
             outside the test (another program, kernel threads) may be in it; idle baselines \
             {:.3} CPUs before, {} after",
            net * 1e3,
            self.net_error_cpu_s() * 1e3,
            self.process_cpu_s * 1e3,
            outside_cpu_s.max(0.0) * 1e3,
            self.baseline.busy_cpus(),
            self.baseline_after
                .map_or("not measured".to_string(), |a| format!(
                    "{:.3} CPUs",
                    a.busy_cpus()
                ))
        ))
    }

    /// The cross-check of a finished cost: Err(why not measured) — a busy or changing background,
    /// below the counters' resolution ([`Self::usable`]) —, Ok(Some(warning)) for a figure kept
    /// but flagged ([`Self::unexplained`]), Ok(None) for a figure that holds up.
    pub fn cross_check(&self, outside_cpu_s: f64) -> Result<Option<String>, String> {
        self.usable()?;
        Ok(self.unexplained(outside_cpu_s))
    }

    /// The windows and both checks, for a run's facts.
    pub fn facts(&self, outside_cpu_s: f64) -> serde_json::Value {
        let after = self.baseline_after.as_ref();
        let check = match self.cross_check(outside_cpu_s) {
            Ok(None) => "ok".to_string(),
            Ok(Some(flag)) => format!("flagged: {flag}"),
            Err(why) => format!("not measured: {why}"),
        };
        serde_json::json!({
            "baseline_before_busy_cpus": self.baseline.busy_cpus(),
            "baseline_before_s": self.baseline.wall_s,
            "baseline_after_busy_cpus": after.map(|a| a.busy_cpus()),
            "baseline_after_s": after.map(|a| a.wall_s),
            "test_wall_s": self.test.wall_s,
            "system_busy_cpu_s": self.test.busy_cpu_s,
            "net_cpu_s": self.net_cpu_s,
            "net_error_cpu_s": self.net_error_cpu_s(),
            "process_cpu_s": self.process_cpu_s,
            "irq_softirq_net_cpu_s": self.irq_net_cpu_s(),
            "steal_cpu_s": self.test.steal_cpu_s,
            "other_end_process_cpu_s": outside_cpu_s,
            "resolution_cpu_s": self.resolution_cpu_s,
            "check": check,
        })
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

/// Measures the idle baseline, then a test, then an idle window after it.
pub struct CpuMeter {
    baseline: Window,
    start: CpuSample,
    idle: Duration,
}

/// How the cost is measured, for a benchmark's method text.
pub fn method() -> String {
    format!(
        "system-wide CPU during the test minus an idle baseline (the busy rate of idle windows \
         just before and just after it, together) × the test's wall time (service demand); idle \
         windows whose rates differ by more than the counters' steps explain, enough to move \
         the net CPU over 10 %, make it not measured (both in the run's facts), as does a net \
         CPU below this process's own (the test displaced other work); a net CPU over \
         2× what this process's own CPU, interrupt + softirq time and (a peer on the same \
         machine) the other end's process explain is flagged with the figures; a window with \
         less net CPU than 12.5 counter steps is extended over more of the same work (TCP \
         streams send on, paced UDP streams send on at their rate; file passes repeat, except \
         at the quick preset) for up to 10 × the run time (at least 1 s) — unless its rate so \
         far (plus two steps) shows that even the cap cannot reach 10 steps — and one still \
         under 10 steps is not measured; system counters: {}; this process's own CPU beside it: {}",
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
            idle,
        })
    }

    /// Restarts the test window now, keeping the baseline (for setup done after `start`).
    pub fn restart(&mut self) -> io::Result<()> {
        self.start = CpuSample::now()?;
        Ok(())
    }

    /// The cost so far, the test still running (no after window): for deciding whether to
    /// extend the window ([`CpuCost::wants_more`]).
    pub fn peek(&self) -> io::Result<CpuCost> {
        let end = CpuSample::now()?;
        Ok(
            CpuCost::from_windows(self.baseline, Window::between(&self.start, &end))
                .with_resolution(cputime::system_cpu_resolution_s()),
        )
    }

    /// Ends the test window, then measures the idle window after it by sleeping as long as the
    /// one before (the caller must be doing nothing meanwhile; none for a meter started with no
    /// idle time). [`Self::end`] and [`Ended::after_idle`] in one.
    pub fn stop(&self) -> io::Result<CpuCost> {
        self.end()?.after_idle()
    }

    /// Ends the test window; the idle window after it is measured by [`Ended::after_idle`] (so
    /// that a client can tell its peer to end its window first and both idle together).
    pub fn end(&self) -> io::Result<Ended> {
        let end = CpuSample::now()?;
        Ok(Ended {
            baseline: self.baseline,
            test: Window::between(&self.start, &end),
            end,
            idle: self.idle,
        })
    }
}

/// A test window that has ended, its idle window after it still to measure.
pub struct Ended {
    baseline: Window,
    test: Window,
    end: CpuSample,
    idle: Duration,
}

impl Ended {
    /// The cost without an idle window after the test (for a run that failed anyway).
    pub fn after_idle_skipped(self) -> io::Result<CpuCost> {
        Ok(CpuCost::from_windows(self.baseline, self.test)
            .with_resolution(cputime::system_cpu_resolution_s()))
    }

    /// Sleeps as long as the idle window before the test (the caller doing nothing meanwhile),
    /// then the cost with both idle windows; without an idle time, the cost as it is.
    pub fn after_idle(self) -> io::Result<CpuCost> {
        let c = if self.idle.is_zero() {
            CpuCost::from_windows(self.baseline, self.test)
        } else {
            std::thread::sleep(self.idle);
            let after = Window::between(&self.end, &CpuSample::now()?);
            CpuCost::from_windows_around(self.baseline, self.test, after)
        };
        Ok(c.with_resolution(cputime::system_cpu_resolution_s()))
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
            irq_cpu_s: None,
            steal_cpu_s: None,
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
        assert!(is_not_usable_reason(&why), "{why}");
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

    /// A window is extended only while the rate seen so far (counted generously: two counter
    /// steps more) could bring the net CPU to the floor by the cap.
    #[test]
    fn a_window_that_cannot_reach_the_floor_by_its_cap_is_not_extended() {
        // 2 CPUs in 10 ms steps: floor 200 ms; the test window so far 1 s long.
        let cost = |net: f64| {
            CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(1.0, net, 2.0, 0.0))
                .with_resolution(0.01)
        };
        // 50 ms so far (90 ms generously): 180 ms by 1 s more, 270 ms by 2 s more.
        assert!(!cost(0.05).could_reach_floor(1.0));
        assert!(cost(0.05).could_reach_floor(2.0));
        // 100 ms so far: 210 ms by half a second more.
        assert!(cost(0.1).could_reach_floor(0.5));
        // The cap reached: nothing more to gain.
        let now = std::time::Instant::now();
        assert!(!cost(0.1).wants_more_until(now));
        assert!(cost(0.1).wants_more_until(now + std::time::Duration::from_secs(2)));
        // Nothing seen yet (no wall time): no projection, the window may go on.
        assert!(
            CpuCost::from_windows(w(0.5, 0.0, 1.0, 0.0), w(0.0, 0.0, 0.0, 0.0))
                .with_resolution(0.01)
                .could_reach_floor(0.0)
        );
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

    fn wi(wall: f64, busy: f64, total: f64, proc_: f64, irq: f64) -> Window {
        Window {
            irq_cpu_s: Some(irq),
            ..w(wall, busy, total, proc_)
        }
    }

    #[test]
    fn the_background_is_the_rate_of_both_idle_windows() {
        // 0.1 CPUs before, 0.3 after (equal windows): 0.2 CPUs of background over a 2 s test.
        let c = CpuCost::from_windows_around(
            w(0.2, 0.02, 0.4, 0.0),
            w(2.0, 1.0, 4.0, 0.5),
            w(0.2, 0.06, 0.4, 0.0),
        );
        assert!((c.background_cpus() - 0.2).abs() < 1e-12);
        assert!((c.net_cpu_s - 0.6).abs() < 1e-12);
        // Without an after window: the one before alone.
        let c = CpuCost::from_windows(w(0.2, 0.02, 0.4, 0.0), w(2.0, 1.0, 4.0, 0.5));
        assert!((c.background_cpus() - 0.1).abs() < 1e-12);
        assert_eq!(c.baseline_drift_cpu_s(), None);
        assert_eq!(c.baselines_differ(), None);
    }

    #[test]
    fn idle_baselines_that_differ_make_the_cost_not_measured() {
        // 2 CPUs in 10 ms steps, 200 ms idle windows: the steps explain 0.1 CPUs each.
        let test = w(2.0, 0.9, 4.0, 0.4);
        let quiet = w(0.2, 0.0, 0.4, 0.0);
        // Something started during the test and ran on after it: 1.5 CPUs in the after window.
        let busy_after = w(0.2, 0.3, 0.4, 0.0);
        let c = CpuCost::from_windows_around(quiet, test, busy_after).with_resolution(0.01);
        // Net: 0.9 − 0.75 × 2 → 0 (never below); drift (1.5 − 0.2) × 2 / 2 = 1.3 CPU-s.
        assert!((c.baseline_drift_cpu_s().unwrap() - 1.3).abs() < 1e-9);
        let why = c.cross_check(0.0).unwrap_err();
        assert!(why.contains("background changed"), "{why}");
        assert!(is_not_usable_reason(&why), "{why}");
        assert!(why.contains("0.000 and 1.500 CPUs"), "{why}");
        assert!(c.checked_us_per_kib(1 << 30).is_err());
        let f = c.facts(0.0);
        assert!((f["baseline_after_busy_cpus"].as_f64().unwrap() - 1.5).abs() < 1e-9);
        assert!(f["check"].as_str().unwrap().starts_with("not measured"));
        // Within the counters' steps (one tick per CPU more after): the same test measures.
        let tick_after = w(0.2, 0.02, 0.4, 0.0);
        let c = CpuCost::from_windows_around(quiet, test, tick_after).with_resolution(0.01);
        assert_eq!(c.baseline_drift_cpu_s(), Some(0.0));
        assert_eq!(c.cross_check(0.0), Ok(None));
        // A small real change on a large net cost: under 10 % of it, measured.
        let c = CpuCost::from_windows_around(quiet, w(2.0, 1.9, 4.0, 1.5), w(0.2, 0.05, 0.4, 0.0))
            .with_resolution(0.01);
        assert!(c.baseline_drift_cpu_s().unwrap() > 0.0);
        assert_eq!(c.cross_check(0.0), Ok(None));
    }

    #[test]
    fn a_system_cost_far_above_the_process_cpu_is_flagged_with_the_figures() {
        let quiet = wi(0.2, 0.0, 0.4, 0.0, 0.0);
        // 1 s of test on 2 CPUs: 0.6 CPU-s net system-wide, the process only 0.05, irq 0.02.
        let c = CpuCost::from_windows_around(quiet, wi(1.0, 0.6, 2.0, 0.05, 0.02), quiet)
            .with_resolution(0.01);
        assert!((c.irq_net_cpu_s().unwrap() - 0.02).abs() < 1e-12);
        assert!((c.explained_cpu_s(0.0) - 0.07).abs() < 1e-12);
        let flag = c.cross_check(0.0).unwrap().expect("flagged");
        assert!(flag.contains("600.0 ms"), "{flag}");
        assert!(flag.contains("8.6×"), "{flag}");
        assert!(
            flag.contains("(50.0 ms)") && flag.contains("(20.0 ms)"),
            "{flag}"
        );
        assert!(
            c.facts(0.0)["check"]
                .as_str()
                .unwrap()
                .starts_with("flagged")
        );
        // The same system figure explained by the process and interrupts: not flagged.
        let c = CpuCost::from_windows_around(quiet, wi(1.0, 0.6, 2.0, 0.35, 0.2), quiet)
            .with_resolution(0.01);
        assert_eq!(c.cross_check(0.0), Ok(None));
        // Or by the other end, another process on this machine.
        let c = CpuCost::from_windows_around(quiet, wi(1.0, 0.6, 2.0, 0.1, 0.0), quiet)
            .with_resolution(0.01);
        assert!(c.unexplained(0.0).is_some());
        assert_eq!(c.unexplained(0.2), None);
        // Within the counters' error: not flagged even with no process CPU at all.
        // (20 ms over the test, 20 ms / 0.4 s of idle windows × 1 s: 70 ms.)
        let c = CpuCost::from_windows_around(quiet, wi(1.0, 0.06, 2.0, 0.0, 0.0), quiet)
            .with_resolution(0.01);
        assert!((c.net_error_cpu_s() - 0.07).abs() < 1e-9);
        assert_eq!(c.unexplained(0.0), None);
    }

    #[test]
    fn a_system_cost_below_the_process_cpu_is_not_measured() {
        // A saturated machine: 1.0 CPU busy in both idle windows, 1.9 of 2 CPUs in the test, of
        // which this process used 0.6: the background gave way, net 0.9 − 1.0 × 1 → 0 < 0.6.
        let half = w(0.2, 0.2, 0.4, 0.0);
        let c =
            CpuCost::from_windows_around(half, w(1.0, 1.3, 2.0, 0.6), half).with_resolution(0.01);
        assert!((c.net_cpu_s - 0.3).abs() < 1e-9);
        let why = c.cross_check(0.0).unwrap_err();
        assert!(why.contains("background displaced"), "{why}");
        assert!(why.contains("(600.0 ms)"), "{why}");
        assert!(!c.wants_more(), "more work cannot help");
        // Steal time (counted in the process's CPU, in neither system figure) can explain it.
        let stolen = Window {
            steal_cpu_s: Some(0.3),
            ..w(1.0, 1.3, 2.0, 0.6)
        };
        let c = CpuCost::from_windows_around(half, stolen, half).with_resolution(0.01);
        assert_eq!(c.displaced(), None);
        // Within the counters' error: measured.
        let c =
            CpuCost::from_windows_around(half, w(1.0, 1.58, 2.0, 0.6), half).with_resolution(0.01);
        assert_eq!(c.displaced(), None);
    }

    #[test]
    fn an_older_peers_cost_without_the_new_fields_still_loads() {
        let c = CpuCost::from_windows_around(
            wi(0.2, 0.0, 0.4, 0.0, 0.0),
            wi(1.0, 0.6, 2.0, 0.3, 0.1),
            wi(0.2, 0.0, 0.4, 0.0, 0.0),
        );
        let mut v = serde_json::to_value(c).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("baseline_after");
        for k in ["baseline", "test"] {
            o[k].as_object_mut().unwrap().remove("irq_cpu_s");
        }
        let back: CpuCost = serde_json::from_value(v).unwrap();
        assert_eq!(back.baseline_after, None);
        assert_eq!(back.irq_net_cpu_s(), None);
        assert_eq!(back.baselines_differ(), None);
    }

    #[test]
    fn meter_sees_this_process_spinning() {
        let m = CpuMeter::start(Duration::from_millis(50)).unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(120) {
            std::hint::black_box(0u64);
        }
        assert_eq!(m.peek().unwrap().baseline_after, None);
        let c = m.stop().unwrap();
        assert!(c.test.wall_s >= 0.12);
        assert!(c.process_cpu_s > 0.0, "{c:?}");
        assert!(c.test.busy_cpu_s <= c.test.total_cpu_s + 1e-9);
        // The idle window after the test, as long as the one before.
        let after = c.baseline_after.expect("an after window");
        assert!(after.wall_s >= 0.05, "{after:?}");
        let f = c.facts(0.0);
        for k in [
            "baseline_before_busy_cpus",
            "baseline_after_busy_cpus",
            "process_cpu_s",
        ] {
            assert!(f[k].is_number(), "{k}: {f}");
        }
        // No idle time: no after window.
        let c = CpuMeter::start(Duration::ZERO).unwrap().stop().unwrap();
        assert_eq!(c.baseline_after, None);
    }

    #[test]
    fn a_window_too_short_to_reach_the_floor_on_any_cpu_count_is_forecast_as_such() {
        // 10 ms steps: 10 steps need a 100 ms window however many CPUs it keeps busy.
        assert!((min_measurable_window_s(0.01) - 0.1).abs() < 1e-12);
        // A 40 ms pass (60 ms with the margin) cannot; a 70 ms one (105 ms) might.
        let why = cannot_reach_floor(0.04, 0.01).expect("40 ms cannot reach 100 ms");
        assert!(is_not_usable_reason(&why), "{why}");
        assert!(why.contains("40.0 ms") && why.contains("100 ms"), "{why}");
        assert_eq!(cannot_reach_floor(0.07, 0.01), None);
        // The bound really holds: every CPU busy for the whole window, net of an idle baseline,
        // on 1 and on 64 CPUs, stays under the floor.
        for cpus in [1.0, 64.0] {
            let wall = 0.099;
            let c = CpuCost::from_windows(
                w(0.03, 0.0, 0.03 * cpus, 0.0),
                w(wall, wall * cpus, wall * cpus, 0.0),
            )
            .with_resolution(0.01);
            assert!(c.below_resolution(), "{cpus} CPUs: {c:?}");
        }
        // An unknown resolution forecasts nothing.
        assert_eq!(cannot_reach_floor(0.0, 0.0), None);
    }
}
