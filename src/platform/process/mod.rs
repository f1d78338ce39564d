//! The processes osgauge starts by the hundred (the policy study's children): a set of children
//! reaped with their resource usage (Unix `wait4` rusage, Windows `GetProcessTimes`) and killed
//! together (one process group on Unix, a kill-on-close job object on Windows), a process's own
//! usage and context-switch counters, and the checks that many processes fit the per-user process
//! limit and memory.

use std::io;

mod switches;

/// Processes, threads and pipes for the `proc` suite: the portable API (re-exported by the
/// platform module), and the helpers the Unix-like targets share.
pub(super) mod proc_suite;
#[cfg(unix)]
pub(super) mod proc_suite_unix;
pub use switches::{
    OWN_SWITCHES_METHOD, OwnSwitches, command_switches, own_switches, parse_status,
    split_unsupported, under_wine,
};

pub use imp::{ChildSet, kill_group, process_limit, user_process_count};

/// The executable osgauge starts its own children from (load processes, policy-study children):
/// `OSGAUGE_EXE` if set (tests), else this executable.
/// How each thread's CPU of another process is read ([`threads_cpu_ns`]).
pub const THREADS_CPU_METHOD: &str =
    "/proc/PID/task/TID/schedstat (each thread's time on a CPU, ns), sampled every 20 ms";

/// Each thread of process `pid` and its CPU time so far, ns (Linux: schedstat's first field);
/// Unsupported on other OSes (where another process's threads are not read here).
pub fn threads_cpu_ns(pid: u32) -> io::Result<Vec<(u32, u64)>> {
    #[cfg(target_os = "linux")]
    {
        let mut v = Vec::new();
        for e in std::fs::read_dir(format!("/proc/{pid}/task"))?.flatten() {
            let Ok(tid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            // A thread that ended between the listing and the read is skipped.
            let Ok(text) = std::fs::read_to_string(e.path().join("schedstat")) else {
                continue;
            };
            if let Some(ns) = text.split_whitespace().next().and_then(|x| x.parse().ok()) {
                v.push((tid, ns));
            }
        }
        Ok(v)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "another process's threads' CPU is read on Linux only (/proc/PID/task)",
        ))
    }
}

pub fn osgauge_exe() -> io::Result<std::path::PathBuf> {
    match std::env::var_os("OSGAUGE_EXE") {
        Some(p) => Ok(std::path::PathBuf::from(p)),
        None => std::env::current_exe(),
    }
}

/// How a child ended, for messages: "exited with status 1", "was killed by signal 9 (SIGKILL)".
pub fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                1 => " (SIGHUP)",
                2 => " (SIGINT)",
                6 => " (SIGABRT)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            };
            return format!("was killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exited with status {c}"),
        None => format!("ended ({status})"),
    }
}

/// Is `n` more processes within the per-user process limit (soft RLIMIT_NPROC minus those the user
/// already runs, with a margin) and memory (`per_child_bytes` each, at most half of what is
/// available)? Pure: the inputs come from [`process_limit`], [`user_process_count`] and
/// `memory::available_bytes`.
pub fn capacity_decision(
    n: u64,
    nproc_limit: Option<u64>,
    user_procs: Option<u64>,
    available_bytes: Option<u64>,
    per_child_bytes: u64,
) -> Result<(), String> {
    const MARGIN: u64 = 32;
    if let Some(lim) = nproc_limit {
        let used = user_procs.unwrap_or(0);
        if used + n + MARGIN > lim {
            return Err(format!(
                "{n} processes do not fit the per-user process limit (ulimit -u = {lim}, {used} already running, {MARGIN} kept spare): raise it with `ulimit -u` or use fewer --procs"
            ));
        }
    }
    if let Some(avail) = available_bytes {
        let need = n.saturating_mul(per_child_bytes);
        if need > avail / 2 {
            return Err(format!(
                "{n} processes need about {} MiB ({} MiB each) but only {} MiB are available (at most half is used): use fewer --procs",
                need >> 20,
                per_child_bytes >> 20,
                avail >> 20
            ));
        }
    }
    Ok(())
}

/// Resource usage of one reaped child.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildUsage {
    pub pid: u32,
    /// Exit code (None: killed by a signal).
    pub code: Option<i32>,
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Voluntary / involuntary context switches (None where the OS gives no such split).
    pub voluntary: Option<u64>,
    pub involuntary: Option<u64>,
    pub max_rss_bytes: Option<u64>,
}

/// How the per-process figures are obtained, for `Info::method`.
pub fn usage_method() -> &'static str {
    imp::USAGE_METHOD
}

/// The calling process's own usage so far (a child reports it at its release, so that start-up
/// before the release is left out of its figures).
pub fn own_usage() -> io::Result<ChildUsage> {
    imp::own_usage()
}

// Each OS's child sets, usage and limits in its own file (`imp` is this OS's); Linux and macOS
// share the Unix process-group and wait4 code.
#[cfg(unix)]
mod unix;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

#[cfg(test)]
mod tests {
    #[test]
    fn threads_cpu_reads_this_process_or_says_unsupported() {
        match threads_cpu_ns(std::process::id()) {
            Ok(v) => {
                let me = v.iter().map(|(_, ns)| *ns).sum::<u64>();
                assert!(!v.is_empty() && me > 0, "{v:?}");
            }
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}"),
        }
    }

    use super::*;

    #[test]
    fn capacity_decision_checks_nproc_and_memory() {
        assert!(capacity_decision(1000, Some(4096), Some(100), Some(16 << 30), 4 << 20).is_ok());
        let e = capacity_decision(1000, Some(1024), Some(100), None, 4 << 20).unwrap_err();
        assert!(e.contains("ulimit -u"), "{e}");
        let e = capacity_decision(1000, None, None, Some(1 << 30), 4 << 20).unwrap_err();
        assert!(e.contains("MiB"), "{e}");
    }
}
