//! Clocks and timers for the suites that schedule their own work (interactivity, latency, frame
//! pacing, the policy study): an absolute-time monotonic clock and sleep, the calling thread's
//! CPU-time clock, and the thread's timer slack. Portable signatures; one implementation per OS
//! below.

use std::io;

pub use imp::{
    CPU_CLOCK_DESCRIPTION, SLEEP_DESCRIPTION, THREAD_CPU_STEP_NS, now_ns, set_timer_slack_ns,
    sleep_until_ns, thread_cpu_time_ns, timer_slack_ns,
};

/// A thread-CPU figure over a window is kept when the thread used at least this many steps of
/// its CPU clock ([`THREAD_CPU_STEP_NS`]): then one step of quantisation is at most 5 % of it.
pub const MIN_THREAD_CPU_STEPS: u64 = 20;

/// Whether `cpu_ns` of thread CPU (summed over threads each read with this clock, `threads` of
/// them) is far enough above the clock's step to be a figure: Err(why) when it is not — a
/// quantised figure is not kept.
pub fn thread_cpu_usable(cpu_ns: u64, threads: u64) -> Result<(), String> {
    let floor = MIN_THREAD_CPU_STEPS * THREAD_CPU_STEP_NS * threads.max(1);
    if cpu_ns == 0 {
        return Err(format!(
            "not measured: the thread CPU clock ({CPU_CLOCK_DESCRIPTION}) did not move"
        ));
    }
    if cpu_ns < floor {
        return Err(format!(
            "not measured: below the thread CPU clock's resolution — the thread(s) used {:.1} ms \
             of CPU, under {MIN_THREAD_CPU_STEPS} steps of {:.3} ms per thread ({CPU_CLOCK_DESCRIPTION})",
            cpu_ns as f64 / 1e6,
            THREAD_CPU_STEP_NS as f64 / 1e6
        ));
    }
    Ok(())
}

/// The calling thread's CPU clock read at a start, for the CPU it uses from there: each
/// [`ThreadCpu::elapsed_ns`] is read on the same thread; a clock that could not be read at either
/// end is Err(why).
pub struct ThreadCpu(io::Result<u64>);

impl ThreadCpu {
    /// Read the calling thread's CPU clock now.
    pub fn start() -> ThreadCpu {
        ThreadCpu(thread_cpu_time_ns())
    }

    /// The calling thread's CPU since [`ThreadCpu::start`], in ns.
    pub fn elapsed_ns(&self) -> Result<u64, String> {
        match (&self.0, thread_cpu_time_ns()) {
            (Ok(a), Ok(b)) => Ok(b.saturating_sub(*a)),
            (Err(e), _) => Err(format!("thread CPU clock: {e}")),
            (_, Err(e)) => Err(format!("thread CPU clock: {e}")),
        }
    }
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
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "linux")]
mod imp {
    use super::*;

    pub const SLEEP_DESCRIPTION: &str = "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)";
    pub const CPU_CLOCK_DESCRIPTION: &str = "clock_gettime(CLOCK_THREAD_CPUTIME_ID)";
    /// The scheduler's runtime accounting, read up to the call: nanoseconds.
    pub const THREAD_CPU_STEP_NS: u64 = 1;

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
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "macos")]
mod imp {
    use super::*;

    pub const SLEEP_DESCRIPTION: &str = "mach_wait_until (absolute mach time)";
    pub const CPU_CLOCK_DESCRIPTION: &str = "clock_gettime(CLOCK_THREAD_CPUTIME_ID)";
    /// thread_info's user + system times are in microseconds.
    pub const THREAD_CPU_STEP_NS: u64 = 1_000;

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
}

// ------------------------------------------------------------------------------------------------
#[cfg(windows)]
mod imp {
    use super::*;
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Performance::{
        QueryPerformanceCounter, QueryPerformanceFrequency,
    };
    use windows_sys::Win32::System::Threading::{
        CREATE_WAITABLE_TIMER_HIGH_RESOLUTION, CreateWaitableTimerExW, GetCurrentThread,
        GetThreadTimes, INFINITE, SetWaitableTimer, TIMER_ALL_ACCESS, WaitForSingleObject,
    };

    pub const SLEEP_DESCRIPTION: &str = "high-resolution waitable timer (CreateWaitableTimerExW), due time from an absolute QPC target";
    pub const CPU_CLOCK_DESCRIPTION: &str =
        "GetThreadTimes (kernel + user, 100 ns units, updated at clock ticks)";
    /// GetThreadTimes accrues per clock interrupt: the default interval, 15.625 ms (64 Hz).
    pub const THREAD_CPU_STEP_NS: u64 = 15_625_000;

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

    /// A thread-CPU figure under 20 steps of the clock per thread is refused with the reason;
    /// at or above it, kept.
    #[test]
    fn thread_cpu_under_twenty_clock_steps_is_not_a_figure() {
        let floor = MIN_THREAD_CPU_STEPS * THREAD_CPU_STEP_NS;
        assert!(thread_cpu_usable(floor, 1).is_ok());
        assert!(thread_cpu_usable(2 * floor, 2).is_ok());
        let e = thread_cpu_usable(0, 1).unwrap_err();
        assert!(e.contains("did not move"), "{e}");
        if THREAD_CPU_STEP_NS > 1 {
            let e = thread_cpu_usable(floor - 1, 1).unwrap_err();
            assert!(e.contains("resolution"), "{e}");
        }
        let e = thread_cpu_usable(2 * floor - 1, 2).unwrap_err();
        assert!(e.contains("below the thread CPU clock's resolution"), "{e}");
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
    fn timer_slack_reads_back_or_says_why() {
        std::thread::spawn(|| match set_timer_slack_ns(1) {
            Ok(()) => assert_eq!(timer_slack_ns().unwrap(), 1),
            Err(e) => {
                assert_ne!(crate::platform::OS_NAME, "Linux", "{e}");
                assert!(e.to_string().starts_with("unsupported on "), "{e}");
            }
        })
        .join()
        .unwrap();
    }
}
