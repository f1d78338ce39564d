//! Memory suite: load-latency curve with detected cache levels (random and fixed-stride pointer
//! chase), bandwidth (read, write, non-temporal write, copy, STREAM triad) for one thread and a
//! thread sweep, and page-fault service time (minor and major).
//!
//! Options (`osgauge micro mem --only … --max-size … --threads …`) reach the benchmarks through
//! [`MemOptions`]; `osgauge run --preset quick` builds the suite with [`MemOptions::quick`]: a
//! coarse random curve plus copy bandwidth with one thread and all threads.
//!
//! How the latency curve is carried in the record (osgauge.run/1, no schema change): each
//! `mem/latency_*` benchmark has metrics `l1`, `l2`, `l3` (the cache plateaus, detected once per
//! benchmark on the median curve of all runs; every run's value pools its batches at the same
//! working-set sizes) and `ram` (the largest working set), each with per-run samples, CI and
//! histogram like any metric. Each run's own detection is `run_facts[].run_levels`. The
//! whole curve is the structured fact `curve` in the benchmark's params:
//! `[{size_bytes, ns_per_load, ns_min_run, ns_max_run, runs}]` (median over runs), next to
//! `levels` (`[{level, ns_per_load, from_bytes, ends_at_bytes, next_size_bytes,
//! reported_cache_bytes, matches_record_within_one_step}]` plus the memory plateau). A report can
//! plot `curve` directly; `--export-csv` adds one row per point (metric `curve@<size_bytes>`).

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str =
    "Memory: load-latency curve with cache levels, bandwidth (1 thread and all), page faults";

/// The figures the summary of a run shows first for this suite, in this order.
pub const HEADLINES: Headlines = Headlines::Listed(&[
    Headline::new("mem/latency_random", "ram", "load latency, RAM"),
    Headline::new("mem/bandwidth_1t", "copy", "copy bandwidth, 1 thread"),
    Headline::new("mem/bandwidth_all", "copy", "copy bandwidth, all CPUs"),
]);

use crate::units::format_size;
use std::sync::OnceLock;

use super::Benchmark;
use super::{Headline, Headlines};
use crate::system::{Cache, CacheKind};

/// Rate at which fresh anonymous memory is faulted in, assumed by the estimates (bytes/s; 4 KiB
/// page faults on this project's 2-core VM: ~2–3 GB/s).
pub(crate) const FAULT_IN_BYTES_PER_S: f64 = 2.5e9;
/// Memory bandwidth assumed by the estimates (bytes/s; measured 8–10 GB/s here).
pub(crate) const ASSUMED_BANDWIDTH_BYTES_PER_S: f64 = 8e9;

pub mod bandwidth;
pub mod latency;
pub mod page_fault;
pub mod plateau;

/// The parts of the suite `--only` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Latency,
    Bandwidth,
    PageFaults,
}

/// A thread count for the bandwidth sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    N(usize),
    /// Every CPU the run may use (`platform::allowed_cpus()`).
    All,
}

/// How the mem suite is configured.
#[derive(Debug, Clone, Default)]
pub struct MemOptions {
    /// Parts to build; empty = all.
    pub only: Vec<Part>,
    /// Largest latency working set and largest bandwidth footprint (all arrays), bytes.
    pub max_size: Option<u64>,
    /// Bandwidth thread counts; None = 1, powers of two below the CPU count, and all.
    pub threads: Option<Vec<Threads>>,
    /// The quick preset's lighter configuration.
    pub quick: bool,
}

impl MemOptions {
    pub fn quick() -> MemOptions {
        MemOptions {
            quick: true,
            ..Default::default()
        }
    }
    fn wants(&self, p: Part) -> bool {
        self.only.is_empty() || self.only.contains(&p)
    }
}

/// Default cap of the latency curve (lmbench's and the seed's 512 MB), bytes.
pub const DEFAULT_MAX_LATENCY: u64 = 512 << 20;
/// Share of the memory the OS says is available that the suite may use at most.
pub const AVAILABLE_SHARE: f64 = 0.25;

pub fn benchmarks(opts: &MemOptions) -> Vec<Box<dyn Benchmark>> {
    let mut v: Vec<Box<dyn Benchmark>> = Vec::new();
    if opts.wants(Part::Latency) {
        use latency::{Latency, Pages, Pattern};
        v.push(Box::new(Latency::new(Pattern::Random, Pages::Base, opts)));
        if !opts.quick {
            v.push(Box::new(Latency::new(Pattern::Random, Pages::Huge, opts)));
            v.push(Box::new(Latency::new(
                Pattern::Stride(64),
                Pages::Base,
                opts,
            )));
            v.push(Box::new(Latency::new(
                Pattern::Stride(256),
                Pages::Base,
                opts,
            )));
        }
    }
    if opts.wants(Part::Bandwidth) {
        // The quick preset's benchmarks share one set of arrays (faulted in once, not per
        // benchmark); the standard ones keep their own.
        let shared = bandwidth::Pool::default();
        for t in thread_sweep(opts) {
            v.push(Box::new(if opts.quick {
                bandwidth::Bandwidth::sharing(t, opts, &shared)
            } else {
                bandwidth::Bandwidth::new(t, opts)
            }));
        }
    }
    if opts.wants(Part::PageFaults) && !opts.quick {
        v.push(Box::new(page_fault::PageFault::new()));
    }
    v
}

