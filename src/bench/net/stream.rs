//! TCP bandwidth (seed 002 §5.2, netperf TCP_STREAM): the client writes 128 KiB blocks on one
//! connection, or on one connection per CPU, for the run's measuring time; the peer counts the
//! bytes it received and times first byte → last byte. Both ends measure their CPU cost over the
//! test against an idle baseline taken just before (service demand).

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{
    NetOptions, OtherEnd, Peer, peer_cpu_facts, peer_facts, with_demand, with_peer_demand,
};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::cpucost::CpuMeter;
use crate::record::BenchError;
use crate::serve::proto::TestSpec;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const BLOCK: usize = 128 << 10;

pub struct Stream {
    info: Info,
    all_cpus: bool,
    opts: NetOptions,
}

pub fn demand_metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "rx_service_demand_us_per_kib",
            unit: Unit::MicrosecondsPerKib,
            better: Better::Lower,
            description: "receiving end: system-wide CPU µs per KiB received, net of its idle \
                          baseline (on loopback both ends share the machine, so this includes \
                          the sender's work too)",
        },
        MetricSpec {
            name: "tx_service_demand_us_per_kib",
            unit: Unit::MicrosecondsPerKib,
            better: Better::Lower,
            description: "sending end (this machine): system-wide CPU µs per KiB sent, net of \
                          its idle baseline (on loopback this includes the receiver's work too)",
        },
        MetricSpec {
            name: "rx_process_us_per_kib",
            unit: Unit::MicrosecondsPerKib,
            better: Better::Lower,
            description: "receiving end: the peer process's own CPU µs per KiB received (misses \
                          kernel receive work charged to no process; in-process peer: the \
                          whole osgauge process, both ends)",
        },
        MetricSpec {
            name: "tx_process_us_per_kib",
            unit: Unit::MicrosecondsPerKib,
            better: Better::Lower,
            description: "sending end: this osgauge process's own CPU µs per KiB sent (with the \
                          in-process peer it includes the receiver threads)",
        },
    ]
}

/// The data threads' own CPU (a serial stage's cost: what one thread of an application moving
/// these bytes carries itself).
pub fn thread_metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "rx_thread_us_per_kib",
            unit: Unit::MicrosecondsPerKib,
            better: Better::Lower,
            description: "receiving end: the peer's receiving threads' own CPU µs per KiB \
                          received (each thread's CPU clock from its first recv to its \
                          connection's end, summed over streams; kernel work done in other \
                          threads — on loopback, much of the protocol processing runs in the \
                          sender's thread — is not in it)",
        },
        MetricSpec {
            name: "tx_thread_us_per_kib",
            unit: Unit::MicrosecondsPerKib,
            better: Better::Lower,
            description: "sending end: this process's sending threads' own CPU µs per KiB sent \
                          (each thread's CPU clock around its send loop and shutdown, summed \
                          over streams; on loopback it includes receive-side protocol \
                          processing the kernel runs in the sender's context)",
        },
    ]
}

impl Stream {
    pub fn new(all_cpus: bool, opts: &NetOptions) -> Stream {
        let (id, title, what) = if all_cpus {
            (
                "net/tcp_stream_n",
                "TCP bandwidth, one stream per CPU",
                "N concurrent connections, N = the CPUs this process may use",
            )
        } else {
            (
                "net/tcp_stream",
                "TCP bandwidth, one stream",
                "one connection",
            )
        };
        let mut metrics = vec![
            MetricSpec {
                name: "throughput_gbit_s",
                unit: Unit::GigabitsPerSecond,
                better: Better::Higher,
                description: "bytes the receiver counted × 8 / its first-to-last-byte time, Gbit/s (10^9 bit/s)",
            },
            MetricSpec {
                name: "throughput_gbyte_s",
                unit: Unit::GigabytesPerSecond,
                better: Better::Higher,
                description: "the same in GB/s (10^9 bytes/s)",
            },
        ];
        metrics.extend(demand_metrics());
        metrics.extend(thread_metrics());
        Stream {
            info: Info {
                id: id.into(),
                suite: "net",
                title: title.into(),
                method: format!(
                    "netperf TCP_STREAM: {what}; the client writes 128 KiB blocks for the run's \
                     measuring time, then shuts its side down; the peer (in-process on 127.0.0.1 \
                     by default, or --peer) counts the bytes received and times its first byte \
                     to its last. Socket buffers are the OS defaults, read back and recorded. \
                     CPU cost: {}. Receive-side figures come from the peer, send-side from this \
                     process. The receiving and sending threads' own CPU (rx_/tx_thread_us_per_kib): \
                     each data thread's CPU clock ({}) — the peer's from just before its first \
                     recv to its connection's end, ours around the whole send loop and its \
                     shutdown — summed over streams, per KiB; not measured when under {} steps of \
                     that clock per thread.",
                    crate::cpucost::method(),
                    crate::platform::clock::CPU_CLOCK_DESCRIPTION,
                    crate::platform::clock::MIN_THREAD_CPU_STEPS,
                ),
                metrics,
            },
            all_cpus,
            opts: opts.clone(),
        }
    }
}

