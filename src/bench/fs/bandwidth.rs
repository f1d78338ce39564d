//! `fs/seq_write_tN`, `fs/seq_read_tN`: seed 003 §5.5's disk bandwidth (iozone `-c -t N -r 4M
//! -i 0 -i 1`, scaled to this machine): N threads each write (or read) their own file
//! sequentially in 4 MiB blocks, released by a barrier, with the cache bypassed (`mb_per_s`) and
//! buffered (`mb_per_s_buffered`); fsync and close are inside the write time. CPU cost: the shared
//! `crate::cpucost` (system-wide CPU minus an idle baseline), and the I/O threads' own CPU (their
//! thread CPU clocks, barrier to end, summed: what one thread of an application doing this I/O
//! carries itself — a serial stage's cost).

use std::io::{Read, Write};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{DeviceCheck, FsOptions, MIB, io_err, size_name, workdir, write_file};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::cpucost::{CpuCost, CpuMeter};
use crate::platform::fs::{self as pfs, AlignedBuf};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const BLOCK: u64 = 4 * MIB;
pub const DEFAULT_THREADS: [usize; 3] = [1, 2, 3];
pub const DEFAULT_BYTES: u64 = 64 * MIB;
pub const QUICK_BYTES: u64 = 16 * MIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Write,
    Read,
}

pub fn benchmarks(o: &FsOptions) -> Vec<Box<dyn Benchmark>> {
    let threads = o
        .threads
        .clone()
        .unwrap_or_else(|| DEFAULT_THREADS.to_vec());
    let mut v: Vec<Box<dyn Benchmark>> = Vec::new();
    for d in [Dir::Write, Dir::Read] {
        for &t in &threads {
            v.push(Box::new(Bandwidth::new(o, d, t)));
        }
    }
    v
}

pub struct Bandwidth {
    info: Info,
    parent: std::path::PathBuf,
    dir: Dir,
    threads: usize,
    bytes_per_thread: u64,
    idle: Duration,
    /// Extend a CPU-cost window below the counters' resolution over more passes (not at the
    /// quick preset: ~1 GB more written per window on a 2-CPU VM).
    extend_cost: bool,
    /// Each mode's last timed pass, seconds (cache bypassed, buffered): where windows are not
    /// extended, a pass too short to reach the counters' resolution is timed without the CPU
    /// meter the next time ([`crate::cpucost::cannot_reach_floor`]).
    last_pass_s: std::sync::Mutex<[Option<f64>; 2]>,
}

/// `fs/seq_write_tN` only: the writing threads' own CPU in their write calls, buffered.
pub const NOSYNC: &str = "thread_cpu_s_per_gb_buffered_nosync";