/// Number of CPUs the run may use (at least 1).
pub fn allowed_cpu_count() -> usize {
    crate::platform::allowed_cpus()
        .map(|c| c.len())
        .unwrap_or_else(|_| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// The thread counts to measure, deduplicated, in ascending order ("all" last).
pub fn thread_sweep(opts: &MemOptions) -> Vec<Threads> {
    let all = allowed_cpu_count();
    let wanted = match (&opts.threads, opts.quick) {
        (Some(t), _) => t.clone(),
        (None, true) => vec![Threads::N(1), Threads::All],
        (None, false) => {
            let mut v = Vec::new();
            let mut n = 1;
            while n < all {
                v.push(Threads::N(n));
                n *= 2;
            }
            v.push(Threads::All);
            v
        }
    };
    let mut out: Vec<Threads> = Vec::new();
    let has_all = wanted.contains(&Threads::All);
    let mut ns: Vec<usize> = wanted
        .iter()
        .filter_map(|t| match t {
            Threads::N(n) if !(has_all && *n == all) => Some(*n),
            _ => None,
        })
        .collect();
    ns.sort_unstable();
    ns.dedup();
    out.extend(ns.into_iter().map(Threads::N));
    if has_all {
        out.push(Threads::All);
    }
    out
}

/// Validate `--threads` against the CPUs this run may use.
pub fn validate_threads(t: &[Threads]) -> Result<(), String> {
    let all = allowed_cpu_count();
    for x in t {
        if let Threads::N(n) = x
            && (*n == 0 || *n > all)
        {
            return Err(format!(
                "--threads {n}: must be between 1 and the {all} CPU(s) this run may use (or 'all')"
            ));
        }
    }
    Ok(())
}

/// Parse one `--threads` item: a positive count or "all".
pub fn parse_threads(s: &str) -> Result<Threads, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(Threads::All);
    }
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Threads::N(n)),
        _ => Err(format!("'{s}' is not a thread count (1, 2, … or 'all')")),
    }
}

/// The warning for a `--max-size` the machine could not honour (`applied` bytes instead, for
/// `why`), or None when it was.
pub fn max_size_warning(asked: Option<u64>, applied: u64, why: &str) -> Option<String> {
    let asked = asked.filter(|&a| applied < a)?;
    Some(format!(
        "--max-size {} reduced to {}: {why}",
        format_size(asked),
        format_size(applied)
    ))
}

/// Validate `--max-size`: at least 64 KiB so a curve has several points.
pub fn validate_max_size(b: u64) -> Result<(), String> {
    if b < 64 << 10 {
        return Err(format!(
            "--max-size {}: must be at least 64KiB",
            format_size(b)
        ));
    }
    Ok(())
}

/// The machine record, read once per process.
pub fn machine() -> &'static crate::system::Machine {
    static MACHINE: OnceLock<crate::system::Machine> = OnceLock::new();
    MACHINE.get_or_init(crate::platform::sysinfo::machine)
}

/// Data caches from the machine record, by level.
pub fn data_caches() -> &'static [Cache] {
    static CACHES: OnceLock<Vec<Cache>> = OnceLock::new();
    CACHES.get_or_init(|| {
        let mut c: Vec<Cache> = machine()
            .caches
            .iter()
            .filter(|c| matches!(c.kind, CacheKind::Data | CacheKind::Unified))
            .cloned()
            .collect();
        c.sort_by_key(|c| c.level);
        c
    })
}

/// Size of the last-level cache as the machine record reports it, bytes.
pub fn llc_bytes() -> Option<u64> {
    data_caches().iter().filter_map(|c| c.size_bytes).max()
}

/// Largest total the suite may allocate: a share of available memory (None when unknown). The
/// arrays the bandwidth benchmarks keep between their runs count as available (they would be
/// free were they not kept), so a benchmark's size does not depend on which ran before it.
pub fn memory_budget() -> Option<u64> {
    let kept = bandwidth::kept_bytes();
    crate::platform::memory::available_bytes().map(|a| ((a + kept) as f64 * AVAILABLE_SHARE) as u64)
}

/// Page size and THP mode, as facts for every mem benchmark.
pub fn page_facts(out: crate::bench::RunOutput) -> crate::bench::RunOutput {
    let out = match crate::platform::memory::page_size() {
        Ok(p) => out.fact("page_size_bytes", p as u64),
        Err(e) => out.fact("page_size_bytes", e.to_string()),
    };
    match crate::platform::memory::thp_mode() {
        Ok(m) => out.fact("thp_mode", m),
        Err(e) => out.fact("thp_mode", format!("none: {e}")),
    }
}

