//! The real applications `osgauge model check` drives — programs osgauge did not write, started
//! fresh for every step in the check's temp folder and reaped at its end (so their CPU time is
//! this process's children's): `iperf3 -s -F FILE` receiving a paced `iperf3 -c` stream over
//! loopback (network → disk), `nginx` serving one fixed-size static file to `ab` (a static web
//! server), and `stress-ng --stream` (a memory-bound program). Each one's unit of work and the
//! fixed sizes the shipped profiles state their per-unit demands from are constants here.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The file nginx serves: 64 KiB.
pub const NGINX_FILE_BYTES: usize = 65536;
/// Concurrent connections of each `ab` at flat out.
pub const AB_FLAT_OUT_CONCURRENCY: u32 = 4;
/// Each stress-ng stream worker's arrays: 128 MiB each (4 × a 32 MiB last-level cache; the size is
/// fixed so the per-unit traffic is the profile's, on any machine). One unit = one pass of the
/// four kernels (copy, scale, add, triad) = 10 array sizes of traffic (STREAM convention).
pub const STREAM_ARRAY_BYTES: u64 = 128 << 20;

/// A real application the check can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Iperf3ToDisk,
    NginxStatic,
    StressStream,
}

/// How hard one step drives the application.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Offer {
    /// Paced at this many units per second.
    Rate(f64),
    /// This many concurrent clients / workers (the application's own pace).
    Concurrency(u32),
    /// As fast as it goes.
    FlatOut,
}

impl Offer {
    pub fn text(&self, unit: &str) -> String {
        match self {
            Offer::Rate(r) => format!("{r:.1} {unit}/s"),
            Offer::Concurrency(c) => format!("{c} concurrent"),
            Offer::FlatOut => "flat out".into(),
        }
    }
}

/// What one step of the application did.
#[derive(Debug, Clone)]
pub struct Done {
    /// Units per second (over the application's own timing where it reports one).
    pub rate: f64,
    /// Units of work finished in the step (None: the application reports only its rate).
    pub units: Option<f64>,
    /// What the application reported beyond the units (failures, its version of events).
    pub note: Option<String>,
    /// The CPU-seconds of the application's busiest thread over the step (the one thread of a
    /// serial stage), or why not measured.
    pub thread_cpu_s: Result<f64, String>,
    /// A file the step left for the check to delete once the step's CPU is read: deleting it is
    /// the check's clean-up, not the application's work (a 4 GB cached file costs ~0.05 ms of
    /// CPU per MB to delete on the reference VM, ~6 % of iperf3's CPU per MB).
    pub leftover: Option<PathBuf>,
}

/// Why a step's busiest thread is not measured for an application without a one-thread stage.
const NO_THREAD: &str = "not measured: this application states no one-thread stage";

impl Kind {
    pub const ALL: &[Kind] = &[Kind::Iperf3ToDisk, Kind::NginxStatic, Kind::StressStream];

