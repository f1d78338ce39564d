//! The client's check of a peer's report: every figure a peer sends is held against what this
//! side sent and observed before it is used. A report that fails is refused whole (the run fails
//! with the reason); a report that passes has its text escaped and cut ([`peer_text`]).
//!
//! What is checked (`window` = from this side's `start` to the report's arrival, on this side's
//! clock, plus [`SLACK_S`] and [`CLOCK_RATE_SLACK`] for a remote peer's clock):
//! - bytes: never more than this side sent (UDP: the datagrams' payload, with a datagram counted
//!   at most twice — a path may duplicate one, not a thousand times); connections never more than
//!   this side made (a sink: its streams; an echo: one);
//! - rates: bytes over the peer's active time at most [`MAX_RATE_BPS`];
//! - times: finite, not negative, within the window (the peer's active time, each of its CPU
//!   windows and the three of them together);
//! - CPU seconds: finite, not negative, busy within total, a window's total within its wall time
//!   × [`MAX_PEER_CPUS`], net and process CPU within the test window's total, interrupt time within
//!   busy time, the counters' resolution at most one second per CPU; the receiving threads' own
//!   CPU within the window × their number (a thread runs on one CPU at a time);
//! - UDP statistics: the datagrams sent as this side told the peer, distinct ones received at most
//!   that many, the period the one asked for, deviations ordered (p50 ≤ p99 ≤ p99.9 ≤ max) and
//!   within the stream, the listed stalls and series within their bounds;
//! - a pinned CPU only when one was asked for, and then the one asked for; buffer sizes within
//!   [`MAX_BUFFER`].
//!
//! A resolution of 0 is accepted: it is how the report of a peer that does not know its counters'
//! resolution says so (no resolution check then, as documented on [`CpuCost`]).

use crate::cpucost::{CpuCost, Window};
use crate::serve::udp_stats::{MAX_STALLS, SERIES_BINS, UdpSummary};

use super::proto::{PeerReport, TestSpec};

/// How the reason for refusing a report begins.
pub const IMPOSSIBLE: &str = "the peer's report is impossible, nothing of it is used";
/// Longest text kept from a peer (an error, a reason, its name), characters after escaping.
pub const MAX_PEER_TEXT: usize = 300;
/// Most error lines kept from one report.
pub const MAX_PEER_ERRORS: usize = 8;
/// More CPUs than any machine a peer runs on has (Linux's NR_CPUS is at most 8192).
pub const MAX_PEER_CPUS: f64 = 16384.0;
/// Largest socket buffer a peer may report, bytes.
pub const MAX_BUFFER: u64 = 1 << 32;
/// Fastest receive rate believed, bit/s (10 Tbit/s: beyond any NIC and any loopback copy).
pub const MAX_RATE_BPS: f64 = 10e12;
/// Absolute slack on every time bound, s (the peer's clock reads and this side's).
pub const SLACK_S: f64 = 0.05;
/// Relative slack on every time bound (two machines' clocks run at slightly different rates).
pub const CLOCK_RATE_SLACK: f64 = 1e-3;

/// What this side knows of a test when the peer's report arrives.
#[derive(Debug, Clone)]
pub struct Observed {
    pub test: TestSpec,
    /// Bytes this side sent on the data connections (UDP: datagrams' bytes).
    pub sent_bytes: u64,
    /// UDP sequence numbers used (what `finish` told the peer).
    pub sent_datagrams: u64,
    /// Connections this side made (accept test), when it counted them.
    pub connections: Option<u64>,
    /// From `start` to the report, s, on this side's clock.
    pub window_s: f64,
}

/// Text from a peer (or from any other party this side does not control) as it may be shown,
/// logged or stored: control characters escaped, at most [`MAX_PEER_TEXT`] characters — the
/// escaper `osgauge serve` uses for a client's strings.
pub fn peer_text(s: &str) -> String {
    crate::output::display_text(s, MAX_PEER_TEXT)
}

