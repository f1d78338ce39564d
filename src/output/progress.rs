//! Progress on stderr. On a terminal: a bar weighted by each benchmark's estimated time, with the
//! time left; it is redrawn only when the runner reports an event (between benchmarks), never by a
//! ticking thread during a measurement. Elsewhere (a log, CI): one line per finished benchmark.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    /// One line per round on stderr (not a terminal, not quiet).
    lines: bool,
    estimates: Vec<f64>,
    /// Runs (warm-up included) each benchmark is expected to take: its estimate is spread over them.
    steps: f64,
    /// Measured rounds planned (at the fewest runs).
    rounds: u32,
    /// Estimated seconds of the runs finished so far.
    estimated_done: f64,
    started: Instant,
}

/// Seconds as a person reads them: "42 s", "3 min 05 s", "1 h 02 min".
pub fn format_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        format!("{} h {:02} min", s / 3600, (s % 3600) / 60)
    }
}

/// Time left: the estimates of the benchmarks still to run, scaled by how the finished ones
/// compared with theirs (`elapsed` / `estimated_done`, kept within ¼…4 so one odd benchmark does
/// not swing it wildly; 1 before any has finished).
pub fn time_left(remaining_estimate: f64, estimated_done: f64, elapsed: f64) -> f64 {
    let pace = if estimated_done > 0.0 && elapsed > 0.0 {
        (elapsed / estimated_done).clamp(0.25, 4.0)
    } else {
        1.0
    };
    remaining_estimate * pace
}

impl Progress {
    /// `estimates`: each benchmark's expected seconds, in plan order; `runs`, `warmup`: the runs
    /// each takes (its estimate is spread evenly over them).
    pub fn new(estimates: Vec<f64>, runs: u32, warmup: u32, enabled: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = (enabled && terminal).then(|| {
            let total_ms: f64 = estimates.iter().sum::<f64>() * 1000.0;
            let bar = ProgressBar::with_draw_target(
                Some(total_ms.max(1.0) as u64),
                ProgressDrawTarget::stderr(),
            );
            bar.set_style(
                ProgressStyle::with_template("[{elapsed}] [{bar:30}] {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar
        });
        Progress {
            bar,
            lines: enabled && !terminal,
            estimates,
            steps: f64::from((runs + warmup).max(1)),
            rounds: runs,
            estimated_done: 0.0,
            started: Instant::now(),
        }
    }

    fn left(&self) -> f64 {
        let total: f64 = self.estimates.iter().sum();
        time_left(
            (total - self.estimated_done).max(0.0),
            self.estimated_done,
            self.started.elapsed().as_secs_f64(),
        )
    }

    fn round_text(&self, round: u32) -> String {
        if round == 0 {
            "warm-up".to_string()
        } else {
            format!("round {round}/{}", self.rounds.max(round))
        }
    }

    /// A run of benchmark `what` starts in `round` (0: warm-up).
    pub fn start(&self, round: u32, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "{} {what} · about {} left",
                self.round_text(round),
                format_secs(self.left())
            ));
        }
    }

    /// A run (or, in the warm-up round, the warm-up runs) of benchmark `index` ended.
    pub fn finish_run(&mut self, index: usize, round: u32, warmup: u32) {
        let share = if round == 0 { f64::from(warmup) } else { 1.0 };
        self.estimated_done +=
            self.estimates.get(index).copied().unwrap_or(0.0) * share / self.steps;
        if let Some(b) = &self.bar {
            b.set_position((self.estimated_done * 1000.0) as u64);
        }
    }

    /// Round `round` ended after `runs` runs.
    pub fn finish_round(&self, round: u32, runs: usize) {
        if self.lines {
            crate::errln!(
                "osgauge: {} done ({runs} run(s)) · {} elapsed, about {} left",
                self.round_text(round),
                format_secs(self.started.elapsed().as_secs_f64()),
                format_secs(self.left())
            );
        }
    }

    /// A line for the person watching, printed above the bar (or as a line without one).
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| crate::errln!("{line}")),
            None => crate::errln!("{line}"),
        }
    }

    pub fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_read_as_people_read_them() {
        assert_eq!(format_secs(0.4), "0 s");
        assert_eq!(format_secs(42.4), "42 s");
        assert_eq!(format_secs(65.0), "1 min 05 s");
        assert_eq!(format_secs(3725.0), "1 h 02 min");
    }

    #[test]
    fn time_left_follows_the_pace_of_the_finished_benchmarks() {
        // Nothing finished yet: the estimate as it stands.
        assert_eq!(time_left(100.0, 0.0, 3.0), 100.0);
        // The finished ones took twice their estimate: the rest will too.
        assert_eq!(time_left(100.0, 10.0, 20.0), 200.0);
        assert_eq!(time_left(100.0, 10.0, 5.0), 50.0);
        // One wild benchmark does not swing it beyond 4× either way.
        assert_eq!(time_left(100.0, 1.0, 100.0), 400.0);
        assert_eq!(time_left(100.0, 100.0, 1.0), 25.0);
    }
}
