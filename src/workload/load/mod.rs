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

mod child;
mod folder;
mod process;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use child::child_main;
pub use folder::{LoadFolder, default_load_base, remove_stale};
pub use process::LoadProcess;

use crate::platform::sched::SchedReadback;
use crate::platform::storage;
use crate::workload::task::Task;
use crate::workload::work::Work;

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
    if matches!(kind, LoadKind::Video | LoadKind::X) && crate::workload::work::cpu_clock_is_fine() {
        Work {
            mode: crate::workload::work::WorkMode::Cputime,
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
        let (cpu_pct, cpu_load) = checked_thread(name, t)?;
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
        cpu_target_figures(spec, target, &cpu_pcts, &mut facts, &mut warnings);
    }
    if spec.kind.reads_storage() {
        storage_figures(name, r, read_bytes, &mut facts, &mut warnings);
    }
    Ok((facts, warnings))
}

/// One load thread checked against its floors ([`check_report`]): its error, then at least one
/// operation (an I/O thread: 1 MiB), then for a CPU load thread (neither I/O nor ring) at least
/// [`CPU_FLOOR_PCT`]. Ok: its CPU % over its lifetime and whether it is a CPU load thread.
fn checked_thread(name: &str, t: &ThreadReport) -> Result<(f64, bool), String> {
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
    Ok((cpu_pct, cpu_load))
}

/// A load with a CPU target: the mean CPU % of its CPU threads (`cpu_pcts`, not empty) as
/// `load_achieved_cpu_pct`, and for a demand-driven load (x, video) a warning when it is more
/// than 10 points from `target`.
fn cpu_target_figures(
    spec: &LoadSpec,
    target: f64,
    cpu_pcts: &[f64],
    facts: &mut Map<String, Value>,
    warnings: &mut Vec<String>,
) {
    let name = spec.kind.name();
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

/// A load that reads storage: the bytes it read (`read_bytes`) and those its device counter
/// saw (with the counter's name), their share as `load_read_from_device_pct`, and a warning when
/// less than half came from the device (the rest was served from memory).
fn storage_figures(
    name: &str,
    r: &LoadReport,
    read_bytes: u64,
    facts: &mut Map<String, Value>,
    warnings: &mut Vec<String>,
) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use folder::MARKER;

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
                mode: crate::workload::work::WorkMode::Fixed,
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

    /// Which floor a thread is held to: I/O threads 1 MiB and no CPU floor, ring members one
    /// pass and no CPU floor, every other thread one operation and [`CPU_FLOOR_PCT`].
    #[test]
    fn each_thread_is_held_to_its_own_floor() {
        assert_eq!(
            checked_thread("l", &thread("read", MIB as u64, 0)),
            Ok((0.0, false))
        );
        assert!(checked_thread("l", &thread("write", MIB as u64 - 1, 500)).is_err());
        assert_eq!(
            checked_thread("l", &thread("ring1", 1, 0)),
            Ok((0.0, false))
        );
        assert_eq!(
            checked_thread("l", &thread("burn0", 1, 20)),
            Ok((2.0, true))
        );
        assert!(checked_thread("l", &thread("burn0", 1, 19)).is_err());
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
