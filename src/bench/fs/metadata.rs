//! `fs/create_delete`: lmbench `lat_fs` — files of 0, 1, 4 and 10 KiB created (open-create,
//! write, close) and then deleted, in one directory; creates and deletes per second.

use std::io::Write;
use std::time::Instant;

use serde_json::{Map, Value};

use super::{FsOptions, KIB, io_err, storage_facts, workdir};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub const SIZES_KIB: [u64; 4] = [0, 1, 4, 10];

pub struct CreateDelete {
    info: Info,
    parent: std::path::PathBuf,
    files: usize,
}

fn names(op: &str) -> [&'static str; 4] {
    match op {
        "create" => ["create_0k", "create_1k", "create_4k", "create_10k"],
        _ => ["delete_0k", "delete_1k", "delete_4k", "delete_10k"],
    }
}

impl CreateDelete {
    pub fn new(o: &FsOptions) -> Self {
        let mut metrics = Vec::new();
        for op in ["create", "delete"] {
            for n in names(op) {
                metrics.push(MetricSpec {
                    name: n,
                    unit: Unit::OpsPerSecond,
                    better: Better::Higher,
                    description: if op == "create" {
                        "files created per second (open O_CREAT, write the size, close)"
                    } else {
                        "files deleted per second (unlink)"
                    },
                });
            }
        }
        CreateDelete {
            info: Info {
                id: "fs/create_delete".into(),
                suite: "fs",
                title: "File create and delete rate, 0/1/4/10 KiB (lmbench lat_fs)".into(),
                method: "lmbench lat_fs: per size, create N files in one fresh directory \
                    (create, write the size, close: no fsync), then delete them in the same \
                    order; the rate is N over the elapsed time of each phase, timed as a whole. \
                    Sizes are interleaved within a run."
                    .into(),
                metrics,
            },
            parent: o.parent(),
            files: if o.quick { 100 } else { 250 },
        }
    }
}

impl Benchmark for CreateDelete {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("files_per_size".into(), self.files.into());
        m
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        workdir::budget(&self.parent, self.files as u64 * 16 * KIB)?;
        let wd = workdir::WorkDir::create(&self.parent)
            .map_err(|e| io_err("work directory in", &self.parent, e))?;
        let mut out = RunOutput {
            facts: storage_facts(wd.path()),
            ..Default::default()
        };
        // Measured, but not a storage figure: say so with every run.
        if let Ok(Some(fs)) = crate::platform::storage::memory_backed_fs(&self.parent) {
            out.warnings.push(format!(
                "{} is on {fs} (memory-backed): these are in-memory metadata operations, not \
                 a storage file system's",
                self.parent.display()
            ));
        }
        let data = vec![0x3cu8; 10 * KIB as usize];
        let (cn, dn) = (names("create"), names("delete"));
        for (k, &kib) in SIZES_KIB.iter().enumerate() {
            ctx.check()?;
            let paths: Vec<_> = (0..self.files)
                .map(|i| wd.file(&format!("f{kib}k_{i}")))
                .collect();
            let body = &data[..(kib * KIB) as usize];
            let t0 = Instant::now();
            for p in &paths {
                let mut f = std::fs::File::create(p).map_err(|e| io_err("create", p, e))?;
                if !body.is_empty() {
                    f.write_all(body).map_err(|e| io_err("write", p, e))?;
                }
            }
            let tc = t0.elapsed().as_secs_f64();
            ctx.check()?;
            let t0 = Instant::now();
            for p in &paths {
                std::fs::remove_file(p).map_err(|e| io_err("delete", p, e))?;
            }
            let td = t0.elapsed().as_secs_f64();
            out = out
                .metric(cn[k], vec![self.files as f64 / tc])
                .metric(dn[k], vec![self.files as f64 / td]);
        }
        drop(wd);
        Ok(out)
    }
}
