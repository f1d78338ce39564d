//! The emulated interactive tasks (also reused as the `video` and `x` loads).

use std::io;

use serde::{Deserialize, Serialize};

use super::accounting::{Accounting, Burst, Worked, next_frame};
use super::work::Work;
use crate::platform::clock;

const MS: u64 = 1_000_000;

/// Most periods (or gaming bursts) one run may have: a run keeps one latency (8 bytes) per period
/// that ran, so this bounds a run's memory (~8 MB) whatever its duration. Options that would
/// exceed it are refused when parsed.
pub const MAX_PERIODS_PER_RUN: u64 = 1_000_000;

/// One interactive task.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// 2.5 ms of CPU every 50 ms (5 %), deadline end of period.
    Audio,
    /// 40 % of every frame at `hz` (60 by default), deadline end of frame.
    Video { hz: f64 },
    /// Interbench's X: steps of 100 ms; step i works i ms, i = 0..=100 then wraps. A run samples
    /// every `stride`-th step starting at `offset`, so short runs still cover the whole ramp
    /// (cells use offset 0 in every run: runs are repeats of one experiment).
    X { stride: u64, offset: u64 },
    /// 100 ms bursts back to back; only the CPU share is meaningful.
    Gaming,
    /// `cpu_pct` of every `interval_ns`.
    Custom { cpu_pct: f64, interval_ns: u64 },
}

impl Task {
    pub fn name(&self) -> &'static str {
        match self {
            Task::Audio => "audio",
            Task::Video { .. } => "video",
            Task::X { .. } => "x",
            Task::Gaming => "gaming",
            Task::Custom { .. } => "custom",
        }
    }

    pub fn periodic(&self) -> bool {
        !matches!(self, Task::Gaming)
    }

    pub fn period_ns(&self) -> u64 {
        match *self {
            Task::Audio => 50 * MS,
            Task::Video { hz } => (1e9 / hz).round() as u64,
            Task::X { .. } | Task::Gaming => 100 * MS,
            Task::Custom { interval_ns, .. } => interval_ns,
        }
    }

    /// Work wanted in frame `k`, ns.
    pub fn work_ns(&self, k: u64) -> u64 {
        match *self {
            Task::Audio => 2 * MS + MS / 2,
            Task::Video { .. } => (self.period_ns() as f64 * 0.4).round() as u64,
            Task::X { stride, offset } => ((offset + k * stride.max(1)) % 101) * MS,
            Task::Gaming => 100 * MS,
            Task::Custom {
                cpu_pct,
                interval_ns,
            } => (interval_ns as f64 * cpu_pct / 100.0).round() as u64,
        }
    }

    /// CPU share the task asks for over `frames` frames, % of one CPU.
    pub fn target_cpu_pct(&self, frames: u64) -> f64 {
        let frames = frames.max(1);
        let wanted: u64 = (0..frames).map(|k| self.work_ns(k)).sum();
        100.0 * wanted as f64 / (frames * self.period_ns()) as f64
    }

    /// The x task for runs of `duration_ns`: a stride giving enough steps per run to cover
    /// 0..=100 % once, from step 0 in every run, so every run is the same experiment.
    pub fn x_for(duration_ns: u64) -> Task {
        let steps = (duration_ns / (100 * MS)).max(1);
        let stride = 101u64.div_ceil(steps).max(1);
        Task::X { stride, offset: 0 }
    }

    /// Periods (or gaming bursts) in a run of `duration_ns`.
    pub fn periods_in(&self, duration_ns: u64) -> u64 {
        duration_ns.div_ceil(self.period_ns().max(1))
    }
}

/// What one run of a task produced.
#[derive(Debug, Default)]
pub struct TaskRun {
    /// Periodic tasks: the run's account, fed period by period.
    pub acc: Accounting,
    /// Where each frame's CPU by its deadline came from (see [`super::accounting`]).
    pub obtained_from: &'static str,
    /// Gaming: per burst.
    pub bursts: Vec<Burst>,
    /// Gaming: where each burst's CPU time came from.
    pub burst_cpu_from: &'static str,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// The measuring thread's id as tracefs names it (for attribution).
    pub tid: u32,
}

/// What the periodic loop needs from the world: a clock, an absolute-time sleep, the work, and
/// whether to stop. The task runs it with [`OsEnv`]; tests drive the same loop with a synthetic
/// schedule. `k` is the frame index (for synthetic schedules; the OS ignores it).
pub trait TaskEnv {
    fn now_ns(&mut self) -> u64;
    fn sleep_until_ns(&mut self, k: u64, t: u64) -> io::Result<()>;
    /// Do `wanted_ns` of work for frame `k`, whose deadline is `deadline`.
    fn work(&mut self, k: u64, wanted_ns: u64, deadline: u64) -> io::Result<Worked>;
    fn stop(&mut self) -> bool;
}

