//! Background loads. Each load runs in a child process (`osgauge __load <json spec>`), never in
//! the measured process. Protocol on the child's stdin/stdout, one JSON line each way:
//! the child prints `{"ready":…}` once its load is running (files prepared), then works until a
//! line `stop` arrives or stdin reaches EOF (the parent died or dropped its guard); it then stops
//! every thread, deletes its files, prints its report (CPU time each thread really used, the
//! scheduling it really had) and exits. The child ignores Ctrl-C: the parent decides when to stop.
//! The parent's [`LoadProcess`] guard kills and reaps the child and deletes its files on drop.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::task::{Task, run_task};
use super::work::{Work, burn_loops};
use crate::platform::realtime::{self, SchedReadback, SchedRequest};

const MIB: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LoadKind {
    None,
    Video,
    X,
    Burn,
    Write,
    Read,
    Ring,
    Compile,
    Memload,
}

impl LoadKind {
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::None => "none",
            LoadKind::Video => "video",
            LoadKind::X => "x",
            LoadKind::Burn => "burn",
            LoadKind::Write => "write",
            LoadKind::Read => "read",
            LoadKind::Ring => "ring",
            LoadKind::Compile => "compile",
            LoadKind::Memload => "memload",
        }
    }
    pub const ALL: [LoadKind; 9] = [
        LoadKind::None,
        LoadKind::Video,
        LoadKind::X,
        LoadKind::Burn,
        LoadKind::Write,
        LoadKind::Read,
        LoadKind::Ring,
        LoadKind::Compile,
        LoadKind::Memload,
    ];
    pub fn description(self) -> &'static str {
        match self {
            LoadKind::None => "no load",
            LoadKind::Video => "the video task (40 % at the video rate) as a load",
            LoadKind::X => "the x task (0→100 % sawtooth) as a load",
            LoadKind::Burn => "one busy thread per CPU the run may use",
            LoadKind::Write => "sequential rewrite of a bounded file (optional rate limit, fsync)",
            LoadKind::Read => "sequential re-read of a file, page cache bypassed",
            LoadKind::Ring => "a token passed round a ring of threads (wake-up storm)",
            LoadKind::Compile => "burn + write + read together",
            LoadKind::Memload => {
                "copies within a buffer sized from available memory and the cgroup limit"
            }
        }
    }
}

/// Everything the child needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSpec {
    pub kind: LoadKind,
    /// Burn / ring threads.
    pub threads: usize,
    pub cpus: Option<Vec<usize>>,
    pub nice: Option<i32>,
    pub dir: PathBuf,
    /// Unique file-name prefix (the parent deletes `<dir>/<tag>-*` too).
    pub tag: String,
    pub file_bytes: u64,
    pub io_rate_bps: Option<u64>,
    pub fsync: bool,
    pub mem_bytes: u64,
    pub work: Work,
    pub video_hz: f64,
}

impl LoadSpec {
    pub fn files(&self) -> Vec<PathBuf> {
        vec![
            self.dir.join(format!("{}-write.tmp", self.tag)),
            self.dir.join(format!("{}-read.tmp", self.tag)),
        ]
    }
    /// Expected CPU share per load thread, % (None when it depends on I/O).
    pub fn target_pct(&self) -> Option<f64> {
        match self.kind {
            LoadKind::Burn => Some(100.0),
            LoadKind::Video => Some(Task::Video { hz: self.video_hz }.target_cpu_pct(60)),
            LoadKind::X => Some(50.0),
            _ => None,
        }
    }
}

/// One load thread's report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadReport {
    pub role: String,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Operations done (bytes for I/O, passes for ring/memload, frames for video/x).
    pub ops: u64,
    pub sched: Option<SchedReadback>,
    pub affinity: Option<Vec<usize>>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadReport {
    pub threads: Vec<ThreadReport>,
    pub notes: Vec<String>,
}

// ---------------------------------------------------------------- parent side

/// A running load child. Dropping it kills and reaps the child and deletes its files.
pub struct LoadProcess {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    files: Vec<PathBuf>,
    pub ready_notes: Vec<String>,
}

