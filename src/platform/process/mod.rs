//! The processes osgauge starts by the hundred (the policy study's children): a set of children
//! reaped with their resource usage (Unix `wait4` rusage, Windows `GetProcessTimes`) and killed
//! together (one process group on Unix, a kill-on-close job object on Windows), a process's own
//! usage and context-switch counters, and the checks that many processes fit the per-user process
//! limit and memory.

use std::io;

mod switches;

/// Process, pipe and poll helpers of the `proc` suite shared by the Unix-like targets (re-exported
/// through the platform module's portable functions).
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

// ------------------------------------------------------------------------------------------------
#[cfg(unix)]
mod unix_children {
    use super::ChildUsage;
    use std::io;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// rusage carries voluntary/involuntary switch counts (not on macOS).
    const SPLIT: bool = !cfg!(target_os = "macos");

    /// Children in one process group: killed together, reaped with `wait4` (rusage).
    pub struct ChildSet {
        pgid: Option<i32>,
        running: usize,
    }

    impl Default for ChildSet {
        fn default() -> Self {
            Self::new()
        }
    }

    impl ChildSet {
        pub fn new() -> ChildSet {
            ChildSet {
                pgid: None,
                running: 0,
            }
        }
        /// The process group (kill it with [`super::kill_group`]); None before the first child.
        pub fn group(&self) -> Option<i32> {
            self.pgid
        }
        pub fn running(&self) -> usize {
            self.running
        }
        pub fn spawn(&mut self, mut cmd: Command) -> io::Result<u32> {
            cmd.process_group(self.pgid.unwrap_or(0));
            let child = cmd.spawn()?;
            let pid = child.id();
            // The child is reaped with wait4 below, not through `child` (dropping a Child neither
            // kills nor waits).
            drop(child);
            if self.pgid.is_none() {
                self.pgid = Some(pid as i32);
            }
            self.running += 1;
            Ok(pid)
        }
        /// Reap every child that has ended (no waiting).
        pub fn reap(&mut self) -> io::Result<Vec<ChildUsage>> {
            let mut out = Vec::new();
            let Some(g) = self.pgid else { return Ok(out) };
            while self.running > 0 {
                let mut status = 0;
                // SAFETY: zeroed rusage is valid; out pointers are valid.
                let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
                // SAFETY: `status` and `ru` are locals, valid output space for wait4.
                let pid = unsafe { libc::wait4(-g, &mut status, libc::WNOHANG, &mut ru) };
                if pid == 0 {
                    break;
                }
                if pid < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    if e.raw_os_error() == Some(libc::ECHILD) {
                        self.running = 0;
                        break;
                    }
                    return Err(e);
                }
                self.running -= 1;
                let tv =
                    |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
                out.push(ChildUsage {
                    pid: pid as u32,
                    code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
                    user_ns: tv(ru.ru_utime),
                    sys_ns: tv(ru.ru_stime),
                    // macOS fills no switch counts in rusage: no split there (never a 0).
                    voluntary: SPLIT.then_some(ru.ru_nvcsw as u64),
                    involuntary: SPLIT.then_some(ru.ru_nivcsw as u64),
                    // Linux: KiB; macOS: bytes.
                    max_rss_bytes: Some(if cfg!(target_os = "macos") {
                        ru.ru_maxrss as u64
                    } else {
                        ru.ru_maxrss as u64 * 1024
                    }),
                });
            }
            Ok(out)
        }
        /// Kill the whole group (SIGKILL) and reap everything.
        pub fn kill_and_reap(&mut self) {
            if let Some(g) = self.pgid {
                super::kill_group(g);
                while self.running > 0 {
                    let mut status = 0;
                    // SAFETY: valid out pointer; null rusage allowed.
                    let pid = unsafe { libc::wait4(-g, &mut status, 0, std::ptr::null_mut()) };
                    if pid < 0 {
                        if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                            continue;
                        }
                        break;
                    }
                    self.running -= 1;
                }
                self.running = 0;
            }
        }
    }

    impl Drop for ChildSet {
        fn drop(&mut self) {
            if self.running > 0 {
                self.kill_and_reap();
            }
        }
    }

    pub fn own_usage() -> io::Result<ChildUsage> {
        // SAFETY: zeroed rusage is valid; valid out pointer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a local, valid output space for getrusage.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Ok(ChildUsage {
            pid: std::process::id(),
            code: None,
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            voluntary: SPLIT.then_some(ru.ru_nvcsw as u64),
            involuntary: SPLIT.then_some(ru.ru_nivcsw as u64),
            max_rss_bytes: None,
        })
    }

    pub fn kill_group(pgid: i32) {
        if pgid > 0 {
            // SAFETY: plain signal to a process group we created.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }

    pub fn process_limit() -> Option<u64> {
        // SAFETY: valid out pointer.
        let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: `r` is a local, valid output space for getrlimit.
        if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) } != 0 {
            return None;
        }
        (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "linux")]
mod imp {
    pub use super::unix_children::{ChildSet, kill_group, own_usage, process_limit};

    pub const USAGE_METHOD: &str = "wait4 rusage of each child (user, system time, voluntary and involuntary context switches of all its threads)";