/// The periodic loop of every periodic task: frames from `t0` until `end`, each accounted in
/// `acc` as it happens (see [`super::accounting`] for the rules).
pub fn run_periodic(
    env: &mut dyn TaskEnv,
    task: &Task,
    t0: u64,
    end: u64,
    acc: &mut Accounting,
) -> io::Result<()> {
    let p = task.period_ns();
    let deadline_of = |k: u64| t0 + k * p + p;
    let mut k = 0u64;
    loop {
        let intended = t0 + k * p;
        if intended >= end || env.stop() {
            break;
        }
        if env.now_ns() < intended {
            env.sleep_until_ns(k, intended)?;
            if env.stop() {
                break;
            }
        }
        let start = env.now_ns();
        let wanted = task.work_ns(k);
        let w = env.work(k, wanted, deadline_of(k))?;
        acc.ran(intended, start, deadline_of(k), wanted, &w);
        if !w.complete {
            break;
        }
        let (next, _) = next_frame(k + 1, w.finish, deadline_of);
        for j in k + 1..next {
            if t0 + j * p >= end {
                break;
            }
            acc.dropped(task.work_ns(j));
        }
        k = next;
    }
    Ok(())
}

/// The real world: monotonic clock, absolute-time sleeps, calibrated work, the thread CPU clock.
pub struct OsEnv<'a> {
    pub work: &'a Work,
    pub stop: &'a dyn Fn() -> bool,
    /// Whether the thread CPU clock is fine enough to read the CPU a frame got by its deadline.
    pub fine: bool,
}

impl TaskEnv for OsEnv<'_> {
    fn now_ns(&mut self) -> u64 {
        clock::now_ns()
    }

    fn sleep_until_ns(&mut self, _k: u64, t: u64) -> io::Result<()> {
        // Long sleeps (custom intervals) in steps, so a stop is seen within ~0.1 s; the last
        // step ends at `t`, so the measured wake-up is that of one absolute-time sleep.
        loop {
            let now = clock::now_ns();
            if t <= now + 200 * MS || (self.stop)() {
                break;
            }
            clock::sleep_until_ns(now + 100 * MS)?;
        }
        clock::sleep_until_ns(t)
    }

    fn work(&mut self, _k: u64, wanted_ns: u64, deadline: u64) -> io::Result<Worked> {
        let fine = self.fine;
        let cpu = || clock::thread_cpu_time_ns().unwrap_or(0);
        let c0 = if fine {
            clock::thread_cpu_time_ns()?
        } else {
            0
        };
        // What the frame had obtained when the deadline passed (Some once it has).
        let mut at_deadline = (clock::now_ns() >= deadline).then_some(0);
        let mut last_done = 0.0;
        let stop = self.stop;
        let complete = self.work.run(wanted_ns, &mut |done| {
            last_done = done;
            if at_deadline.is_none() && clock::now_ns() >= deadline {
                at_deadline = Some(if fine {
                    cpu().saturating_sub(c0)
                } else {
                    (done * wanted_ns as f64) as u64
                });
            }
            stop()
        });
        let finish = clock::now_ns();
        let obtained = match at_deadline {
            Some(o) => o,
            None if fine => clock::thread_cpu_time_ns()?.saturating_sub(c0),
            None if complete => wanted_ns,
            None => (last_done * wanted_ns as f64) as u64,
        };
        Ok(Worked {
            finish,
            obtained_by_deadline_ns: obtained,
            complete,
        })
    }

    fn stop(&mut self) -> bool {
        (self.stop)()
    }
}

/// Where a frame's CPU by its deadline comes from, with a clock of this fineness.
pub fn obtained_from(fine: bool) -> &'static str {
    if fine {
        "thread CPU clock: CPU time each frame got between its start and its deadline"
    } else {
        "work done by the deadline (the thread CPU clock is too coarse to time a frame): \
         fraction of each frame's loop iterations done by its deadline × its work wanted"
    }
}

