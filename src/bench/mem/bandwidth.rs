//! Memory bandwidth: read (sum), write (fill), non-temporal write (streaming stores), copy and
//! STREAM triad, over arrays far larger than the last-level cache, with T threads each working on
//! its own contiguous share.
//!
//! Bytes counted (STREAM's convention): the bytes the kernel reads plus the bytes it writes —
//! read N, write N, write_nt N, copy 2N, triad 3N for arrays of N bytes. Write-allocate traffic
//! (a normal store first reading the line) is not counted. Copy tools such as `perf bench mem
//! memcpy`, `sysbench memory` and `bw_mem cp` count each copied byte once: halve our copy figure
//! to compare.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{MemOptions, Threads};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::platform::memory::AnonMap;
use crate::record::BenchError;
use crate::timing::RunContext;
use crate::units::format_size;
use crate::units::{Better, Unit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Read,
    Write,
    WriteNt,
    Copy,
    Triad,
}

impl Kernel {
    pub const ALL: [Kernel; 5] = [
        Kernel::Read,
        Kernel::Write,
        Kernel::WriteNt,
        Kernel::Copy,
        Kernel::Triad,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "write",
            Kernel::WriteNt => "write_nt",
            Kernel::Copy => "copy",
            Kernel::Triad => "triad",
        }
    }
    /// Arrays of N bytes the kernel touches, counted as read + written (STREAM's convention).
    pub fn arrays_counted(self) -> u64 {
        match self {
            Kernel::Read | Kernel::Write | Kernel::WriteNt => 1,
            Kernel::Copy => 2,
            Kernel::Triad => 3,
        }
    }
    fn description(self) -> &'static str {
        match self {
            Kernel::Read => "read bandwidth: sum of 64-bit words (vectorised), bytes read counted",
            Kernel::Write => {
                "write bandwidth: fill with a constant (memset), bytes written counted (write-allocate reads not counted)"
            }
            Kernel::WriteNt => {
                "non-temporal write bandwidth: streaming stores that bypass the caches, bytes written counted"
            }
            Kernel::Copy => {
                "copy bandwidth, STREAM convention: bytes read + bytes written (2 × copied; copy tools count copied bytes once)"
            }
            Kernel::Triad => "STREAM triad a = b + s·c: bytes read + written (3 × array bytes)",
        }
    }
}

/// Value the triad scalar takes (STREAM uses 3.0).
pub const SCALAR: f64 = 3.0;

/// Sum of the words' bit patterns (wrapping): reads every byte, cannot be folded away, and
/// vectorises (integer adds reassociate). Four accumulators for throughput.
#[inline(never)]
pub fn kernel_read(a: &[f64]) -> u64 {
    let mut acc = [0u64; 4];
    let chunks = a.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            acc[k] = acc[k].wrapping_add(c[k].to_bits());
        }
    }
    let mut s = acc[0]
        .wrapping_add(acc[1])
        .wrapping_add(acc[2])
        .wrapping_add(acc[3]);
    for x in rest {
        s = s.wrapping_add(x.to_bits());
    }
    s
}

#[inline(never)]
pub fn kernel_write(a: &mut [f64], v: f64) {
    a.fill(v);
    black_box(a.as_mut_ptr());
}

#[inline(never)]
pub fn kernel_copy(dst: &mut [f64], src: &[f64]) {
    dst.copy_from_slice(src);
    black_box(dst.as_mut_ptr());
}

#[inline(never)]
pub fn kernel_triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
        *x = y + s * z;
    }
    black_box(a.as_mut_ptr());
}

/// Non-temporal fill where the CPU has streaming stores: Ok(instruction used) or Err(reason).
pub fn nt_support() -> Result<&'static str, String> {
    nt::support()
}

/// Streaming-store fill of `a` with `v`. `a` must be 64-byte aligned and a multiple of 8 words.
pub fn kernel_write_nt(a: &mut [f64], v: f64) {
    nt::fill(a, v);
    black_box(a.as_mut_ptr());
}

#[cfg(target_arch = "x86_64")]
mod nt {
    use std::arch::x86_64::*;

    pub fn support() -> Result<&'static str, String> {
        if std::arch::is_x86_feature_detected!("avx") {
            Ok("_mm256_stream_pd (vmovntpd, 32 B) + sfence")
        } else {
            Ok("_mm_stream_pd (movntpd, 16 B, SSE2) + sfence")
        }
    }

    pub fn fill(a: &mut [f64], v: f64) {
        assert!((a.as_ptr() as usize).is_multiple_of(64) && a.len().is_multiple_of(8));
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: AVX present (checked); alignment and length asserted above.
            unsafe { fill_avx(a, v) }
        } else {
            // SAFETY: SSE2 is part of the x86_64 baseline; alignment asserted.
            unsafe { fill_sse2(a, v) }
        }
    }

    #[target_feature(enable = "avx")]
    unsafe fn fill_avx(a: &mut [f64], v: f64) {
        let x = _mm256_set1_pd(v);
        let p = a.as_mut_ptr();
        let mut i = 0;
        while i < a.len() {
            // SAFETY: i + 8 <= len; p + i is 32-byte aligned.
            unsafe {
                _mm256_stream_pd(p.add(i), x);
                _mm256_stream_pd(p.add(i + 4), x);
            }
            i += 8;
        }
        _mm_sfence();
    }

    #[target_feature(enable = "sse2")]
    unsafe fn fill_sse2(a: &mut [f64], v: f64) {
        let x = _mm_set1_pd(v);
        let p = a.as_mut_ptr();
        let mut i = 0;
        while i < a.len() {
            // SAFETY: i + 8 <= len; p + i is 16-byte aligned.
            unsafe {
                _mm_stream_pd(p.add(i), x);
                _mm_stream_pd(p.add(i + 2), x);
                _mm_stream_pd(p.add(i + 4), x);
                _mm_stream_pd(p.add(i + 6), x);
            }
            i += 8;
        }
        _mm_sfence();
    }
}

