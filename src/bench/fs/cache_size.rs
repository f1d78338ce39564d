//! `fs/cache_size`: seed 002 §6.1 — for growing sizes, read a file once (to cache it), then time
//! a second read backwards page by page; the size where the time per block jumps is the file
//! cache's size. The sweep is capped (default 256 MiB, quick 32 MiB, `--max-size` to go further,
//! never over the free-space budget); when the cap is below the cache the result is the honest
//! lower bound "cache ≥ cap (not reached)", next to the OS's own figure.

use std::io::Read;
use std::time::Instant;

use serde_json::{Map, Value};

use super::{FsOptions, MIB, PAGE, io_err, name, size_name, storage_facts, workdir, write_file};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::fs as pfs;
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const DEFAULT_CAP: u64 = 256 * MIB;
pub const QUICK_CAP: u64 = 32 * MIB;
/// A size whose re-read costs this many times the smallest size's is past the cache.
pub const JUMP: f64 = 4.0;

pub struct CacheSize {
    info: Info,
    parent: std::path::PathBuf,
    sizes: Vec<u64>,
}

/// 8 MiB × 4ⁿ up to `cap` (and `cap` itself).
pub fn sweep(cap: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = 8 * MIB;
    while s < cap {
        v.push(s);
        s *= 4;
    }
    v.push(cap);
    v
}

pub fn metric_name(s: u64) -> String {
    format!("reread_{}", size_name(s))
}

impl CacheSize {
    pub fn new(o: &FsOptions) -> Self {
        let cap = o
            .max_size
            .unwrap_or(if o.quick { QUICK_CAP } else { DEFAULT_CAP });
        let sizes = sweep(cap.max(MIB));
        let mut metrics: Vec<MetricSpec> = sizes
            .iter()
            .map(|&s| MetricSpec {
                name: name(metric_name(s)),
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: "time per 4 KiB block of a backwards re-read of a file just read \
                              once (cached if it fits the file cache)",
            })
            .collect();
        metrics.push(MetricSpec {
            name: "cache_lower_bound",
            unit: Unit::Bytes,
            better: Better::Neutral,
            description: "largest size whose re-read stayed cached (within 4× the smallest \
                          size's time per block); the cache is at least this",
        });
        CacheSize {
            info: Info {
                id: "fs/cache_size".into(),
                suite: "fs",
                title: "File-cache size (seed's re-read sweep, capped)".into(),
                method: format!(
                    "Seed 002 §6.1: one file of the largest size is written and fsynced; for each \
                     size (8 MiB × 4ⁿ up to the cap) its first part's cached pages are dropped \
                     where the OS can, it is read once sequentially in 1 MiB reads (to cache it), \
                     then re-read backwards one buffered 4 KiB pread per page, timed in groups of \
                     64 pages: time per block. A size whose time per block is over {JUMP}× the \
                     smallest size's is past the cache; the page-residency after the re-read \
                     (mincore) is recorded beside it. When no size is past the cache the result \
                     is 'cache ≥ cap (not reached)', a lower bound, beside the OS's own figure. \
                     Capped by --max-size and half the free space minus 1 GiB; memory is never \
                     allocated for the file."
                ),
                metrics,
            },
            parent: o.parent(),
            sizes,
        }
    }

    /// The run's work directory and its output so far, with the file of the sweep's largest
    /// size written: (directory, output, file, that size).
    fn setup(
        &self,
        ctx: &RunContext,
    ) -> Result<(workdir::WorkDir, RunOutput, std::path::PathBuf, u64), BenchError> {
        super::workdir::refuse_on_memory_fs(
            &self.parent,
            "the file-cache size (every file there is the cache)",
        )?;
        let cap = *self.sizes.last().unwrap();
        if workdir::budget(&self.parent, cap)? < cap {
            return Err(BenchError::failed(format!(
                "the sweep's cap {} does not fit the free-space budget in {}",
                size_name(cap),
                self.parent.display()
            )));
        }
        let wd = workdir::WorkDir::create(&self.parent)
            .map_err(|e| io_err("work directory in", &self.parent, e))?;
        let out = RunOutput {
            facts: storage_facts(wd.path()),
            ..Default::default()
        };
        let path = wd.file("cache");
        write_file(ctx, &path, cap)?;
        Ok((wd, out, path, cap))
    }

