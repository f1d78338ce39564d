//! Real-time facilities for the interactivity suite: an absolute-time monotonic clock and sleep, the
//! calling thread's CPU-time clock, scheduling policy / priority / nice / EEVDF slice (set and read
//! back), timer slack, thread affinity, uncached file reads, free disk space, and a cheap sample of
//! machine busyness. Portable signatures; one implementation per OS below.

use std::fs::File;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Scheduling policies osgauge can request for a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
        }
    }
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
}

/// What to apply to the calling thread.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SchedRequest {
    pub policy: Option<Policy>,
    /// Real-time priority (FIFO/RR).
    pub priority: Option<i32>,
    /// Nice value (OTHER/BATCH/IDLE).
    pub nice: Option<i32>,
    /// EEVDF custom slice, ns (Linux ≥ 6.12, fair policies).
    pub slice_ns: Option<u64>,
    /// SCHED_DEADLINE runtime / deadline / period, ns.
    pub dl_runtime_ns: Option<u64>,
    pub dl_deadline_ns: Option<u64>,
    pub dl_period_ns: Option<u64>,
}

/// What the calling thread really has, read back from the OS.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SchedReadback {
    pub policy: String,
    pub priority: Option<i32>,
    pub nice: Option<i32>,
    /// Linux: `sched_runtime` of sched_getattr (the EEVDF slice for fair policies, the runtime for
    /// SCHED_DEADLINE).
    pub runtime_ns: Option<u64>,
    pub deadline_ns: Option<u64>,
    pub period_ns: Option<u64>,
}

/// A cheap sample of how busy the machine is (no sampling window: deltas of two samples give the
/// figures over an interval).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BusySample {
    pub loadavg1: Option<f64>,
    /// Cumulative CPU "some" pressure stall time, µs (Linux PSI).
    pub cpu_some_total_us: Option<u64>,
    /// Cumulative steal and total CPU ticks of all CPUs (Linux /proc/stat).
    pub steal_ticks: Option<u64>,
    pub total_ticks: Option<u64>,
}

pub use imp::*;

/// Open a file for reads that really come from storage, through the one cache-bypass mechanism
/// ([`crate::platform::fs::open_uncached`]); returns the file and how the cache is bypassed.
/// Where the method starts with `posix_fadvise`, call [`drop_file_cache`] before every pass.
/// Under Wine the method says that the flag is not honoured (the load still runs).
pub fn open_uncached_read(path: &Path) -> io::Result<(File, &'static str)> {
    let u = super::fs::open_uncached_lenient(path, false)?;
    Ok((u.file, u.method))
}

/// Drop the file's cached pages (it must have been written back: call sync_all first).
pub fn drop_file_cache(f: &File) -> io::Result<()> {
    super::fs::drop_cache(f)
}

// ------------------------------------------------------------------------------------------------
#[cfg(unix)]
mod unix_common {
    use std::io;

    pub fn thread_cpu_time_ns() -> io::Result<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid timespec pointer.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    pub fn statvfs_free(path: &std::path::Path) -> io::Result<u64> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
        // SAFETY: zeroed statvfs is valid; c is NUL-terminated.
        unsafe {
            let mut s: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c.as_ptr(), &mut s) != 0 {
                return Err(io::Error::last_os_error());
            }
            #[allow(clippy::unnecessary_cast)]
            Ok(s.f_bavail as u64 * s.f_frsize as u64)
        }
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "linux")]
mod imp {
    use super::*;

    pub const SLEEP_DESCRIPTION: &str = "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)";
    pub const CPU_CLOCK_DESCRIPTION: &str = "clock_gettime(CLOCK_THREAD_CPUTIME_ID)";
    const SCHED_DEADLINE: u32 = 6;

    pub use super::unix_common::thread_cpu_time_ns;

    pub fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid timespec pointer; CLOCK_MONOTONIC always exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    pub fn sleep_until_ns(t: u64) -> io::Result<()> {
        let ts = libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        };
        loop {
            // SAFETY: valid timespec; remaining may be null with TIMER_ABSTIME.
            let rc = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            match rc {
                0 => return Ok(()),
                libc::EINTR => continue,
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
    }

    pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
        // SAFETY: PR_SET_TIMERSLACK takes an unsigned long.
        if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn timer_slack_ns() -> io::Result<u64> {
        // SAFETY: PR_GET_TIMERSLACK returns the value.
        let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as u64)
    }

