//! The emulated interactive tasks (also reused as the `video` and `x` loads).

use std::io;

use serde::{Deserialize, Serialize};

use super::accounting::{Frame, next_frame};
use super::work::Work;
use crate::platform::realtime;

const MS: u64 = 1_000_000;

/// One interactive task.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// 2.5 ms of CPU every 50 ms (5 %), deadline end of period.
    Audio,
    /// 40 % of every frame at `hz` (60 by default), deadline end of frame.
    Video { hz: f64 },
    /// Interbench's X: steps of 100 ms; step i works i ms, i = 0..=100 then wraps. A run samples
    /// every `stride`-th step starting at `offset`, so short runs still cover the whole ramp.
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

    /// The x stride for runs of `duration_ns`: enough steps per run to cover 0..=100 % once.
    pub fn x_for(duration_ns: u64, run_index: u32) -> Task {
        let steps = (duration_ns / (100 * MS)).max(1);
        let stride = 101u64.div_ceil(steps).max(1);
        Task::X {
            stride,
            offset: run_index as u64 % stride,
        }
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

/// What one run of a task produced.
#[derive(Debug, Default)]
pub struct TaskRun {
    pub frames: Vec<Frame>,
    /// Gaming: per burst.
    pub bursts: Vec<Burst>,
    /// Gaming: where each burst's CPU time came from.
    pub burst_cpu_from: &'static str,
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

/// Run `task` for `duration_ns` (from a start 1 ms ahead), polling `stop`.
pub fn run_task(
    task: Task,
    work: &Work,
    duration_ns: u64,
    stop: &dyn Fn() -> bool,
) -> io::Result<TaskRun> {
    let c0 = realtime::thread_cpu_time_ns()?;
    let t0 = realtime::now_ns() + MS;
    let end = t0.saturating_add(duration_ns);
    let mut out = TaskRun::default();
    if task.periodic() {
        let p = task.period_ns();
        let deadline_of = |k: u64| t0 + k * p + p;
        let mut k = 0u64;
        loop {
            let intended = t0 + k * p;
            if intended >= end || stop() {
                break;
            }
            if realtime::now_ns() < intended {
                realtime::sleep_until_ns(intended)?;
            }
            let start = realtime::now_ns();
            let wanted = task.work_ns(k);
            work.run(wanted, stop);
            let finish = realtime::now_ns();
            out.frames.push(Frame {
                intended,
                deadline: deadline_of(k),
                wanted_ns: wanted,
                ran: Some((start, finish)),
            });
            let (next, _) = next_frame(k + 1, finish, deadline_of);
            for j in k + 1..next {
                let intended = t0 + j * p;
                if intended >= end {
                    break;
                }
                out.frames.push(Frame {
                    intended,
                    deadline: deadline_of(j),
                    wanted_ns: task.work_ns(j),
                    ran: None,
                });
            }
            k = next;
        }
    } else {
        realtime::sleep_until_ns(t0)?;
        // Where the thread CPU clock is coarse (Windows: one step per scheduler tick) a 100 ms
        // burst cannot be timed by it; the work wanted stands in for the CPU time then.
        let fine = super::work::cpu_clock_is_fine();
        out.burst_cpu_from = if fine {
            "thread CPU clock"
        } else {
            "work wanted (the thread CPU clock is too coarse to time a burst)"
        };
        let mut k = 0;
        while realtime::now_ns() < end && !stop() {
            let c = realtime::thread_cpu_time_ns()?;
            let s = realtime::now_ns();
            let wanted = task.work_ns(k);
            work.run(wanted, stop);
            let wall_ns = realtime::now_ns() - s;
            let cpu_ns = if fine {
                realtime::thread_cpu_time_ns()?.saturating_sub(c)
            } else {
                wanted.min(wall_ns)
            };
            out.bursts.push(Burst { cpu_ns, wall_ns });
            k += 1;
        }
    }
    out.wall_ns = realtime::now_ns().saturating_sub(t0);
    out.cpu_ns = realtime::thread_cpu_time_ns()?.saturating_sub(c0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn x_stride_covers_the_ramp_across_runs() {
        // 3 s runs: 30 steps each, stride 4; runs 0..4 together visit every step.
        let mut seen = std::collections::HashSet::new();
        for r in 0..4 {
            let t = Task::x_for(3_000 * MS, r);
            for k in 0..30 {
                seen.insert(t.work_ns(k) / MS);
            }
        }
        assert_eq!(seen.len(), 101);
    }
}