    /// Every size of the sweep in turn: its first bytes of `f` read once (to cache, after the
    /// file's cached pages are dropped), then re-read backwards, timed per group of 64 pages.
    fn sweep(
        &self,
        ctx: &RunContext,
        f: &mut std::fs::File,
        path: &std::path::Path,
    ) -> Result<Sweep, BenchError> {
        let mut big = vec![0u8; MIB as usize];
        let mut page = vec![0u8; PAGE as usize];
        let mut samples_per_size = Vec::new();
        let mut residency = Map::new();
        let t_start = Instant::now();
        for &s in &self.sizes {
            ctx.check()?;
            let _ = pfs::drop_cache(f);
            // Read once, to cache.
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(0))
                .map_err(|e| io_err("seek", path, e))?;
            let mut left = s;
            while left > 0 {
                ctx.check()?;
                let n = left.min(MIB) as usize;
                f.read_exact(&mut big[..n])
                    .map_err(|e| io_err("read", path, e))?;
                left -= n as u64;
            }
            // Re-read backwards, timed per group of 64 pages.
            let pages = s / PAGE;
            let mut samples = Vec::with_capacity((pages / 64 + 1) as usize);
            let mut i = pages;
            while i > 0 {
                ctx.check()?;
                let g = i.min(64);
                let t0 = Instant::now();
                for k in 0..g {
                    pfs::read_at(f, &mut page, (i - 1 - k) * PAGE)
                        .map_err(|e| io_err("read", path, e))?;
                }
                samples.push(t0.elapsed().as_nanos() as f64 / g as f64);
                i -= g;
            }
            if let Ok((r, t)) = pfs::resident_pages(f, s) {
                residency.insert(size_name(s), (r as f64 / t.max(1) as f64).into());
            }
            samples_per_size.push((s, samples));
        }
        Ok(Sweep {
            samples: samples_per_size,
            residency,
            wall_s: t_start.elapsed().as_secs_f64(),
        })
    }

    /// The sweep's figures on `out`: each size's re-read times, the largest size still re-read
    /// from the cache (a lower bound where the sweep never left it, `cap` its largest size), the
    /// verdict, residency and the OS's own cache figure.
    fn assemble(&self, mut out: RunOutput, sweep: Sweep, cap: u64) -> RunOutput {
        let mut per_block = Vec::new();
        for (s, samples) in sweep.samples {
            per_block.push((s, crate::stats::median(&samples)));
            let mname = self
                .info
                .metrics
                .iter()
                .find(|m| m.name == metric_name(s))
                .map(|m| m.name)
                .expect("declared");
            out = out.metric(mname, samples);
        }
        let base = per_block[0].1;
        let past = per_block.iter().find(|(_, t)| *t > JUMP * base);
        let bound = per_block
            .iter()
            .take_while(|(_, t)| *t <= JUMP * base)
            .map(|(s, _)| *s)
            .last()
            .unwrap_or(0);
        let verdict = match past {
            None => format!("cache ≥ {} (not reached)", size_name(cap)),
            Some((s, _)) => format!("cache between {} and {}", size_name(bound), size_name(*s)),
        };
        out = out.metric("cache_lower_bound", vec![bound as f64]);
        if past.is_none() {
            // The sweep ended before the re-read left the cache: the size is only a bound.
            out = out.bounded(
                "cache_lower_bound",
                crate::record::BoundKind::AtLeast,
                format!(
                    "the sweep's largest size ({}) still re-read from the cache",
                    size_name(cap)
                ),
            );
        }
        out = out
            .fact("cache_result", verdict)
            .fact("sweep_wall_s", sweep.wall_s)
            .fact(
                "resident_fraction_after_reread",
                Value::Object(sweep.residency),
            );
        match pfs::os_cache_figure() {
            Ok((what, bytes)) => {
                out = out
                    .fact("os_cache_figure", what)
                    .fact("os_cache_figure_bytes", bytes)
            }
            Err(e) => out = out.fact("os_cache_figure", e.to_string()),
        }
        out
    }
}

/// The sweep's measurements: each size's re-read times (ns per page, per group of 64 pages), the
/// pages resident after each re-read, and the sweep's wall time.
struct Sweep {
    samples: Vec<(u64, Vec<f64>)>,
    residency: Map<String, Value>,
    wall_s: f64,
}

impl Benchmark for CacheSize {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "sizes".into(),
            self.sizes.iter().map(|&s| size_name(s)).collect(),
        );
        m
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let (wd, out, path, cap) = self.setup(ctx)?;
        let mut f = std::fs::File::open(&path).map_err(|e| io_err("open", &path, e))?;
        let sweep = self.sweep(ctx, &mut f, &path)?;
        let out = self.assemble(out, sweep, cap);
        drop(f);
        drop(wd);
        Ok(out)
    }
}
