//! System-wide and whole-process CPU time counters, for the CPU cost of I/O (the network suite's
//! service demand, the file-system suite's CPU per GB). Both are cumulative: take the difference of
//! two readings. The arithmetic (idle baseline, per-byte demand) is pure and lives in
//! `crate::cpucost`.

use std::io;

/// Cumulative CPU time of all CPUs together since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SystemCpu {
    /// Time the CPUs spent doing anything but idling (user, nice, system, irq, softirq; not
    /// iowait, which is idle time), in ns summed over every CPU.
    pub busy_ns: u64,
    /// All time (busy + idle + iowait), in ns summed over every CPU. On Linux steal time is left
    /// out of both: it is time the hypervisor gave to someone else.
    pub total_ns: u64,
    /// The part of `busy_ns` spent serving interrupts and softirqs (Linux irq + softirq: work
    /// such as the network stack's receive side that runs outside any process's own CPU time),
    /// ns over every CPU; None where the OS does not split it out.
    pub irq_ns: Option<u64>,
    /// Time the hypervisor gave to someone else while this machine's CPUs wanted to run (Linux
    /// steal), ns over every CPU: in no busy or idle figure here, but a process's own CPU time may
    /// include it. None where the OS does not report it.
    pub steal_ns: Option<u64>,
}

/// What [`system_cpu`] reads on this OS (for the record).
pub const SYSTEM_CPU_SOURCE: &str = imp::SYSTEM_CPU_SOURCE;

/// What [`process_cpu_ns`] reads on this OS (for the record).
pub const PROCESS_CPU_SOURCE: &str = imp::PROCESS_CPU_SOURCE;

/// Every CPU's cumulative busy and total time.
pub fn system_cpu() -> io::Result<SystemCpu> {
    imp::system_cpu()
}

/// How coarsely [`system_cpu`] counts, per CPU, in seconds: one counter step. A difference of two
/// readings can be off by up to one step per CPU.
pub fn system_cpu_resolution_s() -> f64 {
    imp::system_cpu_resolution_s()
}

/// This process's cumulative user + system CPU time (all its threads), ns.
pub fn process_cpu_ns() -> io::Result<u64> {
    imp::process_cpu_ns()
}

/// How finely a process's CPU time is split between user and system time, in seconds, and how
/// that was found (for the record). Linux with tick-based accounting charges each scheduler tick
/// to user or system time and scales the precise total by that split, so a user or system time
/// below one tick is noise; macOS accounts at every switch; Windows charges per clock interrupt.
pub fn user_sys_split_resolution() -> (f64, String) {
    imp_split::resolution()
}

/// The kernel tick rate (Hz) nearest to a measured jiffies rate, when it is within 15 % of one
/// of the rates Linux is built with.
pub fn snap_hz(measured: f64) -> Option<u32> {
    let off = |hz: u32| (measured / hz as f64 - 1.0).abs();
    [100u32, 250, 300, 1000]
        .into_iter()
        .filter(|&hz| off(hz) < 0.15)
        .min_by(|&a, &b| off(a).total_cmp(&off(b)))
}

