//! `fs/read_latency`: time per cache-bypassed read of one page, for file sizes from the seed's
//! 32 KiB up, in backwards-sequential and random page order, reading the smallest unit the bypass
//! allows at each page ("byte": the seed's one byte per page, rounded up to the alignment) and the
//! whole 4 KiB page ("block"). Each read is one sample, so the record holds p50/p99/max per run.

use std::time::Instant;

use serde_json::{Map, Value};

use super::pages::{page_order, timed_pass};
use super::workdir::refuse_memory_backed;
use super::{
    DeviceCheck, FsOptions, KIB, MIB, PAGE, Pattern, io_err, name, size_name, workdir, write_file,
};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::fs::{self as pfs, AlignedBuf};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const VARIANTS: [&str; 2] = ["byte", "block"];

pub struct ReadLatency {
    info: Info,
    parent: std::path::PathBuf,
    sizes: Vec<u64>,
    patterns: Vec<Pattern>,
    /// Pages read per pass at most (the last ones backwards; a random subset in random order).
    pages_cap: usize,
}

/// Default sizes: the seed's 32–256 KiB, then up to 64 MiB (quick: three sizes).
pub fn default_sizes(quick: bool) -> Vec<u64> {
    if quick {
        vec![32 * KIB, 256 * KIB, 4 * MIB]
    } else {
        vec![
            32 * KIB,
            64 * KIB,
            128 * KIB,
            256 * KIB,
            MIB,
            4 * MIB,
            16 * MIB,
            64 * MIB,
        ]
    }
}

pub fn metric_name(p: Pattern, variant: &str, size: u64) -> String {
    format!("{}_{variant}_{}", p.name(), size_name(size))
}

impl ReadLatency {
    pub fn new(o: &FsOptions) -> Self {
        let sizes = o.sizes.clone().unwrap_or_else(|| default_sizes(o.quick));
        let patterns = if o.patterns.is_empty() {
            vec![Pattern::Seq, Pattern::Random]
        } else {
            o.patterns.clone()
        };
        let mut metrics = Vec::new();
        for &s in &sizes {
            for &p in &patterns {
                for v in VARIANTS {
                    metrics.push(MetricSpec {
                        name: name(metric_name(p, v, s)),
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: if v == "byte" {
                            "time per cache-bypassed read of the smallest aligned unit at one page"
                        } else {
                            "time per cache-bypassed read of one whole 4 KiB page"
                        },
                    });
                }
            }
        }
        ReadLatency {
            info: Info {
                id: "fs/read_latency".into(),
                suite: "fs",
                title: "File read latency per block, cache bypassed (size sweep)".into(),
                method:
                    "Per file size: write the file, fsync, drop its cached pages; open it with \
                    the platform's one cache bypass (Linux O_DIRECT aligned as statx \
                    STATX_DIOALIGN says, else the device's logical block size; macOS F_NOCACHE on \
                    the fresh file; Windows FILE_FLAG_NO_BUFFERING aligned to the volume sector); \
                    read page by page backwards (seed 002 §6: defeats read-ahead) or in random \
                    order, one timed positional read per page into a page-aligned buffer (a \
                    buffer straddling two pages cost +5-7 % per read here): 'byte' reads the \
                    smallest aligned unit (the seed's one byte per page), 'block' the whole 4 KiB page. Sizes and \
                    orders are interleaved. The per-process device-read counter is read around \
                    each pass: a pass whose bytes did not reach the device is not reported \
                    (marked served-from-memory). Memory-backed file systems are refused. On a \
                    VM the host's cache may still serve the reads (see host_cache_note). Against \
                    fio (--direct=1 --bs=4k --ioengine=psync, clat p50; 24 interleaved rounds, \
                    64 MiB on ext4 on a virtio disk): random 1.01x fio randread, backwards \
                    0.99x fio --rw=read:-8k (fio's own backwards/forwards ratio 0.97)."
                        .into(),
                metrics,
            },
            parent: o.parent(),
            sizes,
            patterns,
            pages_cap: if o.quick { 512 } else { 4096 },
        }
    }
}

