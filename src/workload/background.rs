//! A load beside a measurement, the one way every suite runs one: the per-process load folder
//! (file loads), the load child started and running before measuring starts, then stopped,
//! verified (achieved against target; a load that failed, ended early or did not really run fails
//! the cell: its figures were not measured under that load) and reaped, its files deleted — on
//! every exit path, by the guards' drops.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::load::{self, LoadFolder, LoadKind, LoadProcess, LoadReport, LoadSpec};
use super::work::Work;
use crate::platform::fs;
use crate::record::BenchError;
use crate::timing::{MetricSpec, RunContext, RunOutput, os_err};
use crate::units::{Better, Unit};

/// How a suite's loads run (the `--load-*` options).
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Threads of the burn/ring loads; None = the CPUs the run may use ([`thread_count`]).
    pub threads: Option<usize>,
    /// CPUs every load thread is pinned to.
    pub cpus: Option<Vec<usize>>,
    /// Nice value of the load's threads.
    pub nice: Option<i32>,
    /// Base of the per-process load folder `<dir>/<pid>/` (default `<cache dir>/loads`).
    pub dir: PathBuf,
    /// Rate limit of the write load, MB/s.
    pub io_rate_mbps: Option<f64>,
    pub fsync: bool,
    /// Upper bound of the write/read file, bytes.
    pub max_file_bytes: u64,
    /// The memload buffer and how its size was chosen; None = chosen at start ([`mem_bytes`]).
    pub mem: Option<(u64, String)>,
    /// Upper bound of the memload buffer, bytes.
    pub max_mem_bytes: u64,
    /// Frame rate of the video load.
    pub video_hz: f64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            threads: None,
            cpus: None,
            nice: None,
            dir: load::default_load_base(),
            io_rate_mbps: None,
            fsync: false,
            max_file_bytes: 256 << 20,
            mem: None,
            max_mem_bytes: 1 << 30,
            video_hz: 60.0,
        }
    }
}

/// Load threads: `asked`, else the CPUs the run may use (pinning, affinity, cgroup quota).
pub fn thread_count(asked: Option<usize>, cpus: Option<&[usize]>) -> usize {
    if let Some(n) = asked {
        return n.max(1);
    }
    if let Some(c) = cpus {
        return c.len().max(1);
    }
    let by_affinity = crate::platform::allowed_cpus()
        .map(|c| c.len())
        .unwrap_or(1);
    let quota = crate::platform::sysinfo::machine()
        .cgroup
        .and_then(|c| c.cpu_limit_cpus)
        .map(|q| q.ceil().max(1.0) as usize);
    quota.map_or(by_affinity, |q| q.min(by_affinity)).max(1)
}

/// memload size: half of the available memory (256 MiB where the OS does not say), at most half
/// the cgroup limit and `max_bytes`, at least 16 MiB; and how it was chosen. Needs no swap: the
/// buffer always fits in what is free.
pub fn mem_bytes(max_bytes: u64) -> (u64, String) {
    let avail = crate::platform::sysinfo::environment().mem_available_bytes;
    let cg = crate::platform::sysinfo::machine()
        .cgroup
        .and_then(|c| c.memory_max_bytes);
    let mut size = max_bytes;
    let mut why = format!("cap {} MiB", max_bytes >> 20);
    if let Some(a) = avail {
        size = size.min(a / 2);
        why.push_str(&format!(", available {} MiB / 2", a >> 20));
    } else {
        size = size.min(256 << 20);
        why.push_str(", available memory unknown on this OS: at most 256 MiB");
    }
    if let Some(c) = cg {
        size = size.min(c / 2);
        why.push_str(&format!(", cgroup limit {} MiB / 2", c >> 20));
    }
    (size.max(16 << 20), why)
}

/// Write/read file size in `dir`: 5 % of its free space, at most `max_bytes`, at least 8 MiB.
pub fn file_bytes_in(dir: &Path, max_bytes: u64) -> u64 {
    let free = fs::free_bytes(dir).unwrap_or(0);
    let mib = 1u64 << 20;
    ((free / 20).min(max_bytes) / mib * mib).max(8 * mib)
}

