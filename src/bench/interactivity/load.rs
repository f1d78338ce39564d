//! Background loads. Each load runs in a child process (`osgauge __load <json spec>`), never in
//! the measuring process. Protocol on the child's stdin/stdout, one JSON line each way:
//! the child prints `{"ready":…}` once every load thread has started its loop (files prepared,
//! affinity and scheduling read back) — or `{"error":…}` — then works until a line `stop` arrives,
//! stdin reaches EOF (the parent died or dropped its guard) or it gets SIGTERM (Linux: also sent
//! when the parent dies); it then stops every thread, deletes its files, prints its report (CPU
//! time and operations of each thread, the scheduling it really had, bytes read from the device)
//! and exits. The child ignores Ctrl-C and hangup: the parent decides when to stop. Every wait of
//! the parent is bounded by the cell's deadline; the [`LoadProcess`] guard kills and reaps the
//! child and deletes its files on drop.
//!
//! Load files live in a per-process folder `<base>/<pid>/` ([`LoadFolder`]): base is
//! `<cache dir>/loads` by default or `--load-dir`; the folder is removed when the load ends, and
//! folders of dead processes are removed at the next start ([`remove_stale`]).

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::task::{Task, run_task};
use super::work::{Work, burn_loops};
use crate::harness::RunContext;
use crate::model::BenchError;
use crate::platform::sched::{self, SchedReadback, SchedRequest};
use crate::platform::storage;
use crate::platform::{clock, fs};

const MIB: usize = 1 << 20;
const MS: u64 = 1_000_000;

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
            LoadKind::X => {
                "the x task as a load: 100 ms steps whose work ramps 0→100 % over the cell (50 % on average)"
            }
            LoadKind::Burn => "one busy thread per CPU the run may use",
            LoadKind::Write => "sequential rewrite of a bounded file (optional rate limit, fsync)",
            LoadKind::Read => {
                "sequential re-read of a file on storage, page cache bypassed (refused on memory file systems)"
            }
            LoadKind::Ring => "a token passed round a ring of threads (wake-up storm)",
            LoadKind::Compile => "burn + write + read together",
            LoadKind::Memload => {
                "copies within a buffer sized from available memory and the cgroup limit"
            }
        }
    }
    /// Loads that write or read files.
    pub fn uses_files(self) -> bool {
        matches!(self, LoadKind::Write | LoadKind::Read | LoadKind::Compile)
    }
    /// Loads that read a file and claim the reads reach storage.
    pub fn reads_storage(self) -> bool {
        matches!(self, LoadKind::Read | LoadKind::Compile)
    }
}

/// Why a `read` load cannot run in `dir` (it is on a memory-backed file system), or None.
pub fn read_refusal(dir: &Path) -> Option<String> {
    match storage::memory_backed_fs(dir) {
        Ok(Some(fs)) => Some(format!(
            "the read load must read from storage, but {} is on {fs} (memory): its reads would \
             never reach a device; give --load-dir a directory on a disk",
            dir.display()
        )),
        _ => None,
    }
}

// ---------------------------------------------------------------- load files

/// Marks a per-process folder as osgauge's (so stale ones are removed only when they are ours).
const MARKER: &str = ".osgauge-loads";

/// Default base of the load folders: `<cache dir>/loads`, else `<temp dir>/osgauge/loads`.
pub fn default_load_base() -> PathBuf {
    super::work::cache_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("osgauge"))
        .join("loads")
}

/// The per-process folder `<base>/<pid>` holding this process's load files; removed (with the
/// files in it) on drop.
pub struct LoadFolder {
    path: PathBuf,
}

impl LoadFolder {
    /// Create `<base>/<pid>`. The default base is created if missing; a base the user gave
    /// (`--load-dir`) must exist.
    pub fn create(base: &Path) -> io::Result<LoadFolder> {
        if base == default_load_base() {
            std::fs::create_dir_all(base)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", base.display())))?;
        } else if !base.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a directory", base.display()),
            ));
        }
        let path = base.join(std::process::id().to_string());
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let ours = path.join(MARKER).exists()
                    || std::fs::read_dir(&path).map(|mut d| d.next().is_none())?;
                if !ours {
                    return Err(io::Error::other(format!(
                        "{} exists and is not an osgauge load folder",
                        path.display()
                    )));
                }
            }
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
        std::fs::write(
            path.join(MARKER),
            b"osgauge load files; removed when the load ends\n",
        )?;
        Ok(LoadFolder { path })
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LoadFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Remove what dead osgauge processes left: `<base>/<pid>` folders whose process is gone (under
/// the default base every such folder; under a user's `--load-dir` only folders that carry
/// osgauge's marker or are empty), and old-style `osgauge-load-<pid>-*.tmp` files in each of
/// `old_style_dirs` from dead processes. Returns what was removed.
pub fn remove_stale(base: &Path, old_style_dirs: &[&Path]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let own_base = base == default_load_base();
    if let Ok(entries) = std::fs::read_dir(base) {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let path = e.path();
            if pid == std::process::id() || crate::platform::process_alive(pid) || !path.is_dir() {
                continue;
            }
            let gone = if own_base || path.join(MARKER).exists() {
                std::fs::remove_dir_all(&path).is_ok()
            } else {
                std::fs::remove_dir(&path).is_ok()
            };
            if gone {
                removed.push(path);
            }
        }
    }
    for dir in old_style_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.ends_with(".tmp"))
                .and_then(|n| n.strip_prefix("osgauge-load-"))
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id()
                && !crate::platform::process_alive(pid)
                && std::fs::remove_file(e.path()).is_ok()
            {
                removed.push(e.path());
            }
        }
    }
    removed
}

