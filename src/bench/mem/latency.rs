//! Memory load latency curve: a dependent-load pointer chase ("back-to-back loads", lmbench's
//! `lat_mem_rd` definition) over working sets from 1 KiB up to at least 4× the last-level cache,
//! with the cache levels detected from the curve and set next to the sizes the machine reports.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::plateau::{self, Point, Tolerances};
use super::{AlignedBuf, MemOptions};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::format_size;
use crate::units::{Better, Unit};

/// How the chain visits the working set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// One pointer per cache line, linked in a random single cycle (Sattolo's algorithm):
    /// defeats hardware prefetchers; TLB misses are included once the set exceeds TLB reach.
    Random,
    /// One pointer every `n` bytes, each pointing to the next (wrapping): prefetchers can follow.
    Stride(usize),
}

/// Page size the chase buffer asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// Base pages (huge pages turned off for the buffer where the OS has them): TLB misses
    /// appear once the working set exceeds the TLB's reach, as in lmbench.
    Base,
    /// Transparent huge pages requested: TLB misses mostly vanish, so the steps are the caches.
    Huge,
}

/// The chase buffer: a fresh mapping with the page advice applied, or ordinary heap memory where
/// the OS has no such mapping call.
enum ChaseBuf {
    Map(crate::platform::memory::AnonMap),
    Heap(AlignedBuf<usize>),
}

impl ChaseBuf {
    fn as_mut_slice(&mut self) -> &mut [usize] {
        match self {
            ChaseBuf::Map(m) => {
                let len = m.len() / std::mem::size_of::<usize>();
                // SAFETY: page-aligned mapping of m.len() bytes, zero-filled by the OS.
                unsafe { std::slice::from_raw_parts_mut(m.as_mut_ptr().cast(), len) }
            }
            ChaseBuf::Heap(h) => h.as_mut_slice(),
        }
    }
}

