//! Unix (Linux, macOS): children in one process group reaped with `wait4` (rusage), own usage,
//! the per-user process limit.

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
            let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
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
