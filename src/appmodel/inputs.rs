//! The model's inputs per run, in ONE mapping table ([`specs`]): each input's key, unit, and the
//! benchmark id and metric it is read from (the across-run centre: median of per-run medians), or
//! where else it comes from (the machine record, a stated copy-count assumption, the profile, or a
//! published-figures file). An input a run lacks is listed as missing with the reason — never
//! filled in.
//!
//! Units: MB = 10^6 bytes. Memory traffic follows the memory suite's STREAM convention (bytes
//! read + bytes written), so a copy of 1 MB is 2 MB of traffic, and the memory demands below are
//! counted the same way.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::record::RunRecord;

/// Which way is better for a scored figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Higher,
    Lower,
}

/// Frame-pacing variants (benchmark `frame/pacing_<variant>`).
pub const FRAME_VARIANTS: &[&str] = &["60fps_1mp", "25fps_5mp"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Read from a benchmark result of the run.
    Measured,
    /// A figure from a published-figures file (someone else's measurement).
    Published,
    /// A stated assumption (no counter measures it here): flagged in every output.
    Assumed,
    /// A capacity the profile states (no benchmark measures it): flagged.
    Stated,
}

#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// `bench` `metric` × `scale`.
    Metric {
        bench: &'static str,
        metric: &'static str,
        scale: f64,
    },
    /// The machine record's logical CPU count.
    Cpus,
    /// No counter: a copy count, stated and flagged; the profile may override it.
    Assumed { default: f64, why: &'static str },
    /// Only from a published-figures file or the profile's `[capacity]`.
    Given,
}

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub key: &'static str,
    pub unit: &'static str,
    pub better: Dir,
    pub what: &'static str,
    pub source: Source,
}

const fn m(
    key: &'static str,
    unit: &'static str,
    better: Dir,
    what: &'static str,
    bench: &'static str,
    metric: &'static str,
    scale: f64,
) -> Spec {
    Spec {
        key,
        unit,
        better,
        what,
        source: Source::Metric {
            bench,
            metric,
            scale,
        },
    }
}

const fn a(key: &'static str, what: &'static str, default: f64, why: &'static str) -> Spec {
    Spec {
        key,
        unit: "MB/MB",
        better: Dir::Lower,
        what,
        source: Source::Assumed { default, why },
    }
}

const fn g(key: &'static str, unit: &'static str, better: Dir, what: &'static str) -> Spec {
    Spec {
        key,
        unit,
        better,
        what,
        source: Source::Given,
    }
}

use Dir::{Higher as H, Lower as L};

/// µs per KiB → CPU-seconds per MB (10^6 B): × 10^6/1024 KiB per MB × 10^-6 s per µs.
const US_PER_KIB_TO_S_PER_MB: f64 = 1.0 / 1024.0;

/// THE mapping table: `SPECS_BEFORE_SEQ_FILE`, the sequential file inputs (`SEQ_FILE`) and
/// `SPECS_AFTER_SEQ_FILE`, in this order. Built once.
pub fn specs() -> &'static [Spec] {
    static SPECS: std::sync::LazyLock<Vec<Spec>> = std::sync::LazyLock::new(|| {
        let seq_file = SEQ_FILE
            .iter()
            .flat_map(|row| SEQ_FILE_THREADS.map(|n| row.spec(n)));
        SPECS_BEFORE_SEQ_FILE
            .iter()
            .copied()
            .chain(seq_file)
            .chain(SPECS_AFTER_SEQ_FILE.iter().copied())
            .collect()
    });
    &SPECS
}

/// A figure of the sequential file benchmarks (`fs/seq_{write,read}_t{n}`: files written or read
/// by n threads, the OS cache bypassed or not).
#[derive(Debug, Clone, Copy)]
enum SeqFigure {
    /// MB/s.
    Rate,
    /// System CPU per MB.
    Cpu,
    /// The I/O threads' own CPU per MB (thread CPU clocks).
    ThreadCpu,
}