/// The metric a cell under a load adds: what the load's threads really used.
pub const LOAD_CPU: MetricSpec = MetricSpec {
    name: "load_cpu",
    unit: Unit::Percent,
    better: Better::Neutral,
    description: "CPU time the load's threads really used, % of one CPU per thread",
};

/// A load running beside a measurement (nothing for `none`). Dropping it kills and reaps the
/// child and deletes its files, then removes the folder (fields drop in this order).
pub struct BackgroundLoad {
    process: Option<LoadProcess>,
    spec: Option<LoadSpec>,
    folder: Option<LoadFolder>,
}

impl BackgroundLoad {
    /// Create the load folder (file loads; its path in the facts), start the load child and
    /// return once every load thread runs, its scheduling read back. `work` is the calibrated
    /// work of the measuring side; `dur_ns` the cell's measuring time (the x load's ramp spans it).
    pub fn start(
        kind: LoadKind,
        o: &LoadOptions,
        ctx: &RunContext,
        out: &mut RunOutput,
        work: Work,
        dur_ns: u64,
    ) -> Result<BackgroundLoad, BenchError> {
        let mut b = BackgroundLoad {
            process: None,
            spec: None,
            folder: None,
        };
        if kind == LoadKind::None {
            return Ok(b);
        }
        if kind.uses_files() {
            let f = LoadFolder::create(&o.dir).map_err(|e| {
                BenchError::failed(format!("load folder under {}: {e}", o.dir.display()))
            })?;
            if kind.reads_storage()
                && let Some(why) = load::read_refusal(f.path())
            {
                return Err(BenchError::failed(why));
            }
            out.facts
                .insert("load_dir".into(), json!(f.path().display().to_string()));
            b.folder = Some(f);
        }
        let (mem_bytes, mem_why) = if kind == LoadKind::Memload {
            o.mem.clone().unwrap_or_else(|| mem_bytes(o.max_mem_bytes))
        } else {
            (0, String::new())
        };
        if kind == LoadKind::Memload {
            out.facts.insert("memload_size_rule".into(), json!(mem_why));
        }
        let folder = b.folder.as_ref().map(|f| f.path().to_path_buf());
        let sp = LoadSpec {
            kind,
            threads: thread_count(o.threads, o.cpus.as_deref()),
            cpus: o.cpus.clone(),
            nice: o.nice,
            dir: folder.clone().unwrap_or_else(|| o.dir.clone()),
            tag: format!("osgauge-load-{}-{}", std::process::id(), ctx.run_index),
            file_bytes: match &folder {
                Some(f) => file_bytes_in(f, o.max_file_bytes),
                None => 0,
            },
            io_rate_bps: o.io_rate_mbps.map(|r| (r * 1e6).max(1.0) as u64),
            fsync: o.fsync,
            mem_bytes,
            work: load::load_work(kind, work),
            video_hz: o.video_hz,
            duration_ns: dur_ns,
            parent_pid: std::process::id(),
        };
        out.facts.insert("load_threads".into(), json!(sp.threads));
        out.facts
            .insert("load_target_pct".into(), json!(sp.target_pct()));
        let exe = crate::platform::process::osgauge_exe()
            .map_err(|e| BenchError::os("current_exe", e))?;
        // Returns once every load thread runs (its scheduling read back): no settling sleep.
        let p = LoadProcess::start(&exe, &sp, ctx)?;
        out.facts.insert("load_notes".into(), json!(p.ready_notes));
        b.process = Some(p);
        b.spec = Some(sp);
        Ok(b)
    }

    /// Stop the load and check it really ran (see [`load::check_report`]): its facts and
    /// warnings go into `out`; a load that failed, ended early or did not run is the error.
    /// The folder goes after the child. None for the `none` load.
    pub fn stop(
        mut self,
        ctx: &RunContext,
        out: &mut RunOutput,
    ) -> Result<Option<LoadReport>, BenchError> {
        let r = match (self.process.take(), &self.spec) {
            (Some(p), Some(sp)) => {
                let r = p.stop(ctx.deadline).map_err(BenchError::failed)?;
                let (facts, warnings) = load::check_report(sp, &r).map_err(BenchError::failed)?;
                out.facts.extend(facts);
                out.warnings.extend(warnings);
                Some(r)
            }
            _ => None,
        };
        drop(self.folder.take());
        Ok(r)
    }
}

