//! Network suite: TCP round trip (64 B and 1 B, pinned and unpinned, a size sweep), TCP bandwidth
//! (1 stream and one per CPU), connection setup and teardown, a UDP stream at a fixed rate
//! (inter-arrival deviation, RFC 3550 jitter, loss, stalls) and the highest loss-free UDP rate —
//! each with the CPU cost of the bytes (service demand) where data is streamed.
//!
//! Every benchmark talks to a peer through the `osgauge serve` protocol ([`crate::serve`]): by
//! default an in-process peer on 127.0.0.1 started for the run (loopback: no NIC, no interrupts,
//! no coalescing, and both ends share the machine's CPUs); with `--peer host:port` the same
//! benchmarks run against that `osgauge serve`, which reports its own CPU cost.
//!
//! Metric values are stored in the unit their name ends with (`_us`, `_gbit_s`, `_us_per_kib`,
//! `_pct`) and marked unit `count` in the record, since the record has no µs or Gbit/s unit.

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Network: TCP round trip and size sweep, bandwidth (1 and N streams) with CPU cost, connection setup/teardown, UDP stream jitter/loss and highest loss-free rate";

/// The figures the summary of a run shows first for this suite, in this order.
pub const HEADLINES: Headlines = Headlines::Listed(&[
    Headline::new("net/tcp_rtt_64b", "rtt_p50_us", "TCP round trip 64 B, p50"),
    Headline::new("net/tcp_stream", "throughput_gbit_s", "TCP stream"),
    Headline::new("net/udp_stream", "jitter_p99_us", "UDP jitter p99"),
]);

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use super::Benchmark;
use super::{Headline, Headlines};
use crate::record::BenchError;
use crate::serve::client::Client;
use crate::serve::proto::PeerReport;
use crate::serve::{self, ServerConfig, ServerHandle};
use crate::timing::RunContext;

pub mod connect;
pub mod rtt;
pub mod rtt_sweep;
pub mod stream;
pub mod udp_ramp;
pub mod udp_stream;

/// Default UDP datagram size (seed 003: 8 KB datagrams).
pub const DEFAULT_UDP_SIZE: u32 = 8192;
/// Default UDP rate, bit/s (paced by sleeping, so the sender does not spin).
pub const DEFAULT_UDP_RATE: u64 = 200_000_000;

/// How the net suite is configured (`osgauge micro net --peer … --rate … --size …`).
#[derive(Clone, Default)]
pub struct NetOptions {
    /// A remote `osgauge serve`; None = an in-process peer on 127.0.0.1.
    pub peer: Option<SocketAddr>,
    pub token: Option<Vec<u8>>,
    /// UDP stream rate, bit/s.
    pub rate_bps: Option<u64>,
    /// UDP datagram size, bytes.
    pub size: Option<u32>,
    /// The quick preset's shorter idle baselines and ramp.
    pub quick: bool,
}

impl fmt::Debug for NetOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetOptions")
            .field("peer", &self.peer)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("rate_bps", &self.rate_bps)
            .field("size", &self.size)
            .field("quick", &self.quick)
            .finish()
    }
}

impl NetOptions {
    pub fn quick() -> NetOptions {
        NetOptions {
            quick: true,
            ..Default::default()
        }
    }
    /// Idle baseline before each CPU-cost measurement.
    pub fn idle(&self) -> Duration {
        Duration::from_millis(if self.quick { 50 } else { 200 })
    }
    pub fn udp_size(&self) -> u32 {
        self.size.unwrap_or(DEFAULT_UDP_SIZE)
    }
    pub fn udp_rate(&self) -> u64 {
        self.rate_bps.unwrap_or(DEFAULT_UDP_RATE)
    }
    /// Wall time of a stream benchmark (TCP or UDP) with a CPU-cost window: every run measures
    /// for `run_time` after two idle baselines (this end's and the peer's).
    pub fn stream_estimate_s(&self, e: &super::Estimate) -> f64 {
        e.timed(super::DEFAULT_SETUP_S) + e.all_runs() * 2.0 * self.idle().as_secs_f64()
    }
}

