//! Per-period accounting, as pure functions over times (ns on one monotonic clock), so that the
//! rules can be tested on synthetic schedules.
//!
//! Rules (documented in `osgauge list --long`):
//! - A frame (period) `k` has an intended start `t0 + k·P` and a deadline (end of the period unless
//!   the task says otherwise). The task sleeps until the intended start with an absolute-time sleep.
//! - Latency of a frame = actual start − intended start (ns, ≥ 0). When the previous frame overran,
//!   the next frame starts as soon as the previous finished, and that lateness counts too.
//! - A frame whose deadline has already passed when the previous frame finishes is *dropped*: it is
//!   not run, it adds nothing to the latency figures, it is counted in `dropped`, as a missed
//!   deadline, and its work counts as wanted but not done.
//! - Deadlines met % = frames that finished by their deadline / all frames (run + dropped).
//! - Desired CPU % = work done / work wanted (ns of emulated work).
//! - Gaming has no periods: it wants the CPU all the time, in back-to-back bursts. Its latency per
//!   burst is the time the burst spent off the CPU (wall − the thread's CPU time), and its desired
//!   CPU % is the CPU time it got / the wall time of its bursts. Both come from clocks, not from
//!   the work calibration: work / wall would exceed 100 % whenever the CPU runs faster than when
//!   calibrated (seen on a shared VM whose core speed changes ~1.8× from second to second).

/// One frame's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub intended: u64,
    pub deadline: u64,
    /// Emulated work wanted, ns.
    pub wanted_ns: u64,
    /// `Some((actual start, finish))` when run; None when dropped.
    pub ran: Option<(u64, u64)>,
}

/// Which frame runs next after one that finished at `finish`: the first `k ≥ next` whose deadline
/// lies after `finish`. Returns that index and how many frames were skipped (dropped).
pub fn next_frame(next: u64, finish: u64, deadline_of: impl Fn(u64) -> u64) -> (u64, u64) {
    let mut k = next;
    while deadline_of(k) <= finish {
        k += 1;
    }
    (k, k - next)
}

/// Figures for one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Accounting {
    /// Latency of every frame that ran, ns.
    pub latencies_ns: Vec<f64>,
    pub frames: u64,
    pub ran: u64,
    pub met: u64,
    pub dropped: u64,
    pub wanted_ns: u64,
    pub done_ns: u64,
}

impl Accounting {
    pub fn deadlines_met_pct(&self) -> Option<f64> {
        (self.frames > 0).then(|| 100.0 * self.met as f64 / self.frames as f64)
    }
    pub fn desired_cpu_pct(&self) -> Option<f64> {
        (self.wanted_ns > 0).then(|| 100.0 * self.done_ns as f64 / self.wanted_ns as f64)
    }
}

/// Account a run's frames (fixed work: a frame that ran did all its work).
pub fn account(frames: &[Frame]) -> Accounting {
    let mut a = Accounting::default();
    for f in frames {
        a.frames += 1;
        a.wanted_ns += f.wanted_ns;
        match f.ran {
            Some((start, finish)) => {
                a.ran += 1;
                a.done_ns += f.wanted_ns;
                a.latencies_ns.push(start.saturating_sub(f.intended) as f64);
                if finish <= f.deadline {
                    a.met += 1;
                }
            }
            None => a.dropped += 1,
        }
    }
    a
}

/// Simulate a periodic task on a schedule where the OS gives frame `k` the CPU `wake_delay(k)` ns
/// after it asks and the work takes `work_wall(k)` ns of wall time: the same loop the real task
/// runs, with times supplied instead of measured. Used by tests and to document the rules.
pub fn simulate(
    t0: u64,
    period: u64,
    frames_total: u64,
    wanted_ns: u64,
    wake_delay: impl Fn(u64) -> u64,
    work_wall: impl Fn(u64) -> u64,
) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut now = t0;
    let mut k = 0;
    while k < frames_total {
        let intended = t0 + k * period;
        let deadline = intended + period;
        let asked = now.max(intended);
        let start = asked + wake_delay(k);
        let finish = start + work_wall(k);
        out.push(Frame {
            intended,
            deadline,
            wanted_ns,
            ran: Some((start, finish)),
        });
        now = finish;
        let (next, dropped) = next_frame(k + 1, finish, |j| t0 + j * period + period);
        for j in k + 1..next.min(frames_total) {
            out.push(Frame {
                intended: t0 + j * period,
                deadline: t0 + j * period + period,
                wanted_ns,
                ran: None,
            });
        }
        let _ = dropped;
        k = next;
    }
    out
}

