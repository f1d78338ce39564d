//! One frame-pacing configuration: `frame/pacing_<fps>fps_<n>mp`.

use std::hint::black_box;

use super::super::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::clock::{now_ns, sleep_until_ns};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

/// Bytes per pixel: 16-bit greyscale, like the thesis's 2 MB one-megapixel X-ray frames.
const BYTES_PER_PIXEL: usize = 2;

pub struct Pacing {
    info: Info,
    fps: f64,
    bytes: usize,
    min_frames: usize,
    opts: super::FrameOptions,
}

impl Pacing {
    pub fn new(fps: f64, megapixels: usize, name: &str, opts: &super::FrameOptions) -> Self {
        let bytes = megapixels * 1_000_000 * BYTES_PER_PIXEL;
        // At least `min_run_s` of frames per run, so a short run still has a tail.
        let min_frames = (fps * opts.min_run_s).ceil() as usize;
        Pacing {
            info: Info {
                id: format!("frame/pacing_{name}"),
                suite: "frame",
                title: format!("Frame pacing, {fps} fps, {megapixels} MP frames"),
                method: format!(
                    "A frame loop at {fps} fps: each period the thread sleeps until an absolute \
                     deadline (start + i × period, {sleep}), reads the clock (the frame's \
                     \"present\" time), then copies a {megapixels}-megapixel frame ({mb} MB, \
                     {BYTES_PER_PIXEL} bytes per pixel) into a second buffer — the stand-in for the \
                     texture upload. Frame time = present(i) − present(i−1); effective fps = \
                     frames / (last − first present); frames late = present later than its \
                     deadline by more than half a period; period deviation = |frame time − \
                     period|. At least {min_frames} frames per run (more when the run time is \
                     longer). Presenting to a real display (VSync, the driver's upload) is OUT OF \
                     SCOPE: no display is used, so this measures the OS's timer and copy pacing \
                     only.",
                    sleep = crate::platform::clock::SLEEP_DESCRIPTION,
                    mb = bytes as f64 / 1e6,
                ),
                metrics: vec![
                    MetricSpec {
                        name: "effective_fps",
                        unit: Unit::OpsPerSecond,
                        better: Better::Neutral,
                        description: "frames presented per second over the run (target: the nominal rate)",
                    },
                    MetricSpec {
                        name: "frame_time",
                        unit: Unit::Nanoseconds,
                        better: Better::Neutral,
                        description: "time between consecutive presents (mean/SD/min/max/p99 over the frames)",
                    },
                    MetricSpec {
                        name: "period_dev_p99",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "99th percentile of |frame time − period| in the run",
                    },
                    MetricSpec {
                        name: "late_pct",
                        unit: Unit::Percent,
                        better: Better::Lower,
                        description: "frames presented more than half a period after their deadline, % of frames",
                    },
                    MetricSpec {
                        name: "copy_time_per_mb",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time to copy one MB (10^6 B) of frame into the second buffer",
                    },
                ],
            },
            fps,
            bytes,
            min_frames,
            opts: *opts,
        }
    }
}