/// Allocate `bytes` for the chase with the page advice of `pages`; returns what was applied.
fn chase_buffer(bytes: usize, pages: Pages) -> Result<(ChaseBuf, String), BenchError> {
    use crate::platform::memory::AnonMap;
    match AnonMap::new(bytes) {
        Ok(m) => {
            let how = match pages {
                Pages::Base => m.no_huge_pages(),
                Pages::Huge => m.huge_pages(),
            }
            .map_err(|e| crate::bench::os_err("madvise", e))?;
            Ok((ChaseBuf::Map(m), how.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported && pages == Pages::Base => Ok((
            ChaseBuf::Heap(AlignedBuf::new(bytes / std::mem::size_of::<usize>())?),
            format!("heap memory, OS default pages ({e})"),
        )),
        Err(e) => Err(crate::bench::os_err("mmap", e)),
    }
}

/// Loads per loop iteration in the chase (the loop's own work overlaps the load latency).
pub const UNROLL: u64 = 8;
const SEED: u64 = 0x05ca_1ab1_e0dd_ba11;

pub struct Latency {
    info: Info,
    pattern: Pattern,
    pages: Pages,
    max_size: Option<u64>,
    quick: bool,
    /// Every measured (non-warm-up) run's points of this benchmark's current series (cleared
    /// when a new series starts with measured run 0); `finish` detects the levels once on their
    /// median curve and names every run's values by working-set size.
    measured: Mutex<Vec<Measured>>,
}

const L_DESC: [&str; 3] = [
    "ns per dependent load on the first cache plateau (L1), detected once on the median curve of \
     all runs; each run's value pools its batches at the plateau's working-set sizes",
    "ns per dependent load on the second cache plateau (L2), detected once on the median curve of \
     all runs; each run's value pools its batches at the plateau's working-set sizes",
    "ns per dependent load on the third cache plateau (L3), detected once on the median curve of \
     all runs; each run's value pools its batches at the plateau's working-set sizes",
];
const L_NAMES: [&str; 3] = ["l1", "l2", "l3"];

impl Latency {
    pub fn new(pattern: Pattern, pages: Pages, opts: &MemOptions) -> Latency {
        let (id, title, how) = match pattern {
            Pattern::Random => (
                match pages {
                    Pages::Base => "mem/latency_random".to_string(),
                    Pages::Huge => "mem/latency_random_hugepages".to_string(),
                },
                match pages {
                    Pages::Base => "Load latency curve, random single-cycle chase".to_string(),
                    Pages::Huge => {
                        "Load latency curve, random single-cycle chase, huge pages".to_string()
                    }
                },
                "one pointer per cache line, linked in a random single cycle (Sattolo's \
                 algorithm), so hardware prefetchers cannot predict the next line"
                    .to_string(),
            ),
            Pattern::Stride(s) => (
                format!("mem/latency_stride{s}"),
                format!("Load latency curve, fixed {s}-byte stride chase"),
                format!(
                    "one pointer every {s} bytes, each pointing to the next and the last back \
                     to the first (a sequential chain prefetchers can follow, as in lmbench's \
                     default lat_mem_rd)"
                ),
            ),
        };
        let method = format!(
            "Dependent loads (p = *p, {UNROLL} per loop iteration) over working sets from 1 KiB \
             up to max(512 MiB, 4× the last-level cache) (never more than {share:.0} % of \
             available memory; --max-size overrides), sizes 2^k and 1.5·2^k (quick preset: 2^k, \
             up to 4× LLC). Chain: {how}. Each working set is built, traversed once to warm it, \
             then timed in harness batches (clock overhead subtracted; the loop counter overlaps \
             the load latency, so no loop overhead is subtracted); its point is the batch median. \
             No harness warm-up run: every run maps, builds and warms each working set itself \
             and discards its batch-sizing batches, all a warm-up run would do. \
             Pages: {pages}. Plateaus are detected once per benchmark, after all runs, on the median curve over runs (a point joins a plateau while it rises ≤ ~30 % \
             per step and ≤ 80 % over the plateau's start; plateaus within 35 % merge; see plateau.rs), named L1, L2, L3 in \
             order, and memory once they start above the largest reported cache (or stay flat at twice it, or are over 0.6× as slow as memory). Each run's value for a cache level \
             pools that run's batches at the level's working-set sizes (so every run's l2 is measured at the same sizes; each run's own detection is the fact `run_levels`); 'ram' is the largest working set (past the LLC \
             the curve only approaches memory latency as cache hits become rare). Facts: `curve` = [{{size_bytes, ns_per_load, \
             ns_min_run, ns_max_run, runs}}] (median over runs), `levels` with where each ends \
             next to the cache sizes the machine record reports, page size and THP mode. ns only: \
             cycles need a core-clock counter, and an invariant TSC is not one.",
            share = super::AVAILABLE_SHARE * 100.0,
            pages = match pages {
                Pages::Base =>
                    "a fresh mapping with huge pages turned off (MADV_NOHUGEPAGE on \
                                Linux), so TLB misses add to the latency once the set exceeds \
                                the TLB's reach",
                Pages::Huge =>
                    "a fresh mapping with transparent huge pages requested \
                                (MADV_HUGEPAGE); the bytes the OS really backed with huge pages \
                                are recorded (huge_page_bytes)",
            }
        );
        let mut metrics: Vec<MetricSpec> = (0..3)
            .map(|i| MetricSpec {
                name: ["l1", "l2", "l3"][i],
                unit: Unit::Nanoseconds,
                better: Better::Lower,
                description: L_DESC[i],
            })
            .collect();
        metrics.push(MetricSpec {
            name: "ram",
            unit: Unit::Nanoseconds,
            better: Better::Lower,
            description: "ns per dependent load at the largest working set (≥ 4× the last-level \
                          cache by default; TLB misses included, as in lmbench)",
        });
        Latency {
            info: Info {
                id,
                suite: "mem",
                title,
                method,
                metrics,
            },
            pattern,
            pages,
            max_size: opts.max_size,
            quick: opts.quick,
            measured: Mutex::new(Vec::new()),
        }
    }

    fn element_bytes(&self) -> usize {
        match self.pattern {
            Pattern::Random => super::data_caches()
                .iter()
                .filter_map(|c| c.line_size_bytes)
                .max()
                .map_or(64, |l| l as usize)
                .max(std::mem::size_of::<usize>()),
            Pattern::Stride(s) => s.max(std::mem::size_of::<usize>()),
        }
    }

    /// The largest working set and why.
    fn max_working_set(&self) -> (u64, String) {
        let llc = super::llc_bytes();
        let (mut max, mut why) = match (self.max_size, self.quick) {
            (Some(m), _) => (m, "--max-size".to_string()),
            (None, true) => (
                llc.map_or(128 << 20, |l| (4 * l).next_power_of_two())
                    .min(super::DEFAULT_MAX_LATENCY),
                "quick preset: 4× the last-level cache, at most 512 MiB".to_string(),
            ),
            (None, false) => (
                llc.map_or(super::DEFAULT_MAX_LATENCY, |l| {
                    super::DEFAULT_MAX_LATENCY.max((4 * l).next_power_of_two())
                }),
                "default: max(512 MiB, 4× the last-level cache)".to_string(),
            ),
        };
        if let Some(b) = super::memory_budget()
            && max > b
        {
            max = b;
            why = format!(
                "capped at {:.0} % of available memory",
                super::AVAILABLE_SHARE * 100.0
            );
        }
        (max, why)
    }
}

/// Working-set sizes from 1 KiB to `max`: 2^k and 1.5·2^k (or only 2^k when `coarse`), each a
/// multiple of `elem` holding at least two elements, and `max` itself.
pub fn sizes(max: u64, elem: u64, coarse: bool) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s: u64 = 1024;
    while s <= max {
        v.push(s);
        let mid = s + s / 2;
        if !coarse && mid <= max {
            v.push(mid);
        }
        s *= 2;
    }
    if v.last() != Some(&max) {
        v.push(max);
    }
    v.retain(|&x| x % elem == 0 && x / elem >= 2);
    v
}

/// splitmix64: a fast, well-mixed generator (determinism matters, cryptography does not).
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce5_e9b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Link `n` elements, `step` words apart, at the start of `buf`, into one cycle: element i's
/// first word becomes the address of its successor. Random: Sattolo's algorithm (a uniformly
/// random permutation with a single cycle) on a compact u32 successor array (4 bytes per
/// element, freed on return), then one sequential pass writes the addresses. Calls `check`
/// every 64 Ki steps.
pub fn build_chain(
    buf: &mut [usize],
    n: usize,
    step: usize,
    random: bool,
    seed: u64,
    mut check: impl FnMut() -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    assert!(n >= 2 && (n - 1) * step < buf.len() && n <= u32::MAX as usize);
    let base = buf.as_ptr();
    let addr = |k: usize| base.wrapping_add(k * step).expose_provenance();
    if random {
        let mut next: Vec<u32> = (0..n as u32).collect();
        let mut st = seed;
        for i in (1..n).rev() {
            if i % 65536 == 0 {
                check()?;
            }
            // j uniform in [0, i): Sattolo (j < i) makes the permutation a single cycle.
            let j = ((splitmix(&mut st) as u128 * i as u128) >> 64) as usize;
            next.swap(i, j);
        }
        for (i, &nx) in next.iter().enumerate() {
            buf[i * step] = addr(nx as usize);
        }
    } else {
        for i in 0..n {
            buf[i * step] = addr((i + 1) % n);
        }
    }
    check()
}

/// Follow the chain `n` times from `p`; returns where it ended (keep it alive with black_box).
///
/// # Safety
/// `p` must point into a live chain built by [`build_chain`] (every element holds the address of
/// another element of the same live buffer).
#[inline(never)]
pub unsafe fn chase(mut p: *const usize, n: u64) -> *const usize {
    // SAFETY: guaranteed by the caller.
    unsafe {
        for _ in 0..n / UNROLL {
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
            p = std::ptr::with_exposed_provenance(*p);
        }
        for _ in 0..n % UNROLL {
            p = std::ptr::with_exposed_provenance(*p);
        }
    }
    p
}

#[derive(Clone)]
struct Measured {
    curve: Vec<Point>,
    /// Batch samples per point.
    samples: Vec<Vec<f64>>,
}

/// Time to build one element of a chain, assumed by the estimate, s: a random chain shuffles a
/// permutation (Sattolo, cache-missing swaps) and writes one pointer per element; a strided one
/// only writes. Measured here (2-core VM, quick preset, 512 MiB cap: 16.8 M elements over the
/// grid per run): 51–60 ns per random element from whole runs, quiet (an earlier 25–40 ns
/// timed the build alone and left the walk at memory speed out); ~6 ns per strided element.
const BUILD_S_PER_ELEMENT_RANDOM: f64 = 55e-9;
const BUILD_S_PER_ELEMENT_STRIDED: f64 = 6e-9;

impl Benchmark for Latency {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        let (max, why) = self.max_working_set();
        m.insert("max_working_set_bytes".into(), max.into());
        m.insert("max_working_set_reason".into(), why.into());
        m.insert("element_bytes".into(), (self.element_bytes() as u64).into());
        m.insert(
            "grid".into(),
            if self.quick {
                "2^k"
            } else {
                "2^k and 1.5·2^k"
            }
            .into(),
        );
        m.insert("loads_per_iteration".into(), UNROLL.into());
        m.insert("seed".into(), SEED.into());
        m
    }

    /// Each run builds a chain at every working set of the grid (random or strided writes over the
    /// set) after faulting in the largest, then measures the grid within the run time.
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let (max, _) = self.max_working_set();
        let elem = self.element_bytes() as u64;
        let elements: u64 = sizes(max, elem, self.quick).iter().map(|s| s / elem).sum();
        let per_element = if self.pattern == Pattern::Random {
            BUILD_S_PER_ELEMENT_RANDOM
        } else {
            BUILD_S_PER_ELEMENT_STRIDED
        };
        e.timed(elements as f64 * per_element + max as f64 / super::FAULT_IN_BYTES_PER_S)
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let elem = self.element_bytes();
        let step = elem / std::mem::size_of::<usize>();
        let (max, _) = self.max_working_set();
        let grid = sizes(max, elem as u64, self.quick);
        if grid.len() < 3 {
            return Err(BenchError::failed(format!(
                "working-set cap {} leaves fewer than 3 sizes",
                format_size(max)
            )));
        }
        let largest = *grid.last().unwrap_or(&max);
        let huge_before = crate::platform::memory::anon_huge_bytes();
        let (mut buf, page_advice) = chase_buffer(largest as usize, self.pages)?;
        let mut huge_bytes: Option<u64> = None;
        let per_point = ctx.run_time / grid.len() as u32;
        let mut m = Measured {
            curve: Vec::new(),
            samples: Vec::new(),
        };
        let seed = SEED ^ u64::from(ctx.run_index);
        for &ws in &grid {
            ctx.check()?;
            let n = ws as usize / elem;
            let slice = buf.as_mut_slice();
            build_chain(
                slice,
                n,
                step,
                self.pattern == Pattern::Random,
                seed,
                || ctx.check(),
            )?;
            if ws == largest {
                huge_bytes = crate::platform::memory::anon_huge_bytes()
                    .zip(huge_before)
                    .map(|(a, b)| a.saturating_sub(b));
            }
            let mut p: *const usize = slice.as_ptr();
            // Warm: one traversal (at most 256 Ki loads) puts the set in the caches it fits;
            // sets over 2× the LLC do not fit, so a few loads warm the page tables only.
            let cap = if ws > 2 * super::llc_bytes().unwrap_or(32 << 20) {
                1 << 14
            } else {
                1 << 18
            };
            let mut left = (n as u64).min(cap);
            while left > 0 {
                let k = left.min(1 << 16);
                // SAFETY: p is in the chain just built in `buf`.
                p = unsafe { chase(p, k) };
                left -= k;
                ctx.check()?;
            }
            let samples = ctx.with_run_time(per_point).time_batches(
                BatchOptions {
                    min_batches: 5,
                    ..Default::default()
                },
                |k| {
                    // SAFETY: as above.
                    p = unsafe { chase(p, k) };
                    Ok(())
                },
            )?;
            black_box(p);
            let ns = crate::stats::median(&samples);
            m.curve.push(Point { size_bytes: ws, ns });
            m.samples.push(samples);
        }
        drop(buf);
        let mut out = self.output(&m, largest, grid_ratio(&grid));
        if !ctx.warmup {
            let mut runs = self.measured.lock().unwrap_or_else(|e| e.into_inner());
            if ctx.run_index == 0 {
                // A new series of runs of this benchmark.
                runs.clear();
            }
            runs.push(m);
        }
        out = out.fact("page_advice", page_advice);
        let (max, why) = self.max_working_set();
        out.warnings
            .extend(super::max_size_warning(self.max_size, max, &why));
        if let Some(h) = huge_bytes {
            out = out.fact("huge_page_bytes", h);
            if self.pages == Pages::Huge && h < largest / 2 {
                out.warnings.push(format!(
                    "huge pages requested but only {} of the {} buffer got them",
                    format_size(h),
                    format_size(largest)
                ));
            }
        }
        Ok(out)
    }

    fn finish(&self, runs: &mut [RunOutput]) -> serde_json::Map<String, Value> {
        self.finish_runs(runs)
    }

    /// Every run maps a fresh buffer, builds and warms each working set before timing it.
    fn warms_itself(&self) -> bool {
        true
    }
}

