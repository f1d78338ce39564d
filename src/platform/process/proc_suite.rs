//! Processes, threads and pipes for the `proc` suite, the portable API: Linux uses the shared
//! Unix code (`proc_suite_unix.rs`) directly; macOS's back end re-exports the parts of it
//! that are valid there and stubs the rest; Windows's starts `osgauge __echo` as the echo peer.

use std::io;
use std::path::Path;
use std::time::Duration;

#[cfg(not(target_os = "linux"))]
use super::super::os as process_os;
#[cfg(target_os = "linux")]
use super::proc_suite_unix as process_os;

/// The tiny program the spawn benchmarks start (exits 0 at once, ignores its arguments), e.g.
/// `/bin/true`. The caller checks that it exists.
pub fn tiny_program() -> io::Result<&'static Path> {
    process_os::tiny_program()
}

/// Ok where fork() may be used by this (multi-threaded) program; otherwise unsupported with the
/// reason.
pub fn fork_available() -> io::Result<()> {
    process_os::fork_available()
}

/// Ok where posix_spawn() exists; otherwise unsupported with the reason.
pub fn posix_spawn_available() -> io::Result<()> {
    process_os::posix_spawn_available()
}

/// A program prepared for repeated starts by [`fork_exec_wait`] and [`posix_spawn_wait`]: argv =
/// [path], empty environment, converted to C strings once so that a timed start allocates nothing.
pub struct ExecProgram {
    inner: process_os::ExecProgram,
}

impl ExecProgram {
    pub fn new(path: &Path) -> io::Result<ExecProgram> {
        Ok(ExecProgram {
            inner: process_os::ExecProgram::new(path)?,
        })
    }

    pub fn path(&self) -> &Path {
        self.inner.path()
    }
}

/// fork(); the child calls `_exit(0)` at once; the parent waits for it (waitpid). Errors unless
/// the child exited normally with status 0 (the message gives the status).
pub fn fork_exit_wait() -> io::Result<()> {
    process_os::fork_exit_wait()
}

/// fork(); the child execs `program`; the parent waits for it. Errors unless the child exited
/// normally with status 0 (status 127: the exec itself failed).
pub fn fork_exec_wait(program: &ExecProgram) -> io::Result<()> {
    process_os::fork_exec_wait(&program.inner)
}

/// posix_spawn(`program`), then wait for it. Errors unless it exited normally with status 0.
pub fn posix_spawn_wait(program: &ExecProgram) -> io::Result<()> {
    process_os::posix_spawn_wait(&program.inner)
}

/// The hidden subcommand (`osgauge __echo`) that makes the osgauge binary serve as the echo peer
/// where the peer is a started program rather than a forked child (Windows).
pub const ECHO_SUBCOMMAND: &str = "__echo";

/// The echo peer's side, portable std: read 1 byte from stdin, write it to stdout and flush;
/// return at end of input. Run by `osgauge __echo`.
pub fn serve_echo() -> io::Result<()> {
    use std::io::{Read, Write};
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    let mut b = [0u8; 1];
    loop {
        match input.read(&mut b) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                output.write_all(&b)?;
                output.flush()?;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Ok where [`EchoChild`] can be started (Linux: fork; Windows: the osgauge binary is found);
/// otherwise unsupported with the reason.
pub fn echo_child_available() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        process_os::fork_available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        process_os::echo_child_available()
    }
}

#[cfg(target_os = "linux")]
const ECHO_DESCRIPTION: (&str, &str) = ("forked child process", "write(1 B) + poll + read(1 B)");
#[cfg(not(target_os = "linux"))]
const ECHO_DESCRIPTION: (&str, &str) = (process_os::ECHO_PEER, process_os::ECHO_OPS);

/// A child process that echoes 1-byte tokens over two pipes (the process side of the
/// context-switch benchmark), with the calling thread's CPU affinity; it exits when its input pipe
/// closes. Linux: a forked child making only async-signal-safe calls. Windows: `osgauge __echo`
/// started with CreateProcessW, its stdin/stdout anonymous pipes, given the calling thread's
/// affinity with SetProcessAffinityMask. Dropping this kills and reaps the
/// child if [`finish`](Self::finish) did not.
pub struct EchoChild {
    inner: process_os::EchoChild,
}

impl EchoChild {
    pub fn start() -> io::Result<EchoChild> {
        Ok(EchoChild {
            inner: process_os::EchoChild::start()?,
        })
    }

    /// What the peer is, for the record (e.g. "forked child process").
    pub fn peer_description() -> &'static str {
        ECHO_DESCRIPTION.0
    }

    /// The operations each side performs per token, for the record.
    pub fn ops_description() -> &'static str {
        ECHO_DESCRIPTION.1
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.inner.pid()
    }

    /// The child's CPU affinity, read back from the OS.
    pub fn cpu_affinity(&self) -> io::Result<Vec<usize>> {
        self.inner.cpu_affinity()
    }

    /// `n` round trips: write 1 byte, poll(POLLIN) with `timeout`, read the echo. The child does
    /// the mirror image, so a round trip = 2 × (write + poll + read) + 2 context switches.
    /// Errors of kind TimedOut when a reply does not come within `timeout`.
    #[inline]
    pub fn round_trips(&mut self, n: u64, timeout: Duration) -> io::Result<()> {
        self.inner.round_trips(n, timeout)
    }

    /// Close the pipes, wait up to `grace` for the child to exit, require exit status 0; past
    /// `grace` it is killed and reaped and TimedOut returned.
    pub fn finish(self, grace: Duration) -> io::Result<()> {
        self.inner.finish(grace)
    }
}

/// One pipe used within one thread: `n` × (write 1 byte, poll(POLLIN) with `timeout`, read it) —
/// the operations of one side of an [`EchoChild`] round trip, without blocking or switching.
pub struct PollPipe {
    inner: process_os::PollPipe,
}

impl PollPipe {
    pub fn new() -> io::Result<PollPipe> {
        Ok(PollPipe {
            inner: process_os::PollPipe::new()?,
        })
    }

    #[inline]
    pub fn pairs(&mut self, n: u64, timeout: Duration) -> io::Result<()> {
        self.inner.pairs(n, timeout)
    }
}

/// Test helper: true when `pid` is neither a live process nor an unreaped child (zombie) of ours.
#[cfg(test)]
pub fn process_gone(pid: u32) -> bool {
    process_os::process_gone(pid)
}