/// The executable that runs load children: `OSGAUGE_EXE` if set (tests), else this executable.
pub fn load_exe() -> io::Result<PathBuf> {
    match std::env::var_os("OSGAUGE_EXE") {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe(),
    }
}

impl LoadProcess {
    /// Start the child and wait (up to `ready_timeout`) until its load runs.
    pub fn start(exe: &Path, spec: &LoadSpec, ready_timeout: Duration) -> io::Result<LoadProcess> {
        let json = serde_json::to_string(spec).map_err(io::Error::other)?;
        let mut child = Command::new(exe)
            .arg("__load")
            .arg(&json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting load child {exe:?}: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut p = LoadProcess {
            child: Some(child),
            stdin,
            lines: rx,
            files: spec.files(),
            ready_notes: Vec::new(),
        };
        let line = p.lines.recv_timeout(ready_timeout).map_err(|_| {
            io::Error::other(format!(
                "load '{}' did not become ready within {ready_timeout:?}",
                spec.kind.name()
            ))
        })?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| io::Error::other(format!("load child said {line:?}: {e}")))?;
        if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
            return Err(io::Error::other(format!(
                "load '{}' failed to start: {err}",
                spec.kind.name()
            )));
        }
        p.ready_notes = v
            .get("ready")
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .unwrap_or_default();
        Ok(p)
    }

    /// Ask the child to stop, collect its report, reap it.
    pub fn stop(mut self) -> io::Result<LoadReport> {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
        let line = self.lines.recv_timeout(Duration::from_secs(30));
        let status = self.child.take().map(|mut c| c.wait()).transpose()?;
        let line = line.map_err(|_| {
            io::Error::other(format!(
                "load child sent no report (exit status {status:?})"
            ))
        })?;
        serde_json::from_str(&line).map_err(|e| io::Error::other(format!("load report: {e}")))
    }
}

