//! Per-period accounting: a state machine the task's periodic loop ([`super::task::run_periodic`])
//! feeds one period at a time, as it happens, so a run keeps counters and one latency per period
//! that ran — never a list of frames. Tests drive the same loop with a synthetic schedule.
//!
//! Rules (documented in `osgauge list --long`):
//! - A frame (period) `k` has an intended start `t0 + k·P` and a deadline (end of the period unless
//!   the task says otherwise). The task sleeps until the intended start with an absolute-time sleep.
//! - Latency of a frame = actual start − intended start (ns, ≥ 0). When the previous frame overran,
//!   the next frame starts as soon as the previous finished, and that lateness counts too.
//! - A frame whose deadline has already passed when the previous frame finishes is *dropped*: it is
//!   not run, it adds nothing to the latency figures, it is counted in `dropped`, as a missed
//!   deadline, and it obtained none of the CPU it wanted.
//! - Deadlines met % = frames that finished their work by their deadline / all frames (run +
//!   dropped).
//! - Desired CPU % = CPU obtained by the deadlines / CPU wanted, summed over all frames. A frame
//!   that finished its work by its deadline obtained all it wanted; one that did not obtained the
//!   CPU time its thread got between its start and its deadline (thread CPU clock, read by the
//!   work loop when it first sees the deadline passed, at most ~0.1 ms of work late), at most what
//!   it wanted; a dropped frame obtained 0. Where the thread CPU clock is coarse (Windows: one step
//!   per scheduler tick, see `cpu_clock_step_ns`) the CPU by the deadline cannot be read; the work
//!   done by the deadline (fraction of the frame's loop iterations × its work wanted) is used
//!   instead, and the record says which (`desired_cpu_from`).
//! - Gaming has no periods: it wants the CPU all the time, in back-to-back bursts. Its latency per
//!   burst is the time the burst spent off the CPU (wall − the thread's CPU time), and its desired
//!   CPU % is the CPU time it got / the wall time of its bursts. Both come from clocks, not from
//!   the work calibration: work / wall would exceed 100 % whenever the CPU runs faster than when
//!   calibrated (seen on a shared VM whose core speed changes ~1.8× from second to second).

/// What one period's work reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worked {
    /// When the work ended (monotonic ns).
    pub finish: u64,
    /// CPU the period obtained between its start and its deadline (or its finish, if earlier),
    /// ns; where the thread CPU clock is coarse, the work done by the deadline (see the rules).
    pub obtained_by_deadline_ns: u64,
    /// All the work was done (false: stopped early by Ctrl-C or the cell's deadline).
    pub complete: bool,
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

/// Figures for one run, accumulated period by period.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Accounting {
    /// Latency of every frame that ran, ns (at most `latency_cap` of them are kept).
    pub latencies_ns: Vec<f64>,
    /// Latencies beyond `latency_cap` (not kept; the cell fails rather than report without them).
    pub latencies_not_kept: u64,
    pub latency_cap: usize,
    pub frames: u64,
    pub ran: u64,
    pub met: u64,
    pub dropped: u64,
    pub wanted_ns: u64,
    /// CPU obtained by the deadlines (see the rules), ns.
    pub obtained_ns: u64,
    /// Frames at least this late are kept in `late` for attribution (`--attribute`).
    pub late_threshold_ns: Option<u64>,
    /// (intended, actual start) of the frames at least `late_threshold_ns` late, at most
    /// [`MAX_LATE`] of them.
    pub late: Vec<(u64, u64)>,
}

/// Late frames kept for attribution per run.
pub const MAX_LATE: usize = 10_000;

impl Accounting {
    /// An empty account that keeps at most `latency_cap` latencies.
    pub fn new(latency_cap: usize) -> Accounting {
        Accounting {
            latency_cap,
            ..Accounting::default()
        }
    }

    /// Frame that ran: intended start, actual start, deadline, work wanted and what the work said.
    pub fn ran(&mut self, intended: u64, start: u64, deadline: u64, wanted_ns: u64, w: &Worked) {
        self.frames += 1;
        self.ran += 1;
        self.wanted_ns += wanted_ns;
        if self
            .late_threshold_ns
            .is_some_and(|t| start.saturating_sub(intended) >= t)
            && self.late.len() < MAX_LATE
        {
            self.late.push((intended, start));
        }
        if self.latencies_ns.len() < self.latency_cap {
            self.latencies_ns
                .push(start.saturating_sub(intended) as f64);
        } else {
            self.latencies_not_kept += 1;
        }
        if w.complete && w.finish <= deadline {
            self.met += 1;
            self.obtained_ns += wanted_ns;
        } else {
            self.obtained_ns += w.obtained_by_deadline_ns.min(wanted_ns);
        }
    }

    /// Frame dropped (its deadline passed before it could start).
    pub fn dropped(&mut self, wanted_ns: u64) {
        self.frames += 1;
        self.dropped += 1;
        self.wanted_ns += wanted_ns;
    }

    pub fn deadlines_met_pct(&self) -> Option<f64> {
        (self.frames > 0).then(|| 100.0 * self.met as f64 / self.frames as f64)
    }
    pub fn desired_cpu_pct(&self) -> Option<f64> {
        (self.wanted_ns > 0).then(|| 100.0 * self.obtained_ns as f64 / self.wanted_ns as f64)
    }
}

/// One gaming burst: the CPU time the thread got during it (its CPU clock) and its wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

impl Burst {
    /// Time the burst spent off the CPU while it wanted it (wall − CPU).
    pub fn waited_ns(&self) -> u64 {
        self.wall_ns.saturating_sub(self.cpu_ns)
    }
}

/// Gaming's desired CPU %: CPU time obtained / wall time, over all bursts (0 when there are none).
pub fn burst_cpu_share_pct(bursts: &[Burst]) -> f64 {
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
}