fn metrics(dir: Dir) -> Vec<MetricSpec> {
    let mut v = vec![
        MetricSpec {
            name: "mb_per_s",
            unit: Unit::MegabytesPerSecond,
            better: Better::Higher,
            description: "MB/s (10^6 bytes per second), all threads together, cache bypassed",
        },
        MetricSpec {
            name: "cpu_s_per_gb",
            unit: Unit::CpuSecondsPerGb,
            better: Better::Lower,
            description: "CPU-seconds per GB (10^9 bytes), system-wide net of the idle \
                          baseline, cache bypassed",
        },
        MetricSpec {
            name: "pct_all_cpus",
            unit: Unit::Percent,
            better: Better::Lower,
            description: "net system CPU as % of all CPUs during the cache-bypassed test",
        },
        MetricSpec {
            name: "mb_per_s_buffered",
            unit: Unit::MegabytesPerSecond,
            better: Better::Higher,
            description: "MB/s (10^6 bytes per second), all threads together, through the OS \
                          cache (write: fsync+close included; read: the file's cache dropped \
                          first)",
        },
        MetricSpec {
            name: "cpu_s_per_gb_buffered",
            unit: Unit::CpuSecondsPerGb,
            better: Better::Lower,
            description: "CPU-seconds per GB (10^9 bytes), system-wide net of the idle \
                          baseline, buffered",
        },
        MetricSpec {
            name: "thread_cpu_s_per_gb",
            unit: Unit::CpuSecondsPerGb,
            better: Better::Lower,
            description: "the I/O threads' own CPU-seconds per GB (10^9 bytes), cache bypassed: \
                          each thread's CPU clock from the barrier's release to its file closed \
                          (write or read, fsync, close), summed over threads, over the timed \
                          pass (kernel work done in other threads — writeback, interrupts — is \
                          not in it)",
        },
        MetricSpec {
            name: "thread_cpu_s_per_gb_buffered",
            unit: Unit::CpuSecondsPerGb,
            better: Better::Lower,
            description: "the I/O threads' own CPU-seconds per GB (10^9 bytes), through the OS \
                          cache: as thread_cpu_s_per_gb (the copy into or out of the cache is \
                          the thread's; writeback by kernel threads is not)",
        },
    ];
    if dir == Dir::Write {
        v.push(MetricSpec {
            name: NOSYNC,
            unit: Unit::CpuSecondsPerGb,
            better: Better::Lower,
            description: "the writing threads' own CPU-seconds per GB (10^9 bytes) in their \
                          write calls only, through the OS cache: from the barrier's release to \
                          the last write returned, the fsync and close after it not included — \
                          what a streaming writer that leaves the writeback to the OS carries on \
                          its own thread (copy into the cache, page allocation, dirty \
                          throttling's CPU)",
        });
    }
    v
}

impl Bandwidth {
    pub fn new(o: &FsOptions, dir: Dir, threads: usize) -> Self {
        let (verb, what) = match dir {
            Dir::Write => ("write", "Sequential write"),
            Dir::Read => ("read", "Sequential read"),
        };
        let want = o
            .max_size
            .unwrap_or(if o.quick { QUICK_BYTES } else { DEFAULT_BYTES });
        Bandwidth {
            info: Info {
                id: format!("fs/seq_{verb}_t{threads}"),
                suite: "fs",
                title: format!("{what} bandwidth, {threads} thread(s), 4 MiB blocks"),
                method: format!(
                    "Seed 003 §5.5 (iozone -c -t N -r 4M -i 0 -i 1, scaled): {threads} thread(s), \
                     each with its own file of up to {} (less if half the free space minus 1 GiB \
                     is smaller), released by a barrier, {verb} it sequentially in 4 MiB blocks. \
                     Twice per run: with the platform's one cache bypass (mb_per_s) and through \
                     the OS cache (mb_per_s_buffered). {} Time = the first thread's start at \
                     the barrier's release to the last thread's file closed, each read by the \
                     thread itself. CPU cost: {}; where windows are not extended (the quick \
                     preset), a mode whose last pass took under 1/{} of {} counter steps of one \
                     CPU is timed without the meter and its idle baselines, its system-wide \
                     figures not measured with that reason (fact cpu_direct/cpu_buffered: \
                     not_run). The I/O threads' own CPU \
                     (thread_cpu_s_per_gb[_buffered]): each thread's CPU clock ({}) from the \
                     barrier's release to its file closed, summed over threads, over the timed \
                     pass; not measured when under {} steps of that clock per thread.{}",
                    size_name(want),
                    match dir {
                        Dir::Write =>
                            "The write time INCLUDES fsync and close of every file (iozone -c -e).",
                        Dir::Read =>
                            "Files are written and fsynced before the timed read; for the \
                             buffered read their cached pages are dropped first (Linux \
                             posix_fadvise; elsewhere not measured).",
                    },
                    crate::cpucost::method(),
                    crate::cpucost::FORECAST_MARGIN,
                    crate::cpucost::MIN_RESOLUTION_STEPS,
                    crate::platform::clock::CPU_CLOCK_DESCRIPTION,
                    crate::platform::clock::MIN_THREAD_CPU_STEPS,
                    match dir {
                        Dir::Write => format!(
                            " The same clock read as the last write returns gives {NOSYNC} \
                             (buffered): the write calls without the fsync and close."
                        ),
                        Dir::Read => String::new(),
                    },
                ),
                metrics: metrics(dir),
            },
            parent: o.parent(),
            dir,
            threads,
            bytes_per_thread: want,
            idle: Duration::from_millis(if o.quick { 30 } else { 200 }),
            extend_cost: !o.quick,
            last_pass_s: std::sync::Mutex::new([None; 2]),
        }
    }