impl SeqFigure {
    /// Its part of the input key (`Demand::disk_key`'s `what`).
    fn key(self) -> &'static str {
        match self {
            SeqFigure::Rate => "mb_s",
            SeqFigure::Cpu => "cpu_s_per_mb",
            SeqFigure::ThreadCpu => "thread_cpu_s_per_mb",
        }
    }

    /// The benchmark's metric (cache bypassed; `_buffered` appended through the OS cache).
    fn metric(self) -> &'static str {
        match self {
            SeqFigure::Rate => "mb_per_s",
            SeqFigure::Cpu => "cpu_s_per_gb",
            SeqFigure::ThreadCpu => "thread_cpu_s_per_gb",
        }
    }

    /// Input unit, which way is better, and the metric's scale to it (CPU-s per GB → per MB).
    fn unit(self) -> (&'static str, Dir, f64) {
        match self {
            SeqFigure::Rate => ("MB/s", H, 1.0),
            SeqFigure::Cpu | SeqFigure::ThreadCpu => ("CPU-s/MB", L, 1e-3),
        }
    }
}

/// One row of [`SEQ_FILE`].
struct SeqFile {
    /// "write" or "read".
    dir: &'static str,
    figure: SeqFigure,
    /// Through the OS cache (the `_buffered` key and metric), else cache bypassed.
    buffered: bool,
    /// The description; `{threads}` becomes "1 thread", "2 threads", …, `{n}` the thread count.
    what: &'static str,
}

impl SeqFile {
    /// This row's input for `n` threads: `disk_{dir}_{figure}[_buffered]_t{n}`, read from
    /// `fs/seq_{dir}_t{n}`.
    fn spec(&self, n: u32) -> Spec {
        // The table is built once per process (`specs`): its few generated texts live as long.
        fn leak(s: String) -> &'static str {
            Box::leak(s.into_boxed_str())
        }
        let buffered = if self.buffered { "_buffered" } else { "" };
        let threads = if n == 1 {
            "1 thread".to_string()
        } else {
            format!("{n} threads")
        };
        let (unit, better, scale) = self.figure.unit();
        m(
            leak(format!(
                "disk_{}_{}{buffered}_t{n}",
                self.dir,
                self.figure.key()
            )),
            unit,
            better,
            leak(
                self.what
                    .replace("{threads}", &threads)
                    .replace("{n}", &n.to_string()),
            ),
            leak(format!("fs/seq_{}_t{n}", self.dir)),
            leak(format!("{}{buffered}", self.figure.metric())),
            scale,
        )
    }
}

/// Thread counts of the sequential file benchmarks that are inputs.
const SEQ_FILE_THREADS: [u32; 3] = [1, 2, 3];

