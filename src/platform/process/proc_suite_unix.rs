//! Process, pipe and poll helpers shared by the Unix-like targets (the `proc` suite).
//!
//! Linux uses everything here. macOS re-exports the parts that are valid in a multi-threaded
//! program (posix_spawn, pipes, poll); the fork-based parts are compiled for Linux only, because a
//! forked child of a threaded program may only make async-signal-safe calls and macOS's libSystem
//! does not promise that for anything we would need.
//!
//! Cleanup rule: every child this module creates is reaped before the call that created it
//! returns, or is owned by a guard ([`EchoChild`]) whose `Drop` kills (SIGKILL) and reaps it. Every
//! fd is an `OwnedFd`, so it is closed on every exit path.

use std::ffi::{CString, c_int};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The program the spawn benchmarks start: exits 0 at once, ignores its arguments. macOS has no
/// /bin/true.
pub fn tiny_program() -> io::Result<&'static Path> {
    if cfg!(target_os = "macos") {
        Ok(Path::new("/usr/bin/true"))
    } else {
        Ok(Path::new("/bin/true"))
    }
}

/// A program that exits 1 at once (tests).
#[cfg(test)]
fn false_program() -> &'static Path {
    if cfg!(target_os = "macos") {
        Path::new("/usr/bin/false")
    } else {
        Path::new("/bin/false")
    }
}

/// posix_spawn exists on every Unix-like target this crate builds for.
pub fn posix_spawn_available() -> io::Result<()> {
    Ok(())
}

/// A program prepared for repeated starts: the path is converted to a C string once, so a timed
/// start allocates nothing. argv = [path], environment empty (as lmbench `lat_proc exec`).
pub struct ExecProgram {
    path: PathBuf,
    c_path: CString,
}

impl ExecProgram {
    pub fn new(path: &Path) -> io::Result<ExecProgram> {
        let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} contains a NUL byte", path.display()),
            )
        })?;
        Ok(ExecProgram {
            path: path.to_path_buf(),
            c_path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Wait for `pid` (blocking, EINTR retried) and require a normal exit with status 0.
fn wait_exit_zero(pid: libc::pid_t) -> io::Result<()> {
    let status = wait_blocking(pid)?;
    check_exit_zero(pid, status)
}

fn wait_blocking(pid: libc::pid_t) -> io::Result<c_int> {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if r == -1 && e.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return Err(e);
    }
}

/// Describe a waitpid status in words.
fn describe_status(status: c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("ended with raw wait status {status:#x}")
    }
}

fn check_exit_zero(pid: libc::pid_t, status: c_int) -> io::Result<()> {
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "child {pid} {} (expected a normal exit with status 0)",
            describe_status(status)
        )))
    }
}

/// posix_spawn(program) with argv = [program] and an empty environment, then waitpid; Ok only
/// when the child exited normally with status 0.
pub fn posix_spawn_wait(program: &ExecProgram) -> io::Result<()> {
    let argv: [*mut libc::c_char; 2] = [program.c_path.as_ptr().cast_mut(), std::ptr::null_mut()];
    let envp: [*mut libc::c_char; 1] = [std::ptr::null_mut()];
    let mut pid: libc::pid_t = 0;
    // SAFETY: path, argv and envp are NUL-terminated and outlive the call; posix_spawn does not
    // write through argv/envp. Null file actions and attributes mean "inherit".
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            program.c_path.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            argv.as_ptr(),
            envp.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    wait_exit_zero(pid)
}

/// A pipe whose ends are close-on-exec (std creates them so on every OS).
fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = io::pipe()?;
    Ok((OwnedFd::from(r), OwnedFd::from(w)))
}

/// poll() timeout in ms for `timeout`: rounded up (a positive remainder never becomes 0, which
/// would mean "don't wait"), capped at c_int::MAX.
fn poll_ms(timeout: Duration) -> c_int {
    let ms = timeout.as_nanos().div_ceil(1_000_000);
    ms.min(c_int::MAX as u128) as c_int
}

