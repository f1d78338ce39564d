//! What the two long-stream benchmarks share (`fs/stream_write`, `fs/stream_from_tcp`): the
//! stream's plan (a lead up to the OS's background-writeback threshold, then the measured part),
//! its work directory and file, and the figures both derive from the CPU clocks.

use std::path::Path;
use std::time::Duration;

use super::{FsOptions, MIB, io_err, size_name, workdir};
use crate::bench::RunOutput;
use crate::cpucost::CpuMeter;
use crate::record::BenchError;

/// Bytes per write call: 128 KiB, the block `iperf3` writes (its default TCP length) and the
/// copy buffer of coreutils `cp`/`cat` (io_blksize).
pub const CALL: u64 = 128 << 10;
/// The part of the stream whose writer's CPU is measured, at the standard preset and the quick one.
pub const DEFAULT_BYTES: u64 = 1 << 30;
pub const QUICK_BYTES: u64 = 64 * MIB;

/// One long stream benchmark's setup, the same for both: its plan, the directory its file is
/// written in, and the idle baseline the system-wide CPU meter takes on each side.
pub struct Stream {
    pub parent: std::path::PathBuf,
    pub plan: Plan,
    pub idle: Duration,
}

impl Stream {
    pub fn new(o: &FsOptions) -> Stream {
        Stream {
            parent: o.parent(),
            plan: Plan::new(o),
            idle: Duration::from_millis(if o.quick { 30 } else { 200 }),
        }
    }

    pub fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        self.plan.estimate_s(self.idle, e)
    }

    /// The run's prologue: the work directory and the stream's file, fitted to the free space.
    pub fn open(&self) -> Result<Opened, BenchError> {
        self.plan.open(&self.parent)
    }

    /// The system-wide CPU meter, started (its idle baseline first).
    pub fn meter(&self) -> std::io::Result<CpuMeter> {
        CpuMeter::start(self.idle)
    }
}

/// A long stream's sizes: a lead of as many bytes as the OS lets build up before its background
/// writeback starts (so the measured part runs with its writeback alongside), then the measured
/// part — both in whole [`CALL`]s, within `--max-size` (lead first) and the quick preset.
pub struct Plan {
    pub lead: u64,
    /// Why `lead` is what it is.
    pub lead_why: String,
    pub bytes: u64,
}

impl Plan {
    pub fn new(o: &FsOptions) -> Plan {
        let bytes = o
            .max_size
            .map(|m| m.min(DEFAULT_BYTES))
            .unwrap_or(if o.quick { QUICK_BYTES } else { DEFAULT_BYTES })
            .max(CALL)
            / CALL
            * CALL;
        let (lead, lead_why) = if let Some(m) = o.max_size {
            // The largest file asked: the lead fits in what is left of it.
            let lead = m.saturating_sub(bytes) / CALL * CALL;
            (
                lead,
                format!(
                    "--max-size {} caps the stream: a lead of {} (the OS's background writeback \
                     may not have run alongside the measured part)",
                    size_name(m),
                    size_name(lead)
                ),
            )
        } else if o.quick {
            (
                0,
                "quick preset: the whole stream is measured, from its first write (the OS's \
                 background writeback may not have run alongside it)"
                    .to_string(),
            )
        } else {
            match crate::platform::fs::writeback_threshold() {
                Ok((b, how)) => (b.div_ceil(CALL) * CALL, how),
                Err(why) => (
                    0,
                    format!("{why}: the whole stream is measured, from its first write"),
                ),
            }
        };
        Plan {
            lead,
            lead_why,
            bytes,
        }
    }

    /// The parameters a stream's record carries; `call_key` names the block size.
    pub fn params(&self, call_key: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert(call_key.into(), CALL.into());
        m.insert("lead_bytes".into(), self.lead.into());
        m.insert("measured_bytes".into(), self.bytes.into());
        m
    }

    /// One stream per run at about [`super::ASSUMED_FS_BYTES_PER_S`], after an idle baseline
    /// of `idle` on each side.
    pub fn estimate_s(&self, idle: Duration, e: &crate::bench::Estimate) -> f64 {
        let one = (self.lead + self.bytes) as f64 / super::ASSUMED_FS_BYTES_PER_S
            + 2.0 * idle.as_secs_f64()
            + crate::bench::DEFAULT_SETUP_S;
        f64::from(e.warmup + e.runs) * one
    }

    /// Fit the stream in `parent` (refused on a memory file system), create its work directory
    /// and its file: the run's output with the storage facts and the sizes as run.
    pub fn open(&self, parent: &Path) -> Result<Opened, BenchError> {
        workdir::refuse_on_memory_fs(parent, "a stream written back to storage")?;
        let (lead, bytes, reduced) = self.fit(parent)?;
        // No device-counter check: nothing here is judged by the device's byte counters.
        let wd =
            workdir::WorkDir::create(parent).map_err(|e| io_err("work directory in", parent, e))?;
        let out = RunOutput {
            facts: super::storage_facts(wd.path()),
            ..Default::default()
        }
        .fact("lead_bytes", lead)
        .fact("lead_from", self.lead_why.clone())
        .fact("measured_bytes", bytes);
        let path = wd.file("stream");
        let file = std::fs::File::create(&path).map_err(|e| io_err("create", &path, e))?;
        Ok(Opened {
            wd,
            out,
            file,
            path,
            lead,
            bytes,
            reduced,
        })
    }