impl Benchmark for Stream {
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

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let streams = if self.all_cpus {
            crate::platform::allowed_cpus()
                .map(|c| c.len().max(1))
                .unwrap_or(1)
        } else {
            1
        };
        let mut peer = Peer::open(&self.opts, ctx)?;
        let idle = self.opts.idle();
        peer.client
            .send_start(&TestSpec::Sink {
                streams: streams as u32,
                idle_ms: idle.as_millis() as u32,
            })
            .map_err(peer.err("stream"))?;
        // Our baseline overlaps the peer's (both ends idle).
        let mut meter = CpuMeter::start(idle).map_err(|e| BenchError::os("CPU counters", e))?;
        let data = peer.client.wait_ready().map_err(peer.err("stream"))?;
        meter
            .restart()
            .map_err(|e| BenchError::os("CPU counters", e))?;
        // Each connect and each write ends with the run's bound (a peer that reads one byte a
        // second, Ctrl-C).
        let bound = peer.bound();
        let mut conns = Vec::new();
        for _ in 0..streams {
            let c = crate::platform::net::connect_bounded(data, &bound)
                .map_err(|e| super::io_err("connect", e))?;
            crate::platform::wait::slice_timeouts(&c, &bound)
                .map_err(|e| BenchError::os("setsockopt", e))?;
            conns.push(c);
        }
        let (sndbuf, _) = crate::platform::net::tcp_buffers(&conns[0])
            .map_err(|e| BenchError::os("getsockopt", e))?;
        let t0 = Instant::now();
        let results = send_all(conns, ctx, bound, &meter, t0);
        let send_s = t0.elapsed().as_secs_f64();
        let (sent, tx_thread_ns, failed) = tally(results);
        // Let the peer read what is still in flight, then end this side's window; its idle
        // window after the test overlaps the peer's (which starts at finish).
        std::thread::sleep(Duration::from_millis(20));
        let ended = meter.end();
        let report = peer.client.send_finish(sent, 0);
        let tx = match failed {
            None => ended.and_then(|e| e.after_idle()),
            // Not used: the run fails.
            Some(_) => ended.and_then(|e| e.after_idle_skipped()),
        };
        let report = report.and_then(|()| peer.client.read_report());
        if let Some(e) = failed {
            return Err(super::with_peer_reason(e, report.as_ref()));
        }
        let report = report.map_err(peer.err("stream"))?;
        let tx = tx.map_err(|e| BenchError::os("CPU counters", e))?;
        let mut out = peer_facts(RunOutput::default(), &peer);
        let other = OtherEnd::of(&peer);
        peer.close();
        if let Some(e) = report.errors.first() {
            return Err(BenchError::failed(format!("peer: {e}")));
        }
        if report.bytes == 0 || report.active_s <= 0.0 {
            return Err(BenchError::failed("the peer received nothing"));
        }
        let gbit = report.bytes as f64 * 8.0 / report.active_s / 1e9;
        out = out
            .fact("streams", streams as u64)
            .fact("bytes_sent", sent)
            .fact("send_s", send_s)
            .fact("bytes_received", report.bytes)
            .fact("sndbuf_bytes", sndbuf)
            .fact("tx_cpu_net_pct_all_cpus", tx.pct_all_cpus())
            .fact("tx_cpu_baseline_busy_cpus", tx.baseline.busy_cpus())
            .metric("throughput_gbit_s", vec![gbit])
            .metric("throughput_gbyte_s", vec![gbit / 8.0])
            .metric(
                "tx_process_us_per_kib",
                tx.process_us_per_kib(sent).into_iter().collect(),
            );
        if let Some(b) = report.rcvbuf {
            out = out.fact("peer_rcvbuf_bytes", b);
        }
        out = with_demand(
            out,
            "tx_service_demand_us_per_kib",
            &tx,
            sent,
            other.cpu_s(report.cpu.as_ref()),
        );
        out = peer_cpu_facts(out, &report, "rx");
        out = with_thread_cpu(out, &report, tx_thread_ns, streams as u64, sent);
        Ok(with_peer_demand(out, &report, report.bytes, other, &tx))
    }
}

