//! UDP stream at a fixed rate (seed 003 §5.1): datagrams of a fixed size (default 8 KiB) sent on
//! a regular schedule; the peer timestamps every arrival. Inter-arrival deviation from the
//! sending period as a distribution, RFC 3550's smoothed jitter, loss by sequence number, stalls
//! (and whether they recur), and the CPU cost of both ends (service demand).

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde_json::json;

use super::stream::demand_metrics;
use super::{
    NetOptions, OtherEnd, Peer, peer_cpu_facts, peer_facts, with_demand, with_peer_demand,
};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::cpucost::{CpuCost, CpuMeter};
use crate::record::BenchError;
use crate::serve::data::UDP_MAGIC;
use crate::serve::proto::{PeerReport, TestSpec};
use crate::serve::udp_stats::UdpSummary;
use crate::stats::percentile_nearest_rank as percentile;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub struct UdpStream {
    info: Info,
    opts: NetOptions,
}

/// What the sender did.
pub struct Sent {
    pub datagrams: u64,
    pub bytes: u64,
    pub send_errors: u64,
    /// How late each send was against its schedule, µs, sorted.
    pub lateness_us: Vec<f64>,
    pub sndbuf: Option<u64>,
    pub wall_s: f64,
    /// Sequence numbers used in the timed part (the run's measuring time); the rest extended
    /// the CPU-cost window.
    pub timed_seqs: u64,
}

/// How a paced stream may go on past its measuring time: at the same rate, while `more` says so
/// (asked every ~50 ms of traffic), never past `cap`.
pub struct Extension<'a> {
    pub cap: Instant,
    pub more: &'a mut dyn FnMut() -> bool,
}

