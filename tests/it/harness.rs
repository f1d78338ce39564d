//! The test harness of this binary (`harness = false` in Cargo.toml): libtest-mimic runs the
//! tests, so that a test that finds out only while running that it cannot judge anything here
//! (PostgreSQL missing, tracefs refused, the timing window busy, …) is counted as **ignored**, with
//! its reason beside its name, instead of as passed.
//!
//! A test is a plain `fn name()` followed by `crate::register!(name)`; `#[test]` must not be used
//! (without libtest's `--test` build it would silently remove the function — the
//! `no_test_attribute_is_left` test below guards that). What used to be attributes are builder
//! calls on the registration, evaluated when the binary starts:
//!
//! ```text
//! crate::register!(name.ignore("why"));                   // #[ignore = "why"]
//! crate::register!(name.ignore_if(cfg!(windows), "why")); // #[cfg_attr(windows, ignore = "why")]
//! crate::register!(name.root());                         // #[test_with::root()]
//! crate::register!(name.path("/dev/shm"));               // #[test_with::path(/dev/shm)]
//! crate::register!(name.executable(&["nginx", "/usr/sbin/nginx"])); // #[test_with::executable(a || b)]
//! crate::register!(name.should_panic("message part"));   // #[should_panic(expected = "…")]
//! crate::register!(name.serial(group::TRACEFS));         // runs alone (see below)
//! crate::register!(name.ci_only());                      // a slow end-to-end check CI runs
//! ```
//!
//! Tests run in parallel (two threads per CPU, one per CPU for the CI-only group: see
//! [`default_threads`]; `--test-threads N` or `RUST_TEST_THREADS` to choose), except a test declared `serial(group)`: it runs alone, with no
//! other test of this binary beside it, because it changes or reads state the whole machine
//! shares ([`group`]: tracefs, PM QoS, the RT throttle's budget) or judges timing (its busy
//! check cannot tell other tests of this process from its own work, and load beside it would
//! move its figures). The parallel tests run first, then the serial ones, one at a time. The
//! tracefs and PM QoS groups also hold a lock file in the temp dir while they run, so two runs of
//! this binary on one machine take turns there.
//!
//! A test declared `ci_only()` (an end-to-end check that takes minutes) is reported ignored, with
//! the command that runs it, by `cargo test`; `.ci/run` runs that group with
//! `cargo test --test it -- --ci-only` (alone in its run, one thread per CPU).
//!
//! `#[cfg(...)]` on a test goes on both the function and its `register!` line. A test ignored by
//! one of these conditions runs with `--ignored` / `--include-ignored`, as with libtest.
//!
//! At run time a test calls `osgauge::testing::not_run(test, reason)` (or `skip_timing` returns
//! true): the line is printed at once, and when the test then returns without failing it is
//! reported as `ignored (reason)`. A test that fails afterwards still fails.
//!
//! Beyond libtest-mimic: several name filters (`-- a:: b::`), `RUST_TEST_THREADS` when
//! `--test-threads` is not given, serial groups and the CI-only group. Each test runs on a thread
//! of its own named after it, as with libtest (thread-local state starts afresh). libtest-mimic
//! captures no output: on Unix, one test at a time and without `--nocapture`, this harness
//! captures file descriptors 1 and 2 and shows them under a failure only; elsewhere a test's
//! prints appear as it runs, and its panic is in the failure summary, so `test NAME ... FAILED`
//! stays one line.

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::Path;
use std::sync::RwLock;

/// Why a test must run alone ([`Test::serial`]): the state it shares with the whole machine.
pub mod group {
    /// One tracing session at a time (osgauge refuses to share tracefs), and the tracing settings
    /// compared before and after.
    pub const TRACEFS: &str = "tracefs";
    /// `/dev/cpu_dma_latency`: one machine-wide request in force, read back by the test.
    pub const PM_QOS: &str = "PM QoS";
    /// SCHED_FIFO/RR threads or hogs: they take CPUs from every other test, within the RT
    /// throttle's machine-wide budget.
    pub const RT: &str = "RT throttle";
    /// A timing assertion or time bound: its busy check counts this process's other tests (and
    /// the children they reap) as its own work, so it can only judge a window nothing else of
    /// this binary ran in; and it must never run beside tests that generate load.
    pub const TIMING: &str = "timing";
    /// Load on every CPU (burn, memory bandwidth, a whole suite): nothing timed may run beside it.
    pub const LOAD: &str = "load";
}

/// Held for reading by a parallel test while it runs and for writing by a serial one, so a
/// serial test runs with no other test beside it.
static RUNNING: RwLock<()> = RwLock::new(());