/// The `jiffies:` counter of /proc/timer_list.
pub fn parse_timer_list_jiffies(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("jiffies:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(target_os = "linux")]
mod imp_split {
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    fn jiffies() -> Option<u64> {
        super::parse_timer_list_jiffies(&std::fs::read_to_string("/proc/timer_list").ok()?)
    }

    /// The tick, measured once: jiffies over 100 ms (/proc/timer_list, root only); else USER_HZ,
    /// the coarsest tick Linux is built with (10 ms), which overstates a finer tick.
    pub fn resolution() -> (f64, String) {
        static R: OnceLock<(f64, String)> = OnceLock::new();
        R.get_or_init(|| {
            let t0 = Instant::now();
            let measured = (|| {
                let a = jiffies()?;
                std::thread::sleep(Duration::from_millis(100));
                let b = jiffies()?;
                super::snap_hz(b.saturating_sub(a) as f64 / t0.elapsed().as_secs_f64())
            })();
            match measured {
                Some(hz) => (
                    1.0 / hz as f64,
                    format!("one scheduler tick ({hz} Hz, jiffies in /proc/timer_list)"),
                ),
                None => (
                    super::clk_tck_step_s(),
                    "one USER_HZ tick (the kernel's own tick not readable: /proc/timer_list \
                     needs root)"
                        .into(),
                ),
            }
        })
        .clone()
    }
}

#[cfg(target_os = "macos")]
mod imp_split {
    pub fn resolution() -> (f64, String) {
        (
            1e-6,
            "1 µs (rusage user/system times are accounted at every switch)".into(),
        )
    }
}

#[cfg(windows)]
mod imp_split {
    pub fn resolution() -> (f64, String) {
        (
            0.015_625,
            "one clock interrupt (15.625 ms: process times are charged per interrupt)".into(),
        )
    }
}

/// One CLK_TCK tick in seconds (the unit of /proc/stat and host_statistics).
#[cfg(unix)]
fn clk_tck_step_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    1.0 / hz as f64
}

#[cfg(unix)]
fn rusage_self_ns() -> io::Result<u64> {
    rusage_ns(libc::RUSAGE_SELF)
}

#[cfg(unix)]
fn rusage_ns(who: libc::c_int) -> io::Result<u64> {
    // SAFETY: zeroed rusage is valid output space.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a local, valid output space for getrusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// This process's CPU time plus that of its children it has reaped (getrusage SELF + CHILDREN),
/// ns: what a test's own work, including the loads it started and waited for, used. Unix only.
pub fn own_and_reaped_children_cpu_ns() -> io::Result<u64> {
    #[cfg(unix)]
    {
        Ok(rusage_ns(libc::RUSAGE_SELF)? + rusage_ns(libc::RUSAGE_CHILDREN)?)
    }
    #[cfg(not(unix))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no reaped-children CPU time on this OS",
        ))
    }
}

/// Cumulative (busy, total) ns from `cpus` × the time since boot less the idle (+ iowait) and
/// steal time: idle is what a tickless kernel measures exactly, the busy fields it samples at
/// ticks. Differences of two readings are what counts (a CPU brought online late only shifts
/// both).
pub fn busy_from_idle(cpus: u64, boot_ns: u64, idle_ns: u64, steal_ns: u64) -> (u64, u64) {
    let total = (cpus.max(1) * boot_ns).saturating_sub(steal_ns);
    (total.saturating_sub(idle_ns), total)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::SystemCpu;
    use std::io;

    pub const SYSTEM_CPU_SOURCE: &str = "/proc/stat aggregate cpu line: busy = online CPUs × \
        CLOCK_BOOTTIME − idle − iowait − steal (the kernel measures idle time exactly on a \
        tickless kernel; its user/system/irq figures are sampled at ticks, and a paced stream \
        that wakes in step with the tick is over- or under-counted there), USER_HZ ticks; \
        irq+softirq and steal beside it";
    pub const PROCESS_CPU_SOURCE: &str = "getrusage(RUSAGE_SELF) user + system";

    pub fn system_cpu() -> io::Result<SystemCpu> {
        let text = std::fs::read_to_string("/proc/stat")?;
        let st = crate::system::parse::parse_proc_stat(&text)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "/proc/stat: no cpu line"))?;
        let c = st.cpu;
        let (irq, steal) = (c.irq + c.softirq, c.steal);
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out pointer.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let boot_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let ns = 1_000_000_000 / hz;
        let (busy_ns, total_ns) =
            super::busy_from_idle(st.cpus, boot_ns, (c.idle + c.iowait) * ns, steal * ns);
        Ok(SystemCpu {
            busy_ns,
            total_ns,
            irq_ns: Some(irq * ns),
            steal_ns: Some(steal * ns),
        })
    }

    pub fn process_cpu_ns() -> io::Result<u64> {
        super::rusage_self_ns()
    }

    pub fn system_cpu_resolution_s() -> f64 {
        super::clk_tck_step_s()
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use super::SystemCpu;
    use std::io;

    pub const SYSTEM_CPU_SOURCE: &str = "host_statistics(HOST_CPU_LOAD_INFO) user+system+nice \
        busy, idle; CLK_TCK ticks";
    pub const PROCESS_CPU_SOURCE: &str = "getrusage(RUSAGE_SELF) user + system";

    const HOST_CPU_LOAD_INFO: i32 = 3;
    const CPU_STATE_USER: usize = 0;
    const CPU_STATE_SYSTEM: usize = 1;
    const CPU_STATE_IDLE: usize = 2;
    const CPU_STATE_NICE: usize = 3;

    // Declared here (libc marks its mach declarations deprecated in favour of the mach2 crate).
    unsafe extern "C" {
        fn mach_host_self() -> u32;
        fn host_statistics(host: u32, flavor: i32, info: *mut i32, count: *mut u32) -> i32;
    }

    pub fn system_cpu() -> io::Result<SystemCpu> {
        let mut ticks = [0u32; 4];
        let mut count = 4u32;
        // SAFETY: 4 naturals of output space, count says so.
        let kr = unsafe {
            host_statistics(
                mach_host_self(),
                HOST_CPU_LOAD_INFO,
                ticks.as_mut_ptr().cast(),
                &mut count,
            )
        };
        if kr != 0 {
            return Err(io::Error::other(format!(
                "host_statistics(HOST_CPU_LOAD_INFO) failed: kern_return {kr}"
            )));
        }
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let ns = 1_000_000_000 / hz;
        let busy = ticks[CPU_STATE_USER] as u64
            + ticks[CPU_STATE_SYSTEM] as u64
            + ticks[CPU_STATE_NICE] as u64;
        let idle = ticks[CPU_STATE_IDLE] as u64;
        Ok(SystemCpu {
            busy_ns: busy * ns,
            total_ns: (busy + idle) * ns,
            irq_ns: None,
            steal_ns: None,
        })
    }

    pub fn process_cpu_ns() -> io::Result<u64> {
        super::rusage_self_ns()
    }

    pub fn system_cpu_resolution_s() -> f64 {
        super::clk_tck_step_s()
    }
}

