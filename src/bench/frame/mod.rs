//! Frame pacing (thesis seed 003 §5.2.2, Tables 5.4/5.5): a frame loop on an absolute-time timer
//! that copies each frame into a second buffer, at 60 fps with 1-megapixel frames and at 25 fps
//! with 5-megapixel frames.

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Frame pacing: an absolute-time frame loop with a frame copy (60 fps 1 MP, 25 fps 5 MP); no display";

mod pacing;

use super::Benchmark;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(pacing::Pacing::new(60.0, 1, "60fps_1mp")),
        Box::new(pacing::Pacing::new(25.0, 5, "25fps_5mp")),
    ]
}
