//! The child side of a load (`osgauge __load <spec>`): start the load threads, report ready,
//! work until told to stop, then stop every thread, delete the files and report.

use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::folder::MARKER;
use super::{
    LoadKind, LoadReport, LoadSpec, MIB, MS, ThreadReport, read_refusal, x_load_steps,
    x_load_work_ns,
};
use crate::platform::sched::{self, SchedReadback, SchedRequest};
use crate::platform::storage;
use crate::platform::{clock, fs};
use crate::workload::task::{Task, run_task};
use crate::workload::work::{self, Work, burn_loops};

/// Poll interval of the child's bounded waits.
const POLL: Duration = Duration::from_millis(20);

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

/// What every thread of a load process is called: "load compile", "load burn".
pub fn load_thread_name(spec: &LoadSpec) -> String {
    format!("load {}", spec.kind.name())
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
    let name = load_thread_name(&ctx.spec);
    std::thread::spawn(move || {
        crate::platform::set_thread_name(&name);
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
        work::WorkMode::Cputime => "timed by the thread CPU clock",
        work::WorkMode::Fixed => "as calibrated loops",
    }
}

/// Body of `osgauge __load <spec>`; returns the exit code. Phases: set up (signals, spec, parent
/// watch), start every load thread and wait until each runs, say ready (or the error), work until
/// stopped, then join the threads, count the device reads, delete the files and report.
pub fn child_main(spec_json: &str) -> i32 {
    let (spec, ctx) = match setup(spec_json) {
        Ok(v) => v,
        Err(code) => return code,
    };
    // A trace or a spike's attribution names the load ("load compile"), not "osgauge".
    crate::platform::set_thread_name(&load_thread_name(&spec));
    watch_stdin(&ctx);
    let mut notes = Vec::new();
    let mut handles = Vec::new();
    let result = start_workers(&ctx, &mut notes, &mut handles);
    let device0 = spec.kind.reads_storage().then(storage::device_read_bytes);
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
    let threads = join_workers(handles);
    let (device_read_bytes, device_read_counter) = device_reads(device0);
    remove_files(&spec);
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

/// Silence panics, take the signals, parse the spec and end with the parent; Err(exit code).
fn setup(spec_json: &str) -> Result<(LoadSpec, Arc<Ctx>), i32> {
    // Errors and panics of load threads go into the report, never as a dump on the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    // Ctrl-C and hangup reach the whole process group; the parent decides when the load stops.
    let _ = crate::platform::helper_child_signals(&TERMINATED);
    let spec: LoadSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            say(&json!({ "error": format!("bad spec: {e}") }).to_string());
            return Err(2);
        }
    };
    if let Err(e) = crate::platform::terminate_with_parent(spec.parent_pid)
        && e.kind() != io::ErrorKind::Unsupported
    {
        return Err(1);
    }
    let ctx = Arc::new(Ctx {
        stop: AtomicBool::new(false),
        spec: spec.clone(),
    });
    Ok((spec, ctx))
}

/// "stop" or EOF on stdin (the parent is gone or dropped its guard) stops the load — also while
/// it is still preparing.
fn watch_stdin(ctx: &Arc<Ctx>) {
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

/// Start the spec's load threads (into `handles`, their notes into `notes`) and wait until every
/// one has started its loop with its scheduling read back.
fn start_workers(
    ctx: &Arc<Ctx>,
    notes: &mut Vec<String>,
    handles: &mut Vec<std::thread::JoinHandle<ThreadReport>>,
) -> io::Result<()> {
    let (ready_tx, ready_rx) = mpsc::channel();
    spawn_workers(ctx, &ready_tx, notes, handles)?;
    wait_ready(ctx, &ready_rx, handles.len())
}

/// Spawn the threads of the spec's load kind.
fn spawn_workers(
    ctx: &Arc<Ctx>,
    ready_tx: &ReadyTx,
    notes: &mut Vec<String>,
    handles: &mut Vec<std::thread::JoinHandle<ThreadReport>>,
) -> io::Result<()> {
    let spec = &ctx.spec;
    let k = spec.kind;
    if matches!(k, LoadKind::Burn | LoadKind::Compile) {
        for i in 0..spec.threads.max(1) {
            handles.push(spawn_worker(ctx, &format!("burn{i}"), ready_tx, burn));
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
        handles.push(spawn_worker(ctx, "write", ready_tx, write_load));
    }
    if matches!(k, LoadKind::Read | LoadKind::Compile) {
        prepare_read_file(ctx)?;
        let method = fs::open_uncached_lenient(&spec.files()[1], false)?.method;
        notes.push(format!(
            "read: {} MiB file in {}, {method}",
            spec.file_bytes / MIB as u64,
            spec.dir.display()
        ));
        let method = method.to_string();
        handles.push(spawn_worker(ctx, "read", ready_tx, move |c, go| {
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
                ctx,
                &format!("ring{i}"),
                ready_tx,
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
        handles.push(spawn_worker(ctx, "memload", ready_tx, move |c, go| {
            memload(c, chunks, go)
        }));
    }
    if k == LoadKind::Video {
        notes.push(format!("video: work {}", work_note(&spec.work)));
        let task = Task::Video { hz: spec.video_hz };
        let work = spec.work;
        handles.push(spawn_worker(ctx, "video", ready_tx, move |c, go| {
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
        handles.push(spawn_worker(ctx, "x", ready_tx, x_load));
    }
    Ok(())
}

/// Ready = every one of the `n` workers has started its loop with its scheduling read back.
fn wait_ready(
    ctx: &Ctx,
    ready_rx: &mpsc::Receiver<Result<String, String>>,
    n: usize,
) -> io::Result<()> {
    let mut started = 0;
    while started < n {
        match ready_rx.recv_timeout(POLL) {
            Ok(Ok(_)) => started += 1,
            Ok(Err(e)) => return Err(io::Error::other(e)),
            Err(mpsc::RecvTimeoutError::Timeout) if stopped(ctx) => {
                return Err(io::Error::other("stopped while starting"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("a load thread ended before it started"));
            }
        }
    }
    Ok(())
}

/// Every thread's report (a panicked one as its error).
fn join_workers(handles: Vec<std::thread::JoinHandle<ThreadReport>>) -> Vec<ThreadReport> {
    handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| ThreadReport {
                error: Some("load thread panicked".into()),
                ..Default::default()
            })
        })
        .collect()
}

/// Bytes read from storage devices since `device0` (read loads), and the counter or why not.
fn device_reads(device0: Option<io::Result<u64>>) -> (Option<u64>, Option<String>) {
    match device0 {
        None => (None, None),
        Some(Ok(d0)) => match storage::device_read_bytes() {
            Ok(d1) => (
                Some(d1.saturating_sub(d0)),
                Some(storage::DEVICE_READ_COUNTER.to_string()),
            ),
            Err(e) => (None, Some(e.to_string())),
        },
        Some(Err(e)) => (None, Some(e.to_string())),
    }
}

/// Delete the load's files; the folder goes too when this was its last load (the parent removes
/// it otherwise). Only a file load has a folder of its own: any other load's `dir` is the base
/// (the user's --load-dir), which is never touched.
fn remove_files(spec: &LoadSpec) {
    if spec.kind.uses_files() {
        for f in spec.files() {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::fs::remove_file(spec.dir.join(MARKER));
        if std::fs::remove_dir(&spec.dir).is_err() {
            let _ = std::fs::write(spec.dir.join(MARKER), b"osgauge load files\n");
        }
    }
}

/// One line to the parent; false when it cannot be written (the parent is gone).
fn say(line: &str) -> bool {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}").and_then(|_| out.flush()).is_ok()
}