/// Everything the child needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSpec {
    pub kind: LoadKind,
    /// Burn / ring threads.
    pub threads: usize,
    pub cpus: Option<Vec<usize>>,
    pub nice: Option<i32>,
    /// The per-process load folder (see [`LoadFolder`]).
    pub dir: PathBuf,
    /// Unique file-name prefix (the parent deletes `<dir>/<tag>-*` too).
    pub tag: String,
    pub file_bytes: u64,
    pub io_rate_bps: Option<u64>,
    pub fsync: bool,
    pub mem_bytes: u64,
    pub work: Work,
    pub video_hz: f64,
    /// The cell's measuring time (the x load's ramp spans it).
    pub duration_ns: u64,
    /// The parent's process id (the child ends when it dies).
    pub parent_pid: u32,
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

/// The work emulation a load uses. The demand-driven loads (video, x) exist to take a stated CPU
/// share, so where the thread CPU clock is fine they burn by it (`cputime`): their share then
/// does not depend on the loop calibration (a calibration made on a busy machine made the fixed
/// x load use ~35 % instead of 50 % even under SCHED_FIFO). Other loads keep `work`.
pub fn load_work(kind: LoadKind, work: Work) -> Work {
    if matches!(kind, LoadKind::Video | LoadKind::X) && super::work::cpu_clock_is_fine() {
        Work {
            mode: super::work::WorkMode::Cputime,
            ..work
        }
    } else {
        work
    }
}

/// Steps of the x load's ramp over a cell of `duration_ns`: one 100 ms step per 100 ms of the cell
/// (1 to 101 steps), so any cell covers whole ramps.
pub fn x_load_steps(duration_ns: u64) -> u64 {
    (duration_ns / (100 * MS)).clamp(1, 101)
}

/// Work of step `k` of the x load's ramp of `n` steps: (j + ½)/n of the 100 ms step, j = k mod n —
/// a sawtooth from near 0 to near 100 % whose every whole ramp averages exactly 50 %.
pub fn x_load_work_ns(k: u64, n: u64) -> u64 {
    let n = n.max(1);
    100 * MS * (2 * (k % n) + 1) / (2 * n)
}

/// One load thread's report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadReport {
    pub role: String,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Operations done: bytes for write/read, MiB copied for memload, token passes for ring,
    /// frames for video/x, ~1 ms work chunks for burn.
    pub ops: u64,
    pub sched: Option<SchedReadback>,
    pub affinity: Option<Vec<usize>>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadReport {
    pub threads: Vec<ThreadReport>,
    pub notes: Vec<String>,
    /// Bytes the child read from storage devices while the load ran (read loads).
    pub device_read_bytes: Option<u64>,
    /// The counter behind `device_read_bytes`, or "unsupported: <reason>".
    pub device_read_counter: Option<String>,
    /// Set when the load ended before the parent asked (e.g. "SIGTERM").
    pub stopped_early: Option<String>,
}

// ---------------------------------------------------------------- parent side

/// A running load child. Dropping it kills and reaps the child and deletes its files.
pub struct LoadProcess {
    child: Option<Child>,
    pid: u32,
    kind: LoadKind,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    files: Vec<PathBuf>,
    pub ready_notes: Vec<String>,
}

/// Poll interval of the parent's bounded waits.
const POLL: Duration = Duration::from_millis(20);