/// The sequential file benchmarks' figures that are inputs, each for every count of
/// [`SEQ_FILE_THREADS`] (in that order, one row after the other).
const SEQ_FILE: &[SeqFile] = &[
    SeqFile {
        dir: "write",
        figure: SeqFigure::Rate,
        buffered: false,
        what: "sequential write bandwidth, {threads}",
    },
    SeqFile {
        dir: "read",
        figure: SeqFigure::Rate,
        buffered: false,
        what: "sequential read bandwidth, {threads}",
    },
    SeqFile {
        dir: "write",
        figure: SeqFigure::Cpu,
        buffered: false,
        what: "system CPU per MB written, {threads}",
    },
    SeqFile {
        dir: "read",
        figure: SeqFigure::Cpu,
        buffered: false,
        what: "system CPU per MB read, {threads}",
    },
    SeqFile {
        dir: "write",
        figure: SeqFigure::Rate,
        buffered: true,
        what: "sequential write bandwidth through the OS cache (fsync and close included), {n} \
               thread(s)",
    },
    SeqFile {
        dir: "write",
        figure: SeqFigure::Cpu,
        buffered: true,
        what: "system CPU per MB written through the OS cache (writeback and fsync included), {n} \
               thread(s)",
    },
    SeqFile {
        dir: "read",
        figure: SeqFigure::Rate,
        buffered: true,
        what: "sequential read bandwidth through the OS cache (its cache dropped first), {n} \
               thread(s)",
    },
    SeqFile {
        dir: "read",
        figure: SeqFigure::Cpu,
        buffered: true,
        what: "system CPU per MB read through the OS cache (from the device into the cache), {n} \
               thread(s)",
    },
    SeqFile {
        dir: "write",
        figure: SeqFigure::ThreadCpu,
        buffered: false,
        what: "the I/O threads' own CPU per MB written, cache bypassed, {n} thread(s) (thread CPU \
               clocks; a serial stage's cost)",
    },
    SeqFile {
        dir: "write",
        figure: SeqFigure::ThreadCpu,
        buffered: true,
        what: "the I/O threads' own CPU per MB written, through the OS cache, {n} thread(s) \
               (thread CPU clocks; a serial stage's cost)",
    },
    SeqFile {
        dir: "read",
        figure: SeqFigure::ThreadCpu,
        buffered: false,
        what: "the I/O threads' own CPU per MB read, cache bypassed, {n} thread(s) (thread CPU \
               clocks; a serial stage's cost)",
    },
    SeqFile {
        dir: "read",
        figure: SeqFigure::ThreadCpu,
        buffered: true,
        what: "the I/O threads' own CPU per MB read, through the OS cache, {n} thread(s) (thread \
               CPU clocks; a serial stage's cost)",
    },
];

/// THE mapping table's entries before the sequential file inputs ([`SEQ_FILE`]).
const SPECS_BEFORE_SEQ_FILE: &[Spec] = &[
    m(
        "mem_bw_mb_s",
        "MB/s",
        H,
        "memory bandwidth, all threads, copy kernel (STREAM convention: bytes read + written)",
        "mem/bandwidth_all",
        "copy",
        1e-6,
    ),
    m(
        "mem_bw_triad_mb_s",
        "MB/s",
        H,
        "memory bandwidth, all threads, triad kernel (a = b + q·c: two arrays read, one written; STREAM convention)",
        "mem/bandwidth_all",
        "triad",
        1e-6,
    ),
    m(
        "mem_bw_1t_mb_s",
        "MB/s",
        H,
        "memory bandwidth of one thread, copy kernel (STREAM convention): the CPU floor of memory traffic, 1/this CPU-s per MB",
        "mem/bandwidth_1t",
        "copy",
        1e-6,
    ),
    m(
        "mem_bw_1t_triad_mb_s",
        "MB/s",
        H,
        "memory bandwidth of one thread, triad kernel (two arrays read, one written; STREAM convention): the CPU floor of such kernels' traffic",
        "mem/bandwidth_1t",
        "triad",
        1e-6,
    ),
    m(
        "syscall_us",
        "µs",
        L,
        "cheap I/O system call (1-byte read of the zero device): the price of each system call \
         a profile counts beyond those the per-MB and per-connection costs hold",
        "cpu/io_syscall",
        "read",
        1e-3,
    ),
    m(
        "ctx_switch_us",
        "µs",
        L,
        "context switch time (two processes, pinned, pipe ping-pong)",
        "proc/ctx_switch_process_pinned",
        "switch",
        1e-3,
    ),
    Spec {
        key: "cpus",
        unit: "CPUs",
        better: H,
        what: "logical CPUs (CPU capacity, CPU-seconds per second)",
        source: Source::Cpus,
    },
    m(
        "net_link_mb_s",
        "MB/s",
        H,
        "TCP stream throughput (the network capacity unless the profile states the link)",
        "net/tcp_stream",
        "throughput_gbit_s",
        125.0,
    ),
    m(
        "net_rx_cpu_s_per_mb_tcp",
        "CPU-s/MB",
        L,
        "system CPU per MB received over TCP (service demand)",
        "net/tcp_stream",
        "rx_service_demand_us_per_kib",
        US_PER_KIB_TO_S_PER_MB,
    ),
    m(
        "net_tx_cpu_s_per_mb",
        "CPU-s/MB",
        L,
        "system CPU per MB sent over TCP (service demand)",
        "net/tcp_stream",
        "tx_service_demand_us_per_kib",
        US_PER_KIB_TO_S_PER_MB,
    ),
    m(
        "net_rx_thread_cpu_s_per_mb_tcp",
        "CPU-s/MB",
        L,
        "the receiving thread's own CPU per MB received over TCP (thread CPU clock; a serial \
         stage's cost: what one thread that recv()s the bytes carries itself)",
        "net/tcp_stream",
        "rx_thread_us_per_kib",
        US_PER_KIB_TO_S_PER_MB,
    ),
    m(
        "net_tx_thread_cpu_s_per_mb",
        "CPU-s/MB",
        L,
        "the sending thread's own CPU per MB sent over TCP (thread CPU clock; a serial stage's \
         cost: what one thread that send()s the bytes carries itself)",
        "net/tcp_stream",
        "tx_thread_us_per_kib",
        US_PER_KIB_TO_S_PER_MB,
    ),
    m(
        "net_rx_cpu_s_per_mb_udp",
        "CPU-s/MB",
        L,
        "system CPU per MB received over UDP (service demand)",
        "net/udp_stream",
        "rx_service_demand_us_per_kib",
        US_PER_KIB_TO_S_PER_MB,
    ),
    m(
        "net_loss_pct",
        "%",
        L,
        "UDP datagram loss",
        "net/udp_stream",
        "loss_pct",
        1.0,
    ),
    m(
        "net_jitter_p99_us",
        "µs",
        L,
        "UDP inter-arrival jitter p99",
        "net/udp_stream",
        "jitter_p99_us",
        1.0,
    ),
    m(
        "net_rtt_p50_us",
        "µs",
        L,
        "TCP 64-byte round trip, median",
        "net/tcp_rtt_64b",
        "rtt_p50_us",
        1.0,
    ),
    m(
        "net_conn_cpu_s",
        "CPU-s",
        L,
        "CPU per TCP connection set up and closed over loopback (this process, both ends in-process)",
        "net/tcp_connect",
        "process_cpu_us_per_connection",
        1e-6,
    ),
];