impl Benchmark for Pacing {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("fps".into(), self.fps.into());
        m.insert("frame_bytes".into(), (self.bytes as u64).into());
        m.insert("min_frames".into(), (self.min_frames as u64).into());
        m.insert(
            "min_frames_reason".into(),
            format!(
                "{}at least {} s of frames per run",
                if self.opts.quick {
                    "quick preset: "
                } else {
                    ""
                },
                self.opts.min_run_s
            )
            .into(),
        );
        m.insert(
            "display".into(),
            "none (presenting to a display is out of scope)".into(),
        );
        m
    }

    /// A run paces frames for the run time, at least `min_frames` periods.
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let run = e
            .run_time
            .as_secs_f64()
            .max(self.min_frames as f64 / self.fps);
        e.all_runs() * (run + crate::bench::DEFAULT_SETUP_S)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let period = 1e9 / self.fps;
        let frames = ((ctx.run_time.as_secs_f64() * self.fps).ceil() as usize).max(self.min_frames);
        let mut src = vec![0u8; self.bytes];
        let mut dst = vec![0u8; self.bytes];
        // First-touch both buffers so page faults are not timed.
        for (i, b) in src.iter_mut().enumerate().step_by(4096) {
            *b = i as u8;
        }
        dst.copy_from_slice(&src);
        let start = now_ns() + period as u64;
        let mut presents = Vec::with_capacity(frames);
        let mut copy_ns = Vec::with_capacity(frames);
        let mut late = 0usize;
        for i in 0..frames {
            ctx.check()?;
            let deadline = start + (i as f64 * period) as u64;
            sleep_until_ns(deadline).map_err(|e| crate::bench::os_err("sleep_until", e))?;
            let t = now_ns();
            if t.saturating_sub(deadline) as f64 > period / 2.0 {
                late += 1;
            }
            presents.push(t);
            src[i % self.bytes] = i as u8; // a new frame each period
            let c0 = now_ns();
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
            copy_ns.push((now_ns() - c0) as f64 / (self.bytes as f64 / 1e6));
        }
        let frame_time: Vec<f64> = presents.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mut dev: Vec<f64> = frame_time.iter().map(|f| (f - period).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let p99 = dev[((dev.len() as f64 * 0.99).ceil() as usize).clamp(1, dev.len()) - 1];
        let span = (presents[presents.len() - 1] - presents[0]) as f64;
        let fps = (presents.len() - 1) as f64 / (span / 1e9);
        Ok(RunOutput::default()
            .metric("effective_fps", vec![fps])
            .metric("frame_time", frame_time)
            .metric("period_dev_p99", vec![p99])
            .metric("late_pct", vec![100.0 * late as f64 / frames as f64])
            .metric("copy_time_per_mb", copy_ns)
            .fact("frames", frames as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    /// A short run yields every metric, each within its range (whether the fps is near nominal
    /// is a timing relation: tests/it/timing.rs judges it in a quiet window).
    #[test]
    fn short_run_measures_every_metric() {
        let b = Pacing::new(60.0, 1, "60fps_1mp", &super::super::FrameOptions::default());
        let timing = crate::timing::calibrate();
        let cancel = AtomicBool::new(false);
        let ctx = RunContext::new(
            0,
            false,
            Duration::from_millis(100),
            Instant::now() + Duration::from_secs(10),
            &timing,
            &cancel,
        );
        let out = b.run(&ctx).unwrap();
        let names: Vec<&str> = out.samples.iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            [
                "effective_fps",
                "frame_time",
                "period_dev_p99",
                "late_pct",
                "copy_time_per_mb"
            ]
        );
        let get = |n: &str| out.samples.iter().find(|s| s.0 == n).unwrap().1.clone();
        assert_eq!(get("frame_time").len(), 29);
        assert!(get("copy_time_per_mb").iter().all(|v| *v > 0.0));
        let late = get("late_pct")[0];
        assert!((0.0..=100.0).contains(&late));
        let fps = get("effective_fps")[0];
        assert!(fps.is_finite() && fps > 0.0, "effective fps {fps}");
    }
}

#[cfg(test)]
mod preset_tests {
    use super::super::FrameOptions;
    use super::*;

    /// The quick preset's shorter frame loop is in the record and in the estimate.
    #[test]
    fn the_quick_preset_paces_fewer_frames_and_says_so() {
        let e = crate::bench::Estimate {
            runs: 4,
            warmup: 1,
            run_time: std::time::Duration::from_millis(50),
        };
        let std = Pacing::new(25.0, 5, "25fps_5mp", &FrameOptions::default());
        let quick = Pacing::new(25.0, 5, "25fps_5mp", &FrameOptions::quick());
        assert_eq!(std.params()["min_frames"], 13);
        assert_eq!(quick.params()["min_frames"], 8);
        let said = quick.params()["min_frames_reason"].to_string();
        assert!(said.contains("quick preset: at least 0.3 s"), "{said}");
        assert!(
            !std.params()["min_frames_reason"]
                .to_string()
                .contains("quick")
        );
        assert!(quick.estimate_s(&e) < std.estimate_s(&e));
        assert!(quick.estimate_s(&e) >= 5.0 * 8.0 / 25.0);
    }
}