impl Benchmark for ReadLatency {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "sizes".into(),
            self.sizes.iter().map(|&s| size_name(s)).collect(),
        );
        m.insert(
            "patterns".into(),
            self.patterns.iter().map(|p| p.name()).collect(),
        );
        m.insert("pages_per_pass_max".into(), self.pages_cap.into());
        m
    }

    /// Each run writes its files and evicts them before every pass (file preparation runs at
    /// about [`super::FILE_PREP_BYTES_PER_S`]), then times every size × pattern × byte/block
    /// for an eighth of the run time (at least 32 reads).
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let bytes: u64 = self.sizes.iter().sum();
        let combos = (self.sizes.len() * self.patterns.len() * VARIANTS.len()) as f64;
        e.all_runs()
            * (bytes as f64 / super::FILE_PREP_BYTES_PER_S
                + combos * (e.run_time.as_secs_f64() / 8.0)
                + crate::bench::DEFAULT_SETUP_S)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        refuse_memory_backed(&self.parent)?;
        let total: u64 = self.sizes.iter().sum();
        if workdir::budget(&self.parent, total)? < total {
            return Err(BenchError::failed(format!(
                "the sizes need {} and the free-space budget in {} is smaller",
                size_name(total),
                self.parent.display()
            )));
        }
        let (wd, out, check) = workdir::open_measured(&self.parent)?;
        let mut out = out;
        let mut ratios = Map::new();
        for (k, &size) in self.sizes.iter().enumerate() {
            let path = wd.file(&format!("read{k}"));
            write_file(ctx, &path, size)?;
            let u = pfs::open_uncached(&path, false).map_err(|e| io_err("open", &path, e))?;
            let page = PAGE.max(u.align as u64);
            let pages = (size / page).max(1);
            let mut buf = AlignedBuf::new(page as usize, u.align, 0);
            if k == 0 {
                out = out
                    .fact("bypass_method", u.method)
                    .fact("alignment_bytes", u.align as u64)
                    .fact("alignment_source", u.align_source.clone())
                    .fact("buffer_alignment_bytes", pfs::io_buf_align(u.align) as u64)
                    .fact("byte_read_bytes", u.align as u64)
                    .fact("block_read_bytes", page);
                if let Ok((r, t)) = pfs::resident_pages(&u.file, size) {
                    out = out.fact("resident_pages_before_first_pass", format!("{r}/{t}"));
                }
            }
            for &p in &self.patterns {
                for v in VARIANTS {
                    ctx.check()?;
                    let len = if v == "byte" { u.align } else { page as usize };
                    let order = page_order(p, pages, self.pages_cap, 0x5eed ^ size ^ k as u64);
                    let mname = self
                        .info
                        .metrics
                        .iter()
                        .find(|m| m.name == metric_name(p, v, size))
                        .map(|m| m.name)
                        .expect("declared metric");
                    let mut lat = Vec::new();
                    let dev = DeviceCheck::start();
                    let t0 = Instant::now();
                    // At least one pass and 32 reads; more passes while the run's time lasts.
                    while lat.len() < 32 || (t0.elapsed() < ctx.run_time / 8 && lat.len() < 65536) {
                        ctx.check()?;
                        if u.drop_before_pass {
                            pfs::drop_cache(&u.file).map_err(|e| io_err("fadvise", &path, e))?;
                        }
                        lat.extend(
                            timed_pass(&u, &mut buf, &order, page, len)
                                .map_err(|e| io_err("read", &path, e))?,
                        );
                    }
                    let requested = lat.len() as u64 * len as u64;
                    match (&check, dev.bytes()) {
                        (Ok(()), Some(d)) => {
                            ratios.insert(mname.into(), (d as f64 / requested as f64).into());
                            if d < requested / 2 {
                                out = out.not_measured(
                                    mname,
                                    format!(
                                        "served from memory: the device counter saw {d} of \
                                         {requested} bytes requested with the cache bypassed"
                                    ),
                                );
                                continue;
                            }
                        }
                        (Ok(()), None) => {
                            ratios.insert(mname.into(), "device counter unreadable".into());
                        }
                        (Err(_), _) => {}
                    }
                    out = out.metric(mname, lat);
                }
            }
        }
        out = match check {
            Ok(()) => out.fact("device_bytes_per_requested_byte", Value::Object(ratios)),
            Err(why) => out.fact("bypass_check", why),
        };
        drop(wd);
        Ok(out)
    }
}
