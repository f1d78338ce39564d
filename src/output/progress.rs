//! Progress on stderr, only when stderr is a terminal. The bar is redrawn only when the runner
//! reports an event (between benchmarks), never by a ticking thread during a measurement.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(total: usize, enabled: bool) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{pos}/{len} [{bar:30}] {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress { bar: Some(bar) }
    }

    pub fn start(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    pub fn finish_one(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    pub fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
