//! Windows implementations. Built and tested under Wine in CI (see README "Platforms").

use std::io;

use super::NullSyscall;

pub const OS_NAME: &str = "Windows";
pub const CLOCK_DESCRIPTION: &str = "QueryPerformanceCounter, through std::time::Instant";

pub fn clock_resolution_ns() -> Option<f64> {
    None
}

pub fn null_syscall() -> io::Result<NullSyscall> {
    Err(super::unsupported(
        "the Windows null system call is not implemented yet",
    ))
}

pub struct CheapIo;

impl CheapIo {
    pub fn open() -> io::Result<(CheapIo, &'static str)> {
        Err(super::unsupported(
            "the Windows cheap I/O call is not implemented yet",
        ))
    }
    pub fn read_one(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    let n = std::thread::available_parallelism()?.get();
    Ok((0..n).collect())
}

pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    allowed_cpus()
}

pub fn pin_current_thread(_cpu: usize) -> io::Result<()> {
    Err(super::unsupported("thread pinning is not implemented yet"))
}
