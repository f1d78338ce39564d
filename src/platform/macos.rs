//! macOS implementations. Type-checked in CI; no macOS machine runs them here.

use std::io;

use super::NullSyscall;
pub use super::unix::DevZero as CheapIo;
pub use super::unix::clock_resolution_ns;

pub const OS_NAME: &str = "macOS";
pub const CLOCK_DESCRIPTION: &str = "mach_absolute_time, through std::time::Instant";

pub fn null_syscall() -> io::Result<NullSyscall> {
    fn getppid() -> usize {
        // SAFETY: getppid takes no arguments and cannot fail; macOS's libc does not cache it, so
        // each call is a real BSD system call.
        unsafe { libc::getppid() as usize }
    }
    Ok(NullSyscall {
        description: "getppid() (a BSD system call; not cached by libSystem)",
        call: getppid,
    })
}

pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    let n = std::thread::available_parallelism()?.get();
    Ok((0..n).collect())
}

pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    allowed_cpus()
}

pub fn pin_current_thread(_cpu: usize) -> io::Result<()> {
    Err(super::unsupported(
        "macOS has no thread-to-CPU pinning (thread affinity tags are scheduling hints only)",
    ))
}
