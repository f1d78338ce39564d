//! Work emulation: how a task "uses" N ns of CPU.
//!
//! - `fixed` (default): a calibrated number of loop iterations (loops per µs). Like Interbench it
//!   is a fixed amount of work, so a slower CPU (frequency, SMT sibling, steal) shows up as lost
//!   CPU. Calibration is bounded (at most 3 rounds of 9 trials of ~10 ms), timed with the thread's
//!   CPU clock so preemption during calibration does not bias it (the monotonic clock where the
//!   thread CPU clock is coarse, as on Windows; the cache records which), noise-tolerant (median of trials;
//!   a round is accepted when its trials agree within 5 %, else the most consistent round is used
//!   with a warning and not cached), and cached per machine key (CPU model, kernel, governor,
//!   osgauge version and build).
//! - `cputime`: burn until the thread's CPU clock has advanced by N ns: isolates the scheduler
//!   from frequency effects.
//!
//! Seen on a shared 2-vCPU VM: right after a sleep, fixed work runs up to ~2× slower than
//! calibrated (a 2.5 ms burst after a 47 ms sleep took 3.4–4.8 ms of thread CPU time, back to back
//! 2.4–2.7 ms), so `fixed` tasks there use more CPU than their nominal share; the record's
//! `task_cpu` against `target_cpu_pct` shows it. `cputime` keeps the share exact.

use std::hint::black_box;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::platform::realtime;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum WorkMode {
    Fixed,
    Cputime,
}

/// What a task needs to emulate work: the mode and, for `fixed`, loops per µs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Work {
    pub mode: WorkMode,
    pub loops_per_us: f64,
}

/// The loop that is the "work": one dependent iteration per step.
#[inline(never)]
pub fn burn_loops(n: u64) {
    let mut x = 0u64;
    for i in 0..n {
        x = black_box(x.wrapping_add(i));
    }
    black_box(x);
}

impl Work {
    /// Do `ns` of work; `stop` is polled about every 1 ms so long bursts end promptly.
    pub fn run(&self, ns: u64, stop: &dyn Fn() -> bool) {
        match self.mode {
            WorkMode::Fixed => {
                let mut left = (ns as f64 / 1000.0 * self.loops_per_us) as u64;
                let chunk = (self.loops_per_us * 1000.0).max(1.0) as u64;
                while left > 0 {
                    let n = left.min(chunk);
                    burn_loops(n);
                    left -= n;
                    if left > 0 && stop() {
                        return;
                    }
                }
            }
            WorkMode::Cputime => {
                let Ok(c0) = realtime::thread_cpu_time_ns() else {
                    return;
                };
                let chunk = (self.loops_per_us * 5.0).max(1.0) as u64; // ~5 µs between clock reads
                let mut polls = 0u32;
                loop {
                    burn_loops(chunk);
                    let c = realtime::thread_cpu_time_ns().unwrap_or(u64::MAX);
                    if c.saturating_sub(c0) >= ns {
                        return;
                    }
                    polls += 1;
                    if polls.is_multiple_of(200) && stop() {
                        return;
                    }
                }
            }
        }
    }
}

/// A thread CPU clock that advances in steps no larger than this (ns) is fine enough to time
/// calibration trials, `--work cputime` bursts and gaming bursts with.
pub const FINE_CPU_CLOCK_NS: u64 = 100_000;

/// How far the thread CPU clock advances per step, ns, measured once per process by spinning
/// until it has stepped twice (at most ~250 ms). Linux and macOS count ns; Windows' GetThreadTimes
/// advances once per scheduler tick (15.6 ms by default; Wine: 10 ms). `u64::MAX` when it never
/// stepped (no usable clock).
pub fn cpu_clock_step_ns() -> u64 {
    static STEP: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *STEP.get_or_init(|| {
        let deadline = realtime::now_ns() + 250_000_000;
        let next_step = |from: u64| -> Option<u64> {
            loop {
                let c = realtime::thread_cpu_time_ns().ok()?;
                if c != from {
                    return Some(c);
                }
                if realtime::now_ns() > deadline {
                    return None;
                }
            }
        };
        let Ok(c0) = realtime::thread_cpu_time_ns() else {
            return u64::MAX;
        };
        match next_step(c0).and_then(|a| next_step(a).map(|b| b - a)) {
            Some(step) => step.max(1),
            None => u64::MAX,
        }
    })
}