/// Beyond [`NetOptions::stream_estimate_s`]: every measured run's stream sent on to the CPU-cost
/// window's cap ([`crate::cpucost::max_extension`]).
pub fn stream_extension_s(e: &super::Estimate) -> f64 {
    f64::from(e.runs) * crate::cpucost::max_extension(e.run_time).as_secs_f64()
}

pub fn benchmarks(opts: &NetOptions) -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(rtt::Rtt::new(64, false, opts)),
        Box::new(rtt::Rtt::new(1, false, opts)),
        Box::new(rtt::Rtt::new(64, true, opts)),
        Box::new(rtt_sweep::RttSweep::new(opts)),
        Box::new(stream::Stream::new(false, opts)),
        Box::new(stream::Stream::new(true, opts)),
        Box::new(connect::Connect::new(opts)),
        Box::new(udp_stream::UdpStream::new(opts)),
        Box::new(udp_ramp::UdpRamp::new(opts)),
    ]
}

/// The peer of one run: a client session, and the in-process server when there is no remote one.
pub struct Peer<'a> {
    pub client: Client<'a>,
    local: Option<ServerHandle>,
}

/// Time past a run's deadline a client may still wait for the peer (its final report).
pub const REPORT_GRACE: Duration = Duration::from_secs(2);

impl<'a> Peer<'a> {
    /// Connect to the peer (or start the in-process one); every blocking step of the session, and
    /// of the data connections made with [`Peer::bound`], ends at the run's deadline (plus
    /// [`REPORT_GRACE`]) or at Ctrl-C/SIGTERM.
    pub fn open(opts: &NetOptions, ctx: &RunContext<'a>) -> Result<Peer<'a>, BenchError> {
        let bound = ctx.bound(REPORT_GRACE);
        let ended = |e: String| match bound.check() {
            Err(b) if crate::platform::wait::interrupted(&b) => BenchError::interrupted(),
            Err(_) => BenchError::timeout(format!("time bound reached: {e}")),
            Ok(()) => BenchError::failed(e),
        };
        match opts.peer {
            Some(a) => Ok(Peer {
                client: Client::connect_bounded(a, opts.token.as_deref(), bound).map_err(ended)?,
                local: None,
            }),
            None => {
                let h = serve::start(ServerConfig::loopback())
                    .map_err(|e| BenchError::os("starting the in-process peer", e))?;
                let client = Client::connect_bounded(h.addr(), None, bound).map_err(ended)?;
                Ok(Peer {
                    client,
                    local: Some(h),
                })
            }
        }
    }

    /// What ends each blocking step with this peer.
    pub fn bound(&self) -> crate::platform::wait::Bound<'a> {
        self.client.bound()
    }

