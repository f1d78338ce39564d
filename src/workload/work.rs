//! Work emulation: how a task "uses" N ns of CPU.
//!
//! - `fixed` (default): a calibrated number of loop iterations (loops per µs). Like Interbench it
//!   is a fixed amount of work, so a slower CPU (frequency, SMT sibling, steal) shows up as lost
//!   CPU. Calibration runs in a thread placed like the task (its CPUs and policy applied first),
//!   is bounded (at most 3 rounds of 9 trials of ~10 ms, within 3 s of wall time, and stopped by
//!   Ctrl-C or the cell's deadline), timed with the thread's CPU clock so preemption during
//!   calibration does not bias it (the monotonic clock where the thread CPU clock is coarse, as
//!   on Windows; the cache records which), noise-tolerant (median of trials; a round is accepted
//!   when its trials agree within 5 %, else the most consistent round is used with a warning and
//!   not cached), and cached per machine key (CPU model, kernel, governor, osgauge version and
//!   build) and placement (CPUs, policy). A cached value is used only when a quick measurement
//!   (3 trials of ~1 ms) agrees with it within 2×; otherwise it is measured again, with a warning.
//!   Whatever the calibration says, a burst polls its deadline and Ctrl-C at least every 2^18
//!   loop iterations.
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

use crate::platform::clock;

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

/// Most loop iterations between two polls of a burst, whatever the calibration says: about 1 ms
/// at the fastest loop rate seen (~300 per µs), so even a wrong calibration (a poisoned cache
/// once gave 10^12 loops per µs) cannot keep a burst from seeing its deadline or a Ctrl-C.
pub const MAX_LOOPS_PER_POLL: u64 = 1 << 18;

