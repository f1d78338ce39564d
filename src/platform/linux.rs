//! Linux implementations.

use std::io;

use super::NullSyscall;
pub use super::unix::DevZero as CheapIo;
pub use super::unix::{
    child_stopped, clock_resolution_ns, helper_child_signals, install_interrupt_handler,
    interrupt_exit_code, process_alive, terminate_with_parent,
};

pub const OS_NAME: &str = "Linux";
pub const CLOCK_DESCRIPTION: &str =
    "CLOCK_MONOTONIC via clock_gettime (vDSO), through std::time::Instant";

pub fn null_syscall() -> io::Result<NullSyscall> {
    fn getppid_raw() -> usize {
        // SAFETY: getppid takes no arguments and cannot fail. The raw syscall bypasses any libc
        // caching, so every call is a real kernel entry (what `perf bench syscall basic` times).
        unsafe { libc::syscall(libc::SYS_getppid) as usize }
    }
    Ok(NullSyscall {
        description: "syscall(SYS_getppid), raw, bypassing libc",
        call: getppid_raw,
    })
}

fn cpu_set_to_vec(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

fn get_affinity(pid: libc::pid_t) -> io::Result<Vec<usize>> {
    // SAFETY: zeroed cpu_set_t is a valid empty set; the size passed matches the buffer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(cpu_set_to_vec(&set))
    }
}

/// Process-wide view: the main thread's mask is what new threads inherit.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: getpid cannot fail.
    get_affinity(unsafe { libc::getpid() })
}

pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    get_affinity(0)
}

pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} out of range"),
        ));
    }
    // SAFETY: as above; pid 0 = the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