/// Check `r` against `o`; the report with its text made safe, or why it is impossible.
pub fn check_report(mut r: PeerReport, o: &Observed) -> Result<PeerReport, String> {
    check_figures(&r, o).map_err(|e| format!("{IMPOSSIBLE}: {e}"))?;
    for s in [
        &mut r.cpu_error,
        &mut r.pin_error,
        &mut r.rx_thread_cpu_error,
    ]
    .into_iter()
    .flatten()
    {
        *s = peer_text(s);
    }
    let more = r.errors.len().saturating_sub(MAX_PEER_ERRORS);
    r.errors.truncate(MAX_PEER_ERRORS);
    for e in &mut r.errors {
        *e = peer_text(e);
    }
    if more > 0 {
        r.errors
            .push(format!("and {more} more errors from the peer"));
    }
    Ok(r)
}

/// The window with its slack, s.
fn within(o: &Observed) -> f64 {
    o.window_s * (1.0 + CLOCK_RATE_SLACK) + SLACK_S
}

fn seconds(what: &str, v: f64, max: f64) -> Result<(), String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{what} is {v:?} s"));
    }
    if v > max {
        return Err(format!(
            "{what} is {v:?} s, longer than this side's own window of {max:.3} s"
        ));
    }
    Ok(())
}

fn cpu_seconds(what: &str, v: f64, max: f64, of: &str) -> Result<(), String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{what} is {v:?} CPU-seconds"));
    }
    if v > max {
        return Err(format!(
            "{what} is {v:?} CPU-seconds, over {of} ({max:?} CPU-seconds)"
        ));
    }
    Ok(())
}

fn check_figures(r: &PeerReport, o: &Observed) -> Result<(), String> {
    let win = within(o);
    // Bytes and connections.
    let (max_bytes, max_conns) = match &o.test {
        TestSpec::Echo { .. } => (o.sent_bytes, 1),
        TestSpec::Sink { streams, .. } => (o.sent_bytes, u64::from(*streams)),
        TestSpec::Accept => (0, o.connections.unwrap_or(u64::MAX)),
        // A datagram may arrive twice (a path duplicating it), not more.
        TestSpec::Udp { .. } => (o.sent_bytes.saturating_mul(2), 0),
    };
    if r.bytes > max_bytes {
        return Err(format!(
            "{} bytes received, but this side sent {} bytes",
            r.bytes, o.sent_bytes
        ));
    }
    if r.connections > max_conns {
        return Err(format!(
            "{} connections accepted, but this side made {max_conns}",
            r.connections
        ));
    }
    seconds("the peer's active time", r.active_s, win)?;
    if r.active_s > 0.0 && r.bytes as f64 * 8.0 / r.active_s > MAX_RATE_BPS {
        return Err(format!(
            "{} bytes in {} s, {:.3e} bit/s: over {MAX_RATE_BPS:.0e} bit/s, faster than any \
             network stack moves data",
            r.bytes,
            r.active_s,
            r.bytes as f64 * 8.0 / r.active_s
        ));
    }
    if let Some(b) = r.rcvbuf
        && b > MAX_BUFFER
    {
        return Err(format!("a receive buffer of {b} bytes"));
    }
    // The pinned CPU: only when asked, and then the one asked for.
    match (&o.test, r.pinned_cpu) {
        (_, None) => {}
        (
            TestSpec::Echo {
                pin_cpu: Some(want),
                ..
            },
            Some(got),
        ) if *want == got => {}
        (_, Some(got)) => {
            return Err(format!(
                "the echo thread pinned to CPU {got}, which was not asked for"
            ));
        }
    }
    if let Some(c) = &r.cpu {
        check_cpu(c, win)?;
    }
    if let Some(s) = r.rx_thread_cpu_s {
        let threads = match &o.test {
            TestSpec::Sink { streams, .. } => f64::from(*streams),
            _ => return Err("a receiving threads' CPU for a test without a sink".into()),
        };
        cpu_seconds(
            "the receiving threads' CPU",
            s,
            threads * win,
            &format!("{threads} threads × this side's window"),
        )?;
    }
    match (&o.test, &r.udp) {
        (TestSpec::Udp { size, rate_bps, .. }, Some(u)) => {
            check_udp(u, r, o, u64::from(*size), *rate_bps, win)?
        }
        (_, None) => {}
        (_, Some(_)) => return Err("UDP statistics for a test without UDP".into()),
    }
    Ok(())
}

