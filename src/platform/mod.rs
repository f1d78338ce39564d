//! Every OS-specific call lives under this module (hyperfine's `timer/` split). Benchmarks call the
//! portable functions re-exported here; where an OS lacks a feature they return an error whose text
//! says "unsupported on <OS>: <reason>", which the runner records as `unsupported`.

use std::io;
use std::sync::atomic::AtomicBool;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

#[cfg(unix)]
mod unix;

/// Bounded waits: every blocking wait on something outside osgauge ends at a deadline or the
/// first Ctrl-C/SIGTERM (exports to FIFOs, the network client, pipes to children).
pub mod wait;

/// Memory facts and calls for the mem suite (one file per OS inside).
pub mod memory;
/// Sockets (socket2) and TIME_WAIT counting for the network suite and `osgauge serve`.
pub mod net;

/// Disk, loopback and children-CPU counters for `model check` (own file, cfg-gated inside).
pub mod counters;
/// Memory-backed file systems and per-process device read counters (I/O loads, file systems).
pub mod storage;

/// The one cache-bypass open, page residency and file-system facts (fs suite, read load).
pub mod fs;

/// System-wide and whole-process CPU time counters (CPU cost of network and disk I/O).
pub mod cputime;

/// CPUID (x86_64): vendor, brand, model, hypervisor.
pub mod cpuid;

/// The last-level cache size (working sets larger than it: `model validate`).
pub mod cache;

/// Absolute-time clock and sleeps, the thread CPU-time clock, timer slack.
pub mod clock;

/// Interrupt and involuntary-switch counts (the noise benchmark's cross-check).
pub mod cpu_events;
pub mod pmqos;
/// The crypto provider under TLS (PostgreSQL store).
pub mod tls;
/// The kernel's tracing file system (Linux): events read for the latency suite's attribution.
pub mod tracefs;

/// One scheduling vocabulary (policy, request, read-back) mapped per OS; affinity; RT throttling.
pub mod sched;

/// Children reaped with their usage and killed together, own usage and context switches, limits.
pub mod process;

/// Machine and environment facts (the system record), one back end per OS.
pub mod sysinfo;

// osgauge builds for Linux, macOS and Windows only: say so instead of failing on a missing `os`.
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
compile_error!("osgauge supports Linux, macOS and Windows; this OS has no platform back end");

// Processes, threads and pipes (the `proc` suite): the portable API, in `process/proc_suite.rs`.
#[cfg(test)]
pub use process::proc_suite::process_gone;
pub use process::proc_suite::{
    ECHO_SUBCOMMAND, EchoChild, ExecProgram, PollPipe, echo_child_available, fork_available,
    fork_exec_wait, fork_exit_wait, posix_spawn_available, posix_spawn_wait, serve_echo,
    tiny_program,
};

/// Name the calling thread (`name` cut to 15 bytes, the Linux limit), so that a trace, `top -H`
/// or a spike's attribution tells osgauge's own threads and load processes apart ("load
/// compile", "measuring") instead of showing each as "osgauge". Best effort: Windows and a
/// refusal leave the name as it was.
pub fn set_thread_name(name: &str) {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let Ok(c) = std::ffi::CString::new(&name[..end]) else {
        return;
    };
    // SAFETY: `c` is a NUL-terminated string that outlives the call; both calls copy it.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
    #[cfg(target_os = "macos")]
    unsafe {
        libc::pthread_setname_np(c.as_ptr());
    }
    #[cfg(windows)]
    let _ = c;
}

/// Human name of this OS, as used in "unsupported on <OS>" messages.
pub const OS_NAME: &str = os::OS_NAME;

/// An "unsupported on <OS>: <reason>" error.
pub fn unsupported(reason: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("unsupported on {OS_NAME}: {reason}"),
    )
}

/// The compatibility layer this program runs under, where timings do not describe the OS it
/// presents (Windows programs under Wine: "Wine <version>"); None on a native OS.
pub fn compatibility_layer() -> Option<String> {
    #[cfg(windows)]
    {
        os::wine_version().map(|v| format!("Wine {v}"))
    }
    #[cfg(not(windows))]
    {
        None
    }
}

/// What clock `std::time::Instant` reads on this OS (every benchmark uses it).
pub fn clock_description() -> &'static str {
    os::CLOCK_DESCRIPTION
}

/// Resolution the OS reports for the monotonic clock, in ns, where it reports one.
pub fn clock_resolution_ns() -> Option<f64> {
    os::clock_resolution_ns()
}

/// A real kernel entry that the C library cannot cache or short-cut.
pub struct NullSyscall {
    /// What is called, for the record (e.g. "syscall(SYS_getppid)").
    pub description: &'static str,
    /// Performs the call once; returns its result so callers can keep it alive with black_box.
    pub call: fn() -> usize,
}

pub fn null_syscall() -> io::Result<NullSyscall> {
    os::null_syscall()
}

