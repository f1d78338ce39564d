//! Unix (Linux, macOS): rusage CPU times and the CLK_TCK step.

use std::io;

/// One CLK_TCK tick in seconds (the unit of /proc/stat and host_statistics).
pub fn clk_tck_step_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    1.0 / hz as f64
}

pub fn rusage_self_ns() -> io::Result<u64> {
    rusage_ns(libc::RUSAGE_SELF)
}

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

pub fn own_and_reaped_children_cpu_ns() -> io::Result<u64> {
    Ok(rusage_ns(libc::RUSAGE_SELF)? + rusage_ns(libc::RUSAGE_CHILDREN)?)
}