/// Whether the thread CPU clock is fine enough (see [`FINE_CPU_CLOCK_NS`]).
pub fn cpu_clock_is_fine() -> bool {
    cpu_clock_step_ns() <= FINE_CPU_CLOCK_NS
}

/// Result of a calibration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub key: String,
    pub loops_per_us: f64,
    /// Relative spread (max − min) / median of the accepted round's trials.
    pub spread: f64,
    pub rounds: u32,
    pub cached: bool,
    pub warning: Option<String>,
    /// The clock the trials were timed with ("thread CPU clock", or "monotonic clock" where the
    /// thread CPU clock is too coarse).
    #[serde(default)]
    pub clock: String,
}

/// The clock calibration trials are timed with: the thread CPU clock (preemption does not bias
/// it) where it is fine, else the monotonic clock (a trial preempted by another thread then reads
/// slow; the median of 9 trials keeps that out). Returns its name and a reader.
fn trial_clock() -> (&'static str, fn() -> u64) {
    if cpu_clock_is_fine() {
        ("thread CPU clock", || {
            realtime::thread_cpu_time_ns().unwrap_or(0)
        })
    } else {
        ("monotonic clock", realtime::now_ns)
    }
}

/// Measure loops per µs (see [`trial_clock`]). Bounded: ≤ 3 rounds × 9 trials × ~10 ms.
pub fn measure_loops_per_us() -> (f64, f64, u32) {
    let (_, clock) = trial_clock();
    // Size a trial to ~10 ms.
    let mut n = 10_000u64;
    loop {
        let c0 = clock();
        burn_loops(n);
        let dt = clock().saturating_sub(c0);
        if dt >= 2_000_000 || n > 1 << 40 {
            n = ((n as f64) * 10_000_000.0 / dt.max(1) as f64) as u64;
            break;
        }
        n *= 4;
    }
    let mut best: Option<(f64, f64)> = None;
    let mut rounds = 0;
    for _ in 0..3 {
        rounds += 1;
        let mut rates = Vec::with_capacity(9);
        for _ in 0..9 {
            let c0 = clock();
            burn_loops(n);
            let dt = clock().saturating_sub(c0);
            rates.push(n as f64 / (dt.max(1) as f64 / 1000.0));
        }
        rates.sort_by(f64::total_cmp);
        let med = rates[4];
        // Spread of the middle 7 trials (one outlier each side tolerated).
        let spread = (rates[7] - rates[1]) / med;
        if best.is_none_or(|(_, s)| spread < s) {
            best = Some((med, spread));
        }
        if spread < 0.05 {
            break;
        }
    }
    let (lpu, spread) = best.expect("at least one round");
    (lpu, spread, rounds)
}

/// The cache directory: `OSGAUGE_CACHE_DIR` if set, else the user cache dir
/// (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on
/// Windows), then `osgauge/`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("OSGAUGE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    let base = if cfg!(windows) {
        std::env::var_os("LOCALAPPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join("Library/Caches"))
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
    };
    base.map(|b| b.join("osgauge"))
}

/// Machine key of a calibration: CPU model, OS and kernel version, governor(s), osgauge version
/// and build profile.
pub fn machine_key() -> String {
    let m = crate::system::machine();
    let e = crate::system::environment();
    let gov = e
        .governors
        .map(|g| {
            let mut v: Vec<_> = g.into_iter().filter_map(|g| g.governor).collect();
            v.dedup();
            v.join("+")
        })
        .unwrap_or_else(|| "none".into());
    // The build matters too: the loop runs several times slower in a debug build.
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    format!(
        "{} | {} {} {} | governor {} | osgauge {} {build}",
        m.cpu.model_name.unwrap_or_else(|| "unknown cpu".into()),
        m.os,
        m.os_version.unwrap_or_default(),
        m.kernel_release.unwrap_or_default(),
        gov,
        env!("CARGO_PKG_VERSION"),
    )
}