/// The CPUs a window saw, 1 to [`MAX_PEER_CPUS`], its wall time taken as at least 10 ms (so a
/// window of a nanosecond cannot claim a slack of a tick on each of 10^9 CPUs).
fn cpus_of(w: &Window) -> f64 {
    (w.total_cpu_s / w.wall_s.max(0.01))
        .ceil()
        .clamp(1.0, MAX_PEER_CPUS)
}

fn check_window(what: &str, w: &Window, win: f64) -> Result<(), String> {
    seconds(&format!("{what}'s wall time"), w.wall_s, win)?;
    let all = w.wall_s * MAX_PEER_CPUS + SLACK_S;
    cpu_seconds(
        &format!("{what}'s total CPU time"),
        w.total_cpu_s,
        all,
        &format!("its wall time × {MAX_PEER_CPUS} CPUs"),
    )?;
    // The counters step by a tick per CPU: a tick of slack per CPU the window saw.
    let cpus = cpus_of(w);
    let total = w.total_cpu_s + SLACK_S * cpus;
    let of = format!("the {what}'s total CPU time");
    cpu_seconds(&format!("{what}'s busy CPU time"), w.busy_cpu_s, total, &of)?;
    cpu_seconds(
        &format!("{what}'s process CPU time"),
        w.process_cpu_s,
        total,
        &of,
    )?;
    if let Some(x) = w.irq_cpu_s {
        cpu_seconds(
            &format!("{what}'s interrupt CPU time"),
            x,
            w.busy_cpu_s + SLACK_S * cpus.max(1.0),
            &format!("the {what}'s busy CPU time"),
        )?;
    }
    if let Some(x) = w.steal_cpu_s {
        cpu_seconds(
            &format!("{what}'s stolen CPU time"),
            x,
            all,
            "its wall time × CPUs",
        )?;
    }
    Ok(())
}

fn check_cpu(c: &CpuCost, win: f64) -> Result<(), String> {
    check_window("the CPU baseline", &c.baseline, win)?;
    check_window("the CPU test window", &c.test, win)?;
    let mut walls = c.baseline.wall_s + c.test.wall_s;
    if let Some(a) = &c.baseline_after {
        check_window("the CPU baseline after", a, win)?;
        walls += a.wall_s;
    }
    seconds("the peer's CPU windows together", walls, win)?;
    let cpus = cpus_of(&c.test);
    let total = c.test.total_cpu_s + SLACK_S * cpus;
    let of = "the test window's total CPU time";
    cpu_seconds("the net CPU", c.net_cpu_s, total, of)?;
    cpu_seconds("the process CPU", c.process_cpu_s, total, of)?;
    if !c.resolution_cpu_s.is_finite() || c.resolution_cpu_s < 0.0 || c.resolution_cpu_s > cpus {
        return Err(format!(
            "a counter resolution of {:?} CPU-seconds over {cpus} CPUs",
            c.resolution_cpu_s
        ));
    }
    Ok(())
}

/// The UDP statistics against what this side sent ([`Observed`]: the datagrams; `size` and
/// `rate_bps` as asked) and the test window `win`: counts, bytes and loss, the active time, the
/// sending period, the deviations, the stalls and the series (see the module's list).
fn check_udp(
    u: &UdpSummary,
    r: &PeerReport,
    o: &Observed,
    size: u64,
    rate_bps: u64,
    win: f64,
) -> Result<(), String> {
    let sent = o.sent_datagrams;
    check_udp_counts(u, r, sent, size)?;
    seconds("the UDP active time", u.active_s, win)?;
    if (u.active_s - r.active_s).abs() > 1e-9 {
        return Err(format!(
            "a UDP active time of {} s beside the report's {} s",
            u.active_s, r.active_s
        ));
    }
    let period_us = size as f64 * 8.0 * 1e6 / rate_bps as f64;
    if !u.period_us.is_finite() || (u.period_us - period_us).abs() > period_us * 1e-6 {
        return Err(format!(
            "a sending period of {} µs, but this side sent every {period_us} µs",
            u.period_us
        ));
    }
    // No deviation exceeds the stream's time plus the gap the sequence numbers span.
    let max_us = (win + sent as f64 * period_us / 1e6) * 1e6;
    check_udp_deviations(u, max_us)?;
    check_udp_stalls(u, win, max_us)
}