impl Drop for LoadProcess {
    fn drop(&mut self) {
        // Ask politely (the child deletes its own files), then kill after 3 s.
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
        if let Some(mut c) = self.child.take() {
            let t = Instant::now();
            while matches!(c.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(3) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

// ---------------------------------------------------------------- child side

struct Ctx {
    stop: Arc<AtomicBool>,
    spec: LoadSpec,
}

fn thread_setup(spec: &LoadSpec) -> (Option<SchedReadback>, Option<Vec<usize>>, Option<String>) {
    let mut err = None;
    if let Some(c) = &spec.cpus
        && let Err(e) = realtime::set_thread_affinity(c)
    {
        err = Some(format!("affinity {c:?}: {e}"));
    }
    if spec.nice.is_some()
        && let Err(e) = realtime::apply_sched(&SchedRequest {
            nice: spec.nice,
            ..Default::default()
        })
    {
        err = Some(format!("nice {:?}: {e}", spec.nice));
    }
    (
        realtime::read_sched().ok(),
        crate::platform::current_thread_affinity().ok(),
        err,
    )
}

fn spawn_worker(
    ctx: &Arc<Ctx>,
    role: &str,
    body: impl FnOnce(&Ctx) -> io::Result<u64> + Send + 'static,
) -> std::thread::JoinHandle<ThreadReport> {
    let ctx = ctx.clone();
    let role = role.to_string();
    std::thread::spawn(move || {
        let (sched, affinity, mut error) = thread_setup(&ctx.spec);
        let c0 = realtime::thread_cpu_time_ns().unwrap_or(0);
        let t0 = Instant::now();
        let ops = match body(&ctx) {
            Ok(n) => n,
            Err(e) => {
                error = Some(e.to_string());
                0
            }
        };
        ThreadReport {
            role,
            cpu_ns: realtime::thread_cpu_time_ns()
                .unwrap_or(0)
                .saturating_sub(c0),
            wall_ns: t0.elapsed().as_nanos() as u64,
            ops,
            sched,
            affinity,
            error,
        }
    })
}

fn stopped(ctx: &Ctx) -> bool {
    ctx.stop.load(Ordering::Relaxed)
}

fn burn(ctx: &Ctx) -> io::Result<u64> {
    let chunk = (ctx.spec.work.loops_per_us * 1000.0).max(1000.0) as u64;
    let mut n = 0;
    while !stopped(ctx) {
        burn_loops(chunk);
        n += 1;
    }
    Ok(n)
}

/// A 4096-aligned buffer of `len` bytes (for direct I/O).
struct Aligned {
    v: Vec<u8>,
    off: usize,
    len: usize,
}
impl Aligned {
    fn new(len: usize) -> Aligned {
        let v = vec![0x5au8; len + 4096];
        let off = (4096 - (v.as_ptr() as usize % 4096)) % 4096;
        Aligned { v, off, len }
    }
    fn buf(&mut self) -> &mut [u8] {
        &mut self.v[self.off..self.off + self.len]
    }
}

fn write_load(ctx: &Ctx) -> io::Result<u64> {
    let path = &ctx.spec.files()[0];
    let mut f = std::fs::File::create(path)?;
    let buf = vec![0xa5u8; MIB];
    let t0 = Instant::now();
    let mut pos = 0u64;
    let mut total = 0u64;
    while !stopped(ctx) {
        f.write_all(&buf)?;
        pos += MIB as u64;
        total += MIB as u64;
        if pos >= ctx.spec.file_bytes {
            if ctx.spec.fsync {
                f.sync_all()?;
            }
            f.seek(SeekFrom::Start(0))?;
            pos = 0;
        }
        if let Some(rate) = ctx.spec.io_rate_bps {
            let due = Duration::from_secs_f64(total as f64 / rate as f64);
            while t0.elapsed() < due && !stopped(ctx) {
                std::thread::sleep((due - t0.elapsed()).min(Duration::from_millis(10)));
            }
        }
    }
    Ok(total)
}

/// Prepare the read file (written and flushed to storage) before the load starts.
fn prepare_read_file(spec: &LoadSpec) -> io::Result<()> {
    let path = &spec.files()[1];
    let mut f = std::fs::File::create(path)?;
    let buf = vec![0x3cu8; MIB];
    let mut n = 0;
    while n < spec.file_bytes {
        f.write_all(&buf)?;
        n += MIB as u64;
    }
    f.sync_all()?;
    realtime::drop_file_cache(&f)
}

fn read_load(ctx: &Ctx, method: &str) -> io::Result<u64> {
    let path = &ctx.spec.files()[1];
    let (mut f, _) = realtime::open_uncached_read(path)?;
    let advise = method.starts_with("posix_fadvise");
    let mut buf = Aligned::new(MIB);
    let mut total = 0u64;
    while !stopped(ctx) {
        let n = f.read(buf.buf())?;
        total += n as u64;
        if n < MIB {
            f.seek(SeekFrom::Start(0))?;
            if advise {
                realtime::drop_file_cache(&f)?;
            }
        }
    }
    Ok(total)
}

fn ring_member(ctx: &Ctx, rx: mpsc::Receiver<u64>, tx: mpsc::Sender<u64>) -> io::Result<u64> {
    let mut n = 0;
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(tok) => {
                n += 1;
                if stopped(ctx) || tx.send(tok + 1).is_err() {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) if !stopped(ctx) => {}
            Err(_) => break,
        }
    }
    Ok(n)
}

fn memload(ctx: &Ctx, mut chunks: Vec<Vec<u8>>) -> io::Result<u64> {
    let n = chunks.len();
    let mut passes = 0;
    while !stopped(ctx) {
        for i in 0..n {
            if stopped(ctx) {
                break;
            }
            let j = (i + 1) % n;
            if i == j {
                chunks[i].reverse();
                continue;
            }
            let (a, b) = if i < j {
                let (x, y) = chunks.split_at_mut(j);
                (&x[i], &mut y[0])
            } else {
                let (x, y) = chunks.split_at_mut(i);
                (&y[0], &mut x[j])
            };
            b.copy_from_slice(a);
        }
        passes += 1;
    }
    Ok(passes)
}

/// Body of `osgauge __load <spec>`; returns the exit code.
pub fn child_main(spec_json: &str) -> i32 {
    // Ctrl-C reaches the whole process group; the parent decides when the load stops.
    let _ = crate::platform::ignore_interrupt();
    let spec: LoadSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            println!(
                "{}",
                serde_json::json!({ "error": format!("bad spec: {e}") })
            );
            return 2;
        }
    };
    let ctx = Arc::new(Ctx {
        stop: Arc::new(AtomicBool::new(false)),
        spec: spec.clone(),
    });
    let mut notes = Vec::new();
    let mut handles = Vec::new();
    let result: io::Result<()> = (|| {
        let k = spec.kind;
        if matches!(k, LoadKind::Burn | LoadKind::Compile) {
            for i in 0..spec.threads.max(1) {
                handles.push(spawn_worker(&ctx, &format!("burn{i}"), burn));
            }
        }
        if matches!(k, LoadKind::Write | LoadKind::Compile) {
            notes.push(format!(
                "write: {} MiB file in {}, {}, {}",
                spec.file_bytes / MIB as u64,
                spec.dir.display(),
                spec.io_rate_bps
                    .map(|r| format!("rate limit {:.1} MB/s", r as f64 / 1e6))
                    .unwrap_or_else(|| "no rate limit".into()),
                if spec.fsync {
                    "fsync after each pass"
                } else {
                    "no fsync"
                }
            ));
            handles.push(spawn_worker(&ctx, "write", write_load));
        }
        if matches!(k, LoadKind::Read | LoadKind::Compile) {
            prepare_read_file(&spec)?;
            let (_, method) = realtime::open_uncached_read(&spec.files()[1])?;
            notes.push(format!(
                "read: {} MiB file, {method}",
                spec.file_bytes / MIB as u64
            ));
            let method = method.to_string();
            handles.push(spawn_worker(&ctx, "read", move |c| read_load(c, &method)));
        }
        if k == LoadKind::Ring {
            let n = spec.threads.max(2);
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel::<u64>()).unzip();
            txs[0].send(0).map_err(io::Error::other)?;
            for (i, rx) in rxs.into_iter().enumerate() {
                let tx = txs[(i + 1) % n].clone();
                handles.push(spawn_worker(&ctx, &format!("ring{i}"), move |c| {
                    ring_member(c, rx, tx)
                }));
            }
            notes.push(format!(
                "ring of {n} threads, token passed through channels"
            ));
        }
        if k == LoadKind::Memload {
            let n = (spec.mem_bytes as usize / MIB).max(2);
            let chunks: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; MIB]).collect();
            notes.push(format!("memload: {n} MiB buffer, chunk-to-chunk copies"));
            handles.push(spawn_worker(&ctx, "memload", move |c| memload(c, chunks)));
        }
        if matches!(k, LoadKind::Video | LoadKind::X) {
            let task = if k == LoadKind::Video {
                Task::Video { hz: spec.video_hz }
            } else {
                Task::X {
                    stride: 1,
                    offset: 0,
                }
            };
            let work = spec.work;
            handles.push(spawn_worker(&ctx, k.name(), move |c| {
                let run = run_task(task, &work, u64::MAX / 4, &|| stopped(c))?;
                Ok(run.acc.frames)
            }));
        }
        Ok(())
    })();
    // Writes never panic: a parent that is gone (EPIPE) must not stop the cleanup below.
    let said = match &result {
        Ok(()) => say(&serde_json::json!({ "ready": notes }).to_string()),
        Err(e) => say(&serde_json::json!({ "error": e.to_string() }).to_string()),
    };
    if result.is_ok() && said {
        // Work until "stop" or EOF (the parent is gone).
        let stdin = io::stdin();
        for line in stdin.lock().lines() {
            match line {
                Ok(l) if l.trim() == "stop" => break,
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    ctx.stop.store(true, Ordering::Relaxed);
    let threads: Vec<ThreadReport> = handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| ThreadReport {
                error: Some("load thread panicked".into()),
                ..Default::default()
            })
        })
        .collect();
    for f in spec.files() {
        let _ = std::fs::remove_file(f);
    }
    let report = LoadReport { threads, notes };
    say(&serde_json::to_string(&report).unwrap_or_else(|_| "{}".into()));
    if result.is_ok() { 0 } else { 1 }
}

/// One line to the parent; false when it cannot be written (the parent is gone).
fn say(line: &str) -> bool {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}").and_then(|_| out.flush()).is_ok()
}