/// THE mapping table's entries after the sequential file inputs ([`SEQ_FILE`]).
const SPECS_AFTER_SEQ_FILE: &[Spec] = &[
    m(
        "disk_stream_write_mb_s",
        "MB/s",
        H,
        "one long stream written through the OS cache in 128 KiB calls and fsynced at its end, \
         MB/s (its writeback alongside the writes)",
        "fs/stream_write",
        "mb_per_s",
        1.0,
    ),
    m(
        "disk_stream_write_cpu_s_per_mb",
        "CPU-s/MB",
        L,
        "CPU per MB of one long stream written through the OS cache (system-wide: writes, \
         writeback, the final fsync)",
        "fs/stream_write",
        "cpu_s_per_gb",
        1e-3,
    ),
    m(
        "disk_stream_write_thread_cpu_s_per_mb",
        "CPU-s/MB",
        L,
        "the writing thread's own CPU per MB of a long stream through the OS cache, its write \
         calls once the OS's writeback runs alongside (thread CPU clock; a serial stage's cost)",
        "fs/stream_write",
        "thread_cpu_s_per_gb",
        1e-3,
    ),
    m(
        "disk_relay_mb_s",
        "MB/s",
        H,
        "a TCP stream received over loopback and written to one file by the receiving thread \
         (128 KiB blocks, through the OS cache, fsynced at its end), MB/s",
        "fs/stream_from_tcp",
        "mb_per_s",
        1.0,
    ),
    m(
        "disk_relay_cpu_s_per_mb",
        "CPU-s/MB",
        L,
        "CPU per MB received over TCP and written to a file by one thread (system-wide: the \
         sender, the receive, the write, the writeback and the final fsync)",
        "fs/stream_from_tcp",
        "cpu_s_per_gb",
        1e-3,
    ),
    m(
        "disk_relay_thread_cpu_s_per_mb",
        "CPU-s/MB",
        L,
        "the relaying thread's own CPU per MB, its receive and write calls together once the \
         OS's writeback runs alongside (thread CPU clock; a serial stage's cost)",
        "fs/stream_from_tcp",
        "thread_cpu_s_per_gb",
        1e-3,
    ),
    m(
        "frame_copy_cpu_s_per_mb_60fps_1mp",
        "CPU-s/MB",
        L,
        "CPU time to copy one MB of frame (60 fps, 1 MP)",
        "frame/pacing_60fps_1mp",
        "copy_time_per_mb",
        1e-9,
    ),
    m(
        "frame_p99_dev_ms_60fps_1mp",
        "ms",
        L,
        "frame-period deviation p99 (60 fps, 1 MP)",
        "frame/pacing_60fps_1mp",
        "period_dev_p99",
        1e-6,
    ),
    m(
        "frame_late_pct_60fps_1mp",
        "%",
        L,
        "frames late beyond half a period (60 fps, 1 MP)",
        "frame/pacing_60fps_1mp",
        "late_pct",
        1.0,
    ),
    m(
        "frame_copy_cpu_s_per_mb_25fps_5mp",
        "CPU-s/MB",
        L,
        "CPU time to copy one MB of frame (25 fps, 5 MP)",
        "frame/pacing_25fps_5mp",
        "copy_time_per_mb",
        1e-9,
    ),
    m(
        "frame_p99_dev_ms_25fps_5mp",
        "ms",
        L,
        "frame-period deviation p99 (25 fps, 5 MP)",
        "frame/pacing_25fps_5mp",
        "period_dev_p99",
        1e-6,
    ),
    m(
        "frame_late_pct_25fps_5mp",
        "%",
        L,
        "frames late beyond half a period (25 fps, 5 MP)",
        "frame/pacing_25fps_5mp",
        "late_pct",
        1.0,
    ),
    a(
        "net_rx_mem_per_mb",
        "memory traffic per MB received",
        3.0,
        "ASSUMED 3 copies: NIC DMA write + kernel-to-user copy (read + write); no memory-traffic counter read",
    ),
    a(
        "net_tx_mem_per_mb",
        "memory traffic per MB sent",
        3.0,
        "ASSUMED 3 copies: user-to-kernel copy (read + write) + NIC DMA read; no memory-traffic counter read",
    ),
    a(
        "disk_write_mem_per_mb",
        "memory traffic per MB written",
        3.0,
        "ASSUMED 3 copies: copy into the page cache (read + write) + device DMA read; no memory-traffic counter read",
    ),
    a(
        "disk_read_mem_per_mb",
        "memory traffic per MB read",
        3.0,
        "ASSUMED 3 copies: device DMA write + page-cache-to-user copy (read + write); no memory-traffic counter read",
    ),
    a(
        "frame_mem_per_mb",
        "memory traffic per MB of frame copied",
        2.0,
        "ASSUMED 2: the frame copy's read + write (presenting to a display not included); no memory-traffic counter read",
    ),
    g(
        "display_link_mb_s",
        "MB/s",
        H,
        "display upload link capacity (not measured: presenting is out of scope)",
    ),
    g(
        "os_cpu_pct_per_unit",
        "%",
        L,
        "OS CPU load per unit/s, % of all CPUs (published per-unit figure)",
    ),
    g(
        "os_mem_mb_per_unit",
        "MB",
        L,
        "OS memory traffic per unit (published per-unit figure)",
    ),
    g(
        "disk_pct_per_unit",
        "%",
        L,
        "disk utilisation per unit/s, % (published per-unit figure)",
    ),
    g(
        "display_pct_per_unit",
        "%",
        L,
        "display link utilisation per unit/s, % (published per-unit figure)",
    ),
];