/// For the groups whose state is the machine's (tracefs, PM QoS): an exclusive lock on a file in
/// the temp dir, held while the test runs, so another run of this binary on the same machine (a
/// second checkout, another engineer's) waits instead of colliding. The lock goes with the
/// process, however it ends. None for the other groups, or where the file cannot be locked.
fn machine_lock(group: &'static str) -> Option<std::fs::File> {
    if group != group::TRACEFS && group != group::PM_QOS {
        return None;
    }
    let name = format!("osgauge-it-{}.lock", group.replace(' ', "-"));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join(name))
        .ok()?;
    f.lock().ok()?;
    Some(f)
}

/// The command that runs the CI-only group.
const CI_ONLY_COMMAND: &str = "cargo test --test it -- --ci-only";

/// One registered test (see the module documentation).
pub struct Test {
    /// `it::module::name` (`module_path!()` and the function's name).
    full: &'static str,
    run: fn(),
    ignore: Option<&'static str>,
    root: bool,
    path: Option<&'static str>,
    any_executable: &'static [&'static str],
    should_panic: Option<&'static str>,
    serial: Option<&'static str>,
    ci_only: bool,
}

inventory::collect!(Test);

impl Test {
    pub const fn new(full: &'static str, run: fn()) -> Self {
        Test {
            full,
            run,
            ignore: None,
            root: false,
            path: None,
            any_executable: &[],
            should_panic: None,
            serial: None,
            ci_only: false,
        }
    }

    /// Runs alone: no other test of this binary beside it (see [`group`] for why a test must).
    pub const fn serial(mut self, group: &'static str) -> Self {
        self.serial = Some(group);
        self
    }

    /// A slow end-to-end check: ignored by `cargo test`, run by CI (`--ci-only`).
    pub const fn ci_only(mut self) -> Self {
        self.ci_only = true;
        self
    }

    /// `#[ignore = "why"]`.
    pub const fn ignore(mut self, why: &'static str) -> Self {
        self.ignore = Some(why);
        self
    }

    /// `#[cfg_attr(cond, ignore = "why")]`.
    pub const fn ignore_if(self, cond: bool, why: &'static str) -> Self {
        if cond { self.ignore(why) } else { self }
    }

    /// `#[test_with::root()]`: ignored unless running as root.
    pub const fn root(mut self) -> Self {
        self.root = true;
        self
    }

    /// `#[test_with::path(/p)]`: ignored unless the path exists.
    pub const fn path(mut self, p: &'static str) -> Self {
        self.path = Some(p);
        self
    }

    /// `#[test_with::executable(a || b)]`: ignored unless one of them is found.
    pub const fn executable(mut self, any_of: &'static [&'static str]) -> Self {
        // One executable condition per test is all the tests use; a second replaces the first.
        self.any_executable = any_of;
        self
    }

    /// `#[should_panic(expected = "…")]`.
    pub const fn should_panic(mut self, expected: &'static str) -> Self {
        self.should_panic = Some(expected);
        self
    }

    /// The name without the binary's crate name: `module::test`.
    fn name(&self) -> &'static str {
        self.full
            .split_once("::")
            .map_or(self.full, |(_, rest)| rest)
    }

    /// Why this test is ignored on this machine before it runs, if it is (the reasons are
    /// test-with's).
    fn ignored_because(&self, ci_only_run: bool) -> Option<String> {
        if let Some(why) = self.ignore {
            return Some(why.to_string());
        }
        if self.ci_only && !ci_only_run {
            return Some(format!(
                "CI-only: a slow end-to-end check; .ci/run runs it ({CI_ONLY_COMMAND})"
            ));
        }
        if self.root && !is_root() {
            return Some("because this case should run with root".into());
        }
        if let Some(p) = self.path
            && !Path::new(p).exists()
        {
            return Some(format!("because path not found: {p}"));
        }
        if !self.any_executable.is_empty()
            && !self.any_executable.iter().any(|e| executable_found(e))
        {
            return Some(format!(
                "because none of executables can be found: {}",
                self.any_executable.join(" || ")
            ));
        }
        None
    }
}

/// Register `fn name()` as a test; builder calls after the name set its conditions (see the
/// module documentation).
#[macro_export]
macro_rules! register {
    ($name:ident $(. $m:ident ( $($a:expr),* ))*) => {
        ::inventory::submit! {
            $crate::harness::Test::new(concat!(module_path!(), "::", stringify!($name)), $name)
                $(. $m ( $($a),* ))*
        }
    };
}

