//! `fs/stream_from_tcp`: a network-to-disk relay — one thread receives a TCP stream over loopback
//! and writes what each receive returned to one file through the OS cache, as `iperf3 -s -F`, an
//! `nc -l > file` or `socat` does: receives of up to 128 KiB, no fsync until the end.
//!
//! Why what each receive returned, not whole blocks: that is what those programs write, and it
//! costs more. A receive returns what has arrived (on Linux loopback often one 65483-byte
//! segment), so after the first short one every write starts mid-page and the page cache fills
//! partial pages and small folios. On the reference VM (Linux 6.18, ext4) one writer whose first
//! write was 65483 bytes, then 128 KiB calls, paid 0.282–0.288 ms of its own CPU per MB against
//! 0.196–0.205 for the same calls at page-aligned offsets, system-wide 0.385–0.420 against
//! 0.270–0.286 (three interleaved pairs, 3000 MB each); a relay reading whole blocks cost
//! 0.66–0.93 CPU-ms/MB system-wide against iperf3's 0.75–1.10 in the same windows (nine
//! interleaved pairs; ~5 % of iperf3's writes are short), writing what it received 0.84–1.19
//! against 0.88–1.09 (three). The facts say how the measured part's receives fell:
//! `short_receive_share`, `mid_page_write_share`.
//!
//! Why a composite benchmark: the one thread's cost is not the sum of a receive and a buffered
//! write measured apart. On the reference VM (Linux 6.18, ext4 on virtio-blk) a relay on one
//! thread paid 1.35–1.39× the sum (a Python relay, session 27) and iperf3's server thread 1.4–1.6×
//! the sum of net/tcp_stream's receiving thread and fs/stream_write's writing thread: the two
//! kernel paths share the thread's caches and the socket's and the file's pages alternate in
//! them. A model that adds per-unit costs cannot see that; a suite that measures the relay as the
//! OS service it is can, and the relay's own figures against its parts' say how much the
//! alternation costs on this machine (`model` and `model check` show that factor).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::stream_common::{CALL, Stream, with_thread_cpu};
use super::{FsOptions, MIB, io_err, size_name};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::clock::{THREAD_CPU_STEP_NS, ThreadCpu, thread_cpu_time_ns};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

/// The relay's thread CPU is split into its receive and its write calls only where the thread
/// CPU clock steps at most this often (ns): one block's calls take tens of microseconds.
const SPLIT_MAX_STEP_NS: u64 = 1_000;

/// What the relay writes, in its parameters (session 28's relay wrote whole blocks).
const WRITES: &str = "what each receive returned (up to block_bytes)";

/// How long the relay waits for its sender's connection.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

pub struct StreamFromTcp {
    info: Info,
    stream: Stream,
}