#[cfg(target_arch = "aarch64")]
mod nt {
    pub fn support() -> Result<&'static str, String> {
        Ok("stnp (store pair, non-temporal hint, 2 × 16 B) + dmb ishst")
    }

    pub fn fill(a: &mut [f64], v: f64) {
        assert!((a.as_ptr() as usize).is_multiple_of(64) && a.len().is_multiple_of(8));
        let bits = v.to_bits();
        let p = a.as_mut_ptr();
        let mut i = 0;
        while i < a.len() {
            // SAFETY: i + 8 <= len, so the 64 bytes from p + i are inside `a`.
            unsafe {
                std::arch::asm!(
                    "dup v0.2d, {b}",
                    "stnp q0, q0, [{p}]",
                    "stnp q0, q0, [{p}, #32]",
                    b = in(reg) bits,
                    p = in(reg) p.add(i),
                    out("v0") _,
                    options(nostack, preserves_flags),
                );
            }
            i += 8;
        }
        // SAFETY: a store barrier has no preconditions.
        unsafe { std::arch::asm!("dmb ishst", options(nostack, preserves_flags)) };
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod nt {
    pub fn support() -> Result<&'static str, String> {
        Err(format!(
            "no streaming-store kernel for {}",
            std::env::consts::ARCH
        ))
    }
    pub fn fill(_a: &mut [f64], _v: f64) {}
}

pub struct Bandwidth {
    info: Info,
    threads: Threads,
    kernels: Vec<Kernel>,
    max_size: Option<u64>,
    /// Bytes per array and why, decided by the first run that allocates them: every run of the
    /// benchmark measures the same arrays' size.
    size: Mutex<Option<(u64, String)>>,
    /// The arrays kept from the previous run, faulted in and holding known values: this
    /// benchmark's own pool, or (quick preset) one the bandwidth benchmarks built together share.
    pool: Pool,
    /// Whether this benchmark is counted in the pool's `users`.
    registered: AtomicBool,
    /// Which passes each run discards and how many it times at least.
    passes: Passes,
}

/// Arrays the bandwidth benchmarks built together share between their runs (the quick preset:
/// the 1-thread and all-CPU benchmarks then fault one set of arrays in, not two).
#[derive(Clone, Default)]
pub struct Pool {
    kept: Arc<Mutex<Option<Held>>>,
    /// How many of the benchmarks sharing `kept` have run and not yet been released.
    users: Arc<AtomicUsize>,
}

/// Which passes a run discards and how many it times at least ([`Passes::STANDARD`], or the
/// quick preset's [`Passes::QUICK`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passes {
    /// Every run discards each kernel's first pass (else only a run that faulted its arrays in).
    pub discard_every_run: bool,
    /// Timed passes per kernel per run, at least.
    pub min_timed: u32,
}

impl Passes {
    pub const STANDARD: Passes = Passes {
        discard_every_run: true,
        min_timed: 3,
    };
    /// The quick preset: a run that reuses arrays the previous run faulted in and passed over
    /// times from its first pass, and one timed pass per kernel is enough (a 2 × 1.9 GB copy
    /// pass takes ~0.18 s here, longer than the quick preset's 50 ms run time).
    pub const QUICK: Passes = Passes {
        discard_every_run: false,
        min_timed: 1,
    };

    /// Whether a run discards its first pass of each kernel (`fresh`: it faulted its arrays in).
    pub fn discards(self, fresh: bool) -> bool {
        self.discard_every_run || fresh
    }

    /// What the record says of the passes.
    pub fn said(self) -> String {
        let n = self.min_timed;
        if self.discard_every_run {
            format!("every run discards each kernel's first pass, then times at least {n}")
        } else {
            format!(
                "quick preset: only the run that faults the arrays in discards each kernel's \
                 first pass; every run times at least {n}"
            )
        }
    }
}

/// Share of the memory that would be available without them that the arrays all bandwidth
/// benchmarks keep between their runs may take together (the rest is the other benchmarks').
pub const KEEP_SHARE: f64 = 0.5;

/// Bytes of arrays the bandwidth benchmarks of this process keep between their runs.
static KEPT_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes of arrays the bandwidth benchmarks of this process keep between their runs now.
pub fn kept_bytes() -> u64 {
    KEPT_BYTES.load(Ordering::Relaxed)
}

/// Whether a benchmark may keep its `own` bytes of arrays until its next run when the other
/// bandwidth benchmarks keep `others` bytes and the OS says `available` bytes are available now
/// (with all of them allocated): together they stay within [`KEEP_SHARE`] of what would be
/// available without them. Available memory unknown: one benchmark's arrays at a time.
pub fn may_keep(own: u64, others: u64, available: Option<u64>) -> bool {
    match available {
        Some(a) => (own + others) as f64 <= KEEP_SHARE * (a + own + others) as f64,
        None => others == 0,
    }
}

/// A run's arrays of `len` words each: fresh mappings (zero pages, not yet touched) or kept
/// from an earlier run, with the values the kernels left in `a` and `c` (the next run's checks
/// expect them). Mapped straight from the OS and kept out of child processes, so that holding
/// them while other benchmarks fork does not make those forks copy their page tables.
struct RunArrays {
    a: AnonMap,
    b: Option<AnonMap>,
    c: Option<AnonMap>,
    len: usize,
    a_val: f64,
    c_val: f64,
    /// Not faulted in yet: the run first-touches them before its passes.
    fresh: bool,
    /// How they are kept out of child processes, or why not (then they are not kept between
    /// runs).
    not_inherited: Result<&'static str, String>,
}

