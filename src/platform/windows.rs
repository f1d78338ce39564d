//! Windows implementations. Built and tested under Wine in CI (see README "Platforms").

use std::io;
use std::path::Path;
use std::time::Duration;

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

// ---------------------------------------------------------------------------------------------
// Processes, threads and pipes (the `proc` suite): not implemented on Windows yet. Thread creation
// and the thread context switch use portable std and need nothing here.

const FORK_REASON: &str = "no fork(); process creation is measured by the spawn benchmarks";

pub fn tiny_program() -> io::Result<&'static Path> {
    Err(super::unsupported("no tiny program chosen yet"))
}

pub fn fork_available() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn posix_spawn_available() -> io::Result<()> {
    Err(super::unsupported(
        "no posix_spawn(); process creation (CreateProcess) is measured by proc/spawn",
    ))
}

/// Never constructed on Windows yet.
pub struct ExecProgram {
    never: std::convert::Infallible,
}

impl ExecProgram {
    pub fn new(_path: &Path) -> io::Result<ExecProgram> {
        Err(super::unsupported(
            "starting a program by path is not implemented yet",
        ))
    }
    pub fn path(&self) -> &Path {
        match self.never {}
    }
}

pub fn fork_exit_wait() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn fork_exec_wait(program: &ExecProgram) -> io::Result<()> {
    match program.never {}
}

pub fn posix_spawn_wait(program: &ExecProgram) -> io::Result<()> {
    match program.never {}
}

/// Never constructed on Windows (no fork).
pub struct EchoChild {
    never: std::convert::Infallible,
}

impl EchoChild {
    pub fn start() -> io::Result<EchoChild> {
        Err(super::unsupported(FORK_REASON))
    }
    pub fn pid(&self) -> u32 {
        match self.never {}
    }
    pub fn cpu_affinity(&self) -> io::Result<Vec<usize>> {
        match self.never {}
    }
    pub fn round_trips(&mut self, _n: u64, _timeout: Duration) -> io::Result<()> {
        match self.never {}
    }
    pub fn finish(self, _grace: Duration) -> io::Result<()> {
        match self.never {}
    }
}

/// Never constructed on Windows (no poll() on pipes).
pub struct PollPipe {
    never: std::convert::Infallible,
}

impl PollPipe {
    pub fn new() -> io::Result<PollPipe> {
        Err(super::unsupported("poll() on pipes is not available"))
    }
    pub fn pairs(&mut self, _n: u64, _timeout: Duration) -> io::Result<()> {
        match self.never {}
    }
}

/// Test helper: no child processes are created on Windows yet.
#[cfg(test)]
pub fn process_gone(_pid: u32) -> bool {
    true
}

pub fn install_interrupt_handler(
    flag: &'static std::sync::atomic::AtomicBool,
    exit_code: i32,
) -> io::Result<()> {
    ctrlc::set_handler(move || {
        if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(exit_code);
        }
        eprint!("{}", super::INTERRUPT_MESSAGE);
    })
    .map_err(io::Error::other)
}