#[inline(always)]
fn write_one(fd: RawFd) -> io::Result<()> {
    let b = 1u8;
    loop {
        // SAFETY: writing 1 byte from a valid 1-byte buffer to an open fd.
        let n = unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
        match n {
            1 => return Ok(()),
            -1 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => {
                return Err(io::Error::other(format!(
                    "pipe write returned {n}, expected 1"
                )));
            }
        }
    }
}

#[inline(always)]
fn read_one(fd: RawFd) -> io::Result<()> {
    let mut b = 0u8;
    loop {
        // SAFETY: reading 1 byte into a valid 1-byte buffer from an open fd.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        match n {
            1 => return Ok(()),
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the pipe was closed at the other end (peer exited)",
                ));
            }
            -1 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => {
                return Err(io::Error::other(format!(
                    "pipe read returned {n}, expected 1"
                )));
            }
        }
    }
}

/// Wait until `fd` is readable (or its writer closed) for at most `ms`; TimedOut otherwise.
#[inline(always)]
fn wait_readable(fd: RawFd, ms: c_int) -> io::Result<()> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        match r {
            1 => return Ok(()),
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no reply on the pipe before the time bound",
                ));
            }
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// One pipe used within one thread: write 1 byte, poll for it, read it — exactly the operations
/// one side of `EchoChild::round_trips` performs, without blocking and without a switch.
pub struct PollPipe {
    r: OwnedFd,
    w: OwnedFd,
}

impl PollPipe {
    pub fn new() -> io::Result<PollPipe> {
        let (r, w) = pipe_cloexec()?;
        Ok(PollPipe { r, w })
    }