/// Send `size`-byte datagrams to `to` at `rate_bps` for `duration` (then on at the same rate as
/// `extend` allows), paced by sleeping until each datagram's scheduled time (no spinning; a late
/// sender catches up at once).
pub fn send_paced(
    to: SocketAddr,
    size: u32,
    rate_bps: u64,
    duration: Duration,
    ctx: &RunContext,
    mut extend: Option<Extension<'_>>,
) -> Result<Sent, BenchError> {
    let local: SocketAddr = if to.is_ipv4() {
        "0.0.0.0:0".parse().unwrap()
    } else {
        "[::]:0".parse().unwrap()
    };
    let sock = UdpSocket::bind(local).map_err(|e| BenchError::os("bind udp", e))?;
    sock.connect(to)
        .map_err(|e| BenchError::os("connect udp", e))?;
    let sndbuf = crate::platform::net::udp_buffers(&sock).ok().map(|b| b.0);
    let period = Duration::from_secs_f64(size as f64 * 8.0 / rate_bps as f64);
    let mut buf = vec![0x3cu8; size as usize];
    buf[..4].copy_from_slice(&UDP_MAGIC);
    let base = Instant::now();
    let n_timed = (duration.as_secs_f64() / period.as_secs_f64())
        .ceil()
        .max(1.0) as u64;
    // Past the timed part, whether to go on is asked once per ~50 ms of datagrams.
    let ask_every = ((0.05 / period.as_secs_f64()) as u64).max(1);
    let mut s = Sent {
        datagrams: 0,
        bytes: 0,
        send_errors: 0,
        lateness_us: Vec::with_capacity(n_timed.min(10_000_000) as usize),
        sndbuf,
        wall_s: 0.0,
        timed_seqs: n_timed,
    };
    let mut seq = 0u64;
    loop {
        if seq >= n_timed {
            let Some(x) = extend.as_mut() else { break };
            if (seq - n_timed).is_multiple_of(ask_every)
                && (Instant::now() >= x.cap || ctx.check().is_err() || !(x.more)())
            {
                break;
            }
        }
        if seq.is_multiple_of(256) {
            ctx.check()?;
        }
        let due = base + period.mul_f64(seq as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let at = Instant::now();
        s.lateness_us
            .push(at.saturating_duration_since(due).as_nanos() as f64 / 1e3);
        buf[4..12].copy_from_slice(&seq.to_be_bytes());
        buf[12..20].copy_from_slice(&(at.duration_since(base).as_nanos() as u64).to_be_bytes());
        match sock.send(&buf) {
            Ok(_) => {
                s.datagrams += 1;
                s.bytes += size as u64;
            }
            // ENOBUFS or a refused port: counted; the sequence number is used anyway, so the
            // receiver sees it as lost.
            Err(_) => s.send_errors += 1,
        }
        seq += 1;
    }
    s.wall_s = base.elapsed().as_secs_f64();
    s.lateness_us.sort_by(|a, b| a.total_cmp(b));
    Ok(s)
}

/// One UDP test against the peer: returns what was sent, the peer's report and our CPU cost.
/// With `extend_cost` (and not in a warm-up run) the stream goes on at the same rate past
/// `duration` while this side's CPU cost is below the counters' resolution, up to
/// [`crate::cpucost::extend_until`] — the way a TCP stream's window is extended.
pub fn udp_test(
    peer: &mut Peer,
    ctx: &RunContext,
    size: u32,
    rate_bps: u64,
    duration: Duration,
    idle: Duration,
    extend_cost: bool,
) -> Result<(Sent, PeerReport, CpuCost), BenchError> {
    peer.client
        .send_start(&TestSpec::Udp {
            size,
            rate_bps,
            idle_ms: idle.as_millis() as u32,
        })
        .map_err(peer.err("udp"))?;
    let mut meter = CpuMeter::start(idle).map_err(|e| BenchError::os("CPU counters", e))?;
    let to = peer.client.wait_ready().map_err(peer.err("udp"))?;
    meter
        .restart()
        .map_err(|e| BenchError::os("CPU counters", e))?;
    let until = Instant::now() + duration;
    let cap = crate::cpucost::extend_until(until, ctx.run_time, ctx.deadline, ctx.runs_left);
    let mut more = || meter.peek().is_ok_and(|c| c.wants_more_until(cap));
    let extend = (extend_cost && !ctx.warmup).then_some(Extension {
        cap,
        more: &mut more,
    });
    let sent = send_paced(to, size, rate_bps, duration, ctx, extend)?;
    // Let the last datagrams land before the peer stops listening.
    std::thread::sleep(Duration::from_millis(20));
    let ended = meter.end().map_err(|e| BenchError::os("CPU counters", e))?;
    // Sequence numbers used (failed sends included): the receiver counts the missing as lost.
    let used = sent.datagrams + sent.send_errors;
    peer.client
        .send_finish(sent.bytes, used)
        .map_err(peer.err("udp"))?;
    // Our idle window after the test, while the peer measures its own.
    let tx = ended
        .after_idle()
        .map_err(|e| BenchError::os("CPU counters", e))?;
    let report = peer.client.read_report().map_err(peer.err("udp"))?;
    if let Some(e) = report.errors.first() {
        return Err(BenchError::failed(format!("peer: {e}")));
    }
    if report.udp.is_none() {
        return Err(BenchError::failed("the peer sent no UDP statistics"));
    }
    Ok((sent, report, tx))
}

impl UdpStream {
    pub fn new(opts: &NetOptions) -> UdpStream {
        let m = |name, better, description| MetricSpec {
            name,
            unit: crate::units::unit_of_suffix(name).unwrap_or(Unit::Count),
            better,
            description,
        };
        let mut metrics = vec![
            m(
                "loss_pct",
                Better::Lower,
                "datagrams lost (by sequence number), % of sent",
            ),
            m(
                "jitter_p50_us",
                Better::Lower,
                "median |inter-arrival − sending period|, µs",
            ),
            m(
                "jitter_p99_us",
                Better::Lower,
                "99th percentile |inter-arrival − sending period|, µs",
            ),
            m(
                "jitter_p999_us",
                Better::Lower,
                "99.9th percentile |inter-arrival − sending period|, µs",
            ),
            m(
                "jitter_max_us",
                Better::Lower,
                "largest |inter-arrival − sending period|, µs",
            ),
            m(
                "rfc3550_jitter_us",
                Better::Lower,
                "RFC 3550 smoothed jitter J += (|D| − J)/16 of transit-time differences at the end of the stream (iperf3's figure), µs",
            ),
            m(
                "stalls",
                Better::Lower,
                "receive-side stalls: inter-arrival gaps over max(1 ms, 3 periods) beyond the period, not explained by a late sender",
            ),
            m(
                "received_gbit_s",
                Better::Higher,
                "payload bits the receiver got / first-to-last arrival, Gbit/s",
            ),
        ];
        metrics.extend(demand_metrics());
        UdpStream {
            info: Info {
                id: "net/udp_stream".into(),
                suite: "net",
                title: format!(
                    "UDP stream at a fixed rate ({} B at {} Mbit/s unless --size/--rate)",
                    opts.udp_size(),
                    opts.udp_rate() / 1_000_000
                ),
                method: format!(
                    "Seed 003 §5.1: the client sends datagrams of a fixed size (default 8 KiB) on a \
                     regular schedule (default 200 Mbit/s; paced by sleeping until each one is due, \
                     a late sender catches up at once; its lateness is recorded) for the run's \
                     measuring time, and on at the same rate while the CPU cost's window is \
                     below the counters' resolution (see CPU cost; facts send_s and \
                     timed_datagrams; loss, jitter and stalls cover the whole stream); each carries a sequence number and its send time. The peer \
                     (in-process on 127.0.0.1 by default, or --peer; receive buffer asked 4 MiB, \
                     read back) timestamps every arrival. Jitter = |inter-arrival − period × \
                     sequence step| between consecutive arrivals, as a distribution; RFC 3550's \
                     smoothed jitter beside it; loss by sequence number; stalls are gaps over \
                     max(1 ms, 3 periods), attributed to the sender when its own send times show \
                     the gap, and called periodic when ≥ 3 recur with CV < 10 %. CPU cost: {}.",
                    crate::cpucost::method()
                ),
                metrics,
            },
            opts: opts.clone(),
        }
    }
}

/// The jitter series and stalls of a run, for the report.
pub fn series_fact(u: &UdpSummary) -> serde_json::Value {
    json!({
        "period_us": u.period_us,
        "series": u.series,
        "stalls": u.stalls,
        "stall_threshold_us": u.stall_threshold_us,
        "stall_period_s": u.stall_period_s,
        "dev_p50_us": u.dev_p50_us,
        "dev_p99_us": u.dev_p99_us,
        "dev_p999_us": u.dev_p999_us,
        "dev_max_us": u.dev_max_us,
    })
}

impl Benchmark for UdpStream {
    fn info(&self) -> &Info {
        &self.info
    }

    /// Each run: the idle windows before and after the stream (both ends idle together), the
    /// measuring time and its set-up.
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        self.opts.stream_estimate_s(e)
    }

    fn estimate_extension_s(&self, e: &crate::bench::Estimate) -> f64 {
        super::stream_extension_s(e)
    }

    fn params(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("size_bytes".into(), self.opts.udp_size().into());
        m.insert("rate_bit_s".into(), self.opts.udp_rate().into());
        m
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut peer = Peer::open(&self.opts, ctx)?;
        let (size, rate) = (self.opts.udp_size(), self.opts.udp_rate());
        let (sent, report, tx) = udp_test(
            &mut peer,
            ctx,
            size,
            rate,
            ctx.run_time,
            self.opts.idle(),
            true,
        )?;
        let mut out = peer_facts(RunOutput::default(), &peer);
        let other = OtherEnd::of(&peer);
        peer.close();
        let u = report.udp.clone().expect("checked in udp_test");
        if u.received == 0 {
            return Err(BenchError::failed(format!(
                "the peer received none of {} datagrams",
                sent.datagrams
            )));
        }
        out = out
            .fact("datagrams_sent", sent.datagrams)
            .fact("send_s", sent.wall_s)
            .fact(
                "timed_datagrams",
                sent.timed_seqs.min(sent.datagrams + sent.send_errors),
            )
            .fact("send_errors", sent.send_errors)
            .fact("datagrams_received", u.received)
            .fact("duplicates", u.duplicates)
            .fact("reordered", u.reordered)
            .fact(
                "sender_lateness_p99_us",
                percentile(&sent.lateness_us, 99.0),
            )
            .fact(
                "sender_stalls",
                u.stalls.iter().filter(|s| s.sender).count() as u64,
            )
            .fact("jitter", series_fact(&u))
            .fact("tx_cpu_net_pct_all_cpus", tx.pct_all_cpus());
        if let Some(b) = sent.sndbuf {
            out = out.fact("sndbuf_bytes", b);
        }
        if let Some(b) = report.rcvbuf {
            out = out.fact("peer_rcvbuf_bytes", b);
        }
        if let Some(p) = u.stall_period_s {
            out = out.fact("stall_period_s", p);
        }
        out = with_demand(
            out,
            "tx_service_demand_us_per_kib",
            &tx,
            sent.bytes,
            other.cpu_s(report.cpu.as_ref()),
        );
        out = peer_cpu_facts(out, &report, "rx");
        let gbit = if u.active_s > 0.0 {
            vec![u.bytes as f64 * 8.0 / u.active_s / 1e9]
        } else {
            vec![]
        };
        out = out
            .metric("loss_pct", vec![u.loss_pct])
            .metric("jitter_p50_us", vec![u.dev_p50_us])
            .metric("jitter_p99_us", vec![u.dev_p99_us])
            .metric("jitter_p999_us", vec![u.dev_p999_us])
            .metric("jitter_max_us", vec![u.dev_max_us])
            .metric("rfc3550_jitter_us", vec![u.rfc3550_jitter_us])
            .metric("stalls", vec![u.path_stalls as f64])
            .metric("received_gbit_s", gbit)
            .metric(
                "tx_process_us_per_kib",
                tx.process_us_per_kib(sent.bytes).into_iter().collect(),
            );
        Ok(with_peer_demand(out, &report, u.bytes, other, &tx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream goes on at its rate past the measuring time while the extension asks for more,
    /// asked about every 50 ms, and stops at once when it says no; without one it stops on time.
    #[test]
    fn a_paced_stream_sends_on_only_while_its_extension_asks() {
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = sink.local_addr().unwrap();
        // 1 KiB every 1 ms (8.192 Mbit/s), 50 ms timed: 50 datagrams.
        let (size, rate) = (1024u32, 8_192_000u64);
        let run = Duration::from_millis(50);
        crate::bench::testutil::with_ctx(run, Duration::from_secs(30), |ctx| {
            let plain = send_paced(to, size, rate, run, ctx, None).unwrap();
            assert_eq!(plain.timed_seqs, 50);
            assert_eq!(plain.datagrams + plain.send_errors, 50);
            // Asked three times: yes, yes, no — two more ~50 ms stretches.
            let mut asked = 0;
            let mut more = || {
                asked += 1;
                asked < 3
            };
            let ext = Extension {
                cap: Instant::now() + Duration::from_secs(10),
                more: &mut more,
            };
            let s = send_paced(to, size, rate, run, ctx, Some(ext)).unwrap();
            assert_eq!(s.timed_seqs, 50);
            assert_eq!(s.datagrams + s.send_errors, 150, "{} sent", s.datagrams);
            assert_eq!(asked, 3);
            // A cap already passed: nothing past the timed part, `more` never asked.
            let mut never = || -> bool { panic!("asked past the cap") };
            let ext = Extension {
                cap: Instant::now(),
                more: &mut never,
            };
            let s = send_paced(to, size, rate, run, ctx, Some(ext)).unwrap();
            assert_eq!(s.datagrams + s.send_errors, 50);
        });
    }
}