/// Element types an [`AlignedBuf`] may hold: all-zero bytes are a valid value.
pub trait Zeroable: Copy {}
impl Zeroable for usize {}
impl Zeroable for u64 {}
impl Zeroable for f64 {}

/// A page-aligned, zero-initialised heap buffer. Freed on drop, on every path.
///
/// Its pages are touched, if at all, by the thread that calls [`AlignedBuf::new`], during the
/// call. On Linux and macOS Rust's allocator serves an alignment above 16 bytes from
/// posix_memalign and then writes zeros over the whole buffer, so `new` faults in every page
/// (64 MiB measured here: 16 385 minor faults within the call). On Windows HeapAlloc zeroes it
/// (HEAP_ZERO_MEMORY) within the call too, or hands out fresh pages that are zero already and so
/// left untouched. Where the first touch must come later or on another thread (page faults
/// measured, memory placed near the CPU that uses it), map with `platform::memory::AnonMap`.
pub struct AlignedBuf<T: Zeroable> {
    ptr: *mut T,
    len: usize,
    layout: std::alloc::Layout,
}

// SAFETY: owned memory, like a Box<[T]>.
unsafe impl<T: Zeroable + Send> Send for AlignedBuf<T> {}
// SAFETY: the buffer owns its memory; shared access gives only `&[T]`, and `T: Sync`.
unsafe impl<T: Zeroable + Sync> Sync for AlignedBuf<T> {}

impl<T: Zeroable> AlignedBuf<T> {
    pub const ALIGN: usize = 4096;

    pub fn new(len: usize) -> Result<AlignedBuf<T>, crate::record::BenchError> {
        let bytes = len.max(1).checked_mul(std::mem::size_of::<T>());
        let layout = bytes
            .and_then(|b| std::alloc::Layout::from_size_align(b, Self::ALIGN).ok())
            .ok_or_else(|| crate::record::BenchError::failed("buffer size overflows"))?;
        // SAFETY: non-zero size layout; zero bytes are a valid T (Zeroable).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
        if ptr.is_null() {
            return Err(crate::record::BenchError::failed(format!(
                "could not allocate {}",
                format_size(layout.size() as u64)
            )));
        }
        Ok(AlignedBuf { ptr, len, layout })
    }
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: ptr is valid for len initialised elements.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Zeroable> Drop for AlignedBuf<T> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.cast(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_size_is_checked_and_its_reduction_said() {
        assert!(validate_max_size(1024).is_err());
        let w = max_size_warning(
            Some(100 << 40),
            12 << 30,
            "capped at 50 % of available memory",
        );
        assert_eq!(
            w.as_deref(),
            Some("--max-size 100TiB reduced to 12GiB: capped at 50 % of available memory")
        );
        assert_eq!(max_size_warning(Some(1 << 30), 1 << 30, "x"), None);
        assert_eq!(max_size_warning(None, 1 << 30, "x"), None);
        assert!(validate_max_size(256 << 20).is_ok());
    }

    #[test]
    fn thread_sweep_dedups_and_orders() {
        let all = allowed_cpu_count();
        assert_eq!(parse_threads("all").unwrap(), Threads::All);
        assert_eq!(parse_threads("2").unwrap(), Threads::N(2));
        assert!(parse_threads("0").is_err() && parse_threads("x").is_err());
        let o = MemOptions {
            threads: Some(vec![
                Threads::All,
                Threads::N(1),
                Threads::N(all),
                Threads::N(1),
            ]),
            ..Default::default()
        };
        let s = thread_sweep(&o);
        assert_eq!(s.last(), Some(&Threads::All));
        assert_eq!(
            s.iter().filter(|t| **t == Threads::N(1)).count(),
            usize::from(all > 1)
        );
        assert!(!s.contains(&Threads::N(all)));
        assert!(validate_threads(&[Threads::N(all + 1)]).is_err());
        assert!(validate_threads(&[Threads::N(1), Threads::All]).is_ok());
        let q = thread_sweep(&MemOptions::quick());
        assert_eq!(q.last(), Some(&Threads::All));
    }

    #[test]
    fn quick_is_a_subset_and_only_filters() {
        let full = benchmarks(&MemOptions::default());
        let quick = benchmarks(&MemOptions::quick());
        assert!(quick.len() < full.len());
        let ids: Vec<_> = full.iter().map(|b| b.info().id.clone()).collect();
        for b in &quick {
            assert!(ids.contains(&b.info().id), "{}", b.info().id);
        }
        let lat = benchmarks(&MemOptions {
            only: vec![Part::Latency],
            ..Default::default()
        });
        assert!(lat.iter().all(|b| b.info().id.starts_with("mem/latency")));
    }
}