    /// `n` × (write 1 byte; poll(POLLIN, timeout); read 1 byte).
    pub fn pairs(&mut self, n: u64, timeout: Duration) -> io::Result<()> {
        let ms = poll_ms(timeout);
        let (r, w) = (self.r.as_raw_fd(), self.w.as_raw_fd());
        for _ in 0..n {
            write_one(w)?;
            wait_readable(r, ms)?;
            read_one(r)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// fork-based helpers: Linux only (see the module docs).

/// fork() is usable (Linux).
#[cfg(target_os = "linux")]
pub fn fork_available() -> io::Result<()> {
    Ok(())
}

/// fork(); the child calls `_exit(0)` at once; waitpid. Ok only on a normal exit with status 0.
#[cfg(target_os = "linux")]
pub fn fork_exit_wait() -> io::Result<()> {
    // SAFETY: the child only calls _exit (async-signal-safe), as required after fork in a
    // multi-threaded program.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: terminate the child immediately without running any Rust or atexit code.
        unsafe { libc::_exit(0) };
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    wait_exit_zero(pid)
}

/// fork(); the child calls execve(program, [program], []) (and `_exit(127)` if that fails);
/// waitpid. Ok only on a normal exit with status 0.
#[cfg(target_os = "linux")]
pub fn fork_exec_wait(program: &ExecProgram) -> io::Result<()> {
    // Built before fork: the child must not allocate.
    let argv: [*const libc::c_char; 2] = [program.c_path.as_ptr(), std::ptr::null()];
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: the child only calls execve and _exit (both async-signal-safe) with pointers that
    // were valid before fork and stay valid in the child's copy of memory.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the forked child: execve and _exit only, with pointers built before fork.
        unsafe {
            libc::execve(program.c_path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127);
        }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    wait_exit_zero(pid)
}

/// In a forked child: SIGINT and SIGTERM back to their default action, so a terminal's Ctrl-C
/// (sent to the whole process group) ends the child instead of running osgauge's inherited
/// handler in it. Async-signal-safe: sigaction only.
#[cfg(target_os = "linux")]
fn child_default_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with SIG_DFL and an empty mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// In a forked child: close every fd ≥ 3 except `keep`, so the child holds no copy of pipes or
/// files that other threads of the parent opened (their readers would otherwise not see EOF while
/// this child lives). close_range(2) is Linux ≥ 5.9; on older kernels this is skipped (ENOSYS).
/// Async-signal-safe: raw system calls only.
#[cfg(target_os = "linux")]
fn child_close_other_fds(mut keep: [RawFd; 2]) {
    keep.sort_unstable();
    let mut lo: u32 = 3;
    for k in keep {
        let k = k as u32;
        if k >= lo {
            if k > lo {
                // SAFETY: closing fds in the child's own table.
                unsafe { libc::syscall(libc::SYS_close_range, lo, k - 1, 0u32) };
            }
            lo = k + 1;
        }
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, lo, u32::MAX, 0u32) };
}

/// The child's side of the ping-pong: poll (no timeout), read 1 byte, write it back; exit 0 when
/// the parent closes its end (EOF). Only poll/read/write/_exit: async-signal-safe.
#[cfg(target_os = "linux")]
fn child_echo_loop(rfd: RawFd, wfd: RawFd) -> ! {
    let mut b = 0u8;
    let mut p = libc::pollfd {
        fd: rfd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: (whole block) raw system calls on the child's own fds with valid buffers.
    unsafe {
        loop {
            if libc::poll(&mut p, 1, -1) < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(2);
            }
            let n = libc::read(rfd, (&mut b as *mut u8).cast(), 1);
            if n == 0 {
                libc::_exit(0);
            }
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(3);
            }
            loop {
                let n = libc::write(wfd, (&b as *const u8).cast(), 1);
                if n == 1 {
                    break;
                }
                if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(4);
            }
        }
    }
}

/// A forked child that echoes 1-byte tokens over two pipes (the process side of the context-switch
/// benchmark). The child inherits the forking thread's CPU affinity. Dropping this kills (SIGKILL)
/// and reaps the child if [`finish`](Self::finish) did not.
#[cfg(target_os = "linux")]
pub struct EchoChild {
    pid: libc::pid_t,
    to_child: Option<OwnedFd>,
    from_child: Option<OwnedFd>,
    reaped: bool,
}

#[cfg(target_os = "linux")]
impl EchoChild {
    pub fn start() -> io::Result<EchoChild> {
        let (child_r, parent_w) = pipe_cloexec()?;
        let (parent_r, child_w) = pipe_cloexec()?;
        let (cr, cw) = (child_r.as_raw_fd(), child_w.as_raw_fd());
        // SAFETY: the child only makes raw system calls (sigaction, close_range, poll, read,
        // write, _exit), all async-signal-safe, so forking a multi-threaded parent is sound.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            child_default_signals();
            child_close_other_fds([cr, cw]);
            child_echo_loop(cr, cw);
        }
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        // The parent keeps only its own ends (the child's copies close when dropped here).
        drop(child_r);
        drop(child_w);
        Ok(EchoChild {
            pid,
            to_child: Some(parent_w),
            from_child: Some(parent_r),
            reaped: false,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The child's CPU affinity, read back from the kernel.
    pub fn cpu_affinity(&self) -> io::Result<Vec<usize>> {
        // SAFETY: zeroed cpu_set_t is a valid empty set; the size passed matches the buffer.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(self.pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
                != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok((0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect())
        }
    }

    fn fds(&self) -> io::Result<(RawFd, RawFd)> {
        match (&self.to_child, &self.from_child) {
            (Some(w), Some(r)) => Ok((w.as_raw_fd(), r.as_raw_fd())),
            _ => Err(io::Error::other(
                "the echo child's pipes are already closed",
            )),
        }
    }

    /// `n` × (write 1 byte; poll(POLLIN, timeout); read 1 byte). The child does the mirror image
    /// (poll, read, write), so one round trip = 2 × (write + poll + read) + 2 context switches.
    /// TimedOut if a reply does not come within `timeout`.
    pub fn round_trips(&mut self, n: u64, timeout: Duration) -> io::Result<()> {
        let ms = poll_ms(timeout);
        let (w, r) = self.fds()?;
        for _ in 0..n {
            write_one(w)?;
            wait_readable(r, ms)?;
            read_one(r)?;
        }
        Ok(())
    }

    /// Close the pipes (the child sees EOF and exits), wait up to `grace` for it, and require a
    /// normal exit with status 0. Past `grace` the child is killed and reaped, and TimedOut
    /// returned.
    pub fn finish(mut self, grace: Duration) -> io::Result<()> {
        self.to_child = None;
        self.from_child = None;
        let start = std::time::Instant::now();
        loop {
            let mut status: c_int = 0;
            // SAFETY: waitpid on our own, not yet reaped child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r == self.pid {
                self.reaped = true;
                return check_exit_zero(self.pid, status);
            }
            if r == -1 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Not our child any more (someone else reaped it): nothing left to kill.
                self.reaped = true;
                return Err(e);
            }
            if start.elapsed() >= grace {
                // Drop kills and reaps it.
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "child {} did not exit within {grace:?} after its pipe closed",
                        self.pid
                    ),
                ));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for EchoChild {
    fn drop(&mut self) {
        self.to_child = None;
        self.from_child = None;
        if !self.reaped {
            // SAFETY: the pid is our unreaped child, so it cannot have been reused.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = wait_blocking(self.pid);
            self.reaped = true;
        }
    }
}

/// True when `pid` is no longer a child of ours that still needs reaping and no process with
/// that pid exists (test helper: proves a child was killed and reaped, not left as a zombie).
#[cfg(test)]
pub fn process_gone(pid: u32) -> bool {
    let pid = pid as libc::pid_t;
    let errno = || io::Error::last_os_error().raw_os_error();
    let mut status: c_int = 0;
    // SAFETY: a non-blocking waitpid and a signal-0 probe; neither affects a live process.
    let not_our_child = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == -1
        && errno() == Some(libc::ECHILD);
    // SAFETY: as above.
    let no_such_process = unsafe { libc::kill(pid, 0) } == -1 && errno() == Some(libc::ESRCH);
    not_our_child && no_such_process
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_timeout_rounds_up() {
        assert_eq!(poll_ms(Duration::from_nanos(1)), 1);
        assert_eq!(poll_ms(Duration::from_millis(5)), 5);
        assert_eq!(poll_ms(Duration::from_secs(u64::MAX)), c_int::MAX);
        assert_eq!(poll_ms(Duration::ZERO), 0);
    }

    #[test]
    fn poll_pipe_and_spawn_work() {
        let mut p = PollPipe::new().unwrap();
        p.pairs(10, Duration::from_secs(1)).unwrap();
        let prog = ExecProgram::new(tiny_program().unwrap()).unwrap();
        posix_spawn_wait(&prog).unwrap();
        let bad = ExecProgram::new(false_program()).unwrap();
        let e = posix_spawn_wait(&bad).unwrap_err();
        assert!(e.to_string().contains("exited with status 1"), "{e}");
    }

    #[test]
    fn empty_pipe_times_out() {
        let (r, _w) = pipe_cloexec().unwrap();
        let e = wait_readable(r.as_raw_fd(), 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn fork_helpers_work_and_reap() {
        fork_exit_wait().unwrap();
        let prog = ExecProgram::new(false_program()).unwrap();
        let e = fork_exec_wait(&prog).unwrap_err();
        assert!(e.to_string().contains("exited with status 1"), "{e}");

        let mut c = EchoChild::start().unwrap();
        let pid = c.pid();
        c.round_trips(100, Duration::from_secs(5)).unwrap();
        c.finish(Duration::from_secs(5)).unwrap();
        assert!(process_gone(pid));

        // Dropped without finish: killed and reaped.
        let c = EchoChild::start().unwrap();
        let pid = c.pid();
        drop(c);
        assert!(process_gone(pid));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_stuck_child_times_out_and_is_still_reaped() {
        let mut c = EchoChild::start().unwrap();
        let pid = c.pid();
        // SAFETY: stopping our own child.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) }, 0);
        let t0 = std::time::Instant::now();
        let e = c.round_trips(3, Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        // A stopped child does not exit on EOF: finish gives up after its grace, then kills.
        let e = c.finish(Duration::from_millis(20)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(process_gone(pid));
    }
}