    /// Each thread's file size that fits in the free space (whole blocks), and the warning when
    /// it is smaller than asked.
    fn fit(&self) -> Result<(u64, Option<String>), BenchError> {
        super::workdir::refuse_memory_backed(&self.parent)?;
        let n = self.threads as u64;
        let per = (workdir::budget(&self.parent, self.bytes_per_thread * n)? / n) / BLOCK * BLOCK;
        if per == 0 {
            return Err(BenchError::failed(format!(
                "not enough free space in {} for one 4 MiB block per thread",
                self.parent.display()
            )));
        }
        // Said, not silently applied: the file size the free space allows.
        let reduced = (per < self.bytes_per_thread / BLOCK * BLOCK).then(|| {
            format!(
                "file size reduced to {} per thread (asked {}): half the free space in {} less a \
                 1 GiB margin",
                size_name(per),
                size_name(self.bytes_per_thread),
                self.parent.display()
            )
        });
        Ok((per, reduced))
    }

    /// The run's work directory and files (`per` bytes each, written first for the read
    /// benchmark), and whether the cache can be bypassed there: where it cannot, the bypassed
    /// figures are not measured, with the reason (a read benchmark that could not drop the cache
    /// either is unsupported).
    fn setup(&self, ctx: &RunContext, per: u64) -> Result<Setup, BenchError> {
        let n = self.threads as u64;
        let (wd, out, check) = workdir::open_measured(&self.parent)?;
        let mut out = out
            .fact("bytes_per_thread", per)
            .fact("bytes_total", per * n);
        let files: Vec<_> = (0..self.threads)
            .map(|i| wd.file(&format!("bw{i}")))
            .collect();
        if self.dir == Dir::Read {
            for f in &files {
                write_file(ctx, f, per)?;
            }
        }
        let probe = wd.file("probe");
        std::fs::File::create(&probe).map_err(|e| io_err("create", &probe, e))?;
        let direct_ok = match pfs::open_uncached(&probe, true) {
            Ok(u) => {
                out = out.fact("bypass_method", u.method);
                true
            }
            // No cache bypass here: the direct figures are not measured, with the reason; the
            // buffered ones still are where they can be.
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                if self.dir == Dir::Read && !pfs::CAN_DROP_FILE_CACHE {
                    return Err(BenchError::unsupported(e.to_string()));
                }
                let why = e.to_string();
                out = out
                    .not_measured("mb_per_s", why.clone())
                    .not_measured("cpu_s_per_gb", why.clone())
                    .not_measured("thread_cpu_s_per_gb", why.clone())
                    .not_measured("pct_all_cpus", why);
                false
            }
            Err(e) => return Err(io_err("open", &probe, e)),
        };
        Ok(Setup {
            wd,
            out,
            check,
            files,
            direct_ok,
        })
    }

    /// One mode, cache bypassed (`direct`) or buffered: its timed pass (a bypassed read the
    /// device counter did not see is not measured, said), then its CPU-cost window; its figures
    /// added to `out`.
    fn one_mode(
        &self,
        ctx: &RunContext,
        files: &[std::path::PathBuf],
        per: u64,
        direct: bool,
        check: &Result<(), String>,
        mut out: RunOutput,
    ) -> Result<RunOutput, BenchError> {
        let (rate, cpu, thread) = if direct {
            ("mb_per_s", "cpu_s_per_gb", "thread_cpu_s_per_gb")
        } else {
            (
                "mb_per_s_buffered",
                "cpu_s_per_gb_buffered",
                "thread_cpu_s_per_gb_buffered",
            )
        };
        if !direct && self.dir == Dir::Read && !pfs::CAN_DROP_FILE_CACHE {
            let why = "not measured: this OS cannot drop one file's cached pages, so a \
                       buffered re-read would come from memory";
            return Ok(out
                .not_measured(rate, why)
                .not_measured(cpu, why)
                .not_measured(thread, why));
        }
        let dev = DeviceCheck::start();
        let skipped = self.meter_skipped(direct);
        let (pass, meter) = self.pass(ctx, files, per, direct, skipped.is_none())?;
        let (bytes, t) = (pass.bytes, pass.wall_s);
        if self.dir == Dir::Read
            && direct
            && let (Ok(()), Some(d)) = (check, dev.bytes())
            && d < bytes / 2
        {
            let why = format!(
                "served from memory: the device counter saw {d} of {bytes} bytes read with \
                 the cache bypassed"
            );
            return Ok(out
                .not_measured(rate, why.clone())
                .not_measured(cpu, why.clone())
                .not_measured(thread, why.clone())
                .not_measured("pct_all_cpus", why));
        }
        out = out.metric(rate, vec![bytes as f64 / t / 1e6]);
        out = match pass.thread_cpu_s_per_gb(&pass.thread_cpu_ns, self.threads) {
            Ok(v) => out.metric(thread, vec![v]),
            Err(why) => out.not_measured(thread, why),
        };
        if !direct && self.dir == Dir::Write {
            out = match pass.thread_cpu_s_per_gb(&pass.calls_cpu_ns, self.threads) {
                Ok(v) => out.metric(NOSYNC, vec![v]),
                Err(why) => out.not_measured(NOSYNC, why),
            };
        }
        let mode = if direct { "direct" } else { "buffered" };
        if let Some(why) = skipped {
            let why = format!("{why}; `osgauge micro {}` repeats the passes", self.info.id);
            out = out
                .fact(
                    &format!("cpu_{mode}"),
                    serde_json::json!({ "not_run": why }),
                )
                .not_measured(cpu, why.clone());
            if direct {
                out = out.not_measured("pct_all_cpus", why);
            }
            return Ok(out);
        }
        let meter = meter.expect("the pass is metered unless its window was skipped");
        let (cost, cost_bytes, passes) = self.cost(ctx, files, per, direct, bytes, meter)?;
        out = out
            .fact(&format!("cpu_cost_passes_{mode}"), passes as u64)
            .fact(&format!("cpu_cost_bytes_{mode}"), cost_bytes);
        Ok(self.cost_figures(out, direct, cpu, cost, cost_bytes))
    }

    /// One mode's CPU cost on `out`: `cpu` per GB (and, cache bypassed, `pct_all_cpus` and the
    /// process's CPU) with the cost's facts and warning, or not measured with the reason.
    fn cost_figures(
        &self,
        mut out: RunOutput,
        direct: bool,
        cpu: &'static str,
        cost: std::io::Result<CpuCost>,
        cost_bytes: u64,
    ) -> RunOutput {
        let mode = if direct { "direct" } else { "buffered" };
        match cost {
            Ok(c) => {
                let quick_below = !self.extend_cost
                    && !c.baseline_busy()
                    && c.baselines_differ().is_none()
                    && c.below_resolution();
                // Both idle baselines, this process's CPU and the checks, per run.
                out = out.fact(&format!("cpu_{mode}"), c.facts(0.0));
                match c.checked_cpu_s_per_gb(cost_bytes) {
                    Ok(v) => {
                        if let Some(flag) = c.unexplained(0.0) {
                            out.warnings
                                .push(format!("{}: {cpu}: {flag}", self.info.id));
                        }
                        out = out.metric(cpu, vec![v]);
                        if direct {
                            out = out.metric("pct_all_cpus", vec![c.pct_all_cpus()]);
                        }
                    }
                    Err(mut why) => {
                        if quick_below {
                            why.push_str(&format!(
                                "; the quick preset does not repeat file passes for the CPU \
                                 cost, `osgauge micro {}` does",
                                self.info.id
                            ));
                        }
                        out = out.not_measured(cpu, why.clone());
                        if direct {
                            out = out.not_measured("pct_all_cpus", why);
                        }
                    }
                }
                if direct {
                    out = out.fact("process_cpu_s", c.process_cpu_s);
                }
            }
            Err(e) => {
                let why = format!("CPU counters unavailable: {e}");
                out = out.not_measured(cpu, why.clone());
                if direct {
                    out = out.not_measured("pct_all_cpus", why);
                }
            }
        }
        out
    }

    /// The timed pass: the threads once, with the CPU meter's window (when `metered`) started at
    /// the barrier's release; returns the pass and the meter — still running, for
    /// [`Self::cost`].
    fn pass(
        &self,
        ctx: &RunContext,
        files: &[std::path::PathBuf],
        bytes: u64,
        direct: bool,
        metered: bool,
    ) -> Result<(Pass, Option<std::io::Result<CpuMeter>>), BenchError> {
        ctx.check()?;
        let mut meter = metered.then(|| CpuMeter::start(self.idle));
        let pass = self.threads_once(files, bytes, direct, || {
            if let Some(Ok(m)) = meter.as_mut() {
                let _ = m.restart();
            }
        })?;
        if let Ok(mut last) = self.last_pass_s.lock() {
            last[usize::from(!direct)] = Some(pass.wall_s);
        }
        Ok((pass, meter))
    }

    /// Each mode's last timed pass, seconds (cache bypassed, buffered).
    #[cfg(test)]
    pub fn last_pass_s(&self) -> [Option<f64>; 2] {
        *self.last_pass_s.lock().unwrap()
    }

    /// Why this mode's CPU-cost window is not run this time: windows are not extended (the
    /// quick preset) and the mode's last pass was too short for any window to reach the
    /// counters' resolution. None: meter it.
    fn meter_skipped(&self, direct: bool) -> Option<String> {
        if self.extend_cost {
            return None;
        }
        let last = self.last_pass_s.lock().ok()?[usize::from(!direct)]?;
        crate::cpucost::cannot_reach_floor(
            last,
            crate::platform::cputime::system_cpu_resolution_s(),
        )
    }

    /// The CPU cost of the timed pass (`moved` bytes, `meter` still running), its window
    /// extended over more passes of the same work while it is below the counters' resolution
    /// (up to [`crate::cpucost::extend_until`]); returns the cost, the bytes moved in its window
    /// and the passes it spans.
    fn cost(
        &self,
        ctx: &RunContext,
        files: &[std::path::PathBuf],
        bytes: u64,
        direct: bool,
        mut moved: u64,
        meter: std::io::Result<CpuMeter>,
    ) -> Result<(std::io::Result<CpuCost>, u64, u32), BenchError> {
        let meter = match meter {
            Ok(m) => m,
            Err(e) => return Ok((Err(e), moved, 1)),
        };
        // Not in a warm-up run (discarded) nor at the quick preset.
        let until = if self.extend_cost && !ctx.warmup {
            // Two windows per run (cache bypassed, buffered); this is the first or the second.
            let left = 2 * ctx.runs_left - u32::from(!direct);
            crate::cpucost::extend_until(Instant::now(), ctx.run_time, ctx.deadline, left)
        } else {
            Instant::now()
        };
        let mut passes = 1;
        loop {
            let more = meter.peek().is_ok_and(|c| c.wants_more_until(until));
            if !more || Instant::now() >= until {
                // The window ends here; the idle window after it follows.
                return Ok((meter.stop(), moved, passes));
            }
            ctx.check()?;
            moved += self.threads_once(files, bytes, direct, || {})?.bytes;
            passes += 1;
        }
    }

    /// Run the threads once, calling `released` as the barrier lets them go.
    fn threads_once(
        &self,
        files: &[std::path::PathBuf],
        bytes: u64,
        direct: bool,
        released: impl FnOnce(),
    ) -> Result<Pass, BenchError> {
        let barrier = Barrier::new(files.len() + 1);
        let dir = self.dir;
        let results = std::thread::scope(|s| {
            let hs: Vec<_> = files
                .iter()
                .map(|p| {
                    let barrier = &barrier;
                    s.spawn(move || one_thread(p, bytes, direct, dir, barrier))
                })
                .collect();
            barrier.wait();
            released();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("thread panicked")))
                })
                .collect::<Vec<_>>()
        });
        let mut pass = Pass {
            bytes: 0,
            wall_s: 0.0,
            thread_cpu_ns: Ok(0),
            calls_cpu_ns: Ok(0),
        };
        let add = |sum: Result<u64, String>, one: Result<u64, String>| Ok(sum? + one?);
        let mut span: Option<(Instant, Instant)> = None;
        for r in results {
            let m = r.map_err(|e| BenchError::os("sequential I/O", e))?;
            pass.bytes += m.bytes;
            pass.thread_cpu_ns = add(pass.thread_cpu_ns, m.cpu_ns);
            pass.calls_cpu_ns = add(pass.calls_cpu_ns, m.calls_cpu_ns);
            span = Some(match span {
                None => (m.started, m.ended),
                Some((a, b)) => (a.min(m.started), b.max(m.ended)),
            });
        }
        pass.wall_s = span.map_or(0.0, |(a, b)| (b - a).as_secs_f64());
        Ok(pass)
    }
}