/// The data threads' own CPU per KiB: the peer's receiving threads (from its report: an older
/// peer does not send it) and this side's sending threads (`tx_ns`, over `streams` threads that
/// sent `sent` bytes).
fn with_thread_cpu(
    out: RunOutput,
    report: &crate::serve::proto::PeerReport,
    tx_ns: Result<u64, String>,
    streams: u64,
    sent: u64,
) -> RunOutput {
    let out = match (report.rx_thread_cpu_s, &report.rx_thread_cpu_error) {
        (Some(s), _) if report.bytes > 0 => out.fact("rx_thread_cpu_s", s).metric(
            "rx_thread_us_per_kib",
            vec![us_per_kib(s * 1e9, report.bytes)],
        ),
        (Some(_), _) => out.not_measured("rx_thread_us_per_kib", "the peer received nothing"),
        (None, Some(why)) => out.not_measured("rx_thread_us_per_kib", why.clone()),
        (None, None) => out.not_measured(
            "rx_thread_us_per_kib",
            "not measured: the peer (an older osgauge serve) does not report its receiving \
             threads' CPU",
        ),
    };
    match tx_ns.and_then(|ns| crate::platform::clock::thread_cpu_usable(ns, streams).map(|()| ns)) {
        Ok(ns) if sent > 0 => out
            .fact("tx_thread_cpu_s", ns as f64 / 1e9)
            .metric("tx_thread_us_per_kib", vec![us_per_kib(ns as f64, sent)]),
        Ok(_) => out.not_measured("tx_thread_us_per_kib", "nothing was sent"),
        Err(why) => out.not_measured("tx_thread_us_per_kib", why),
    }
}

/// `ns` of CPU over `bytes` → µs per KiB.
fn us_per_kib(ns: f64, bytes: u64) -> f64 {
    ns / 1e3 / (bytes as f64 / 1024.0)
}

/// Every connection's sender thread for the measuring time, then on while this side's CPU cost
/// is still below the counters' resolution (bounded); each sender's bytes and own CPU.
fn send_all(
    conns: Vec<TcpStream>,
    ctx: &RunContext,
    bound: crate::platform::wait::Bound,
    meter: &CpuMeter,
    t0: Instant,
) -> Vec<Result<Sent, BenchError>> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let hs: Vec<_> = conns
            .into_iter()
            .map(|c| {
                let stop = &stop;
                s.spawn(move || send_while(c, stop, ctx, bound))
            })
            .collect();
        // The measuring time, then on while this side's CPU cost is still below the
        // counters' resolution (bounded): the service demand is then measured, not dropped.
        let until = t0 + ctx.run_time;
        let cap = if ctx.warmup {
            until
        } else {
            crate::cpucost::extend_until(until, ctx.run_time, ctx.deadline, ctx.runs_left)
        };
        loop {
            // A sender that ended early (an error, an interrupt) ends the others.
            if hs.iter().any(|h| h.is_finished()) {
                break;
            }
            let now = Instant::now();
            if now < until {
                std::thread::sleep((until - now).min(Duration::from_millis(50)));
                continue;
            }
            if now >= cap
                || ctx.check().is_err()
                || !meter.peek().is_ok_and(|c| c.wants_more_until(cap))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::failed("sender panicked")))
            })
            .collect()
    })
}