    /// The sizes that fit in `parent`'s free space now (the lead shortened first): (lead, measured
    /// bytes, the warning when shortened).
    pub fn fit(&self, parent: &Path) -> Result<(u64, u64, Option<String>), BenchError> {
        let total = workdir::budget(parent, self.lead + self.bytes)? / CALL * CALL;
        if total < CALL {
            return Err(BenchError::failed(format!(
                "not enough free space in {} for one {} call",
                parent.display(),
                size_name(CALL)
            )));
        }
        let bytes = self.bytes.min(total);
        let lead = total - bytes;
        let reduced = (total < self.lead + self.bytes).then(|| {
            format!(
                "stream reduced to {} (asked {} + {} measured): half the free space in {} less \
                 a 1 GiB margin; {}",
                size_name(total),
                size_name(self.lead),
                size_name(self.bytes),
                parent.display(),
                if lead < self.lead {
                    "the measured part began before the OS's background writeback threshold, \
                     so the writeback did not run alongside all of it"
                } else {
                    "the lead is whole"
                }
            )
        });
        Ok((lead, bytes, reduced))
    }
}

/// A stream ready to run: its work directory (removed when dropped), the run's output so far,
/// its file, and the sizes that fit.
pub struct Opened {
    pub wd: workdir::WorkDir,
    pub out: RunOutput,
    pub file: std::fs::File,
    pub path: std::path::PathBuf,
    pub lead: u64,
    pub bytes: u64,
    /// The warning when the stream was shortened to fit.
    pub reduced: Option<String>,
}

impl Opened {
    /// The whole stream, lead and measured part, bytes.
    pub fn total(&self) -> u64 {
        self.lead + self.bytes
    }

    /// The run's epilogue, once the stream was written and fsynced in `wall` seconds: the file
    /// closed and the meter stopped; `mb_per_s`, the benchmark's own figures (`own`),
    /// `cpu_s_per_gb`; the warnings (stream shortened, memory state); the work directory removed.
    pub fn finish(
        self,
        id: &str,
        meter: std::io::Result<CpuMeter>,
        wall: f64,
        own: impl FnOnce(RunOutput) -> RunOutput,
    ) -> RunOutput {
        let total = self.total();
        let Opened {
            wd,
            out,
            file,
            reduced,
            ..
        } = self;
        drop(file);
        let cost = meter.and_then(|m| m.stop());
        let out = out.metric("mb_per_s", vec![total as f64 / wall / 1e6]);
        let mut out = with_cpu_cost(own(out), id, cost, total);
        out.warnings.extend(reduced);
        out.warnings
            .extend(super::memory_state_warning("every figure"));
        drop(wd);
        out
    }
}

/// The system-wide CPU per GB of a stream of `total` bytes (`cpu_s_per_gb`), its facts and its
/// warning, or not measured with the reason.
pub fn with_cpu_cost(
    out: RunOutput,
    id: &str,
    cost: std::io::Result<crate::cpucost::CpuCost>,
    total: u64,
) -> RunOutput {
    match cost {
        Ok(c) => {
            let mut out = out.fact("cpu", c.facts(0.0));
            match c.checked_cpu_s_per_gb(total) {
                Ok(v) => {
                    if let Some(flag) = c.unexplained(0.0) {
                        out.warnings.push(format!("{id}: cpu_s_per_gb: {flag}"));
                    }
                    out.metric("cpu_s_per_gb", vec![v])
                }
                Err(why) => out.not_measured("cpu_s_per_gb", why),
            }
        }
        Err(e) => out.not_measured("cpu_s_per_gb", format!("CPU counters unavailable: {e}")),
    }
}

/// A thread's CPU over `bytes` as `name` (CPU-s per GB), or not measured with the reason.
pub fn with_thread_cpu(
    out: RunOutput,
    name: &'static str,
    ns: Result<u64, String>,
    bytes: u64,
) -> RunOutput {
    match ns.and_then(|ns| {
        crate::platform::clock::thread_cpu_usable(ns, 1)?;
        Ok(ns as f64 / bytes as f64)
    }) {
        Ok(v) => out.metric(name, vec![v]),
        Err(why) => out.not_measured(name, why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(max_size: Option<u64>, quick: bool) -> FsOptions {
        FsOptions {
            max_size,
            quick,
            ..Default::default()
        }
    }

    #[test]
    fn the_stream_is_a_lead_then_the_measured_part_within_the_largest_file_asked() {
        // --max-size below the measured part: the whole stream is measured, no lead.
        let s = Plan::new(&opts(Some(8 * MIB), false));
        assert_eq!((s.lead, s.bytes), (0, 8 * MIB));
        assert!(s.lead_why.contains("--max-size"), "{}", s.lead_why);
        // Above it: the measured 1 GiB, the lead in what is left, in whole calls.
        let s = Plan::new(&opts(Some(3 * DEFAULT_BYTES + 1), false));
        assert_eq!((s.lead, s.bytes), (2 * DEFAULT_BYTES, DEFAULT_BYTES));
        // The quick preset: 64 MiB from the first write, said.
        let s = Plan::new(&opts(None, true));
        assert_eq!((s.lead, s.bytes), (0, QUICK_BYTES));
        assert!(s.lead_why.contains("quick"), "{}", s.lead_why);
        // The standard preset: the OS's writeback threshold where it is read, else none, said.
        let s = Plan::new(&opts(None, false));
        assert_eq!(s.bytes, DEFAULT_BYTES);
        assert_eq!(s.lead % CALL, 0);
        // (MemAvailable moves between two reads: the threshold is compared by its source only.)
        match crate::platform::fs::writeback_threshold() {
            Ok(_) => assert!(
                s.lead_why.starts_with("vm.dirty_background"),
                "{}",
                s.lead_why
            ),
            Err(why) => {
                assert_eq!(s.lead, 0);
                assert!(s.lead_why.starts_with(&why), "{}", s.lead_why);
            }
        }
        // Every size is whole calls.
        let s = Plan::new(&opts(Some(CALL + 5), false));
        assert_eq!((s.lead, s.bytes), (0, CALL));
    }
}