/// Run `task` for `duration_ns` (from a start 1 ms ahead), polling `stop`.
pub fn run_task(
    task: Task,
    work: &Work,
    duration_ns: u64,
    stop: &dyn Fn() -> bool,
    late_threshold_ns: Option<u64>,
) -> io::Result<TaskRun> {
    let c0 = clock::thread_cpu_time_ns()?;
    let t0 = clock::now_ns() + MS;
    let end = t0.saturating_add(duration_ns);
    let fine = super::work::cpu_clock_is_fine();
    let mut out = TaskRun {
        acc: Accounting {
            late_threshold_ns,
            ..Accounting::new(MAX_PERIODS_PER_RUN as usize)
        },
        tid: crate::platform::tracefs::current_tid(),
        ..TaskRun::default()
    };
    if task.periodic() {
        out.obtained_from = obtained_from(fine);
        let mut env = OsEnv { work, stop, fine };
        run_periodic(&mut env, &task, t0, end, &mut out.acc)?;
    } else {
        clock::sleep_until_ns(t0)?;
        // Where the thread CPU clock is coarse (Windows: one step per scheduler tick) a 100 ms
        // burst cannot be timed by it; the work wanted stands in for the CPU time then.
        out.burst_cpu_from = if fine {
            "thread CPU clock"
        } else {
            "work wanted (the thread CPU clock is too coarse to time a burst)"
        };
        let mut k = 0;
        while clock::now_ns() < end && !stop() {
            let c = clock::thread_cpu_time_ns()?;
            let s = clock::now_ns();
            let wanted = task.work_ns(k);
            work.run(wanted, &mut |_| stop());
            let wall_ns = clock::now_ns() - s;
            let cpu_ns = if fine {
                clock::thread_cpu_time_ns()?.saturating_sub(c)
            } else {
                wanted.min(wall_ns)
            };
            out.bursts.push(Burst { cpu_ns, wall_ns });
            k += 1;
        }
    }
    out.wall_ns = clock::now_ns().saturating_sub(t0);
    out.cpu_ns = clock::thread_cpu_time_ns()?.saturating_sub(c0);
    Ok(out)
}

/// A synthetic schedule for the periodic loop: the OS wakes frame `k` `wake_delay(k)` ns after
/// its sleep ends and its work takes `work_wall(k)` ns of wall time, obtaining its CPU evenly over
/// that time (so the CPU obtained by a deadline is the share of that wall time before it).
#[cfg(test)]
pub struct SimEnv<D: Fn(u64) -> u64, W: Fn(u64) -> u64> {
    pub now: u64,
    pub wake_delay: D,
    pub work_wall: W,
    /// Stop (as Ctrl-C would) once the clock passes this.
    pub stop_at: u64,
}

#[cfg(test)]
impl<D: Fn(u64) -> u64, W: Fn(u64) -> u64> TaskEnv for SimEnv<D, W> {
    fn now_ns(&mut self) -> u64 {
        self.now
    }
    fn sleep_until_ns(&mut self, k: u64, t: u64) -> io::Result<()> {
        self.now = self.now.max(t) + (self.wake_delay)(k);
        Ok(())
    }
    fn work(&mut self, k: u64, wanted_ns: u64, deadline: u64) -> io::Result<Worked> {
        let start = self.now;
        let wall = (self.work_wall)(k);
        self.now += wall;
        let by_deadline = deadline.saturating_sub(start).min(wall);
        Ok(Worked {
            finish: self.now,
            obtained_by_deadline_ns: if wall == 0 {
                wanted_ns
            } else {
                (wanted_ns as u128 * by_deadline as u128 / wall as u128) as u64
            },
            complete: true,
        })
    }
    fn stop(&mut self) -> bool {
        self.now >= self.stop_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the real periodic loop on a synthetic schedule: `frames` periods of `task` from t0.
    fn simulate(
        task: Task,
        t0: u64,
        frames: u64,
        wake_delay: impl Fn(u64) -> u64,
        work_wall: impl Fn(u64) -> u64,
    ) -> Accounting {
        // Like `run_task`, the first period starts 1 ms ahead, so every run begins with a sleep.
        let mut env = SimEnv {
            now: t0 - MS,
            wake_delay,
            work_wall,
            stop_at: u64::MAX,
        };
        let mut acc = Accounting::new(MAX_PERIODS_PER_RUN as usize);
        let end = t0 + frames * task.period_ns();
        run_periodic(&mut env, &task, t0, end, &mut acc).unwrap();
        acc
    }

    fn custom(interval_ns: u64, work_ns: u64) -> Task {
        Task::Custom {
            cpu_pct: 100.0 * work_ns as f64 / interval_ns as f64,
            interval_ns,
        }
    }

    #[test]
    fn task_constants_match_interbench() {
        assert_eq!(Task::Audio.target_cpu_pct(10), 5.0);
        let v = Task::Video { hz: 60.0 };
        assert!((v.target_cpu_pct(10) - 40.0).abs() < 0.01);
        assert_eq!(v.period_ns(), 16_666_667);
        let x = Task::X {
            stride: 1,
            offset: 0,
        };
        assert_eq!(x.work_ns(0), 0);
        assert_eq!(x.work_ns(100), 100 * MS);
        assert_eq!(x.work_ns(101), 0);
        // Over a whole cycle the ramp averages 50 %.
        assert!((x.target_cpu_pct(101) - 50.0).abs() < 1e-9);
        let c = Task::Custom {
            cpu_pct: 20.0,
            interval_ns: 10 * MS,
        };
        assert_eq!(c.work_ns(3), 2 * MS);
        assert_eq!(Task::Audio.periods_in(1_000 * MS), 20);
        assert_eq!(Task::Audio.periods_in(1_001 * MS), 21);
    }

    #[test]
    fn x_runs_are_repeats_that_each_cover_the_ramp() {
        for secs in [1u64, 3, 10, 30] {
            let d = secs * 1_000 * MS;
            let t = Task::x_for(d);
            // Every run is the same experiment…
            assert_eq!(t, Task::x_for(d));
            // …and each run alone spans the whole ramp: from 0 to within one stride of 100 ms,
            // in steps no larger than the stride, averaging about half of the CPU.
            let Task::X { stride, offset } = t else {
                panic!("{t:?}")
            };
            assert_eq!(offset, 0);
            let steps = t.periods_in(d);
            let mut seen: Vec<u64> = (0..steps).map(|k| t.work_ns(k) / MS).collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen[0], 0, "{secs} s");
            assert!(*seen.last().unwrap() + stride > 100, "{secs} s: {seen:?}");
            assert!(seen.windows(2).all(|w| w[1] - w[0] <= stride), "{secs} s");
            let target = t.target_cpu_pct(steps);
            assert!((40.0..=60.0).contains(&target), "{secs} s: {target} %");
        }
    }