    #[repr(C)]
    #[derive(Default, Debug)]
    struct SchedAttr {
        size: u32,
        sched_policy: u32,
        sched_flags: u64,
        sched_nice: i32,
        sched_priority: u32,
        sched_runtime: u64,
        sched_deadline: u64,
        sched_period: u64,
        sched_util_min: u32,
        sched_util_max: u32,
    }

    fn tid() -> libc::pid_t {
        // SAFETY: gettid cannot fail.
        unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
    }

    fn getattr() -> io::Result<SchedAttr> {
        let mut a = SchedAttr::default();
        // SAFETY: a is a valid sched_attr of the size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut a as *mut SchedAttr,
                std::mem::size_of::<SchedAttr>() as u32,
                0u32,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(a)
    }

    /// Apply a request to the calling thread with sched_setattr (policy, priority, nice, slice or
    /// deadline parameters in one call).
    pub fn apply_sched(req: &SchedRequest) -> io::Result<()> {
        let cur = getattr()?;
        let policy = req.policy.unwrap_or(Policy::Other);
        let mut a = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_policy: match policy {
                Policy::Other => libc::SCHED_OTHER as u32,
                Policy::Batch => libc::SCHED_BATCH as u32,
                Policy::Idle => libc::SCHED_IDLE as u32,
                Policy::Fifo => libc::SCHED_FIFO as u32,
                Policy::Rr => libc::SCHED_RR as u32,
                Policy::Deadline => SCHED_DEADLINE,
            },
            sched_nice: req.nice.unwrap_or(cur.sched_nice),
            ..Default::default()
        };
        match policy {
            Policy::Fifo | Policy::Rr => a.sched_priority = req.priority.unwrap_or(1).max(1) as u32,
            Policy::Deadline => {
                let (Some(r), Some(p)) = (req.dl_runtime_ns, req.dl_period_ns) else {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "SCHED_DEADLINE needs a runtime and a period",
                    ));
                };
                a.sched_runtime = r;
                a.sched_deadline = req.dl_deadline_ns.unwrap_or(p);
                a.sched_period = p;
            }
            _ => {
                if let Some(s) = req.slice_ns {
                    a.sched_runtime = s;
                }
            }
        }
        // SAFETY: a is a valid, fully initialised sched_attr; pid 0 = calling thread.
        let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0u32) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // Older kernels accept but ignore the slice for fair policies: check it held.
        if let (Some(s), false) = (req.slice_ns, policy.is_realtime()) {
            let back = getattr()?;
            if back.sched_runtime != s {
                return Err(super::super::unsupported(&format!(
                    "the kernel did not keep the custom slice ({s} ns requested, {} ns read back); \
                     EEVDF custom slices need Linux ≥ 6.12",
                    back.sched_runtime
                )));
            }
        }
        Ok(())
    }

    pub fn read_sched() -> io::Result<SchedReadback> {
        let a = getattr()?;
        let policy = match a.sched_policy as i32 {
            libc::SCHED_OTHER => "other".to_string(),
            libc::SCHED_BATCH => "batch".to_string(),
            libc::SCHED_IDLE => "idle".to_string(),
            libc::SCHED_FIFO => "fifo".to_string(),
            libc::SCHED_RR => "rr".to_string(),
            6 => "deadline".to_string(),
            7 => "ext".to_string(),
            p => format!("policy {p}"),
        };
        // Cross-check with the classic calls (what tools like chrt show).
        // SAFETY: tid is ours; param is a valid out pointer.
        let (classic, prio) = unsafe {
            let mut p: libc::sched_param = std::mem::zeroed();
            let pol = libc::sched_getscheduler(tid());
            libc::sched_getparam(tid(), &mut p);
            (pol, p.sched_priority)
        };
        debug_assert!(classic < 0 || classic as u32 & 0xff == a.sched_policy & 0xff);
        let rt = matches!(a.sched_policy as i32, libc::SCHED_FIFO | libc::SCHED_RR);
        let dl = a.sched_policy == SCHED_DEADLINE;
        Ok(SchedReadback {
            policy,
            priority: rt.then_some(prio),
            nice: (!rt && !dl).then_some(a.sched_nice),
            runtime_ns: Some(a.sched_runtime),
            deadline_ns: dl.then_some(a.sched_deadline),
            period_ns: dl.then_some(a.sched_period),
        })
    }

    pub fn set_thread_affinity(cpus: &[usize]) -> io::Result<()> {
        // SAFETY: zeroed cpu_set_t is empty; indices are checked.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                if c >= libc::CPU_SETSIZE as usize {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("CPU {c} out of range"),
                    ));
                }
                libc::CPU_SET(c, &mut set);
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    pub fn free_space_bytes(dir: &Path) -> io::Result<u64> {
        super::unix_common::statvfs_free(dir)
    }

    pub fn busy_sample() -> BusySample {
        let loadavg1 = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        let cpu_some_total_us = std::fs::read_to_string("/proc/pressure/cpu")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("some"))?;
                line.split_whitespace()
                    .find_map(|f| f.strip_prefix("total="))?
                    .parse()
                    .ok()
            });
        let (steal_ticks, total_ticks) = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("cpu "))?;
                let v: Vec<u64> = line
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                // user nice system idle iowait irq softirq steal guest guest_nice; guest time is
                // already counted in user/nice.
                let total: u64 = v.iter().take(8).sum();
                Some((v.get(7).copied(), Some(total)))
            })
            .unwrap_or((None, None));
        BusySample {
            loadavg1,
            cpu_some_total_us,
            steal_ticks,
            total_ticks,
        }
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "macos")]
mod imp {
    use super::*;

