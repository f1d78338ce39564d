//! Test support for the integration tests (`tests/it`): is the machine too busy for a timing
//! assertion to mean anything? The lib unit tests use none of it (libtest would count a skipped
//! test as passed): a timing relation is judged in tests/it (e.g. tests/it/timing.rs), whose
//! harness reports a skip as ignored with its reason.
//!
//! A timing assertion (a latency shift, deadlines met, one operation slower than another) is only
//! meaningful when nothing else competes for the CPUs. Other work is measured from OS counters
//! over the window the measurement ran in, excluding this process and the children it waited for
//! (so a test's own load, such as the FIFO hog, is not "other work"). When the machine was busy,
//! the assertion is skipped with a printed reason ([`skip_timing`]) — never silently: the line
//! goes to the real stderr, and the integration tests' harness (tests/it/harness.rs) reports the
//! test as ignored with that reason beside its name (through [`take_not_run`]).
//!
//! Every CPU's busy and stolen time (`platform::cputime::system_cpu`) minus this process's own and
//! its reaped children's CPU time (getrusage). Where the OS has no reaped-children figure
//! (Windows, and so the Windows test executables CI runs under Wine) the test's own work cannot be
//! told from other work: whether the machine was busy is unknown, and timing assertions are
//! skipped with that reason (they ran unguarded before and failed under Wine on a shared CI
//! machine, stop 32). [`FORCE_ENV`] runs them anyway.

use std::time::{Duration, Instant};

/// The cpu and proc benchmarks (id, metric) whose costs contain one another: the lib test
/// (src/bench/invariants.rs) checks each measures where it must; tests/it/timing.rs judges their
/// order in a quiet window.
pub const CONTAINMENT: [(&str, &str); 8] = [
    ("cpu/null_syscall", "call"),
    ("proc/thread_create", "create_join"),
    ("proc/fork_exit", "fork_exit"),
    ("proc/fork_exec", "fork_exec"),
    ("proc/posix_spawn", "posix_spawn"),
    ("proc/spawn", "spawn"),
    ("proc/ctx_switch_thread_unpinned", "round_trip"),
    ("proc/ctx_switch_process_unpinned", "round_trip"),
];

/// Other work above this many CPUs on average (busy or stolen, 20 % of one CPU) makes the
/// machine busy. An idle machine shows a few hundredths of a CPU.
pub const BUSY_CPUS: f64 = 0.2;

/// Set to `1` to run timing assertions even on a busy machine (the reason is still printed).
pub const FORCE_ENV: &str = "OSGAUGE_TEST_IGNORE_BUSY";

/// Why [`BusyWindow::busy`] cannot clear a window on an OS without a reaped-children CPU meter.
pub const UNMEASURABLE: &str = "whether the machine was busy is unknown here: this OS gives no \
    CPU time of a process's finished children, so the test's own work (its osgauge child \
    processes) cannot be told from other work";

/// Counters at the start of a measuring window.
pub struct BusyWindow {
    start: Option<Sample>,
    t0: Instant,
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    /// Busy (anything but idle and iowait) plus stolen time of every CPU, ns.
    busy_ns: u64,
    /// This process plus its reaped children (user + system), ns.
    own_ns: u64,
}

impl BusyWindow {
    pub fn start() -> Self {
        BusyWindow {
            start: sample(),
            t0: Instant::now(),
        }
    }

    /// Some(reason) when other processes (or the hypervisor, as steal) used more than
    /// [`BUSY_CPUS`] CPUs on average since [`BusyWindow::start`], or ([`UNMEASURABLE`]) when the
    /// OS's counters cannot tell.
    pub fn busy(&self) -> Option<String> {
        let (Some(a), Some(b)) = (self.start, sample()) else {
            return Some(UNMEASURABLE.to_string());
        };
        let wall = self.t0.elapsed().as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let others_ns =
            b.busy_ns.saturating_sub(a.busy_ns) as f64 - b.own_ns.saturating_sub(a.own_ns) as f64;
        let others_cpus = others_ns.max(0.0) / 1e9 / wall;
        (others_cpus > BUSY_CPUS).then(|| {
            format!(
                "the machine was busy: other processes and steal used {others_cpus:.2} CPUs on \
                 average over the {wall:.1} s measured (threshold {BUSY_CPUS}; all CPUs' busy time \
                 minus this test process and its reaped children){}",
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
    mark_not_run(format!("timing assertion ({what}) not judged: {reason}"));
    true
}

/// A test that cannot run here says so: `NOT RUN <test>: <reason>`. The integration tests'
/// harness (tests/it/harness.rs) then reports the test as ignored with this reason, unless it
/// fails afterwards.
pub fn not_run(test: &str, reason: &str) {
    say(&format!("NOT RUN {test}: {reason}"));
    mark_not_run(reason.to_string());
}

thread_local! {
    /// The first reason a test on this thread gave for not judging (part of) what it tests.
    static NOT_RUN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn mark_not_run(reason: String) {
    NOT_RUN.with(|r| {
        r.borrow_mut().get_or_insert(reason);
    });
}

/// The reason recorded by [`not_run`] or [`skip_timing`] on this thread since the last call, and
/// clear it: a test harness calls it before and after each test.
pub fn take_not_run() -> Option<String> {
    NOT_RUN.with(|r| r.borrow_mut().take())
}

/// One line on the real stderr. `eprintln!` output of a passing test is swallowed by the test
/// harness's capture; a direct write is shown in every `cargo test` run.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Every CPU's busy plus stolen time, and this process's plus its reaped children's CPU time,
/// from the platform's CPU meters; None where the OS has no reaped-children figure.
fn sample() -> Option<Sample> {
    use crate::platform::cputime;
    let sys = cputime::system_cpu().ok()?;
    Some(Sample {
        busy_ns: sys.busy_ns + sys.steal_ns.unwrap_or(0),
        own_ns: cputime::own_and_reaped_children_cpu_ns().ok()?,
    })
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
    #[cfg(unix)]
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

    /// Where the counters cannot tell own work from other work, no window is called quiet.
    #[test]
    fn an_unmeasurable_window_is_never_quiet() {
        let w = BusyWindow::start();
        let busy = w.busy();
        if sample().is_none() {
            assert_eq!(busy.as_deref(), Some(UNMEASURABLE));
        } else {
            assert_ne!(busy.as_deref(), Some(UNMEASURABLE));
        }
        #[cfg(unix)]
        assert!(
            sample().is_some(),
            "getrusage and the system CPU meter are read on Unix"
        );
        #[cfg(windows)]
        assert_eq!(busy.as_deref(), Some(UNMEASURABLE));
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