    #[test]
    fn perfect_schedule_has_zero_latency_and_all_deadlines() {
        let a = simulate(Task::Audio, 5 * MS, 20, |_| 0, |_| 2 * MS + MS / 2);
        assert_eq!(a.frames, 20);
        assert_eq!(a.dropped, 0);
        assert!(a.latencies_ns.iter().all(|&l| l == 0.0));
        assert_eq!(a.deadlines_met_pct(), Some(100.0));
        assert_eq!(a.desired_cpu_pct(), Some(100.0));
    }

    #[test]
    fn constant_wake_delay_is_the_latency() {
        let a = simulate(custom(10 * MS, MS), MS, 10, |_| 300_000, |_| MS);
        assert_eq!(a.latencies_ns.len(), 10);
        assert!(a.latencies_ns.iter().all(|&l| l == 300_000.0));
        assert_eq!(a.met, 10);
    }

    #[test]
    fn a_dropped_frame_is_counted_and_never_folded_into_latency() {
        // Period 10 ms, 1 ms of work; frame 3 takes 35 ms of wall time (starts at 30, finishes at
        // 65 ms): frames 4 and 5 (deadlines 50 and 60 ms) are dropped; frame 6 (intended 60 ms,
        // deadline 70 ms) starts at 65 ms, 5 ms late.
        let a = simulate(
            custom(10 * MS, MS),
            MS,
            10,
            |_| 0,
            |k| if k == 3 { 35 * MS } else { MS },
        );
        assert_eq!(a.frames, 10);
        assert_eq!(a.dropped, 2);
        assert_eq!(a.ran, 8);
        // One latency per frame that ran; only frame 6 is late, by exactly 5 ms: no period
        // penalty for the dropped ones anywhere.
        assert_eq!(a.latencies_ns.len(), 8);
        let late: Vec<_> = a.latencies_ns.iter().filter(|&&l| l > 0.0).collect();
        assert_eq!(late, vec![&(5.0 * MS as f64)]);
        // Frame 3 missed its deadline (finished at 65 > 40), 4 and 5 dropped: exactly 7 of 10.
        assert_eq!(a.met, 7);
        assert_eq!(a.deadlines_met_pct(), Some(70.0));
        // CPU: 7 frames got all of theirs (7 ms); frame 3 got 10/35 of its 1 ms by its deadline;
        // the dropped frames got none. Wanted: 10 ms.
        assert_eq!(a.wanted_ns, 10 * MS);
        assert_eq!(a.obtained_ns, 7 * MS + MS * 10 / 35);
        let want = 100.0 * (7.0 + 10.0 / 35.0) / 10.0;
        assert!((a.desired_cpu_pct().unwrap() - want).abs() < 1e-3);
    }