    pub const SLEEP_DESCRIPTION: &str = "mach_wait_until (absolute mach time)";
    pub const CPU_CLOCK_DESCRIPTION: &str = "clock_gettime(CLOCK_THREAD_CPUTIME_ID)";

    pub use super::unix_common::thread_cpu_time_ns;

    #[repr(C)]
    struct MachTimebaseInfo {
        numer: u32,
        denom: u32,
    }

    // Declared here (libc marks its own declarations deprecated in favour of the mach2 crate).
    unsafe extern "C" {
        fn mach_wait_until(deadline: u64) -> i32;
        fn mach_absolute_time() -> u64;
        fn mach_timebase_info(info: *mut MachTimebaseInfo) -> i32;
    }

    fn timebase() -> (u64, u64) {
        static TB: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
        *TB.get_or_init(|| {
            let mut info = MachTimebaseInfo { numer: 0, denom: 0 };
            // SAFETY: valid out pointer.
            unsafe { mach_timebase_info(&mut info) };
            (info.numer.max(1) as u64, info.denom.max(1) as u64)
        })
    }

    pub fn now_ns() -> u64 {
        let (n, d) = timebase();
        // SAFETY: no arguments.
        let t = unsafe { mach_absolute_time() };
        (t as u128 * n as u128 / d as u128) as u64
    }

    pub fn sleep_until_ns(t: u64) -> io::Result<()> {
        let (n, d) = timebase();
        let ticks = (t as u128 * d as u128 / n as u128) as u64;
        // SAFETY: plain value argument.
        let rc = unsafe { mach_wait_until(ticks) };
        if rc != 0 {
            return Err(io::Error::other(format!("mach_wait_until returned {rc}")));
        }
        Ok(())
    }

    pub fn set_timer_slack_ns(_ns: u64) -> io::Result<()> {
        Err(crate::platform::unsupported(
            "no per-thread timer slack control (macOS coalesces timers itself)",
        ))
    }
    pub fn timer_slack_ns() -> io::Result<u64> {
        Err(crate::platform::unsupported("no per-thread timer slack"))
    }

    /// Mapped by the shared policy layer (QoS classes, the Mach time-constraint policy).
    pub fn apply_sched(req: &SchedRequest) -> io::Result<()> {
        crate::platform::policy::apply_thread_for_interactivity(req)
    }

