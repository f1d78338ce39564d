//! TCP round trip against message size, 1 B … 64 KiB (the report's latency-vs-size curve): the
//! same ping-pong as `net/tcp_rtt_*` at each size, one data connection per size, the run's
//! measuring time split evenly between sizes.
//!
//! The curve is the structured fact `rtt_curve` in the params:
//! `[{size_bytes, rtt_p50_us, rtt_p99_us, runs}]` (median over runs of each run's percentile).

use serde_json::{Map, Value, json};

use super::rtt::{METHOD, ping_pong};
use super::{NetOptions, Peer, peer_facts};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::stats::percentile_nearest_rank as percentile;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const SIZES: [(u32, &str); 7] = [
    (1, "rtt_p50_us_1b"),
    (64, "rtt_p50_us_64b"),
    (256, "rtt_p50_us_256b"),
    (1024, "rtt_p50_us_1kib"),
    (4096, "rtt_p50_us_4kib"),
    (16384, "rtt_p50_us_16kib"),
    (65536, "rtt_p50_us_64kib"),
];

pub struct RttSweep {
    info: Info,
    opts: NetOptions,
}

impl RttSweep {
    pub fn new(opts: &NetOptions) -> RttSweep {
        RttSweep {
            info: Info {
                id: "net/tcp_rtt_sweep".into(),
                suite: "net",
                title: "TCP round trip vs message size (1 B … 64 KiB)".into(),
                method: format!(
                    "{METHOD} Sizes 1 B, 64 B, 256 B, 1 KiB, 4 KiB, 16 KiB, 64 KiB, each on its own \
                     data connection for an equal share of the run's measuring time; unpinned. \
                     Each metric is the median round trip at one size; the params' `rtt_curve` \
                     holds p50 and p99 per size (median over runs)."
                ),
                metrics: SIZES
                    .iter()
                    .map(|&(_, name)| MetricSpec {
                        name,
                        unit: Unit::Microseconds,
                        better: Better::Lower,
                        description: "median round trip at this message size, µs",
                    })
                    .collect(),
            },
            opts: opts.clone(),
        }
    }
}

impl Benchmark for RttSweep {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut peer = Peer::open(&self.opts, ctx)?;
        let share = ctx.run_time / SIZES.len() as u32;
        let mut out = peer_facts(RunOutput::default(), &peer);
        let mut p99 = Map::new();
        for &(size, name) in &SIZES {
            let (mut v, _) = ping_pong(&mut peer, ctx, size, None, share)?;
            v.sort_by(|a, b| a.total_cmp(b));
            p99.insert(size.to_string(), percentile(&v, 99.0).into());
            out = out.metric(name, vec![percentile(&v, 50.0)]);
        }
        peer.close();
        Ok(out.fact("rtt_p99_us_by_size", Value::Object(p99)))
    }

    fn finish(&self, runs: &mut [RunOutput]) -> Map<String, Value> {
        let mut curve = Vec::new();
        for &(size, name) in &SIZES {
            let mut p50: Vec<f64> = runs
                .iter()
                .flat_map(|r| r.samples.iter().filter(|(n, _)| *n == name))
                .flat_map(|(_, s)| s.iter().copied())
                .collect();
            let mut p99: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.facts.get("rtt_p99_us_by_size"))
                .filter_map(|m| m.get(size.to_string()).and_then(Value::as_f64))
                .collect();
            if p50.is_empty() {
                continue;
            }
            p50.sort_by(|a, b| a.total_cmp(b));
            p99.sort_by(|a, b| a.total_cmp(b));
            curve.push(json!({
                "size_bytes": size,
                "rtt_p50_us": percentile(&p50, 50.0),
                "rtt_p99_us": if p99.is_empty() { Value::Null } else { percentile(&p99, 50.0).into() },
                "runs": p50.len(),
            }));
        }
        let mut m = Map::new();
        m.insert("rtt_curve".into(), Value::Array(curve));
        m
    }
}
