//! TCP round trip (lmbench `lat_tcp`, seed 002 §5.1): the client sends `size` bytes, the peer
//! echoes them, the client times send → full echo received, TCP_NODELAY on both ends. Per run:
//! p50, p99 and max of every round trip in the run's measuring time.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::{NetOptions, Peer, peer_facts};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::serve::proto::{PeerReport, TestSpec};
use crate::stats::percentile_nearest_rank as percentile;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub struct Rtt {
    info: Info,
    size: u32,
    pinned: bool,
    opts: NetOptions,
}

/// Round trips before timing starts (connection warm-up), discarded.
pub const WARMUP_TRIPS: usize = 20;

pub const METHOD: &str = "Ping-pong over one TCP connection with TCP_NODELAY (lmbench lat_tcp): \
    the client writes the message, the peer (an `osgauge serve` session: in-process on 127.0.0.1 \
    by default, or --peer) reads it whole and writes it back; each round trip is timed on the \
    client with the monotonic clock from before the write until the whole echo has been read. \
    The first 20 round trips are discarded; then every round trip in the run's measuring time \
    is kept, and the run reports their p50, p99 and max (µs).";

impl Rtt {
    pub fn new(size: u32, pinned: bool, opts: &NetOptions) -> Rtt {
        let pin = if pinned { "_pinned" } else { "" };
        let pin_method = if pinned {
            " Pinned: the client's measuring thread runs pinned to the first allowed CPU and the \
             in-process peer's echo thread to the second (the first when there is only one); \
             affinities are read back and recorded. A remote peer is not pinned."
        } else {
            " Unpinned: the scheduler places both ends."
        };
        Rtt {
            info: Info {
                id: format!("net/tcp_rtt_{size}b{pin}"),
                suite: "net",
                title: format!(
                    "TCP round trip, {size} B{}",
                    if pinned { ", pinned" } else { "" }
                ),
                method: format!("{METHOD}{pin_method}"),
                metrics: vec![
                    MetricSpec {
                        name: "rtt_p50_us",
                        unit: Unit::Microseconds,
                        better: Better::Lower,
                        description: "median round trip of the run, µs",
                    },
                    MetricSpec {
                        name: "rtt_p99_us",
                        unit: Unit::Microseconds,
                        better: Better::Lower,
                        description: "99th percentile round trip of the run, µs",
                    },
                    MetricSpec {
                        name: "rtt_max_us",
                        unit: Unit::Microseconds,
                        better: Better::Lower,
                        description: "longest round trip of the run, µs",
                    },
                ],
            },
            size,
            pinned,
            opts: opts.clone(),
        }
    }
}

/// Pinning of one ping-pong: CPUs for the client thread and the peer's echo thread.
#[derive(Clone, Copy)]
pub struct Pins {
    pub client: usize,
    pub peer: Option<usize>,
}

pub fn choose_pins(peer: &Peer) -> Result<Pins, BenchError> {
    let cpus = crate::platform::allowed_cpus().map_err(|e| crate::bench::os_err("affinity", e))?;
    let first = *cpus
        .first()
        .ok_or_else(|| BenchError::failed("no allowed CPU"))?;
    let second = cpus.get(1).copied().unwrap_or(first);
    Ok(Pins {
        client: first,
        peer: (!peer.remote()).then_some(second),
    })
}

/// Time round trips of `size` bytes for `duration` on a fresh data connection; returns the round
/// trips in µs (unsorted) and the peer's report.
pub fn ping_pong(
    peer: &mut Peer,
    ctx: &RunContext,
    size: u32,
    pins: Option<Pins>,
    duration: Duration,
) -> Result<(Vec<f64>, PeerReport), BenchError> {
    let data = peer
        .client
        .start(&TestSpec::Echo {
            size,
            pin_cpu: pins.and_then(|p| p.peer),
        })
        .map_err(peer.err("echo"))?;
    // Every write and read of the data connection ends with the run's bound (a peer that echoes
    // one byte a second, Ctrl-C); the bound costs nothing while the echo comes back.
    let bound = peer.bound();
    let conn = crate::platform::net::connect_bounded(data, &bound)
        .map_err(|e| super::io_err("connect", e))?;
    crate::platform::wait::slice_timeouts(&conn, &bound)
        .map_err(|e| BenchError::os("setsockopt", e))?;
    let mut conn = crate::platform::wait::Bounded::new(conn, bound);
    let result = std::thread::scope(|s| {
        s.spawn(|| -> Result<Vec<f64>, BenchError> {
            if let Some(p) = pins {
                crate::platform::pin_current_thread(p.client)
                    .map_err(|e| crate::bench::os_err("pin thread", e))?;
            }
            let msg = vec![0x5au8; size as usize];
            let mut back = vec![0u8; size as usize];
            let mut trip = |conn: &mut crate::platform::wait::Bounded<
                '_,
                std::net::TcpStream,
            >|
             -> Result<f64, BenchError> {
                let t0 = Instant::now();
                conn.write_all(&msg)
                    .map_err(|e| super::io_err("write", e))?;
                conn.read_exact(&mut back)
                    .map_err(|e| super::io_err("read", e))?;
                Ok(t0.elapsed().as_nanos() as f64 / 1e3)
            };
            for _ in 0..WARMUP_TRIPS {
                trip(&mut conn)?;
            }
            let start = Instant::now();
            let mut v = Vec::new();
            while start.elapsed() < duration || v.len() < 10 {
                if v.len() % 64 == 0 {
                    ctx.check()?;
                }
                v.push(trip(&mut conn)?);
            }
            if back != msg {
                return Err(BenchError::failed("the echo differs from what was sent"));
            }
            Ok(v)
        })
        .join()
        .unwrap_or_else(|_| Err(BenchError::failed("measuring thread panicked")))
    });
    let sent =
        (size as u64) * (result.as_ref().map(|v| v.len()).unwrap_or(0) + WARMUP_TRIPS) as u64;
    drop(conn);
    let report = peer.client.finish(sent, 0);
    match result {
        Ok(v) => Ok((v, report.map_err(peer.err("echo"))?)),
        Err(e) => Err(super::with_peer_reason(e, report.as_ref())),
    }
}

impl Benchmark for Rtt {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("size_bytes".into(), self.size.into());
        m.insert("pinned".into(), self.pinned.into());
        m
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut peer = Peer::open(&self.opts, ctx)?;
        let pins = if self.pinned {
            Some(choose_pins(&peer)?)
        } else {
            None
        };
        let (mut v, report) = ping_pong(&mut peer, ctx, self.size, pins, ctx.run_time)?;
        let mut out = peer_facts(RunOutput::default(), &peer);
        peer.close();
        v.sort_by(|a, b| a.total_cmp(b));
        out = out
            .fact("round_trips", v.len() as u64)
            .fact("tcp_nodelay", true);
        if let Some(p) = pins {
            out = out.fact("client_cpu", p.client);
            out = match (report.pinned_cpu, report.pin_error) {
                (Some(c), _) => out.fact("peer_cpu", c),
                (None, Some(e)) => {
                    return Err(BenchError::failed(format!("pinning the peer: {e}")));
                }
                (None, None) => out.fact("peer_cpu", "not pinned (remote peer)"),
            };
        }
        Ok(out
            .metric("rtt_p50_us", vec![percentile(&v, 50.0)])
            .metric("rtt_p99_us", vec![percentile(&v, 99.0)])
            .metric("rtt_max_us", vec![*v.last().unwrap_or(&f64::NAN)]))
    }
}