    #[test]
    fn deadlines_met_is_exact_on_a_known_schedule() {
        // Audio (50 ms period, 2.5 ms work), 40 frames. Every 4th frame is woken 48 ms late and
        // so finishes at 50.5 ms after its intended start: just past its deadline, but before
        // the next frame's, so nothing is dropped. 10 of 40 frames miss: exactly 75 %.
        let a = simulate(
            Task::Audio,
            5 * MS,
            40,
            |k| if k % 4 == 0 { 48 * MS } else { 0 },
            |_| 2 * MS + MS / 2,
        );
        assert_eq!((a.frames, a.ran, a.dropped), (40, 40, 0));
        assert_eq!(a.met, 30);
        assert_eq!(a.deadlines_met_pct(), Some(75.0));
        // The late frames got 2 of their 2.5 ms by the deadline.
        assert_eq!(a.obtained_ns, 30 * (2 * MS + MS / 2) + 10 * 2 * MS);
        // A frame finishing exactly at its deadline meets it.
        let a = simulate(custom(10 * MS, MS), MS, 5, |_| 9 * MS, |_| MS);
        assert_eq!((a.met, a.dropped), (5, 0));
    }

    #[test]
    fn a_stop_ends_the_loop_and_the_account_stays_consistent() {
        let mut env = SimEnv {
            now: 0,
            wake_delay: |_| 0,
            work_wall: |_| MS,
            stop_at: 55 * MS,
        };
        let mut acc = Accounting::new(100);
        run_periodic(&mut env, &custom(10 * MS, MS), 0, 1_000 * MS, &mut acc).unwrap();
        // Frames 0..=5 ran (the sleep to 60 ms passes the stop).
        assert_eq!(acc.ran, 6);
        assert_eq!(acc.frames, acc.ran + acc.dropped);
    }

    #[test]
    fn latencies_beyond_the_cap_are_counted_not_kept() {
        let mut env = SimEnv {
            now: 0,
            wake_delay: |_| 0,
            work_wall: |_| MS,
            stop_at: u64::MAX,
        };
        let mut acc = Accounting::new(4);
        run_periodic(&mut env, &custom(10 * MS, MS), 0, 100 * MS, &mut acc).unwrap();
        assert_eq!(acc.latencies_ns.len(), 4);
        assert_eq!(acc.latencies_not_kept, 6);
        assert_eq!(acc.frames, 10);
    }

    #[test]
    fn true_sd_is_not_rms() {
        // Latencies 0, 2, 4 ms: mean 2 ms, true (sample) SD 2 ms, RMS (Interbench's "SD") 2.58 ms.
        let a = simulate(
            custom(10 * MS, MS),
            MS,
            3,
            |k| [0, 2 * MS, 4 * MS][k as usize],
            |_| MS,
        );
        let s = crate::stats::summarize(&a.latencies_ns).unwrap();
        assert_eq!(s.mean, 2.0 * MS as f64);
        assert!((s.sd - 2.0 * MS as f64).abs() < 1e-6);
        let rms = (a.latencies_ns.iter().map(|x| x * x).sum::<f64>() / 3.0).sqrt();
        assert!(rms > s.sd * 1.2);
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Windows' thread CPU clock advances once per scheduler tick (15.6 ms; Wine: \
                  10 ms): --work cputime is unsupported there"
    )]
    fn the_real_loop_on_the_os_accounts_every_period() {
        // 200 ms of a 10 ms custom task with 1 ms of CPU-clock work: 20 periods, each accounted;
        // obtained never exceeds wanted.
        let work = Work {
            mode: super::super::work::WorkMode::Cputime,
            loops_per_us: 100.0,
        };
        // Linux and macOS count thread CPU time in ns: a coarse clock there is a bug.
        let step = super::super::work::cpu_clock_step_ns();
        assert!(
            super::super::work::cpu_clock_is_fine(),
            "thread CPU clock steps {step} ns"
        );
        let r = run_task(custom(10 * MS, MS), &work, 200 * MS, &|| false, None).unwrap();
        assert_eq!(r.acc.frames, 20);
        assert_eq!(r.acc.ran + r.acc.dropped, 20);
        assert_eq!(r.acc.latencies_ns.len() as u64, r.acc.ran);
        assert_eq!(r.acc.wanted_ns, 20 * MS);
        assert!(r.acc.obtained_ns <= r.acc.wanted_ns);
        // Measured, not filled in: with CPU-clock work, what the frames obtained by their
        // deadlines is CPU time the thread really used.
        assert!(
            r.acc.obtained_ns <= r.cpu_ns,
            "obtained {} > used {}",
            r.acc.obtained_ns,
            r.cpu_ns
        );
        assert!(r.obtained_from.starts_with("thread CPU clock"));
    }
}