#[cfg(unix)]
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}

/// A name with a `/` is a path; otherwise it is looked up in PATH (with `.exe` on Windows).
fn executable_found(name: &str) -> bool {
    if name.contains('/') {
        return Path::new(name).is_file();
    }
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        dir.join(name).is_file() || (cfg!(windows) && dir.join(format!("{name}.exe")).is_file())
    })
}

/// Options of libtest that take a value as the next argument (everything else not starting with
/// `-` is a name filter).
const WITH_VALUE: &[&str] = &[
    "--test-threads",
    "--logfile",
    "--skip",
    "--color",
    "--format",
    "-Z",
];

/// The command line split into libtest-mimic's arguments and the name filters; `--ci-only`
/// (this harness's own flag) is taken out and reported in the third value.
fn split_filters(argv: Vec<String>) -> (Vec<String>, Vec<String>, bool) {
    let mut args = Vec::new();
    let mut filters = Vec::new();
    let mut ci_only = false;
    let mut it = argv.into_iter();
    if let Some(program) = it.next() {
        args.push(program);
    }
    while let Some(a) = it.next() {
        if a == "--" {
            filters.extend(it.by_ref());
        } else if a == "--ci-only" {
            ci_only = true;
        } else if WITH_VALUE.contains(&a.as_str()) {
            args.push(a);
            args.extend(it.next());
        } else if a.starts_with('-') {
            args.push(a);
        } else {
            filters.push(a);
        }
    }
    // `cargo test -- --ci-only` puts the flag after `--` too.
    filters.retain(|f| {
        let flag = f == "--ci-only";
        ci_only |= flag;
        !flag
    });
    (args, filters, ci_only)
}

/// Run the test on a thread of its own named after it, as libtest does (so thread-local state,
/// such as a test's sandbox, starts afresh for each test), with its output captured where that
/// is possible (see [`Capture`]): shown only when it fails, below its panic, as libtest does.
fn run_captured(
    test: &'static Test,
    capture: bool,
    keep_panics: bool,
) -> Result<Completion, Failed> {
    // A serial test waits until every running test ends, and holds the others off until it does
    // (a panicking test is caught on its own thread, so the lock is never poisoned by one).
    let (_shared, _alone) = match test.serial {
        None => (
            Some(RUNNING.read().unwrap_or_else(|e| e.into_inner())),
            None,
        ),
        Some(_) => (
            None,
            Some(RUNNING.write().unwrap_or_else(|e| e.into_inner())),
        ),
    };
    let _machine = test.serial.and_then(machine_lock);
    let _timed = Timed(test, std::time::Instant::now());
    let cap = capture.then(Capture::start).flatten();
    let keep = keep_panics && cap.is_none();
    let thread = std::thread::Builder::new()
        .name(test.name().to_string())
        .spawn(move || run_on_test_thread(test, keep));
    let result = match thread {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err("the test's thread panicked outside the test".into())),
        Err(e) => Err(format!("cannot start the test's thread: {e}").into()),
    };
    let Some(cap) = cap else {
        return result;
    };
    let output = cap.finish();
    result.map_err(|failed| {
        let msg = failed.message().unwrap_or_default();
        format!("{msg}\n---- output ----\n{output}").into()
    })
}