#[cfg(windows)]
mod imp {
    use super::SystemCpu;
    use std::io;
    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Threading::{
        GetCurrentProcess, GetProcessTimes, GetSystemTimes,
    };

    pub const SYSTEM_CPU_SOURCE: &str =
        "GetSystemTimes (kernel + user busy, idle; kernel time includes idle and is net of it)";
    pub const PROCESS_CPU_SOURCE: &str = "GetProcessTimes kernel + user";

    fn ft(t: FILETIME) -> u64 {
        ((t.dwHighDateTime as u64) << 32 | t.dwLowDateTime as u64) * 100
    }

    pub fn system_cpu() -> io::Result<SystemCpu> {
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut idle, mut kernel, mut user) = (z, z, z);
        // SAFETY: valid out pointers.
        if unsafe { GetSystemTimes(&mut idle, &mut kernel, &mut user) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let (idle, kernel, user) = (ft(idle), ft(kernel), ft(user));
        let total = kernel + user;
        Ok(SystemCpu {
            busy_ns: total.saturating_sub(idle),
            total_ns: total,
            irq_ns: None,
            steal_ns: None,
        })
    }

    pub fn process_cpu_ns() -> io::Result<u64> {
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut c, mut e, mut k, mut u) = (z, z, z, z);
        // SAFETY: pseudo handle of this process, valid out pointers.
        if unsafe { GetProcessTimes(GetCurrentProcess(), &mut c, &mut e, &mut k, &mut u) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ft(k) + ft(u))
    }

    /// GetSystemTimes counts in 100 ns units but accrues busy time per clock interrupt: the
    /// default interval, 15.625 ms (64 Hz), is its step.
    pub fn system_cpu_resolution_s() -> f64 {
        0.015_625
    }
}