/// A run's work directory, its output so far, the device-counter check, the threads' files and
/// whether the cache can be bypassed there ([`Bandwidth::setup`]).
struct Setup {
    wd: workdir::WorkDir,
    out: RunOutput,
    check: Result<(), String>,
    files: Vec<std::path::PathBuf>,
    direct_ok: bool,
}

/// One pass of the threads.
struct Pass {
    /// Bytes moved, all threads.
    bytes: u64,
    /// The first thread's start after the barrier to the last thread's end (each read by the
    /// thread itself).
    wall_s: f64,
    /// The threads' own CPU (their thread CPU clocks, barrier release to file closed), summed;
    /// Err: why a clock could not be read.
    thread_cpu_ns: Result<u64, String>,
    /// As `thread_cpu_ns`, to each thread's last data call (its fsync and close not included).
    calls_cpu_ns: Result<u64, String>,
}

impl Pass {
    /// The threads' own CPU-seconds per GB moved (`cpu_ns`: [`Pass::thread_cpu_ns`] or
    /// [`Pass::calls_cpu_ns`]), or why not measured (a clock not read, or too coarse for this
    /// pass: [`crate::platform::clock::thread_cpu_usable`]).
    fn thread_cpu_s_per_gb(
        &self,
        cpu_ns: &Result<u64, String>,
        threads: usize,
    ) -> Result<f64, String> {
        let ns = cpu_ns.clone()?;
        crate::platform::clock::thread_cpu_usable(ns, threads as u64)?;
        if self.bytes == 0 {
            return Err("not measured: no bytes moved".into());
        }
        Ok(ns as f64 / self.bytes as f64)
    }
}