impl LoadProcess {
    /// Start the child and wait until every load thread runs. The wait ends at the cell's deadline
    /// or on Ctrl-C (checked every 20 ms), or when the child ends; every failure is one line.
    pub fn start(exe: &Path, spec: &LoadSpec, ctx: &RunContext) -> Result<LoadProcess, BenchError> {
        let name = spec.kind.name();
        let json = serde_json::to_string(spec).map_err(|e| BenchError::failed(e.to_string()))?;
        let mut child = Command::new(exe)
            .arg("__load")
            .arg(&json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| BenchError::failed(format!("starting load child {exe:?}: {e}")))?;
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
            pid: child.id(),
            child: Some(child),
            kind: spec.kind,
            stdin,
            lines: rx,
            files: spec.files(),
            ready_notes: Vec::new(),
        };
        let line = loop {
            match p.lines.recv_timeout(POLL) {
                Ok(line) => break line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(status) = p.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
                    {
                        // It ended; its last words (an error line) may still be in the pipe.
                        if let Ok(line) = p.lines.recv_timeout(Duration::from_millis(500)) {
                            break line;
                        }
                        return Err(BenchError::failed(format!(
                            "load '{name}': its process {} while preparing",
                            crate::platform::process::describe_exit(status)
                        )));
                    }
                    if let Err(e) = ctx.check() {
                        if crate::platform::child_stopped(p.pid) {
                            return Err(BenchError::failed(format!(
                                "load '{name}' did not become ready before the cell's time bound: \
                                 its process {} is stopped (SIGSTOP/SIGTSTP)",
                                p.pid
                            )));
                        }
                        return Err(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = p.wait_until(Instant::now() + Duration::from_secs(2));
                    return Err(BenchError::failed(match status {
                        Some(s) => format!(
                            "load '{name}': its process {} while preparing",
                            crate::platform::process::describe_exit(s)
                        ),
                        None => {
                            format!("load '{name}': its process closed its output while preparing")
                        }
                    }));
                }
            }
        };
        let v: serde_json::Value = serde_json::from_str(&line).map_err(|_| {
            BenchError::failed(format!(
                "load '{name}': unexpected output from its process: {line}"
            ))
        })?;
        if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
            return Err(BenchError::failed(format!(
                "load '{name}' failed to start: {err}"
            )));
        }
        p.ready_notes = v
            .get("ready")
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .unwrap_or_default();
        Ok(p)
    }

    /// Poll the child until it exits or `until`; its status if it exited (the child is reaped).
    fn wait_until(&mut self, until: Instant) -> Option<std::process::ExitStatus> {
        let c = self.child.as_mut()?;
        loop {
            match c.try_wait() {
                Ok(Some(s)) => {
                    self.child = None;
                    return Some(s);
                }
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => return None,
            }
        }
    }

    /// Kill and reap the child (SIGKILL ends a stopped process too).
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Ask the child to stop and collect its report. Every wait ends at `deadline` (at least 2 s
    /// from now, so a load that ends with the cell still gets to stop politely); past it the child
    /// is killed and reaped and an error says why.
    pub fn stop(mut self, deadline: Instant) -> Result<LoadReport, String> {
        let name = self.kind.name();
        let until = deadline.max(Instant::now() + Duration::from_secs(2));
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
        let line = loop {
            let now = Instant::now();
            if now >= until {
                break None;
            }
            match self.lines.recv_timeout((until - now).min(POLL * 5)) {
                Ok(l) => break Some(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            }
        };
        let stopped = crate::platform::child_stopped(self.pid);
        let status = self.wait_until(until);
        if status.is_none() {
            self.kill();
        }
        let Some(line) = line else {
            return Err(match status {
                Some(s) => format!(
                    "load '{name}': its process {} before it reported",
                    crate::platform::process::describe_exit(s)
                ),
                None if stopped => format!(
                    "load '{name}': its process {} is stopped (SIGSTOP/SIGTSTP) and sent no report \
                     before the cell's time bound; it was killed",
                    self.pid
                ),
                None => format!(
                    "load '{name}': its process sent no report before the cell's time bound; it was killed"
                ),
            });
        };
        serde_json::from_str(&line)
            .map_err(|_| format!("load '{name}': unexpected report from its process: {line}"))
    }
}

impl Drop for LoadProcess {
    fn drop(&mut self) {
        // Ask politely (the child deletes its own files), then kill after 3 s — at once if stopped.
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
        if self.child.is_some() && !crate::platform::child_stopped(self.pid) {
            self.wait_until(Instant::now() + Duration::from_secs(3));
        }
        self.kill();
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Least CPU share, % of one CPU, of a CPU load thread that really ran (see [`check_report`]).
pub const CPU_FLOOR_PCT: f64 = 2.0;

/// What a finished load achieved, checked against floors that show it really ran:
/// - CPU loads (burn, video, x, memload): every thread did ≥ 1 operation and used ≥ 2 % of one
///   CPU over its lifetime ([`CPU_FLOOR_PCT`]: a stuck or starved load loads nothing; low enough
///   that a load sharing 2 CPUs with ~20 busy threads — 7 % seen here — still counts as running);
/// - ring: every member passed the token at least once (its CPU depends on the scheduler);
/// - write / read: ≥ 1 MiB moved (the first buffer; their CPU depends on the device and the rate
///   limit, so no CPU floor).
///
/// Err: the load failed (a thread's error or panic, an early end, a floor missed) — the cell fails.
/// Ok: facts (per thread ops and CPU %, device bytes) and warnings (achieved CPU more than 10
/// points from the target of a demand-driven load — video, x; a read load whose device bytes are
/// far below the bytes it read).
pub fn check_report(
    spec: &LoadSpec,
    r: &LoadReport,
) -> Result<(Map<String, Value>, Vec<String>), String> {
    let name = spec.kind.name();
    if let Some(why) = &r.stopped_early {
        return Err(format!("load '{name}' ended before the cell did ({why})"));
    }
    if r.threads.is_empty() {
        return Err(format!("load '{name}' reported no threads"));
    }
    let mut facts = Map::new();
    let mut warnings = Vec::new();
    let mut achieved = Map::new();
    let mut cpu_pcts = Vec::new();
    let mut read_bytes = 0u64;
    for t in &r.threads {
        if let Some(e) = &t.error {
            return Err(format!("load '{name}' thread {}: {e}", t.role));
        }
        let cpu_pct = 100.0 * t.cpu_ns as f64 / t.wall_ns.max(1) as f64;
        let io = t.role == "write" || t.role == "read";
        let floor_ops = if io { MIB as u64 } else { 1 };
        if t.ops < floor_ops {
            return Err(format!(
                "load '{name}' thread {} did not really run: {} operation(s) in {:.0} ms (floor {floor_ops})",
                t.role,
                t.ops,
                t.wall_ns as f64 / 1e6
            ));
        }
        let cpu_load = !io && !t.role.starts_with("ring");
        if cpu_load && cpu_pct < CPU_FLOOR_PCT {
            return Err(format!(
                "load '{name}' thread {} did not really run: it used {cpu_pct:.1} % of a CPU in \
                 {:.0} ms (floor {CPU_FLOOR_PCT} %)",
                t.role,
                t.wall_ns as f64 / 1e6
            ));
        }
        if t.role == "read" {
            read_bytes = t.ops;
        }
        if cpu_load {
            cpu_pcts.push(cpu_pct);
        }
        achieved.insert(
            t.role.clone(),
            json!({ "ops": t.ops, "cpu_pct": (cpu_pct * 10.0).round() / 10.0,
                    "wall_ms": (t.wall_ns as f64 / 1e5).round() / 10.0 }),
        );
    }
    facts.insert("load_achieved".into(), Value::Object(achieved));
    if spec.kind == LoadKind::Write || spec.kind == LoadKind::Compile {
        let bytes: u64 = r
            .threads
            .iter()
            .filter(|t| t.role == "write")
            .map(|t| t.ops)
            .sum();
        facts.insert("load_write_bytes".into(), json!(bytes));
    }
    if let Some(target) = spec.target_pct()
        && !cpu_pcts.is_empty()
    {
        let mean = cpu_pcts.iter().sum::<f64>() / cpu_pcts.len() as f64;
        facts.insert(
            "load_achieved_cpu_pct".into(),
            json!((mean * 10.0).round() / 10.0),
        );
        if matches!(spec.kind, LoadKind::X | LoadKind::Video) && (mean - target).abs() > 10.0 {
            warnings.push(format!(
                "load '{name}' used {mean:.0} % of a CPU against its target of {target:.0} % \
                 (params.load_achieved_cpu_pct, per run)"
            ));
        }
    }
    if spec.kind.reads_storage() {
        facts.insert("load_read_bytes".into(), json!(read_bytes));
        facts.insert("load_device_read_bytes".into(), json!(r.device_read_bytes));
        facts.insert(
            "load_device_read_counter".into(),
            json!(r.device_read_counter),
        );
        if let Some(d) = r.device_read_bytes
            && read_bytes > 0
        {
            let pct = 100.0 * d as f64 / read_bytes as f64;
            facts.insert(
                "load_read_from_device_pct".into(),
                json!((pct * 10.0).round() / 10.0),
            );
            if pct < 50.0 {
                warnings.push(format!(
                    "load '{name}': only {pct:.0} % of the bytes it read came from the storage \
                     device; the rest was served from memory (params.load_read_from_device_pct)"
                ));
            }
        }
    }
    Ok((facts, warnings))
}

// ---------------------------------------------------------------- child side

/// Set by SIGTERM (and, on Linux, by the parent's death) in the child.
static TERMINATED: AtomicBool = AtomicBool::new(false);

struct Ctx {
    stop: AtomicBool,
    spec: LoadSpec,
}

fn stopped(ctx: &Ctx) -> bool {
    ctx.stop.load(Ordering::Relaxed) || TERMINATED.load(Ordering::Relaxed)
}

/// Set the thread's affinity and nice, read both back; an error when they did not hold.
fn thread_setup(spec: &LoadSpec) -> (Option<SchedReadback>, Option<Vec<usize>>, Option<String>) {
    let mut err = None;
    if let Some(c) = &spec.cpus
        && let Err(e) = sched::set_thread_affinity(c)
    {
        err = Some(format!("affinity {c:?}: {e}"));
    }
    if spec.nice.is_some()
        && let Err(e) = sched::apply_thread(&SchedRequest {
            nice: spec.nice,
            ..Default::default()
        })
    {
        err = Some(format!("nice {:?}: {e}", spec.nice));
    }
    let sched = sched::read_thread();
    let affinity = crate::platform::current_thread_affinity();
    if err.is_none()
        && let (Some(want), Ok(got)) = (&spec.cpus, &affinity)
    {
        let mut w = want.clone();
        w.sort_unstable();
        w.dedup();
        if &w != got {
            err = Some(format!(
                "affinity {want:?} did not hold: reads back as {got:?}"
            ));
        }
    }
    if err.is_none()
        && let (Some(n), Ok(s)) = (spec.nice, &sched)
        && s.nice.is_some_and(|got| got != n)
    {
        err = Some(format!("nice {n} did not hold: reads back as {:?}", s.nice));
    }
    (sched.ok(), affinity.ok(), err)
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// A worker's readiness signal: Ok(role) once its loop starts, or Err(why) if it never does.
type ReadyTx = mpsc::Sender<Result<String, String>>;

/// Spawn a load thread: set up and read back its scheduling, then run `body`, which calls its
/// `go` argument once when its loop starts. Errors and panics become the thread's reported error.
fn spawn_worker(
    ctx: &Arc<Ctx>,
    role: &str,
    ready: &ReadyTx,
    body: impl FnOnce(&Ctx, &mut dyn FnMut()) -> io::Result<u64> + Send + 'static,
) -> std::thread::JoinHandle<ThreadReport> {
    let ctx = ctx.clone();
    let role = role.to_string();
    let ready = ready.clone();
    std::thread::spawn(move || {
        let (sched, affinity, mut error) = thread_setup(&ctx.spec);
        let c0 = clock::thread_cpu_time_ns().unwrap_or(0);
        let t0 = Instant::now();
        let mut said = false;
        let mut ops = 0;
        if error.is_none() {
            let mut go = || {
                if !said {
                    said = true;
                    let _ = ready.send(Ok(role.clone()));
                }
            };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&ctx, &mut go))) {
                Ok(Ok(n)) => ops = n,
                Ok(Err(e)) => error = Some(e.to_string()),
                Err(p) => error = Some(format!("panicked: {}", panic_text(p.as_ref()))),
            }
        }
        if !said {
            let _ = ready.send(Err(format!(
                "{role}: {}",
                error.as_deref().unwrap_or("stopped before it started")
            )));
        }
        ThreadReport {
            role,
            cpu_ns: clock::thread_cpu_time_ns().unwrap_or(0).saturating_sub(c0),
            wall_ns: t0.elapsed().as_nanos() as u64,
            ops,
            sched,
            affinity,
            error,
        }
    })
}

fn burn(ctx: &Ctx, go: &mut dyn FnMut()) -> io::Result<u64> {
    let chunk = (ctx.spec.work.loops_per_us * 1000.0).max(1000.0) as u64;
    let mut n = 0;
    go();
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

fn write_load(ctx: &Ctx, go: &mut dyn FnMut()) -> io::Result<u64> {
    let path = &ctx.spec.files()[0];
    let mut f = std::fs::File::create(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let buf = vec![0xa5u8; MIB];
    // The rate is bounded at parse time (> 0); a zero here is a bug, not a sleep forever.
    let rate = match ctx.spec.io_rate_bps {
        Some(0) => return Err(io::Error::other("io rate of 0 bytes/s")),
        r => r,
    };
    go();
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
        if let Some(rate) = rate {
            let due = Duration::from_secs_f64(total as f64 / rate as f64);
            while t0.elapsed() < due && !stopped(ctx) {
                std::thread::sleep(
                    due.saturating_sub(t0.elapsed())
                        .min(Duration::from_millis(10)),
                );
            }
        }
    }
    Ok(total)
}

/// Prepare the read file (written and flushed to storage) before the load starts; refuses a
/// memory-backed file system and stops (within one 1 MiB write) when asked to.
fn prepare_read_file(ctx: &Ctx) -> io::Result<()> {
    let spec = &ctx.spec;
    if let Some(why) = read_refusal(&spec.dir) {
        return Err(io::Error::other(why));
    }
    let path = &spec.files()[1];
    let mut f = std::fs::File::create(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let buf = vec![0x3cu8; MIB];
    let mut n = 0;
    while n < spec.file_bytes {
        if stopped(ctx) {
            return Err(io::Error::other("stopped while preparing the read file"));
        }
        f.write_all(&buf)?;
        n += MIB as u64;
    }
    f.sync_all()?;
    fs::drop_cache(&f)
}

fn read_load(ctx: &Ctx, method: &str, go: &mut dyn FnMut()) -> io::Result<u64> {
    let path = &ctx.spec.files()[1];
    let mut f = fs::open_uncached_lenient(path, false)?.file;
    let advise = method.starts_with("posix_fadvise");
    let mut buf = Aligned::new(MIB);
    let mut total = 0u64;
    go();
    while !stopped(ctx) {
        let n = f.read(buf.buf())?;
        total += n as u64;
        if n < MIB {
            f.seek(SeekFrom::Start(0))?;
            if advise {
                fs::drop_cache(&f)?;
            }
        }
    }
    Ok(total)
}

fn ring_member(
    ctx: &Ctx,
    rx: mpsc::Receiver<u64>,
    tx: mpsc::Sender<u64>,
    go: &mut dyn FnMut(),
) -> io::Result<u64> {
    let mut n = 0;
    go();
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

/// Chunk-to-chunk copies round the buffer; ops = MiB copied.
fn memload(ctx: &Ctx, mut chunks: Vec<Vec<u8>>, go: &mut dyn FnMut()) -> io::Result<u64> {
    let n = chunks.len();
    let mut copied = 0;
    go();
    while !stopped(ctx) {
        for i in 0..n {
            if stopped(ctx) {
                break;
            }
            let j = (i + 1) % n;
            if i == j {
                chunks[i].reverse();
                copied += 1;
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
            copied += 1;
        }
    }
    Ok(copied)
}

/// The x load: 100 ms steps whose work follows [`x_load_work_ns`] over a ramp spanning the cell,
/// so the load delivers its 50 % whatever the cell's duration. A step that starts late starts at
/// once and none is skipped (skipping would drop mostly the long steps, which are the ones that
/// run late, and bias the load low); it never runs ahead of its schedule. ops = steps worked.
fn x_load(ctx: &Ctx, go: &mut dyn FnMut()) -> io::Result<u64> {
    let n = x_load_steps(ctx.spec.duration_ns);
    let step = 100 * MS;
    go();
    let t0 = clock::now_ns();
    let mut k = 0u64;
    let mut steps = 0;
    while !stopped(ctx) {
        let intended = t0 + k * step;
        // Sleep in slices of at most 10 ms so a stop is seen promptly.
        loop {
            let now = clock::now_ns();
            if now >= intended || stopped(ctx) {
                break;
            }
            clock::sleep_until_ns(intended.min(now + 10 * MS))?;
        }
        if stopped(ctx) {
            break;
        }
        ctx.spec
            .work
            .run(x_load_work_ns(k, n), &mut |_| stopped(ctx));
        steps += 1;
        k += 1;
    }
    Ok(steps)
}

fn work_note(w: &Work) -> &'static str {
    match w.mode {
        super::work::WorkMode::Cputime => "timed by the thread CPU clock",
        super::work::WorkMode::Fixed => "as calibrated loops",
    }
}

/// Body of `osgauge __load <spec>`; returns the exit code.
pub fn child_main(spec_json: &str) -> i32 {
    // Errors and panics of load threads go into the report, never as a dump on the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    // Ctrl-C and hangup reach the whole process group; the parent decides when the load stops.
    let _ = crate::platform::helper_child_signals(&TERMINATED);
    let spec: LoadSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            say(&json!({ "error": format!("bad spec: {e}") }).to_string());
            return 2;
        }
    };
    if let Err(e) = crate::platform::terminate_with_parent(spec.parent_pid)
        && e.kind() != io::ErrorKind::Unsupported
    {
        return 1;
    }
    let ctx = Arc::new(Ctx {
        stop: AtomicBool::new(false),
        spec: spec.clone(),
    });
    // "stop" or EOF on stdin (the parent is gone or dropped its guard) stops the load — also
    // while it is still preparing.
    {
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let stdin = io::stdin();
            for line in stdin.lock().lines() {
                match line {
                    Ok(l) if l.trim() == "stop" => break,
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            ctx.stop.store(true, Ordering::SeqCst);
        });
    }
    let mut notes = Vec::new();
    let mut handles = Vec::new();
    let (ready_tx, ready_rx) = mpsc::channel();
    let result: io::Result<()> = (|| {
        let k = spec.kind;
        if matches!(k, LoadKind::Burn | LoadKind::Compile) {
            for i in 0..spec.threads.max(1) {
                handles.push(spawn_worker(&ctx, &format!("burn{i}"), &ready_tx, burn));
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
            handles.push(spawn_worker(&ctx, "write", &ready_tx, write_load));
        }
        if matches!(k, LoadKind::Read | LoadKind::Compile) {
            prepare_read_file(&ctx)?;
            let method = fs::open_uncached_lenient(&spec.files()[1], false)?.method;
            notes.push(format!(
                "read: {} MiB file in {}, {method}",
                spec.file_bytes / MIB as u64,
                spec.dir.display()
            ));
            let method = method.to_string();
            handles.push(spawn_worker(&ctx, "read", &ready_tx, move |c, go| {
                read_load(c, &method, go)
            }));
        }
        if k == LoadKind::Ring {
            let n = spec.threads.max(2);
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel::<u64>()).unzip();
            txs[0].send(0).map_err(io::Error::other)?;
            for (i, rx) in rxs.into_iter().enumerate() {
                let tx = txs[(i + 1) % n].clone();
                handles.push(spawn_worker(
                    &ctx,
                    &format!("ring{i}"),
                    &ready_tx,
                    move |c, go| ring_member(c, rx, tx, go),
                ));
            }
            notes.push(format!(
                "ring of {n} threads, token passed through channels"
            ));
        }
        if k == LoadKind::Memload {
            let n = (spec.mem_bytes as usize / MIB).max(2);
            let chunks: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; MIB]).collect();
            notes.push(format!("memload: {n} MiB buffer, chunk-to-chunk copies"));
            handles.push(spawn_worker(&ctx, "memload", &ready_tx, move |c, go| {
                memload(c, chunks, go)
            }));
        }
        if k == LoadKind::Video {
            notes.push(format!("video: work {}", work_note(&spec.work)));
            let task = Task::Video { hz: spec.video_hz };
            let work = spec.work;
            handles.push(spawn_worker(&ctx, "video", &ready_tx, move |c, go| {
                go();
                let run = run_task(task, &work, u64::MAX / 4, &|| stopped(c), None)?;
                Ok(run.acc.frames)
            }));
        }
        if k == LoadKind::X {
            notes.push(format!(
                "x: 100 ms steps, work ramping over {} step(s) (the cell's duration), 50 % on \
                 average, work {}",
                x_load_steps(spec.duration_ns),
                work_note(&spec.work)
            ));
            handles.push(spawn_worker(&ctx, "x", &ready_tx, x_load));
        }
        // Ready = every worker has started its loop with its scheduling read back.
        let mut started = 0;
        while started < handles.len() {
            match ready_rx.recv_timeout(POLL) {
                Ok(Ok(_)) => started += 1,
                Ok(Err(e)) => return Err(io::Error::other(e)),
                Err(mpsc::RecvTimeoutError::Timeout) if stopped(&ctx) => {
                    return Err(io::Error::other("stopped while starting"));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("a load thread ended before it started"));
                }
            }
        }
        Ok(())
    })();
    let reads = spec.kind.reads_storage();
    let device0 = if reads {
        Some(storage::device_read_bytes())
    } else {
        None
    };
    // Writes never panic: a parent that is gone (EPIPE) must not stop the cleanup below.
    let said = match &result {
        Ok(()) => say(&json!({ "ready": notes }).to_string()),
        Err(e) => say(&json!({ "error": e.to_string() }).to_string()),
    };
    if result.is_ok() && said {
        while !stopped(&ctx) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let stopped_early = (!ctx.stop.load(Ordering::SeqCst) && TERMINATED.load(Ordering::SeqCst))
        .then(|| "it received SIGTERM".to_string());
    ctx.stop.store(true, Ordering::SeqCst);
    let threads: Vec<ThreadReport> = handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| ThreadReport {
                error: Some("load thread panicked".into()),
                ..Default::default()
            })
        })
        .collect();
    let (device_read_bytes, device_read_counter) = match device0 {
        None => (None, None),
        Some(Ok(d0)) => match storage::device_read_bytes() {
            Ok(d1) => (
                Some(d1.saturating_sub(d0)),
                Some(storage::DEVICE_READ_COUNTER.to_string()),
            ),
            Err(e) => (None, Some(e.to_string())),
        },
        Some(Err(e)) => (None, Some(e.to_string())),
    };
    // The folder goes too when this was its last load (the parent removes it otherwise). Only a
    // file load has a folder of its own: any other load's `dir` is the base (the user's
    // --load-dir), which is never touched.
    if spec.kind.uses_files() {
        for f in spec.files() {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::fs::remove_file(spec.dir.join(MARKER));
        if std::fs::remove_dir(&spec.dir).is_err() {
            let _ = std::fs::write(spec.dir.join(MARKER), b"osgauge load files\n");
        }
    }
    let report = LoadReport {
        threads,
        notes,
        device_read_bytes,
        device_read_counter,
        stopped_early,
    };
    say(&serde_json::to_string(&report).unwrap_or_else(|_| "{}".into()));
    if result.is_ok() { 0 } else { 1 }
}

