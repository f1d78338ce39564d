//! Progress on stderr. On a terminal: a bar weighted by each benchmark's estimated time, with the
//! time left; it is redrawn only when the runner reports an event (between benchmarks), never by a
//! ticking thread during a measurement. Elsewhere (a log, CI): one line per finished benchmark.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    /// One line per benchmark on stderr (not a terminal, not quiet).
    lines: bool,
    estimates: Vec<f64>,
    /// Estimated seconds of the benchmarks finished so far.
    estimated_done: f64,
    finished: usize,
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
    /// `estimates`: each benchmark's expected seconds, in run order.
    pub fn new(estimates: Vec<f64>, enabled: bool) -> Progress {
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
            estimated_done: 0.0,
            finished: 0,
            started: Instant::now(),
        }
    }

    fn left(&self) -> f64 {
        let remaining: f64 = self.estimates.iter().skip(self.finished).sum();
        time_left(
            remaining,
            self.estimated_done,
            self.started.elapsed().as_secs_f64(),
        )
    }

    pub fn start(&self, index: usize, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "{}/{} {what} · about {} left",
                index + 1,
                self.estimates.len(),
                format_secs(self.left())
            ));
        }
    }

    /// Benchmark `index` (`what`) finished after `wall_s` seconds.
    pub fn finish_one(&mut self, index: usize, what: &str, wall_s: f64) {
        self.estimated_done += self.estimates.get(index).copied().unwrap_or(0.0);
        self.finished = index + 1;
        if let Some(b) = &self.bar {
            b.set_position((self.estimated_done * 1000.0) as u64);
        }
        if self.lines {
            crate::errln!(
                "osgauge: [{}/{}] {what} {:.1} s · {} elapsed, about {} left",
                index + 1,
                self.estimates.len(),
                wall_s,
                format_secs(self.started.elapsed().as_secs_f64()),
                format_secs(self.left())
            );
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