// ------------------------------------------------------------------------------------------------
/// Host steal of each of `cpus` since boot, ns, and its resolution (one USER_HZ tick of
/// `/proc/stat`), ns; Err(why) where steal is not applicable (not a virtual machine) or not
/// measurable (other OS, unreadable).
pub fn cpu_steal_ns(cpus: &[usize]) -> Result<(Vec<u64>, u64), String> {
    if super::cpuid::cpuid().hypervisor_flag == Some(false) {
        return Err(
            "not applicable: not a virtual machine (the CPUID hypervisor flag is clear), no host \
             can steal time"
                .into(),
        );
    }
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/stat")
            .map_err(|e| format!("not measurable: /proc/stat: {e}"))?;
        let m = crate::system::parse::per_cpu_steal_ticks(&text);
        let tick_ns = (clk_tck_step_s() * 1e9).round() as u64;
        let v = cpus
            .iter()
            .map(|c| {
                m.get(c)
                    .map(|t| t * tick_ns)
                    .ok_or_else(|| format!("not measurable: /proc/stat has no cpu{c} line"))
            })
            .collect::<Result<Vec<u64>, String>>()?;
        Ok((v, tick_ns))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        Err(format!(
            "not measurable on {}: the OS reports no per-CPU steal",
            super::OS_NAME
        ))
    }
}

/// Ok where the scheduler's task clock leaves host steal out, so a task's wall time on a CPU
/// less the run time the scheduler counts for it is steal (Linux: CONFIG_PARAVIRT_TIME_ACCOUNTING,
/// from /proc/config.gz or /boot/config-<release>); else why not. Read once per process (the
/// kernel cannot change under it), after the timed windows that ask.
pub fn task_clock_excludes_steal() -> Result<(), String> {
    static R: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    R.get_or_init(read_task_clock_excludes_steal).clone()
}

fn read_task_clock_excludes_steal() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        use std::io::Read;
        const OPT: &str = "CONFIG_PARAVIRT_TIME_ACCOUNTING";
        let gz = std::fs::read("/proc/config.gz").ok().and_then(|b| {
            let mut s = String::new();
            flate2::read::GzDecoder::new(&b[..])
                .read_to_string(&mut s)
                .ok()
                .map(|_| s)
        });
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let boot = format!("/boot/config-{}", release.trim());
        let Some(config) = gz.or_else(|| std::fs::read_to_string(&boot).ok()) else {
            return Err(format!(
                "the kernel config is not readable (no /proc/config.gz, no {boot}): whether the \
                 task clock leaves steal out is unknown"
            ));
        };
        match crate::system::parse::kernel_config_value(&config, OPT) {
            Some("y") => Ok(()),
            _ => Err(format!(
                "this kernel has no {OPT}: its task clock counts host steal as the task's run time"
            )),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(format!(
            "unsupported on {}: the split reads Linux scheduler events",
            super::OS_NAME
        ))
    }
}

// ------------------------------------------------------------------------------------------------
/// A cheap sample of how busy the machine is (no sampling window: deltas of two samples give the
/// figures over an interval).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct BusySample {
    pub loadavg1: Option<f64>,
    /// Cumulative CPU "some" pressure stall time, µs (Linux PSI).
    pub cpu_some_total_us: Option<u64>,
    /// Cumulative steal and total CPU ticks of all CPUs (Linux /proc/stat).
    pub steal_ticks: Option<u64>,
    pub total_ticks: Option<u64>,
}

