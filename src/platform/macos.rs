//! macOS implementations. Type-checked in CI; no macOS machine runs them here.

use std::io;

use super::NullSyscall;
pub use super::unix::DevZero as CheapIo;
pub use super::unix::{
    child_stopped, clock_resolution_ns, helper_child_signals, install_interrupt_handler,
    interrupt_exit_code, process_alive, terminate_with_parent,
};

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

/// macOS has no CPU affinity mask to read: which CPUs a process or thread may use is not
/// exposed (`available_parallelism` counts CPUs, it says nothing about which ones a thread may
/// run on), so no list is made up.
const AFFINITY_REASON: &str =
    "macOS exposes no CPU affinity mask (threads may run on any CPU; affinity tags are hints)";

pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    Err(super::unsupported(AFFINITY_REASON))
}

pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    Err(super::unsupported(AFFINITY_REASON))
}

pub fn pin_current_thread(_cpu: usize) -> io::Result<()> {
    Err(super::unsupported(
        "macOS has no thread-to-CPU pinning (thread affinity tags are scheduling hints only)",
    ))
}

// ---------------------------------------------------------------------------------------------
// Processes, threads and pipes (the `proc` suite). posix_spawn, pipes and poll are the shared Unix
// code; fork-based measurements are not offered (see FORK_REASON).

#[cfg(test)]
pub use super::process::proc_suite_unix::process_gone;
pub use super::process::proc_suite_unix::{
    ExecProgram, PollPipe, posix_spawn_available, posix_spawn_wait, tiny_program,
};

const FORK_REASON: &str = "fork() is not safe in a multi-threaded program on macOS (the child may \
                           only make async-signal-safe calls); process creation is measured by the \
                           spawn benchmarks";

pub fn fork_available() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn fork_exit_wait() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn fork_exec_wait(_program: &ExecProgram) -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn echo_child_available() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

/// Not offered on macOS (see FORK_REASON); named for completeness of the record.
pub const ECHO_PEER: &str = "forked child process (not offered on macOS)";
pub const ECHO_OPS: &str = "write(1 B) + poll + read(1 B)";

/// Never constructed on macOS (fork is not offered).
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
    pub fn round_trips(&mut self, _n: u64, _timeout: std::time::Duration) -> io::Result<()> {
        match self.never {}
    }
    pub fn finish(self, _grace: std::time::Duration) -> io::Result<()> {
        match self.never {}
    }
}