impl StreamFromTcp {
    pub fn new(o: &FsOptions) -> Self {
        let stream = Stream::new(o);
        let plan = &stream.plan;
        StreamFromTcp {
            info: Info {
                id: "fs/stream_from_tcp".into(),
                suite: "fs",
                title: "Network to disk: one thread receives a TCP stream and writes it to a file"
                    .into(),
                method: format!(
                    "A sender thread in this process writes a stream to a TCP connection over \
                     127.0.0.1 in {call} blocks; one receiving thread receives up to {call} at \
                     a time and writes what each receive returned to one file through the OS \
                     cache (no fsync between: the OS writes the stream back while it arrives), \
                     then fsyncs and closes the file once — the shape of `iperf3 -s -F`, `nc -l \
                     > file` and `socat`; a receive that returns part of a block leaves the \
                     following writes starting mid-page (facts short_receive_share, \
                     mid_page_write_share: of the measured part's receives). First as \
                     many bytes as the OS lets build up before its background writeback starts \
                     (here {lead} — {why}), then the measured {bytes}. thread_cpu_s_per_gb: the \
                     receiving thread's own CPU clock ({clock}) over the measured part — its \
                     receive and write calls both (the writeback by kernel threads and the \
                     final fsync are not in it; on loopback part of the protocol processing \
                     runs in the sender's thread); split into thread_recv_ and \
                     thread_write_cpu_s_per_gb by reading that clock around every call where \
                     it steps at most every {split} µs (the reads are in the total). \
                     mb_per_s: all bytes / (the connection accepted to the fsync returned). \
                     cpu_s_per_gb: {meter} — sender, receiver, writeback and the fsync, per \
                     byte relayed. The file is deleted after each run; the stream is shortened \
                     (lead first) if half the free space minus 1 GiB is smaller, said. Compare \
                     thread_cpu_s_per_gb with net/tcp_stream rx_thread_us_per_kib + \
                     fs/stream_write thread_cpu_s_per_gb: the relay's excess over that sum is \
                     what alternating the two costs one thread here.",
                    call = size_name(CALL),
                    lead = size_name(plan.lead),
                    why = plan.lead_why,
                    bytes = size_name(plan.bytes),
                    clock = crate::platform::clock::CPU_CLOCK_DESCRIPTION,
                    split = SPLIT_MAX_STEP_NS / 1000,
                    meter = crate::cpucost::method(),
                ),
                metrics: vec![
                    MetricSpec {
                        name: "mb_per_s",
                        unit: Unit::MegabytesPerSecond,
                        better: Better::Higher,
                        description: "MB/s (10^6 bytes per second) received and made durable: \
                                      bytes / (connection accepted to the final fsync returned)",
                    },
                    MetricSpec {
                        name: "thread_cpu_s_per_gb",
                        unit: Unit::CpuSecondsPerGb,
                        better: Better::Lower,
                        description: "the relaying thread's own CPU-seconds per GB (10^9 bytes) \
                                      over the measured part: its receive and write calls \
                                      (the final fsync not included)",
                    },
                    MetricSpec {
                        name: "thread_recv_cpu_s_per_gb",
                        unit: Unit::CpuSecondsPerGb,
                        better: Better::Lower,
                        description: "the part of thread_cpu_s_per_gb in its receive calls",
                    },
                    MetricSpec {
                        name: "thread_write_cpu_s_per_gb",
                        unit: Unit::CpuSecondsPerGb,
                        better: Better::Lower,
                        description: "the part of thread_cpu_s_per_gb in its write calls",
                    },
                    MetricSpec {
                        name: "cpu_s_per_gb",
                        unit: Unit::CpuSecondsPerGb,
                        better: Better::Lower,
                        description: "CPU-seconds per GB (10^9 bytes), system-wide net of the \
                                      idle baseline: sender, receiver, writeback and the final \
                                      fsync",
                    },
                ],
            },
            stream,
        }
    }
}

/// The sender: `total` bytes to `addr` in [`CALL`] blocks, then its side shut down. Ends early
/// (with the error) when the receiver has gone.
fn send(addr: std::net::SocketAddr, total: u64) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    let buf = vec![0x5au8; CALL as usize];
    let mut sent = 0;
    while sent < total {
        s.write_all(&buf)?;
        sent += CALL;
    }
    s.shutdown(Shutdown::Write)
}