    pub fn read_sched() -> io::Result<SchedReadback> {
        // SAFETY: out pointers are valid.
        let (pol, prio) = unsafe {
            let mut pol = 0;
            let mut p: libc::sched_param = std::mem::zeroed();
            libc::pthread_getschedparam(libc::pthread_self(), &mut pol, &mut p);
            (pol, p.sched_priority)
        };
        Ok(SchedReadback {
            policy: match pol {
                libc::SCHED_OTHER => "other".into(),
                libc::SCHED_FIFO => "fifo".into(),
                libc::SCHED_RR => "rr".into(),
                p => format!("policy {p}"),
            },
            priority: Some(prio),
            ..Default::default()
        })
    }

    pub fn set_thread_affinity(_cpus: &[usize]) -> io::Result<()> {
        Err(crate::platform::unsupported(
            "threads cannot be bound to CPUs (only affinity tags exist)",
        ))
    }

    pub fn free_space_bytes(dir: &Path) -> io::Result<u64> {
        super::unix_common::statvfs_free(dir)
    }

    pub fn busy_sample() -> BusySample {
        let mut l = [0f64; 3];
        // SAFETY: buffer of 3 doubles.
        let ok = unsafe { libc::getloadavg(l.as_mut_ptr(), 3) } == 3;
        BusySample {
            loadavg1: ok.then_some(l[0]),
            ..Default::default()
        }
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(windows)]
mod imp {
    use super::*;
    use std::os::windows::ffi::OsStrExt;
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, WAIT_OBJECT_0};
    use windows_sys::Win32::Storage::FileSystem::GetDiskFreeSpaceExW;
    use windows_sys::Win32::System::Performance::{
        QueryPerformanceCounter, QueryPerformanceFrequency,
    };
    use windows_sys::Win32::System::Threading::{
        CREATE_WAITABLE_TIMER_HIGH_RESOLUTION, CreateWaitableTimerExW, GetCurrentThread,
        GetThreadPriority, GetThreadTimes, INFINITE, SetThreadAffinityMask, SetWaitableTimer,
        TIMER_ALL_ACCESS, WaitForSingleObject,
    };

    pub const SLEEP_DESCRIPTION: &str = "high-resolution waitable timer (CreateWaitableTimerExW), due time from an absolute QPC target";
    pub const CPU_CLOCK_DESCRIPTION: &str =
        "GetThreadTimes (kernel + user, 100 ns units, updated at clock ticks)";

    fn freq() -> u64 {
        static F: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *F.get_or_init(|| {
            let mut f = 0i64;
            // SAFETY: valid out pointer.
            unsafe { QueryPerformanceFrequency(&mut f) };
            f.max(1) as u64
        })
    }

    pub fn now_ns() -> u64 {
        let mut c = 0i64;
        // SAFETY: valid out pointer.
        unsafe { QueryPerformanceCounter(&mut c) };
        (c as u128 * 1_000_000_000 / freq() as u128) as u64
    }