/// Gaming's desired CPU %: CPU time obtained / wall time, over all bursts (0 when there are none).
pub fn burst_cpu_share_pct(bursts: &[super::task::Burst]) -> f64 {
    let cpu: u64 = bursts.iter().map(|b| b.cpu_ns.min(b.wall_ns)).sum();
    let wall: u64 = bursts.iter().map(|b| b.wall_ns).sum();
    if wall == 0 {
        return 0.0;
    }
    100.0 * cpu as f64 / wall as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interactivity::task::Burst;

    #[test]
    fn gaming_share_and_wait_come_from_the_clocks() {
        let b = |cpu_ns, wall_ns| Burst { cpu_ns, wall_ns };
        // Two 100 ms bursts: one ran throughout, one got half the CPU.
        let bursts = [b(100_000_000, 100_000_000), b(100_000_000, 200_000_000)];
        assert_eq!(bursts[0].waited_ns(), 0);
        assert_eq!(bursts[1].waited_ns(), 100_000_000);
        assert!((burst_cpu_share_pct(&bursts) - 200.0 / 3.0).abs() < 1e-9);
        // A CPU clock that reads a little past the wall clock (granularity) never gives > 100 %
        // or a negative wait.
        let fast = [b(100_000_100, 100_000_000)];
        assert_eq!(fast[0].waited_ns(), 0);
        assert_eq!(burst_cpu_share_pct(&fast), 100.0);
        assert_eq!(burst_cpu_share_pct(&[]), 0.0);
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn perfect_schedule_has_zero_latency_and_all_deadlines() {
        let f = simulate(
            1000,
            50 * MS,
            20,
            2 * MS + MS / 2,
            |_| 0,
            |_| 2 * MS + MS / 2,
        );
        let a = account(&f);
        assert_eq!(a.frames, 20);
        assert_eq!(a.dropped, 0);
        assert!(a.latencies_ns.iter().all(|&l| l == 0.0));
        assert_eq!(a.deadlines_met_pct(), Some(100.0));
        assert_eq!(a.desired_cpu_pct(), Some(100.0));
    }

    #[test]
    fn constant_wake_delay_is_the_latency() {
        let f = simulate(0, 10 * MS, 10, MS, |_| 300_000, |_| MS);
        let a = account(&f);
        assert!(a.latencies_ns.iter().all(|&l| l == 300_000.0));
        assert_eq!(a.met, 10);
    }

    #[test]
    fn overrun_drops_frames_without_adding_to_latency() {
        // Period 10 ms; frame 3 takes 35 ms of wall time (finishes at 65 ms): frames 4 and 5
        // (deadlines 50 and 60 ms) are dropped; frame 6 (intended 60 ms, deadline 70 ms) starts
        // at 65 ms, 5 ms late.
        let f = simulate(
            0,
            10 * MS,
            10,
            MS,
            |_| 0,
            |k| if k == 3 { 35 * MS } else { MS },
        );
        let a = account(&f);
        assert_eq!(a.frames, 10);
        assert_eq!(a.dropped, 2);
        assert_eq!(a.ran, 8);
        // Latencies: only frame 6 is late, by exactly 5 ms; no period penalty anywhere.
        let late: Vec<_> = a.latencies_ns.iter().filter(|&&l| l > 0.0).collect();
        assert_eq!(late, vec![&(5.0 * MS as f64)]);
        assert_eq!(
            a.latencies_ns.iter().cloned().fold(0.0, f64::max),
            5.0 * MS as f64
        );
        // Frame 3 missed its deadline (finished at 65 > 40), 4 and 5 dropped: 7 of 10 met.
        assert_eq!(a.met, 7);
        assert_eq!(a.deadlines_met_pct(), Some(70.0));
        assert_eq!(a.desired_cpu_pct(), Some(80.0));
    }

    #[test]
    fn next_frame_skips_only_expired_frames() {
        let d = |k: u64| (k + 1) * 10;
        assert_eq!(next_frame(1, 5, d), (1, 0));
        assert_eq!(next_frame(1, 20, d), (2, 1));
        assert_eq!(next_frame(1, 39, d), (3, 2));
    }

    #[test]
    fn true_sd_is_not_rms() {
        // Latencies 0, 2, 4 ms: mean 2 ms, true (sample) SD 2 ms, RMS (Interbench's "SD") 2.58 ms.
        let f = simulate(
            0,
            10 * MS,
            3,
            MS,
            |k| [0, 2 * MS, 4 * MS][k as usize],
            |_| MS,
        );
        let a = account(&f);
        let s = crate::stats::summarize(&a.latencies_ns).unwrap();
        assert_eq!(s.mean, 2.0 * MS as f64);
        assert!((s.sd - 2.0 * MS as f64).abs() < 1e-6);
        let rms = (a.latencies_ns.iter().map(|x| x * x).sum::<f64>() / 3.0).sqrt();
        assert!(rms > s.sd * 1.2);
    }
}