/// Each finished test's wall time (name, seconds, serial), for [`slowest`].
static TIMES: std::sync::Mutex<Vec<(&'static str, f64, bool)>> = std::sync::Mutex::new(Vec::new());

/// Records a test's wall time when the test ends, however it ends (a failure included).
struct Timed(&'static Test, std::time::Instant);

impl Drop for Timed {
    fn drop(&mut self) {
        let mut t = TIMES.lock().unwrap_or_else(|e| e.into_inner());
        t.push((
            self.0.name(),
            self.1.elapsed().as_secs_f64(),
            self.0.serial.is_some(),
        ));
    }
}

/// The closing lines on where the time went: the serial tests' total (they run alone, so they
/// add up to the run's floor) and the `n` slowest tests, so the next engineer who wants the
/// suite faster starts from figures. Wall times on this machine at this moment, not assertions.
fn slowest(times: &[(&str, f64, bool)], n: usize) -> String {
    if times.is_empty() {
        return String::new();
    }
    let serial = times.iter().filter(|t| t.2).fold(0.0, |s, t| s + t.1);
    let serial_n = times.iter().filter(|t| t.2).count();
    let mut by_time: Vec<_> = times.to_vec();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = format!(
        "wall time of the tests: {serial_n} serial test(s) (run alone, one after another) took \
         {serial:.1} s; the {} slowest:\n",
        n.min(by_time.len())
    );
    for (name, secs, alone) in by_time.into_iter().take(n) {
        let tag = if alone { " (serial)" } else { "" };
        out.push_str(&format!("  {secs:7.1} s  {name}{tag}\n"));
    }
    out
}

thread_local! {
    /// Set while this thread runs a test whose panic goes into its failure message.
    static KEEP_PANIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The panic (message, place, backtrace if RUST_BACKTRACE asks) of the test on this thread.
    static PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Where output is not captured and not asked for (`--nocapture`): a test thread's panic goes
/// into the failure summary instead of between `test NAME ...` and `FAILED`, which must stay one
/// line (.ci/cross.sh re-runs the failed tests by the names on those lines). A panic on any other
/// thread is printed as usual.
fn keep_panics_of_test_threads() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if KEEP_PANIC.get() {
            let bt = std::backtrace::Backtrace::capture();
            let text = match bt.status() {
                std::backtrace::BacktraceStatus::Captured => format!("{info}\n{bt}"),
                _ => info.to_string(),
            };
            PANIC.with(|p| *p.borrow_mut() = Some(text));
        } else {
            default(info);
        }
    }));
}

/// On the test's own thread: its panic becomes the failure (with the panic's place and, where
/// `keep`, its text kept by the hook instead of printed).
fn run_on_test_thread(test: &'static Test, keep: bool) -> Result<Completion, Failed> {
    KEEP_PANIC.set(keep);
    let result = std::panic::catch_unwind(|| run(test));
    KEEP_PANIC.set(false);
    let kept = PANIC.with(|p| p.borrow_mut().take());
    result.unwrap_or_else(|payload| {
        let msg = panic_message(&*payload);
        Err(match kept {
            Some(text) => format!("test panicked: {msg}\n{text}").into(),
            None => format!("test panicked: {msg}").into(),
        })
    })
}

/// The standard output and error of the process (file descriptors 1 and 2, so a child's inherited
/// output too) redirected to a temporary file while one test runs. Unix only, and only when tests
/// run one at a time; elsewhere a test's output appears as it runs, between `test NAME ...` and
/// its outcome.
#[cfg(unix)]
struct Capture {
    file: std::fs::File,
    saved: [libc::c_int; 2],
}

#[cfg(unix)]
impl Capture {
    fn start() -> Option<Capture> {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let file = tempfile::tempfile().ok()?;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: dup and dup2 on the process's own standard descriptors and an open file; the
        // originals are kept and put back by `finish`.
        unsafe {
            let saved = [libc::dup(1), libc::dup(2)];
            if saved.contains(&-1) {
                return None;
            }
            libc::dup2(file.as_raw_fd(), 1);
            libc::dup2(file.as_raw_fd(), 2);
            Some(Capture { file, saved })
        }
    }

    /// Put the descriptors back and return what was written.
    fn finish(mut self) -> String {
        use std::io::{Read, Seek, Write};
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: the descriptors saved by `start`, each put back once and closed.
        unsafe {
            libc::dup2(self.saved[0], 1);
            libc::dup2(self.saved[1], 2);
            libc::close(self.saved[0]);
            libc::close(self.saved[1]);
        }
        let mut out = Vec::new();
        let _ = self.file.seek(std::io::SeekFrom::Start(0));
        let _ = self.file.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(not(unix))]
struct Capture;

#[cfg(not(unix))]
impl Capture {
    fn start() -> Option<Capture> {
        None
    }

    fn finish(self) -> String {
        String::new()
    }
}

/// Run the test, catching a panic where one is expected; then ignored with the reason when it
/// called `osgauge::testing::not_run` (or skipped a timing assertion) and did not fail. A panic
/// is left to libtest-mimic, which reports it as the failure.
fn run(test: &'static Test) -> Result<Completion, Failed> {
    osgauge::testing::take_not_run();
    match test.should_panic {
        None => (test.run)(),
        Some(expected) => {
            // The expected panic is not printed (libtest captures it); an unexpected one is in
            // the failure message.
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(|_| {}));
            let result = std::panic::catch_unwind(test.run);
            std::panic::set_hook(hook);
            osgauge::testing::take_not_run();
            return match result {
                Ok(()) => Err("test did not panic as expected".into()),
                Err(payload) => {
                    let msg = panic_message(&*payload);
                    if msg.contains(expected) {
                        Ok(Completion::Completed)
                    } else {
                        Err(format!(
                            "panic did not contain expected string\n      panic message: {msg:?}\n expected substring: {expected:?}"
                        )
                        .into())
                    }
                }
            };
        }
    }
    Ok(match osgauge::testing::take_not_run() {
        Some(reason) => Completion::ignored_with(reason),
        None => Completion::Completed,
    })
}