    /// Map an error of a step with the peer: the bound's end is a timeout or an interruption,
    /// anything else a failure of `what`.
    pub fn err(&self, what: &'static str) -> impl Fn(String) -> BenchError + '_ {
        move |e| match self.bound().check() {
            Err(b) if crate::platform::wait::interrupted(&b) => BenchError::interrupted(),
            Err(_) => BenchError::timeout(format!("time bound reached: {what}: {e}")),
            Ok(()) => BenchError::failed(format!("{what}: {e}")),
        }
    }

    pub fn remote(&self) -> bool {
        self.local.is_none()
    }

    pub fn describe(&self) -> String {
        if self.remote() {
            format!("{} at {}", self.client.server, self.client.peer())
        } else {
            format!("in-process peer on loopback {}", self.client.peer())
        }
    }

    pub fn close(self) {
        self.client.bye();
        drop(self.local);
    }
}

/// Facts every run records about its peer.
pub fn peer_facts(out: super::RunOutput, peer: &Peer) -> super::RunOutput {
    out.fact("peer", peer.describe())
        .fact("same_host", !peer.remote())
}

/// An I/O error of a data connection under a [`crate::platform::wait::Bound`]: the bound's end
/// (deadline, Ctrl-C) is a timeout or an interruption, anything else a failure of `call`.
/// A data phase that failed on this side (a reset, a closed connection) often failed because the
/// peer ended it on purpose: a limit of `osgauge serve` (`--max-bytes`, the test's time bound).
/// `e` with the peer's own word on it (`report`, the reply to `finish`), so the user reads which
/// limit ended the test instead of only "Connection reset by peer".
pub fn with_peer_reason(e: BenchError, report: Result<&PeerReport, &String>) -> BenchError {
    let why = match report {
        Ok(r) => r.errors.first(),
        // A report held against what this side counted of a data phase that failed on it (a
        // sender's partial bytes are not counted) says nothing about why it failed.
        Err(refused) if refused.starts_with(crate::serve::check::IMPOSSIBLE) => None,
        Err(refused) => Some(refused),
    };
    match why {
        Some(w) if !e.message.contains(w.as_str()) => BenchError {
            message: format!("{}; the peer says: {w}", e.message),
            ..e
        },
        _ => e,
    }
}

pub fn io_err(call: &str, e: std::io::Error) -> BenchError {
    if crate::platform::wait::interrupted(&e) {
        BenchError::interrupted()
    } else if crate::platform::wait::ended(&e) {
        BenchError::timeout(format!(
            "time bound reached: {call}: the peer made no progress"
        ))
    } else {
        BenchError::os(call, e)
    }
}

/// Parse a rate like `1Gbit`, `500Mbit`, `100M`, `2.5G`, `1000000` (bit/s).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower
        .trim_end_matches("/s")
        .trim_end_matches("bps")
        .trim_end_matches("bit");
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid rate '{t}': expected e.g. 1Gbit, 500Mbit, 100M"))?;
    let mult = match suffix.trim() {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        other => {
            return Err(format!(
                "invalid rate unit '{other}' in '{t}': use k, M or G (bit/s)"
            ));
        }
    };
    let v = n * mult;
    if !v.is_finite() || !(1000.0..=100e9).contains(&v) {
        return Err(format!("rate '{t}' out of range (1kbit/s to 100Gbit/s)"));
    }
    Ok(v as u64)
}

/// Service demand (system-wide µs per KiB net of the baseline), or why it is not measured.
pub fn service_demand(c: &crate::cpucost::CpuCost, bytes: u64) -> Result<f64, String> {
    c.checked_us_per_kib(bytes)
}

/// Adds a service-demand metric, or says why it is not measured; the cost's windows and checks go
/// into the run's facts (`tx_cpu` / `rx_cpu`), and a figure that the process CPU does not explain
/// ([`crate::cpucost::CpuCost::unexplained`]) is kept with a warning giving the figures.
/// `other_cpu_s`: the other end's process CPU when it is another process on this machine
/// ([`OtherEnd`]), else 0.
pub fn with_demand(
    mut out: super::RunOutput,
    name: &'static str,
    c: &crate::cpucost::CpuCost,
    bytes: u64,
    other_cpu_s: f64,
) -> super::RunOutput {
    let side = name.split('_').next().unwrap_or("cpu");
    out = out.fact(&format!("{side}_cpu"), c.facts(other_cpu_s));
    match service_demand(c, bytes) {
        Ok(v) => {
            if let Some(flag) = c.unexplained(other_cpu_s) {
                out.warnings.push(format!("{name}: {flag}"));
            }
            out.metric(name, vec![v])
        }
        Err(why) => out.not_measured(name, why),
    }
}

/// Whether the two ends of a test are distinct processes on this machine (a `--peer` on a
/// loopback address): each end's system-wide cost then includes the other's process CPU, which
/// its own process figure does not. (The in-process peer is this process; a peer elsewhere is
/// not in this machine's counters.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OtherEnd {
    pub same_host_process: bool,
}

impl OtherEnd {
    pub fn of(peer: &Peer) -> OtherEnd {
        OtherEnd {
            same_host_process: peer.remote() && peer.client.peer().ip().is_loopback(),
        }
    }

    /// The other end's process CPU to count as explained, s.
    pub fn cpu_s(&self, other: Option<&crate::cpucost::CpuCost>) -> f64 {
        match other {
            Some(c) if self.same_host_process => c.process_cpu_s,
            _ => 0.0,
        }
    }
}