pub fn spec(key: &str) -> Option<&'static Spec> {
    specs().iter().find(|s| s.key == key)
}

/// The label [`measure_command`]'s run is stored under.
pub const MEASURE_LABEL: &str = "model-inputs";

/// The `osgauge micro` command that measures, in one run, every benchmark input among `read`
/// (the keys a prediction read), when some of them are absent from `inp` — so that a prediction
/// marked as an upper bound (or with a QoS limit not measured) can be made complete. `micro`'s
/// default (standard) preset extends a CPU-cost window below the counters' resolution over more
/// of the same work, which the quick preset of `osgauge run` does not do for files. None when
/// nothing a benchmark measures is absent (a published column, a stated capacity).
/// None too for a publication's figures (every value `Origin::Published`): a benchmark run here
/// cannot complete another machine's published measurements, so the missing inputs are only
/// named as not published.
pub fn measure_command(read: &BTreeSet<String>, inp: &Inputs) -> Option<String> {
    let published =
        !inp.values.is_empty() && inp.values.values().all(|v| v.origin == Origin::Published);
    if published {
        return None;
    }
    let bench_of = |s: &Spec| match s.source {
        Source::Metric { bench, .. } => Some(bench),
        _ => None,
    };
    let read_specs = || specs().iter().filter(|s| read.contains(s.key));
    if !read_specs().any(|s| !inp.values.contains_key(s.key) && bench_of(s).is_some()) {
        return None;
    }
    let mut benches: Vec<&str> = Vec::new();
    for b in read_specs().filter_map(bench_of) {
        if !benches.contains(&b) {
            benches.push(b);
        }
    }
    Some(format!(
        "osgauge micro {} --label {MEASURE_LABEL}",
        benches.join(" ")
    ))
}