/// One cheap I/O system call: a 1-byte read from the OS's zero device.
pub struct CheapIo {
    pub description: &'static str,
    inner: os::CheapIo,
}

impl CheapIo {
    pub fn open() -> io::Result<CheapIo> {
        let (inner, description) = os::CheapIo::open()?;
        Ok(CheapIo { description, inner })
    }
    /// Performs one 1-byte read; errors if the OS returned anything but 1 byte.
    #[inline(always)]
    pub fn read_one(&mut self) -> io::Result<()> {
        self.inner.read_one()
    }
}

/// Message printed on the first Ctrl-C.
pub const INTERRUPT_MESSAGE: &str = "\nosgauge: interrupted — finishing the current step and keeping what was \
     measured (Ctrl-C again to quit now)\n";

/// A command line for the platform's shell: `sh -c` on Unix, `cmd /C` on Windows (the switch
/// commands of `osgauge ab`, the user's own).
pub fn shell_command(line: &str) -> std::process::Command {
    #[cfg(windows)]
    {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", line]);
        c
    }
    #[cfg(not(windows))]
    {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", line]);
        c
    }
}

/// On Ctrl-C (and on Unix SIGTERM and SIGHUP) set `flag`; on the second one exit at once with the
/// first signal's code (see [`interrupt_exit_code`]). On Unix this is a plain `sigaction` handler:
/// no helper thread lives in the measuring process (an idle extra thread makes fork ~30 % slower,
/// for one).
pub fn install_interrupt_handler(flag: &'static AtomicBool) -> io::Result<()> {
    os::install_interrupt_handler(flag)?;
    let _ = INSTALLED_FLAG.set(flag);
    Ok(())
}

static INSTALLED_FLAG: std::sync::OnceLock<&'static AtomicBool> = std::sync::OnceLock::new();

/// The flag [`install_interrupt_handler`] set up, if it was (bounded waits end when it is set).
pub fn installed_interrupt_flag() -> Option<&'static AtomicBool> {
    INSTALLED_FLAG.get().copied()
}

/// The exit code for the first stop signal received: 128 + its number on Unix (130 SIGINT, 143
/// SIGTERM, 129 SIGHUP), 130 for Ctrl-C on Windows; None before any.
pub fn interrupt_exit_code() -> Option<i32> {
    os::interrupt_exit_code()
}

/// For helper children (interactivity loads), which a terminal's Ctrl-C or hangup also reaches:
/// ignore those (the parent decides when the helper stops and cleans up); a termination request
/// (Unix SIGTERM) sets `stop`.
pub fn helper_child_signals(stop: &'static AtomicBool) -> io::Result<()> {
    os::helper_child_signals(stop)
}

/// Make this helper process get a termination request when its parent `parent` dies (Linux:
/// PR_SET_PDEATHSIG SIGTERM); errors if the parent is already gone; unsupported elsewhere.
pub fn terminate_with_parent(parent: u32) -> io::Result<()> {
    os::terminate_with_parent(parent)
}

/// True while a process with this id exists.
pub fn process_alive(pid: u32) -> bool {
    os::process_alive(pid)
}

/// True when our child process `pid` is stopped (Unix job control: SIGSTOP/SIGTSTP); always
/// false on Windows.
pub fn child_stopped(pid: u32) -> bool {
    os::child_stopped(pid)
}