/// The datagram counts against the `sent` this side told the peer (distinct ones at most that
/// many, no more duplicates than distinct ones; reordered, lost and stalled ones within what was
/// received or sent), the payload bytes against datagrams of `size` bytes and the report's
/// bytes, and the loss a percentage.
fn check_udp_counts(u: &UdpSummary, r: &PeerReport, sent: u64, size: u64) -> Result<(), String> {
    if u.sent != sent {
        return Err(format!(
            "{} datagrams sent, but this side told it {sent}",
            u.sent
        ));
    }
    if u.unique > sent || u.duplicates > u.unique || u.received != u.unique + u.duplicates {
        return Err(format!(
            "{} datagrams received ({} distinct, {} duplicates) of {sent} sent",
            u.received, u.unique, u.duplicates
        ));
    }
    if u.reordered > u.received || u.lost > sent || u.path_stalls > u.received {
        return Err(format!(
            "{} reordered, {} lost, {} stalls of {} received and {sent} sent",
            u.reordered, u.lost, u.path_stalls, u.received
        ));
    }
    if u.bytes > u.received.saturating_mul(size) || r.bytes != u.bytes {
        return Err(format!(
            "{} payload bytes ({} in the report) in {} datagrams of {size} bytes",
            u.bytes, r.bytes, u.received
        ));
    }
    if !(0.0..=100.0).contains(&u.loss_pct) {
        return Err(format!("a loss of {} %", u.loss_pct));
    }
    Ok(())
}

/// The deviations (p50, p99, p99.9, max, RFC 3550 jitter, stall threshold): finite, not
/// negative, at most `max_us`, and the percentiles in order.
fn check_udp_deviations(u: &UdpSummary, max_us: f64) -> Result<(), String> {
    let devs = [
        ("p50", u.dev_p50_us),
        ("p99", u.dev_p99_us),
        ("p99.9", u.dev_p999_us),
        ("max", u.dev_max_us),
        ("RFC 3550 jitter", u.rfc3550_jitter_us),
        ("stall threshold", u.stall_threshold_us),
    ];
    for (what, v) in devs {
        if !v.is_finite() || v < 0.0 || v > max_us {
            return Err(format!("a {what} deviation of {v} µs"));
        }
    }
    if !(u.dev_p50_us <= u.dev_p99_us
        && u.dev_p99_us <= u.dev_p999_us
        && u.dev_p999_us <= u.dev_max_us)
    {
        return Err(format!(
            "deviations out of order: p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
            u.dev_p50_us, u.dev_p99_us, u.dev_p999_us, u.dev_max_us
        ));
    }
    Ok(())
}