/// The `osgauge model` command to run after [`measure_command`]'s.
pub fn model_command(profile_file: &str) -> String {
    format!("osgauge model {profile_file} {MEASURE_LABEL}")
}

/// Keys a profile may state in `[capacity]`.
pub fn capacity_keys() -> Vec<&'static str> {
    vec!["display_link_mb_s", "net_link_mb_s"]
}
pub fn is_capacity_key(k: &str) -> bool {
    capacity_keys().contains(&k)
}
pub fn assumption_keys() -> Vec<&'static str> {
    specs()
        .iter()
        .filter(|s| matches!(s.source, Source::Assumed { .. }))
        .map(|s| s.key)
        .collect()
}
pub fn is_assumption_key(k: &str) -> bool {
    assumption_keys().contains(&k)
}
/// Keys a weight may score.
pub fn scorable_keys() -> Vec<&'static str> {
    specs()
        .iter()
        .filter(|s| !matches!(s.source, Source::Assumed { .. }))
        .map(|s| s.key)
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Value {
    pub value: f64,
    pub origin: Origin,
    /// Where it came from: "mem/bandwidth_all copy", "Table 5.8", the assumption stated, …
    pub source: String,
}

/// One run's (or one published column's) inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Inputs {
    pub name: String,
    pub os: String,
    pub values: BTreeMap<String, Value>,
    /// Input key → why it is missing.
    pub missing: BTreeMap<String, String>,
    /// Input key → 95 % CI of a measured value (the run's median over runs), where the record
    /// has one: lets the score table tell a real difference between runs from run-to-run noise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ci95: BTreeMap<String, [f64; 2]>,
}

impl Inputs {
    /// No values yet.
    pub fn new(name: impl Into<String>, os: impl Into<String>) -> Inputs {
        Inputs {
            name: name.into(),
            os: os.into(),
            values: BTreeMap::new(),
            missing: BTreeMap::new(),
            ci95: BTreeMap::new(),
        }
    }

    /// The 95 % CI of `key`'s value, where known.
    pub fn ci(&self, key: &str) -> Option<[f64; 2]> {
        self.ci95.get(key).copied()
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        self.values.get(key).map(|v| v.value)
    }

    /// Record `key` as missing (keeps the first reason).
    pub fn miss(&mut self, key: &str, why: impl Into<String>) {
        self.missing
            .entry(key.to_string())
            .or_insert_with(|| why.into());
    }
}

