//! Connection setup and teardown (seed 002 §5.3, lmbench `lat_connect`, netperf TCP_CC): setup =
//! socket + connect until established, teardown = shutdown + close, timed separately on the
//! client. Orderly close by the client first, so TIME_WAIT lands on the client; the count of
//! connections per run is bounded and TIME_WAIT sockets are counted before and after.

use std::net::Shutdown;
use std::time::Instant;

use super::{NetOptions, Peer, peer_facts, percentile};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::harness::RunContext;
use crate::model::BenchError;
use crate::serve::proto::TestSpec;
use crate::units::{Better, Unit};

/// Most connections opened in one run.
pub const MAX_PER_RUN: usize = 1000;
/// No run starts while this many sockets are in TIME_WAIT (ports would run short).
pub const TIME_WAIT_LIMIT: u64 = 15_000;

pub struct Connect {
    info: Info,
    opts: NetOptions,
}

impl Connect {
    pub fn new(opts: &NetOptions) -> Connect {
        let m = |name, description| MetricSpec {
            name,
            unit: crate::units::unit_of_suffix(name).unwrap_or(Unit::Count),
            better: Better::Lower,
            description,
        };
        Connect {
            info: Info {
                id: "net/tcp_connect".into(),
                suite: "net",
                title: "TCP connection setup and teardown".into(),
                method: format!(
                    "Client side, one connection at a time to the peer's data port (in-process on \
                     127.0.0.1 by default, or --peer): setup = socket() + connect() until it \
                     returns established; teardown = shutdown(write) + close(), an orderly close \
                     by the client first (FIN; the client's socket enters TIME_WAIT; no data \
                     sent). The peer accepts and closes at once (backlog 1024). At most {MAX_PER_RUN} \
                     connections per run; TIME_WAIT sockets are counted before and after each \
                     run (Linux: /proc/net/tcp) and no run starts over {TIME_WAIT_LIMIT}. Per run: \
                     p50 of setup and of teardown, p99 of setup (µs)."
                ),
                metrics: vec![
                    m("setup_p50_us", "median socket + connect time, µs"),
                    m("setup_p99_us", "99th percentile socket + connect time, µs"),
                    m("teardown_p50_us", "median shutdown + close time, µs"),
                ],
            },
            opts: opts.clone(),
        }
    }
}

impl Benchmark for Connect {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let tw_before = crate::platform::net::time_wait_count();
        if let Ok(n) = tw_before
            && n > TIME_WAIT_LIMIT
        {
            return Err(BenchError::failed(format!(
                "{n} sockets in TIME_WAIT (over {TIME_WAIT_LIMIT}): wait a minute for them to expire"
            )));
        }
        let mut peer = Peer::open(&self.opts, ctx)?;
        let addr = peer
            .client
            .start(&TestSpec::Accept)
            .map_err(peer.err("connect"))?;
        let mut setup = Vec::new();
        let mut teardown = Vec::new();
        let start = Instant::now();
        let mut err = None;
        while (start.elapsed() < ctx.run_time || setup.len() < 10) && setup.len() < MAX_PER_RUN {
            if let Err(e) = ctx.check() {
                err = Some(e);
                break;
            }
            let t0 = Instant::now();
            // A plain blocking connect (socket + connect in one call): a non-blocking connect with
            // a poll, as connect_timeout does, fails under Wine when the peer closes at once.
            let s = match std::net::TcpStream::connect(addr) {
                Ok(s) => s,
                Err(e) => {
                    err = Some(BenchError::os("connect", e));
                    break;
                }
            };
            let t1 = Instant::now();
            let _ = s.shutdown(Shutdown::Write);
            drop(s);
            let t2 = Instant::now();
            setup.push(t1.duration_since(t0).as_nanos() as f64 / 1e3);
            teardown.push(t2.duration_since(t1).as_nanos() as f64 / 1e3);
        }
        let report = peer.client.finish(0, 0).map_err(peer.err("connect"));
        let mut out = peer_facts(RunOutput::default(), &peer);
        peer.close();
        if let Some(e) = err {
            return Err(e);
        }
        let report = report?;
        setup.sort_by(|a, b| a.total_cmp(b));
        teardown.sort_by(|a, b| a.total_cmp(b));
        out = out
            .fact("connections", setup.len() as u64)
            .fact("peer_accepted", report.connections)
            .fact("setup_max_us", setup.last().copied().unwrap_or(f64::NAN))
            .fact(
                "close",
                "orderly: shutdown(write) + close by the client first (client-side TIME_WAIT)",
            );
        out = match tw_before {
            Ok(n) => out.fact("time_wait_before", n),
            Err(e) => out.fact("time_wait_before", format!("not counted: {e}")),
        };
        out = match crate::platform::net::time_wait_count() {
            Ok(n) => out.fact("time_wait_after", n),
            Err(e) => out.fact("time_wait_after", format!("not counted: {e}")),
        };
        Ok(out
            .metric("setup_p50_us", vec![percentile(&setup, 50.0)])
            .metric("setup_p99_us", vec![percentile(&setup, 99.0)])
            .metric("teardown_p50_us", vec![percentile(&teardown, 50.0)]))
    }
}