/// Typical size ratio between neighbouring points of a grid (geometric mean).
fn grid_ratio(grid: &[u64]) -> f64 {
    let (a, b) = (grid[0] as f64, *grid.last().unwrap_or(&grid[0]) as f64);
    (b / a).powf(1.0 / (grid.len().max(2) - 1) as f64)
}

impl Latency {
    /// One run's output: its own levels give its samples (what a lone run reports; the runner's
    /// `finish` renames every run's values by the levels detected once over all runs), `ram`,
    /// and this run's facts.
    fn output(&self, m: &Measured, largest: u64, ratio: f64) -> RunOutput {
        let tol = Tolerances::for_grid(ratio);
        let llc = super::llc_bytes();
        let mut out = RunOutput::default();
        let plats = plateau::detect(&m.curve, tol);
        let levels = plateau::classify(&m.curve, &plats, llc);
        for (i, c) in levels.caches.iter().take(3).enumerate() {
            let pooled: Vec<f64> = m.samples[c.first..=c.last]
                .iter()
                .flatten()
                .copied()
                .collect();
            out = out.metric(L_NAMES[i], pooled);
        }
        // RAM: the largest working set. Past the LLC the curve only approaches memory latency as
        // the share of cache hits falls, so the largest set (≥ 4× LLC) is the best estimate; the
        // detected memory plateau is in the `levels` fact.
        if let Some(s) = m.samples.last() {
            out = out.metric("ram", s.clone());
        }
        out = out.fact("run_levels", run_levels_fact(&m.curve, &levels));
        if let Some(l) = llc.filter(|&l| largest < 4 * l) {
            // Cache hits make a load cheaper: memory's own latency is at least this figure.
            out = out.bounded(
                "ram",
                crate::record::BoundKind::AtLeast,
                format!(
                    "the curve ends at {}, below 4× the last-level cache ({}): the largest set \
                     still hits the cache, so memory latency is at least this",
                    format_size(largest),
                    format_size(l)
                ),
            );
        }
        if let Pattern::Stride(s) = self.pattern {
            out.warnings.push(format!(
                "stride {s} B is a prefetchable pattern: its plateaus show prefetched latency, not \
                 cache latency (use mem/latency_random for that)"
            ));
        }
        out = out.fact(
            "cycles",
            match crate::platform::memory::core_cycle_counter() {
                Ok(()) => "available".to_string(),
                Err(why) => format!("not reported: {why}"),
            },
        );
        super::page_facts(out)
    }
}