/// A run record's inputs, read through [`specs`].
pub fn from_record(name: &str, r: &RunRecord) -> Inputs {
    let mut out = Inputs::new(name, r.machine.os.clone());
    for s in specs() {
        match s.source {
            Source::Metric {
                bench,
                metric,
                scale,
            } => match metric_value(r, bench, metric) {
                Ok((v, ci)) => {
                    if let Some([lo, hi]) = ci {
                        let (a, b) = (lo * scale, hi * scale);
                        out.ci95.insert(s.key.to_string(), [a.min(b), a.max(b)]);
                    }
                    out.values.insert(
                        s.key.to_string(),
                        Value {
                            value: v * scale,
                            origin: Origin::Measured,
                            source: format!("{bench} {metric}"),
                        },
                    );
                }
                Err(why) => out.miss(s.key, why),
            },
            Source::Cpus => match r.machine.cpu.logical_cpus {
                Some(n) if n > 0 => {
                    out.values.insert(
                        s.key.to_string(),
                        Value {
                            value: n as f64,
                            origin: Origin::Measured,
                            source: "machine record: logical CPUs".into(),
                        },
                    );
                }
                _ => out.miss(s.key, "the machine record has no logical CPU count"),
            },
            Source::Assumed { .. } | Source::Given => {}
        }
    }
    out
}