impl RunArrays {
    fn new(len: usize, n_arrays: u64) -> Result<RunArrays, BenchError> {
        let map = || {
            let m = AnonMap::new(len * 8).map_err(|e| crate::bench::os_err("mmap", e))?;
            let kept_out = m.not_inherited().map_err(|e| e.to_string());
            Ok::<_, BenchError>((m, kept_out))
        };
        let (a, mut not_inherited) = map()?;
        let mut more = || -> Result<AnonMap, BenchError> {
            let (m, kept_out) = map()?;
            not_inherited = not_inherited.clone().and(kept_out);
            Ok(m)
        };
        let b = if n_arrays >= 3 { Some(more()?) } else { None };
        let c = if n_arrays >= 2 { Some(more()?) } else { None };
        Ok(RunArrays {
            a,
            b,
            c,
            len,
            a_val: 1.0,
            c_val: 0.0,
            fresh: true,
            not_inherited,
        })
    }

    fn bytes(&self) -> u64 {
        let n = 1 + u64::from(self.b.is_some()) + u64::from(self.c.is_some());
        n * self.len as u64 * 8
    }

    fn view(&mut self) -> Arrays {
        let p = |x: Option<&mut AnonMap>| x.map_or(std::ptr::null_mut(), |x| x.as_mut_ptr().cast());
        Arrays {
            a: p(Some(&mut self.a)),
            b: p(self.b.as_mut()),
            c: p(self.c.as_mut()),
        }
    }
}

/// Arrays kept between runs, counted in [`KEPT_BYTES`] for as long as they are held.
struct Held(Option<RunArrays>);

impl Held {
    fn new(arrays: RunArrays) -> Held {
        KEPT_BYTES.fetch_add(arrays.bytes(), Ordering::Relaxed);
        Held(Some(arrays))
    }