/// The listed stalls and series: at most [`MAX_STALLS`] and [`SERIES_BINS`] + 1, each within
/// the window `win` and its excess (deviation) within `max_us`; the stalls' period within `win`.
fn check_udp_stalls(u: &UdpSummary, win: f64, max_us: f64) -> Result<(), String> {
    if u.stalls.len() > MAX_STALLS || u.series.len() > SERIES_BINS + 1 {
        return Err(format!(
            "{} stalls and {} series points listed (at most {MAX_STALLS} and {})",
            u.stalls.len(),
            u.series.len(),
            SERIES_BINS + 1
        ));
    }
    for s in &u.stalls {
        seconds("a stall's time", s.at_s, win)?;
        if !s.excess_us.is_finite() || s.excess_us < 0.0 || s.excess_us > max_us {
            return Err(format!("a stall of {} µs", s.excess_us));
        }
    }
    for &(t, d) in &u.series {
        seconds("a series point's time", t, win)?;
        if !d.is_finite() || d < 0.0 || d > max_us {
            return Err(format!("a series deviation of {d} µs"));
        }
    }
    if let Some(p) = u.stall_period_s
        && (!p.is_finite() || p <= 0.0 || p > win)
    {
        return Err(format!("a stall period of {p} s"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes one figure of a report impossible.
    type Breaks<T> = Box<dyn Fn(&mut T)>;

    fn window(wall: f64, busy: f64) -> Window {
        Window {
            wall_s: wall,
            busy_cpu_s: busy,
            total_cpu_s: wall * 4.0,
            process_cpu_s: busy / 2.0,
            irq_cpu_s: Some(busy / 4.0),
            steal_cpu_s: Some(0.0),
        }
    }

    fn sink(sent: u64) -> Observed {
        Observed {
            test: TestSpec::Sink {
                streams: 2,
                idle_ms: 200,
            },
            sent_bytes: sent,
            sent_datagrams: 0,
            connections: None,
            window_s: 1.5,
        }
    }

    fn good() -> PeerReport {
        PeerReport {
            bytes: 1_000_000,
            active_s: 0.9,
            connections: 2,
            cpu: Some(
                CpuCost::from_windows_around(window(0.2, 0.1), window(1.0, 1.5), window(0.2, 0.1))
                    .with_resolution(0.01),
            ),
            rx_thread_cpu_s: Some(1.2),
            rcvbuf: Some(131072),
            ..Default::default()
        }
    }

    fn refused(r: PeerReport, o: &Observed) -> String {
        check_report(r, o).expect_err("an impossible report was accepted")
    }

    #[test]
    fn a_plausible_report_passes() {
        let r = check_report(good(), &sink(1_000_000)).unwrap();
        assert_eq!(r, good());
    }

    /// The hostile report and each impossible figure alone: refused with the figure.
    #[test]
    fn impossible_figures_are_refused_with_the_reason() {
        let o = sink(41_000_000);
        let mut hostile = good();
        hostile.bytes = 1_000_000;
        hostile.active_s = 1e-9;
        hostile.rx_thread_cpu_s = Some(-1e308);
        assert!(refused(hostile.clone(), &o).contains("faster than any network stack"));
        hostile.active_s = 0.5;
        let why = refused(hostile, &o);
        assert!(why.contains("receiving threads' CPU is -1e308"), "{why}");
        let cases: Vec<(Breaks<PeerReport>, &str)> = vec![
            (
                Box::new(|r| r.bytes = u64::MAX),
                "18446744073709551615 bytes received",
            ),
            (Box::new(|r| r.active_s = f64::NAN), "active time is NaN"),
            (
                Box::new(|r| r.active_s = 1e6),
                "longer than this side's own window",
            ),
            (Box::new(|r| r.active_s = -1.0), "active time is -1.0 s"),
            (Box::new(|r| r.connections = 3), "3 connections accepted"),
            (
                Box::new(|r| r.rx_thread_cpu_s = Some(3.2)),
                "2 threads × this side's window",
            ),
            (Box::new(|r| r.rcvbuf = Some(u64::MAX)), "receive buffer"),
            (Box::new(|r| r.pinned_cpu = Some(3)), "not asked for"),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().resolution_cpu_s = -1.0),
                "resolution of -1.0",
            ),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().net_cpu_s = f64::NEG_INFINITY),
                "net CPU is -inf",
            ),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().net_cpu_s = 1e308),
                "over the test window's total",
            ),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().test.busy_cpu_s = 100.0),
                "busy CPU time is 100.0",
            ),
            (
                Box::new(|r| {
                    let t = &mut r.cpu.as_mut().unwrap().test;
                    t.wall_s = 1e-300;
                    t.total_cpu_s = 0.05;
                    t.busy_cpu_s = 1e290;
                }),
                "busy CPU time is 1e290",
            ),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().test.total_cpu_s = 1e9),
                "× 16384 CPUs",
            ),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().baseline.wall_s = 100.0),
                "the CPU baseline's wall time",
            ),
            (
                Box::new(|r| {
                    r.cpu
                        .as_mut()
                        .unwrap()
                        .baseline_after
                        .as_mut()
                        .unwrap()
                        .wall_s = 0.7
                }),
                "windows together",
            ),
            (
                Box::new(|r| r.cpu.as_mut().unwrap().test.process_cpu_s = -0.5),
                "process CPU time is -0.5 CPU",
            ),
            (
                Box::new(|r| r.udp = Some(UdpSummary::default())),
                "UDP statistics for a test without UDP",
            ),
        ];
        for (break_it, says) in cases {
            let mut r = good();
            break_it(&mut r);
            let why = refused(r, &o);
            assert!(why.contains(says), "expected '{says}' in: {why}");
            assert!(why.contains("nothing of it is used"), "{why}");
        }
        // More bytes than this side sent.
        assert!(refused(good(), &sink(999_999)).contains("this side sent 999999 bytes"));
    }

    #[test]
    fn udp_statistics_are_held_against_what_was_sent() {
        let o = Observed {
            test: TestSpec::Udp {
                size: 1000,
                rate_bps: 8_000_000,
                idle_ms: 0,
            },
            sent_bytes: 100_000,
            sent_datagrams: 100,
            connections: None,
            window_s: 1.0,
        };
        let arrivals: Vec<_> = (0..90u64)
            .map(|i| crate::serve::udp_stats::Arrival {
                seq: i,
                sent_ns: i * 1_000_000,
                recv_ns: 5_000 + i * 1_000_000,
            })
            .collect();
        let u = crate::serve::udp_stats::summarize(&arrivals, 100, 1000, 1e6);
        let good = PeerReport {
            bytes: u.bytes,
            active_s: u.active_s,
            udp: Some(u),
            ..Default::default()
        };
        check_report(good.clone(), &o).unwrap();
        let cases: Vec<(Breaks<UdpSummary>, &str)> = vec![
            (Box::new(|u| u.sent = 5), "this side told it 100"),
            (
                Box::new(|u| {
                    u.unique = 200;
                    u.received = 200
                }),
                "200 datagrams received",
            ),
            (Box::new(|u| u.loss_pct = -3.0), "loss of -3"),
            (Box::new(|u| u.period_us = 1.0), "sending period of 1"),
            (
                Box::new(|u| u.dev_p50_us = f64::INFINITY),
                "p50 deviation of inf",
            ),
            (
                Box::new(|u| u.dev_p99_us = u.dev_max_us + 1.0),
                "out of order",
            ),
            (Box::new(|u| u.bytes += 1), "payload bytes"),
            (
                Box::new(|u| u.stall_period_s = Some(-1.0)),
                "stall period of -1",
            ),
            (
                Box::new(|u| u.series.push((0.1, -5.0))),
                "series deviation of -5",
            ),
        ];
        for (break_it, says) in cases {
            let mut r = good.clone();
            break_it(r.udp.as_mut().unwrap());
            let why = refused(r, &o);
            assert!(why.contains(says), "expected '{says}' in: {why}");
        }
    }

    /// The peer's text reaches this side escaped and cut: no escape sequence, no 60 KB line.
    #[test]
    fn peer_text_is_escaped_and_cut() {
        let mut r = good();
        let nasty = format!("\u{1b}[2J{}", "x".repeat(60_000));
        r.cpu_error = Some(nasty.clone());
        r.pin_error = Some(nasty.clone());
        r.rx_thread_cpu_error = Some(nasty.clone());
        r.errors = vec![nasty.clone(); 50];
        let r = check_report(r, &sink(1_000_000)).unwrap();
        let texts = [
            r.cpu_error.unwrap(),
            r.pin_error.unwrap(),
            r.rx_thread_cpu_error.unwrap(),
        ];
        for t in texts.iter().chain(&r.errors) {
            assert!(!t.contains('\u{1b}'), "{t}");
            assert!(t.chars().count() <= MAX_PEER_TEXT, "{}", t.len());
        }
        assert_eq!(r.errors.len(), MAX_PEER_ERRORS + 1);
        assert!(r.errors.last().unwrap().contains("42 more errors"));
    }
}