    pub fn user_process_count() -> Option<u64> {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let mut n = 0;
        for e in std::fs::read_dir("/proc").ok()?.flatten() {
            if !e
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
            {
                continue;
            }
            use std::os::unix::fs::MetadataExt;
            if e.metadata().map(|m| m.uid() == uid).unwrap_or(false) {
                n += 1;
            }
        }
        Some(n)
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "macos")]
mod imp {
    pub use super::unix_children::{ChildSet, kill_group, own_usage, process_limit};

    pub const USAGE_METHOD: &str = "wait4 rusage of each child (user, system time; its switch counts are 0 on macOS, so not used: the total comes from the child's own proc_pidinfo)";

    pub fn user_process_count() -> Option<u64> {
        None
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(windows)]
mod imp {
    use super::*;
    use std::os::windows::io::AsRawHandle;
    use std::process::{Child, Command};
    use windows_sys::Win32::Foundation::{FILETIME, HANDLE};
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessTimes};

    pub const USAGE_METHOD: &str = "GetProcessTimes of each child (user, kernel time); the total context switches from the child's own reading, no voluntary/involuntary split";

    pub fn user_process_count() -> Option<u64> {
        None
    }
    pub fn process_limit() -> Option<u64> {
        None
    }
    pub fn kill_group(_pgid: i32) {}

    fn times(h: HANDLE) -> io::Result<(u64, u64)> {
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut a, mut b, mut k, mut u) = (z, z, z, z);
        // SAFETY: h is an open process handle; out pointers are valid.
        if unsafe { GetProcessTimes(h, &mut a, &mut b, &mut k, &mut u) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let f = |t: FILETIME| ((t.dwHighDateTime as u64) << 32 | t.dwLowDateTime as u64) * 100;
        Ok((f(u), f(k)))
    }

    pub fn own_usage() -> io::Result<ChildUsage> {
        // SAFETY: pseudo handle of the current process.
        let (user_ns, sys_ns) = times(unsafe { GetCurrentProcess() })?;
        Ok(ChildUsage {
            pid: std::process::id(),
            user_ns,
            sys_ns,
            ..Default::default()
        })
    }

    /// A job object that kills its processes when its last handle closes (this process
    /// ending in any way, killed included): the Windows counterpart of PR_SET_PDEATHSIG.
    struct Job(HANDLE);

    impl Job {
        fn kill_on_close() -> io::Result<Job> {
            use windows_sys::Win32::System::JobObjects::{
                CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
                JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
                SetInformationJobObject,
            };
            // SAFETY: no name, default (non-inheritable) security.
            let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
            if h.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = Job(h);
            // SAFETY: zeroed is a valid "no limits" structure; size is its size.
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let ok = unsafe {
                SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                    std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                )
            };
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: our own handle, closed once.
            unsafe { windows_sys::Win32::Foundation::CloseHandle(self.0) };
        }
    }

    // SAFETY: a job handle may be used from any thread.
    unsafe impl Send for Job {}

    /// Children kept as handles, all in one kill-on-close job object (a killed parent takes
    /// them along); killed one by one (TerminateProcess through `Child::kill`).
    #[derive(Default)]
    pub struct ChildSet {
        children: Vec<Child>,
        job: Option<Job>,
    }

    impl ChildSet {
        pub fn new() -> ChildSet {
            ChildSet::default()
        }
        /// Close the job handle without killing anything first: what the system does when this
        /// process ends (the job then kills the children). For tests.
        #[doc(hidden)]
        pub fn close_job(&mut self) {
            self.job = None;
        }
        pub fn group(&self) -> Option<i32> {
            None
        }
        pub fn running(&self) -> usize {
            self.children.len()
        }
        pub fn spawn(&mut self, mut cmd: Command) -> io::Result<u32> {
            use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
            if self.job.is_none() {
                self.job = Some(Job::kill_on_close().map_err(|e| {
                    io::Error::other(format!("creating a kill-on-close job object: {e}"))
                })?);
            }
            let mut c = cmd.spawn()?;
            let pid = c.id();
            let job = self.job.as_ref().map_or(std::ptr::null_mut(), |j| j.0);
            // SAFETY: both handles are open (c owns the process handle).
            if unsafe { AssignProcessToJobObject(job, c.as_raw_handle() as HANDLE) } == 0 {
                let e = io::Error::last_os_error();
                let _ = c.kill();
                let _ = c.wait();
                return Err(io::Error::other(format!(
                    "putting child {pid} in the job object: {e}"
                )));
            }
            self.children.push(c);
            Ok(pid)
        }
        pub fn reap(&mut self) -> io::Result<Vec<ChildUsage>> {
            let mut out = Vec::new();
            let mut i = 0;
            while i < self.children.len() {
                match self.children[i].try_wait()? {
                    Some(status) => {
                        let c = self.children.swap_remove(i);
                        // The handle is still open (c owns it).
                        let (user_ns, sys_ns) = times(c.as_raw_handle() as HANDLE)?;
                        out.push(ChildUsage {
                            pid: c.id(),
                            code: status.code(),
                            user_ns,
                            sys_ns,
                            ..Default::default()
                        });
                    }
                    None => i += 1,
                }
            }
            Ok(out)
        }
        pub fn kill_and_reap(&mut self) {
            for mut c in self.children.drain(..) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    impl Drop for ChildSet {
        fn drop(&mut self) {
            self.kill_and_reap();
        }
    }
}

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
