//! Calls shared by the Unix-like targets (Linux, macOS).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

pub fn clock_resolution_ns() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64)
}

/// 1-byte reads of /dev/zero through read(2) directly (no std buffering).
pub struct DevZero {
    file: File,
}

impl DevZero {
    pub fn open() -> io::Result<(DevZero, &'static str)> {
        let file = File::open("/dev/zero")?;
        Ok((DevZero { file }, "read(2) of 1 byte from /dev/zero"))
    }

    #[inline(always)]
    pub fn read_one(&mut self) -> io::Result<()> {
        let mut b = 0u8;
        // SAFETY: reading 1 byte into a valid 1-byte buffer from an open fd.
        let n = unsafe { libc::read(self.file.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
        match n {
            1 => Ok(()),
            -1 => Err(io::Error::last_os_error()),
            n => Err(io::Error::other(format!(
                "read of /dev/zero returned {n} bytes, expected 1"
            ))),
        }
    }
}

/// 0666 minus the process umask, as `open(O_CREAT, 0666)` would create.
pub fn user_file_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // umask can only be read by setting it; restore it at once (single-threaded callers only
    // race with file creation in other threads, which osgauge does not do while exporting).
    // SAFETY: umask cannot fail.
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    Some(std::fs::Permissions::from_mode(0o666 & !(mask as u32)))
}

static INTERRUPT: std::sync::OnceLock<&'static std::sync::atomic::AtomicBool> =
    std::sync::OnceLock::new();
/// The first of SIGINT/SIGTERM/SIGHUP received (0: none yet).
static FIRST_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The signals that ask osgauge to finish: Ctrl-C, `kill`, the terminal closing.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_interrupt(sig: libc::c_int) {
    use std::sync::atomic::Ordering::SeqCst;
    // Only async-signal-safe work here: atomics, write(2) and _exit(2).
    if let Some(flag) = INTERRUPT.get() {
        let _ = FIRST_SIGNAL.compare_exchange(0, sig, SeqCst, SeqCst);
        if flag.swap(true, SeqCst) {
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(128 + FIRST_SIGNAL.load(SeqCst)) };
        }
        let msg = super::INTERRUPT_MESSAGE.as_bytes();
        // SAFETY: writing a static buffer to stderr; the result does not matter.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    }
}

fn set_action(sig: libc::c_int, action: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: a zeroed sigaction with the given action and an empty mask; SA_RESTART so that
    // interrupted system calls resume instead of failing with EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = action;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

pub fn install_interrupt_handler(flag: &'static std::sync::atomic::AtomicBool) -> io::Result<()> {
    if INTERRUPT.set(flag).is_err() {
        return Ok(());
    }
    for sig in STOP_SIGNALS {
        set_action(sig, on_interrupt as *const () as libc::sighandler_t)?;
    }
    Ok(())
}

/// 128 + the first stop signal received (130 INT, 143 TERM, 129 HUP), None before any.
pub fn interrupt_exit_code() -> Option<i32> {
    match FIRST_SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        s => Some(128 + s),
    }
}

static CHILD_STOP: std::sync::OnceLock<&'static std::sync::atomic::AtomicBool> =
    std::sync::OnceLock::new();

extern "C" fn on_child_terminate(_sig: libc::c_int) {
    if let Some(flag) = CHILD_STOP.get() {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Helper children: SIGINT and SIGHUP (which a terminal sends to the whole process group) are
/// ignored — the parent decides when they stop and cleans up; SIGTERM sets `stop` (a graceful end:
/// the child deletes its files and exits).
pub fn helper_child_signals(stop: &'static std::sync::atomic::AtomicBool) -> io::Result<()> {
    let _ = CHILD_STOP.set(stop);
    set_action(libc::SIGINT, libc::SIG_IGN)?;
    set_action(libc::SIGHUP, libc::SIG_IGN)?;
    set_action(
        libc::SIGTERM,
        on_child_terminate as *const () as libc::sighandler_t,
    )
}

/// Linux: ask the kernel to send SIGTERM to this process when its parent dies
/// (PR_SET_PDEATHSIG), then check the parent is still `parent` (it may have died before).
/// Elsewhere: unsupported (the helper notices the parent's death by the end of its stdin).
pub fn terminate_with_parent(parent: u32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with an int argument; getppid cannot fail.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid takes no arguments and cannot fail.
        if unsafe { libc::getppid() } as u32 != parent {
            return Err(io::Error::other("the parent process is gone"));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = parent;
        Err(super::unsupported(
            "no parent-death signal; the helper ends when its stdin closes",
        ))
    }
}

/// True while a process with this id exists (kill(pid, 0); EPERM: exists, not ours).
pub fn process_alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let exists = unsafe { libc::kill(p, 0) } == 0;
    exists || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// True when our child `pid` is stopped (SIGSTOP/SIGTSTP); the stop is not consumed (WNOWAIT),
/// so std's wait on the child still works.
pub fn child_stopped(pid: u32) -> bool {
    // SAFETY: a zeroed siginfo_t is valid output space; WNOHANG never blocks.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WSTOPPED | libc::WNOHANG | libc::WNOWAIT,
        );
        rc == 0 && info.si_signo == libc::SIGCHLD
    }
}

/// What `uname(2)` says (empty fields as None). Not on macOS: its record reads the same facts
/// with sysctl (kern.hostname, kern.osrelease, kern.version).
#[cfg(not(target_os = "macos"))]
pub struct Uname {
    pub nodename: Option<String>,
    pub release: Option<String>,
    pub version: Option<String>,
}

#[cfg(not(target_os = "macos"))]
pub fn uname() -> Option<Uname> {
    // SAFETY: utsname is plain old data; uname fills it and returns 0 on success.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a local, valid output space for uname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |a: &[libc::c_char]| {
        let bytes: Vec<u8> = a.iter().map(|&c| c as u8).collect();
        std::ffi::CStr::from_bytes_until_nul(&bytes)
            .ok()
            .map(|c| c.to_string_lossy().trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Some(Uname {
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
    })
}

/// poll(2) one descriptor for readability or writability for at most `timeout`: Ok(true) when
/// ready (or in error/hang-up: the next call on it reports that), Ok(false) when the time passed
/// or a signal arrived (the caller checks its bound and polls again).
pub fn poll_one(
    fd: std::os::fd::RawFd,
    write: bool,
    timeout: std::time::Duration,
) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: if write { libc::POLLOUT } else { libc::POLLIN },
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut p, 1, ms) } {
        -1 => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Open `path` for writing without blocking (O_NONBLOCK): a FIFO with no reader fails at once
/// with ENXIO (mapped to WouldBlock here) instead of waiting for one; writes on it then fail
/// with WouldBlock instead of waiting for room.
pub fn open_write_nonblocking(path: &std::path::Path, append: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .append(append)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => io::Error::new(io::ErrorKind::WouldBlock, "no reader yet"),
            _ => e,
        })
}
