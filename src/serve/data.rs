//! The peer's side of each test: a data listener (or UDP socket) on the server's own address,
//! `ready {port}`, the data phase, then `finish` → `report`. Data connections from any address
//! other than the control connection's are dropped.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Shared;
use super::proto::{self, Msg, PeerReport, ProtoError, TestSpec};
use super::udp_stats::{self, Arrival};
use crate::cpucost::CpuMeter;
use crate::platform::wait::{self, Bound, Bounded, slice_timeouts};

/// Bytes at the start of every test datagram: magic, sequence number, send time (ns).
pub const UDP_HEADER: usize = 20;
pub const UDP_MAGIC: [u8; 4] = *b"OGN1";
/// Largest idle baseline a client may ask for.
const MAX_IDLE_MS: u32 = 2000;
/// Most datagrams timestamped per test (memory bound: 24 B each, 48 MB per session).
const MAX_ARRIVALS: usize = 2_000_000;

pub(super) fn validate(sh: &Shared, t: &TestSpec) -> Result<(), String> {
    validate_spec(t, sh.cfg.max_streams)
}

/// Whether a test's parameters are within this peer's bounds; a refusal names each field that is
/// out of bounds, and only those.
pub fn validate_spec(t: &TestSpec, max_streams: u32) -> Result<(), String> {
    let mut wrong = Vec::new();
    let idle = |idle_ms: u32, wrong: &mut Vec<String>| {
        if idle_ms > MAX_IDLE_MS {
            wrong.push(format!("idle baseline {idle_ms} ms over {MAX_IDLE_MS} ms"));
        }
    };
    match *t {
        TestSpec::Echo { size, .. } => {
            if size == 0 || size > 1 << 20 {
                wrong.push(format!("echo size {size} outside 1..=1 MiB"));
            }
        }
        TestSpec::Sink { streams, idle_ms } => {
            if streams == 0 || streams > max_streams {
                wrong.push(format!("streams {streams} outside 1..={max_streams}"));
            }
            idle(idle_ms, &mut wrong);
        }
        TestSpec::Udp {
            size,
            rate_bps,
            idle_ms,
        } => {
            if (size as usize) < UDP_HEADER || size > 65_507 {
                wrong.push(format!("udp size {size} outside {UDP_HEADER}..=65507"));
            }
            if rate_bps == 0 || rate_bps > 100_000_000_000 {
                wrong.push(format!("rate {rate_bps} bit/s outside 1..=100 Gbit/s"));
            }
            idle(idle_ms, &mut wrong);
        }
        TestSpec::Accept => {}
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

/// The data connections of one test. They belong to the session: however the test ends (its
/// report sent, the control connection closed, a limit reached, an error), dropping this shuts
/// every one of them down, so no data thread outlives its test (each sees its connection end
/// and returns), and the stop flag ends the listeners' loops.
///
/// The data thread owns its connection (the only strong reference); this keeps a weak one, so a
/// thread that ends on its own (a limit, the client's close) closes the socket at once — a second
/// handle (`try_clone`) would keep it open, and on Windows a shutdown alone does not end a
/// client's blocked send.
struct DataConns {
    conns: Vec<std::sync::Weak<TcpStream>>,
    stop: Arc<AtomicBool>,
}

impl DataConns {
    fn new(stop: Arc<AtomicBool>) -> Self {
        DataConns {
            conns: Vec::new(),
            stop,
        }
    }

    /// After `finish`: let the data threads read what is still in flight to its end (the client
    /// has closed its side), until `deadline` at most; then shut down what is left (a client that
    /// keeps a data connection open past its own finish).
    fn drain<T>(self, threads: &[&JoinHandle<T>], deadline: Instant) {
        while Instant::now() < deadline && threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(self);
    }

    /// Keep a weak handle on `c` (to shut it down at the end if it is still open) and give the
    /// connection back, to be owned by its data thread.
    fn track(&mut self, c: TcpStream) -> Arc<TcpStream> {
        let c = Arc::new(c);
        self.conns.push(Arc::downgrade(&c));
        c
    }
}

impl Drop for DataConns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for c in self.conns.iter().filter_map(std::sync::Weak::upgrade) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Run one test; returns the bytes received, or those and why the test (and with it the
/// session) ends. The test ends `max_test` after it starts or at the session's end, whichever
/// comes first, however the client behaves: its data connections are shut down then.
pub(super) fn run_test(
    sh: &Shared,
    ctl: &mut TcpStream,
    client_ip: IpAddr,
    test: &TestSpec,
    byte_budget: u64,
    session_end: Instant,
) -> Result<u64, (u64, String)> {
    validate(sh, test).map_err(|e| (0, e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let r = run_test_inner(
        sh,
        ctl,
        client_ip,
        test,
        byte_budget,
        session_end,
        &stop,
        &received,
    );
    stop.store(true, Ordering::SeqCst);
    r.map_err(|e| (received.load(Ordering::SeqCst).min(byte_budget), e))
}

#[allow(clippy::too_many_arguments)]
fn run_test_inner(
    sh: &Shared,
    ctl: &mut TcpStream,
    client_ip: IpAddr,
    test: &TestSpec,
    byte_budget: u64,
    session_end: Instant,
    stop: &Arc<AtomicBool>,
    received: &Arc<AtomicU64>,
) -> Result<u64, String> {
    let env = TestEnv {
        sh,
        ip: ctl.local_addr().map_err(|e| e.to_string())?.ip(),
        client_ip,
        byte_budget,
        deadline: session_end.min(Instant::now() + sh.cfg.max_test),
        stop,
        received,
        limit_msg: format!(
            "byte limit of the session reached (--max-bytes {})",
            sh.cfg.max_bytes
        ),
    };
    let mut report = PeerReport::default();
    match *test {
        TestSpec::Echo { size, pin_cpu } => env.echo_test(ctl, size, pin_cpu, &mut report)?,
        TestSpec::Sink { streams, idle_ms } => env.sink_test(ctl, streams, idle_ms, &mut report)?,
        TestSpec::Accept => env.accept_test(ctl, &mut report)?,
        TestSpec::Udp {
            size,
            rate_bps,
            idle_ms,
        } => env.udp_test(ctl, size, rate_bps, idle_ms, &mut report)?,
    }
    let bytes = report.bytes;
    proto::write_msg(
        ctl,
        &Msg::Report {
            report: Box::new(report),
        },
    )
    .map_err(|x| io_err("report", x))?;
    // A stream that hit the limit is not in the report's bytes (it failed); it was received.
    let bytes = bytes.max(received.load(Ordering::SeqCst));
    if bytes >= byte_budget {
        return Err(env.limit_msg);
    }
    Ok(bytes)
}

/// What one test's steps share: where its data connections are accepted and what bounds them.
struct TestEnv<'a> {
    sh: &'a Shared,
    /// The control connection's local address: the data sockets are bound on it.
    ip: IpAddr,
    /// The client's address: data connections from elsewhere are refused.
    client_ip: IpAddr,
    /// What the session may still receive.
    byte_budget: u64,
    /// `max_test` after the test's start, or the session's end if sooner.
    deadline: Instant,
    stop: &'a Arc<AtomicBool>,
    received: &'a Arc<AtomicU64>,
    /// The error of a test that reached the session's byte limit.
    limit_msg: String,
}

impl TestEnv<'_> {
    /// Echo: one data connection, `size`-byte messages echoed (the thread pinned to `pin_cpu`
    /// where asked) until the client's finish; the bytes and the pinning into `report`.
    fn echo_test(
        &self,
        ctl: &mut TcpStream,
        size: u32,
        pin_cpu: Option<usize>,
        report: &mut PeerReport,
    ) -> Result<(), String> {
        let mut conns = DataConns::new(self.stop.clone());
        let l = data_listener(self.ip)?;
        ready(ctl, &l)?;
        let conn = accept_from(&l, self.client_ip, self.deadline, self.stop)
            .map_err(|x| io_err("accept", x))?;
        let conn = conns.track(conn);
        let idle = self.sh.cfg.idle_timeout;
        let budget = self.byte_budget;
        let got = self.received.clone();
        let t = std::thread::spawn(move || echo(conn, size as usize, pin_cpu, idle, budget, &got));
        wait_finish(ctl, self.deadline)?;
        conns.drain(&[&t], self.deadline);
        let (bytes, pinned) = t.join().map_err(|_| "echo thread panicked".to_string())?;
        report.bytes = bytes;
        if bytes >= self.byte_budget {
            report.errors.push(self.limit_msg.clone());
        }
        match pinned {
            Some(Ok(c)) => report.pinned_cpu = Some(c),
            Some(Err(x)) => report.pin_error = Some(x),
            None => {}
        }
        Ok(())
    }

    /// Sink: `streams` data connections read to their end under one byte budget, the CPU
    /// metered (after an idle baseline of `idle_ms`) from before the client is told ready.
    fn sink_test(
        &self,
        ctl: &mut TcpStream,
        streams: u32,
        idle_ms: u32,
        report: &mut PeerReport,
    ) -> Result<(), String> {
        let mut conns = DataConns::new(self.stop.clone());
        let l = data_listener(self.ip)?;
        let meter = meter_for(idle_ms, report);
        ready(ctl, &l)?;
        let budget = Arc::new(AtomicU64::new(self.byte_budget));
        let mut threads: Vec<JoinHandle<io::Result<Sunk>>> = Vec::new();
        for _ in 0..streams {
            let conn = accept_from(&l, self.client_ip, self.deadline, self.stop)
                .map_err(|x| io_err("accept", x))?;
            let conn = conns.track(conn);
            if report.rcvbuf.is_none() {
                report.rcvbuf = crate::platform::net::tcp_buffers(&conn).ok().map(|b| b.1);
            }
            let budget = budget.clone();
            let idle = self.sh.cfg.idle_timeout;
            let got = self.received.clone();
            let msg = self.limit_msg.clone();
            threads.push(std::thread::spawn(move || {
                sink(conn, &budget, idle, &got, msg)
            }));
        }
        wait_finish(ctl, self.deadline)?;
        conns.drain(&threads.iter().collect::<Vec<_>>(), self.deadline);
        join_sinks(threads, report);
        report.connections = streams as u64;
        stop_meter(meter, report);
        Ok(())
    }

    /// Accept: connections accepted, read to their end and closed until the client's finish;
    /// their count into `report`.
    fn accept_test(&self, ctl: &mut TcpStream, report: &mut PeerReport) -> Result<(), String> {
        let l = data_listener(self.ip)?;
        let port = ready(ctl, &l)?;
        let count = Arc::new(AtomicU64::new(0));
        let (stop2, count2) = (self.stop.clone(), count.clone());
        let client_ip = self.client_ip;
        let t = std::thread::spawn(move || accept_close(l, client_ip, &stop2, &count2));
        let r = wait_finish(ctl, self.deadline);
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread (blocked in accept) so that it sees the stop.
        let _ = TcpStream::connect_timeout(&SocketAddr::new(self.ip, port), Duration::from_secs(1));
        let _ = t.join();
        r?;
        report.connections = count.load(Ordering::SeqCst);
        Ok(())
    }

    /// UDP: datagrams of `size` bytes sent at `rate_bps` received and timestamped on one port
    /// until the client's finish, the CPU metered from before the client is told ready; loss,
    /// jitter and bytes from the arrivals and the count the client sent.
    fn udp_test(
        &self,
        ctl: &mut TcpStream,
        size: u32,
        rate_bps: u64,
        idle_ms: u32,
        report: &mut PeerReport,
    ) -> Result<(), String> {
        let sock =
            UdpSocket::bind(SocketAddr::new(self.ip, 0)).map_err(|x| io_err("bind udp", x))?;
        report.rcvbuf = crate::platform::net::set_udp_recv_buffer(&sock, 4 << 20).ok();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|x| io_err("udp timeout", x))?;
        let port = sock.local_addr().map_err(|x| io_err("udp addr", x))?.port();
        let meter = meter_for(idle_ms, report);
        proto::write_msg(ctl, &Msg::Ready { port }).map_err(|x| io_err("ready", x))?;
        let stop2 = self.stop.clone();
        let budget = self.byte_budget;
        let client_ip = self.client_ip;
        let t = std::thread::spawn(move || udp_receive(sock, client_ip, &stop2, budget));
        let fin = wait_finish(ctl, self.deadline);
        self.stop.store(true, Ordering::SeqCst);
        let (arrivals, skipped) = t.join().map_err(|_| "udp thread panicked".to_string())?;
        if skipped > 0 {
            report.errors.push(format!(
                "{skipped} datagrams not timestamped (over {MAX_ARRIVALS} per test or the session's byte limit): loss and jitter would be wrong"
            ));
        }
        let (_, sent) = fin?;
        stop_meter(meter, report);
        let period_ns = size as f64 * 8.0 * 1e9 / rate_bps as f64;
        let s = udp_stats::summarize(&arrivals, sent, size as u64, period_ns);
        report.bytes = s.bytes;
        report.active_s = s.active_s;
        report.udp = Some(s);
        Ok(())
    }
}

/// `what: err`, the message of a failed socket step.
fn io_err(what: &str, err: io::Error) -> String {
    format!("{what}: {err}")
}

/// A CPU meter started with an idle baseline of `idle_ms`, or none (and why, in `report`).
fn meter_for(idle_ms: u32, report: &mut PeerReport) -> Option<CpuMeter> {
    match CpuMeter::start(Duration::from_millis(idle_ms as u64)) {
        Ok(m) => Some(m),
        Err(err) => {
            report.cpu_error = Some(format!("CPU counters: {err}"));
            None
        }
    }
}

/// The CPU meter's figures into the report (or why there are none).
fn stop_meter(meter: Option<CpuMeter>, report: &mut PeerReport) {
    if let Some(m) = meter {
        match m.stop() {
            Ok(c) => report.cpu = Some(c),
            Err(x) => report.cpu_error = Some(format!("CPU counters: {x}")),
        }
    }
}

/// The sink streams' bytes, errors, the time from the first byte of any to the last of any, and
/// the receiving threads' own CPU summed (or why it is not measured).
fn join_sinks(threads: Vec<JoinHandle<io::Result<Sunk>>>, report: &mut PeerReport) {
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    let n = threads.len() as u64;
    let mut cpu: Result<u64, String> = Ok(0);
    for t in threads {
        match t.join() {
            Ok(Ok(s)) => {
                report.bytes += s.bytes;
                first = min_opt(first, s.first);
                last = max_opt(last, s.last);
                cpu = match (cpu, s.thread_cpu_ns) {
                    (Ok(a), Ok(b)) => Ok(a + b),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                };
            }
            Ok(Err(x)) => report.errors.push(format!("stream: {x}")),
            Err(_) => report.errors.push("stream thread panicked".into()),
        }
    }
    if let (Some(a), Some(b)) = (first, last) {
        report.active_s = b.duration_since(a).as_secs_f64();
    }
    match cpu.and_then(|ns| crate::platform::clock::thread_cpu_usable(ns, n).map(|()| ns)) {
        Ok(ns) => report.rx_thread_cpu_s = Some(ns as f64 / 1e9),
        Err(why) => report.rx_thread_cpu_error = Some(why),
    }
}

fn min_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}
fn max_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

fn data_listener(ip: IpAddr) -> Result<TcpListener, String> {
    crate::platform::net::listen(SocketAddr::new(ip, 0), 1024)
        .map_err(|e| format!("data listener: {e}"))
}

fn ready(ctl: &mut TcpStream, l: &TcpListener) -> Result<u16, String> {
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    proto::write_msg(ctl, &Msg::Ready { port }).map_err(|e| format!("ready: {e}"))?;
    Ok(port)
}

/// Wait for `finish` on the control connection, whole, before `deadline` (the test's bound);
/// returns (sent_bytes, sent_datagrams).
fn wait_finish(ctl: &mut TcpStream, deadline: Instant) -> Result<(u64, u64), String> {
    let bound = Bound::new(Some(deadline), None);
    slice_timeouts(ctl, &bound).map_err(|e| e.to_string())?;
    match proto::read_msg(&mut Bounded::new(&*ctl, bound)) {
        Err(ProtoError::Io(x)) if wait::ended(&x) => {
            Err("test time limit reached: no finish from the client in time".into())
        }
        Ok(Msg::Finish {
            sent_bytes,
            sent_datagrams,
        }) => Ok((sent_bytes, sent_datagrams)),
        Ok(m) => Err(format!("expected finish, got {m:?}")),
        Err(e) => Err(format!("waiting for finish: {e}")),
    }
}

/// Accept one connection from `from` before `deadline` (others are dropped).
fn accept_from(
    l: &TcpListener,
    from: IpAddr,
    deadline: Instant,
    stop: &AtomicBool,
) -> io::Result<TcpStream> {
    l.set_nonblocking(true)?;
    let bound = deadline.min(Instant::now() + Duration::from_secs(10));
    loop {
        match l.accept() {
            Ok((c, a)) if a.ip() == from => {
                c.set_nonblocking(false)?;
                let _ = c.set_nodelay(true);
                return Ok(c);
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= bound || stop.load(Ordering::SeqCst) {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no data connection from the client in time",
                    ));
                }
                std::thread::sleep(Duration::from_micros(500));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Echo `size`-byte messages until the client closes, the test ends (its connection is shut
/// down) or the session's byte budget is spent.
fn echo(
    c: Arc<TcpStream>,
    size: usize,
    pin: Option<usize>,
    idle: Duration,
    budget: u64,
    received: &AtomicU64,
) -> (u64, Option<Result<usize, String>>) {
    let pinned = pin.map(|cpu| {
        crate::platform::pin_current_thread(cpu)
            .map(|_| cpu)
            .map_err(|e| e.to_string())
    });
    let _ = c.set_read_timeout(Some(idle));
    let mut c = &*c;
    let mut buf = vec![0u8; size];
    let mut bytes = 0u64;
    while bytes < budget && c.read_exact(&mut buf).is_ok() {
        bytes += size as u64;
        received.store(bytes, Ordering::SeqCst);
        if c.write_all(&buf).is_err() {
            break;
        }
    }
    (bytes, pinned)
}

struct Sunk {
    bytes: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    /// The thread's own CPU from its first recv to its connection's end (Err: the clock failed).
    thread_cpu_ns: Result<u64, String>,
}

fn sink(
    c: Arc<TcpStream>,
    budget: &AtomicU64,
    idle: Duration,
    received: &AtomicU64,
    limit_msg: String,
) -> io::Result<Sunk> {
    c.set_read_timeout(Some(idle))?;
    let mut c = &*c;
    let mut buf = vec![0u8; 256 << 10];
    let mut s = Sunk {
        bytes: 0,
        first: None,
        last: None,
        thread_cpu_ns: Ok(0),
    };
    // A thread blocked in its first recv uses no CPU: reading the clock before it is the same
    // as reading it as the first recv returns.
    let cpu0 = crate::platform::clock::ThreadCpu::start();
    loop {
        let n = c.read(&mut buf)?;
        if n == 0 {
            s.thread_cpu_ns = cpu0.elapsed_ns();
            return Ok(s);
        }
        let now = Instant::now();
        s.first.get_or_insert(now);
        s.last = Some(now);
        s.bytes += n as u64;
        received.fetch_add(n as u64, Ordering::SeqCst);
        let before = budget.fetch_sub(n as u64, Ordering::SeqCst);
        if before < n as u64 {
            budget.store(0, Ordering::SeqCst);
            // Returning drops the only strong handle: the socket closes now and the client's
            // writes fail at once, not when the test ends.
            return Err(io::Error::other(limit_msg));
        }
    }
}

/// Accept connections and close each at once (the client has shut its side down already, or
/// does so next; no data is exchanged), so that a slow peer never fills the accept queue.
fn accept_close(l: TcpListener, from: IpAddr, stop: &AtomicBool, count: &AtomicU64) {
    loop {
        let Ok((c, a)) = l.accept() else {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if a.ip() == from {
            count.fetch_add(1, Ordering::SeqCst);
        }
        drop(c);
    }
}

/// Parse a test datagram's header: (sequence, send ns).
pub fn parse_datagram(b: &[u8]) -> Option<(u64, u64)> {
    if b.len() < UDP_HEADER || b[..4] != UDP_MAGIC {
        return None;
    }
    let seq = u64::from_be_bytes(b[4..12].try_into().ok()?);
    let sent = u64::from_be_bytes(b[12..20].try_into().ok()?);
    Some((seq, sent))
}

/// Timestamps datagrams until stopped; returns them and how many were skipped over the limits.
fn udp_receive(
    sock: UdpSocket,
    from: IpAddr,
    stop: &AtomicBool,
    budget: u64,
) -> (Vec<Arrival>, u64) {
    let base = Instant::now();
    let mut buf = vec![0u8; 65_536];
    let mut v = Vec::new();
    let mut bytes = 0u64;
    let mut stopped_at: Option<Instant> = None;
    let mut skipped = 0u64;
    loop {
        // Past finish: drain what is in flight for at most 200 ms, whatever keeps arriving.
        if stop.load(Ordering::SeqCst)
            && stopped_at.get_or_insert_with(Instant::now).elapsed() > Duration::from_millis(200)
        {
            return (v, skipped);
        }
        match sock.recv_from(&mut buf) {
            Ok((n, a)) => {
                let recv_ns = base.elapsed().as_nanos() as u64;
                if a.ip() != from {
                    continue;
                }
                if v.len() >= MAX_ARRIVALS || bytes >= budget {
                    skipped += 1;
                    continue;
                }
                if let Some((seq, sent_ns)) = parse_datagram(&buf[..n]) {
                    bytes += n as u64;
                    v.push(Arrival {
                        seq,
                        sent_ns,
                        recv_ns,
                    });
                }
            }
            // Quiet for 20 ms: done once finish has arrived.
            Err(_) if stop.load(Ordering::SeqCst) => return (v, skipped),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal names the fields that are wrong, and no other.
    #[test]
    fn a_refusal_names_only_the_wrong_fields() {
        let sink = |streams, idle_ms| TestSpec::Sink { streams, idle_ms };
        assert!(validate_spec(&sink(1, 200), 64).is_ok());
        let e = validate_spec(&sink(1, 5000), 64).unwrap_err();
        assert_eq!(e, "idle baseline 5000 ms over 2000 ms");
        let e = validate_spec(&sink(65, 200), 64).unwrap_err();
        assert_eq!(e, "streams 65 outside 1..=64");
        let e = validate_spec(&sink(0, 5000), 64).unwrap_err();
        assert!(
            e.contains("streams 0") && e.contains("idle baseline 5000"),
            "{e}"
        );
        let udp = |size, rate_bps, idle_ms| TestSpec::Udp {
            size,
            rate_bps,
            idle_ms,
        };
        assert!(validate_spec(&udp(8192, 1_000_000, 0), 64).is_ok());
        assert_eq!(
            validate_spec(&udp(8192, 0, 0), 64).unwrap_err(),
            "rate 0 bit/s outside 1..=100 Gbit/s"
        );
        assert_eq!(
            validate_spec(&udp(10, 1_000_000, 0), 64).unwrap_err(),
            "udp size 10 outside 20..=65507"
        );
        let echo = TestSpec::Echo {
            size: 0,
            pin_cpu: None,
        };
        assert_eq!(
            validate_spec(&echo, 64).unwrap_err(),
            "echo size 0 outside 1..=1 MiB"
        );
    }
}
