//! `fs/stream_write`: a streaming writer — one thread writes one long file through the OS cache
//! in application-sized calls (128 KiB) and makes it durable once, at the end, as a recorder or a
//! network-to-disk receiver (`iperf3 -s -F`) does. The OS writes the stream back while it is
//! being written, so its sustained rate is not the write-then-fsync of one short file
//! (`fs/seq_write_tN`, 4 MiB calls); and the writer's own thread carries only its write calls.
//!
//! Why a second write benchmark: on the reference VM (Linux 6.18, ext4 on virtio-blk, free page
//! reporting on) the kernel CPU of a buffered write depended on the call's size — streaming 2 GB
//! in 4 MiB calls cost 1.7–2.8 ms of the writer's CPU per MB (87.6 % of it in
//! `copy_folio_from_iter_atomic`), in 128 KiB or 1 MiB calls 0.21–0.36 ms/MB, run after run. A
//! streaming writer's cost is measured at a streaming writer's call size.

use std::io::Write;
use std::time::Instant;

use super::stream_common::{CALL, Stream, with_thread_cpu};
use super::{FsOptions, MIB, io_err, size_name};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::clock::ThreadCpu;
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

pub struct StreamWrite {
    info: Info,
    stream: Stream,
}
impl StreamWrite {
    pub fn new(o: &FsOptions) -> Self {
        let stream = Stream::new(o);
        let plan = &stream.plan;
        let (lead, lead_why, bytes) = (plan.lead, &plan.lead_why, plan.bytes);
        StreamWrite {
            info: Info {
                id: "fs/stream_write".into(),
                suite: "fs",
                title: "Streaming write through the OS cache, 128 KiB calls, one fsync at the end"
                    .into(),
                method: format!(
                    "One thread creates a file and writes to it sequentially through the OS \
                     cache in {} write calls (no fsync between them: the OS writes the stream \
                     back while it is written), then fsyncs and closes it once: first as many \
                     bytes as the OS lets build up before its background writeback starts \
                     (Linux: vm.dirty_background_bytes, else vm.dirty_background_ratio of \
                     MemAvailable; here {} — {lead_why}), then the measured {}. \
                     thread_cpu_s_per_gb: the writing thread's own CPU clock ({}) over the \
                     measured part's write calls (the copy into the cache and what the kernel \
                     does in the writer's context, dirty throttling included; the writeback by \
                     kernel threads and the final fsync are not in it) — what a long stream's \
                     one writing thread carries; not measured when under {} steps of that \
                     clock. mb_per_s: all bytes / (first write to the fsync returned). \
                     cpu_s_per_gb: {}, all writes, writeback and the fsync, per byte written. \
                     The file is deleted after each run; the stream is shortened (lead first) \
                     if half the free space minus 1 GiB is smaller, said. Compare with \
                     fs/seq_write_t1 (4 MiB calls, a 64 MiB file written then fsynced): on a VM \
                     with free page reporting the two differed several-fold.",
                    size_name(CALL),
                    size_name(lead),
                    size_name(bytes),
                    crate::platform::clock::CPU_CLOCK_DESCRIPTION,
                    crate::platform::clock::MIN_THREAD_CPU_STEPS,
                    crate::cpucost::method(),
                ),
                metrics: vec![
                    MetricSpec {
                        name: "mb_per_s",
                        unit: Unit::MegabytesPerSecond,
                        better: Better::Higher,
                        description: "MB/s (10^6 bytes per second) of the stream made durable: \
                                      bytes / (first write to the final fsync returned)",
                    },
                    MetricSpec {
                        name: "thread_cpu_s_per_gb",
                        unit: Unit::CpuSecondsPerGb,
                        better: Better::Lower,
                        description: "the writing thread's own CPU-seconds per GB (10^9 bytes) \
                                      in the measured part's write calls (after the lead, with \
                                      the OS's writeback running alongside; the final fsync \
                                      not included)",
                    },
                    MetricSpec {
                        name: "cpu_s_per_gb",
                        unit: Unit::CpuSecondsPerGb,
                        better: Better::Lower,
                        description: "CPU-seconds per GB (10^9 bytes), system-wide net of the \
                                      idle baseline: writes, writeback and the final fsync",
                    },
                ],
            },
            stream,
        }
    }
}

impl Benchmark for StreamWrite {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, serde_json::Value> {
        self.stream.plan.params("call_bytes")
    }

    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        self.stream.estimate_s(e)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut s = self.stream.open()?;
        let (lead, bytes, total) = (s.lead, s.bytes, s.total());
        let buf = vec![0xa5u8; CALL as usize];
        let meter = self.stream.meter();
        let t0 = Instant::now();
        let mut cpu0 = ThreadCpu::start();
        let mut done = 0;
        while done < total {
            if done % (64 * MIB) == 0 {
                ctx.check()?;
            }
            if done == lead {
                cpu0 = ThreadCpu::start();
            }
            s.file
                .write_all(&buf)
                .map_err(|e| io_err("write", &s.path, e))?;
            done += CALL;
        }
        let calls = cpu0.elapsed_ns();
        s.file.sync_all().map_err(|e| io_err("fsync", &s.path, e))?;
        let wall = t0.elapsed().as_secs_f64();
        Ok(s.finish(&self.info.id, meter, wall, |out| {
            with_thread_cpu(out, "thread_cpu_s_per_gb", calls, bytes)
        }))
    }
}
