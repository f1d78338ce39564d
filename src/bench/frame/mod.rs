//! Frame pacing (thesis seed 003 §5.2.2, Tables 5.4/5.5): a frame loop on an absolute-time timer
//! that copies each frame into a second buffer, at 60 fps with 1-megapixel frames and at 25 fps
//! with 5-megapixel frames.

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Frame pacing: an absolute-time frame loop with a frame copy (60 fps 1 MP, 25 fps 5 MP); no display";

/// The figures the summary of a run shows first for this suite, in this order.
pub const HEADLINES: Headlines = Headlines::Listed(&[
    Headline::new(
        "frame/pacing_60fps_1mp",
        "period_dev_p99",
        "60 fps: p99 period deviation",
    ),
    Headline::new("frame/pacing_60fps_1mp", "late_pct", "60 fps: frames late"),
]);

mod pacing;

use super::Benchmark;
use super::{Headline, Headlines};

/// How the frame suite is configured: the shortest frame loop of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameOptions {
    /// Each run paces frames for at least this long (more when the run time is longer), s.
    pub min_run_s: f64,
    /// Whether this is the quick preset's lighter configuration (said in the record).
    pub quick: bool,
}

impl Default for FrameOptions {
    /// At least ~0.5 s of frames per run: a tail of 30 frames at 60 fps, 13 at 25 fps.
    fn default() -> Self {
        FrameOptions {
            min_run_s: 0.5,
            quick: false,
        }
    }
}

impl FrameOptions {
    /// The quick preset: at least 0.3 s per run (18 frames at 60 fps, 8 at 25 fps).
    pub fn quick() -> FrameOptions {
        FrameOptions {
            min_run_s: 0.3,
            quick: true,
        }
    }
}

pub fn benchmarks(opts: &FrameOptions) -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(pacing::Pacing::new(60.0, 1, "60fps_1mp", opts)),
        Box::new(pacing::Pacing::new(25.0, 5, "25fps_5mp", opts)),
    ]
}