/// The load's figures in a cell: `load_cpu` (its threads' CPU, % of one CPU per thread), the
/// scheduling and affinity its first thread read back, and the operations of every thread.
pub fn report_figures(r: &LoadReport, mut out: RunOutput) -> RunOutput {
    let (cpu, wall): (u64, u64) = r
        .threads
        .iter()
        .fold((0, 0), |(c, w), t| (c + t.cpu_ns, w + t.wall_ns));
    out = out.metric("load_cpu", vec![100.0 * cpu as f64 / wall.max(1) as f64]);
    if let Some(t) = r.threads.first() {
        out.facts.insert(
            "load_sched".into(),
            serde_json::to_value(&t.sched).unwrap_or_default(),
        );
        out.facts.insert("load_affinity".into(), json!(t.affinity));
    }
    let ops: Map<String, Value> = r
        .threads
        .iter()
        .map(|t| (t.role.clone(), json!(t.ops)))
        .collect();
    out.facts.insert("load_ops".into(), Value::Object(ops));
    out
}

/// The work calibration of a suite that measures no task of its own (the latency suite), for
/// its loads: made in a thread placed as the load threads are (their CPUs and nice), cached in
/// `<cache dir>/load-calibration.json` with that placement in its key, and checked by a quick
/// measurement when cached (see [`work::calibrate`](super::work::calibrate)). Stopped by Ctrl-C
/// and the cell's deadline. Returns the work; the calibration's facts and warning go into `out`.
pub fn calibrate_load_work(
    o: &LoadOptions,
    ctx: &RunContext,
    out: &mut RunOutput,
) -> Result<Work, BenchError> {
    use super::work::{self, CalibrationError, WorkMode};
    let stop = || ctx.check().is_err();
    let cache = work::cache_dir().map(|d| d.join("load-calibration.json"));
    let c = std::thread::scope(|sc| {
        let thread = std::thread::Builder::new().name("osgauge-calib".into());
        let handle = thread.spawn_scoped(sc, || {
            if let Some(c) = &o.cpus {
                crate::platform::sched::set_thread_affinity(c)
                    .map_err(|e| os_err("set affinity", e))?;
            }
            if o.nice.is_some() {
                crate::platform::sched::apply_thread(&crate::platform::sched::SchedRequest {
                    nice: o.nice,
                    ..Default::default()
                })
                .map_err(|e| os_err("set nice", e))?;
            }
            let key = format!(
                "{} | load threads: cpus {:?} nice {:?}",
                work::machine_key(),
                o.cpus,
                o.nice
            );
            work::calibrate(false, cache.as_deref(), &key, &stop).map_err(|e| match e {
                CalibrationError::Stopped => {
                    ctx.check().err().unwrap_or_else(BenchError::interrupted)
                }
                CalibrationError::Failed(m) => BenchError::failed(m),
            })
        });
        match handle {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(BenchError::failed("calibration thread panicked"))),
            Err(e) => Err(BenchError::os("spawn the calibration thread", e)),
        }
    })?;
    out.facts
        .insert("load_work_loops_per_us".into(), json!(c.loops_per_us));
    out.facts
        .insert("load_work_calibration_cached".into(), json!(c.cached));
    out.facts
        .insert("load_work_calibration_key".into(), json!(c.key));
    out.warnings.extend(c.warning);
    Ok(Work {
        mode: WorkMode::Fixed,
        loops_per_us: c.loops_per_us,
    })
}

/// Check, before any cell runs, that the load folder's base can hold the loads asked: a base the
/// user named (`user_gave`) must be a directory (a file load would otherwise fail cell by cell and
/// the run still exit 0), and a read load must not sit on a memory file system. The message is
/// the usage error.
pub fn check_load_dir(base: &Path, user_gave: bool, loads: &[LoadKind]) -> Result<(), String> {
    if user_gave && loads.iter().any(|l| l.uses_files()) && !base.is_dir() {
        return Err(format!(
            "--load-dir {}: {}",
            base.display(),
            if base.exists() {
                "not a directory"
            } else {
                "no such directory"
            }
        ));
    }
    if loads.iter().any(|l| l.reads_storage())
        && let Some(existing) = base.ancestors().find(|d| d.is_dir())
        && let Some(why) = load::read_refusal(existing)
    {
        return Err(why);
    }
    Ok(())
}