/// Default calibration cache file.
pub fn default_cache_file() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("interactivity-calibration.json"))
}

/// Load the cached calibration for this machine from `cache_file`, or measure and store it there
/// (None: measure, store nothing).
pub fn calibrate(recalibrate: bool, cache_file: Option<&std::path::Path>) -> Calibration {
    let key = machine_key();
    let path = cache_file.map(|p| p.to_path_buf());
    if !recalibrate
        && let Some(p) = &path
        && let Ok(text) = std::fs::read_to_string(p)
        && let Ok(c) = serde_json::from_str::<Calibration>(&text)
        && c.key == key
        && c.clock == trial_clock().0
        && c.loops_per_us > 0.0
    {
        return Calibration { cached: true, ..c };
    }
    let (loops_per_us, spread, rounds) = measure_loops_per_us();
    let warning = (spread >= 0.05).then(|| {
        format!(
            "work calibration was noisy: trials spread {:.1} % after {rounds} rounds (busy machine?); \
             --work cputime is immune to this",
            spread * 100.0
        )
    });
    let c = Calibration {
        key,
        loops_per_us,
        spread,
        rounds,
        cached: false,
        warning,
        clock: trial_clock().0.to_string(),
    };
    if let Some(p) = &path
        && c.warning.is_none()
    {
        let _ = std::fs::create_dir_all(p.parent().unwrap_or(p));
        if let Ok(text) = serde_json::to_string_pretty(&c) {
            let _ = crate::export::write_atomic(p, text.as_bytes());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_positive_and_work_scales() {
        let (lpu, spread, rounds) = measure_loops_per_us();
        assert!(lpu > 0.0 && spread >= 0.0 && (1..=3).contains(&rounds));
        // cputime mode: 20 ms of work uses at least 20 ms of thread CPU time.
        let w = Work {
            mode: WorkMode::Cputime,
            loops_per_us: lpu,
        };
        let c0 = realtime::thread_cpu_time_ns().unwrap();
        w.run(20_000_000, &|| false);
        let used = realtime::thread_cpu_time_ns().unwrap() - c0;
        assert!(used >= 20_000_000, "used {used}");
        // stop() ends a long fixed burst early.
        let w = Work {
            mode: WorkMode::Fixed,
            loops_per_us: lpu,
        };
        let t = std::time::Instant::now();
        w.run(10_000_000_000, &|| true);
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn cpu_clock_step_is_measured_and_picks_the_calibration_clock() {
        let step = cpu_clock_step_ns();
        assert!(step >= 1);
        if cfg!(any(target_os = "linux", target_os = "macos")) {
            assert!(cpu_clock_is_fine(), "step {step} ns");
            assert_eq!(trial_clock().0, "thread CPU clock");
        }
        if !cpu_clock_is_fine() {
            assert_eq!(trial_clock().0, "monotonic clock");
        }
        // Whichever clock, the calibration is sane: a 1 ms burst of fixed work takes between
        // 0.2 ms and 1 s of wall time (a calibration timed by a coarse clock that read 0 once
        // gave ~10^9 loops per µs and a burst that never ended).
        let (lpu, _, _) = measure_loops_per_us();
        let w = Work {
            mode: WorkMode::Fixed,
            loops_per_us: lpu,
        };
        let t = std::time::Instant::now();
        w.run(1_000_000, &|| false);
        let took = t.elapsed();
        assert!(
            took > std::time::Duration::from_micros(200)
                && took < std::time::Duration::from_secs(1),
            "1 ms of work took {took:?} ({lpu} loops/µs)"
        );
    }

    #[test]
    fn cache_roundtrip_uses_override_dir() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub").join("cal.json");
        let a = calibrate(true, Some(&file));
        if a.warning.is_none() {
            assert!(file.exists());
            let b = calibrate(false, Some(&file));
            assert!(b.cached);
            assert_eq!(a.loops_per_us, b.loops_per_us);
        }
    }
}
