//! `fs/contention`: seed 002 §6.4 — 1, 2, 4, 8, 16 threads, each reading its own 512 KiB file
//! backwards one page at a time with the cache bypassed, released together by a barrier; time
//! per block for each thread count (the contention curve).

use std::sync::Barrier;

use serde_json::{Map, Value};

use super::pages::{page_order, timed_pass};
use super::workdir::refuse_memory_backed;
use super::{DeviceCheck, FsOptions, KIB, PAGE, Pattern, io_err, name, workdir, write_file};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::fs::{self as pfs, AlignedBuf};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const THREADS: [usize; 5] = [1, 2, 4, 8, 16];
pub const FILE_BYTES: u64 = 512 * KIB;

pub struct Contention {
    info: Info,
    parent: std::path::PathBuf,
    passes: usize,
}

pub fn metric_name(t: usize) -> String {
    format!("t{t}")
}

impl Contention {
    pub fn new(o: &FsOptions) -> Self {
        Contention {
            info: Info {
                id: "fs/contention".into(),
                suite: "fs",
                title: "File read contention, 1–16 threads, cache bypassed".into(),
                method: "Seed 002 §6.4: each thread has its own 512 KiB file (written, fsynced, \
                    cached pages dropped), opened with the platform's one cache bypass; all \
                    threads wait at a barrier, then each reads its file backwards one 4 KiB page \
                    at a time (one timed positional read per page). Metric tN: time per block \
                    with N threads (every thread's reads pooled). The device-read counter around \
                    each thread count flags reads served from memory."
                    .into(),
                metrics: THREADS
                    .iter()
                    .map(|&t| MetricSpec {
                        name: name(metric_name(t)),
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per cache-bypassed 4 KiB read with this many threads \
                                      each reading its own file",
                    })
                    .collect(),
            },
            parent: o.parent(),
            passes: if o.quick { 1 } else { 4 },
        }
    }
}

impl Benchmark for Contention {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("file_bytes".into(), FILE_BYTES.into());
        m.insert("passes".into(), self.passes.into());
        m
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        refuse_memory_backed(&self.parent)?;
        let max_t = *THREADS.last().unwrap();
        workdir::budget(&self.parent, FILE_BYTES * max_t as u64)?;
        let (wd, out, check) = workdir::open_measured(&self.parent)?;
        let mut out = out;
        let mut files = Vec::new();
        for i in 0..max_t {
            let p = wd.file(&format!("c{i}"));
            write_file(ctx, &p, FILE_BYTES)?;
            files.push(pfs::open_uncached(&p, false).map_err(|e| io_err("open", &p, e))?);
        }
        out = out.fact("bypass_method", files[0].method);
        for &t in &THREADS {
            ctx.check()?;
            let mname = self
                .info
                .metrics
                .iter()
                .find(|m| m.name == metric_name(t))
                .map(|m| m.name)
                .expect("declared");
            let barrier = Barrier::new(t);
            let dev = DeviceCheck::start();
            let results: Vec<std::io::Result<(Vec<f64>, u64)>> = std::thread::scope(|s| {
                let hs: Vec<_> = files[..t]
                    .iter()
                    .map(|u| {
                        let barrier = &barrier;
                        let passes = self.passes;
                        s.spawn(move || {
                            let page = PAGE.max(u.align as u64);
                            let mut buf = AlignedBuf::new(page as usize, u.align, 0);
                            let order = page_order(Pattern::Seq, FILE_BYTES / page, usize::MAX, 0);
                            if u.drop_before_pass {
                                pfs::drop_cache(&u.file)?;
                            }
                            barrier.wait();
                            let mut lat = Vec::new();
                            for _ in 0..passes {
                                lat.extend(timed_pass(u, &mut buf, &order, page, page as usize)?);
                            }
                            let bytes = lat.len() as u64 * page;
                            Ok((lat, bytes))
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(std::io::Error::other("panicked")))
                    })
                    .collect()
            });
            let mut lat = Vec::new();
            let mut requested = 0;
            for r in results {
                let (l, b) = r.map_err(|e| BenchError::os("read (contention)", e))?;
                lat.extend(l);
                requested += b;
            }
            if let (Ok(()), Some(d)) = (&check, dev.bytes())
                && d < requested / 2
            {
                out = out.not_measured(
                    mname,
                    format!(
                        "served from memory: the device counter saw {d} of {requested} bytes \
                         requested with the cache bypassed"
                    ),
                );
                continue;
            }
            out = out.metric(mname, lat);
        }
        if let Err(why) = check {
            out = out.fact("bypass_check", why);
        }
        drop(files);
        drop(wd);
        Ok(out)
    }
}