/// One thread: open (before the barrier), move `bytes` in 4 MiB blocks, fsync and close (write).
/// Returns the bytes moved and the thread's own CPU from the barrier's release to its file closed
/// and to its last data call.
fn one_thread(
    p: &std::path::Path,
    bytes: u64,
    direct: bool,
    dir: Dir,
    barrier: &Barrier,
) -> std::io::Result<Moved> {
    let (file, align, fallback_drop) = if direct {
        if dir == Dir::Write {
            std::fs::File::create(p)?;
        }
        let u = pfs::open_uncached(p, dir == Dir::Write)?;
        (u.file, u.align, u.drop_before_pass)
    } else {
        let f = match dir {
            Dir::Write => std::fs::File::create(p)?,
            Dir::Read => {
                let f = std::fs::File::open(p)?;
                pfs::drop_cache(&f)?;
                f
            }
        };
        (f, 4096, false)
    };
    if fallback_drop {
        pfs::drop_cache(&file)?;
    }
    let mut buf = AlignedBuf::new(BLOCK as usize, align, 0xa5);
    barrier.wait();
    // The pass's wall time is read by the threads themselves: the thread that released them may
    // be descheduled (or restarting the CPU meter) while they already move data.
    let started = Instant::now();
    let cpu0 = crate::platform::clock::ThreadCpu::start();
    let mut file = file;
    let mut done = 0;
    while done < bytes {
        let n = (bytes - done).min(BLOCK) as usize;
        match dir {
            Dir::Write => file.write_all(&buf.bytes()[..n])?,
            Dir::Read => file.read_exact(&mut buf.bytes_mut()[..n])?,
        }
        done += n as u64;
    }
    // The calls that move the data, before the fsync: a streaming writer's own share.
    let calls = cpu0.elapsed_ns();
    if dir == Dir::Write {
        file.sync_all()?;
    }
    drop(file);
    let ended = Instant::now();
    Ok(Moved {
        started,
        ended,
        bytes: done,
        cpu_ns: cpu0.elapsed_ns(),
        calls_cpu_ns: calls,
    })
}