    pub fn sleep_until_ns(t: u64) -> io::Result<()> {
        /// One high-resolution waitable timer per thread, closed when the thread ends.
        struct Timer(isize);
        impl Drop for Timer {
            fn drop(&mut self) {
                if self.0 != 0 {
                    // SAFETY: a handle this thread created and nothing else uses.
                    unsafe { CloseHandle(self.0 as windows_sys::Win32::Foundation::HANDLE) };
                }
            }
        }
        thread_local! {
            static TIMER: Timer = Timer(
                // SAFETY: null name and attributes are allowed.
                unsafe {
                    CreateWaitableTimerExW(
                        std::ptr::null(),
                        std::ptr::null(),
                        CREATE_WAITABLE_TIMER_HIGH_RESOLUTION,
                        TIMER_ALL_ACCESS,
                    ) as isize
                },
            );
        }
        let now = now_ns();
        if t <= now {
            return Ok(());
        }
        // Negative due time = relative, in 100 ns units.
        let due = -(((t - now) / 100).max(1) as i64);
        TIMER.with(|timer| {
            let h = timer.0;
            if h == 0 {
                return Err(io::Error::last_os_error());
            }
            let h = h as windows_sys::Win32::Foundation::HANDLE;
            // SAFETY: h is a waitable timer handle owned by this thread.
            unsafe {
                if SetWaitableTimer(h, &due, 0, None, std::ptr::null(), 0) == 0 {
                    return Err(io::Error::last_os_error());
                }
                if WaitForSingleObject(h, INFINITE) != WAIT_OBJECT_0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        })?;
        // The timer may fire a little early; finish the last microseconds by spinning.
        while now_ns() < t {
            std::hint::spin_loop();
        }
        Ok(())
    }

    pub fn thread_cpu_time_ns() -> io::Result<u64> {
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut c, mut e, mut k, mut u) = (z, z, z, z);
        // SAFETY: valid out pointers; pseudo handle of the current thread.
        if unsafe { GetThreadTimes(GetCurrentThread(), &mut c, &mut e, &mut k, &mut u) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let f = |t: FILETIME| ((t.dwHighDateTime as u64) << 32 | t.dwLowDateTime as u64) * 100;
        Ok(f(k) + f(u))
    }

    pub fn set_timer_slack_ns(_ns: u64) -> io::Result<()> {
        Err(crate::platform::unsupported(
            "no per-thread timer slack (high-resolution waitable timers are used instead)",
        ))
    }
    pub fn timer_slack_ns() -> io::Result<u64> {
        Err(crate::platform::unsupported("no per-thread timer slack"))
    }

    /// Mapped by the shared policy layer (thread priorities, read back).
    pub fn apply_sched(req: &SchedRequest) -> io::Result<()> {
        crate::platform::policy::apply_thread_for_interactivity(req)
    }

    pub fn read_sched() -> io::Result<SchedReadback> {
        // SAFETY: pseudo handle of the current thread.
        let p = unsafe { GetThreadPriority(GetCurrentThread()) };
        Ok(SchedReadback {
            policy: "windows-thread-priority".into(),
            priority: Some(p),
            ..Default::default()
        })
    }

    pub fn set_thread_affinity(cpus: &[usize]) -> io::Result<()> {
        let mut mask = 0usize;
        for &c in cpus {
            if c >= usize::BITS as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} out of range (processor groups not implemented yet)"),
                ));
            }
            mask |= 1 << c;
        }
        // SAFETY: pseudo handle of the current thread.
        if unsafe { SetThreadAffinityMask(GetCurrentThread(), mask) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn free_space_bytes(dir: &Path) -> io::Result<u64> {
        let w: Vec<u16> = dir.as_os_str().encode_wide().chain(Some(0)).collect();
        let mut avail = 0u64;
        // SAFETY: NUL-terminated wide string; out pointers valid or null.
        if unsafe {
            GetDiskFreeSpaceExW(
                w.as_ptr(),
                &mut avail,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        } == 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(avail)
    }

    pub fn busy_sample() -> BusySample {
        BusySample::default()
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_sleep_reaches_its_target() {
        let t = now_ns() + 2_000_000;
        sleep_until_ns(t).unwrap();
        assert!(now_ns() >= t);
        // A target in the past returns at once.
        sleep_until_ns(now_ns() - 1).unwrap();
    }

    #[test]
    fn thread_cpu_clock_advances_with_work_not_sleep() {
        let c0 = thread_cpu_time_ns().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let c1 = thread_cpu_time_ns().unwrap();
        let t0 = now_ns();
        while now_ns() - t0 < 30_000_000 {
            std::hint::black_box(0);
        }
        let c2 = thread_cpu_time_ns().unwrap();
        // Sleeping costs (almost) no CPU; spinning for 30 ms costs some CPU (the machine may be
        // busy, so only a loose bound).
        assert!(c1 - c0 < 10_000_000, "sleep used {} ns", c1 - c0);
        assert!(c2 > c1);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn linux_sched_slack_and_affinity_read_back() {
        std::thread::spawn(|| {
            set_timer_slack_ns(1).unwrap();
            assert_eq!(timer_slack_ns().unwrap(), 1);
            apply_sched(&SchedRequest {
                policy: Some(Policy::Batch),
                nice: Some(5),
                ..Default::default()
            })
            .unwrap();
            let r = read_sched().unwrap();
            assert_eq!(r.policy, "batch");
            assert_eq!(r.nice, Some(5));
            let cpus = crate::platform::allowed_cpus().unwrap();
            set_thread_affinity(&cpus[..1]).unwrap();
            assert_eq!(
                crate::platform::current_thread_affinity().unwrap(),
                cpus[..1]
            );
        })
        .join()
        .unwrap();
        let b = busy_sample();
        assert!(b.total_ticks.unwrap() > 0);
    }
}
