//! Connection setup and teardown (seed 002 §5.3, lmbench `lat_connect`, netperf TCP_CC): setup =
//! socket + connect until established, teardown = shutdown + close, timed separately on the
//! client. Orderly close by the client first, so TIME_WAIT lands on the client; the count of
//! connections per run is bounded by the local ports the sockets in TIME_WAIT towards this run's
//! peer address hold — a fresh port per run, so other programs' TIME_WAIT sockets (towards other
//! addresses) do not stand in its way.

use std::net::Shutdown;
use std::time::Instant;

use super::{NetOptions, Peer, peer_facts};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::serve::proto::TestSpec;
use crate::stats::percentile_nearest_rank as percentile;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

/// Most connections opened in one run.
pub const MAX_PER_RUN: usize = 1000;
/// Fewest connections a run is made of (a p99 of fewer means little).
pub const MIN_PER_RUN: usize = 10;

/// Connections one run may open when `time_wait` sockets already hold local ports towards its
/// peer's address, out of `ports`: at most [`MAX_PER_RUN`], and never more than a quarter of the
/// ports still free towards it.
pub fn connections_allowed(ports: u64, time_wait: u64) -> usize {
    let free = ports.saturating_sub(time_wait);
    ((free / 4) as usize).min(MAX_PER_RUN)
}

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
                     sent). The peer accepts and closes at once (backlog 1024), on a data port \
                     of its own for each run. At most {MAX_PER_RUN} connections per run, and never \
                     more than a quarter of the local ports that sockets in TIME_WAIT towards that \
                     peer address (Linux: /proc/net/tcp, counted before each run) leave free: \
                     connect() picks a local port per destination, so only those can hold a port \
                     the run needs; a lower cap is recorded (connections_cap_applied) and warned \
                     about, and below {MIN_PER_RUN} the run still tries {MIN_PER_RUN}. (Before \
                     2026-11-28 the cap counted every TIME_WAIT socket of the machine, so other \
                     programs' connections lowered it, or failed the run; the machine's count is \
                     still recorded, time_wait_before/after.) Per run: \
                     p50 of setup and of teardown, p99 of setup (µs), and this process's CPU \
                     time per connection (user + system over the run's connections, both ends \
                     when the peer is in-process; nanosecond process clock, so it needs no \
                     long window — work done in interrupt context on behalf of no thread of \
                     this process is not in it)."
                ),
                metrics: vec![
                    m("setup_p50_us", "median socket + connect time, µs"),
                    m("setup_p99_us", "99th percentile socket + connect time, µs"),
                    m("teardown_p50_us", "median shutdown + close time, µs"),
                    MetricSpec {
                        name: "process_cpu_us_per_connection",
                        unit: Unit::Microseconds,
                        better: Better::Lower,
                        description: "this process's CPU per connection set up and closed (both ends when the peer is in-process), µs",
                    },
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
        // Sockets in TIME_WAIT towards the peer's address hold local ports a connection to it
        // needs: measure with the connections the free ports allow (fewer than the method's
        // maximum is recorded and marked). The peer's data port is new for each run, so
        // TIME_WAIT sockets of other programs (towards other addresses) do not count.
        let ports = crate::platform::net::ephemeral_ports();
        let tw_before = crate::platform::net::time_wait_count();
        let mut peer = Peer::open(&self.opts, ctx)?;
        let addr = peer
            .client
            .start(&TestSpec::Accept)
            .map_err(peer.err("connect"))?;
        let tw_to_peer = crate::platform::net::time_wait_to(addr);
        let allowed = tw_to_peer
            .as_ref()
            .map_or(MAX_PER_RUN, |&n| connections_allowed(ports, n));
        let cpu0 = crate::platform::cputime::process_cpu_ns();
        let Timed {
            mut setup,
            mut teardown,
            err,
        } = connect_loop(ctx, addr, allowed);
        peer.client.note_connections(setup.len() as u64);
        let report = peer.client.finish(0, 0).map_err(peer.err("connect"));
        // After finish: the in-process peer has accepted and closed every connection.
        let cpu_per_conn = match (cpu0, crate::platform::cputime::process_cpu_ns()) {
            (Ok(a), Ok(b)) if !setup.is_empty() => {
                Ok(b.saturating_sub(a) as f64 / 1e3 / setup.len() as f64)
            }
            (Err(e), _) | (_, Err(e)) => Err(format!("process CPU clock: {e}")),
            _ => Err("no connection".to_string()),
        };
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
            )
            // A setting as applied: a cap below the method's is compared as a setting that
            // differs (marked), never silently.
            .fact("connections_cap_applied", allowed as u64);
        if allowed < MAX_PER_RUN {
            out.warnings.push(format!(
                "at most {allowed} connections per run instead of {MAX_PER_RUN}: sockets in \
                 TIME_WAIT towards the peer's address held ports (a quarter of the {ports} local \
                 ports that were free)"
            ));
        }
        out = count_fact(out, "time_wait_to_peer_before", tw_to_peer);
        out = count_fact(out, "time_wait_before", tw_before);
        out = count_fact(
            out,
            "time_wait_after",
            crate::platform::net::time_wait_count(),
        );
        out = out
            .metric("setup_p50_us", vec![percentile(&setup, 50.0)])
            .metric("setup_p99_us", vec![percentile(&setup, 99.0)])
            .metric("teardown_p50_us", vec![percentile(&teardown, 50.0)]);
        Ok(match cpu_per_conn {
            Ok(us) => out.metric("process_cpu_us_per_connection", vec![us]),
            Err(why) => out.not_measured("process_cpu_us_per_connection", why),
        })
    }
}

/// One run's timed connections: set-up (connect) and teardown (shutdown + close) times, µs, and
/// what stopped the loop early (cancel, deadline, a failed connect).
struct Timed {
    setup: Vec<f64>,
    teardown: Vec<f64>,
    err: Option<BenchError>,
}

/// Connect and close until the run time is up (at least [`MIN_PER_RUN`], at most `allowed`
/// connections), timing each.
fn connect_loop(ctx: &RunContext, addr: std::net::SocketAddr, allowed: usize) -> Timed {
    let mut setup = Vec::new();
    let mut teardown = Vec::new();
    let start = Instant::now();
    let mut err = None;
    while (start.elapsed() < ctx.run_time || setup.len() < MIN_PER_RUN)
        && setup.len() < allowed.max(MIN_PER_RUN)
    {
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
    Timed {
        setup,
        teardown,
        err,
    }
}

/// A count as a fact, or why it was not counted.
fn count_fact(out: RunOutput, name: &str, n: std::io::Result<u64>) -> RunOutput {
    match n {
        Ok(n) => out.fact(name, n),
        Err(e) => out.fact(name, format!("not counted: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_capped_by_the_ports_time_wait_leaves_free() {
        // This VM: 28232 ports. Idle: the method's 1000.
        assert_eq!(connections_allowed(28232, 0), MAX_PER_RUN);
        // 15015 in TIME_WAIT (the machine): 13217 free, a quarter is 3304 → 1000.
        assert_eq!(connections_allowed(28232, 15015), MAX_PER_RUN);
        // 26000: 2232 free → 558 per run (measured, capped, marked).
        assert_eq!(connections_allowed(28232, 26000), 558);
        // Nearly all held towards the peer: below the minimum (the run still tries it).
        assert!(connections_allowed(28232, 28200) < MIN_PER_RUN);
        assert_eq!(connections_allowed(100, 500), 0);
    }
}