/// Test threads when neither `--test-threads` nor `RUST_TEST_THREADS` says: two per CPU for the
/// default run, whose parallel tests wait on child processes, servers and the disk more than they
/// compute (here, 2 CPUs: the binary took 296 s with 2 threads and 220 s with 4, one after the
/// other on a quiet machine); one per CPU for the CI-only group, whose end-to-end checks are each
/// CPU-bound and time-bounded. Serial tests run alone either way.
fn default_threads(ci_only: bool) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if ci_only { cpus } else { 2 * cpus }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("")
}

pub fn main() -> std::process::ExitCode {
    let (args, filters, ci_only) = split_filters(std::env::args().collect());
    let mut args = Arguments::from_iter(args);
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n: &usize| n > 0)
            .or_else(|| Some(default_threads(ci_only)));
    }
    let run_ignored = args.ignored || args.include_ignored;
    let nocapture = args.nocapture;
    let capture = !nocapture && args.test_threads == Some(1);
    if !nocapture {
        keep_panics_of_test_threads();
    }
    let mut tests: Vec<&'static Test> = inventory::iter::<Test>.into_iter().collect();
    // `--ci-only`: that group alone, run as any test; otherwise it is ignored with the reason.
    if ci_only {
        tests.retain(|t| t.ci_only);
    }
    // The parallel tests first, then the serial ones (each waits for the running tests to end).
    tests.sort_by_key(|t| (t.serial.is_some(), t.name()));
    let mut trials: Vec<Trial> = tests
        .into_iter()
        .map(|t| match t.ignored_because(ci_only) {
            // Shown as `ignored (reason)` and counted as ignored (libtest-mimic shows no reason
            // for a trial flagged ignored, so the flag is set only where --ignored and
            // --include-ignored look at it); run with those as libtest runs an #[ignore]d test.
            Some(why) if !run_ignored => {
                Trial::ignorable_test(t.name(), move || Ok(Completion::ignored_with(why)))
            }
            ignored => {
                Trial::ignorable_test(t.name(), move || run_captured(t, capture, !nocapture))
                    .with_ignored_flag(ignored.is_some())
            }
        })
        .collect();
    // One filter: libtest-mimic's own (it counts what it filtered out); several: any of them.
    if filters.len() == 1 {
        args.filter = filters.into_iter().next();
    } else if !filters.is_empty() {
        trials.retain(|t| {
            filters.iter().any(|f| match args.exact {
                true => t.name() == f,
                false => t.name().contains(f.as_str()),
            })
        });
    }
    let conclusion = libtest_mimic::run(&args, trials);
    let times = TIMES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if !args.list {
        print!("{}", slowest(&times, 10));
    }
    conclusion.exit_code()
}

/// The summary of test times names the serial total and the slowest tests, slowest first.
fn slowest_names_the_serial_total_and_the_slowest_first() {
    let times = [
        ("a", 1.0, false),
        ("b", 5.0, true),
        ("c", 3.0, false),
        ("d", 2.0, true),
    ];
    let s = slowest(&times, 2);
    assert!(s.contains("2 serial test(s)"), "{s}");
    assert!(s.contains("took 7.0 s"), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 3, "{s}");
    assert!(
        lines[1].ends_with("b (serial)") && lines[1].contains("5.0 s"),
        "{s}"
    );
    assert!(
        lines[2].ends_with(" c") && lines[2].contains("3.0 s"),
        "{s}"
    );
    assert_eq!(slowest(&[], 10), "");
}
crate::register!(slowest_names_the_serial_total_and_the_slowest_first);

/// A `#[test]` in this binary's sources would remove its function without a word (this binary is
/// built without libtest's `--test`): there must be none.
fn no_test_attribute_is_left() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    if !dir.is_dir() {
        let why = format!("the sources are not here ({})", dir.display());
        return osgauge::testing::not_run("harness::no_test_attribute_is_left", &why);
    }
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let t = line.trim_start();
                if t.starts_with("#[test]") || t.starts_with("#[test_with::") {
                    offenders.push(format!("{}:{}: {t}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "use `crate::register!(name)` after the function instead (see tests/it/harness.rs):\n{}",
        offenders.join("\n")
    );
}
crate::register!(no_test_attribute_is_left);