    pub fn name(&self) -> &'static str {
        match self {
            Kind::Iperf3ToDisk => "iperf3-to-disk",
            Kind::NginxStatic => "nginx-static",
            Kind::StressStream => "stress-ng-stream",
        }
    }

    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == s)
    }

    /// The programs it runs.
    pub fn programs(&self) -> &'static [&'static str] {
        match self {
            Kind::Iperf3ToDisk => &["iperf3"],
            Kind::NginxStatic => &["nginx", "ab"],
            Kind::StressStream => &["stress-ng"],
        }
    }

    /// The Debian packages holding them.
    pub fn packages(&self) -> &'static str {
        match self {
            Kind::Iperf3ToDisk => "iperf3",
            Kind::NginxStatic => "nginx apache2-utils",
            Kind::StressStream => "stress-ng",
        }
    }

    /// Why it cannot run here (a program not found on PATH), or Ok with the programs' paths.
    pub fn available(&self) -> Result<Vec<PathBuf>, String> {
        self.programs()
            .iter()
            .map(|p| {
                find_program(p).ok_or_else(|| {
                    format!(
                        "{p} is not installed (not on PATH; Debian package(s): {})",
                        self.packages()
                    )
                })
            })
            .collect()
    }

    /// The steps: rising offers up to the predicted maximum `x_pred`, then flat out `flat` times.
    pub fn offers(&self, x_pred: f64, cpus: usize, flat: usize) -> Vec<Offer> {
        let mut v: Vec<Offer> = match self {
            Kind::Iperf3ToDisk => [0.25, 0.5, 0.75, 1.0]
                .iter()
                .map(|f| Offer::Rate(x_pred * f))
                .collect(),
            // ab cannot pace a rate: concurrency steps instead.
            Kind::NginxStatic => [1, 2].into_iter().map(Offer::Concurrency).collect(),
            // One worker is one core's pace (the CPU floor's law); flat out is every core.
            Kind::StressStream => vec![Offer::Concurrency(1)],
        };
        let _ = cpus;
        v.extend(std::iter::repeat_n(Offer::FlatOut, flat));
        v
    }

    /// Seconds per step: as asked, else 3 (stress-ng: 8 — it reports its loop's memory rate
    /// only when the loop, after the arrays' set-up, ran 4.5 s).
    pub fn step_s(&self, asked: Option<f64>) -> f64 {
        match (self, asked) {
            (_, Some(s)) => s,
            (Kind::StressStream, None) => 8.0,
            (_, None) => 3.0,
        }
    }

    /// Run one step in `dir` for about `secs`.
    pub fn run(&self, offer: Offer, secs: f64, dir: &Path, cpus: usize) -> io::Result<Done> {
        match self {
            Kind::Iperf3ToDisk => iperf3_step(offer, secs, dir),
            Kind::NginxStatic => nginx_step(offer, secs, dir, cpus),
            Kind::StressStream => stream_step(offer, secs, cpus),
        }
    }
}

/// `name` on PATH.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn other(msg: impl Into<String>) -> io::Error {
    io::Error::other(msg.into())
}

/// A loopback port free a moment ago.
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