/// One line to the parent; false when it cannot be written (the parent is gone).
fn say(line: &str) -> bool {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}").and_then(|_| out.flush()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x_load_ramps_average_half_over_any_whole_ramp() {
        for d_ms in [100u64, 300, 1000, 3000, 10_000, 60_000] {
            let n = x_load_steps(d_ms * MS);
            assert!((1..=101).contains(&n));
            let total: u64 = (0..n).map(|k| x_load_work_ns(k, n)).sum();
            let pct = 100.0 * total as f64 / (n * 100 * MS) as f64;
            assert!((pct - 50.0).abs() < 1e-6, "{d_ms} ms: {pct} %");
            // A ramp: rising within a cycle, from below 10 % to above 90 % when it has ≥ 10 steps.
            if n >= 10 {
                assert!(x_load_work_ns(0, n) < 10 * MS && x_load_work_ns(n - 1, n) > 90 * MS);
            }
            assert_eq!(x_load_work_ns(n, n), x_load_work_ns(0, n));
        }
    }

    fn spec(kind: LoadKind) -> LoadSpec {
        LoadSpec {
            kind,
            threads: 1,
            cpus: None,
            nice: None,
            dir: PathBuf::from("."),
            tag: "t".into(),
            file_bytes: 8 << 20,
            io_rate_bps: None,
            fsync: false,
            mem_bytes: 0,
            work: Work {
                mode: super::super::work::WorkMode::Fixed,
                loops_per_us: 100.0,
            },
            video_hz: 60.0,
            duration_ns: 1_000 * MS,
            parent_pid: 1,
        }
    }

    fn thread(role: &str, ops: u64, cpu_ms: u64) -> ThreadReport {
        ThreadReport {
            role: role.into(),
            cpu_ns: cpu_ms * MS,
            wall_ns: 1_000 * MS,
            ops,
            ..Default::default()
        }
    }

    #[test]
    fn a_load_that_failed_or_did_not_run_is_an_error() {
        let ok = LoadReport {
            threads: vec![thread("x", 10, 500)],
            ..Default::default()
        };
        let (facts, warnings) = check_report(&spec(LoadKind::X), &ok).unwrap();
        assert_eq!(facts["load_achieved_cpu_pct"], json!(50.0));
        assert!(warnings.is_empty(), "{warnings:?}");
        // 20 % against a 50 % target: recorded and warned about.
        let low = LoadReport {
            threads: vec![thread("x", 10, 200)],
            ..Default::default()
        };
        let (_, warnings) = check_report(&spec(LoadKind::X), &low).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        // An error, a panic, no CPU, no bytes, an early end: each fails the load.
        let mut err = thread("write", 0, 0);
        err.error = Some("No such file or directory".into());
        for (kind, r) in [
            (
                LoadKind::Write,
                LoadReport {
                    threads: vec![err],
                    ..Default::default()
                },
            ),
            (
                LoadKind::Burn,
                LoadReport {
                    threads: vec![thread("burn0", 3, 10)],
                    ..Default::default()
                },
            ),
            (
                LoadKind::Burn,
                LoadReport {
                    threads: vec![thread("burn0", 0, 900)],
                    ..Default::default()
                },
            ),
            (
                LoadKind::Write,
                LoadReport {
                    threads: vec![thread("write", 1000, 0)],
                    ..Default::default()
                },
            ),
            (LoadKind::Burn, LoadReport::default()),
            (
                LoadKind::Burn,
                LoadReport {
                    threads: vec![thread("burn0", 1000, 1000)],
                    stopped_early: Some("it received SIGTERM".into()),
                    ..Default::default()
                },
            ),
        ] {
            assert!(check_report(&spec(kind), &r).is_err(), "{kind:?} {r:?}");
        }
        // A read load served from memory is flagged.
        let r = LoadReport {
            threads: vec![thread("read", 100 << 20, 100)],
            device_read_bytes: Some(1 << 20),
            ..Default::default()
        };
        let (facts, warnings) = check_report(&spec(LoadKind::Read), &r).unwrap();
        assert_eq!(facts["load_read_from_device_pct"], json!(1.0));
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn stale_folders_of_dead_processes_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        // A pid that cannot be alive (above Linux's pid_max limit of 2^22).
        let dead = base.join("4194399");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(MARKER), b"").unwrap();
        std::fs::write(dead.join("osgauge-load-4194399-0-read.tmp"), b"x").unwrap();
        // Not ours: a numbered folder with other content and no marker.
        let foreign = base.join("4194398");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), b"x").unwrap();
        let old = base.join("osgauge-load-4194399-1-write.tmp");
        std::fs::write(&old, b"x").unwrap();
        let folder = LoadFolder::create(base).unwrap();
        let removed = remove_stale(base, &[base]);
        assert!(!dead.exists() && !old.exists(), "{removed:?}");
        assert!(foreign.exists() && folder.path().exists());
        let p = folder.path().to_path_buf();
        drop(folder);
        assert!(!p.exists());
    }
}