    fn take(mut self) -> Option<RunArrays> {
        let arrays = self.0.take();
        if let Some(x) = &arrays {
            KEPT_BYTES.fetch_sub(x.bytes(), Ordering::Relaxed);
        }
        arrays
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(x) = &self.0 {
            KEPT_BYTES.fetch_sub(x.bytes(), Ordering::Relaxed);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Bandwidth {
    pub fn new(threads: Threads, opts: &MemOptions) -> Bandwidth {
        Bandwidth::sharing(threads, opts, &Pool::default())
    }

    /// A benchmark that keeps its arrays between runs in `pool`, shared with the other
    /// benchmarks built with the same pool (a run takes whichever arrays of its size are there).
    pub fn sharing(threads: Threads, opts: &MemOptions, pool: &Pool) -> Bandwidth {
        let kernels: Vec<Kernel> = if opts.quick {
            vec![Kernel::Copy]
        } else {
            Kernel::ALL
                .into_iter()
                .filter(|k| *k != Kernel::WriteNt || nt_support().is_ok())
                .collect()
        };
        let (id, who) = match threads {
            Threads::N(1) => ("mem/bandwidth_1t".to_string(), "1 thread".to_string()),
            Threads::N(n) => (format!("mem/bandwidth_{n}t"), format!("{n} threads")),
            Threads::All => (
                "mem/bandwidth_all".to_string(),
                "all CPUs the run may use".to_string(),
            ),
        };
        let names: Vec<&str> = kernels.iter().map(|k| k.name()).collect();
        let method = format!(
            "Kernels {}: over arrays of max(4× the last-level cache, 64 MiB) each (bounded by \
             --max-size for all arrays together and {share:.0} % of available memory), split \
             into one contiguous share per thread; each thread is pinned to its own CPU where the \
             OS allows. The arrays are allocated and faulted in once per benchmark, each thread \
             first-touching its own share before any pass is timed (STREAM's initialisation), \
             and kept between the benchmark's runs, so each run times only its passes; they stay \
             allocated while other benchmarks run between its runs (mapped straight from the OS \
             and kept out of child processes, so that other benchmarks' forks do not copy their \
             page tables; where the OS refuses that, they are not kept), are freed after its \
             last run (and before each `ab` arm switch), and are faulted in again by the next \
             run where keeping them would hold more than {keep:.0} % of the memory available \
             without the bandwidth benchmarks' arrays (run facts arrays_faulted_in, \
             arrays_not_inherited, arrays_freed; param arrays_faulted_in_runs). Per pass, all \
             threads start together (barrier); a pass lasts from the first thread's start to the \
             last thread's end (each thread reads the clock itself); value = bytes counted / pass time. Bytes counted, STREAM's \
             convention: read + written (read N, write N, write_nt N, copy 2N, triad 3N); \
             write-allocate traffic not counted; copy tools count copied bytes once. In every run \
             the first pass of each kernel is discarded; then passes for an equal share of the \
             run time (at least 3); no harness warm-up run (the discarded passes and the first \
             run's faulting are all a warm-up run would do). Results are checked (read checksum, \
             copied and triad values) so no kernel can be optimised away; non-temporal stores \
             use explicit intrinsics ({nt}). The quick preset of `osgauge run` discards the \
             first pass only in the run that faults the arrays in and times at least 1 pass per \
             run (param passes), and its bandwidth benchmarks share one set of arrays of the same \
             size, faulted in by whichever runs first and freed after the last of them (param \
             arrays_shared).",
            names.join(", "),
            share = super::AVAILABLE_SHARE * 100.0,
            keep = KEEP_SHARE * 100.0,
            nt = nt_support().map_or_else(|e| format!("unsupported: {e}"), str::to_string),
        );
        let metrics = kernels
            .iter()
            .map(|k| MetricSpec {
                name: k.name(),
                unit: Unit::BytesPerSecond,
                better: Better::Higher,
                description: k.description(),
            })
            .collect();
        Bandwidth {
            info: Info {
                id,
                suite: "mem",
                title: format!("Memory bandwidth, {who}"),
                method,
                metrics,
            },
            threads,
            kernels,
            max_size: opts.max_size,
            size: Mutex::new(None),
            pool: pool.clone(),
            registered: AtomicBool::new(false),
            passes: if opts.quick {
                Passes::QUICK
            } else {
                Passes::STANDARD
            },
        }
    }

    fn arrays(&self) -> u64 {
        if self.kernels.contains(&Kernel::Triad) {
            3
        } else if self.kernels.contains(&Kernel::Copy) {
            2
        } else {
            1
        }
    }

    /// Bytes per array and why: as the first run decided, or as it would decide now.
    fn array_bytes(&self) -> (u64, String) {
        if let Some(s) = lock(&self.size).clone() {
            return s;
        }
        self.array_bytes_within(super::memory_budget())
    }

    /// Bytes per array and why, the memory budget for all arrays being `budget`.
    fn array_bytes_within(&self, budget: Option<u64>) -> (u64, String) {
        let arrays = self.arrays();
        let want = super::llc_bytes().map_or(64 << 20, |l| (4 * l).max(64 << 20));
        let mut bytes = want;
        let mut why = "max(4× the last-level cache, 64 MiB)".to_string();
        if let Some(m) = self.max_size
            && bytes * arrays > m
        {
            bytes = m / arrays;
            why = format!("--max-size {} over {arrays} arrays", format_size(m));
        }
        if let Some(b) = budget
            && bytes * arrays > b
        {
            bytes = b / arrays;
            why = format!(
                "{:.0} % of available memory over {arrays} arrays",
                super::AVAILABLE_SHARE * 100.0
            );
        }
        // Whole 4 KiB pages.
        (bytes / 4096 * 4096, why)
    }

    fn thread_count(&self) -> usize {
        match self.threads {
            Threads::N(n) => n,
            Threads::All => super::allowed_cpu_count(),
        }
    }
}

/// Split `len` words into `t` contiguous shares, each a multiple of 8 words (64 B).
pub fn shares(len: usize, t: usize) -> Vec<std::ops::Range<usize>> {
    let units = len / 8;
    (0..t)
        .map(|k| (units * k / t * 8)..(units * (k + 1) / t * 8))
        .collect()
}

/// Commands from the coordinator to the workers.
const CMD_STOP: u8 = 255;

struct Shared {
    cmd: AtomicU8,
    start: Barrier,
    end: Barrier,
    /// Read checksums, summed over threads (wrapping).
    checksum: AtomicU64,
    /// Each worker's (start, end) of the current pass, taken by the worker itself so that a
    /// coordinator descheduled at the barrier cannot shorten the measured pass.
    times: Mutex<Vec<(Instant, Instant)>>,
}

/// Raw views of the arrays, shared by the workers (each touches only its own share).
#[derive(Clone, Copy)]
struct Arrays {
    a: *mut f64,
    b: *mut f64,
    c: *mut f64,
}
// SAFETY: workers access disjoint ranges, separated in time from the coordinator by barriers.
unsafe impl Send for Arrays {}
// SAFETY: as for Send: disjoint ranges per worker, barriers between phases.
unsafe impl Sync for Arrays {}

impl Arrays {
    /// SAFETY: caller guarantees `r` is in bounds of each array and no one else touches it now.
    unsafe fn slice(p: *mut f64, r: &std::ops::Range<usize>) -> &'static mut [f64] {
        // SAFETY: the caller's guarantee (see above): `r` is in bounds and this thread owns it now.
        unsafe { std::slice::from_raw_parts_mut(p.add(r.start), r.len()) }
    }
}

fn kernel_index(k: Kernel) -> u8 {
    Kernel::ALL.iter().position(|x| *x == k).unwrap_or(0) as u8
}

fn worker(shared: &Shared, arr: Arrays, r: std::ops::Range<usize>, n_arrays: u64) {
    // SAFETY: this worker owns range r of each allocated array.
    let (a, mut b, mut c) = unsafe {
        (
            Arrays::slice(arr.a, &r),
            (n_arrays >= 3).then(|| Arrays::slice(arr.b, &r)),
            (n_arrays >= 2).then(|| Arrays::slice(arr.c, &r)),
        )
    };
    loop {
        shared.start.wait();
        let cmd = shared.cmd.load(Ordering::Acquire);
        if cmd == CMD_STOP {
            break;
        }
        let t0 = Instant::now();
        match Kernel::ALL.get(cmd as usize) {
            Some(Kernel::Read) => {
                let s = kernel_read(a);
                shared.checksum.fetch_add(s, Ordering::Relaxed);
            }
            Some(Kernel::Write) => kernel_write(a, 1.0),
            Some(Kernel::WriteNt) => kernel_write_nt(a, 1.0),
            Some(Kernel::Copy) => {
                if let Some(c) = c.as_deref_mut() {
                    kernel_copy(c, a);
                }
            }
            Some(Kernel::Triad) => {
                if let (Some(b), Some(c)) = (b.as_deref(), c.as_deref()) {
                    kernel_triad(a, b, c, SCALAR);
                }
            }
            None => {
                // First touch: initialise this share (a = 1, b = 2, c = 0).
                a.fill(1.0);
                if let Some(b) = b.as_deref_mut() {
                    b.fill(2.0);
                }
                if let Some(c) = c.as_deref_mut() {
                    c.fill(0.0);
                }
            }
        }
        let t1 = Instant::now();
        lock(&shared.times).push((t0, t1));
        shared.end.wait();
    }
}

/// The command that has the workers first-touch their shares.
const CMD_FIRST_TOUCH: u8 = u8::MAX - 1;

impl Shared {
    fn new(threads: usize) -> Shared {
        Shared {
            cmd: AtomicU8::new(0),
            start: Barrier::new(threads + 1),
            end: Barrier::new(threads + 1),
            checksum: AtomicU64::new(0),
            times: Mutex::new(Vec::with_capacity(threads)),
        }
    }

    /// One pass of `cmd` by every worker: from the first worker's start to the last one's end.
    fn pass(&self, cmd: u8) -> Duration {
        lock(&self.times).clear();
        self.cmd.store(cmd, Ordering::Release);
        self.start.wait();
        self.end.wait();
        let times = lock(&self.times);
        match (
            times.iter().map(|x| x.0).min(),
            times.iter().map(|x| x.1).max(),
        ) {
            (Some(a), Some(b)) => b.duration_since(a),
            _ => Duration::ZERO,
        }
    }

    /// Release the workers for good: every path out of a run's measuring must call it.
    fn stop(&self) {
        self.cmd.store(CMD_STOP, Ordering::Release);
        self.start.wait();
    }
}

impl Benchmark for Bandwidth {
    fn info(&self) -> &Info {
        &self.info
    }

    fn params(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        let (bytes, why) = self.array_bytes();
        m.insert("array_bytes".into(), bytes.into());
        m.insert("array_bytes_reason".into(), why.into());
        m.insert("arrays".into(), self.arrays().into());
        m.insert("threads".into(), (self.thread_count() as u64).into());
        m.insert("passes".into(), self.passes.said().into());
        m.insert(
            "arrays_shared".into(),
            (Arc::strong_count(&self.pool.kept) > 1).into(),
        );
        m.insert(
            "write_nt".into(),
            match nt_support() {
                Ok(i) => i.to_string(),
                Err(e) => format!("unsupported: {e}"),
            }
            .into(),
        );
        m
    }

    /// Every run discards each kernel's first pass (and the first run faults the arrays in).
    fn warms_itself(&self) -> bool {
        true
    }

    /// The arrays are faulted in once, then every run times every kernel at least
    /// [`Passes::min_timed`] passes or for its share of the run time, after a discarded first pass
    /// (every run's, or at the quick preset the faulting run's only); no warm-up runs
    /// ([`Self::warms_itself`]).
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let (bytes, _) = self.array_bytes();
        let all = (bytes * self.arrays()) as f64;
        let passes: f64 = self
            .kernels
            .iter()
            .map(|k| (bytes * k.arrays_counted()) as f64 / super::ASSUMED_BANDWIDTH_BYTES_PER_S)
            .sum();
        let timed = f64::from(self.passes.min_timed) * passes;
        // Discarded passes: every run's, or the faulting run's only.
        let discarded = if self.passes.discard_every_run {
            f64::from(e.runs)
        } else {
            1.0
        } * passes;
        f64::from(e.runs) * (e.run_time.as_secs_f64().max(timed) + crate::bench::DEFAULT_SETUP_S)
            + discarded
            // One fault-in, shared out among the benchmarks that share the arrays.
            + all / super::FAULT_IN_BYTES_PER_S / Arc::strong_count(&self.pool.kept) as f64
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let t = self.thread_count();
        let mut arrays = self.setup(t)?;
        let fresh = arrays.fresh;
        let measured = self.measure(ctx, &mut arrays, t);
        self.assemble(ctx, arrays, measured, fresh, t)
    }

    /// How many of the runs faulted their arrays in (1 when they were kept between all runs).
    fn finish(&self, runs: &mut [RunOutput]) -> serde_json::Map<String, Value> {
        let faulted = runs
            .iter()
            .filter(|r| r.facts.get("arrays_faulted_in") == Some(&Value::Bool(true)))
            .count();
        let mut m = serde_json::Map::new();
        m.insert("arrays_faulted_in_runs".into(), (faulted as u64).into());
        m
    }

    /// Frees the kept arrays, unless another benchmark that shares them has runs left (the last
    /// of them to be released frees them).
    fn release(&self) {
        let last = if self.registered.swap(false, Ordering::Relaxed) {
            self.pool.users.fetch_sub(1, Ordering::Relaxed) <= 1
        } else {
            self.pool.users.load(Ordering::Relaxed) == 0
        };
        if last {
            drop(lock(&self.pool.kept).take());
        }
    }
}

impl Bandwidth {
    /// Set-up: the arrays kept from the previous run, or new ones (not yet faulted in) of the
    /// size the benchmark's first run decided.
    fn setup(&self, t: usize) -> Result<RunArrays, BenchError> {
        if !self.registered.swap(true, Ordering::Relaxed) {
            self.pool.users.fetch_add(1, Ordering::Relaxed);
        }
        let (bytes, why) = self.array_bytes();
        if let Some(kept) = lock(&self.pool.kept).take().and_then(Held::take)
            && kept.len as u64 * 8 == bytes
            && kept.bytes() == bytes * self.arrays()
        {
            return Ok(kept);
        }
        *lock(&self.size) = Some((bytes, why));
        let len = (bytes / 8) as usize;
        if len < 8 * t {
            return Err(BenchError::failed(format!(
                "arrays of {} are too small for {t} threads",
                format_size(bytes)
            )));
        }
        RunArrays::new(len, self.arrays())
    }

