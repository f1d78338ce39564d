//! Page-fault service time: minor (first touch of fresh anonymous pages) and major (a file-backed
//! page that is not in the page cache). Faults are counted by the OS (getrusage), because one
//! fault may map many pages (Linux fault-around) — so time is reported per fault and per page.

use std::fs::File;
use std::io::Write;
use std::time::Instant;

use serde_json::Value;

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::platform::memory::{self as pm, AnonMap, FaultCounts, FileMap};
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::{Better, Unit};

/// Anonymous region per minor-fault round, bytes.
pub const ANON_BYTES: usize = 32 << 20;
/// File size for the major-fault test, bytes.
pub const FILE_BYTES: usize = 2 << 20;

pub struct PageFault {
    info: Info,
}

impl PageFault {
    pub fn new() -> PageFault {
        PageFault {
            info: Info {
                id: "mem/page_fault".into(),
                suite: "mem",
                title: "Page-fault service time (minor, major)".into(),
                method: format!(
                    "Minor: map a fresh private anonymous region of {} straight from the OS \
                     (huge pages turned off for it where the OS has them), read the thread's \
                     fault counters, write one byte per page, read the counters again; time per \
                     fault = elapsed / minor faults counted, per page = elapsed / pages. Major: \
                     write a {} file in the temp directory, fsync it and drop its pages from the \
                     page cache (posix_fadvise DONTNEED on Linux), verify with mincore that no \
                     page is resident, map it with read-ahead off (MADV_RANDOM), read one byte per \
                     page; time per fault = elapsed / (major faults counted), per page = elapsed / \
                     pages. Mapping and unmapping are outside the timed window. Rounds repeat for \
                     the run time (at least 3 each); a sample is one round. On a VM the 'disk' \
                     read behind a major fault is usually served by the host's cache.",
                    crate::units::format_size(ANON_BYTES as u64),
                    crate::units::format_size(FILE_BYTES as u64),
                ),
                metrics: vec![
                    MetricSpec {
                        name: "minor_fault",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per minor fault (fresh anonymous page, first write), per OS-counted fault",
                    },
                    MetricSpec {
                        name: "minor_page",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per anonymous page first touched",
                    },
                    MetricSpec {
                        name: "major_fault",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per major fault (file page not in the page cache, read-ahead off), per OS-counted major fault",
                    },
                    MetricSpec {
                        name: "major_page",
                        unit: Unit::Nanoseconds,
                        better: Better::Lower,
                        description: "time per evicted file page first read",
                    },
                ],
            },
        }
    }
}

impl Default for PageFault {
    fn default() -> Self {
        Self::new()
    }
}

fn counts() -> Result<FaultCounts, BenchError> {
    pm::fault_counts().map_err(|e| os_err("getrusage", e))
}

struct Rounds {
    per_fault: Vec<f64>,
    per_page: Vec<f64>,
    faults: Vec<FaultCounts>,
}

impl Rounds {
    fn new() -> Rounds {
        Rounds {
            per_fault: Vec::new(),
            per_page: Vec::new(),
            faults: Vec::new(),
        }
    }
    fn facts(&self) -> Value {
        let minor: Vec<u64> = self.faults.iter().map(|f| f.minor).collect();
        let major: Vec<u64> = self.faults.iter().map(|f| f.major).collect();
        serde_json::json!({ "minor": minor, "major": major })
    }
}

fn minor_rounds(
    ctx: &RunContext,
    page: usize,
    budget: std::time::Duration,
) -> Result<(Rounds, String), BenchError> {
    let pages = ANON_BYTES / page;
    let mut r = Rounds::new();
    let mut applied = String::new();
    let started = Instant::now();
    while r.per_page.len() < 3 || started.elapsed() < budget {
        ctx.check()?;
        let mut m = AnonMap::new(pages * page).map_err(|e| os_err("mmap", e))?;
        applied = m
            .no_huge_pages()
            .map_err(|e| os_err("madvise", e))?
            .to_string();
        let p = m.as_mut_ptr();
        let before = counts()?;
        let t0 = Instant::now();
        for i in 0..pages {
            // SAFETY: inside the mapping.
            unsafe { p.add(i * page).write_volatile(1) };
        }
        let dt = t0.elapsed().as_nanos() as f64;
        let d = counts()?.since(before);
        drop(m);
        if d.minor == 0 {
            return Err(BenchError::failed(
                "no minor fault counted while touching fresh pages",
            ));
        }
        r.per_fault.push(dt / d.minor as f64);
        r.per_page.push(dt / pages as f64);
        r.faults.push(d);
    }
    Ok((r, applied))
}