/// The receiving peer's service demand and process-only cost for `bytes` it received, or why the
/// peer could not measure them; `tx` is this end's cost (the other end, seen from the peer).
pub fn with_peer_demand(
    out: super::RunOutput,
    r: &PeerReport,
    bytes: u64,
    other: OtherEnd,
    tx: &crate::cpucost::CpuCost,
) -> super::RunOutput {
    match &r.cpu {
        Some(c) => with_demand(
            out,
            "rx_service_demand_us_per_kib",
            c,
            bytes,
            other.cpu_s(Some(tx)),
        )
        .metric(
            "rx_process_us_per_kib",
            c.process_us_per_kib(bytes).into_iter().collect(),
        ),
        None => {
            let why = r
                .cpu_error
                .clone()
                .unwrap_or_else(|| "the peer sent no CPU cost".into());
            out.not_measured("rx_service_demand_us_per_kib", why.clone())
                .not_measured("rx_process_us_per_kib", why)
        }
    }
}

/// The peer's CPU cost as facts (what it measured, or why not).
pub fn peer_cpu_facts(mut out: super::RunOutput, r: &PeerReport, side: &str) -> super::RunOutput {
    match (&r.cpu, &r.cpu_error) {
        (Some(c), _) => {
            out = out
                .fact(&format!("{side}_cpu_net_pct_all_cpus"), c.pct_all_cpus())
                .fact(
                    &format!("{side}_cpu_baseline_busy_cpus"),
                    c.baseline.busy_cpus(),
                );
        }
        (None, Some(e)) => out = out.fact(&format!("{side}_cpu_error"), e.clone()),
        (None, None) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report refused as impossible is not the peer's word on why a data phase failed; a
    /// refusal is.
    #[test]
    fn an_impossible_report_does_not_stand_for_the_peers_reason() {
        let imp = format!("{}: 5 bytes received", crate::serve::check::IMPOSSIBLE);
        let e = with_peer_reason(BenchError::failed("write: reset"), Err(&imp));
        assert_eq!(e.message, "write: reset");
        let limit = "byte limit of the session reached".to_string();
        let e = with_peer_reason(BenchError::failed("write: reset"), Err(&limit));
        assert_eq!(
            e.message,
            "write: reset; the peer says: byte limit of the session reached"
        );
    }

    #[test]
    fn rates_parse_and_reject() {
        assert_eq!(parse_rate("1Gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("500Mbit").unwrap(), 500_000_000);
        assert_eq!(parse_rate("100M").unwrap(), 100_000_000);
        assert_eq!(parse_rate("2.5G").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("64kbit/s").unwrap(), 64_000);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("1T").is_err());
        assert!(parse_rate("0").is_err());
    }

    #[test]
    fn demand_is_refused_over_a_busy_baseline() {
        use crate::cpucost::{CpuCost, Window};
        let w = |busy: f64| Window {
            wall_s: 1.0,
            busy_cpu_s: busy,
            total_cpu_s: 2.0,
            process_cpu_s: 0.1,
            irq_cpu_s: None,
            steal_cpu_s: None,
        };
        let quiet = CpuCost::from_windows(w(0.1), w(0.6));
        assert!((service_demand(&quiet, 1024 * 1000).unwrap() - 500.0).abs() < 1e-9);
        let busy = CpuCost::from_windows(w(1.5), w(2.0));
        assert!(
            service_demand(&busy, 1024)
                .unwrap_err()
                .contains("machine busy")
        );
    }

    fn one(b: &dyn Benchmark) -> super::super::RunOutput {
        crate::bench::testutil::with_ctx(
            Duration::from_millis(60),
            Duration::from_secs(30),
            |ctx| b.run(ctx),
        )
        .unwrap_or_else(|e| panic!("{}: {e:?}", b.info().id))
    }

    fn get(o: &super::super::RunOutput, name: &str) -> f64 {
        o.samples
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s[0])
            .unwrap_or_else(|| panic!("no {name}"))
    }

    /// Every benchmark of the suite measures over loopback, and its figures keep their order.
    #[test]
    fn every_benchmark_measures_over_loopback() {
        let opts = NetOptions::quick();
        for b in benchmarks(&opts) {
            let id = b.info().id.clone();
            if id == "net/tcp_rtt_64b_pinned"
                && let Err(e) = crate::platform::allowed_cpus()
            {
                // Only macOS has no affinity mask to pin with.
                assert_eq!(crate::platform::OS_NAME, "macOS", "{e}");
                continue;
            }
            let o = one(b.as_ref());
            // Every declared metric has a value or a reason.
            for m in &b.info().metrics {
                let has = o.samples.iter().any(|(n, s)| *n == m.name && !s.is_empty());
                let why = o.not_measured.iter().any(|(n, _)| *n == m.name);
                assert!(
                    has || why,
                    "{id}: {} neither measured nor explained",
                    m.name
                );
            }
            match id.as_str() {
                i if i.starts_with("net/tcp_rtt_") && !i.ends_with("sweep") => {
                    let (a, b, c) = (
                        get(&o, "rtt_p50_us"),
                        get(&o, "rtt_p99_us"),
                        get(&o, "rtt_max_us"),
                    );
                    assert!(a > 0.0 && a <= b && b <= c, "{id}: {a} {b} {c}");
                    assert!(o.facts["round_trips"].as_u64().unwrap() >= 10);
                }
                "net/tcp_stream" | "net/tcp_stream_n" => {
                    assert!(get(&o, "throughput_gbit_s") > 0.0);
                    assert!(o.facts["bytes_received"].as_u64() <= o.facts["bytes_sent"].as_u64());
                    // The measuring time is a floor: a window below the counters' resolution
                    // sends on, never less.
                    let send = o.facts["send_s"].as_f64().unwrap();
                    assert!(send >= 0.06, "{id}: sent for {send} s only");
                    // The data threads' own CPU (the thread CPU clock is fine-grained here):
                    // positive, and no thread uses more CPU than the wall time it ran.
                    if crate::platform::clock::THREAD_CPU_STEP_NS <= 1_000 {
                        let streams = o.facts["streams"].as_f64().unwrap();
                        for (m, f) in [
                            ("rx_thread_us_per_kib", "rx_thread_cpu_s"),
                            ("tx_thread_us_per_kib", "tx_thread_cpu_s"),
                        ] {
                            assert!(get(&o, m) > 0.0, "{id}: {m}");
                            let cpu = o.facts[f].as_f64().unwrap();
                            assert!(
                                cpu > 0.0 && cpu <= streams * (send + 1.0),
                                "{id}: {f} {cpu} s over {send} s of sending"
                            );
                        }
                    }
                }
                "net/tcp_connect" => {
                    assert!(get(&o, "setup_p50_us") > 0.0);
                    assert!(get(&o, "setup_p50_us") <= get(&o, "setup_p99_us"));
                    let n = o.facts["connections"].as_u64().unwrap();
                    assert!((10..=connect::MAX_PER_RUN as u64).contains(&n));
                }
                "net/udp_stream" => {
                    // The measuring time is a floor here too (the CPU window may send on).
                    let send = o.facts["send_s"].as_f64().unwrap();
                    assert!(send >= 0.055, "{id}: sent for {send} s only");
                    let timed = o.facts["timed_datagrams"].as_u64().unwrap();
                    let used = o.facts["datagrams_sent"].as_u64().unwrap()
                        + o.facts["send_errors"].as_u64().unwrap();
                    assert!(timed <= used, "{timed} timed of {used}");
                    for side in ["tx_cpu", "rx_cpu"] {
                        let c = &o.facts[side];
                        assert!(c["baseline_before_busy_cpus"].is_number(), "{side}: {c}");
                        assert!(c["baseline_after_busy_cpus"].is_number(), "{side}: {c}");
                        assert!(c["process_cpu_s"].is_number(), "{side}: {c}");
                    }
                    let l = get(&o, "loss_pct");
                    assert!((0.0..=100.0).contains(&l));
                    assert!(get(&o, "jitter_p50_us") <= get(&o, "jitter_p99_us"));
                    assert!(get(&o, "jitter_p99_us") <= get(&o, "jitter_max_us"));
                }
                "net/udp_max_rate" => {
                    let r = get(&o, "max_lossfree_gbit_s") * 1e9;
                    assert!(r > 0.0, "{r}");
                }
                _ => {}
            }
        }
    }

    #[test]
    fn token_is_never_printed() {
        let o = NetOptions {
            token: Some(b"super-secret-token-value".to_vec()),
            ..Default::default()
        };
        assert!(!format!("{o:?}").contains("secret"));
    }
}
