//! Windows: GetSystemTimes and GetProcessTimes; no steal, no load figures.

use super::{BusySample, SystemCpu};
use std::io;
use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessTimes, GetSystemTimes};

pub use super::not_linux::{cpu_steal_ns, read_task_clock_excludes_steal};

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

pub fn own_and_reaped_children_cpu_ns() -> io::Result<u64> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no reaped-children CPU time on this OS",
    ))
}

pub fn user_sys_split_resolution() -> (f64, String) {
    (
        0.015_625,
        "one clock interrupt (15.625 ms: process times are charged per interrupt)".into(),
    )
}

pub fn busy_sample() -> BusySample {
    BusySample::default()
}