    /// Measure: one pinned worker per share; fresh arrays are first-touched in parallel, each
    /// worker its own share, before any pass is timed; then every kernel's passes, and a spot
    /// check that the writes happened. Returns the samples and each worker's pinning.
    fn measure(
        &self,
        ctx: &RunContext,
        arrays: &mut RunArrays,
        t: usize,
    ) -> Result<(RunOutput, Vec<Result<usize, String>>), BenchError> {
        let arr = arrays.view();
        let n_arrays = self.arrays();
        let ranges = shares(arrays.len, t);
        let words: u64 = ranges.iter().map(|r| r.len() as u64).sum();
        let cpus = crate::platform::allowed_cpus().unwrap_or_default();
        let shared = Shared::new(t);
        let pins = Mutex::new(Vec::with_capacity(t));
        let mut vals = (arrays.a_val, arrays.c_val);
        let out = std::thread::scope(|s| {
            for (k, r) in ranges.iter().cloned().enumerate() {
                let (shared, pins) = (&shared, &pins);
                let cpu = cpus.get(k).copied();
                s.spawn(move || {
                    let pinned = match cpu {
                        Some(c) => crate::platform::pin_current_thread(c)
                            .map(|_| c)
                            .map_err(|e| e.to_string()),
                        None => Err("more threads than allowed CPUs".to_string()),
                    };
                    lock(pins).push(pinned);
                    worker(shared, arr, r, n_arrays);
                });
            }
            if arrays.fresh {
                shared.pass(CMD_FIRST_TOUCH);
            }
            let discard = self.passes.discards(arrays.fresh);
            let out = self.time_kernels(ctx, &shared, words, &mut vals, discard);
            shared.stop();
            out
        })?;
        arrays.fresh = false;
        spot_check(arr, &ranges, vals.0, vals.1)?;
        (arrays.a_val, arrays.c_val) = vals;
        let pins = pins.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok((out, pins))
    }