/// Why major faults cannot be measured here, or the measured rounds and what was applied.
fn major_rounds(
    ctx: &RunContext,
    page: usize,
    budget: std::time::Duration,
) -> Result<Result<(Rounds, String, String), String>, BenchError> {
    let dir = std::env::temp_dir();
    // Named after this process, so a later osgauge removes it if this one is killed.
    let tmp = crate::tempfiles::dir("pagefault").map_err(|e| os_err("creating a temp dir", e))?;
    let path = tmp.path().join("major_fault.dat");
    let pages = FILE_BYTES / page;
    {
        let mut f = File::create(&path).map_err(|e| os_err("create", e))?;
        let block: Vec<u8> = (0..page).map(|i| (i % 251) as u8 + 1).collect();
        for _ in 0..pages {
            f.write_all(&block).map_err(|e| os_err("write", e))?;
        }
        f.sync_all().map_err(|e| os_err("fsync", e))?;
    }
    let f = File::open(&path).map_err(|e| os_err("open", e))?;
    let mut r = Rounds::new();
    let mut evict = String::new();
    let mut advice = String::new();
    let started = Instant::now();
    while r.per_page.len() < 3 || started.elapsed() < budget {
        ctx.check()?;
        evict = match pm::evict_file_pages(&f) {
            Ok(how) => how.to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return Ok(Err(e.to_string())),
            Err(e) => return Err(os_err("evicting the file's pages", e)),
        };
        let m = FileMap::new(&f, FILE_BYTES).map_err(|e| os_err("mmap", e))?;
        advice = m
            .advise_random()
            .map_err(|e| os_err("madvise", e))?
            .to_string();
        let resident = m.resident_pages().map_err(|e| os_err("mincore", e))?;
        if resident > 0 {
            return Ok(Err(format!(
                "{resident} of {pages} file pages stayed in memory after {evict} (is {} on a \
                 memory-backed file system such as tmpfs? set TMPDIR to a disk directory)",
                dir.display()
            )));
        }
        let p = m.as_ptr();
        let mut sum = 0u64;
        let before = counts()?;
        let t0 = Instant::now();
        for i in 0..pages {
            // SAFETY: inside the mapping.
            sum += u64::from(unsafe { p.add(i * page).read_volatile() });
        }
        let dt = t0.elapsed().as_nanos() as f64;
        let d = counts()?.since(before);
        drop(m);
        // Every page starts with byte 1: proves each page was really read.
        if sum != pages as u64 {
            return Err(BenchError::failed(format!(
                "read back {sum} from {pages} pages, expected {pages}"
            )));
        }
        if d.major == 0 {
            return Ok(Err(format!(
                "no major fault counted after the pages were evicted ({} minor): the OS served \
                 them without I/O",
                d.minor
            )));
        }
        r.per_fault.push(dt / d.major as f64);
        r.per_page.push(dt / pages as f64);
        r.faults.push(d);
    }
    drop(f);
    drop(tmp);
    Ok(Ok((r, evict, advice)))
}

impl Benchmark for PageFault {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let page = pm::page_size().map_err(|e| os_err("page size", e))?;
        counts()?;
        let budget = ctx.run_time / 2;
        let (minor, applied) = minor_rounds(ctx, page, budget)?;
        let mut out = RunOutput::default()
            .metric("minor_fault", minor.per_fault.clone())
            .metric("minor_page", minor.per_page.clone())
            .fact("minor_pages_per_round", (ANON_BYTES / page) as u64)
            .fact("minor_faults_per_round", minor.facts())
            .fact("minor_huge_pages", applied)
            .fact("fault_counter", pm::fault_counter_scope());
        match major_rounds(ctx, page, budget)? {
            Ok((major, evict, advice)) => {
                out = out
                    .metric("major_fault", major.per_fault.clone())
                    .metric("major_page", major.per_page.clone())
                    .fact("major_pages_per_round", (FILE_BYTES / page) as u64)
                    .fact("major_faults_per_round", major.facts())
                    .fact("major_eviction", evict)
                    .fact("major_readahead", advice)
                    .fact("major_file_dir", std::env::temp_dir().display().to_string());
                if super::machine().virtualization.virtualized == Some(true) {
                    out.warnings.push(
                        "virtual machine: a major fault's read is likely served by the host's \
                         page cache, not the disk"
                            .into(),
                    );
                }
            }
            Err(why) => {
                out = out
                    .not_measured("major_fault", format!("unsupported: {why}"))
                    .not_measured("major_page", format!("unsupported: {why}"))
                    .fact("major", format!("unsupported: {why}"));
                out.warnings
                    .push(format!("major faults not measured: {why}"));
            }
        }
        Ok(super::page_facts(out))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn faults_are_counted_and_timed() {
        let t = crate::bench::testutil::TestCtx::new();
        let ctx = t.ctx(Duration::from_millis(10), Duration::from_secs(60));
        let out = PageFault::new().run(&ctx).unwrap();
        let get = |n: &str| {
            out.samples
                .iter()
                .find(|(m, _)| *m == n)
                .map(|x| x.1.clone())
        };
        let minor = get("minor_fault").unwrap();
        assert!(minor.len() >= 3 && minor.iter().all(|&v| v > 0.0));
        let counts = &out.facts["minor_faults_per_round"]["minor"];
        let pages = out.facts["minor_pages_per_round"].as_u64().unwrap();
        assert!(
            counts
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c.as_u64().unwrap() >= 1)
        );
        assert!(pages > 0);
        // Major faults: measured, or said why not.
        assert!(get("major_fault").is_some() || out.facts.contains_key("major"));
    }
}