/// A metric's centre over runs and its 95 % CI (None for a single run, where it is a point).
fn metric_value(
    r: &RunRecord,
    bench: &str,
    metric: &str,
) -> Result<(f64, Option<[f64; 2]>), String> {
    let Some(b) = r.benchmarks.iter().find(|b| b.id == bench) else {
        return Err(format!("{bench} is not in this run"));
    };
    if let Some(e) = &b.error
        && b.metrics.iter().all(|m| m.summary.is_none())
    {
        return Err(format!("{bench}: {e}"));
    }
    let Some(m) = b.metrics.iter().find(|m| m.name == metric) else {
        return Err(format!("{bench} has no metric {metric}"));
    };
    match &m.summary {
        Some(s) if s.center.is_finite() => Ok((
            s.center,
            (s.runs > 1 && s.ci95.iter().all(|x| x.is_finite())).then_some(s.ci95),
        )),
        _ => Err(format!(
            "{bench} {metric}: {}",
            m.not_measured.as_deref().unwrap_or("not measured")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated sequential file inputs are the ones written out by hand before (every
    /// field), and the table's keys keep their order.
    #[test]
    fn the_generated_file_inputs_are_the_hand_written_ones_in_their_order() {
        let before: Vec<&str> = include_str!("../../tests/fixtures/model-inputs-seq-file.txt")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect();
        let now: Vec<String> = specs()
            .iter()
            .filter_map(|s| match s.source {
                Source::Metric {
                    bench,
                    metric,
                    scale,
                } if bench.starts_with("fs/seq_") => Some(format!(
                    "{} | {} | {:?} | {} | {bench} | {metric} | {scale:?}",
                    s.key, s.unit, s.better, s.what
                )),
                _ => None,
            })
            .collect();
        assert_eq!(now, before);
        const KEYS_BEFORE: &str = "
mem_bw_mb_s mem_bw_triad_mb_s mem_bw_1t_mb_s mem_bw_1t_triad_mb_s syscall_us ctx_switch_us
cpus net_link_mb_s net_rx_cpu_s_per_mb_tcp net_tx_cpu_s_per_mb
net_rx_thread_cpu_s_per_mb_tcp net_tx_thread_cpu_s_per_mb net_rx_cpu_s_per_mb_udp
net_loss_pct net_jitter_p99_us net_rtt_p50_us net_conn_cpu_s disk_write_mb_s_t1
disk_write_mb_s_t2 disk_write_mb_s_t3 disk_read_mb_s_t1 disk_read_mb_s_t2 disk_read_mb_s_t3
disk_write_cpu_s_per_mb_t1 disk_write_cpu_s_per_mb_t2 disk_write_cpu_s_per_mb_t3
disk_read_cpu_s_per_mb_t1 disk_read_cpu_s_per_mb_t2 disk_read_cpu_s_per_mb_t3
disk_write_mb_s_buffered_t1 disk_write_mb_s_buffered_t2 disk_write_mb_s_buffered_t3
disk_write_cpu_s_per_mb_buffered_t1 disk_write_cpu_s_per_mb_buffered_t2
disk_write_cpu_s_per_mb_buffered_t3 disk_read_mb_s_buffered_t1 disk_read_mb_s_buffered_t2
disk_read_mb_s_buffered_t3 disk_read_cpu_s_per_mb_buffered_t1
disk_read_cpu_s_per_mb_buffered_t2 disk_read_cpu_s_per_mb_buffered_t3
disk_write_thread_cpu_s_per_mb_t1 disk_write_thread_cpu_s_per_mb_t2
disk_write_thread_cpu_s_per_mb_t3 disk_write_thread_cpu_s_per_mb_buffered_t1
disk_write_thread_cpu_s_per_mb_buffered_t2 disk_write_thread_cpu_s_per_mb_buffered_t3
disk_read_thread_cpu_s_per_mb_t1 disk_read_thread_cpu_s_per_mb_t2
disk_read_thread_cpu_s_per_mb_t3 disk_read_thread_cpu_s_per_mb_buffered_t1
disk_read_thread_cpu_s_per_mb_buffered_t2 disk_read_thread_cpu_s_per_mb_buffered_t3
disk_stream_write_mb_s disk_stream_write_cpu_s_per_mb disk_stream_write_thread_cpu_s_per_mb
disk_relay_mb_s disk_relay_cpu_s_per_mb disk_relay_thread_cpu_s_per_mb
frame_copy_cpu_s_per_mb_60fps_1mp frame_p99_dev_ms_60fps_1mp frame_late_pct_60fps_1mp
frame_copy_cpu_s_per_mb_25fps_5mp frame_p99_dev_ms_25fps_5mp frame_late_pct_25fps_5mp
net_rx_mem_per_mb net_tx_mem_per_mb disk_write_mem_per_mb disk_read_mem_per_mb
frame_mem_per_mb display_link_mb_s os_cpu_pct_per_unit os_mem_mb_per_unit disk_pct_per_unit
display_pct_per_unit
";
        let keys: Vec<&str> = specs().iter().map(|s| s.key).collect();
        let before: Vec<&str> = KEYS_BEFORE.split_whitespace().collect();
        assert_eq!(keys, before);
    }

    #[test]
    fn table_keys_unique_and_metric_sources_named() {
        let mut seen = std::collections::HashSet::new();
        for s in specs() {
            assert!(seen.insert(s.key), "duplicate {}", s.key);
            if let Source::Metric { bench, metric, .. } = s.source {
                assert!(bench.contains('/') && !metric.is_empty());
            }
        }
        assert!((US_PER_KIB_TO_S_PER_MB * 1024.0 - 1.0).abs() < 1e-12);
        // 1 µs per KiB is 976.5625 µs per 10^6 bytes.
        let s = spec("net_rx_cpu_s_per_mb_tcp").unwrap();
        let Source::Metric { scale, .. } = s.source else {
            panic!()
        };
        assert!((scale * 1e6 - 976.5625).abs() < 1e-9);
    }

    #[test]
    fn every_measured_input_names_a_benchmark_metric_that_exists() {
        let suites = crate::bench::registry::suites();
        let metric = |id: &str, name: &str| {
            suites
                .iter()
                .flat_map(|s| &s.benchmarks)
                .any(|b| b.info().id == id && b.info().metrics.iter().any(|m| m.name == name))
        };
        for s in specs() {
            if let Source::Metric {
                bench, metric: m, ..
            } = s.source
            {
                assert!(
                    metric(bench, m),
                    "input {} reads {bench} {m}, which no benchmark reports",
                    s.key
                );
            }
        }
    }
}