    /// Each kernel's passes over `words` words per array, for its share of the run time (at least
    /// [`Passes::min_timed`] after its first pass, discarded when `discard`), every result
    /// checked. `vals`: what `a` and `c` hold, kept up to date.
    fn time_kernels(
        &self,
        ctx: &RunContext,
        shared: &Shared,
        words: u64,
        vals: &mut (f64, f64),
        discard: bool,
    ) -> Result<RunOutput, BenchError> {
        let min_timed = self.passes.min_timed as usize;
        let skip = u32::from(discard);
        let budget = ctx.run_time / self.kernels.len() as u32;
        let mut out = RunOutput::default();
        for &k in &self.kernels {
            let bytes_counted = words * 8 * k.arrays_counted();
            let mut samples = Vec::new();
            let started = Instant::now();
            let mut passes = 0u32;
            while samples.len() < min_timed || started.elapsed() < budget {
                ctx.check()?;
                shared.checksum.store(0, Ordering::Relaxed);
                let d = shared.pass(kernel_index(k));
                passes += 1;
                match k {
                    Kernel::Read => {
                        let want = words.wrapping_mul(vals.0.to_bits());
                        let got = shared.checksum.load(Ordering::Relaxed);
                        if got != want {
                            return Err(BenchError::failed(format!(
                                "read checksum {got:#x} != expected {want:#x}"
                            )));
                        }
                    }
                    Kernel::Write | Kernel::WriteNt => vals.0 = 1.0,
                    Kernel::Copy => vals.1 = vals.0,
                    Kernel::Triad => vals.0 = 2.0 + SCALAR * vals.1,
                }
                if passes > skip && d > Duration::ZERO {
                    samples.push(bytes_counted as f64 / d.as_secs_f64());
                }
            }
            out = out.metric(k.name(), samples);
        }
        Ok(out)
    }

