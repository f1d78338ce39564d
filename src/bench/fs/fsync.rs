//! `fs/fsync`: time to make one freshly written 4 KiB block durable (write at offset 0, then
//! fsync / FlushFileBuffers), repeated for the run's measuring time.

use std::time::Instant;

use super::{FsOptions, io_err, storage_facts, workdir};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::harness::RunContext;
use crate::model::BenchError;
use crate::platform::fs as pfs;
use crate::units::{Better, Unit};

pub struct Fsync {
    info: Info,
    parent: std::path::PathBuf,
}

impl Fsync {
    pub fn new(o: &FsOptions) -> Self {
        Fsync {
            info: Info {
                id: "fs/fsync".into(),
                suite: "fs",
                title: "fsync latency of a 4 KiB overwrite".into(),
                method: "A 4 KiB buffered write at offset 0 of a file, then fsync (Windows: \
                    FlushFileBuffers through std's sync_all); the pair is timed, repeated for the \
                    run's measuring time (at least 10 times). A drive or host write cache may \
                    acknowledge before the data is on stable media."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "write_fsync",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time of one 4 KiB write plus fsync",
                }],
            },
            parent: o.parent(),
        }
    }
}

impl Benchmark for Fsync {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        super::read_latency::refuse_on_memory_fs(
            &self.parent,
            "an fsync (which is a no-op there)",
        )?;
        workdir::budget(&self.parent, 1 << 20)?;
        let wd = workdir::WorkDir::create(&self.parent)
            .map_err(|e| io_err("work directory in", &self.parent, e))?;
        let p = wd.file("fsync");
        let f = std::fs::File::create(&p).map_err(|e| io_err("create", &p, e))?;
        let mut buf = vec![0u8; 4096];
        let mut lat = Vec::new();
        let start = Instant::now();
        while lat.len() < 10 || (start.elapsed() < ctx.run_time && lat.len() < 100_000) {
            ctx.check()?;
            buf[0] = buf[0].wrapping_add(1);
            let t0 = Instant::now();
            pfs::write_at(&f, &buf, 0).map_err(|e| io_err("write", &p, e))?;
            f.sync_all().map_err(|e| io_err("fsync", &p, e))?;
            lat.push(t0.elapsed().as_nanos() as f64);
        }
        drop(f);
        let out = RunOutput {
            facts: storage_facts(wd.path()),
            ..Default::default()
        }
        .metric("write_fsync", lat);
        drop(wd);
        Ok(out)
    }
}