/// The senders' outcome: bytes sent by all, their own CPU summed (Err: a clock failed), and the
/// first error (the run then fails).
fn tally(results: Vec<Result<Sent, BenchError>>) -> (u64, Result<u64, String>, Option<BenchError>) {
    let mut sent = 0;
    let mut tx_thread_ns: Result<u64, String> = Ok(0);
    let mut failed = None;
    for r in results {
        match r {
            Ok(n) => {
                sent += n.bytes;
                tx_thread_ns = match (tx_thread_ns, n.thread_cpu_ns) {
                    (Ok(a), Ok(b)) => Ok(a + b),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                };
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    (sent, tx_thread_ns, failed)
}

/// What one sending thread did.
struct Sent {
    bytes: u64,
    /// Its own CPU around the send loop and the shutdown (Err: the clock failed).
    thread_cpu_ns: Result<u64, String>,
}

fn send_while(
    c: TcpStream,
    stop: &AtomicBool,
    ctx: &RunContext,
    bound: crate::platform::wait::Bound,
) -> Result<Sent, BenchError> {
    let cpu0 = crate::platform::clock::ThreadCpu::start();
    let mut c = crate::platform::wait::Bounded::new(c, bound);
    let block = vec![0xa5u8; BLOCK];
    let mut sent = 0u64;
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        if i.is_multiple_of(64) {
            ctx.check()?;
        }
        c.write_all(&block).map_err(|e| super::io_err("write", e))?;
        sent += BLOCK as u64;
    }
    c.inner
        .shutdown(Shutdown::Write)
        .map_err(|e| BenchError::os("shutdown", e))?;
    let thread_cpu_ns = cpu0.elapsed_ns();
    Ok(Sent {
        bytes: sent,
        thread_cpu_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::proto::PeerReport;

    fn why(out: &RunOutput, name: &str) -> Option<String> {
        out.not_measured
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| w.clone())
    }
    fn value(out: &RunOutput, name: &str) -> Option<f64> {
        out.samples
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v[0])
    }

    /// 1 s of thread CPU over 1 GiB is 1e6 µs / 2^20 KiB; an older peer's report (no figure, no
    /// reason) makes the receive figure not measured with that reason; a clock too coarse for the
    /// send loop makes the send figure not measured, never a quantised value.
    #[test]
    fn thread_cpu_per_kib_from_both_ends_or_why_not() {
        let gib = 1u64 << 30;
        let report = PeerReport {
            bytes: gib,
            rx_thread_cpu_s: Some(1.0),
            ..Default::default()
        };
        let out = with_thread_cpu(RunOutput::default(), &report, Ok(2_000_000_000), 1, gib);
        assert!((value(&out, "rx_thread_us_per_kib").unwrap() - 1e6 / 1048576.0).abs() < 1e-9);
        assert!((value(&out, "tx_thread_us_per_kib").unwrap() - 2e6 / 1048576.0).abs() < 1e-9);
        let older = PeerReport {
            bytes: gib,
            ..Default::default()
        };
        let out = with_thread_cpu(RunOutput::default(), &older, Ok(0), 1, gib);
        assert!(value(&out, "rx_thread_us_per_kib").is_none());
        assert!(
            why(&out, "rx_thread_us_per_kib")
                .unwrap()
                .contains("older osgauge serve"),
            "{:?}",
            out.not_measured
        );
        assert!(
            why(&out, "tx_thread_us_per_kib")
                .unwrap()
                .contains("did not move")
        );
        let said = PeerReport {
            bytes: gib,
            rx_thread_cpu_error: Some(
                "not measured: below the thread CPU clock's resolution".into(),
            ),
            ..Default::default()
        };
        let out = with_thread_cpu(
            RunOutput::default(),
            &said,
            Err("thread CPU clock: no".into()),
            1,
            gib,
        );
        assert!(
            why(&out, "rx_thread_us_per_kib")
                .unwrap()
                .contains("resolution")
        );
        assert!(
            why(&out, "tx_thread_us_per_kib")
                .unwrap()
                .contains("clock: no")
        );
    }
}