fn wait_output(mut c: Child, limit: Duration, what: &str) -> io::Result<Output> {
    let start = Instant::now();
    loop {
        if c.try_wait()?.is_some() {
            return c.wait_with_output();
        }
        if start.elapsed() > limit {
            let _ = c.kill();
            let _ = c.wait();
            return Err(other(format!("{what} did not finish within {limit:?}")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server child stopped (SIGTERM, then SIGKILL after 5 s) and reaped when dropped.
struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = crate::platform::counters::terminate(c.id());
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// iperf3: one server per step (`-1`: one client, then exit) writing what it receives to a
/// file; the client sends for `secs` (paced with `-b` at the offered MB/s, or unpaced), then
/// the file is fsynced (and left for the check to delete outside the step's CPU window). Units:
/// MB (10^6 B) in the file; seconds: the client's run + the fsync.
fn iperf3_step(offer: Offer, secs: f64, dir: &Path) -> io::Result<Done> {
    let port = free_port()?.to_string();
    let file = dir.join("iperf3-received.dat");
    let server = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port, "-F"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let sampler = ThreadSampler::start(server.id());
    let mut server = Server(Some(server));
    let t = format!("{}", secs.round().max(1.0) as u64);
    let mut args: Vec<String> = ["-c", "127.0.0.1", "-p", &port, "-t", &t]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if let Offer::Rate(mb_s) = offer {
        args.push("-b".into());
        args.push(format!("{}", (mb_s * 8e6).round().max(1.0) as u64));
    }
    // The server may not listen yet: retry a refused client (it fails at once).
    let mut tries = 0;
    let (out, wall) = loop {
        let start = Instant::now();
        let c = Command::new("iperf3")
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let out = wait_output(c, Duration::from_secs_f64(secs + 30.0), "iperf3 -c")?;
        let wall = start.elapsed().as_secs_f64();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            break (text, wall);
        }
        tries += 1;
        if tries > 50 || !text.contains("refused") {
            return Err(other(format!("iperf3 -c failed: {}", text.trim())));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The server exits after its one client; wait for it to finish writing.
    if let Some(mut c) = server.0.take() {
        let start = Instant::now();
        while c.try_wait()?.is_none() {
            if start.elapsed() > Duration::from_secs(10) {
                server.0 = Some(c);
                return Err(other("iperf3 -s did not exit after its client"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    // The received bytes made durable inside the step (fsync, as a recorder closing its file
    // does and as fs/seq_write's buffered figures include): a sustained rate is what reaches the
    // disk, and the writeback's CPU is charged to the step that caused it, not to a later one.
    let sync_start = Instant::now();
    let bytes = match std::fs::File::open(&file) {
        Ok(f) => {
            f.sync_all()?;
            f.metadata()?.len()
        }
        Err(_) => 0,
    };
    let sync_s = sync_start.elapsed().as_secs_f64();
    let seconds = iperf3_seconds(&out).unwrap_or(wall);
    Ok(Done {
        rate: bytes as f64 / 1e6 / (seconds + sync_s),
        units: Some(bytes as f64 / 1e6),
        note: Some(format!("fsync after the stream: {sync_s:.2} s")),
        thread_cpu_s: sampler.finish(),
        leftover: Some(file),
    })
}

/// The busiest thread of a process over its life: its threads' CPU read every 20 ms on a helper
/// thread (`crate::platform::process::threads_cpu_ns`) from its start until it is gone, so the
/// last reading is at most 20 ms before its end.
struct ThreadSampler(std::thread::JoinHandle<Result<u64, String>>);

impl ThreadSampler {
    fn start(pid: u32) -> ThreadSampler {
        use crate::platform::process::threads_cpu_ns;
        ThreadSampler(std::thread::spawn(move || {
            let first = threads_cpu_ns(pid).map_err(|e| format!("not measured: {e}"))?;
            let mut last = first.clone();
            // Gone (reaped): the listing fails or is empty.
            while let Ok(v) = threads_cpu_ns(pid) {
                if v.is_empty() {
                    break;
                }
                last = v;
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(busiest_ns(&first, &last))
        }))
    }

    /// CPU-seconds of the busiest thread (the process must be gone, or this waits for it).
    fn finish(self) -> Result<f64, String> {
        let ns = self
            .0
            .join()
            .map_err(|_| "not measured: the sampling thread panicked".to_string())??;
        Ok(ns as f64 / 1e9)
    }
}

/// The most CPU any one thread used between two readings (a thread not in `first` started
/// after it: all its CPU counts).
fn busiest_ns(first: &[(u32, u64)], last: &[(u32, u64)]) -> u64 {
    last.iter()
        .map(|(tid, ns)| {
            let before = first.iter().find(|(t, _)| t == tid).map_or(0, |(_, b)| *b);
            ns.saturating_sub(before)
        })
        .max()
        .unwrap_or(0)
}

/// The client's interval total from its summary line "0.00-3.00 sec … receiver".
fn iperf3_seconds(text: &str) -> Option<f64> {
    let l = text.lines().find(|l| l.contains("receiver"))?;
    let range = l.split_whitespace().find(|w| w.contains('-'))?;
    let (a, b) = range.split_once('-')?;
    Some(b.parse::<f64>().ok()? - a.parse::<f64>().ok()?)
}

/// nginx: a fresh master (in the foreground, its own prefix, config and port in `dir`) per
/// step, serving one 64 KiB file with sendfile and no access log, to `ab` clients without
/// keep-alive (one connection per request). Concurrency steps use one `ab`; flat out, one per
/// CPU. Units: requests completed (ab's count); seconds: the step's wall time.
fn nginx_step(offer: Offer, secs: f64, dir: &Path, cpus: usize) -> io::Result<Done> {
    let port = free_port()?;
    let www = dir.join("www");
    std::fs::create_dir_all(&www)?;
    std::fs::create_dir_all(dir.join("logs"))?;
    let file = www.join("f64k.bin");
    if !file.exists() {
        std::fs::write(&file, vec![0x5au8; NGINX_FILE_BYTES])?;
    }
    let user = if crate::platform::counters::is_superuser() {
        "user root;\n"
    } else {
        ""
    };
    let conf = format!(
        "{user}daemon off;\nworker_processes auto;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_timeout 0;\n\
         client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;\n\
         uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
         server {{ listen 127.0.0.1:{port}; root {w}; }}\n}}\n",
        d = dir.display(),
        w = www.display()
    );
    std::fs::create_dir_all(dir.join("tmp"))?;
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf)?;
    let child = Command::new("nginx")
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&conf_path)
        .arg("-e")
        .arg(dir.join("logs/error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut server = Server(Some(child));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let start = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Some(c) = server.0.as_mut()
            && let Some(st) = c.try_wait()?
        {
            let log = std::fs::read_to_string(dir.join("logs/error.log")).unwrap_or_default();
            return Err(other(format!("nginx exited ({st}): {}", log.trim())));
        }
        if start.elapsed() > Duration::from_secs(5) {
            return Err(other("nginx did not listen within 5 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (clients, conc) = match offer {
        Offer::Concurrency(c) => (1, c),
        Offer::Rate(_) | Offer::FlatOut => (cpus.max(1), AB_FLAT_OUT_CONCURRENCY),
    };
    let url = format!("http://127.0.0.1:{port}/f64k.bin");
    let t = format!("{}", secs.round().max(1.0) as u64);
    let conc = conc.to_string();
    let begin = Instant::now();
    let kids: Vec<Child> = (0..clients)
        .map(|_| {
            Command::new("ab")
                .args(["-q", "-t", &t, "-n", "100000000", "-c", &conc, &url])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        })
        .collect::<io::Result<_>>()?;
    let mut units = 0.0;
    let mut failed = 0.0;
    for k in kids {
        let out = wait_output(k, Duration::from_secs_f64(secs + 30.0), "ab")?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        };
        let Some(done) = field("Complete requests:") else {
            return Err(other(format!(
                "ab printed no request count: {}{}",
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        };
        units += done;
        failed +=
            field("Failed requests:").unwrap_or(0.0) + field("Non-2xx responses:").unwrap_or(0.0);
    }
    let seconds = begin.elapsed().as_secs_f64();
    drop(server);
    Ok(Done {
        rate: (units - failed) / seconds,
        units: Some(units - failed),
        note: (failed > 0.0).then(|| format!("{failed} failed request(s) not counted")),
        thread_cpu_s: Err(NO_THREAD.into()),
        leftover: None,
    })
}

/// stress-ng --stream: `n` workers (one for a concurrency step, one per CPU flat out), each on
/// arrays of [`STREAM_ARRAY_BYTES`]. Units: passes, from each worker's reported loop memory rate
/// (MiB/s over its timed loop, 10 arrays per pass) — the loop alone, not the arrays' set-up.
fn stream_step(offer: Offer, secs: f64, cpus: usize) -> io::Result<Done> {
    let n = match offer {
        Offer::Concurrency(c) => c as u64,
        Offer::Rate(_) | Offer::FlatOut => cpus.max(1) as u64,
    };
    // stress-ng shares --stream-l3-size among the workers and makes each array 4 × its share.
    let l3 = n * STREAM_ARRAY_BYTES / 4;
    let t = format!("{}s", secs.round().max(1.0) as u64);
    let c = Command::new("stress-ng")
        .args([
            "--stream",
            &n.to_string(),
            "--stream-l3-size",
            &format!("{l3}b"),
            "-t",
            &t,
            "--metrics-brief",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let out = wait_output(c, Duration::from_secs_f64(secs + 60.0), "stress-ng")?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let rates = stream_rates(&text);
    if rates.is_empty() {
        // A loop under 4.5 s has no loop rate: passes over the whole run, set-up included.
        let Some((ops, real)) = stream_ops(&text) else {
            return Err(other(format!(
                "stress-ng reported neither a memory rate nor its passes: {}",
                text.trim()
            )));
        };
        return Ok(Done {
            rate: ops / real,
            units: None,
            note: Some(format!(
                "{n} worker(s), {ops} passes in {real} s of stress-ng's run, the arrays' set-up included (a loop under 4.5 s reports no loop rate): a LOW rate"
            )),
            thread_cpu_s: Err(NO_THREAD.into()),
            leftover: None,
        });
    }
    let mib_s: f64 = rates.iter().sum();
    // Passes per second: MiB/s × 2^20 B / (10 × array bytes).
    let per_s = mib_s * 1_048_576.0 / (10.0 * STREAM_ARRAY_BYTES as f64);
    Ok(Done {
        rate: per_s,
        units: None,
        note: Some(format!(
            "{n} worker(s), loop memory rates {} MiB/s (stress-ng's own timing of its loop)",
            rates
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(" + ")
        )),
        thread_cpu_s: Err(NO_THREAD.into()),
        leftover: None,
    })
}

/// The metrics line "stream  OPS  REAL …": bogo ops (passes) and real seconds.
fn stream_ops(text: &str) -> Option<(f64, f64)> {
    text.lines().find_map(|l| {
        let (_, rest) = l.split_once("] stream ")?;
        let mut w = rest.split_whitespace();
        let ops: f64 = w.next()?.parse().ok()?;
        let real: f64 = w.next()?.parse().ok()?;
        (real > 0.0).then_some((ops, real))
    })
}

/// Each worker's "memory rate:" line, in MiB/s (stress-ng's MB is 2^20 B): the sum of the
/// figures followed by "MB" — "R MB read/sec, W MB write/sec" (0.15) or "X MB/sec" (later).
fn stream_rates(text: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| !l.contains("metrc"))
        .filter_map(|l| {
            let (_, rest) = l.split_once("memory rate:")?;
            let toks: Vec<&str> = rest.split_whitespace().collect();
            let sum: f64 = toks
                .windows(2)
                .filter(|w| w[1].starts_with("MB"))
                .filter_map(|w| w[0].trim_end_matches(',').parse::<f64>().ok())
                .sum();
            (sum > 0.0).then_some(sum)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_thread_is_the_largest_difference_and_a_new_thread_counts_whole() {
        let first = [(10, 1_000), (11, 5_000)];
        assert_eq!(busiest_ns(&first, &[(10, 4_000), (11, 6_000)]), 3_000);
        // Thread 12 started after the first reading: all 2 500 ns are its step's.
        assert_eq!(
            busiest_ns(&first, &[(10, 1_500), (11, 5_100), (12, 2_500)]),
            2_500
        );
        assert_eq!(busiest_ns(&first, &[]), 0);
    }

    #[test]
    fn iperf3_summary_seconds() {
        let t = "[  5]   0.00-3.00   sec  1.10 GBytes  3.15 Gbits/sec  0  sender\n\
                 [  5]   0.00-3.04   sec  1.10 GBytes  3.11 Gbits/sec       receiver\n";
        assert!((iperf3_seconds(t).unwrap() - 3.04).abs() < 1e-9);
        assert_eq!(iperf3_seconds("nothing"), None);
    }

    #[test]
    fn stress_ng_memory_rates_are_read_per_worker() {
        let t = "stress-ng: info:  [1] stream: memory rate: 5123.40 MB/sec, 2049.36 Mflop/sec (instance 0)\n\
                 stress-ng: info:  [2] stream: memory rate: 4876.60 MB/sec, 1950.64 Mflop/sec (instance 1)\n";
        assert_eq!(stream_rates(t), vec![5123.4, 4876.6]);
        // 0.15: read and write apart; the metrics summary lines are not workers.
        let t = "stress-ng: info:  [1864] stream: memory rate: 5064.60 MB read/sec, 3376.40 MB write/sec, 442.55 Mflop/sec (instance 0)\n\
                 stress-ng: metrc: [1857] stream              5064.60 memory read rate (MB per sec) (geometic mean of 1 instances)\n";
        let r = stream_rates(t);
        assert!(r.len() == 1 && (r[0] - 8441.0).abs() < 1e-9, "{r:?}");
        let m = "stress-ng: metrc: [883] stream               84      2.03      1.23      0.06        41.33          64.94\n";
        assert_eq!(stream_ops(m), Some((84.0, 2.03)));
    }

    #[test]
    fn offers_rise_then_go_flat_out() {
        let o = Kind::Iperf3ToDisk.offers(100.0, 2, 3);
        assert_eq!(o.len(), 7);
        assert_eq!(o[0], Offer::Rate(25.0));
        assert!(o[4..].iter().all(|x| *x == Offer::FlatOut));
        assert_eq!(Kind::from_name("nginx-static"), Some(Kind::NginxStatic));
        assert_eq!(Kind::from_name("nope"), None);
    }
}