impl Work {
    /// Do `ns` of work. `poll(done)` is called about every 0.1 ms of work (and at least every
    /// [`MAX_LOOPS_PER_POLL`] iterations) with the fraction of the work done so far; returning
    /// true ends the burst early. Returns whether all the work was done.
    pub fn run(&self, ns: u64, poll: &mut dyn FnMut(f64) -> bool) -> bool {
        match self.mode {
            WorkMode::Fixed => {
                let total = (ns as f64 / 1000.0 * self.loops_per_us) as u64;
                let chunk = ((self.loops_per_us * 100.0) as u64).clamp(1, MAX_LOOPS_PER_POLL);
                let mut done = 0u64;
                while done < total {
                    let n = (total - done).min(chunk);
                    burn_loops(n);
                    done += n;
                    if done < total && poll(done as f64 / total as f64) {
                        return false;
                    }
                }
                true
            }
            WorkMode::Cputime => {
                let Ok(c0) = clock::thread_cpu_time_ns() else {
                    return false;
                };
                // ~5 µs between clock reads, a poll every ~0.1 ms.
                let chunk = ((self.loops_per_us * 5.0) as u64).clamp(1, MAX_LOOPS_PER_POLL / 16);
                let mut reads = 0u32;
                loop {
                    burn_loops(chunk);
                    let c = clock::thread_cpu_time_ns().unwrap_or(u64::MAX);
                    let used = c.saturating_sub(c0);
                    if used >= ns {
                        return true;
                    }
                    reads += 1;
                    if reads.is_multiple_of(20) && poll(used as f64 / ns.max(1) as f64) {
                        return false;
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
        let deadline = clock::now_ns() + 250_000_000;
        let next_step = |from: u64| -> Option<u64> {
            loop {
                let c = clock::thread_cpu_time_ns().ok()?;
                if c != from {
                    return Some(c);
                }
                if clock::now_ns() > deadline {
                    return None;
                }
            }
        };
        let Ok(c0) = clock::thread_cpu_time_ns() else {
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
    /// A cached value is checked against a quick measurement before it is used: that
    /// measurement, loops per µs (None when the value was measured now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick_check: Option<f64>,
}

/// Wall-time bound of a whole calibration (normally ~0.3 s of CPU); past it the trials done so far
/// are used (with a warning, not cached), or the calibration fails if too few were done.
pub const CALIBRATION_BUDGET_NS: u64 = 3_000_000_000;

/// A cached calibration is used only when a quick measurement agrees with it within this factor.
pub const CACHE_CHECK_FACTOR: f64 = 2.0;

/// Why a calibration gave no value.
#[derive(Debug, Clone, PartialEq)]
pub enum CalibrationError {
    /// `stop` said so (Ctrl-C, the cell's deadline).
    Stopped,
    Failed(String),
}

/// The clock calibration trials are timed with: the thread CPU clock (preemption does not bias
/// it) where it is fine, else the monotonic clock (a trial preempted by another thread then reads
/// slow; the median of 9 trials keeps that out). Returns its name and a reader.
fn trial_clock() -> (&'static str, fn() -> u64) {
    if cpu_clock_is_fine() {
        ("thread CPU clock", || {
            clock::thread_cpu_time_ns().unwrap_or(0)
        })
    } else {
        ("monotonic clock", clock::now_ns)
    }
}

/// Loop iterations that take about `target_ns` on `clock`, found by growing a trial until it
/// takes ≥ 1/5 of that. Bounded by `deadline` (monotonic ns) and `stop`.
fn size_trial(
    clock: fn() -> u64,
    target_ns: u64,
    deadline: u64,
    stop: &dyn Fn() -> bool,
) -> Result<u64, CalibrationError> {
    let mut n = 1_000u64;
    loop {
        if stop() {
            return Err(CalibrationError::Stopped);
        }
        let c0 = clock();
        burn_loops(n);
        let dt = clock().saturating_sub(c0);
        if dt >= target_ns / 5 {
            return Ok((((n as f64) * target_ns as f64 / dt as f64) as u64).max(1));
        }
        if clock::now_ns() > deadline || n > 1 << 40 {
            return Err(CalibrationError::Failed(format!(
                "work calibration: {n} loop iterations took {dt} ns on the {}; the clock does not \
                 advance as it should",
                trial_clock().0
            )));
        }
        n *= 4;
    }
}

/// Measure loops per µs (see [`trial_clock`]): at most 3 rounds × 9 trials of ~10 ms, within
/// `budget_ns` of wall time, checking `stop` before every trial. Returns (loops per µs, spread of
/// the round used, rounds, whether the budget cut it short).
pub fn measure_loops_per_us(
    budget_ns: u64,
    stop: &dyn Fn() -> bool,
) -> Result<(f64, f64, u32, bool), CalibrationError> {
    let (_, clock) = trial_clock();
    let deadline = clock::now_ns().saturating_add(budget_ns);
    let n = size_trial(clock, 10_000_000, deadline, stop)?;
    let mut best: Option<(f64, f64)> = None;
    let mut rounds = 0;
    let mut cut = false;
    'rounds: for _ in 0..3 {
        rounds += 1;
        let mut rates = Vec::with_capacity(9);
        for _ in 0..9 {
            if stop() {
                return Err(CalibrationError::Stopped);
            }
            if clock::now_ns() > deadline {
                cut = true;
                break;
            }
            let c0 = clock();
            burn_loops(n);
            let dt = clock().saturating_sub(c0);
            rates.push(n as f64 / (dt.max(1) as f64 / 1000.0));
        }
        rates.sort_by(f64::total_cmp);
        if rates.len() >= 3 {
            let med = rates[rates.len() / 2];
            // Spread of the middle trials (one outlier each side tolerated in a full round).
            let (lo, hi) = if rates.len() >= 5 {
                (rates[1], rates[rates.len() - 2])
            } else {
                (rates[0], rates[rates.len() - 1])
            };
            let spread = (hi - lo) / med;
            if best.is_none_or(|(_, s)| spread < s) {
                best = Some((med, spread));
            }
            if spread < 0.05 && rates.len() == 9 {
                break 'rounds;
            }
        }
        if cut {
            break;
        }
    }
    match best {
        Some((lpu, spread)) => Ok((lpu, spread, rounds, cut)),
        None => Err(CalibrationError::Failed(format!(
            "work calibration: fewer than 3 trials fitted in {} s (machine too busy?)",
            budget_ns / 1_000_000_000
        ))),
    }
}

/// A quick measurement of loops per µs to check a cached value against: 3 trials of ~1 ms
/// (median), bounded to ~0.5 s.
pub fn quick_loops_per_us(stop: &dyn Fn() -> bool) -> Result<f64, CalibrationError> {
    let (_, clock) = trial_clock();
    let deadline = clock::now_ns() + 500_000_000;
    // With a coarse (monotonic) clock, trials of ~1 ms are too short for nothing: use 10 ms.
    let target = if cpu_clock_is_fine() {
        1_000_000
    } else {
        10_000_000
    };
    let n = size_trial(clock, target, deadline, stop)?;
    let mut rates = Vec::with_capacity(3);
    for _ in 0..3 {
        if stop() {
            return Err(CalibrationError::Stopped);
        }
        let c0 = clock();
        burn_loops(n);
        let dt = clock().saturating_sub(c0);
        rates.push(n as f64 / (dt.max(1) as f64 / 1000.0));
    }
    rates.sort_by(f64::total_cmp);
    Ok(rates[1])
}

/// The cache directory: `OSGAUGE_CACHE_DIR` if set, else the user cache dir
/// (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on
/// Windows), then `osgauge/`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("OSGAUGE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    dirs::cache_dir().map(|b| b.join("osgauge"))
}

/// Machine key of a calibration: CPU model, OS and kernel version, governor(s), osgauge version
/// and build profile.
pub fn machine_key() -> String {
    let m = crate::platform::sysinfo::machine();
    let e = crate::platform::sysinfo::environment();
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

/// Load the cached calibration for `key` from `cache_file`, or measure and store it there (None:
/// measure, store nothing). Run it in the thread that will do the work, after its affinity and
/// policy are set, and put them in `key` (see [`machine_key`]). A cached value is used only when
/// a quick measurement agrees with it within [`CACHE_CHECK_FACTOR`]; otherwise it is measured
/// again, with a warning saying so. `stop` is checked between trials.
pub fn calibrate(
    recalibrate: bool,
    cache_file: Option<&std::path::Path>,
    key: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Calibration, CalibrationError> {
    let path = cache_file.map(|p| p.to_path_buf());
    let mut notes = Vec::new();
    if !recalibrate
        && let Some(p) = &path
        && let Ok(text) = std::fs::read_to_string(p)
        && let Ok(c) = serde_json::from_str::<Calibration>(&text)
        && c.key == key
        && c.clock == trial_clock().0
    {
        let quick = quick_loops_per_us(stop)?;
        let ratio = c.loops_per_us / quick;
        if c.loops_per_us.is_finite()
            && (1.0 / CACHE_CHECK_FACTOR..=CACHE_CHECK_FACTOR).contains(&ratio)
        {
            return Ok(Calibration {
                cached: true,
                quick_check: Some(quick),
                ..c
            });
        }
        notes.push(format!(
            "cached work calibration ({} loops/µs in {}) is off by more than {CACHE_CHECK_FACTOR}× \
             from a quick measurement ({quick:.1} loops/µs): rejected and measured again",
            c.loops_per_us,
            p.display()
        ));
    }
    let (loops_per_us, spread, rounds, cut) = measure_loops_per_us(CALIBRATION_BUDGET_NS, stop)?;
    if cut {
        notes.push(format!(
            "work calibration stopped at its {} s time bound after {rounds} round(s) (busy \
             machine?); the trials done so far were used",
            CALIBRATION_BUDGET_NS / 1_000_000_000
        ));
    } else if spread >= 0.05 {
        notes.push(format!(
            "work calibration was noisy: trials spread {:.1} % after {rounds} rounds (busy machine?); \
             --work cputime is immune to this",
            spread * 100.0
        ));
    }
    let good = !cut && spread < 0.05;
    let c = Calibration {
        key: key.to_string(),
        loops_per_us,
        spread,
        rounds,
        cached: false,
        warning: (!notes.is_empty()).then(|| notes.join("; ")),
        clock: trial_clock().0.to_string(),
        quick_check: None,
    };
    if let Some(p) = &path
        && good
    {
        let _ = std::fs::create_dir_all(p.parent().unwrap_or(p));
        let stored = Calibration {
            warning: None,
            ..c.clone()
        };
        if let Ok(text) = serde_json::to_string_pretty(&stored) {
            let _ = crate::export::write_atomic(p, text.as_bytes());
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure() -> f64 {
        measure_loops_per_us(CALIBRATION_BUDGET_NS, &|| false)
            .unwrap()
            .0
    }

    #[test]
    fn calibration_is_positive_and_work_scales() {
        let (lpu, spread, rounds, _) =
            measure_loops_per_us(CALIBRATION_BUDGET_NS, &|| false).unwrap();
        assert!(lpu > 0.0 && spread >= 0.0 && (1..=3).contains(&rounds));
        // cputime mode: 20 ms of work uses at least 20 ms of thread CPU time.
        let w = Work {
            mode: WorkMode::Cputime,
            loops_per_us: lpu,
        };
        let c0 = clock::thread_cpu_time_ns().unwrap();
        assert!(w.run(20_000_000, &mut |_| false));
        let used = clock::thread_cpu_time_ns().unwrap() - c0;
        assert!(used >= 20_000_000, "used {used}");
        // poll() ends a long fixed burst early, and sees the work progress.
        let w = Work {
            mode: WorkMode::Fixed,
            loops_per_us: lpu,
        };
        let t = std::time::Instant::now();
        let mut seen = 0.0;
        let done = w.run(10_000_000_000, &mut |p| {
            seen = p;
            true
        });
        assert!(!done);
        assert!(seen > 0.0 && seen < 0.01, "progress {seen}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_wrong_calibration_cannot_outlive_a_stop() {
        // 10^12 loops per µs (a poisoned cache): 1 ms of "work" would be 10^15 iterations. The
        // burst must still poll within ~1 ms of work and stop when told to.
        for mode in [WorkMode::Fixed, WorkMode::Cputime] {
            let w = Work {
                mode,
                loops_per_us: 1e12,
            };
            let t = std::time::Instant::now();
            let mut polls = 0;
            let done = w.run(1_000_000_000, &mut |_| {
                polls += 1;
                t.elapsed() > std::time::Duration::from_millis(50)
            });
            assert!(!done, "{mode:?}");
            assert!(polls > 1, "{mode:?}: {polls} polls");
            assert!(
                t.elapsed() < std::time::Duration::from_millis(500),
                "{mode:?}: stopped after {:?}",
                t.elapsed()
            );
        }
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
        let lpu = measure();
        let w = Work {
            mode: WorkMode::Fixed,
            loops_per_us: lpu,
        };
        let t = std::time::Instant::now();
        w.run(1_000_000, &mut |_| false);
        let took = t.elapsed();
        assert!(
            took > std::time::Duration::from_micros(200)
                && took < std::time::Duration::from_secs(1),
            "1 ms of work took {took:?} ({lpu} loops/µs)"
        );
    }

    #[test]
    fn calibration_honours_stop_and_its_time_bound() {
        assert_eq!(
            measure_loops_per_us(CALIBRATION_BUDGET_NS, &|| true).unwrap_err(),
            CalibrationError::Stopped
        );
        assert_eq!(
            calibrate(true, None, "k", &|| true).unwrap_err(),
            CalibrationError::Stopped
        );
        // A 100 ms budget: either the budget cut the trials short (and says so), or a first
        // round of 9 trials fitted and agreed within 5 % (3 rounds of ~10 ms trials cannot fit).
        let t = std::time::Instant::now();
        match measure_loops_per_us(100_000_000, &|| false) {
            Ok((lpu, spread, rounds, cut)) => {
                assert!(lpu > 0.0);
                assert!(
                    cut || (spread < 0.05 && rounds < 3),
                    "not cut short, yet {rounds} round(s) with spread {spread} fitted in 100 ms"
                );
            }
            Err(e) => assert!(matches!(e, CalibrationError::Failed(_)), "{e:?}"),
        }
        assert!(t.elapsed() < std::time::Duration::from_millis(600));
    }

    // The cache round trip (a clean calibration is cached under its key and read back) needs a
    // quiet machine, so it is an integration test: tests/it/timing.rs.

    #[test]
    fn a_poisoned_cache_is_rejected_and_measured_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cal.json");
        for bad in [1e12, 1e-6] {
            let poisoned = Calibration {
                key: "k".into(),
                loops_per_us: bad,
                spread: 0.0,
                rounds: 1,
                cached: false,
                warning: None,
                clock: trial_clock().0.into(),
                quick_check: None,
            };
            std::fs::write(&file, serde_json::to_string(&poisoned).unwrap()).unwrap();
            let t = std::time::Instant::now();
            let c = calibrate(false, Some(&file), "k", &|| false).unwrap();
            assert!(!c.cached, "{bad}");
            assert!(
                c.loops_per_us < 1e6 && c.loops_per_us > 1e-3,
                "{}",
                c.loops_per_us
            );
            let w = c.warning.unwrap_or_default();
            assert!(w.contains("rejected and measured again"), "{w}");
            assert!(t.elapsed() < std::time::Duration::from_secs(5));
        }
    }
}