/// What one thread moved and its own CPU (Err: why its CPU clock could not be read).
struct Moved {
    /// Read by the thread as the barrier let it go.
    started: Instant,
    /// Read by the thread after its file was closed.
    ended: Instant,
    bytes: u64,
    /// Barrier release to its file closed (fsync and close included).
    cpu_ns: Result<u64, String>,
    /// Barrier release to its last write or read call returned (before the fsync).
    calls_cpu_ns: Result<u64, String>,
}

impl Benchmark for Bandwidth {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("threads".into(), self.threads.into());
        m.insert("block_bytes".into(), BLOCK.into());
        m.insert(
            "fsync_close_in_write_time".into(),
            (self.dir == Dir::Write).into(),
        );
        m
    }

    /// Each run moves its bytes twice (cache bypassed and buffered) at about
    /// [`super::ASSUMED_FS_BYTES_PER_S`], after an idle baseline before each CPU-cost window.
    /// The extension of a window below the counters' resolution is apart
    /// ([`Benchmark::estimate_extension_s`]): it depends on the CPU the passes use and on the
    /// machine being idle for the baseline (measured here: from none to the cap).
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let bytes = (self.bytes_per_thread * self.threads as u64) as f64;
        let extension = 0.0;
        let warm = f64::from(e.warmup)
            * (2.0 * bytes / super::ASSUMED_FS_BYTES_PER_S + 2.0 * self.idle.as_secs_f64());
        warm + f64::from(e.runs)
            * (2.0 * bytes / super::ASSUMED_FS_BYTES_PER_S
                + 2.0 * self.idle.as_secs_f64()
                + extension
                + crate::bench::DEFAULT_SETUP_S)
    }

    /// Not at the quick preset: both CPU-cost windows of every measured run extended to their
    /// cap ([`crate::cpucost::max_extension`]).
    fn estimate_extension_s(&self, e: &crate::bench::Estimate) -> f64 {
        if self.extend_cost {
            f64::from(e.runs) * 2.0 * crate::cpucost::max_extension(e.run_time).as_secs_f64()
        } else {
            0.0
        }
    }

    /// The next run (after an `ab` arm switch) meters both modes again.
    fn release(&self) {
        if let Ok(mut l) = self.last_pass_s.lock() {
            *l = [None; 2];
        }
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let (per, reduced) = self.fit()?;
        let Setup {
            wd,
            mut out,
            check,
            files,
            direct_ok,
        } = self.setup(ctx, per)?;
        for direct in [true, false] {
            if direct && !direct_ok {
                continue;
            }
            out = self.one_mode(ctx, &files, per, direct, &check, out)?;
        }
        if let Err(why) = check {
            out = out.fact("bypass_check", why);
        }
        out.warnings.extend(reduced);
        out.warnings
            .extend(super::memory_state_warning("the buffered figures"));
        drop(wd);
        Ok(out)
    }
}
