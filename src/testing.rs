//! Test support shared by the unit tests (`crate::bench::testutil`) and the integration tests
//! (`tests/`): is the machine too busy for a timing assertion to mean anything?
//!
//! A timing assertion (a latency shift, deadlines met, one operation slower than another) is only
//! meaningful when nothing else competes for the CPUs. Other work is measured from OS counters
//! over the window the measurement ran in, excluding this process and the children it waited for
//! (so a test's own load, such as the FIFO hog, is not "other work"). When the machine was busy,
//! the assertion is skipped with a printed reason ([`skip_timing`]) — never silently: the line
//! goes to the real stderr, shown even when the test passes and its output is captured.
//!
//! Linux: `/proc/stat` (every CPU's busy and stolen time) minus `/proc/self/stat` (this process's
//! own and its reaped children's CPU time). Elsewhere no counters are read and timing assertions
//! always run.

use std::time::{Duration, Instant};

/// Other work above this many CPUs on average (busy or stolen, 20 % of one CPU) makes the
/// machine busy. An idle machine shows a few hundredths of a CPU.
pub const BUSY_CPUS: f64 = 0.2;

/// Set to `1` to run timing assertions even on a busy machine (the reason is still printed).
pub const FORCE_ENV: &str = "OSGAUGE_TEST_IGNORE_BUSY";

/// Counters at the start of a measuring window.
pub struct BusyWindow {
    start: Option<Sample>,
    t0: Instant,
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    /// Busy (user, nice, system, irq, softirq) plus stolen time of every CPU, in clock ticks.
    busy: u64,
    /// This process plus its reaped children (utime, stime, cutime, cstime), in clock ticks.
    own: u64,
}

impl BusyWindow {
    pub fn start() -> Self {
        BusyWindow {
            start: sample(),
            t0: Instant::now(),
        }
    }

    /// Some(reason) when other processes (or the hypervisor, as steal) used more than
    /// [`BUSY_CPUS`] CPUs on average since [`BusyWindow::start`].
    pub fn busy(&self) -> Option<String> {
        let (a, b) = (self.start?, sample()?);
        let wall = self.t0.elapsed().as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let others_ticks =
            b.busy.saturating_sub(a.busy) as f64 - b.own.saturating_sub(a.own) as f64;
        let others_cpus = others_ticks.max(0.0) / clock_ticks_per_s() / wall;
        (others_cpus > BUSY_CPUS).then(|| {
            format!(
                "the machine was busy: other processes and steal used {others_cpus:.2} CPUs on \
                 average over the {wall:.1} s measured (threshold {BUSY_CPUS}; /proc/stat minus \
                 this test process){}",
                psi_note()
            )
        })
    }
}

/// Some(reason) when the machine is busy now: [`BusyWindow`] over 300 ms.
pub fn machine_busy() -> Option<String> {
    let w = BusyWindow::start();
    std::thread::sleep(Duration::from_millis(300));
    w.busy()
}

/// True when a timing assertion about `what` must be skipped because of `busy`; prints
/// `SKIPPED timing assertion: …` with the reason. With `OSGAUGE_TEST_IGNORE_BUSY=1` the reason
/// is printed but the assertion runs.
pub fn skip_timing(busy: Option<String>, what: &str) -> bool {
    let Some(reason) = busy else {
        return false;
    };
    if std::env::var(FORCE_ENV).is_ok_and(|v| v == "1") {
        say(&format!(
            "NOT SKIPPED ({FORCE_ENV}=1) timing assertion ({what}) although {reason}"
        ));
        return false;
    }
    say(&format!("SKIPPED timing assertion ({what}): {reason}"));
    true
}

/// A test that cannot run here says so: `NOT RUN <test>: <reason>`.
pub fn not_run(test: &str, reason: &str) {
    say(&format!("NOT RUN {test}: {reason}"));
}

/// One line on the real stderr. `eprintln!` output of a passing test is swallowed by the test
/// harness's capture; a direct write is shown in every `cargo test` run.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(target_os = "linux")]
fn sample() -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal guest guest_nice (guest time is already
    // counted in user and nice).
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    let own_stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name: state is field 3, utime..cstime are 14..17.
    let rest = &own_stat[own_stat.rfind(')')? + 1..];
    let g: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let own = g.get(11..15)?.iter().sum();
    Some(Sample { busy, own })
}

#[cfg(not(target_os = "linux"))]
fn sample() -> Option<Sample> {
    None
}

#[cfg(target_os = "linux")]
fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

#[cfg(not(target_os = "linux"))]
fn clock_ticks_per_s() -> f64 {
    100.0
}

/// "; CPU pressure some avg10 = x %" where Linux PSI is available (for the reader only).
fn psi_note() -> String {
    std::fs::read_to_string("/proc/pressure/cpu")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("some"))?;
            let v = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("avg10="))?;
            Some(format!("; CPU pressure some avg10 = {v} %"))
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The meter sees a spinning child process (other work) and ignores this process's own spin.
    #[test]
    #[cfg(target_os = "linux")]
    fn other_work_is_busy_own_work_is_not() {
        let spin = |d: Duration| {
            let t = Instant::now();
            while t.elapsed() < d {
                std::hint::spin_loop();
            }
        };
        let w = BusyWindow::start();
        spin(Duration::from_millis(400));
        let own = w.busy();
        // A spinning process we do not reap inside the window counts as other work.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let w = BusyWindow::start();
        std::thread::sleep(Duration::from_millis(600));
        let other = w.busy();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(other.is_some(), "a spinning process was not seen");
        assert!(other.unwrap().contains("CPUs on average"));
        // Our own spin alone is not "other work". When the window reported busy, real other
        // work may have run during it (it cannot be told apart afterwards: a later sample may be
        // quiet), so the check is skipped with the reason printed rather than guessed.
        if let Some(r) = own {
            assert!(skip_timing(
                Some(format!("own-spin window reported other work: {r}")),
                "own spin is not other work"
            ));
        }
    }

    #[test]
    fn skip_prints_only_when_busy() {
        assert!(!skip_timing(None, "x"));
        if std::env::var(FORCE_ENV).is_err() {
            assert!(skip_timing(
                Some("(self-test of skip_timing, not a real skip)".into()),
                "none"
            ));
        }
    }
}
