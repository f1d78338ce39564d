//! System-wide and whole-process CPU time counters, for the CPU cost of I/O (the network suite's
//! service demand, the file-system suite's CPU per GB). Both are cumulative: take the difference of
//! two readings. The arithmetic (idle baseline, per-byte demand) is pure and lives in
//! `crate::cpucost`.

use std::io;

// Each OS's counters in its own file (`os` is this OS's); Linux and macOS share the Unix rusage
// and CLK_TCK helpers, macOS and Windows the answers where steal is not measurable.
#[cfg(not(target_os = "linux"))]
mod not_linux;
#[cfg(unix)]
mod unix;

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
pub const SYSTEM_CPU_SOURCE: &str = os::SYSTEM_CPU_SOURCE;

/// What [`process_cpu_ns`] reads on this OS (for the record).
pub const PROCESS_CPU_SOURCE: &str = os::PROCESS_CPU_SOURCE;

/// Every CPU's cumulative busy and total time.
pub fn system_cpu() -> io::Result<SystemCpu> {
    os::system_cpu()
}

/// How coarsely [`system_cpu`] counts, per CPU, in seconds: one counter step. A difference of two
/// readings can be off by up to one step per CPU.
pub fn system_cpu_resolution_s() -> f64 {
    os::system_cpu_resolution_s()
}

/// This process's cumulative user + system CPU time (all its threads), ns.
pub fn process_cpu_ns() -> io::Result<u64> {
    os::process_cpu_ns()
}

/// How finely a process's CPU time is split between user and system time, in seconds, and how
/// that was found (for the record). Linux with tick-based accounting charges each scheduler tick
/// to user or system time and scales the precise total by that split, so a user or system time
/// below one tick is noise; macOS accounts at every switch; Windows charges per clock interrupt.
pub fn user_sys_split_resolution() -> (f64, String) {
    os::user_sys_split_resolution()
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

/// This process's CPU time plus that of its children it has reaped (getrusage SELF + CHILDREN),
/// ns: what a test's own work, including the loads it started and waited for, used. Unix only.
pub fn own_and_reaped_children_cpu_ns() -> io::Result<u64> {
    os::own_and_reaped_children_cpu_ns()
}

/// Cumulative (busy, total) ns from `cpus` × the time since boot less the idle (+ iowait) and
/// steal time: idle is what a tickless kernel measures exactly, the busy fields it samples at
/// ticks. Differences of two readings are what counts (a CPU brought online late only shifts
/// both).
pub fn busy_from_idle(cpus: u64, boot_ns: u64, idle_ns: u64, steal_ns: u64) -> (u64, u64) {
    let total = (cpus.max(1) * boot_ns).saturating_sub(steal_ns);
    (total.saturating_sub(idle_ns), total)
}

// ------------------------------------------------------------------------------------------------
/// Host steal of each of `cpus` since boot, ns, and its resolution (one USER_HZ tick of
/// `/proc/stat`), ns; Err(why) where steal is not applicable (not a virtual machine) or not
/// measurable (other OS, unreadable).
pub fn cpu_steal_ns(cpus: &[usize]) -> Result<(Vec<u64>, u64), String> {
    if crate::platform::cpuid::cpuid().hypervisor_flag == Some(false) {
        return Err(
            "not applicable: not a virtual machine (the CPUID hypervisor flag is clear), no host \
             can steal time"
                .into(),
        );
    }
    os::cpu_steal_ns(cpus)
}

/// Ok where the scheduler's task clock leaves host steal out, so a task's wall time on a CPU
/// less the run time the scheduler counts for it is steal (Linux: CONFIG_PARAVIRT_TIME_ACCOUNTING,
/// from /proc/config.gz or /boot/config-<release>); else why not. Read once per process (the
/// kernel cannot change under it), after the timed windows that ask.
pub fn task_clock_excludes_steal() -> Result<(), String> {
    static R: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    R.get_or_init(os::read_task_clock_excludes_steal).clone()
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
    os::busy_sample()
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
