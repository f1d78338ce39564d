//! macOS: host_statistics, rusage, load average; no steal.

use super::{BusySample, SystemCpu};
use std::io;

pub use super::not_linux::{cpu_steal_ns, read_task_clock_excludes_steal};
pub use super::unix::own_and_reaped_children_cpu_ns;

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
    super::unix::rusage_self_ns()
}

pub fn system_cpu_resolution_s() -> f64 {
    super::unix::clk_tck_step_s()
}

pub fn user_sys_split_resolution() -> (f64, String) {
    (
        1e-6,
        "1 µs (rusage user/system times are accounted at every switch)".into(),
    )
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