    /// Assemble the run's output: its facts beside the figures, and the arrays kept for the
    /// benchmark's next run where it has one and memory allows (else freed here).
    fn assemble(
        &self,
        ctx: &RunContext,
        arrays: RunArrays,
        measured: Result<(RunOutput, Vec<Result<usize, String>>), BenchError>,
        fresh: bool,
        t: usize,
    ) -> Result<RunOutput, BenchError> {
        // A run that failed leaves its arrays in no known state: they go with it.
        let (out, pins) = measured?;
        let mut out = self
            .facts(out, &pins, t)
            .fact("arrays_faulted_in", fresh)
            .fact("first_pass_discarded", self.passes.discards(fresh))
            .fact(
                "arrays_not_inherited",
                arrays
                    .not_inherited
                    .clone()
                    .map_or_else(|e| format!("not applied: {e}"), str::to_string),
            );
        // Kept for this benchmark's next run, or for another that shares them and runs on.
        let others_run_on = self.pool.users.load(Ordering::Relaxed) > 1;
        if (ctx.runs_left > 1 || others_run_on) && arrays.not_inherited.is_ok() {
            let (own, others) = (arrays.bytes(), kept_bytes());
            if may_keep(own, others, crate::platform::memory::available_bytes()) {
                *lock(&self.pool.kept) = Some(Held::new(arrays));
            } else {
                out = out.fact(
                    "arrays_freed",
                    format!(
                        "keeping {} of arrays beside the {} other bandwidth benchmarks keep would \
                         hold more than {:.0} % of the memory available without them",
                        format_size(own),
                        format_size(others),
                        KEEP_SHARE * 100.0
                    ),
                );
            }
        }
        Ok(super::page_facts(out))
    }
}

/// Prove the writes happened: spot-check every share's ends and middle of `a` (and `c`).
fn spot_check(
    arr: Arrays,
    ranges: &[std::ops::Range<usize>],
    a_val: f64,
    c_val: f64,
) -> Result<(), BenchError> {
    // SAFETY: workers have stopped touching the arrays (they passed the stop barrier).
    let check = |p: *mut f64, want: f64, name: &str| -> Result<(), BenchError> {
        for r in ranges {
            for i in [r.start, r.start + r.len() / 2, r.end - 1] {
                // SAFETY: `i` lies in `r`, in bounds of the array `p` points to; the workers have joined.
                let v = unsafe { p.add(i).read_volatile() };
                if v != want {
                    return Err(BenchError::failed(format!(
                        "array {name}[{i}] = {v}, expected {want}: a kernel did not run"
                    )));
                }
            }
        }
        Ok(())
    };
    check(arr.a, a_val, "a")?;
    if !arr.c.is_null() {
        check(arr.c, c_val, "c")?;
    }
    Ok(())
}

impl Bandwidth {
    /// The run's facts beside its figures: the threads' CPUs (pinned or why not), the sizes, a
    /// size chosen by available memory rather than --max-size, non-temporal store support.
    fn facts(&self, mut out: RunOutput, pins: &[Result<usize, String>], t: usize) -> RunOutput {
        // Available memory, not --max-size, set the size: say so.
        let (bytes, why) = self.array_bytes();
        if !why.starts_with("--max-size") {
            out.warnings.extend(super::max_size_warning(
                self.max_size,
                bytes * self.arrays(),
                &why,
            ));
        }
        let pinned: Vec<Value> = pins
            .iter()
            .map(|p| match p {
                Ok(c) => Value::from(*c as u64),
                Err(e) => Value::from(format!("not pinned: {e}")),
            })
            .collect();
        if pins.iter().any(|p| p.is_err()) {
            out.warnings
                .push("some threads could not be pinned (see 'pinned_cpus')".into());
        }
        out = out
            .fact("pinned_cpus", Value::Array(pinned))
            .fact("threads", t as u64)
            .fact("array_bytes", bytes)
            .fact(
                "bytes_counted_note",
                "read + written (STREAM); copy tools count copied bytes once",
            );
        if !self.kernels.contains(&Kernel::WriteNt)
            && let Err(e) = nt_support()
        {
            out = out.fact("write_nt", format!("unsupported: {e}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::mem::AlignedBuf;

    #[test]
    fn kernels_compute_what_they_claim() {
        let n = 1024 + 8;
        let mut a = AlignedBuf::<f64>::new(n).unwrap();
        let mut b = AlignedBuf::<f64>::new(n).unwrap();
        let mut c = AlignedBuf::<f64>::new(n).unwrap();
        kernel_write(a.as_mut_slice(), 1.5);
        assert!(a.as_slice().iter().all(|&x| x == 1.5));
        assert_eq!(
            kernel_read(a.as_slice()),
            (n as u64).wrapping_mul(1.5f64.to_bits())
        );
        // A single changed word changes the checksum: the sum really reads every element.
        a.as_mut_slice()[n - 1] = 2.0;
        assert_ne!(
            kernel_read(a.as_slice()),
            (n as u64).wrapping_mul(1.5f64.to_bits())
        );
        if nt_support().is_ok() {
            kernel_write_nt(a.as_mut_slice(), 4.0);
            assert!(a.as_slice().iter().all(|&x| x == 4.0));
        }
        kernel_copy(c.as_mut_slice(), a.as_slice());
        assert_eq!(c.as_slice(), a.as_slice());
        kernel_write(b.as_mut_slice(), 2.0);
        kernel_triad(a.as_mut_slice(), b.as_slice(), c.as_slice(), SCALAR);
        assert!(a.as_slice().iter().all(|&x| x == 2.0 + 3.0 * 4.0));
    }

    #[test]
    fn shares_cover_everything_aligned() {
        for (len, t) in [(1024usize, 1usize), (1000, 3), (8 * 1000 + 8, 7), (64, 8)] {
            let s = shares(len, t);
            assert_eq!(s.len(), t);
            assert_eq!(s[0].start, 0);
            for w in s.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            assert_eq!(s[t - 1].end, len / 8 * 8);
            assert!(s.iter().all(|r| r.start % 8 == 0 && r.len() % 8 == 0));
        }
    }

    #[test]
    fn byte_accounting_follows_stream() {
        assert_eq!(Kernel::Read.arrays_counted(), 1);
        assert_eq!(Kernel::Write.arrays_counted(), 1);
        assert_eq!(Kernel::WriteNt.arrays_counted(), 1);
        assert_eq!(Kernel::Copy.arrays_counted(), 2);
        assert_eq!(Kernel::Triad.arrays_counted(), 3);
        assert!(Kernel::Copy.description().contains("read + bytes written"));
    }

    #[test]
    fn a_short_run_measures_and_verifies() {
        let t = crate::bench::testutil::TestCtx::new();
        let ctx = t.ctx(Duration::from_millis(20), Duration::from_secs(60));
        let b = Bandwidth::new(
            Threads::N(1),
            &MemOptions {
                max_size: Some(3 << 20),
                ..Default::default()
            },
        );
        let out = b.run(&ctx).unwrap();
        for (name, s) in &out.samples {
            assert!(s.len() >= 3, "{name}");
            assert!(s.iter().all(|&x| x > 0.0 && x.is_finite()), "{name}: {s:?}");
        }
        assert_eq!(out.facts["array_bytes"], 1 << 20);
        // A deadline in the past stops it cleanly.
        let ctx = t.ctx(Duration::from_millis(20), Duration::ZERO);
        assert_eq!(
            b.run(&ctx).unwrap_err().kind,
            crate::record::ErrorKind::Timeout
        );
    }

    fn small(threads: Threads) -> Bandwidth {
        Bandwidth::new(
            threads,
            &MemOptions {
                max_size: Some(3 << 20),
                quick: true,
                ..Default::default()
            },
        )
    }

    fn faulted(out: &RunOutput) -> bool {
        out.facts["arrays_faulted_in"] == Value::Bool(true)
    }

    /// Benchmarks built with one pool fault one set of arrays in between them; the set outlives
    /// the release of the first finished benchmark and goes with the last one's.
    #[test]
    fn benchmarks_sharing_a_pool_fault_one_set_in_and_the_last_release_frees_it() {
        let t = crate::bench::testutil::TestCtx::new();
        let opts = MemOptions {
            max_size: Some(3 << 20),
            quick: true,
            ..Default::default()
        };
        let pool = Pool::default();
        let one = Bandwidth::sharing(Threads::N(1), &opts, &pool);
        let all = Bandwidth::sharing(Threads::All, &opts, &pool);
        assert_eq!(one.params()["arrays_shared"], true);
        assert_eq!(small(Threads::N(1)).params()["arrays_shared"], false);
        let ctx = |left: u32| {
            t.ctx(Duration::ZERO, Duration::from_secs(60))
                .with_runs_left(left)
        };
        assert!(faulted(&one.run(&ctx(2)).unwrap()));
        assert!(
            !faulted(&all.run(&ctx(2)).unwrap()),
            "the set one faulted in"
        );
        // `one`'s last run keeps them for `all`, which runs on.
        assert!(!faulted(&one.run(&ctx(1)).unwrap()));
        one.release();
        assert!(
            lock(&pool.kept).is_some(),
            "kept for the benchmark that runs on"
        );
        assert!(!faulted(&all.run(&ctx(1)).unwrap()));
        all.release();
        assert!(lock(&pool.kept).is_none(), "the last release frees them");
        // Released both (an `ab` arm switch): the next run faults a new set in.
        assert!(faulted(&all.run(&ctx(2)).unwrap()));
        all.release();
        assert!(lock(&pool.kept).is_none());
    }

    /// At the quick preset only the run that faulted the arrays in discards its first pass, and a
    /// run times at least one pass; the standard preset discards in every run and times 3.
    #[test]
    fn the_quick_preset_discards_only_the_faulting_runs_first_pass() {
        let t = crate::bench::testutil::TestCtx::new();
        let standard = Bandwidth::new(
            Threads::N(1),
            &MemOptions {
                max_size: Some(3 << 20),
                ..Default::default()
            },
        );
        for (b, discards, min) in [
            (small(Threads::N(1)), [true, false, false], 1),
            (standard, [true, true, true], 3),
        ] {
            let said = b.params()["passes"].as_str().unwrap().to_string();
            assert!(said.contains(&format!("at least {min}")), "{said}");
            for (i, want) in discards.into_iter().enumerate() {
                let ctx = t
                    .ctx(Duration::ZERO, Duration::from_secs(60))
                    .with_runs_left(3 - i as u32);
                let out = b.run(&ctx).unwrap();
                assert_eq!(faulted(&out), i == 0, "run {i}");
                assert_eq!(
                    out.facts["first_pass_discarded"],
                    Value::Bool(want),
                    "run {i}"
                );
                let n = out.samples.iter().find(|m| m.0 == "copy").unwrap().1.len();
                assert_eq!(n, min, "run {i}: a zero run time times the fewest passes");
            }
        }
    }

    /// The arrays are faulted in by the benchmark's first run and kept for the next runs, which
    /// time only their passes; the last run frees them.
    #[test]
    fn arrays_are_faulted_in_once_per_benchmark_not_per_run() {
        let t = crate::bench::testutil::TestCtx::new();
        for threads in [Threads::N(1), Threads::All] {
            let b = small(threads);
            let mut outs: Vec<RunOutput> = (0..4u32)
                .rev()
                .map(|left| {
                    let ctx = t
                        .ctx(Duration::from_millis(5), Duration::from_secs(60))
                        .with_runs_left(left + 1);
                    b.run(&ctx).unwrap()
                })
                .collect();
            let fresh: Vec<bool> = outs.iter().map(faulted).collect();
            assert_eq!(fresh, [true, false, false, false], "{threads:?}");
            assert!(lock(&b.pool.kept).is_none(), "the last run frees them");
            // Every run still measures and checks: samples (at least the quick preset's one
            // timed pass; `small` is a quick benchmark) and the same array size.
            for o in &outs {
                assert!(o.samples[0].1.len() >= b.passes.min_timed as usize);
                assert_eq!(b.passes, Passes::QUICK);
                assert_eq!(o.facts["array_bytes"], outs[0].facts["array_bytes"]);
            }
            let derived = b.finish(&mut outs);
            assert_eq!(derived["arrays_faulted_in_runs"], 1);
            if cfg!(target_os = "linux") {
                assert_eq!(
                    outs[0].facts["arrays_not_inherited"],
                    "madvise(MADV_DONTFORK)"
                );
            }
        }
    }

    /// After `release` (the runner's: last run, error, ab arm switch) the next run faults
    /// fresh arrays in; a run that fails leaves none kept.
    #[test]
    fn released_or_failed_arrays_are_not_reused() {
        let t = crate::bench::testutil::TestCtx::new();
        let b = small(Threads::N(1));
        let ctx = t
            .ctx(Duration::from_millis(5), Duration::from_secs(60))
            .with_runs_left(5);
        assert!(faulted(&b.run(&ctx).unwrap()));
        assert!(!faulted(&b.run(&ctx).unwrap()));
        b.release();
        assert!(lock(&b.pool.kept).is_none());
        assert!(faulted(&b.run(&ctx).unwrap()));
        let past = t
            .ctx(Duration::from_millis(5), Duration::ZERO)
            .with_runs_left(5);
        assert!(b.run(&past).is_err());
        assert!(lock(&b.pool.kept).is_none());
        assert!(faulted(&b.run(&ctx).unwrap()));
        b.release();
    }

    #[test]
    fn kept_arrays_stay_within_their_share_of_memory() {
        let g = 1u64 << 30;
        // This VM: 2 × 3.75 GiB kept, 9 GiB still available.
        assert!(may_keep(4 * g, 0, Some(13 * g)));
        assert!(may_keep(4 * g, 4 * g, Some(9 * g)));
        // A third set would take more than half of what would be free without them.
        assert!(!may_keep(4 * g, 8 * g, Some(5 * g)));
        // Unknown available memory: one set at a time.
        assert!(may_keep(4 * g, 0, None));
        assert!(!may_keep(4 * g, 1, None));
    }
}