/// Accept the sender's connection, waiting at most [`CONNECT_WAIT`] and no longer than the
/// sender lives.
fn accept(
    l: &TcpListener,
    sender: &std::thread::JoinHandle<std::io::Result<()>>,
) -> Result<TcpStream, BenchError> {
    let os = |what: &str, e| crate::bench::os_err(what, e);
    l.set_nonblocking(true)
        .map_err(|e| os("loopback listener", e))?;
    let t0 = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(|e| os("loopback connection", e))?;
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if sender.is_finished() || t0.elapsed() > CONNECT_WAIT {
                    return Err(BenchError::failed(format!(
                        "the sender did not connect over loopback within {} s",
                        CONNECT_WAIT.as_secs()
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(os("accept on loopback", e)),
        }
    }
}

/// One receive into `buf`: what it returned (0 at the stream's end), a signal's interruption
/// retried.
fn read_some(s: &mut TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// What the relaying thread measured.
struct Relayed {
    /// Seconds from the connection accepted to the fsync returned.
    wall: f64,
    /// The thread's CPU over the measured part, ns.
    calls: Result<u64, String>,
    /// Of it, in the receive and the write calls (ns), where the clock is fine enough.
    parts: Option<(u64, u64)>,
    /// Bytes relayed in the measured part (from the first receive at or past the lead).
    measured: u64,
    /// The measured part's receives and writes.
    shape: Shape,
    /// The page size the writes were placed against, or why not read.
    page: Result<u64, String>,
}

impl Relayed {
    /// The relay's own figures and facts on `out`: the measured part's shape, the thread's CPU
    /// per GB and its split into receive and write calls (or why not).
    fn figures(self, mut out: RunOutput) -> RunOutput {
        let Relayed {
            calls,
            parts,
            measured,
            shape,
            page,
            ..
        } = self;
        out = out
            .fact("measured_bytes_relayed", measured)
            .fact("writes", shape.writes)
            .fact(
                "short_receive_share",
                Shape::share(shape.short, shape.writes),
            )
            .fact(
                "mid_page_write_share",
                match page {
                    Ok(_) => Shape::share(shape.mid_page, shape.writes).into(),
                    Err(why) => serde_json::Value::from(why),
                },
            );
        out = with_thread_cpu(out, "thread_cpu_s_per_gb", calls.clone(), measured);
        out = match parts {
            Some((r, w)) if calls.is_ok() => {
                let out = with_thread_cpu(out, "thread_recv_cpu_s_per_gb", Ok(r), measured);
                with_thread_cpu(out, "thread_write_cpu_s_per_gb", Ok(w), measured)
            }
            _ => {
                let why = match &calls {
                    Err(e) => e.clone(),
                    Ok(_) if THREAD_CPU_STEP_NS > SPLIT_MAX_STEP_NS => format!(
                        "not measured: the thread CPU clock steps every {:.3} ms, too coarse to \
                         time one block's calls",
                        THREAD_CPU_STEP_NS as f64 / 1e6
                    ),
                    Ok(_) => "not measured: a read of the thread CPU clock around a call failed"
                        .to_string(),
                };
                out.not_measured("thread_recv_cpu_s_per_gb", why.clone())
                    .not_measured("thread_write_cpu_s_per_gb", why)
            }
        };
        out
    }
}

/// What the measured part's receives returned, and so where its writes fell in the file.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Shape {
    /// Receive-and-write pairs.
    writes: u64,
    /// Receives that returned less than a whole block.
    short: u64,
    /// Writes that started at a file offset not a multiple of the page size (mid-page).
    mid_page: u64,
}

impl Shape {
    /// One write of `n` bytes at file offset `at`, pages of `page` bytes.
    fn count(&mut self, at: u64, n: usize, page: u64) {
        self.writes += 1;
        self.short += u64::from((n as u64) < CALL);
        self.mid_page += u64::from(!at.is_multiple_of(page));
    }

    fn share(part: u64, of: u64) -> f64 {
        if of == 0 {
            0.0
        } else {
            part as f64 / of as f64
        }
    }
}

/// Receive `total` bytes from the sender and write what each receive returned to `f`, then
/// fsync; the thread's CPU from the first receive at or past byte `lead` on.
fn relay(
    ctx: &RunContext,
    l: &TcpListener,
    sender: &std::thread::JoinHandle<std::io::Result<()>>,
    f: &mut std::fs::File,
    p: &std::path::Path,
    lead: u64,
    total: u64,
) -> Result<Relayed, BenchError> {
    let mut s = accept(l, sender)?;
    let mut split = THREAD_CPU_STEP_NS <= SPLIT_MAX_STEP_NS;
    let mut buf = vec![0u8; CALL as usize];
    let t0 = Instant::now();
    let mut cpu0 = ThreadCpu::start();
    let (mut recv_ns, mut write_ns) = (0u64, 0u64);
    // The thread clock at the end of the previous call, in the measured part where split: two
    // reads per receive (after it, after its write), none in the lead.
    let mut last: Option<u64> = None;
    // The byte the measured part began at (the first receive at or past the lead).
    let mut measured_from: Option<u64> = None;
    let mut done = 0;
    let mut next_check = 0;
    let mut shape = Shape::default();
    // The OS's page size; unread, mid-page writes are not counted (said in the facts).
    let page = crate::platform::memory::page_size().map(|p| p as u64);
    let page_step = *page.as_ref().unwrap_or(&1);
    while done < total {
        if done >= next_check {
            ctx.check()?;
            next_check = done + 64 * MIB;
        }
        if measured_from.is_none() && done >= lead {
            measured_from = Some(done);
            cpu0 = ThreadCpu::start();
            last = split.then(|| thread_cpu_time_ns().ok()).flatten();
            split = last.is_some();
        }
        // One receive, then one write of what it returned — as nc, socat and iperf3 -F do.
        let want = (total - done).min(CALL) as usize;
        let n = read_some(&mut s, &mut buf[..want])
            .map_err(|e| crate::bench::os_err("receive over loopback", e))?;
        if n == 0 {
            return Err(BenchError::failed(format!(
                "the sender's stream ended after {} of {}",
                size_name(done),
                size_name(total)
            )));
        }
        let received = last.and_then(|_| thread_cpu_time_ns().ok());
        if measured_from.is_some() {
            shape.count(done, n, page_step);
        }
        f.write_all(&buf[..n]).map_err(|e| io_err("write", p, e))?;
        if let Some(a) = last {
            match (received, thread_cpu_time_ns().ok()) {
                (Some(b), Some(c)) => {
                    recv_ns += b.saturating_sub(a);
                    write_ns += c.saturating_sub(b);
                    last = Some(c);
                }
                // A clock read that failed would leave a part short: no split.
                _ => (split, last) = (false, None),
            }
        }
        done += n as u64;
    }
    let calls = cpu0.elapsed_ns();
    f.sync_all().map_err(|e| io_err("fsync", p, e))?;
    Ok(Relayed {
        wall: t0.elapsed().as_secs_f64(),
        calls,
        parts: split.then_some((recv_ns, write_ns)),
        measured: total - measured_from.unwrap_or(total),
        shape,
        page: page.map_err(|e| format!("not measured: the page size could not be read: {e}")),
    })
}

impl Benchmark for StreamFromTcp {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = self.stream.plan.params("block_bytes");
        m.insert("writes".into(), WRITES.into());
        m
    }

    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        self.stream.estimate_s(e)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut s = self.stream.open()?;
        let (lead, total) = (s.lead, s.total());
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| crate::bench::os_err("bind a loopback listener", e))?;
        let addr = l
            .local_addr()
            .map_err(|e| crate::bench::os_err("loopback listener address", e))?;
        let meter = self.stream.meter();
        let sender = std::thread::Builder::new()
            .name("stream-sender".into())
            .spawn(move || send(addr, total))
            .map_err(|e| crate::bench::os_err("start the sender thread", e))?;
        // Every exit below joins the sender: dropping the connection ends its writes.
        let relayed = relay(ctx, &l, &sender, &mut s.file, &s.path, lead, total);
        // A connection never accepted (relay gave up waiting) is reset with the listener, so a
        // sender blocked on its full buffer ends too.
        drop(l);
        let sent = sender.join();
        let relayed = relayed?;
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(crate::bench::os_err("send over loopback", e)),
            Err(_) => return Err(BenchError::failed("the sender thread panicked")),
        }
        Ok(s.finish(&self.info.id, meter, relayed.wall, |out| {
            relayed.figures(out)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_receive_returns_what_arrived_and_the_end_is_seen() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let pieces = [1000usize, 9000, 50_000, 2 * 4096];
        let t = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            for piece in pieces {
                s.write_all(&vec![7u8; piece]).unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 8192];
        let (mut total, mut receives) = (0, 0);
        loop {
            let n = read_some(&mut s, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= buf.len());
            assert!(buf[..n].iter().all(|b| *b == 7));
            total += n;
            receives += 1;
        }
        t.join().unwrap();
        assert_eq!(total, pieces.iter().sum::<usize>());
        // 68192 bytes cannot arrive in fewer receives of at most 8192.
        assert!(receives >= 68_192usize.div_ceil(8192));
    }

    #[test]
    fn the_shape_counts_short_receives_and_writes_that_start_mid_page() {
        let mut sh = Shape::default();
        let mut at = 0;
        for n in [CALL as usize, 65_483, CALL as usize, 4096, CALL as usize] {
            sh.count(at, n, 4096);
            at += n as u64;
        }
        // Offsets 0, 131072, 196555 (mid-page), 327627 (mid-page), 331723 (mid-page).
        assert_eq!(
            sh,
            Shape {
                writes: 5,
                short: 2,
                mid_page: 3
            }
        );
        assert_eq!(Shape::share(3, 5), 0.6);
        assert_eq!(Shape::share(0, 0), 0.0);
    }

    #[test]
    fn the_relay_streams_the_same_plan_as_the_streaming_writer() {
        let o = FsOptions {
            max_size: Some(3 * super::super::stream_common::DEFAULT_BYTES + 1),
            ..Default::default()
        };
        let r = StreamFromTcp::new(&o);
        let w = super::super::stream_common::Plan::new(&o);
        assert_eq!((r.stream.plan.lead, r.stream.plan.bytes), (w.lead, w.bytes));
        let names: Vec<_> = r.info.metrics.iter().map(|m| m.name).collect();
        assert_eq!(
            names,
            [
                "mb_per_s",
                "thread_cpu_s_per_gb",
                "thread_recv_cpu_s_per_gb",
                "thread_write_cpu_s_per_gb",
                "cpu_s_per_gb"
            ]
        );
    }
}