/// Permissions for a file osgauge writes for the user (exports): what a plain `create` would
/// give under the user's umask. None where the OS has no such notion (the default applies).
pub fn user_file_permissions() -> Option<std::fs::Permissions> {
    #[cfg(unix)]
    {
        unix::user_file_permissions()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Whether `m` is a FIFO (named pipe); false where the OS has none.
pub fn is_fifo(m: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        false
    }
}

static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Run before `main` (an initialiser that `src/main.rs` registers): notes whether standard output
/// was closed when the process started (`osgauge … >&-`). Rust's runtime then opens /dev/null in
/// its place, so writes would "succeed" and vanish; [`stdout_closed_at_start`] tells.
pub extern "C" fn probe_stdio_at_start() {
    #[cfg(unix)]
    {
        // SAFETY: F_GETFD on a descriptor number only reads its flags.
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED_AT_START.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Whether standard output was closed when the process started (see [`probe_stdio_at_start`];
/// false where that probe is not registered: Windows, test binaries).
pub fn stdout_closed_at_start() -> bool {
    STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed)
}

/// CPUs this process may run on (affinity mask, read back from the OS), ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    os::allowed_cpus()
}

/// Pin the calling thread to one CPU, and read the affinity back to prove it held.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    os::pin_current_thread(cpu)?;
    let now = os::current_thread_affinity()?;
    if now != [cpu] {
        return Err(io::Error::other(format!(
            "pinning to CPU {cpu} did not hold: affinity reads back as {now:?}"
        )));
    }
    Ok(())
}

/// The calling thread's affinity, read back from the OS.
pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    os::current_thread_affinity()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A named thread shows under its name where the OS keeps one (Linux: its comm, what a
    /// trace and a spike's attribution print), cut to the 15 bytes Linux keeps.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_shows_under_the_name_it_was_given() {
        let comm = |name: &'static str| {
            std::thread::spawn(move || {
                set_thread_name(name);
                std::fs::read_to_string("/proc/thread-self/comm").unwrap()
            })
            .join()
            .unwrap()
        };
        assert_eq!(comm("load compile"), "load compile\n");
        assert_eq!(comm("load compile and more"), "load compile an\n");
        assert_eq!(comm("measuring"), "measuring\n");
    }

    #[test]
    fn unsupported_names_the_os() {
        let e = unsupported("no such feature");
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(
            e.to_string()
                .starts_with(&format!("unsupported on {OS_NAME}: "))
        );
    }

    /// Every facility works, or (only where the OS lacks it) says "unsupported on <OS>: …".
    #[test]
    fn facilities_work_or_say_why() {
        // The affinity mask: read back where the OS has one (macOS: unsupported, never made up).
        let cpus = match allowed_cpus() {
            Ok(c) => c,
            Err(e) => {
                assert_eq!(OS_NAME, "macOS", "{e}");
                assert!(e.to_string().starts_with("unsupported on macOS: "), "{e}");
                assert!(current_thread_affinity().is_err());
                vec![0]
            }
        };
        assert!(!cpus.is_empty());
        let ns = null_syscall().unwrap();
        // Linux/macOS: getppid (our parent exists); Windows: our thread id. Both are nonzero.
        assert!((ns.call)() > 0, "{}", ns.description);
        let mut io = CheapIo::open().unwrap();
        for _ in 0..3 {
            io.read_one().unwrap();
        }
        assert!(clock_resolution_ns().unwrap() > 0.0);
        assert!(tiny_program().unwrap().is_file());
        // Pinning in a scratch thread so the test thread keeps its affinity.
        let first = *cpus.last().unwrap();
        std::thread::spawn(move || match pin_current_thread(first) {
            Ok(()) => assert_eq!(current_thread_affinity().unwrap(), vec![first]),
            Err(e) => {
                assert_eq!(OS_NAME, "macOS", "{e}");
                assert!(e.to_string().starts_with("unsupported on macOS: "), "{e}");
            }
        })
        .join()
        .unwrap();
        // Where the process echo peer exists, it echoes and ends cleanly.
        match EchoChild::start() {
            Ok(mut child) => {
                child.round_trips(10, Duration::from_secs(20)).unwrap();
                let pid = child.pid();
                child.finish(Duration::from_secs(5)).unwrap();
                assert!(process_gone(pid));
            }
            Err(e) => {
                assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
                assert_ne!(OS_NAME, "Linux", "{e}");
            }
        }
    }

    /// The machine and environment records are read quickly, round-trip through JSON, render and
    /// check.
    #[test]
    fn smoke_machine_and_environment() {
        use crate::system::{Environment, Machine, check, render_text};
        use std::time::Instant;
        let t = Instant::now();
        let m = sysinfo::machine();
        let machine_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let e = sysinfo::environment();
        let env_ms = t.elapsed().as_secs_f64() * 1e3;
        assert!(m.cpu.logical_cpus.unwrap_or(0) >= 1, "{m:?}");
        assert_eq!(m.os, std::env::consts::OS);
        let mj = serde_json::to_string_pretty(&m).unwrap();
        let ej = serde_json::to_string_pretty(&e).unwrap();
        let m2: Machine = serde_json::from_str(&mj).unwrap();
        let e2: Environment = serde_json::from_str(&ej).unwrap();
        assert_eq!(m, m2);
        assert_eq!(e, e2);
        let text = render_text(&m, &e);
        assert!(text.starts_with("Machine\n"));
        assert!(text.contains("\nEnvironment\n"));
        let _ = check(&m, &e);
        // Generous bounds (tests run in parallel on busy CI machines).
        assert!(machine_ms < 1000.0, "machine() took {machine_ms} ms");
        assert!(env_ms < 2000.0, "environment() took {env_ms} ms");
    }

    /// `cargo test --lib platform::tests::show_this_machine -- --ignored --nocapture`
    #[test]
    #[ignore = "prints this machine's records"]
    fn show_this_machine() {
        use crate::system::{check, render_findings, render_text};
        use std::time::Instant;
        let t = Instant::now();
        let m = sysinfo::machine();
        let tm = t.elapsed();
        let t = Instant::now();
        let e = sysinfo::environment();
        let te = t.elapsed();
        print!("{}", render_text(&m, &e));
        println!();
        print!("{}", render_findings(&check(&m, &e)));
        println!("\nmachine() {tm:?}, environment() {te:?}");
        println!("{}", serde_json::to_string_pretty(&(&m, &e)).unwrap());
    }
}
