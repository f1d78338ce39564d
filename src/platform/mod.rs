//! Every OS-specific call lives under this module (hyperfine's `timer/` split). Benchmarks call the
//! portable functions re-exported here; where an OS lacks a feature they return an error whose text
//! says "unsupported on <OS>: <reason>", which the runner records as `unsupported`.

use std::io;

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

#[cfg(unix)]
mod unix;

// Absolute-time sleeps, thread CPU clocks, scheduling policy read-back (interactivity suite).
pub mod realtime;

// Machine and environment facts (the system record) have their own back end per OS.
#[cfg(target_os = "linux")]
pub mod linux_sysinfo;
#[cfg(target_os = "linux")]
pub use linux_sysinfo as sysinfo;
#[cfg(not(target_os = "linux"))]
pub mod sysinfo_fallback;
#[cfg(not(target_os = "linux"))]
pub use sysinfo_fallback as sysinfo;

/// Human name of this OS, as used in "unsupported on <OS>" messages.
pub const OS_NAME: &str = os::OS_NAME;

/// An "unsupported on <OS>: <reason>" error.
pub fn unsupported(reason: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("unsupported on {OS_NAME}: {reason}"),
    )
}

/// What clock `std::time::Instant` reads on this OS (every benchmark uses it).
pub fn clock_description() -> &'static str {
    os::CLOCK_DESCRIPTION
}

/// Resolution the OS reports for the monotonic clock, in ns, where it reports one.
pub fn clock_resolution_ns() -> Option<f64> {
    os::clock_resolution_ns()
}

/// A real kernel entry that the C library cannot cache or short-cut.
pub struct NullSyscall {
    /// What is called, for the record (e.g. "syscall(SYS_getppid)").
    pub description: &'static str,
    /// Performs the call once; returns its result so callers can keep it alive with black_box.
    pub call: fn() -> usize,
}

pub fn null_syscall() -> io::Result<NullSyscall> {
    os::null_syscall()
}

/// One cheap I/O system call: a 1-byte read from the OS's zero device.
pub struct CheapIo {
    pub description: &'static str,
    inner: os::CheapIo,
}

impl CheapIo {
    pub fn open() -> io::Result<CheapIo> {
        let (inner, description) = os::CheapIo::open()?;
        Ok(CheapIo { description, inner })
    }
    /// Performs one 1-byte read; errors if the OS returned anything but 1 byte.
    #[inline(always)]
    pub fn read_one(&mut self) -> io::Result<()> {
        self.inner.read_one()
    }
}

/// CPUs this process may run on (affinity mask, read back from the OS), ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    os::allowed_cpus()
}

/// Pin the calling thread to one CPU, and read the affinity back to prove it held.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    os::pin_current_thread(cpu)?;
    let now = os::current_thread_affinity()?;
    if now != [cpu] {
        return Err(io::Error::other(format!(
            "pinning to CPU {cpu} did not hold: affinity reads back as {now:?}"
        )));
    }
    Ok(())
}

/// The calling thread's affinity, read back from the OS.
pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    os::current_thread_affinity()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_names_the_os() {
        let e = unsupported("no such feature");
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(
            e.to_string()
                .starts_with(&format!("unsupported on {OS_NAME}: "))
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn linux_facilities_work() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        let ns = null_syscall().unwrap();
        // getppid: our parent exists, so the value is a real pid.
        assert!((ns.call)() > 0);
        let mut io = CheapIo::open().unwrap();
        io.read_one().unwrap();
        assert!(clock_resolution_ns().unwrap() > 0.0);
        // Pinning in a scratch thread so the test thread keeps its affinity.
        let first = cpus[0];
        std::thread::spawn(move || {
            pin_current_thread(first).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), vec![first]);
        })
        .join()
        .unwrap();
    }
}