/// Where one run's own detection put its levels (for diagnosis: the metrics use the levels
/// detected once over all runs).
fn run_levels_fact(curve: &[Point], lv: &plateau::Levels) -> Value {
    let mut arr: Vec<Value> = lv
        .caches
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"level": format!("L{}", i + 1), "from_bytes": curve[p.first].size_bytes,
                   "ends_at_bytes": curve[p.last].size_bytes, "ns_per_load": p.ns})
        })
        .collect();
    if let Some(p) = &lv.memory {
        arr.push(
            json!({"level": "memory", "from_bytes": curve[p.first].size_bytes,
                        "ends_at_bytes": curve[p.last].size_bytes, "ns_per_load": p.ns}),
        );
    }
    Value::Array(arr)
}

/// Levels detected once on the median curve of all runs, and every run's cache-level samples
/// assigned by working-set size.
struct Assigned {
    /// Median over runs per size, sorted by size.
    median_curve: Vec<Point>,
    /// `{size_bytes, ns_per_load, ns_min_run, ns_max_run, runs}` per size.
    curve_json: Vec<Value>,
    levels: plateau::Levels,
    /// Per run: (metric name, pooled samples) for each detected cache level (at most 3).
    per_run: Vec<Vec<(&'static str, Vec<f64>)>>,
    /// Runs whose own detection found a different number of cache levels, or levels ending at
    /// different sizes: (run index, its own cache levels' end sizes).
    disagreeing: Vec<(usize, Vec<u64>)>,
}

fn assign_levels(runs: &[Measured], tol: Tolerances, llc: Option<u64>) -> Assigned {
    let mut by_size: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for m in runs {
        for p in &m.curve {
            by_size.entry(p.size_bytes).or_default().push(p.ns);
        }
    }
    let mut median_curve = Vec::new();
    let mut curve_json = Vec::new();
    for (&size, v) in &by_size {
        let med = crate::stats::median(v);
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        median_curve.push(Point {
            size_bytes: size,
            ns: med,
        });
        curve_json.push(json!({
            "size_bytes": size, "ns_per_load": med, "ns_min_run": lo, "ns_max_run": hi,
            "runs": v.len(),
        }));
    }
    let plats = plateau::detect(&median_curve, tol);
    let levels = plateau::classify(&median_curve, &plats, llc);
    let ranges: Vec<(u64, u64)> = levels
        .caches
        .iter()
        .take(3)
        .map(|c| {
            (
                median_curve[c.first].size_bytes,
                median_curve[c.last].size_bytes,
            )
        })
        .collect();
    let ends: Vec<u64> = ranges.iter().map(|r| r.1).collect();
    let mut per_run = Vec::new();
    let mut disagreeing = Vec::new();
    for (r, m) in runs.iter().enumerate() {
        let mut v = Vec::new();
        for (i, &(from, to)) in ranges.iter().enumerate() {
            let pooled: Vec<f64> = m
                .curve
                .iter()
                .zip(&m.samples)
                .filter(|(p, _)| p.size_bytes >= from && p.size_bytes <= to)
                .flat_map(|(_, s)| s.iter().copied())
                .collect();
            v.push((L_NAMES[i], pooled));
        }
        per_run.push(v);
        let own = plateau::classify(&m.curve, &plateau::detect(&m.curve, tol), llc);
        let own_ends: Vec<u64> = own
            .caches
            .iter()
            .take(3)
            .map(|c| m.curve[c.last].size_bytes)
            .collect();
        if own_ends != ends {
            disagreeing.push((r, own_ends));
        }
    }
    Assigned {
        median_curve,
        curve_json,
        levels,
        per_run,
        disagreeing,
    }
}

impl Latency {
    /// After all runs: detect the levels once, rename every run's cache-level values by
    /// working-set size, and return the `curve` and `levels` facts.
    fn finish_runs(&self, outs: &mut [RunOutput]) -> serde_json::Map<String, Value> {
        // A copy, not a take: the runner calls `finish` after every round on the runs so far and
        // once more at the end; a take left the final call nothing (the record had no levels
        // and no curve, each run kept its own level detection without a word).
        let runs = self
            .measured
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut facts = serde_json::Map::new();
        if runs.is_empty() {
            return facts;
        }
        if runs.len() != outs.len() {
            // Cannot happen through the runner; keep each run's own naming and say so.
            let n = outs.len();
            if let Some(o) = outs.first_mut() {
                o.warnings.push(format!(
                    "cache levels named per run: {} runs measured but {n} outputs to finish",
                    runs.len(),
                ));
            }
            return facts;
        }
        let grid: Vec<u64> = runs[0].curve.iter().map(|p| p.size_bytes).collect();
        let tol = Tolerances::for_grid(grid_ratio(&grid));
        let a = assign_levels(&runs, tol, super::llc_bytes());
        for (out, assigned) in outs.iter_mut().zip(a.per_run) {
            out.samples.retain(|(n, _)| !L_NAMES.contains(n));
            for (name, s) in assigned {
                out.samples.push((name, s));
            }
        }
        let mut warnings = Vec::new();
        if !a.disagreeing.is_empty() {
            let which: Vec<String> = a
                .disagreeing
                .iter()
                .map(|(r, ends)| {
                    let e: Vec<String> = ends.iter().map(|&b| format_size(b)).collect();
                    format!(
                        "run {} ({} levels ending at {})",
                        r + 1,
                        ends.len(),
                        e.join(", ")
                    )
                })
                .collect();
            warnings.push(format!(
                "cache levels differ between runs: {} — every run's l1–l3 are taken at the \
                 working-set sizes of the levels detected once on the median curve (see \
                 'levels'; each run's own detection is in run_facts[].run_levels)",
                which.join("; ")
            ));
        }
        let reported_levels = super::data_caches()
            .iter()
            .map(|c| c.level)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if a.levels.caches.len() < reported_levels {
            warnings.push(format!(
                "{} cache level(s) detected, the machine reports {reported_levels}: a level may \
                 be shared with and used by other work (a busy machine or VM neighbours)",
                a.levels.caches.len()
            ));
        }
        if a.levels.caches.len() > 3 {
            warnings.push(format!(
                "{} cache-like plateaus detected (more than L1–L3); see the 'levels' fact",
                a.levels.caches.len()
            ));
        }
        let (levels_json, mismatches) = levels_fact(&a.median_curve, &a.levels);
        warnings.extend(mismatches);
        outs[0].warnings.extend(warnings);
        facts.insert("curve".into(), Value::Array(a.curve_json));
        facts.insert("levels".into(), levels_json);
        facts
    }
}

/// The `levels` fact and warnings where a detected level does not end within one grid step of
/// the cache size the machine record reports for it.
fn levels_fact(curve: &[Point], lv: &plateau::Levels) -> (Value, Vec<String>) {
    let caches = super::data_caches();
    let mut warnings = Vec::new();
    let mut arr = Vec::new();
    for (i, p) in lv.caches.iter().enumerate() {
        let reported = caches
            .iter()
            .find(|c| c.level as usize == i + 1)
            .and_then(|c| c.size_bytes);
        let matches = reported
            .and_then(|r| plateau::nearest_index(curve, r).map(|ri| ri.abs_diff(p.last) <= 1));
        if matches == Some(false) {
            warnings.push(format!(
                "detected L{} ends at {} but the machine reports {} for L{}",
                i + 1,
                format_size(curve[p.last].size_bytes),
                format_size(reported.unwrap_or(0)),
                i + 1
            ));
        }
        arr.push(json!({
            "level": format!("L{}", i + 1),
            "ns_per_load": p.ns,
            "from_bytes": curve[p.first].size_bytes,
            "ends_at_bytes": curve[p.last].size_bytes,
            "next_size_bytes": curve.get(p.last + 1).map(|q| q.size_bytes),
            "reported_cache_bytes": reported,
            "matches_record_within_one_step": matches,
        }));
    }
    if let Some(p) = &lv.memory {
        arr.push(json!({
            "level": "memory",
            "ns_per_load": p.ns,
            "from_bytes": curve[p.first].size_bytes,
            "ends_at_bytes": curve[p.last].size_bytes,
        }));
    }
    for p in &lv.beyond_memory {
        arr.push(json!({
            "level": "memory (further step, e.g. TLB reach)",
            "ns_per_load": p.ns,
            "from_bytes": curve[p.first].size_bytes,
            "ends_at_bytes": curve[p.last].size_bytes,
        }));
    }
    (Value::Array(arr), warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle_len(buf: &[usize], start: *const usize, limit: usize) -> usize {
        let mut p = start;
        for k in 1..=limit {
            // SAFETY: `buf` is a closed pointer cycle built by the test; `p` points into it.
            p = unsafe { chase(p, 1) };
            if p == start {
                return k;
            }
        }
        let _ = buf;
        usize::MAX
    }

    #[test]
    fn random_chain_is_a_single_cycle_over_every_element() {
        for (n, step) in [(2usize, 8usize), (3, 8), (1000, 8), (4099, 1), (777, 32)] {
            let mut buf = vec![0usize; n * step];
            build_chain(&mut buf, n, step, true, 42, || Ok(())).unwrap();
            let base = buf.as_ptr();
            // Every element is visited exactly once before returning to the start.
            let mut seen = vec![false; n];
            let mut p = base;
            for _ in 0..n {
                let idx = (p as usize - base as usize) / (step * 8);
                assert!(!seen[idx], "element {idx} visited twice (n={n})");
                seen[idx] = true;
                // SAFETY: `buf` is a closed pointer cycle built by the test; `p` points into it.
                p = unsafe { chase(p, 1) };
            }
            assert_eq!(p, base, "n={n}: not back at the start after n loads");
            assert!(seen.iter().all(|&s| s));
            assert_eq!(cycle_len(&buf, base, n + 1), n);
        }
    }

    #[test]
    fn random_chain_is_not_sequential() {
        let n = 4096;
        let mut buf = vec![0usize; n * 8];
        build_chain(&mut buf, n, 8, true, 7, || Ok(())).unwrap();
        let base = buf.as_ptr() as usize;
        let sequential = (0..n)
            .filter(|&i| buf[i * 8] == base + ((i + 1) % n) * 64)
            .count();
        assert!(sequential < n / 100, "{sequential} sequential links");
    }

    #[test]
    fn stride_chain_and_unrolled_chase_agree() {
        let n = 37;
        let mut buf = vec![0usize; n * 4];
        build_chain(&mut buf, n, 4, false, 0, || Ok(())).unwrap();
        let base = buf.as_ptr();
        // After k loads we are at element k mod n (remainder and unrolled paths both).
        for k in [1u64, 7, 8, 9, 37, 100] {
            // SAFETY: `buf` is a closed pointer cycle built by the test; `p` points into it.
            let p = unsafe { chase(base, k) };
            assert_eq!(p, base.wrapping_add((k as usize % n) * 4), "k={k}");
        }
    }

    #[test]
    fn grid_is_sorted_and_bounded() {
        let g = sizes(512 << 20, 64, false);
        assert_eq!(g[0], 1024);
        assert_eq!(*g.last().unwrap(), 512 << 20);
        assert!(g.windows(2).all(|w| w[0] < w[1]));
        assert!(g.contains(&(48 << 10)));
        let c = sizes(128 << 20, 64, true);
        assert!(!c.contains(&(48 << 10)) && c.contains(&(64 << 10)));
        // Elements larger than the small sizes drop them.
        assert_eq!(sizes(1 << 20, 256, false)[0], 1024);
        assert!(sizes(1 << 20, 1024, false)[0] >= 2048);
        // An odd cap is kept as the last point.
        assert_eq!(*sizes(3 << 20, 64, true).last().unwrap(), 3 << 20);
    }

    #[test]
    fn a_short_run_reports_a_curve_and_frees_on_timeout() {
        use std::time::Duration;
        let t = crate::bench::testutil::TestCtx::new();
        let ctx = t.ctx(Duration::from_millis(20), Duration::from_secs(60));
        let b = Latency::new(
            Pattern::Random,
            Pages::Base,
            &MemOptions {
                max_size: Some(256 << 10),
                ..Default::default()
            },
        );
        let mut out = b.run(&ctx).unwrap();
        assert!(out.facts.contains_key("run_levels"));
        let facts = b.finish(std::slice::from_mut(&mut out));
        let curve = facts["curve"].as_array().unwrap();
        assert_eq!(curve.len(), sizes(256 << 10, 64, false).len());
        assert!(
            curve
                .iter()
                .all(|p| p["ns_per_load"].as_f64().unwrap() > 0.0)
        );
        let ram = out.samples.iter().find(|(n, _)| *n == "ram").unwrap();
        assert!(!ram.1.is_empty());
        assert!(facts.contains_key("levels") && out.facts.contains_key("page_size_bytes"));
        // A past deadline stops the run with a timeout.
        let ctx = t.ctx(Duration::from_millis(20), Duration::ZERO);
        assert_eq!(
            b.run(&ctx).unwrap_err().kind,
            crate::record::ErrorKind::Timeout
        );
    }

    /// A run of a synthetic curve: L1 to 32 KiB (1 ns), L2 to 1 MiB (`l2_ns`), L3 to 16 MiB
    /// (12 ns), memory (80 ns) up to 256 MiB; 5 batch samples per point, ±1 %.
    fn synthetic_run(l2_ns: f64) -> Measured {
        let mut m = Measured {
            curve: Vec::new(),
            samples: Vec::new(),
        };
        for size in sizes(256 << 20, 64, false) {
            let ns = if size <= 32 << 10 {
                1.0
            } else if size <= 1 << 20 {
                l2_ns
            } else if size <= 16 << 20 {
                12.0
            } else {
                80.0
            };
            m.curve.push(Point {
                size_bytes: size,
                ns,
            });
            m.samples
                .push((0..5).map(|j| ns * (0.98 + 0.01 * j as f64)).collect());
        }
        m
    }

    #[test]
    fn finish_after_every_round_and_at_the_end_gives_the_levels_each_time() {
        // The runner calls `finish` on the runs so far after every round and once more at the
        // end: each call must see every run measured so far (a take left the last call none).
        let b = Latency::new(Pattern::Random, Pages::Base, &MemOptions::default());
        b.measured
            .lock()
            .unwrap()
            .extend([synthetic_run(4.0), synthetic_run(4.0)]);
        for call in 0..3 {
            let mut outs = vec![RunOutput::default(), RunOutput::default()];
            let facts = b.finish(&mut outs);
            assert!(facts.contains_key("levels"), "call {call}: {facts:?}");
            assert!(facts.contains_key("curve"), "call {call}: {facts:?}");
            assert!(
                outs.iter()
                    .all(|o| o.samples.iter().any(|(n, _)| *n == "l2"))
            );
        }
    }

    #[test]
    fn a_run_that_misses_a_level_keeps_its_values_at_the_levels_sizes() {
        // Run 2's L2 was taken by other work: its curve goes from L1 straight to L3 latency.
        let runs = vec![synthetic_run(4.0), synthetic_run(12.0), synthetic_run(4.0)];
        let grid: Vec<u64> = runs[0].curve.iter().map(|p| p.size_bytes).collect();
        let tol = Tolerances::for_grid(grid_ratio(&grid));
        let llc = Some(16 << 20);
        // The scenario: run 2 alone detects only two cache levels, so per-run naming would call
        // its L3 values "l2".
        let own = plateau::classify(&runs[1].curve, &plateau::detect(&runs[1].curve, tol), llc);
        assert_eq!(own.caches.len(), 2);
        let a = assign_levels(&runs, tol, llc);
        // Detected once, on the median curve: three caches ending at 32 KiB, 1 MiB, 16 MiB.
        let ends: Vec<u64> = a
            .levels
            .caches
            .iter()
            .map(|c| a.median_curve[c.last].size_bytes)
            .collect();
        assert_eq!(ends, vec![32 << 10, 1 << 20, 16 << 20]);
        let median = |v: &[f64]| crate::stats::median(v);
        for (r, per) in a.per_run.iter().enumerate() {
            let names: Vec<&str> = per.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, vec!["l1", "l2", "l3"], "run {r}");
            // Every run's value for a level comes from that level's sizes.
            assert!((median(&per[0].1) - 1.0).abs() < 0.05, "run {r} l1");
            assert!((median(&per[2].1) - 12.0).abs() < 0.5, "run {r} l3");
            // Same number of samples per level in every run: the same sizes.
            assert_eq!(per[1].1.len(), a.per_run[0][1].1.len());
        }
        // Run 2's l2 is what it measured at L2's sizes (12 ns), not its L3 or memory.
        assert!((median(&a.per_run[1][1].1) - 12.0).abs() < 0.5);
        assert!((median(&a.per_run[0][1].1) - 4.0).abs() < 0.1);
        // And the disagreement is recorded.
        assert_eq!(a.disagreeing.len(), 1);
        assert_eq!(a.disagreeing[0].0, 1);
    }

    #[test]
    fn cancelled_build_stops() {
        let n = 200_000;
        let mut buf = vec![0usize; n];
        let e = build_chain(&mut buf, n, 1, true, 1, || {
            Err(BenchError::timeout("bound"))
        })
        .unwrap_err();
        assert_eq!(e.kind, crate::record::ErrorKind::Timeout);
    }
}
