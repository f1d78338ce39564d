//! The highest loss-free UDP rate, found by a bounded ramp: the same paced stream as
//! `net/udp_stream` at rates doubling from 50 Mbit/s, each step a short stream of its own, until
//! a step loses a datagram, the sender cannot keep the rate, or the last step (6.4 Gbit/s).

use std::time::Duration;

use serde_json::json;

use super::udp_stream::udp_test;
use super::{NetOptions, Peer, peer_facts};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::harness::RunContext;
use crate::model::BenchError;
use crate::units::{Better, Unit};

/// Rates tried, bit/s.
pub const STEPS: [u64; 8] = [
    50_000_000,
    100_000_000,
    200_000_000,
    400_000_000,
    800_000_000,
    1_600_000_000,
    3_200_000_000,
    6_400_000_000,
];
/// A step counts only when the sender reached this share of the rate.
pub const SENDER_SHARE: f64 = 0.95;

pub struct UdpRamp {
    info: Info,
    opts: NetOptions,
}

impl UdpRamp {
    pub fn new(opts: &NetOptions) -> UdpRamp {
        UdpRamp {
            info: Info {
                id: "net/udp_max_rate".into(),
                suite: "net",
                title: format!(
                    "Highest loss-free UDP rate ({} B datagrams)",
                    opts.udp_size()
                ),
                method:
                    "A bounded ramp of paced UDP streams (as net/udp_stream, --size datagrams): \
                         50, 100, 200 … 6400 Mbit/s, each step lasting a quarter of the run's \
                         measuring time (at least 50 ms). The ramp stops at the first step that \
                         loses a datagram (by sequence number) or whose sender reached under 95 % \
                         of the rate (then the figure is sender-limited, recorded); the metric is \
                         the highest step rate received without loss, 0 when even the first lost."
                        .into(),
                metrics: vec![MetricSpec {
                    name: "max_lossfree_gbit_s",
                    unit: Unit::GigabitsPerSecond,
                    better: Better::Higher,
                    description: "highest offered rate received without loss, Gbit/s",
                }],
            },
            opts: opts.clone(),
        }
    }
}

impl Benchmark for UdpRamp {
    fn info(&self) -> &Info {
        &self.info
    }

    /// A run steps through the ramp (at most every step), each step a quarter of the run time
    /// (at least 50 ms) plus its set-up.
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let step = (e.run_time / 4)
            .max(Duration::from_millis(50))
            .as_secs_f64();
        e.all_runs() * STEPS.len() as f64 * (step + 0.025)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut peer = Peer::open(&self.opts, ctx)?;
        let size = self.opts.udp_size();
        let step_time = (ctx.run_time / 4).max(Duration::from_millis(50));
        let mut best = 0u64;
        let mut steps = Vec::new();
        let mut stop = "reached the last step";
        for rate in STEPS {
            let (sent, report, _) =
                udp_test(&mut peer, ctx, size, rate, step_time, Duration::ZERO, false)?;
            let u = report.udp.expect("checked in udp_test");
            let achieved = sent.bytes as f64 * 8.0 / sent.wall_s.max(1e-9);
            steps.push(json!({
                "rate_bit_s": rate, "sender_bit_s": achieved, "loss_pct": u.loss_pct,
                "lost": u.lost, "sent": sent.datagrams,
            }));
            if u.lost > 0 || sent.send_errors > 0 {
                stop = "loss";
                break;
            }
            if achieved < SENDER_SHARE * rate as f64 {
                stop = "sender-limited";
                break;
            }
            best = rate;
        }
        let out = peer_facts(RunOutput::default(), &peer);
        peer.close();
        Ok(out
            .fact("steps", serde_json::Value::Array(steps))
            .fact("ramp_stopped_by", stop)
            .metric("max_lossfree_gbit_s", vec![best as f64 / 1e9]))
    }
}