/// Load average, CPU pressure and steal, where the OS has them (Linux: /proc/loadavg,
/// /proc/pressure/cpu, /proc/stat; macOS: getloadavg; Windows: none).
pub fn busy_sample() -> BusySample {
    #[cfg(target_os = "linux")]
    {
        use crate::system::parse;
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let loadavg1 = read("/proc/loadavg")
            .and_then(|s| parse::parse_loadavg(&s))
            .map(|l| l.one);
        let cpu_some_total_us =
            read("/proc/pressure/cpu").and_then(|s| parse::psi_some_total_us(&s));
        let cpu = read("/proc/stat")
            .and_then(|s| parse::parse_proc_stat(&s))
            .map(|p| p.cpu);
        // Guest time is already counted in user/nice: total() leaves it out.
        let (steal_ticks, total_ticks) = (cpu.map(|c| c.steal), cpu.map(|c| c.total()));
        BusySample {
            loadavg1,
            cpu_some_total_us,
            steal_ticks,
            total_ticks,
        }
    }
    #[cfg(target_os = "macos")]
    {
        let mut l = [0f64; 3];
        // SAFETY: buffer of 3 doubles.
        let ok = unsafe { libc::getloadavg(l.as_mut_ptr(), 3) } == 3;
        BusySample {
            loadavg1: ok.then_some(l[0]),
            ..Default::default()
        }
    }
    #[cfg(windows)]
    {
        BusySample::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_read_per_cpu_or_said_not_applicable_or_not_measurable() {
        let cpus = crate::platform::allowed_cpus().unwrap();
        match cpu_steal_ns(&cpus) {
            Ok((v, res)) => {
                assert_eq!(v.len(), cpus.len());
                assert!(
                    res > 0 && v.iter().all(|n| n % res == 0),
                    "{v:?} in {res} ns steps"
                );
                let (again, _) = cpu_steal_ns(&cpus).unwrap();
                assert!(again.iter().zip(&v).all(|(b, a)| b >= a), "cumulative");
            }
            Err(why) => assert!(
                why.starts_with("not applicable: ") || why.starts_with("not measurable"),
                "{why}"
            ),
        }
        assert!(
            cpu_steal_ns(&[usize::MAX]).is_err(),
            "no such CPU: no figure"
        );
        if let Err(why) = task_clock_excludes_steal() {
            assert!(!why.is_empty());
        }
    }

    #[test]
    fn a_measured_jiffies_rate_snaps_to_a_kernel_tick_rate() {
        assert_eq!(snap_hz(248.0), Some(250));
        assert_eq!(snap_hz(290.0), Some(300));
        assert_eq!(snap_hz(280.0), Some(300), "the nearest of 250 and 300");
        assert_eq!(snap_hz(97.0), Some(100));
        assert_eq!(snap_hz(1040.0), Some(1000));
        assert_eq!(snap_hz(500.0), None);
        assert_eq!(snap_hz(0.0), None);
        let t = "Tick Device: mode:     1\njiffies: 4295107733\n  .idle_jiffies   : 1\n";
        assert_eq!(parse_timer_list_jiffies(t), Some(4295107733));
        assert_eq!(parse_timer_list_jiffies("  .idle_jiffies : 1\n"), None);
        let (s, why) = user_sys_split_resolution();
        assert!(s > 0.0 && s <= 0.016, "{s} {why}");
        assert!(!why.is_empty());
    }

    #[test]
    fn busy_is_cpus_times_boot_time_less_idle_and_steal() {
        // 2 CPUs 10 s since boot, 12 s idle, 1 s stolen: 7 s busy of 19.
        assert_eq!(
            busy_from_idle(2, 10_000_000_000, 12_000_000_000, 1_000_000_000),
            (7_000_000_000, 19_000_000_000)
        );
    }

    #[test]
    fn counters_are_cumulative_and_busy_within_total() {
        let a = system_cpu().unwrap();
        let p0 = process_cpu_ns().unwrap();
        // Spin until this process's own counter advances (a coarse tick, or a busy machine that
        // gives this thread little CPU, may take a while), bounded: a counter that never moves fails.
        let t0 = std::time::Instant::now();
        let mut p1 = p0;
        while p1 <= p0 && t0.elapsed() < std::time::Duration::from_secs(10) {
            let spin = std::time::Instant::now();
            while spin.elapsed() < std::time::Duration::from_millis(20) {
                std::hint::black_box(0u64);
            }
            p1 = process_cpu_ns().unwrap();
        }
        let b = system_cpu().unwrap();
        assert!(a.busy_ns <= a.total_ns && b.busy_ns <= b.total_ns);
        assert!(b.total_ns >= a.total_ns && b.busy_ns >= a.busy_ns);
        assert!(
            p1 > p0,
            "process CPU did not advance in 10 s of spinning: {p0} -> {p1}"
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn busy_sample_reads_the_cpu_ticks() {
        let b = busy_sample();
        assert!(b.total_ticks.unwrap() > 0);
    }
}
