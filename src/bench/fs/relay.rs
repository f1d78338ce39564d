//! `fs/stream_from_tcp`: a network-to-disk relay — one thread receives a TCP stream over loopback
//! and writes every block it received to one file through the OS cache, as `iperf3 -s -F`, an
//! `nc -l > file`, a backup or an upload receiver does: 128 KiB blocks, no fsync until the end.
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

use super::stream::{CALL, Opened, Plan, with_cpu_cost, with_thread_cpu};
use super::{FsOptions, MIB, io_err, size_name};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::cpucost::CpuMeter;
use crate::harness::RunContext;
use crate::model::BenchError;
use crate::platform::clock::{THREAD_CPU_STEP_NS, ThreadCpu, thread_cpu_time_ns};
use crate::units::{Better, Unit};

/// The relay's thread CPU is split into its receive and its write calls only where the thread
/// CPU clock steps at most this often (ns): one block's calls take tens of microseconds.
const SPLIT_MAX_STEP_NS: u64 = 1_000;

/// How long the relay waits for its sender's connection.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

pub struct StreamFromTcp {
    info: Info,
    parent: std::path::PathBuf,
    plan: Plan,
    idle: Duration,
}

impl StreamFromTcp {
    pub fn new(o: &FsOptions) -> Self {
        let plan = Plan::new(o);
        StreamFromTcp {
            info: Info {
                id: "fs/stream_from_tcp".into(),
                suite: "fs",
                title: "Network to disk: one thread receives a TCP stream and writes it to a file"
                    .into(),
                method: format!(
                    "A sender thread in this process writes a stream to a TCP connection over \
                     127.0.0.1 in {call} blocks; one receiving thread reads each whole {call} \
                     block from the socket (as many recv calls as it takes) and writes it to one \
                     file through the OS cache (no fsync between: the OS writes the stream back \
                     while it arrives), then fsyncs and closes the file once — the shape of \
                     `iperf3 -s -F` and of any receiver that stores what it is sent. First as \
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
            parent: o.parent(),
            plan,
            idle: Duration::from_millis(if o.quick { 30 } else { 200 }),
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

/// Read one whole block (`buf.len()` bytes) from `s`: Ok(false) at the stream's end before it.
fn read_block(s: &mut TcpStream, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// What the relaying thread measured.
struct Relayed {
    /// Seconds from the connection accepted to the fsync returned.
    wall: f64,
    /// The thread's CPU over the measured part, ns.
    calls: Result<u64, String>,
    /// Of it, in the receive and the write calls (ns), where the clock is fine enough.
    parts: Option<(u64, u64)>,
}

/// Receive `total` bytes from the sender in whole blocks and write each to `f`, then fsync;
/// the thread's CPU from byte `lead` on.
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
    // reads per block (after its receive, after its write), none in the lead.
    let mut last: Option<u64> = None;
    let mut done = 0;
    while done < total {
        if done % (64 * MIB) == 0 {
            ctx.check()?;
        }
        if done == lead {
            cpu0 = ThreadCpu::start();
            last = split.then(|| thread_cpu_time_ns().ok()).flatten();
            split = last.is_some();
        }
        if !read_block(&mut s, &mut buf)
            .map_err(|e| crate::bench::os_err("receive over loopback", e))?
        {
            return Err(BenchError::failed(format!(
                "the sender's stream ended after {} of {}",
                size_name(done),
                size_name(total)
            )));
        }
        let received = last.and_then(|_| thread_cpu_time_ns().ok());
        f.write_all(&buf).map_err(|e| io_err("write", p, e))?;
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
        done += CALL;
    }
    let calls = cpu0.elapsed_ns();
    f.sync_all().map_err(|e| io_err("fsync", p, e))?;
    Ok(Relayed {
        wall: t0.elapsed().as_secs_f64(),
        calls,
        parts: split.then_some((recv_ns, write_ns)),
    })
}

impl Benchmark for StreamFromTcp {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, serde_json::Value> {
        self.plan.params("block_bytes")
    }

    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        self.plan.estimate_s(self.idle, e)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let Opened {
            wd,
            mut out,
            file: mut f,
            path: p,
            lead,
            bytes,
            reduced,
        } = self.plan.open(&self.parent)?;
        let total = lead + bytes;
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| crate::bench::os_err("bind a loopback listener", e))?;
        let addr = l
            .local_addr()
            .map_err(|e| crate::bench::os_err("loopback listener address", e))?;
        let meter = CpuMeter::start(self.idle);
        let sender = std::thread::Builder::new()
            .name("stream-sender".into())
            .spawn(move || send(addr, total))
            .map_err(|e| crate::bench::os_err("start the sender thread", e))?;
        // Every exit below joins the sender: dropping the connection ends its writes.
        let relayed = relay(ctx, &l, &sender, &mut f, &p, lead, total);
        // A connection never accepted (relay gave up waiting) is reset with the listener, so a
        // sender blocked on its full buffer ends too.
        drop(l);
        let sent = sender.join();
        let Relayed { wall, calls, parts } = relayed?;
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(crate::bench::os_err("send over loopback", e)),
            Err(_) => return Err(BenchError::failed("the sender thread panicked")),
        }
        drop(f);
        let cost = meter.and_then(|m| m.stop());
        out = out.metric("mb_per_s", vec![total as f64 / wall / 1e6]);
        out = with_thread_cpu(out, "thread_cpu_s_per_gb", calls.clone(), bytes);
        out = match parts {
            Some((r, w)) if calls.is_ok() => {
                let out = with_thread_cpu(out, "thread_recv_cpu_s_per_gb", Ok(r), bytes);
                with_thread_cpu(out, "thread_write_cpu_s_per_gb", Ok(w), bytes)
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
        out = with_cpu_cost(out, &self.info.id, cost, total);
        out.warnings.extend(reduced);
        out.warnings
            .extend(super::memory_state_warning(&self.info.id, "every figure"));
        drop(wd);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_read_whole_across_short_reads_and_the_end_is_seen() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            // Two blocks' worth in uneven pieces, then half a block.
            for piece in [1000usize, 9000, 50_000, 2 * 4096] {
                s.write_all(&vec![7u8; piece]).unwrap();
                s.flush().unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 8192];
        let mut blocks = 0;
        while read_block(&mut s, &mut buf).unwrap() {
            assert!(buf.iter().all(|b| *b == 7));
            blocks += 1;
        }
        t.join().unwrap();
        // 68192 bytes = 8 whole blocks of 8192 and a part the end cut short.
        assert_eq!(blocks, 68_192 / 8192);
    }

    #[test]
    fn the_relay_streams_the_same_plan_as_the_streaming_writer() {
        let o = FsOptions {
            max_size: Some(3 * super::super::stream::DEFAULT_BYTES + 1),
            ..Default::default()
        };
        let r = StreamFromTcp::new(&o);
        let w = Plan::new(&o);
        assert_eq!((r.plan.lead, r.plan.bytes), (w.lead, w.bytes));
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
