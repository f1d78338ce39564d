//! Linux: /proc/stat with CLOCK_BOOTTIME, rusage, the scheduler tick, per-CPU steal, the
//! kernel config, load and pressure.

use super::{BusySample, SystemCpu};
use std::io;

pub use super::unix::own_and_reaped_children_cpu_ns;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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
    super::unix::rusage_self_ns()
}

pub fn system_cpu_resolution_s() -> f64 {
    super::unix::clk_tck_step_s()
}

fn jiffies() -> Option<u64> {
    super::parse_timer_list_jiffies(&std::fs::read_to_string("/proc/timer_list").ok()?)
}

/// The tick, measured once: jiffies over 100 ms (/proc/timer_list, root only); else USER_HZ,
/// the coarsest tick Linux is built with (10 ms), which overstates a finer tick.
pub fn user_sys_split_resolution() -> (f64, String) {
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
                super::unix::clk_tck_step_s(),
                "one USER_HZ tick (the kernel's own tick not readable: /proc/timer_list \
                 needs root)"
                    .into(),
            ),
        }
    })
    .clone()
}

pub fn cpu_steal_ns(cpus: &[usize]) -> Result<(Vec<u64>, u64), String> {
    let text = std::fs::read_to_string("/proc/stat")
        .map_err(|e| format!("not measurable: /proc/stat: {e}"))?;
    let m = crate::system::parse::per_cpu_steal_ticks(&text);
    let tick_ns = (super::unix::clk_tck_step_s() * 1e9).round() as u64;
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

pub fn read_task_clock_excludes_steal() -> Result<(), String> {
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

pub fn busy_sample() -> BusySample {
    use crate::system::parse;
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let loadavg1 = read("/proc/loadavg")
        .and_then(|s| parse::parse_loadavg(&s))
        .map(|l| l.one);
    let cpu_some_total_us = read("/proc/pressure/cpu").and_then(|s| parse::psi_some_total_us(&s));
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
